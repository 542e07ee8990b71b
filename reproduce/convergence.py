"""Convergence of every factorisation behind the figures (issue 18).

Did each run converge, or did its iteration cap stop it? For every experiment
recorded in the figures' JSON files of the output folder (``fig1`` ... ``sec5``),
this figure draws the relative change of the objective over 10 iterations,

    |E[k] - E[k - 10]| / |E[k - 10]|,

against the iteration k, both on log axes, one panel per data set, with the
stopping tolerance 1e-5 as a line and each run's stop marked: a dot where the
solver's own rule stopped it ("tol", "step_size"), a cross where a cap did
("max_iter", "max_time") or its line search stalled ("stalled"). The change is
the quantity the stopping rule tests, so a cross above the line is a run that
was still moving when it was stopped. A figure this invocation drew into
``unfinished/`` (a run stopped by its time guard) is read from there, and this
figure then goes there too.

It reads the JSON files only (``objective_every_10``), so it runs no
factorisation and takes a second; ``python -m reproduce all`` draws it last.
"""

from __future__ import annotations

import json

import numpy as np

from reproduce._harness import figure_json
from reproduce._invocation import CONVERGED, UNFINISHED, UNFINISHED_FOLDER
from reproduce._output import write_figure_set

CAPTION = (
    "Relative change of the objective over 10 iterations against the iteration, for "
    "every run behind the figures; dot: stopped by the solver's convergence rule, "
    "cross: stopped by its iteration or time cap."
)
SOURCES = ("fig1", "fig3", "fig4", "fig5", "sec5")
DATASETS = ("cbcl", "orl", "natural")
TOL = 1e-5


def read_runs(out_dir, unfinished=()):
    """Experiment name -> its JSON entry, from the figures' JSON files in ``out_dir``
    (in its ``unfinished/`` folder for the figures named in ``unfinished``: this
    invocation drew them there, from runs stopped by their time guard)."""
    runs = {}
    for source in SOURCES:
        folder = out_dir / UNFINISHED_FOLDER if source in unfinished else out_dir
        path = folder / f"{source}.json"
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing: run 'python -m reproduce {source}' first (the "
                "convergence figure is drawn from the figures' JSON files)"
            )
        for name, entry in json.loads(path.read_text())["experiments"].items():
            runs.setdefault(name, entry)
    return runs


def relative_changes(entry):
    """(iterations, relative change over the 10 iterations before each) of one run."""
    objective = np.asarray(entry["objective_every_10"], dtype=float)
    iterations = 10 * np.arange(1, objective.size)
    previous = np.abs(objective[:-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        change = np.abs(np.diff(objective)) / previous
    return iterations, change


def summary(name, entry):
    """The run's stop, its iterations and its last relative change over 10 iterations."""
    _, change = relative_changes(entry)
    last = float(change[-1]) if change.size else float("nan")
    return {
        "dataset": entry["dataset"],
        "solver": entry["solver"],
        "n_iter": entry["n_iter"],
        "stop_reason": entry["stop_reason"],
        "converged": entry["stop_reason"] in CONVERGED,
        "last_relative_change_per_10": last,
    }


def draw(runs):
    """The figure: one log-log panel per data set."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15, 4.6), layout="constrained")
    axes = fig.subplots(1, len(DATASETS), sharey=True)
    for ax, dataset in zip(axes, DATASETS, strict=True):
        for name, entry in runs.items():
            if entry["dataset"] != dataset:
                continue
            iterations, change = relative_changes(entry)
            keep = change > 0
            (line,) = ax.loglog(iterations[keep], change[keep], lw=1, label=name)
            if keep.any():
                marker = "o" if entry["stop_reason"] in CONVERGED else "x"
                ax.plot(iterations[keep][-1], change[keep][-1], marker, color=line.get_color())
        ax.axhline(TOL, color="k", ls="--", lw=0.8)
        ax.set_title(dataset)
        ax.set_xlabel("iteration")
        ax.legend(fontsize=6, loc="lower left")
    axes[0].set_ylabel("relative change of the objective over 10 iterations")
    return fig


def main(options):
    out_dir = options.out_dir
    pending = [source for source in SOURCES if source in UNFINISHED]
    runs = read_runs(out_dir, pending)
    payload = {
        "parameters": {"tol": TOL, "sources": list(SOURCES)},
        "runs": {name: summary(name, entry) for name, entry in runs.items()},
    }
    payload["claims"] = {
        "stopped_by_convergence_rule": sorted(
            n for n, s in payload["runs"].items() if s["converged"]
        ),
        # a capped run: how far from the tolerance it still was (its last change per 10)
        "stopped_by_cap_last_change": {
            n: s["last_relative_change_per_10"]
            for n, s in sorted(payload["runs"].items())
            if not s["converged"]
        },
    }
    claims = payload["claims"]
    claims["n_runs"] = len(payload["runs"])
    claims["n_stopped_by_convergence_rule"] = len(claims["stopped_by_convergence_rule"])
    claims["capped_runs_text"] = (
        ", ".join(
            f"{n} ({change:.1e})" for n, change in claims["stopped_by_cap_last_change"].items()
        )
        or "none"
    )
    text = figure_json(options, "convergence", CAPTION, payload)
    if pending:  # drawn from unfinished figures: unfinished too, never over the figure
        UNFINISHED["convergence"] = list(
            dict.fromkeys(run for source in pending for run in UNFINISHED[source])
        )
        out_dir = out_dir / UNFINISHED_FOLDER
    return write_figure_set(draw(runs), out_dir, "convergence", text)
