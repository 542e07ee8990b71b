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


# --- lookup: guides link the API, API pages link each other ---------------------------

GUIDE_DIR = ROOT / "docs"
# What the build writes into docs/ (the gallery, the API stubs), not guides.
_GENERATED = ("auto_examples", "api/generated", "gen_modules", "_build")


def _guide_pages():
    return sorted(
        path
        for path in GUIDE_DIR.rglob("*.md")
        if not any(path.relative_to(GUIDE_DIR).as_posix().startswith(g) for g in _GENERATED)
    )


def _documented_api():
    """``{dotted name: object}`` of every page and module the API reference documents:
    the autosummary entries and the modules of its ``module``/``automodule``
    directives."""
    import importlib

    names = {}
    for module, name in api_reference_entries():
        names[f"{module}.{name}"] = getattr(importlib.import_module(module), name)
    text = (ROOT / "docs/api/index.rst").read_text(encoding="utf-8")
    for module in re.findall(r"^\.\. (?:auto)?module:: (\S+)", text, flags=re.M):
        names[module] = importlib.import_module(module)
    return names


def _resolve(dotted):
    """The object a dotted name (``nmfsc.readers.read_matrix``) is, or None."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
        return obj
    return None


def _plain_code_api_names(text, documented):
    """The documented API names that ``text`` (MyST) writes as plain inline code.

    A code span counts when it is a dotted ``nmfsc`` name, or a call of one
    (``nmfsc.compare(V, 5)``), that is a documented page or module, the same
    object under another path (``nmfsc.readers.read_matrix``), or a public
    member of a documented class (``nmfsc.Comparison.plot``). Code blocks, role
    targets ({func}`nmfsc.compare`) and link texts are not counted.
    """
    import inspect

    text = re.sub(r"^(`{3,}|:{3,}).*?^\1\s*$", "", text, flags=re.M | re.S)  # fences
    by_identity = {id(obj) for obj in documented.values() if callable(obj) or inspect.ismodule(obj)}
    found = []
    # Every code span in order, a role's target consumed with its role.
    for match in re.finditer(r"(\{[\w:+-]+\})?(`+)(.+?)(?<!`)\2(?!`)", text, flags=re.S):
        if match.group(1) or text.startswith("](", match.end()):
            continue
        code = " ".join(match.group(3).split())
        name = re.fullmatch(r"(nmfsc(?:\.\w+)+)(\(.*\))?", code)
        if not name:
            continue
        dotted = name.group(1)
        owner, _, member = dotted.rpartition(".")
        obj = _resolve(dotted)
        if (
            dotted in documented
            or (obj is not None and id(obj) in by_identity)
            or (inspect.isclass(documented.get(owner)) and not member.startswith("_"))
        ):
            found.append(code)
    return found


@pytest.mark.parametrize("page", _guide_pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_guides_link_the_api_names_they_write(page):
    # A guide that names a documented function, class or module links its page
    # ({func}`nmfsc.nmf_sc`, {class}`nmfsc.SparseNMF`, {mod}`nmfsc.datasets`), so
    # a reader can look it up; plain code is for code that has no page.
    found = _plain_code_api_names(page.read_text(encoding="utf-8"), _documented_api())
    assert found == [], f"{page.relative_to(ROOT)} writes API names as plain code: {found}"


def test_plain_code_api_names_finds_what_it_should():
    documented = _documented_api()
    text = (
        "`nmfsc.nmf_sc` and `nmfsc.compare(V, 5)` and `nmfsc.readers.read_matrix`\n"
        "and `nmfsc.Comparison.plot` and {func}`nmfsc.sparseness` and `nmfsc.atomic`\n"
        "and [`nmfsc.project`](solvers.md)\n```python\nnmfsc.nmf_sc(V, 4)\n```\n"
    )
    assert _plain_code_api_names(text, documented) == [
        "nmfsc.nmf_sc",
        "nmfsc.compare(V, 5)",
        "nmfsc.readers.read_matrix",
        "nmfsc.Comparison.plot",
    ]


def _see_also(obj):
    """The names of ``obj``'s numpydoc See Also section, or None without one."""
    import inspect

    doc = inspect.getdoc(obj) or ""
    section = re.search(r"^See Also\n-{8,}\n(.*?)(?:\n\n|\Z)", doc, flags=re.M | re.S)
    if section is None:
        return None
    names = []
    for line in section.group(1).splitlines():
        if line and not line[0].isspace():  # "name, name : text" (text lines are indented)
            names += [n.strip() for n in line.split(" : ")[0].split(",")]
    return names


