"""Drawing and scoring the basis of one run, shared by the figure scripts."""

import numpy as np

from reproduce._harness import IMAGE_SHAPES

# Tiles per row, as in the paper's figures.
GRID_COLUMNS = {"cbcl": 7, "orl": 5, "natural": 12}


def draw_run(subfig, run, label):
    """Draw the basis of ``run`` into a matplotlib SubFigure, titled ``label``."""
    from nmfsc.plotting import plot_basis, plot_on_off

    dataset = run.experiment.dataset
    if dataset == "natural":
        axes = subfig.subplots(3, 1)
        plot_on_off(run.W, IMAGE_SHAPES["natural"], axes=axes)
    else:
        ax = subfig.subplots(1, 1)
        plot_basis(
            run.W,
            IMAGE_SHAPES[dataset],
            ax=ax,
            n_cols=GRID_COLUMNS[dataset],
            normalize="l2" if dataset == "cbcl" else "max",
        )
    subfig.suptitle(label, fontsize=10)


def scores(run):
    """Locality (face data) or orientation (natural data) of the basis vectors:
    mean, median, min and max over those where it is defined (an all-zero
    vector has none; see :func:`nmfsc.scores.summarize_scores`)."""
    from nmfsc.scores import locality, orientation, summarize_scores

    dataset = run.experiment.dataset
    if dataset == "natural":
        values = orientation(run.W, IMAGE_SHAPES["natural"], on_off=True)
        name = "orientation"
    else:
        values = locality(run.W, IMAGE_SHAPES[dataset])
        name = "locality"
    stats = summarize_scores(values)
    return {name: {key: stats[key] for key in ("mean", "median", "min", "max")}}


def run_entry(run):
    """The JSON entry of one run: its statistics plus its claim scores."""
    return {**run.stats, "scores": scores(run)}


def panel_figure(runs, labels, width_per_panel=4.0, height=4.6):
    """A figure with one subfigure per run, side by side."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_per_panel * len(runs), height), layout="constrained")
    subfigs = np.atleast_1d(fig.subfigures(1, len(runs)))
    for subfig, run, label in zip(subfigs, runs, labels, strict=True):
        draw_run(subfig, run, label)
    return fig
