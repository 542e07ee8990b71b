"""Benchmark of the masked solvers (issue 34). A script, not a test.

    python benchmarks/bench_masked.py [--iters K] [--repeats R] [--sparse-scale F]
                                      [--skip-dense] [--skip-sparse]
                                      [--accelerated [--hoyer-iters K]]

Dense: time per iteration of ``nmf_sc`` with a mask against the same call
without one: a mask true everywhere (the same iterates, so the same number
of line-search trials: the cost of the masked products alone, the target's
ratio) and a random mask of 70 % (other iterates, other trials), at the paper's
CBCL shape (361 x 2429, M = 49, s_W = 0.8) and natural-image shape
(288 x 10000, M = 72, s_H = 0.85), random |N(0, 1)| data; target <= 2.5x.

Sparse: ``nmf_sc(V, 20, mask="stored")`` (unconstrained: the weighted
multiplicative updates) on a random CSR matrix of 100,000 x 20,000 with 10^7
stored values (``--sparse-scale F`` divides both dimensions by sqrt(F) and
the stored values by F) against scikit-learn's ``NMF(solver="mu")`` on the
same matrix, unmasked (its unstored entries are zeros it fits), per
iteration; target <= 2x. Memory: the peak of numpy's allocations
(tracemalloc) during the masked run, against the bytes of V's stored values
and indices: O(nnz), never the 2 x 10^9 entries of a dense V.

Accelerated (``--accelerated``): ``nmf_sc(solver="accelerated", mask=...)``
per iteration against the unmasked accelerated solver at the two shapes
(70 % mask), and on the real CBCL faces (``NMFSC_DATA_DIR``) with 30 % of
the pixels hidden: the iterations and time the masked accelerated solver
takes to reach the objective masked ``solver="hoyer"`` reaches in
``--hoyer-iters`` iterations (PASS when it takes less time).

Timing: nmfsc's own loop time (``result.times[-1] / n_iter``), best of R;
scikit-learn's per iteration as ``(t(K) - t(1)) / (K - 1)`` from two
``fit_transform`` calls, as in bench_solvers.py.
"""

import argparse
import platform
import time
import tracemalloc
import warnings

import numpy as np
import scipy.sparse as sp

import nmfsc

SHAPES = {
    "CBCL": (361, 2429, 49, {"sparseness_w": 0.8}),
    "natural": (288, 10000, 72, {"sparseness_h": 0.85}),
}


def per_iteration(V, M, mask, opts, iters, repeats):
    """nmf_sc's own loop time per iteration, best of ``repeats`` runs of ``iters``."""
    best = np.inf
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
            result = nmfsc.nmf_sc(V, M, max_iter=iters, mask=mask, **opts)
        best = min(best, result.times[-1] / result.n_iter)
    return best


