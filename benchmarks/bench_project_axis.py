"""project_batch along columns (axis=0) against rows (axis=1). A script, not a test.

    python benchmarks/bench_project_axis.py [--repeats R] [--copies] [--sizes N,N,...]

50 |N(0, 1)| vectors of n = 1,000 ... 100,000 entries projected to sparseness
0.7 at L2 = 1, as the columns of an n x 50 C-ordered array (``axis=0``, the
layout of a basis W) and as the rows of its transpose (``axis=1``), in one
process and interleaved (:func:`best_times`), so that a busy machine slows
both alike. The column ``project_batch`` is also timed as it was before
``project_columns`` (a transposed copy in, the row kernel, a transposed copy
out) and against one ``project`` call per column. Prints microseconds per
vector and the ratios to ``axis=1``, and a PASS/FAIL line per n (target:
``axis=0`` at most 1.2 times ``axis=1`` per vector); the results are
checked to be the same bits along both axes.

``--copies`` also times a plain copy of X in the two orders that a column
path can walk it (a block of 8 columns down the rows, as the gather, and
whole rows, as the final write), microseconds per column: the floor of the
gather and the write that axis=1 does not need.
"""

import argparse
import sys

import numpy as np
from bench_projection import best_times, machine
from numba import njit

from nmfsc import l1_for_sparseness, project, project_batch

SIZES = [1000, 3000, 10**4, 10**5]
COUNT = 50
SPARSENESS = 0.7
# axis=0 per vector at most this many times axis=1.
TARGET_RATIO = 1.2


def transposed_path(X, l1):
    """project_batch(X, l1, 1.0, axis=0) as it ran before: a transposed copy in,
    the rows' path (``axis=1``), a transposed copy out."""
    return np.ascontiguousarray(project_batch(np.ascontiguousarray(X.T), l1, 1.0, axis=1).T)


@njit(cache=True)
def copy_by_blocks(X, out):
    """out = X, a block of 8 columns at a time down all the rows."""
    n, cols = X.shape
    for j0 in range(0, cols - 7, 8):
        for i in range(n):
            src = X[i, j0 : j0 + 8]
            dst = out[i, j0 : j0 + 8]
            for b in range(8):
                dst[b] = src[b]


@njit(cache=True)
def copy_by_rows(X, out):
    """out = X, row by row (the columns of the blocks above only)."""
    n, cols = X.shape
    width = cols - cols % 8
    for i in range(n):
        src = X[i, :width]
        dst = out[i, :width]
        for j in range(width):
            dst[j] = src[j]


def _copies(X, out):
    """The two copies of X into out (:func:`copy_by_blocks`, :func:`copy_by_rows`)."""
    return {"blocks": lambda: copy_by_blocks(X, out), "rows": lambda: copy_by_rows(X, out)}


def _calls(X, rows, l1):
    """The four ways to project the columns of X (rows: X.T, C-contiguous)."""
    return {
        "rows": lambda: project_batch(rows, l1, 1.0, axis=1),
        "columns": lambda: project_batch(X, l1, 1.0, axis=0),
        "transposed": lambda: transposed_path(X, l1),
        "singles": lambda: [project(X[:, j], l1, 1.0) for j in range(X.shape[1])],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds per timing (default 5)")
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(v) for v in text.split(",")],
        default=SIZES,
        help="comma-separated vector lengths (default 1000,3000,10000,100000)",
    )
    parser.add_argument(
        "--copies", action="store_true", help="also time copies of X by blocks and by rows"
    )
    args = parser.parse_args(argv)
    rng = np.random.default_rng(2004)
    print(
        "| n | axis=1 (µs/vector) | axis=0 | axis=0 / axis=1 | transposed copies / axis=1 "
        "| project per column / axis=1 |"
    )
    print("|---|---|---|---|---|---|")
    verdicts = []
    for n in args.sizes:
        X = np.abs(rng.standard_normal((n, COUNT)))
        rows = np.ascontiguousarray(X.T)
        l1 = l1_for_sparseness(SPARSENESS, n)
        columns = project_batch(X, l1, 1.0, axis=0)
        assert np.array_equal(columns.T, project_batch(rows, l1, 1.0, axis=1))
        assert np.array_equal(columns, transposed_path(X, l1))
        t = best_times(_calls(X, rows, l1), args.repeats, 0.05)
        per = {k: v / COUNT * 1e6 for k, v in t.items()}
        print(
            f"| {n:,} | {per['rows']:.1f} | {per['columns']:.1f} "
            f"| {t['columns'] / t['rows']:.2f} | {t['transposed'] / t['rows']:.2f} "
            f"| {t['singles'] / t['rows']:.2f} |"
        )
        ratio = t["columns"] / t["rows"]
        verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
        verdicts.append(
            f"{verdict} n = {n:,}: axis=0 {ratio:.2f}x axis=1 (target <= {TARGET_RATIO})"
        )
    if args.copies:
        print("\n| n | copy by blocks of 8 columns (µs/column) | by rows |")
        print("|---|---|---|")
        for n in args.sizes:
            X = np.abs(rng.standard_normal((n, COUNT)))
            out = np.empty_like(X)
            width = COUNT - COUNT % 8
            t = best_times(_copies(X, out), args.repeats, 0.05)
            print(f"| {n:,} | {t['blocks'] / width * 1e6:.2f} | {t['rows'] / width * 1e6:.2f} |")
    print()
    print("\n".join(verdicts))
    print(f"\nMachine: {machine()}.")
    return 1 if any(v.startswith("FAIL") for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
