"""The figures of :class:`nmfsc.Comparison`: bases, error curves, sparseness histograms.

Every figure is a :class:`matplotlib.figure.Figure` made without pyplot (no
display needed) and written atomically by :func:`plot_all`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from nmfsc.comparison._methods import METHODS
from nmfsc.sparseness import sparseness

__all__ = ["bases_figure", "curves_figure", "plot_all", "sparseness_figure"]

_PREFIX = "QUICK (smoke test, not a result): "


def _colours(methods):
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {m: cmap(METHODS.index(m) % 10) for m in methods}


def _methods(comparison):
    return [m for m in METHODS if any(r["method"] == m for r in comparison.rows)]


def bases_figure(comparison, seed=None, quick=False):
    """The basis images of every method from one seed (the first by default)."""
    from matplotlib.figure import Figure

    from nmfsc.plotting import plot_basis

    s = comparison.settings
    seed = s["seeds"][0] if seed is None else seed
    shape, on_off = tuple(s["image_shape"]), s["on_off"]
    methods = _methods(comparison)
    n_cols = min(4, len(methods))
    n_rows = -(-len(methods) // n_cols)
    fig = Figure(figsize=(3.2 * n_cols, 3.6 * n_rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(n_rows, n_cols)).ravel()
    grid = math.ceil(math.sqrt(s["n_components"]))
    for ax, method in zip(axes, methods, strict=False):
        W = comparison.runs[(method, seed)].W
        if on_off:
            pixels = shape[0] * shape[1]
            plot_basis(W[:pixels] - W[pixels:], shape, ax=ax, n_cols=grid, signed=True)
        else:
            plot_basis(W, shape, ax=ax, n_cols=grid, normalize="max")
        ax.set_title(_label(comparison, method, seed), fontsize=9)
    for ax in axes[len(methods) :]:
        ax.set_axis_off()
    title = f"Bases learned on {s['name']} (seed {seed})"
    if on_off:
        title += ", ON minus OFF, grey = 0"
    fig.suptitle((_PREFIX if quick else "") + title)
    return fig


def _label(comparison, method, seed):
    row = next(r for r in comparison.rows if r["method"] == method and r["seed"] == seed)
    error = row["relative_error"]
    extra = "\nfailed" if error is None else f"\nrel. error {error:.3f}"
    if error is not None and row["stop_reason"] == "failed":
        extra += " (failed)"
    if "alpha" in row:
        extra += f", alpha {row['alpha']:.3g}"
    return method + extra


def curves_figure(comparison, x="time", quick=False):
    """Relative error against seconds (``x="time"``) or iterations, every seed."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.subplots()
    colours = _colours(_methods(comparison))
    key = "time_s" if x == "time" else "iteration"
    seen = set()
    for curve in comparison.curves:
        method = curve["method"]
        label = None if method in seen else method
        seen.add(method)
        ax.plot(
            curve[key], curve["relative_error"], color=colours[method], lw=1, alpha=0.8, label=label
        )
    ax.set_xscale("symlog", linthresh=1e-3 if x == "time" else 1.0)
    ax.set_yscale("log")
    ax.set_xlabel("solver time (s)" if x == "time" else "iteration")
    ax.set_ylabel(r"relative error $\|V - WH\|_F / \|V\|_F$")
    seeds = ", ".join(map(str, comparison.settings["seeds"]))
    title = (
        f"Relative error against {'time' if x == 'time' else 'iterations'} on "
        f"{comparison.settings['name']} (seeds {seeds})"
    )
    ax.set_title((_PREFIX if quick else "") + title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return fig


def sparseness_figure(comparison, quick=False):
    """Histograms of the sparseness of W's columns and H's rows, all seeds pooled."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    methods = _methods(comparison)
    colours = _colours(methods)
    bins = np.linspace(0.0, 1.0, 41)
    for ax, factor in zip(axes, ("W", "H"), strict=True):
        for method in methods:
            values = []
            for (m, _), run in comparison.runs.items():
                if m == method:
                    X, axis = (run.W, 0) if factor == "W" else (run.H, 1)
                    keep = np.any(X != 0, axis=axis)
                    if keep.any():
                        values.append(sparseness(X.compress(keep, axis=1 - axis), axis=axis))
            if values:
                ax.hist(
                    np.concatenate(values),
                    bins=bins,
                    histtype="step",
                    lw=1.3,
                    color=colours[method],
                    label=method,
                )
        what = "columns of W" if factor == "W" else "rows of H"
        ax.set_xlabel(f"Hoyer sparseness of the {what}")
        ax.set_xlim(0, 1)
    axes[0].set_ylabel("count (all seeds)")
    axes[1].legend(fontsize=8, frameon=False)
    fig.suptitle((_PREFIX if quick else "") + f"Sparseness on {comparison.settings['name']}")
    return fig


def plot_all(comparison, directory, formats=("png", "pdf"), quick=False):
    """Write every figure into ``directory``; returns the paths written."""
    from nmfsc.plotting import save_figure  # matplotlib only when figures are drawn

    directory = Path(directory)
    figures = []
    if comparison.settings["image_shape"] is not None:
        figures.append(("bases", bases_figure(comparison, quick=quick)))
    figures.append(("error_vs_time", curves_figure(comparison, "time", quick)))
    figures.append(("error_vs_iteration", curves_figure(comparison, "iteration", quick)))
    figures.append(("sparseness", sparseness_figure(comparison, quick)))
    paths = []
    for name, fig in figures:
        paths.extend(save_figure(fig, directory / name, formats=formats))
    return paths
