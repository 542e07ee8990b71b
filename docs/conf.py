"""Sphinx configuration for the nmfsc documentation site.

Build it with ``python -m sphinx -b html docs docs/_build/html`` (CI adds
``-W --keep-going``). The gallery in ``examples/`` is executed at build time;
``-D plot_gallery=0`` skips running it while you edit prose.
"""

import logging
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
    "sphinx.ext.intersphinx",  # links to numpy, scipy, scikit-learn, Dask, matplotlib
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

# --- links to other projects' documentation (intersphinx) ---------------------------------
# Each project's inventory is read from its site and, where that cannot be reached (no
# network: CI, a clone offline), from the copy in docs/_intersphinx/, so that an offline
# build links the same names and passes with -W. The copies come from Debian's
# documentation packages (python-scipy-doc 1.10.1-2, python-sklearn-doc 1.2.1+dfsg-1,
# python-dask-doc 2022.12.1+dfsg-2: usr/share/doc/<package>/html/objects.inv); an older
# inventory than the installed library's still links every name that kept its page.
# numpy and matplotlib have no such package, so they have no copy here: online their
# names link, offline they stay plain text (_quiet_unreachable_inventory). To add a copy,
# save <url>objects.inv as docs/_intersphinx/<name>-objects.inv.
INTERSPHINX = DOCS / "_intersphinx"
_INVENTORY_SITES = {
    "numpy": "https://numpy.org/doc/stable/",
    "scipy": "https://docs.scipy.org/doc/scipy/",
    "sklearn": "https://scikit-learn.org/stable/",
    "dask": "https://docs.dask.org/en/stable/",
    "matplotlib": "https://matplotlib.org/stable/",
}
intersphinx_mapping = {
    name: (url, (None, str(INTERSPHINX / f"{name}-objects.inv")))
    if (INTERSPHINX / f"{name}-objects.inv").is_file()
    else (url, None)
    for name, url in _INVENTORY_SITES.items()
}
intersphinx_timeout = 10
# The sites without a copy: offline, their inventory's failure is a line of the log, not
# a warning that -W makes fatal (any other inventory failure still is one).
_ONLINE_ONLY_INVENTORIES = tuple(
    url for url, local in intersphinx_mapping.values() if local is None
)

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


# Gallery thumbnails. The gallery shows each example's thumbnail in a 160 x 112 px box;
# a figure of many panels, shrunk whole into it, is a strip nobody can read (the
# measure's 7 panels in 1300 x 240 px came out 160 x 30). For those examples the
# thumbnail is made of the panels that tell the story, cut from the figure (its number,
# from 1) and laid out in rows: each box is (left, top, right, bottom) as fractions of
# the figure. The boxes follow each example's figure layout: redraw the figure, check
# its thumbnail (docs/_build/html/_images/sphx_glr_<example>_thumb.png).
def _panel(column, columns, top=0.0, bottom=1.0):
    return (column / columns, top, (column + 1) / columns, bottom)


THUMBNAILS = {
    # one spike ... uniform noise, constant: 6 of the 7 bar charts, in two rows
    "plot_sparseness_measure": (
        1,
        [[_panel(i, 7) for i in range(3)], [_panel(i, 7) for i in range(3, 6)]],
    ),
    # plain NMF's global faces beside the local patches of sW = 0.75
    "plot_orl_sparseness_sweep": (1, [[(0.0, 0.03, 0.5, 0.51), (0.5, 0.51, 1.0, 1.0)]]),
    # ON weights, 4 x 4 filters each: plain NMF's blobs beside nmf_sc's oriented filters
    "plot_natural_on_off": (1, [[(0.023, 0.06, 0.185, 0.275), (0.514, 0.06, 0.676, 0.275)]]),
    # the bases nmf_sc learns on swimmer: its limbs
    "plot_command_line": (1, [[(0.0, 0.1, 0.34, 1.0)]]),
    # nmf_sc's and Euclidean NMF's bases, side by side
    "plot_compare_methods": (1, [[(0.0, 0.0, 1.0, 0.5)]]),
    # each basis vector's sparseness: fixed by nmf_sc, spread by the L1 penalty
    "plot_l1_versus_constraint": (1, [[(0.506, 0.0, 1.0, 0.52)]]),
    # the memory of V: dense float64, CSR, dense float32
    "plot_scale": (1, [[(0.487, 0.0, 1.0, 1.0)]]),
}


