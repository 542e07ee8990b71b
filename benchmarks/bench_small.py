"""The solvers' cost per iteration on a small matrix, against the same
algorithm written in plain NumPy in the same process.

On a matrix of a few thousand entries an iteration is a handful of
microsecond-sized products, so what the solver does around them (thread
pools, thread limits, Python calls) is most of its time. This script guards
against that overhead coming back: it fits V of 60 x 50 (|N(0, 1)|, seed 0)
at rank 5 for ``--iterations`` iterations (``tol=0``, the same start) with
``nmf_sc`` unconstrained, with ``sparseness_w=0.5``, with ``sparseness_h=0.5``
and with ``solver="accelerated", sparseness_h=0.5``, and times Lee and
Seung's multiplicative updates in ten lines of NumPy (``W^T V``, ``W^T W H``,
``V H^T``, ``W H H^T``, the objective) as the floor. Each case keeps its
best of ``--repeats`` runs; the table gives microseconds per iteration and
the ratio to the NumPy loop. No target: the numbers go to
benchmarks/README.md, and a change that multiplies a ratio is a regression.

    python benchmarks/bench_small.py [--iterations 500] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np

import nmfsc

CASES = {
    "nmf_sc, no constraint": {},
    "nmf_sc, sparseness_w 0.5": {"sparseness_w": 0.5},
    "nmf_sc, sparseness_h 0.5": {"sparseness_h": 0.5},
    "accelerated, sparseness_h 0.5": {"sparseness_h": 0.5, "solver": "accelerated"},
}


def numpy_multiplicative(V, rank, iterations):
    """Seconds per iteration of Lee and Seung's updates with the objective."""
    rng = np.random.default_rng(0)
    W = np.abs(rng.standard_normal((V.shape[0], rank)))
    H = np.abs(rng.standard_normal((rank, V.shape[1])))
    start = time.perf_counter()
    for _ in range(iterations):
        H *= (W.T @ V) / (W.T @ W @ H + 1e-9)
        W *= (V @ H.T) / (W @ (H @ H.T) + 1e-9)
        0.5 * float(np.sum((V - W @ H) ** 2))
    return (time.perf_counter() - start) / iterations


def nmf_sc_per_iteration(V, rank, iterations, settings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        start = time.perf_counter()
        result = nmfsc.nmf_sc(V, rank, max_iter=iterations, tol=0.0, random_state=0, **settings)
        elapsed = time.perf_counter() - start
    return elapsed / max(result.n_iter, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}; "
        f"numpy {np.__version__}, nmfsc {nmfsc.__version__}"
    )
    V = np.abs(np.random.default_rng(0).standard_normal((60, 50)))
    rank = 5
    for settings in CASES.values():  # compile and warm up
        nmf_sc_per_iteration(V, rank, 5, settings)
    floor = min(numpy_multiplicative(V, rank, args.iterations) for _ in range(args.repeats))
    print(f"V 60 x 50, rank {rank}, {args.iterations} iterations, best of {args.repeats}")
    print("| what | µs per iteration | / NumPy loop |")
    print("|---|---:|---:|")
    print(f"| NumPy multiplicative updates (the floor) | {1e6 * floor:.1f} | 1.00 |")
    for name, settings in CASES.items():
        best = min(
            nmf_sc_per_iteration(V, rank, args.iterations, settings) for _ in range(args.repeats)
        )
        print(f"| {name} | {1e6 * best:.1f} | {best / floor:.2f} |")


if __name__ == "__main__":
    main()
