"""The claims of every figure, from any set of runs (for ``robustness`` and ``caps``).

The figure scripts that run factorisations (``fig1``, ``fig3``, ``fig4``,
``fig5``, ``sec5``) each name the experiments they need (``RUNS``) and turn the
runs into their claims (``claims(runs)``). This module asks all of them at once,
so the same claims can be computed for another seed, or with some runs replaced
by longer ones, and flattens the nested claims into one row per number.
"""

from __future__ import annotations

import importlib

FACTORISATION_FIGURES = ("fig1", "fig3", "fig4", "fig5", "sec5")
# Path separator of the flattened claims: "fig4 / locality_mean / fig4a".
SEP = " / "
# Leaves that summarise a score over the basis vectors, or a constraint met to
# rounding: kept in the JSON, left out of the Markdown tables.
_DETAIL_LEAVES = ("min", "max", "median")
_CONSTRAINT_KEYS = ("3a_sparseness_W", "achieved_sparseness_W", "sparseness_H_rows")


def figure_modules():
    """Figure name -> its module, for the figures that run factorisations."""
    return {name: importlib.import_module(f"reproduce.{name}") for name in FACTORISATION_FIGURES}


def runs_needed():
    """Every experiment the factorisation figures use, once each, in run order."""
    return list(dict.fromkeys(n for m in figure_modules().values() for n in m.RUNS))


def figure_claims(results):
    """Figure name -> its claims, from experiment name -> RunResult."""
    return {name: module.claims(results) for name, module in figure_modules().items()}


def flatten(tree, prefix=""):
    """Nested claims -> ``{"fig4 / locality_mean / fig4a": value}``.

    Only scalar leaves (bool, int, float, None) are kept; lists (e.g. per-vector
    series) are left out.
    """
    flat = {}
    for key, value in tree.items():
        path = f"{prefix}{SEP}{key}" if prefix else str(key)
        if isinstance(value, dict):
            flat.update(flatten(value, path))
        elif value is None or isinstance(value, (bool, int, float)):
            flat[path] = value
    return flat


def shown_in_tables(path):
    """Whether a flattened claim gets a row in the Markdown tables."""
    parts = path.split(SEP)
    return parts[-1] not in _DETAIL_LEAVES and not any(k in parts for k in _CONSTRAINT_KEYS)


def constraint_error(results):
    """Largest distance of any run's achieved sparseness from its target."""
    worst = 0.0
    for run in results.values():
        for param, field in (
            ("sparseness_w", "sparseness_W_columns"),
            ("sparseness_h", "sparseness_H_rows"),
        ):
            target = run.experiment.params.get(param)
            if target is not None:
                got = run.stats[field]
                worst = max(worst, abs(got["min"] - target), abs(got["max"] - target))
    return worst


def fmt(value):
    """A claim's value as the tables show it."""
    if isinstance(value, bool):
        return "yes" if value else "**no**"
    if value is None:
        return "-"
    if isinstance(value, int):
        return str(value)
    return f"{value:.3f}" if value == 0 or abs(value) >= 1e-3 else f"{value:.1e}"


# Words for the flattened claims' keys, in the order they are replaced.
_WORDS = (
    ("locality_mean_orl", "locality on ORL"),
    ("orientation_mean_natural", "orientation on natural images"),
    ("locality_mean_", "locality "),
    ("orientation_mean_", "orientation "),
    ("locality_mean", "locality"),
    ("plain_nmf_cbcl_mean_sparseness_W", "plain NMF's sparseness of W (CBCL)"),
    ("oriented_share", "share oriented above"),
    ("largest_passes_whole_grid", "most passes of the projection"),
    ("max_error_of_achieved_sparseness", "largest error of a constraint"),
    ("sec5_lnmf_orl", "LNMF"),
    ("sec5_lnmf_natural", "LNMF"),
    ("sec5_snmf_orl_alpha", "SNMF, alpha "),
    ("sec5_snmf_natural_alpha", "SNMF, alpha "),
    ("_cbcl", " (CBCL)"),
    ("_orl", " (ORL)"),
    ("_natural", " (natural)"),
)
_PANEL_TITLES = {
    "fig1": "Figure 1: plain NMF",
    "fig3": "Figure 3: CBCL, nmfsc",
    "fig4": "Figure 4: ORL, rising sW",
    "fig5": "Figure 5: natural images, sH 0.85",
    "sec5": "Section 5: LNMF and SNMF",
    "fig6": "Figure 6: the projection",
    "constraints": "constraints",
}


def readable(label):
    """A flattened claim's label in words: ``locality_mean / fig4a`` -> ``locality, Fig. 4a``."""
    for key, words in _WORDS:
        label = label.replace(key, words)
    label = label.replace("fig", "Fig. ").replace("_", " ").replace(" / ", ", ")
    return " ".join(label.split())


def strip_figure(panels, series_labels, title):
    """One panel per figure, in a grid; in each, one row per score, one dot per series.

    ``panels`` maps a panel title to ``{score label: [value per series]}``. The
    scores are listed down each panel in words (:func:`readable`), so that the
    figure reads at page width.
    """
    import math

    from matplotlib.figure import Figure

    n_cols = min(3, len(panels))
    n_rows = math.ceil(len(panels) / n_cols)
    heights = [
        max(len(scores) for scores in list(panels.values())[r * n_cols : (r + 1) * n_cols])
        for r in range(n_rows)
    ]
    fig = Figure(
        figsize=(4.4 * n_cols, 0.9 + sum(0.32 * h + 0.8 for h in heights)), layout="constrained"
    )
    grid = fig.add_gridspec(n_rows, n_cols, height_ratios=[h + 2 for h in heights])
    markers = "osD^v<>p*h"
    for k, (panel, scores) in enumerate(panels.items()):
        ax = fig.add_subplot(grid[k // n_cols, k % n_cols])
        labels = list(scores)
        for s, series in enumerate(series_labels):
            xs = [scores[label][s] for label in labels]
            ys = [i + 0.1 * (s - (len(series_labels) - 1) / 2) for i in range(len(labels))]
            ax.plot(xs, ys, markers[s % len(markers)], ms=5, label=series, alpha=0.8)
        ax.set_yticks(range(len(labels)), [readable(label) for label in labels], fontsize=8)
        ax.set_ylim(len(labels) - 0.5, -0.5)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(_PANEL_TITLES.get(panel, panel), fontsize=9)
        if k == 0:
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return fig


def score_panels(flat_by_series):
    """The strip figure's panels: every shown numeric claim, grouped by figure.

    ``flat_by_series`` is a list of flattened claims, one per series (seed, or
    cap and twice the cap).
    """
    panels = {}
    first = flat_by_series[0]
    for path, value in first.items():
        if isinstance(value, bool) or value is None or not shown_in_tables(path):
            continue
        figure, label = path.split(SEP, 1)
        panels.setdefault(figure, {})[label.replace(SEP, " ")] = [
            flat.get(path) for flat in flat_by_series
        ]
    return panels