def _thumbnail_from_panels(figure, rows, out, size):
    """Write to ``out`` the panels ``rows`` of the image ``figure``, laid out in rows
    with a white gap between them and fitted into ``size`` (sphinx-gallery's
    thumbnail_size) as sphinx-gallery fits a whole figure."""
    import tempfile

    from PIL import Image
    from sphinx_gallery.utils import scale_image

    image = Image.open(figure).convert("RGB")
    w, h = image.size
    crops = [
        [
            image.crop((round(x0 * w), round(y0 * h), round(x1 * w), round(y1 * h)))
            for x0, y0, x1, y1 in row
        ]
        for row in rows
    ]
    gap = max(c.width for row in crops for c in row) // 12
    widths = [sum(c.width for c in row) + gap * (len(row) - 1) for row in crops]
    heights = [max(c.height for c in row) for row in crops]
    sheet = Image.new("RGB", (max(widths), sum(heights) + gap * (len(rows) - 1)), "white")
    y = 0
    for row, row_height in zip(crops, heights, strict=True):
        x = 0
        for crop in row:
            sheet.paste(crop, (x, y))
            x += crop.width + gap
        y += row_height + gap
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "panels.png"
        sheet.save(path)
        scale_image(path, out, *size)


def _gallery_thumbnails(app):
    images = Path(app.srcdir) / sphinx_gallery_conf["gallery_dirs"] / "images"
    size = app.config.sphinx_gallery_conf["thumbnail_size"]
    for example, (number, rows) in THUMBNAILS.items():
        figure = images / f"sphx_glr_{example}_{number:03d}_2_00x.png"  # the 2x image
        if not figure.is_file():
            figure = images / f"sphx_glr_{example}_{number:03d}.png"
        if figure.is_file():  # not without plot_gallery, nor for a failed example
            _thumbnail_from_panels(
                figure, rows, images / "thumb" / f"sphx_glr_{example}_thumb.png", size
            )


# --- HTML ---------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"nmfsc {release}"
html_theme_options = {
    # One search control (the field in the navbar), and short labels in one row.
    "navbar_end": ["theme-switcher"],
    # Install, Tutorial, Gallery, Explorer, Figures (the paper's) and API in the bar
    # (index.md's first, hidden, table of contents); the guides under "More".
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


# Offline, an inventory with no copy in docs/_intersphinx/ cannot be read: intersphinx
# logs that as a warning, made an info line here for those sites only.
class _QuietUnreachableInventory(logging.Filter):
    def filter(self, record):
        if (
            record.levelno == logging.WARNING
            and "failed to reach any of the inventories" in str(record.msg)
            and any(url in str(record.args) for url in _ONLINE_ONLY_INVENTORIES)
        ):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def _quiet_unreachable_inventory():
    logger = logging.getLogger("sphinx.sphinx.ext.intersphinx")
    if not any(type(f).__name__ == "_QuietUnreachableInventory" for f in logger.filters):
        logger.addFilter(_QuietUnreachableInventory())


# Class pages document, and list in their Methods table, the public methods a class
# defines or inherits (SparseNMF: get_params, set_params, set_output, ... from
# scikit-learn), except those of Python's exception classes (with_traceback, add_note)
# and scikit-learn's metadata routing (set_fit_request, get_metadata_routing, ...),
# which SparseNMF does not use: its fit takes no sample weights or other metadata.
_METADATA_ROUTING = re.compile(r"set_\w+_request|get_metadata_routing")


def _skip_member(app, what, name, obj, skip, options):
    if _METADATA_ROUTING.fullmatch(name):
        return True
    owner = getattr(obj, "__objclass__", None)  # a method of a built-in class
    if owner is not None and owner.__module__ == "builtins" and not name.startswith("_"):
        return True
    return None


# A method inherited from scikit-learn links its user guide with :ref:; a label that
# the loaded scikit-learn inventory lacks (the offline copy is of an older release)
# becomes plain text rather than an undefined label, which -W makes fatal.
_REF = re.compile(r":ref:`([^`<]*?)\s*<([^`>]+)>`|:ref:`([^`<]+)`")


def _sklearn_refs(app, what, name, obj, options, lines):
    if not getattr(obj, "__module__", "").startswith("sklearn"):
        return
    inventory = getattr(app.env, "intersphinx_named_inventory", {}).get("sklearn", {})
    labels = inventory.get("std:label", {})

    def keep_or_flatten(match):
        text, label, bare = match.groups()
        if (label or bare) in labels:
            return match.group(0)
        return text if label else "the scikit-learn documentation"

    lines[:] = [_REF.sub(keep_or_flatten, line) for line in lines]


def setup(app):
    _quiet_unreachable_inventory()
    app.connect("autodoc-skip-member", _skip_member)
    # after sphinx-gallery has run the examples and drawn its thumbnails (priority 500)
    app.connect("builder-inited", _gallery_thumbnails, priority=600)
    app.connect("autodoc-process-docstring", _sklearn_refs)
    app.connect("source-read", _drop_cdn_stylesheet)
    app.connect("source-read", _read_reproduction)
    app.connect("source-read", _write_settings)
    app.connect("autodoc-process-docstring", _constant_docstring, priority=400)
