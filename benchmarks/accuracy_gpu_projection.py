"""The GPU projection's accuracy against the CPU kernel. A script, not a test.

    python benchmarks/accuracy_gpu_projection.py            # NumPy: the array code
    python benchmarks/accuracy_gpu_projection.py --cupy     # on a GPU: as nmf_sc projects

Rows of n entries ``1 + spread * U(0, 1)`` (nearly constant for a small
spread, where the threshold's rounding is amplified by beta) and
``|N(0, 1)|`` rows, at sparseness 0.1 to 0.9, float64: for each, the
largest entry gap to :func:`nmfsc.project` in ulps of l2, the L1 target's
relative miss in eps, and the condition estimate kappa
(:func:`nmfsc.gpu_backend.thresholds.condition_parts`; rows above
``KAPPA_MAX`` are projected by the CPU kernel, so their gap is 0).
"""

import argparse

import numpy as np

from nmfsc import l1_for_sparseness, project
from nmfsc.gpu_backend.device_projection import project_rows
from nmfsc.gpu_backend.thresholds import (
    condition_parts,
    max_passes,
    thresholds_by_passes,
)


def to_host(x):
    """x as a NumPy array (``.get()`` for a CuPy array)."""
    return x.get() if hasattr(x, "get") else np.asarray(x)


EPS = np.finfo(np.float64).eps
SPARSENESS = (0.1, 0.3, 0.6, 0.9)


def rows(n, rng):
    """(name, X): nearly constant rows of four spreads, then |N(0, 1)| rows."""
    for spread in (1e-1, 1e-2, 1e-4, 1e-6):
        yield f"1 + {spread:g} U", 1.0 + spread * rng.random((len(SPARSENESS), n))
    yield "|N(0, 1)|", np.abs(rng.standard_normal((len(SPARSENESS), n)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--cupy", action="store_true", help="project CuPy arrays (a GPU)")
    args = parser.parse_args(argv)
    if args.cupy:
        import cupy as xp
    else:
        xp = np
    n = args.n
    l1 = np.array([l1_for_sparseness(s, n) for s in SPARSENESS])
    l2 = np.ones(len(SPARSENESS))
    print(f"# rows of {n}, {'CuPy' if args.cupy else 'NumPy (the array code)'}")
    print("| rows | sparseness | gap (ulps of l2) | L1 miss (eps) | kappa |")
    print("|---|---:|---:|---:|---:|")
    rng = np.random.default_rng(3)
    for name, X in rows(n, rng):
        Xd, l1d, l2d = xp.asarray(X), xp.asarray(l1), xp.asarray(l2)
        S = to_host(project_rows(xp, Xd, l1d, l2d)[0])
        alpha, _, moments = thresholds_by_passes(xp, Xd, l1d / l2d, max_passes(n))
        norms = xp.sqrt(xp.sum(xp.maximum(Xd - alpha[:, None], 0.0) ** 2, axis=1))
        parts = condition_parts(xp, *moments, alpha, l1d / l2d)
        kappa = to_host(parts * (l2d / norms) / l1d)
        for r, s in enumerate(SPARSENESS):
            want = project(X[r], l1[r], l2[r])
            gap = np.max(np.abs(S[r] - want)) / EPS
            miss = abs(S[r].sum() - l1[r]) / (EPS * l1[r])
            print(f"| {name} | {s} | {gap:.3g} | {miss:.3g} | {kappa[r]:.3g} |")


if __name__ == "__main__":
    main()
