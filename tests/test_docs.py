"""The Markdown guides run as written, and the API reference lists every public name."""

import contextlib
import re
from pathlib import Path

import pytest
from api_reference import api_reference_entries

ROOT = Path(__file__).parents[1]
GUIDES = [
    "README.md",
    # The tutorial's example is the paper's ORL experiment: it needs the real data.
    pytest.param("docs/tutorial.md", marks=pytest.mark.realdata, id="docs/tutorial.md"),
    "docs/solvers.md",
]


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("name", GUIDES)
def test_code_blocks_run(name, tmp_path, monkeypatch):
    path = ROOT / name
    blocks = python_blocks(path)
    assert blocks, f"{path} has no python code blocks"
    monkeypatch.chdir(tmp_path)  # the guides write their outputs to the working folder
    namespace = {"__name__": f"docs_{path.stem}"}
    with _one_blas_thread():
        for k, block in enumerate(blocks):
            exec(compile(block, f"{name}, python block {k}", "exec"), namespace)


def _one_blas_thread():
    """One BLAS thread while the guides run, as the docs build (see docs/conf.py).

    On shared cores BLAS threads made the tutorial's ORL runs several times slower.
    threadpoolctl comes with scikit-learn; without it nothing changes.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _listed_in_api_reference():
    """(module, name) for every entry of an autosummary list in docs/api/index.rst."""
    return set(api_reference_entries())


@pytest.mark.parametrize("module", ["nmfsc", "nmfsc.datasets", "nmfsc.plotting", "nmfsc.scores"])
def test_api_reference_lists_every_public_name(module):
    import importlib

    public = set(importlib.import_module(module).__all__)
    listed = _listed_in_api_reference()
    # A name of nmfsc.scores that nmfsc re-exports is documented once, as nmfsc.<name>.
    documented = {name for mod, name in listed if mod == module}
    if module == "nmfsc.scores":
        documented |= {name for mod, name in listed if mod == "nmfsc"}
    assert public - documented == set(), f"missing from docs/api/index.rst: {public - documented}"
    assert documented >= public


def test_api_reference_templates_exist():
    # autosummary looks a :template: up under templates_path; a name it cannot find
    # falls back silently to its bare default (a class page without its methods).
    text = (ROOT / "docs/api/index.rst").read_text(encoding="utf-8")
    named = set(re.findall(r":template:\s*(\S+)", text))
    assert named, "docs/api/index.rst names no template"
    missing = {name for name in named if not (ROOT / "docs/_templates" / name).is_file()}
    assert missing == set(), f"templates not under docs/_templates/: {missing}"


def test_site_serves_mathjax_itself():
    # An offline reader must see formulas: the site loads MathJax from its own
    # _static folder, never from another host.
    pytest.importorskip("mathjax", reason="django-static-mathjax (the docs extra) not installed")
    import runpy

    # conf.py limits BLAS to one thread for the build; restore the limits after.
    with _blas_limits_restored():
        conf = runpy.run_path(str(ROOT / "docs/conf.py"))
    path = conf.get("mathjax_path", "")
    assert path and "//" not in path, f"mathjax_path {path!r} is not a file of the site"
    served = [Path(p) for p in conf["html_static_path"]]
    assert any(p.name == path and p.is_file() for p in served)


def test_gallery_animation_links_no_cdn_stylesheet():
    # matplotlib's JavaScript animation (the projection example) links Font
    # Awesome from a CDN; conf.py drops that link from the gallery's pages and
    # gives the player's buttons Unicode symbols instead of its icons.
    pytest.importorskip("mathjax", reason="django-static-mathjax (the docs extra) not installed")
    import runpy

    from matplotlib.animation import FuncAnimation
    from matplotlib.figure import Figure

    with _blas_limits_restored():
        conf = runpy.run_path(str(ROOT / "docs/conf.py"))
    fig = Figure(figsize=(1, 1))
    page = FuncAnimation(fig, lambda frame: [], frames=2).to_jshtml()
    assert "https://" in page  # what the gallery's page would link
    source = [f"before\n.. raw:: html\n\n{page}\nafter"]
    conf["_drop_cdn_stylesheet"](None, "auto_examples/plot_projection_steps", source)
    assert "https://" not in source[0]
    assert "anim-slider" in source[0] and source[0].endswith("after")
    # The buttons keep a visible label: no Font Awesome 4 icon is left unmapped.
    assert '<i class="fa ' not in source[0]


def _blas_limits_restored():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=None)


def test_reproduction_page_is_the_page_of_the_committed_figures():
    # REPRODUCTION.md is written from figures/*.json by `python -m reproduce.page`
    # (the site's Reproduction page by the same code when it is built): after the
    # figures change, run it again.
    from reproduce import page

    written = (ROOT / "REPRODUCTION.md").read_text(encoding="utf-8")
    assert written == page.render(ROOT / "figures", page.REPOSITORY), (
        "REPRODUCTION.md is not the page of figures/*.json: run python -m reproduce.page"
    )


def test_reproduction_page_names_only_what_the_site_serves():
    # A reader of the site sees claims in words and downloads the JSON; no file
    # name outside the site, no internal key of the claims.
    import json

    from reproduce import page

    text = page.render(ROOT / "figures", page.SITE)
    for target in re.findall(r"\]\(([^)]+)\)", text):  # links and images
        if target.startswith("#"):
            continue
        assert target.endswith(".md") or target.startswith("../figures/"), target
        file = (ROOT / "docs" / target).resolve()
        assert file.is_file(), f"{target} is not a file of the site's sources"
    downloads = re.findall(r"\{download\}`[^<`]*<([^>]+)>`", text)
    assert {Path(d).name for d in downloads} >= {f"{name}.json" for name in page.FILES}
    assert all((ROOT / "docs" / d).resolve().is_file() for d in downloads)
    prose = re.sub(r"\]\([^)]+\)|<[^>]+>`|```\{image\}[^\n]*", "", text)
    assert "figures/" not in prose and "reproduce/" not in prose
    for name in ("caps.json", "robustness.md", "experiments.py"):
        assert name not in prose.replace("{download}`caps.json", "")
    keys = json.loads((ROOT / "figures/robustness.json").read_text())["claims"]
    assert not [key for key in keys if key in text], "an internal key of the claims"