def dense(iters, repeats):
    print(
        "| shape | M | constraint | unmasked (ms/it) | full mask (ms/it) | ratio | "
        "70 % mask (ms/it) | ratio | target |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    ok = True
    for name, (N, T, M, params) in SHAPES.items():
        rng = np.random.default_rng(0)
        V = np.abs(rng.standard_normal((N, T)))
        mask = rng.random((N, T)) < 0.7
        opts = {"random_state": 0, "tol": 0.0, **params}
        per_iteration(V, M, mask, opts, 2, 1)  # warm up
        plain = per_iteration(V, M, None, opts, iters, repeats)
        same_path = per_iteration(V, M, np.ones((N, T), dtype=bool), opts, iters, repeats)
        masked = per_iteration(V, M, mask, opts, iters, repeats)
        ratio = same_path / plain
        ok &= ratio <= 2.5
        what = ", ".join(f"{k} {v}" for k, v in params.items())
        print(
            f"| {name} {N} x {T} | {M} | {what} | {1e3 * plain:.1f} | {1e3 * same_path:.1f} | "
            f"{ratio:.2f} | {1e3 * masked:.1f} | {masked / plain:.2f} | "
            f"{'PASS' if ratio <= 2.5 else 'FAIL'} (<= 2.5) |"
        )
    return ok


def sklearn_per_iteration(V, M, W0, H0, iters):
    from sklearn.decomposition import NMF

    def fit(k):
        model = NMF(M, init="custom", solver="mu", tol=0.0, max_iter=k)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit_transform(V.T, W=H0.T.copy(), H=W0.T.copy())
        return time.perf_counter() - t0

    return (fit(iters) - fit(1)) / (iters - 1)


def sparse(iters, scale):
    N, T = int(100_000 / np.sqrt(scale)), int(20_000 / np.sqrt(scale))
    nnz = int(1e7 / scale)
    M = 20
    rng = np.random.default_rng(0)
    rows = rng.integers(0, N, nnz)
    cols = rng.integers(0, T, nnz)
    V = sp.csr_matrix((rng.random(nnz) + 0.01, (rows, cols)), shape=(N, T))
    V.sum_duplicates()
    stored = V.data.nbytes + V.indices.nbytes + V.indptr.nbytes
    nmfsc.nmf_sc(V[:1000], M, mask="stored", max_iter=2, random_state=0, tol=0.0)  # warm up
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        result = nmfsc.nmf_sc(V, M, mask="stored", max_iter=iters, random_state=0, tol=0.0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    masked = result.times[-1] / result.n_iter
    W0 = np.abs(rng.standard_normal((N, M))) * V.max()
    H0 = np.abs(rng.standard_normal((M, T)))
    mu = sklearn_per_iteration(V, M, W0, H0, max(2, iters))
    factors = (N + T) * M * 8
    print(f"V {N} x {T}, {V.nnz} stored values ({stored / 2**20:.0f} MiB with indices), M = {M}")
    print(f"masked nmf_sc (mask='stored'): {masked:.2f} s/it")
    print(f"scikit-learn mu (unmasked):    {mu:.2f} s/it")
    print(f"ratio: {masked / mu:.2f} ({'PASS' if masked <= 2 * mu else 'FAIL'}, target <= 2)")
    print(
        f"peak numpy allocations of the masked run: {peak / 2**20:.0f} MiB = "
        f"{peak / stored:.1f} x the stored values and indices (factors: {factors / 2**20:.0f} "
        f"MiB); a dense V would be {N * T * 8 / 2**30:.0f} GiB"
    )
    return masked <= 2 * mu


def accelerated(iters, repeats, hoyer_iters):
    """The masked accelerated solver: per iteration against the unmasked one,
    then the time to masked hoyer's objective on CBCL with 30 % hidden."""
    print("| shape | M | constraint | unmasked accelerated (ms/it) | 70 % mask (ms/it) | ratio |")
    print("|---|---:|---|---:|---:|---:|")
    for name, (N, T, M, params) in SHAPES.items():
        rng = np.random.default_rng(0)
        V = np.abs(rng.standard_normal((N, T)))
        mask = rng.random((N, T)) < 0.7
        opts = {"random_state": 0, "tol": 0.0, "solver": "accelerated", **params}
        per_iteration(V, M, mask, opts, 1, 1)  # warm up (compiles the kernel)
        plain = per_iteration(V, M, None, opts, iters, repeats)
        masked = per_iteration(V, M, mask, opts, iters, repeats)
        what = ", ".join(f"{k} {v}" for k, v in params.items())
        print(
            f"| {name} {N} x {T} | {M} | {what} | {1e3 * plain:.1f} | {1e3 * masked:.1f} | "
            f"{masked / plain:.2f} |"
        )
    from nmfsc.datasets import load_cbcl

    V = load_cbcl()
    seen = np.random.default_rng(0).random(V.shape) >= 0.3
    opts = {"random_state": 0, "tol": 0.0, "mask": seen, "sparseness_w": 0.8}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        hoyer = nmfsc.nmf_sc(V, 49, max_iter=hoyer_iters, **opts)
        target = hoyer.objective[-1]
        fast = nmfsc.nmf_sc(
            V,
            49,
            max_iter=hoyer_iters,
            solver="accelerated",
            callback=lambda state: bool(state.objective <= target),
            **opts,
        )
    reached = fast.objective[-1] <= target
    print(
        f"CBCL 361 x 2429, M 49, sparseness_w 0.8, 30 % of the pixels hidden: masked hoyer "
        f"reaches E = {target:.6g} in {hoyer.n_iter} iterations, {hoyer.times[-1]:.1f} s; "
        f"masked accelerated E = {fast.objective[-1]:.6g} in {fast.n_iter} iterations, "
        f"{fast.times[-1]:.1f} s"
    )
    faster = reached and fast.times[-1] < hoyer.times[-1]
    print(
        f"{'PASS' if faster else 'FAIL'}: masked accelerated reaches masked hoyer's objective "
        f"sooner ({hoyer.times[-1] / fast.times[-1]:.1f}x)"
    )
    return faster


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sparse-scale", type=float, default=1.0)
    parser.add_argument("--skip-dense", action="store_true")
    parser.add_argument("--skip-sparse", action="store_true")
    parser.add_argument("--accelerated", action="store_true")
    parser.add_argument("--hoyer-iters", type=int, default=100)
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {platform.platform()}")
    if not args.skip_dense:
        dense(args.iters, args.repeats)
    if not args.skip_sparse:
        sparse(max(2, args.iters // 2), args.sparse_scale)
    if args.accelerated:
        accelerated(args.iters, args.repeats, args.hoyer_iters)


if __name__ == "__main__":
    main()