def _api_pages():
    """``(page name, object)`` of every function and class page of the API reference
    (its data entries, constants such as ``SOLVERS``, have none)."""
    import inspect

    for dotted, obj in _documented_api().items():
        if inspect.isfunction(obj) or inspect.isclass(obj):
            yield dotted, obj


@pytest.mark.parametrize("dotted", [dotted for dotted, _ in _api_pages()])
def test_api_pages_have_see_also(dotted):
    # Every page of the API reference points at its neighbours, as scikit-learn's
    # do, and each name there is a page of the reference (or of another project's
    # documentation, linked by intersphinx: sklearn.decomposition.NMF), so that
    # the link resolves; a name that resolves nowhere would render as plain text.
    import importlib

    documented = _documented_api()
    names = _see_also(documented[dotted])
    assert names, f"{dotted}'s docstring has no See Also section"
    module = dotted.rpartition(".")[0]
    for name in names:
        candidates = [f"{module}.{name}", f"nmfsc.{name}", name]
        if any(c in documented for c in candidates):
            continue
        top = name.split(".")[0]
        assert top != "nmfsc" and top in ("numpy", "scipy", "sklearn", "dask", "matplotlib"), (
            f"{dotted}: See Also names {name!r}, which is no page of the API reference"
        )
        try:
            importlib.import_module(top)
        except ImportError:
            continue  # an optional dependency that is not installed here
        assert _resolve(name) is not None, f"{dotted}: {name!r} does not exist"


def test_gallery_thumbnail_panels_name_examples_and_fit_their_figures(tmp_path):
    # conf.py's THUMBNAILS cuts the thumbnail of a wide figure from its panels: each
    # entry names an example of the gallery, and each box lies inside the figure.
    pytest.importorskip("mathjax", reason="django-static-mathjax (the docs extra) not installed")
    import runpy

    from PIL import Image

    with _blas_limits_restored():
        conf = runpy.run_path(str(ROOT / "docs/conf.py"))
    examples = {path.stem for path in (ROOT / "examples").glob("plot_*.py")}
    assert set(conf["THUMBNAILS"]) <= examples
    for number, rows in conf["THUMBNAILS"].values():
        assert number >= 1 and rows
        for x0, y0, x1, y1 in (box for row in rows for box in row):
            assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
    # Two 100 x 50 panels side by side (a gap between) fill the 400 x 280 box's width.
    figure = tmp_path / "figure.png"
    Image.new("RGB", (400, 100), "black").save(figure)
    out = tmp_path / "thumb.png"
    conf["_thumbnail_from_panels"](
        figure, [[(0, 0, 0.25, 0.5), (0.5, 0, 0.75, 0.5)]], out, (400, 280)
    )
    thumb = Image.open(out)
    assert thumb.size == (400, 280)
    alpha = thumb.getchannel("A")
    assert alpha.getbbox()[0] == 0 and alpha.getbbox()[2] == 400


def test_intersphinx_has_offline_copies():
    # Offline (CI, a clone without network) intersphinx reads the inventories
    # stored in docs/_intersphinx/, so scipy, scikit-learn and Dask names link
    # and the build passes with -W; each copy is a readable Sphinx inventory.
    pytest.importorskip("sphinx")
    pytest.importorskip("mathjax", reason="django-static-mathjax (the docs extra) not installed")
    import runpy

    from sphinx.util.inventory import InventoryFile

    with _blas_limits_restored():
        conf = runpy.run_path(str(ROOT / "docs/conf.py"))
    mapping = conf["intersphinx_mapping"]
    assert {"numpy", "scipy", "sklearn", "dask", "matplotlib"} <= set(mapping)
    for name in ("scipy", "sklearn", "dask"):
        url, locations = mapping[name]
        assert locations[0] is None, "the project's own site is read first"
        local = Path(locations[1])
        assert local.parent == ROOT / "docs/_intersphinx" and local.is_file(), name
        if hasattr(InventoryFile, "loads"):  # Sphinx >= 8.2
            entries = InventoryFile.loads(local.read_bytes(), uri=url).data
        else:
            import io
            import posixpath

            entries = InventoryFile.load(io.BytesIO(local.read_bytes()), url, posixpath.join)
        assert len(entries) > 0, name
