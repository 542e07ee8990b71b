"""The claims of every figure, from any set of runs (for ``robustness`` and ``caps``).

The figure scripts that run factorisations (``fig1``, ``fig3``, ``fig4``,
``fig5``, ``sec5``) each name the experiments they need (``RUNS``) and turn the
runs into their claims (``claims(runs)``). This module asks all of them at once,
so the same claims can be computed for another seed, or with some runs replaced
by longer ones, and flattens the nested claims into one row per number.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

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


# --------------------------------------------------------------------------
# The paper's claims in words: the reproduction page and the seeds figure
# --------------------------------------------------------------------------
_PARAM_WORDS = {"sparseness_w": "sW", "sparseness_h": "sH", "alpha": "alpha"}


def run_words(name):
    """A run of ``reproduce.experiments`` as a reader names it: its method, its
    settings and the figure it draws (``fig4c`` -> ``nmfsc, sW 0.75 (Fig. 4c)``).
    The settings are read from the experiments' table, so they are the runs' own."""
    from reproduce.experiments import EXPERIMENTS, METHOD_WORDS

    exp = EXPERIMENTS[name]
    words = ", ".join(
        [METHOD_WORDS.get(exp.solver, exp.solver)]
        + [f"{_PARAM_WORDS.get(k, k)} {v:g}" for k, v in exp.params.items()]
    )
    where = "Sec. 5" if name.startswith("sec5") else name.replace("fig", "Fig. ")
    return f"{words} ({where})"


@dataclass(frozen=True)
class Claim:
    """One claim of the paper, in words, and the rows of ``robustness.json`` that decide it.

    ``numbers`` are (flattened claim path, label in words): the scores that decide
    the claim, drawn in the seeds figure and tabled on the page; ``more`` are
    tabled only. The claim holds for a seed when every yes/no row in
    ``verdicts`` is yes for it. ``reference`` is a line drawn across the panel
    (value, words), where the claim compares with a fixed number.
    """

    anchor: str
    figure: str
    title: str
    paper: str
    rule: str
    score: str
    numbers: tuple = ()
    more: tuple = ()
    verdicts: tuple = ()
    reference: tuple | None = None


def _runs(prefix, *names):
    return tuple((f"{prefix}{SEP}{n}", run_words(n)) for n in names)


CLAIMS = (
    Claim(
        "plain-nmf-faces",
        "fig1",
        "Plain NMF: parts of the CBCL faces, whole ORL faces",
        "Standard NMF learns local, parts-based features from the CBCL faces "
        "(Figure 1a) but global, holistic features from the ORL faces (Figure 1b).",
        "holds when the CBCL features are more local than the ORL features",
        "mean locality of the basis images",
        numbers=(
            (f"fig1{SEP}locality_mean_1a_cbcl", "CBCL: " + run_words("fig1a")),
            (f"fig1{SEP}locality_mean_1b_orl", "ORL: " + run_words("fig1b")),
        ),
        verdicts=(f"fig1{SEP}1a_more_local_than_1b",),
    ),
    Claim(
        "exact-sparseness",
        "fig2",
        "The projection sets a vector's sparseness exactly",
        "Sparseness runs from 0 (every entry equal) to 1 (one non-zero entry), and "
        "the projection finds the closest non-negative vector of any desired "
        "sparseness (Figure 2 shows vectors of four levels).",
        "holds when every basis image of Figure 3a is within 1e-6 of its target 0.8",
        "sparseness error",
        more=(
            (
                f"constraints{SEP}max_error_of_achieved_sparseness",
                "largest distance of any constrained run's sparseness from its target",
            ),
        ),
        verdicts=(f"fig3{SEP}3a_sparseness_W_within_1e-6_of_0.8",),
    ),
    Claim(
        "sw-slightly-above-nmf",
        "fig3",
        "sW = 0.8 is slightly above plain NMF's own sparseness on CBCL",
        'Figure 3a fixes the basis sparseness at 0.8, "slightly higher than the '
        'average sparseness produced by standard NMF".',
        "holds when plain NMF's mean basis sparseness on CBCL is below 0.8",
        "mean sparseness of the basis images",
        numbers=((f"fig3{SEP}plain_nmf_cbcl_mean_sparseness_W", "CBCL: " + run_words("fig1a")),),
        verdicts=(f"fig3{SEP}plain_nmf_slightly_below_0.8",),
        reference=(0.8, "sW of Fig. 3a"),
    ),
    Claim(
        "cbcl-local-only-with-sparse-basis",
        "fig3",
        "On CBCL, only sparse basis images stay local",
        "With sW = 0.8 nmfsc gives local features like standard NMF's (Figure 3a); "
        "sparse coefficients instead (sH = 0.8, Figure 3b) or a low basis "
        "sparseness (sW = 0.2, Figure 3c) give global, non-local features.",
        "holds when Fig. 3a is more local than both Fig. 3b and Fig. 3c",
        "mean locality of the basis images",
        numbers=_runs(f"fig3{SEP}locality_mean", "fig3a", "fig3b", "fig3c"),
        more=_runs(f"fig3{SEP}locality_mean", "fig1a"),
        verdicts=(f"fig3{SEP}3a_more_local_than_3b_and_3c",),
    ),
    Claim(
        "orl-sparser-more-local",
        "fig4",
        "On ORL, a sparser basis gives more local features",
        "Raising the basis sparseness sW makes the ORL features more and more "
        "local, starting from the global features of standard NMF (Figure 4).",
        "holds when locality rises with sW and every nmfsc run is more local than plain NMF",
        "mean locality of the basis images",
        numbers=_runs(f"fig4{SEP}locality_mean", "fig1b", "fig4a", "fig4b", "fig4c"),
        verdicts=(f"fig4{SEP}locality_rises_with_sW", f"fig4{SEP}all_more_local_than_plain_nmf"),
    ),
    Claim(
        "natural-oriented",
        "fig5",
        "On natural images, sparse coefficients give oriented features",
        "With the coefficients' sparseness fixed (sH = 0.85), nmfsc learns oriented, "
        "edge-like features from natural image patches (Figure 5), where standard "
        "NMF learns unoriented blobs (Figure 1c).",
        "holds when nmfsc's features are on average more oriented than plain NMF's",
        "mean orientation of the features",
        numbers=(
            (f"fig5{SEP}orientation{SEP}fig5{SEP}mean", run_words("fig5")),
            (f"fig5{SEP}orientation{SEP}fig1c{SEP}mean", run_words("fig1c")),
        ),
        more=(
            (
                f"fig5{SEP}oriented_share{SEP}fig5{SEP}0.5",
                "share of nmfsc's features with orientation above 0.5",
            ),
            (
                f"fig5{SEP}oriented_share{SEP}fig5{SEP}0.4",
                "share of nmfsc's features with orientation above 0.4",
            ),
            (
                f"fig5{SEP}oriented_share{SEP}fig1c{SEP}0.4",
                "share of plain NMF's features with orientation above 0.4",
            ),
        ),
        verdicts=(f"fig5{SEP}fig5_more_oriented_than_fig1c",),
    ),
    Claim(
        "projection-passes",
        "fig6",
        "The projection needs at most 10 passes",
        "The projection never needed more than 10 passes in the paper's trials, "
        "and the number of passes grows very slowly with the dimension (Figure 6).",
        "holds when no trial of the whole grid needs more than 10 passes",
        "most passes of any trial",
        numbers=((f"fig6{SEP}largest_passes_whole_grid", "most passes over the whole grid"),),
        verdicts=(f"fig6{SEP}bound_holds",),
        reference=(10, "the paper's bound"),
    ),
    Claim(
        "lnmf-local-on-orl",
        "sec5",
        "Local NMF is local on ORL",
        "Local NMF (LNMF, Li et al.) produces local features from the ORL faces, "
        "where standard NMF's are global (Section 5).",
        "holds when LNMF's features are more local than plain NMF's",
        "mean locality of the basis images",
        numbers=_runs(f"sec5{SEP}locality_mean_orl", "sec5_lnmf_orl", "fig1b"),
        more=_runs(
            f"sec5{SEP}locality_mean_orl",
            "sec5_snmf_orl_alpha1",
            "sec5_snmf_orl_alpha100",
            "sec5_snmf_orl_alpha10000",
        ),
        verdicts=(f"sec5{SEP}lnmf_more_local_than_plain_nmf_on_orl",),
    ),
    Claim(
        "only-nmfsc-oriented",
        "sec5",
        "On natural images, only nmfsc gives oriented features",
        "Neither LNMF nor Sparse NMF (SNMF, Liu et al.) produces oriented filters "
        "from natural image data; they give circular blobs (Section 5).",
        "holds when every LNMF and SNMF run is less oriented than nmfsc's Figure 5",
        "mean orientation of the features",
        numbers=_runs(
            f"sec5{SEP}orientation_mean_natural",
            "sec5_lnmf_natural",
            "sec5_snmf_natural_alpha1",
            "sec5_snmf_natural_alpha100",
            "sec5_snmf_natural_alpha10000",
            "fig5",
        ),
        verdicts=(f"sec5{SEP}only_nmfsc_oriented",),
    ),
)


def holds_by_seed(claim, table):
    """Per seed, whether every yes/no row of ``claim`` is yes (``table``: robustness's claims)."""
    rows = [table[path]["values"] for path in claim.verdicts]
    return [all(column) for column in zip(*rows, strict=True)]


def seeds_figure(claims, table, seeds):
    """The seeds figure, drawn for a page about 7 inches wide: one panel per claim
    with ``numbers``, stacked; in each, one row per score (labelled in words) and
    one dot per seed, a dashed line where the claim compares with a fixed
    number (named in the axis label), and above it the claim and its verdict
    across the seeds.

    ``table`` is ``robustness.json``'s ``claims`` (flattened path -> ``values``
    per seed), ``seeds`` the seeds in that order.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    drawn = [c for c in claims if c.numbers]
    # Inches: each row of dots 0.24; each panel's title and axis 0.9.
    heights = [0.24 * len(c.numbers) + 0.9 for c in drawn]
    fig = Figure(figsize=(7.2, 0.3 + sum(heights)), layout="constrained")
    top, panels = fig.subfigures(2, 1, height_ratios=[0.3, sum(heights)])
    markers = "osD^v<>p*h"
    colors = [f"C{k}" for k in range(10)]
    subs = panels.subfigures(len(drawn), 1, height_ratios=heights, squeeze=False)[:, 0]
    for claim, sub in zip(drawn, subs, strict=True):
        ax = sub.add_subplot()
        n = len(claim.numbers)
        values = [table[path]["values"] for path, _ in claim.numbers]
        for s in range(len(seeds)):
            offset = 0.12 * (s - (len(seeds) - 1) / 2)
            ax.plot(
                [v[s] for v in values],
                [i + offset for i in range(n)],
                markers[s % len(markers)],
                color=colors[s % len(colors)],
                ms=5,
                alpha=0.85,
            )
        if all(isinstance(x, int) for v in values for x in v):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            low, high = ax.get_xlim()
            ax.set_xlim(min(low, round(low) - 0.5), max(high, round(high) + 0.5))
        xlabel = claim.score
        if claim.reference is not None:
            value, words = claim.reference
            ax.axvline(value, color="0.3", lw=1, ls="--")
            xlabel += f" (dashed: {words})"
        ax.set_yticks(range(n), [label for _, label in claim.numbers], fontsize=9)
        ax.set_ylim(n - 0.5, -0.5)
        ax.tick_params(axis="x", labelsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel(xlabel, fontsize=9, labelpad=1)
        held = holds_by_seed(claim, table)
        verdict = (
            "holds for every seed" if all(held) else f"holds for {sum(held)} of {len(held)} seeds"
        )
        sub.suptitle(f"{claim.title}: {verdict}", x=0.01, ha="left", fontsize=10)
    handles = [
        Line2D([], [], ls="", marker=markers[s % len(markers)], color=colors[s % len(colors)])
        for s in range(len(seeds))
    ]
    top.legend(
        handles,
        [f"seed {s}" for s in seeds],
        loc="center",
        ncols=len(seeds),
        fontsize=9,
        frameon=False,
    )
    return fig
