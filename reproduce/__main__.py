"""Command line: ``python -m reproduce {all,fig1,...,fig6,sec5,compare} [options]``."""

import argparse
import importlib
import sys
import time

from reproduce import FIGURES
from reproduce._harness import Options
from reproduce.compare import DATASETS


def build_parser():
    parser = argparse.ArgumentParser(
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
        choices=("all",) + FIGURES + ("compare",),
        metavar="TARGET",
        help="'all' (every figure) or one or more of: "
        + ", ".join(FIGURES)
        + "; 'compare' runs the side-by-side comparison with standard NMF",
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
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--out",
        default="figures",
        help="output folder (default figures/; with --quick, quick-output/ instead)",
    )
    parser.add_argument(
        "--max-time",
        type=float,
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
    args = build_parser().parse_args(argv)
    targets = tuple(dict.fromkeys(args.targets))
    if "all" in targets:
        targets = FIGURES + tuple(t for t in targets if t == "compare")
    options = Options(
        quick=args.quick,
        seed=args.seed,
        out=args.out,
        max_time=args.max_time,
        force=args.force,
        progress=not args.no_progress,
    )
    start = time.perf_counter()
    for name in targets:
        module = importlib.import_module(f"reproduce.{name}")
        t0 = time.perf_counter()
        if name == "compare":
            chosen = DATASETS if "all" in args.dataset else tuple(dict.fromkeys(args.dataset))
            paths = module.main(options, chosen)
        else:
            paths = module.main(options)
        print(f"[{name}] done in {time.perf_counter() - t0:.1f} s -> {', '.join(map(str, paths))}")
    print(f"reproduce: {len(targets)} target(s) in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
