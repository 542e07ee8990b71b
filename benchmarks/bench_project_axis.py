"""project_batch along columns (axis=0) against rows (axis=1). A script, not a test.

    python benchmarks/bench_project_axis.py [--repeats R]

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
"""

import argparse
import sys

import numpy as np
from bench_projection import best_times, machine

from nmfsc import l1_for_sparseness, project, project_batch
from nmfsc._kernels import projection as kernels

SIZES = [1000, 3000, 10**4, 10**5]
COUNT = 50
SPARSENESS = 0.7
# axis=0 per vector at most this many times axis=1.
TARGET_RATIO = 1.2


def transposed_path(X, l1):
    """project_batch(X, l1, 1.0, axis=0) as it ran before: transposed copies."""
    vectors = np.ascontiguousarray(X.T)
    count, n = vectors.shape
    out = np.empty_like(vectors)
    passes = np.zeros(count, dtype=np.int64)
    kernels.project_rows_same_targets(
        vectors, l1, 1.0, True, kernels.METHOD_FAST, out, passes, kernels.max_filter_passes(n)
    )
    return np.ascontiguousarray(out.T)


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
    args = parser.parse_args(argv)
    rng = np.random.default_rng(2004)
    print(
        "| n | axis=1 (µs/vector) | axis=0 | axis=0 / axis=1 | transposed copies / axis=1 "
        "| project per column / axis=1 |"
    )
    print("|---|---|---|---|---|---|")
    verdicts = []
    for n in SIZES:
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
    print()
    print("\n".join(verdicts))
    print(f"\nMachine: {machine()}.")
    return 1 if any(v.startswith("FAIL") for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
