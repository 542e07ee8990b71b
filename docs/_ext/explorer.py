"""The explorer page: a slider over precomputed runs on the paper's data.

The ``{explorer}`` directive (``docs/explorer.md``) shows one panel per data set:
a slider over a sparseness setting, the learned basis at that setting, and its
numbers (achieved sparseness, locality or orientation score, relative error).
The runs are made when the site is built, from the real data, and put into the
page itself (images as PNG ``data:`` URIs, numbers as JSON), so the page is
static and works offline: the slider only swaps what is already there.

Runs use ``nmf_sc(..., solver="accelerated")``: the paper's problem (the same
constraints and objective) solved to the same stopping rule in far fewer
iterations than the paper's algorithm, so that every setting converges within
the build's time. They are cached in the build folder (``<doctrees>/explorer``),
keyed on the settings, nmfsc's source and the data files, so a rebuild with
nothing changed reuses them.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import pickle
import warnings
from dataclasses import dataclass, field
from pathlib import Path

#: Settings of each panel: the data, the number of components, the swept setting.
PANELS = {
    "orl": {
        "title": "ORL faces: the sparseness of the basis images, sparseness_w",
        "parameter": "sparseness_w",
        "values": (None, 0.3, 0.5, 0.6, 0.75, 0.85),
        "n_components": 25,
        "max_iter": 1000,
    },
    "natural": {
        "title": "Natural images: the sparseness of the coefficients, sparseness_h",
        "parameter": "sparseness_h",
        "values": (None, 0.5, 0.7, 0.85),
        "n_components": 48,
        "n_patches": 2000,
        "max_iter": 600,
    },
}


@dataclass
class Step:
    """One position of a slider: its label, the basis image (PNG) and the numbers."""

    label: str
    png: bytes
    numbers: dict[str, str] = field(default_factory=dict)


@dataclass
class Panel:
    """One slider: an id (for the page's HTML), a title, a caption and the steps."""

    id: str
    title: str
    caption: str
    steps: list[Step]


def explorer_html(panels):
    """The HTML of the explorer: each panel's slider, image and numbers, and the script.

    Self-contained: the images are ``data:`` URIs and the numbers a JSON block,
    so the page needs no other file and no network.
    """
    parts = []
    for panel in panels:
        data = [
            {
                "label": step.label,
                "src": "data:image/png;base64," + base64.b64encode(step.png).decode("ascii"),
                "numbers": step.numbers,
            }
            for step in panel.steps
        ]
        first = panel.steps[0]
        data_json = json.dumps(data).replace("</", "<\\/")  # no "</script>" inside
        rows = "".join(
            f'<tr><th scope="row">{html.escape(name)}</th>'
            f'<td data-number="{html.escape(name)}">{html.escape(value)}</td></tr>'
            for name, value in first.numbers.items()
        )
        parts.append(
            f'<div class="nmfsc-explorer" id="explorer-{panel.id}">'
            f"<h3>{html.escape(panel.title)}</h3>"
            f'<p class="nmfsc-explorer-caption">{html.escape(panel.caption)}</p>'
            f'<label class="nmfsc-explorer-control">'
            f'<input type="range" min="0" max="{len(panel.steps) - 1}" step="1" value="0" '
            f'aria-label="{html.escape(panel.title)}"> '
            f'<output class="nmfsc-explorer-label">{html.escape(first.label)}</output></label>'
            f'<div class="nmfsc-explorer-body">'
            f'<img class="nmfsc-explorer-image" alt="learned basis at {html.escape(first.label)}" '
            f'src="{data[0]["src"]}">'
            f'<table class="nmfsc-explorer-numbers">{rows}</table></div>'
            f'<script type="application/json" class="nmfsc-explorer-data">'
            f"{data_json}</script></div>"
        )
    return STYLE + "".join(parts) + SCRIPT


STYLE = """<style>
.nmfsc-explorer { margin: 1.5em 0 2.5em; }
.nmfsc-explorer-control { display: flex; gap: 1em; align-items: center; font-weight: 600; }
.nmfsc-explorer-control input { flex: 1; max-width: 32em; }
.nmfsc-explorer-body { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start;
  margin-top: 0.8em; }
.nmfsc-explorer-image { max-width: 100%; width: 30em; image-rendering: pixelated;
  background: white; }
.nmfsc-explorer-numbers th { text-align: left; padding-right: 1em; font-weight: normal; }
.nmfsc-explorer-numbers td { font-variant-numeric: tabular-nums; font-weight: 600; }
</style>"""

SCRIPT = """<script>
document.querySelectorAll(".nmfsc-explorer").forEach(function (panel) {
  var steps = JSON.parse(panel.querySelector(".nmfsc-explorer-data").textContent);
  var slider = panel.querySelector("input[type=range]");
  var image = panel.querySelector(".nmfsc-explorer-image");
  var label = panel.querySelector(".nmfsc-explorer-label");
  function show() {
    var step = steps[Number(slider.value)];
    image.src = step.src;
    image.alt = "learned basis at " + step.label;
    label.textContent = step.label;
    panel.querySelectorAll("[data-number]").forEach(function (cell) {
      cell.textContent = step.numbers[cell.getAttribute("data-number")];
    });
  }
  slider.addEventListener("input", show);
  show();
});
</script>"""


def _source_key(panel_id, settings, data_files):
    """A hash of what a panel's runs depend on: settings, nmfsc's code, the data."""
    import nmfsc

    digest = hashlib.sha256(repr((panel_id, sorted(settings.items()))).encode())
    for path in sorted(Path(nmfsc.__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    for path in data_files:
        stat = path.stat()
        digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


def _figure_png(draw, size):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=size, layout="constrained")
    draw(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()


def _fit(V, n_components, parameter, value, max_iter):
    import nmfsc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)  # checked just below
        result = nmfsc.nmf_sc(
            V,
            n_components,
            **{parameter: value},
            solver="accelerated",
            random_state=0,
            max_iter=max_iter,
        )
    if result.stop_reason != "tol":  # the page shows converged runs only
        raise RuntimeError(
            f"explorer: {parameter}={value} stopped by {result.stop_reason!r} after "
            f"{result.n_iter} iterations, not converged; raise its max_iter in PANELS"
        )
    return result


def orl_panel(settings):
    """The ORL panel: basis images and locality at each ``sparseness_w``."""
    import numpy as np

    import nmfsc
    from nmfsc.datasets import ORL_SHAPE, load_orl
    from nmfsc.plotting import plot_basis

    V = load_orl()
    steps = []
    for value in settings["values"]:
        result = _fit(V, settings["n_components"], "sparseness_w", value, settings["max_iter"])
        locality = float(np.nanmean(nmfsc.locality(result.W, ORL_SHAPE)))
        label = "no constraint (plain NMF)" if value is None else f"sparseness_w = {value}"
        png = _figure_png(
            lambda fig, W=result.W: plot_basis(
                W, ORL_SHAPE, ax=fig.add_subplot(), n_cols=5, normalize="max"
            ),
            (4.6, 5.4),
        )
        steps.append(
            Step(
                label,
                png,
                {
                    "sparseness of W (mean)": f"{float(np.mean(result.sparseness_W)):.3f}",
                    "locality (mean)": f"{locality:.3f}",
                    "relative error": f"{result.relative_error:.3f}",
                    "iterations": f"{result.n_iter} ({result.stop_reason})",
                },
            )
        )
    return steps


def natural_panel(settings):
    """The natural-image panel: ON minus OFF bases and orientation at each ``sparseness_h``."""
    import numpy as np

    import nmfsc
    from nmfsc.datasets import load_natural
    from nmfsc.plotting import plot_basis

    V = load_natural(n_patches=settings["n_patches"], random_state=0)
    steps = []
    for value in settings["values"]:
        result = _fit(V, settings["n_components"], "sparseness_h", value, settings["max_iter"])
        on_minus_off = result.W[:144] - result.W[144:]
        png = _figure_png(
            lambda fig, W=on_minus_off: plot_basis(
                W, (12, 12), ax=fig.add_subplot(), n_cols=8, signed=True
            ),
            (5.6, 4.4),
        )
        label = "no constraint (plain NMF)" if value is None else f"sparseness_h = {value}"
        steps.append(
            Step(
                label,
                png,
                {
                    "sparseness of H (mean)": f"{float(np.nanmean(result.sparseness_H)):.3f}",
                    "orientation (mean)": f"{float(nmfsc.orientation(result.W).mean()):.3f}",
                    "relative error": f"{result.relative_error:.3f}",
                    "iterations": f"{result.n_iter} ({result.stop_reason})",
                },
            )
        )
    return steps


CAPTIONS = {
    "orl": (
        "25 basis images learned from the 400 ORL faces (white is zero). The locality "
        "score is 1 for a point and about 0.3 for a face-sized oval (nmfsc.locality)."
    ),
    "natural": (
        "48 features learned from 2000 whitened 12 x 12 patches of natural images, "
        "each shown as ON minus OFF (grey is zero). The orientation score is about 0 "
        "for a round blob, up to 1 for an edge (nmfsc.orientation)."
    ),
}
BUILDERS = {"orl": orl_panel, "natural": natural_panel}


def _data_files(panel_id):
    from nmfsc.datasets import data_dir

    folder = Path(data_dir())
    if not folder.is_dir():
        return []
    return [
        p
        for p in sorted(folder.rglob("*"))
        if p.is_file() and panel_id in str(p.relative_to(folder)).lower()
    ]


def build_panel(panel_id, cache_dir):
    """The panel's runs, from the cache when nothing they depend on has changed."""
    settings = PANELS[panel_id]
    key = _source_key(panel_id, settings, _data_files(panel_id))
    cached = Path(cache_dir) / f"{panel_id}-{key}.pickle"
    if cached.is_file():
        steps = pickle.loads(cached.read_bytes())
    else:
        steps = BUILDERS[panel_id](settings)
        cached.parent.mkdir(parents=True, exist_ok=True)
        for old in cached.parent.glob(f"{panel_id}-*.pickle"):
            old.unlink()
        cached.write_bytes(pickle.dumps(steps))
    return Panel(panel_id, settings["title"], CAPTIONS[panel_id], steps)


def _numbers(panel, name):
    """A number of every step, by the step's setting (None: no constraint)."""
    settings = PANELS[panel.id]["values"]
    return {
        value: float(step.numbers[name]) for value, step in zip(settings, panel.steps, strict=True)
    }


def check_claim(panel):
    """None when the panel shows what docs/explorer.md says it does, else what fails."""
    problems = []
    if panel.id == "orl":
        loc = _numbers(panel, "locality (mean)")
        err = _numbers(panel, "relative error")
        plain_sparseness = float(panel.steps[0].numbers["sparseness of W (mean)"])
        rising = [loc[v] for v in (0.3, 0.5, 0.6, 0.75)]
        if not all(a < b for a, b in zip(rising, rising[1:], strict=False)):
            problems.append(f"locality does not rise from sW 0.3 to 0.75: {rising}")
        if not (0.3 < plain_sparseness < 0.5 and loc[0.3] < loc[None]):
            problems.append("plain NMF is not between sW 0.3 and 0.5, or 0.3 is not less local")
        if not err[0.75] < err[None] + 0.05:
            problems.append("the error grows by more than 0.05 up to sW 0.75")
        if not (err[0.85] > 1.5 * err[0.75] and loc[0.85] < loc[0.75]):
            problems.append("sW 0.85 does not break the basis up (error, locality)")
    elif panel.id == "natural":
        ori = _numbers(panel, "orientation (mean)")
        rising = [ori[v] for v in (0.5, 0.7, 0.85)]
        if not all(a < b for a, b in zip(rising, rising[1:], strict=False)):
            problems.append(f"orientation does not rise from sH 0.5 to 0.85: {rising}")
        if not ori[0.85] > 2 * ori[None]:
            problems.append("sH 0.85 is not more than twice as oriented as plain NMF")
    if problems:
        return f"the {panel.id} panel does not show what docs/explorer.md says: " + "; ".join(
            problems
        )
    return None
