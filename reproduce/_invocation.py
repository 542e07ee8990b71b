"""What one invocation of ``python -m reproduce`` keeps: its results, its suite
progress, and the list of runs that did not converge.

A result never depends on how busy the machine was: a run stopped by its time
guard (``max_time``) is not cached as final; its checkpoint is kept and the
next invocation continues it, with a fresh guard (:func:`checkpoint_seconds`
gives the resumed run the seconds it already had), until it stops by its
tolerance or its iteration cap (both independent of wall time, so the cache
key leaves ``max_time`` out). Each experiment runs at most once per
invocation (:data:`RESULTS`), even with ``--force`` and when several figures
share it; the end of every invocation lists the runs that did not stop by
their tolerance (:func:`unconverged_lines`).

A figure is drawn into its output folder only from final results: when a run
it draws was stopped by its time guard, the figure's files go to the scratch
folder ``<out>/unfinished/`` instead (:func:`take_guarded`), the files in
``<out>`` stay as they were, and the invocation ends with exit status 3
(:data:`UNFINISHED`): the same command continues the guarded runs.
"""

from __future__ import annotations

import sys
import zipfile

import numpy as np

__all__ = [
    "CONVERGED",
    "RESULTS",
    "UNFINISHED",
    "UNFINISHED_FOLDER",
    "checkpoint_seconds",
    "close_suite",
    "forget_this_invocation",
    "run_line",
    "start_suite",
    "note_drawn",
    "suite_advance",
    "take_guarded",
    "unconverged_lines",
]

#: Stop reasons of a run that met its convergence test.
CONVERGED = ("tol", "step_size")

#: This invocation's results by cache key: an experiment runs (or is read from
#: the cache) once per invocation, even with --force or in several figures.
RESULTS: dict = {}

#: The results requested since the last figure was written (the next figure's runs).
_DRAWN: list = []

#: Figures of this invocation written to :data:`UNFINISHED_FOLDER` instead of
#: their output folder: name -> the runs of theirs stopped by the time guard.
UNFINISHED: dict = {}

#: The scratch folder, inside the output folder, of figures drawn from runs
#: stopped by their time guard.
UNFINISHED_FOLDER = "unfinished"


def forget_this_invocation() -> None:
    """Start a new invocation: the next request of every experiment runs (or
    reads the cache) again."""
    RESULTS.clear()
    _DRAWN.clear()
    UNFINISHED.clear()


def note_drawn(result) -> None:
    """Record that the figure being made draws ``result`` (a RunResult)."""
    _DRAWN.append(result)


def take_guarded() -> list[str]:
    """The experiments stopped by their time guard among the results requested
    since the last call (the runs of the figure about to be written)."""
    guarded = [r.stats["experiment"] for r in _DRAWN if r.stats["stop_reason"] == "max_time"]
    _DRAWN.clear()
    return list(dict.fromkeys(guarded))


def unconverged_lines() -> list[str]:
    """One line per run of this invocation that did not stop by its tolerance:
    its experiment, stop reason and iterations, and for a run stopped by its
    time guard that its checkpoint is continued by the next invocation."""
    lines = []
    for result in RESULTS.values():
        stats = result.stats
        if stats["stop_reason"] in CONVERGED:
            continue
        line = (
            f"{stats['experiment']}: stopped by {stats['stop_reason']} after "
            f"{stats['n_iter']} iterations"
        )
        if stats["stop_reason"] == "max_time":
            line += " (time guard; checkpointed, not cached: the next run continues it)"
        elif stats["stop_reason"] == "max_iter":
            line += " (its iteration cap; 'caps' reruns it with twice the cap)"
        lines.append(line)
    return lines


def checkpoint_seconds(path):
    """The loop's seconds recorded in the checkpoint at ``path`` (0 when it
    cannot be read: resuming then reports the damage)."""
    try:
        with np.load(path, allow_pickle=False) as saved:
            return float(saved["times"][-1])
    except (OSError, ValueError, KeyError, IndexError, EOFError, zipfile.BadZipFile):
        return 0.0


_SUITE = {"bar": None}


def start_suite(total, options):
    """A progress bar over every experiment of the run, with an ETA."""
    if options.progress and total > 1:
        from tqdm import tqdm

        from nmfsc.solvers.framework import PlainProgress, is_terminal

        if is_terminal(sys.stderr):
            _SUITE["bar"] = tqdm(total=total, desc="suite", unit="exp", position=1, leave=True)
        else:  # a log file: plain lines, not a bar's redraws
            _SUITE["bar"] = PlainProgress("suite (experiments)", total)


def suite_advance():
    if _SUITE["bar"] is not None:
        _SUITE["bar"].update(1)


def close_suite():
    if _SUITE["bar"] is not None:
        _SUITE["bar"].close()
        _SUITE["bar"] = None


def run_line(stats, wall):
    """The log line of a finished run: iterations, stop, error, seconds, and
    what it left dead or unused, and whether its time guard kept it uncached."""
    line = (
        f"{stats['n_iter']} iterations, stop: {stats['stop_reason']}, "
        f"rel. error {stats['relative_error']:.4f}, {wall:.1f} s"
    )
    if stats["dead_samples"] or stats["unused_components"]:
        line += (
            f", {stats['dead_samples']} dead samples, "
            f"{stats['unused_components']} unused components"
        )
    if "checkpoint" in stats:
        line += " (time guard: checkpointed, not cached)"
    return line
