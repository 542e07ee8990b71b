"""Sphinx configuration for the nmfsc documentation site.

Build it with ``python -m sphinx -b html docs docs/_build/html`` (CI adds
``-W --keep-going``). The gallery in ``examples/`` is executed at build time;
``-D plot_gallery=0`` skips running it while you edit prose.
"""

import os
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
# Import the package from this checkout when it is not installed (an installed
# copy, e.g. `pip install -e ".[docs]"`, is used as is).
try:
    import nmfsc  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT))
    import nmfsc  # noqa: F401

os.environ.setdefault("MPLBACKEND", "Agg")

# The gallery runs with one BLAS thread: on 2 cores shared with other work, BLAS
# threads fighting for the cores made ORL iterations 4.5x slower (62 ms against
# 13 ms per nmf_sc iteration with one thread). The matrices are small (ORL: 2576 x
# 400, 25 components), so one thread should lose little on an idle machine (not
# measured). threadpoolctl comes with scikit-learn (the docs extra).
try:
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
except ImportError:
    pass


def _mathjax_file():
    """MathJax 3's single-file TeX-to-SVG bundle, from the installed package."""
    import importlib.util

    spec = importlib.util.find_spec("mathjax")
    if spec is None or spec.origin is None:
        raise ImportError(
            "the docs need MathJax served locally: pip install -e '.[docs]' "
            "(it installs django-static-mathjax)"
        )
    return Path(spec.origin).parent / "static" / "mathjax" / "es5" / "tex-svg.js"


project = "nmfsc"
author = "nmfsc developers"
copyright = "nmfsc developers"
release = nmfsc.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",  # a [source] link beside every documented object
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "paper_figures",
    "explorer_directive",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "auto_examples/*.ipynb"]
templates_path = ["_templates"]

# --- MyST: the Markdown pages ------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

# --- API reference ----------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options: dict = {}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
add_module_names = False

# --- the gallery --------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    # A course, not the alphabet: docs/_ext/gallery_order.py.
    "within_subsection_order": "gallery_order.CourseOrder",
    # "Examples using this" on each API page (the minigallery in the templates).
    "backreferences_dir": "gen_modules/backreferences",
    "doc_module": ("nmfsc",),
    # Figures also at twice the resolution, for high-density screens.
    "image_srcset": ["2x"],
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": (True, "jshtml"),
    "image_scrapers": ("matplotlib",),
    "show_memory": False,
    # The computation-times pages load a table library from a CDN: left out, so
    # that every page works offline (each example's page still shows its time).
    "write_computation_times": False,
    "min_reported_time": 0,
    "capture_repr": (),
    # Every example runs in the gallery's own working folder; none writes files.
    "reset_modules": ("matplotlib",),
}

# --- HTML ---------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"nmfsc {release}"
html_theme_options = {
    # One search control (the field in the navbar), and short labels in one row.
    "navbar_end": ["theme-switcher"],
    "header_links_before_dropdown": 6,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "show_prev_next": False,
    "navigation_with_keys": False,
}
# The section navigation only where a section has pages to list (the API
# reference, the gallery, the paper's figures); a page alone in its section has
# none, rather than an empty "Section Navigation".
html_sidebars = {"**": ["sidebar-nav-bs"]}
html_sidebars.update(
    (page, [])
    for page in (
        "index",
        "install",
        "tutorial",
        "explorer",
        "compare",
        "cli",
        "solvers",
        "distributed",
        "scores",
        "datasets",
        "reproduction",
        "settings",
        "benchmarks",
        "architecture",
        "about/changelog",
        "about/citation",
        "about/license",
    )
)
html_static_path = [str(_mathjax_file()), "_static/nmfsc.css"]
html_css_files = ["nmfsc.css"]
# The maths is typeset by a copy of MathJax served from the site itself (the
# django-static-mathjax package, the docs extra, ships MathJax 3 without Django
# code), so a reader without internet sees formulas, not raw TeX. tex-svg.js holds
# its fonts as SVG paths: one file, no font requests.
mathjax_path = "tex-svg.js"
html_last_updated_fmt = None

# The paper-figure pages read figures/<name>.json and show figures/<name>.png.
paper_figures_dir = str(ROOT / "figures")


