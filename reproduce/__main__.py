"""Command line: ``python -m reproduce {all,fig1,...,fig6,sec5,compare,caps,robustness}``.

The last lines list every run that did not stop by its tolerance (its
iteration cap, or its time guard: such a run is checkpointed, not cached, and
the next invocation continues it).

Exit status: 0 when done; 3 when a figure drew a run stopped by its time
guard (a busy machine): that figure is written to ``<out>/unfinished/``, its
files in ``<out>`` are left as they were, and the same command continues the
run from its checkpoint; 2 for missing or bad data or a bad command-line
value (one line on stderr, no traceback); 130 on Ctrl-C (one line): a run
stopped there keeps its checkpoint, nothing unfinished is cached, and the same
command resumes. Warnings (e.g. an unreadable cache entry, recomputed) are one
line each.
"""

import argparse
import importlib
import math
import sys
import time
import warnings

from nmfsc.datasets import DataError
from reproduce import FIGURES
from reproduce._harness import CacheWarning, Options
from reproduce._invocation import (
    UNFINISHED,
    UNFINISHED_FOLDER,
    forget_this_invocation,
    unconverged_lines,
)
from reproduce._output import finish_pending
from reproduce.compare import DATASETS
from reproduce.robustness import DEFAULT_SEEDS

# Targets outside 'all': each reruns the suite (several times over for robustness).
EXTRA = ("compare", "caps", "robustness")

PROG = "python -m reproduce"


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error on one line (status 2)."""

    def error(self, message):
        self.exit(2, f"{PROG}: error: {' '.join(message.split())} (see --help)\n")


def _seed(text):
    value = int(text) if text.strip().lstrip("-").isdigit() else None
    if value is None or value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def build_parser():
    parser = _Parser(
        prog="python -m reproduce",
        description=(
            "Regenerate the figures of Hoyer (2004), 'Non-negative matrix factorization "
            "with sparseness constraints', from the real data. Writes figures/<name>.png, "
            ".pdf and .json (the numbers behind each figure)."
        ),
    )
    parser.add_argument(
        "targets",
        nargs="+",
        choices=("all",) + FIGURES + EXTRA,
        metavar="TARGET",
        help="'all' (every figure) or one or more of: "
        + ", ".join(FIGURES)
        + "; 'compare' runs the side-by-side comparison with standard NMF; 'caps' reruns "
        "the runs stopped by their iteration cap with twice the cap; 'robustness' "
        "computes every claim for several seeds (--seeds); the last three are not in 'all'",
    )
    parser.add_argument(
        "--dataset",
        nargs="+",
        choices=("all",) + DATASETS,
        default=["all"],
        help="data set(s) of 'compare' (default: all of " + ", ".join(DATASETS) + ")",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny budget (a few iterations per experiment): a smoke test, not a result; "
        "never written into figures/",
    )
    parser.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--seeds",
        type=_seed,
        nargs="+",
        default=list(DEFAULT_SEEDS),
        help="seeds of 'robustness' (default: 0 1 2 3 4)",
    )
    parser.add_argument(
        "--out",
        default="figures",
        help="output folder (default figures/; with --quick, quick-output/ instead)",
    )
    parser.add_argument(
        "--max-time",
        type=_seconds,
        default=None,
        help="cap in seconds on each run (default: per experiment, see REPRODUCTION.md)",
    )
    parser.add_argument(
        "--force", action="store_true", help="recompute even when a cached result matches"
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bars (plain log lines only)"
    )
    return parser


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help (0), or a usage error on one line (2)
        return 0 if done.code is None else done.code
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default", CacheWarning)  # shown, never an error
            warnings.showwarning = _show_warning
            return run(args)
    except KeyboardInterrupt as stop:
        detail = str(stop) or "finished runs are cached and the same command resumes"
        _say(f"interrupted: {detail}")
        return 130
    except DataError as error:
        _say(f"error: {error}")
        return 2


def run(args):
    """Run the targets of the parsed command line; returns 0, or 3 when a
    figure drew a run stopped by its time guard (module docstring)."""
    targets = tuple(dict.fromkeys(args.targets))
    if "all" in targets:
        targets = FIGURES + tuple(t for t in targets if t in EXTRA)
    options = Options(
        quick=args.quick,
        seed=args.seed,
        out=args.out,
        max_time=args.max_time,
        force=args.force,
        progress=not args.no_progress,
    )
    for figure in finish_pending(options.out_dir):
        _say(f"completed the files of {figure}, left half replaced by a killed run")
    forget_this_invocation()
    start = time.perf_counter()
    for name in targets:
        module = importlib.import_module(f"reproduce.{name}")
        t0 = time.perf_counter()
        if name == "compare":
            chosen = DATASETS if "all" in args.dataset else tuple(dict.fromkeys(args.dataset))
            paths = module.main(options, chosen)
        elif name == "robustness":
            paths = module.main(options, tuple(dict.fromkeys(args.seeds)))
        else:
            paths = module.main(options)
        print(f"[{name}] done in {time.perf_counter() - t0:.1f} s -> {', '.join(map(str, paths))}")
    print(f"reproduce: {len(targets)} target(s) in {time.perf_counter() - start:.1f} s")
    unconverged = unconverged_lines()
    if unconverged:
        print(f"reproduce: {len(unconverged)} run(s) did not stop by their tolerance:")
        print("\n".join(f"  {line}" for line in unconverged))
    else:
        print("reproduce: every run stopped by its tolerance")
    if UNFINISHED:
        scratch = options.out_dir / UNFINISHED_FOLDER
        print(
            f"reproduce: unfinished: {len(UNFINISHED)} figure(s) drew runs stopped by their "
            f"time guard, so they went to {scratch}/ and {options.out_dir}/ keeps its "
            "files; run the same command again to continue those runs:"
        )
        print("\n".join(f"  {f}: {', '.join(runs)}" for f, runs in UNFINISHED.items()))
        return 3
    return 0


def _say(message):
    """One line on stderr, prefixed with the program's name."""
    print(f"{PROG}: {' '.join(str(message).split())}", file=sys.stderr, flush=True)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    _say(f"{category.__name__}: {message}")


if __name__ == "__main__":
    sys.exit(main())