# reproduction.md is the page REPRODUCTION.md is, written when the site is built
# from the figures' JSON files by reproduce/page.py (its links are the site's: each
# figure's page, and the JSON files as downloads); paper/robustness.md gets the
# claims across the seeds from the same code in place of {{claims}}.
def _reproduce_module(name):
    import importlib

    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT))


def _read_reproduction(app, docname, source):
    if docname not in ("reproduction", "paper/robustness"):
        return
    page = _reproduce_module("reproduce.page")
    claims = _reproduce_module("reproduce._claims")
    for path in (page.__file__, claims.__file__):
        app.env.note_dependency(path)
    for name in page.FILES:
        app.env.note_dependency(str(ROOT / "figures" / f"{name}.json"))
    if docname == "reproduction":
        source[0] = page.render(ROOT / "figures", page.SITE)
    else:
        source[0] = source[0].replace(
            "{{claims}}", page.seeds_section(ROOT / "figures", page.SITE_PAPER)
        )


# settings.md's table and stopping rules come from reproduce/experiments.py, the
# one place the figures' settings are written.
def _write_settings(app, docname, source):
    if docname != "settings":
        return
    experiments = _reproduce_module("reproduce.experiments")
    app.env.note_dependency(experiments.__file__)
    rows = [
        "| run | data | solver | M | constraints or weights | iteration budget | time cap |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in experiments.EXPERIMENTS.values():
        params = ", ".join(f"`{k}={v:g}`" for k, v in e.params.items()) or "none"
        rows.append(
            f"| {e.name} | {e.dataset} | `{e.solver}` | {e.n_components} | {params} "
            f"| {e.max_iter} | {e.max_time:g} s |"
        )
    doc = experiments.__doc__.split("\n\n")
    stopping = " ".join(" ".join(doc[1:]).split())
    text = source[0].replace("{{table}}", "\n".join(rows)).replace("{{stopping}}", stopping)
    source[0] = text


# A constant re-exported by a package (nmfsc.datasets.ORL_SHAPE, defined in a private
# module) would show the docstring of its type (tuple's, str's); show the attribute
# docstring of the module that defines it instead, or nothing.
def _constant_docstring(app, what, name, obj, options, lines):
    if what != "data" or not lines:
        return
    type_doc = (type(obj).__doc__ or "").strip().splitlines()
    if not type_doc or lines[0].strip() != type_doc[0].strip():
        return
    from sphinx.pycode import ModuleAnalyzer

    package, attr = name.rsplit(".", 1)
    lines[:] = []
    for modname in sorted(m for m in sys.modules if m.startswith(package + ".")):
        if getattr(sys.modules[modname], attr, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except Exception:  # no source to analyse
            continue
        if ("", attr) in docs:
            lines[:] = [line for line in docs[("", attr)] if line.strip() or lines]
            return


# matplotlib's JavaScript animation (the projection example) links Font Awesome 4's
# stylesheet from a CDN for its buttons' icons. The link is dropped, so that nothing
# is fetched from another host, and each icon becomes a plain Unicode symbol (the
# theme's own Font Awesome draws only the icons the theme uses): the player works,
# and shows its buttons, offline.
_CDN_STYLESHEET = re.compile(r'<link rel="stylesheet"\s+href="https://[^"]*font-awesome[^"]*">\n?')
_ANIMATION_ICONS = {
    "fa fa-minus": "\u2212",  # slower
    "fa fa-fast-backward": "\u21e4",  # first frame
    "fa fa-step-backward": "\u25c2\u2223",  # previous frame
    "fa fa-play fa-flip-horizontal": "\u25c0",  # play backwards
    "fa fa-pause": "\u2016",  # pause
    "fa fa-play": "\u25b6",  # play
    "fa fa-step-forward": "\u2223\u25b8",  # next frame
    "fa fa-fast-forward": "\u21e5",  # last frame
    "fa fa-plus": "+",  # faster
}
_ICON = re.compile(r'<i class="(fa fa-[a-z -]+)"></i>')


def _drop_cdn_stylesheet(app, docname, source):
    if docname.startswith("auto_examples/"):
        text = _CDN_STYLESHEET.sub("", source[0])
        source[0] = _ICON.sub(lambda m: _ANIMATION_ICONS.get(m.group(1), m.group(0)), text)


def setup(app):
    app.connect("source-read", _drop_cdn_stylesheet)
    app.connect("source-read", _read_reproduction)
    app.connect("source-read", _write_settings)
    app.connect("autodoc-process-docstring", _constant_docstring, priority=400)
