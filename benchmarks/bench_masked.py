"""Benchmark of the masked solvers (issue 34). A script, not a test.

    python benchmarks/bench_masked.py [--quick] [--iters K] [--repeats R]
                                      [--sparse-scale F] [--skip-dense] [--skip-sparse]
                                      [--accelerated [--hoyer-iters K]]
                                      [--accelerated-stored [--stored-hoyer-iters K]]

The defaults are the lead's run: both targets at their full sizes, in under
3 minutes on an idle 2-core machine; ``--quick`` (fewer iterations and
repeats, the same sizes) takes about half of that. Each target ends in a
line starting ``PASS`` or ``FAIL``.

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
(tracemalloc) during a masked run, against the bytes of V's stored values
and indices: O(nnz), never the 2 x 10^9 entries of a dense V (PASS when the
peak is below 10x the stored bytes).

Timing, per iteration, best of R rounds, the methods interleaved in each
round: wall time (the targets' measure) as nmf_sc's own loop time
(``result.times[-1] / n_iter``) and scikit-learn's as
``(t(K) - t(1)) / (K - 1)`` from two ``fit_transform`` calls, as in
bench_solvers.py; and CPU time of the process (all its threads) as
``(cpu(K) - cpu(1)) / (K - 1)`` for both, printed beside it because on a
shared machine the wall times move with the other jobs' load.

Accelerated (``--accelerated``): ``nmf_sc(solver="accelerated", mask=...)``
per iteration against the unmasked accelerated solver at the two shapes
(70 % mask), and on the real CBCL faces (``NMFSC_DATA_DIR``) with 30 % of
the pixels hidden: the iterations and time the masked accelerated solver
takes to reach the objective masked ``solver="hoyer"`` reaches in
``--hoyer-iters`` iterations (PASS when it takes less time).

Accelerated with ``mask="stored"`` (``--accelerated-stored``): on the sparse
target's matrix (``--sparse-scale`` shrinks it), M = 20, ``sparseness_w =
0.6``, ``nmf_sc(solver="accelerated", mask="stored")`` against
``solver="hoyer"`` with ``mask="stored"``, wall and CPU per iteration as
above (2 iterations against 1), and the objective each reaches in the same
number of iterations; the peak of numpy's allocations of the accelerated run
against the stored bytes (PASS below 10x: O(nnz)); and the iterations and
time the accelerated solver takes to reach the objective hoyer reaches in
``--stored-hoyer-iters`` (default 50) iterations (PASS when it takes less
time).
"""

import argparse
import platform
import time
import tracemalloc
import warnings
from functools import partial

import numpy as np
import scipy.sparse as sp

import nmfsc

SHAPES = {
    "CBCL": (361, 2429, 49, {"sparseness_w": 0.8}),
    "natural": (288, 10000, 72, {"sparseness_h": 0.85}),
}


def verdict(ok, text):
    print(f"{'PASS' if ok else 'FAIL'} {text}")
    return ok


def nmf_sc_call(V, M, iters, **kw):
    """``(loop wall time per iteration, CPU seconds of the whole call)``."""
    cpu = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        result = nmfsc.nmf_sc(V, M, max_iter=iters, random_state=0, tol=0.0, **kw)
    return result.times[-1] / result.n_iter, time.process_time() - cpu


def per_iteration(call, iters):
    """``(wall, cpu)`` per iteration of ``call(k)`` (which returns the wall per
    iteration and the CPU of a k-iteration run); CPU from a 1- and a K-iteration run."""
    wall, cpu_k = call(iters)
    _, cpu_1 = call(1)
    return wall, (cpu_k - cpu_1) / (iters - 1)


def best(rounds):
    return np.min(np.array(rounds), axis=0)


def dense(iters, repeats):
    print(
        "| shape | M | constraint | unmasked (ms/it) | full mask (ms/it) | ratio | "
        "70 % mask (ms/it) | ratio | CPU ms/it: unmasked, full, 70 % | CPU ratios |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---|---|")
    lines = []
    for name, (N, T, M, params) in SHAPES.items():
        rng = np.random.default_rng(0)
        V = np.abs(rng.standard_normal((N, T)))
        masks = {"plain": None, "full": np.ones((N, T), dtype=bool), "70": rng.random((N, T)) < 0.7}
        for mask in masks.values():
            nmf_sc_call(V, M, 2, mask=mask, **params)  # warm up
        rounds = {key: [] for key in masks}
        for _ in range(repeats):
            for key, mask in masks.items():
                call = partial(nmf_sc_call, V, M, mask=mask, **params)
                rounds[key].append(per_iteration(call, iters))
        (plain, plain_cpu), (full, full_cpu), (some, some_cpu) = (best(r) for r in rounds.values())
        what = ", ".join(f"{k} {v}" for k, v in params.items())
        print(
            f"| {name} {N} x {T} | {M} | {what} | {1e3 * plain:.1f} | {1e3 * full:.1f} | "
            f"{full / plain:.2f} | {1e3 * some:.1f} | {some / plain:.2f} | "
            f"{1e3 * plain_cpu:.1f}, {1e3 * full_cpu:.1f}, {1e3 * some_cpu:.1f} | "
            f"{full_cpu / plain_cpu:.2f}, {some_cpu / plain_cpu:.2f} |"
        )
        lines.append((name, full / plain))
    return [
        verdict(
            ratio <= 2.5,
            f"dense {name}: full-mask / unmasked wall per iteration {ratio:.2f} (target <= 2.5)",
        )
        for name, ratio in lines
    ]


def sklearn_call(V, M, W0, H0, iters):
    from sklearn.decomposition import NMF

    model = NMF(M, init="custom", solver="mu", tol=0.0, max_iter=iters)
    cpu, wall = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit_transform(V.T, W=H0.T.copy(), H=W0.T.copy())
    return time.perf_counter() - wall, time.process_time() - cpu


def sklearn_per_iteration(V, M, W0, H0, iters):
    """``(wall, cpu)`` per iteration: ``(t(K) - t(1)) / (K - 1)`` of each."""
    wall_k, cpu_k = sklearn_call(V, M, W0, H0, iters)
    wall_1, cpu_1 = sklearn_call(V, M, W0, H0, 1)
    return (wall_k - wall_1) / (iters - 1), (cpu_k - cpu_1) / (iters - 1)


def sparse_target(scale):
    """The sparse target's random CSR matrix (100,000 x 20,000, 10^7 stored
    values, divided by ``scale`` as the module docstring says), the bytes of
    its stored values and indices, and the generator after it."""
    N, T = int(100_000 / np.sqrt(scale)), int(20_000 / np.sqrt(scale))
    nnz = int(1e7 / scale)
    rng = np.random.default_rng(0)
    rows = rng.integers(0, N, nnz)
    cols = rng.integers(0, T, nnz)
    V = sp.csr_matrix((rng.random(nnz) + 0.01, (rows, cols)), shape=(N, T))
    V.sum_duplicates()
    del rows, cols
    return V, V.data.nbytes + V.indices.nbytes + V.indptr.nbytes, rng


def sparse(iters, repeats, scale):
    V, stored, rng = sparse_target(scale)
    (N, T), M = V.shape, 20
    nmf_sc_call(V[:1000], M, 2, mask="stored")  # warm up
    W0 = np.abs(rng.standard_normal((N, M))) * V.max()
    H0 = np.abs(rng.standard_normal((M, T)))
    masked_rounds, mu_rounds = [], []
    for _ in range(repeats):
        masked_rounds.append(per_iteration(partial(nmf_sc_call, V, M, mask="stored"), iters))
        mu_rounds.append(sklearn_per_iteration(V, M, W0, H0, iters))
    (masked, masked_cpu), (mu, mu_cpu) = best(masked_rounds), best(mu_rounds)
    tracemalloc.start()
    nmf_sc_call(V, M, 2, mask="stored")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    factors = (N + T) * M * 8
    print(f"V {N} x {T}, {V.nnz} stored values ({stored / 2**20:.0f} MiB with indices), M = {M}")
    print(f"masked nmf_sc (mask='stored'): {masked:.3f} s/it wall, {masked_cpu:.3f} s/it CPU")
    print(f"scikit-learn mu (unmasked):    {mu:.3f} s/it wall, {mu_cpu:.3f} s/it CPU")
    print(f"CPU ratio {masked_cpu / mu_cpu:.2f} (all threads of each counted)")
    print(
        f"peak numpy allocations of a masked run: {peak / 2**20:.0f} MiB = "
        f"{peak / stored:.1f} x the stored values and indices (factors: {factors / 2**20:.0f} "
        f"MiB); a dense V would be {N * T * 8 / 2**30:.0f} GiB"
    )
    return [
        verdict(
            masked <= 2 * mu,
            f"sparse: mask='stored' / scikit-learn mu wall per iteration "
            f"{masked / mu:.2f} (target <= 2)",
        ),
        verdict(
            peak <= 10 * stored,
            f"sparse memory: peak {peak / stored:.1f} x the stored "
            "values and indices (O(nnz); target <= 10x)",
        ),
    ]


def accelerated(iters, repeats, hoyer_iters):
    """The masked accelerated solver: per iteration against the unmasked one,
    then the time to masked hoyer's objective on CBCL with 30 % hidden."""
    print("| shape | M | constraint | unmasked accelerated (ms/it) | 70 % mask (ms/it) | ratio |")
    print("|---|---:|---|---:|---:|---:|")
    for name, (N, T, M, params) in SHAPES.items():
        rng = np.random.default_rng(0)
        V = np.abs(rng.standard_normal((N, T)))
        mask = rng.random((N, T)) < 0.7
        opts = {"solver": "accelerated", **params}
        nmf_sc_call(V, M, 2, mask=mask, **opts)  # warm up (compiles the kernel)
        rounds = {"plain": [], "masked": []}
        for _ in range(repeats):
            rounds["plain"].append(per_iteration(partial(nmf_sc_call, V, M, **opts), iters))
            rounds["masked"].append(
                per_iteration(partial(nmf_sc_call, V, M, mask=mask, **opts), iters)
            )
        plain, masked = (best(r)[0] for r in rounds.values())
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
    speedup = hoyer.times[-1] / fast.times[-1]
    return [
        verdict(
            faster, f"masked accelerated reaches masked hoyer's objective sooner ({speedup:.1f}x)"
        )
    ]


def accelerated_stored(iters, repeats, scale, hoyer_iters):
    """``solver="accelerated"`` against ``solver="hoyer"``, both with
    ``mask="stored"``, on the sparse target's matrix: per iteration, the
    objective after ``iters`` iterations, the accelerated run's memory, and
    the time each takes to the objective hoyer reaches in ``hoyer_iters``."""
    V, stored, _ = sparse_target(scale)
    (N, T), M = V.shape, 20
    opts = {"mask": "stored", "sparseness_w": 0.6}
    solvers = ("hoyer", "accelerated")
    for solver in solvers:
        nmf_sc_call(V[:1000], M, 2, solver=solver, **opts)  # warm up (compiles the kernels)
    rounds = {solver: [] for solver in solvers}
    for _ in range(repeats):
        for solver in solvers:
            call = partial(nmf_sc_call, V, M, solver=solver, **opts)
            rounds[solver].append(per_iteration(call, iters))
    reached = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        for solver in solvers:
            tracemalloc.start()
            result = nmfsc.nmf_sc(
                V, M, max_iter=iters, random_state=0, tol=0.0, solver=solver, **opts
            )
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            reached[solver] = (result.objective[0], result.objective[-1], peak)
    print(f"V {N} x {T}, {V.nnz} stored values, M = {M}, sparseness_w 0.6, mask='stored'")
    print(
        "| solver | wall s/it | CPU s/it | E at start | E after "
        f"{iters} it | peak numpy MiB (x stored bytes) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for solver in solvers:
        wall, cpu = best(rounds[solver])
        start, end, peak = reached[solver]
        print(
            f"| {solver} | {wall:.3f} | {cpu:.3f} | {start:.6g} | {end:.6g} | "
            f"{peak / 2**20:.0f} ({peak / stored:.1f}x) |"
        )
    ratio = best(rounds["accelerated"])[0] / best(rounds["hoyer"])[0]
    print(f"accelerated / hoyer wall per iteration: {ratio:.2f}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        warnings.simplefilter("ignore", nmfsc.DegenerateFitWarning)
        run = partial(nmfsc.nmf_sc, V, M, random_state=0, tol=0.0, **opts)
        hoyer = run(max_iter=hoyer_iters)
        target = hoyer.objective[-1]
        fast = run(
            max_iter=hoyer_iters,
            solver="accelerated",
            callback=lambda state: bool(state.objective <= target),
        )
    print(
        f"hoyer reaches E = {target:.6g} in {hoyer.n_iter} iterations, {hoyer.times[-1]:.1f} s; "
        f"accelerated E = {fast.objective[-1]:.6g} in {fast.n_iter} iterations, "
        f"{fast.times[-1]:.1f} s"
    )
    peak = reached["accelerated"][2]
    return [
        verdict(
            peak <= 10 * stored,
            f"accelerated mask='stored' memory: peak {peak / stored:.1f} x the stored "
            "values and indices (O(nnz); target <= 10x)",
        ),
        verdict(
            reached["accelerated"][1] < reached["hoyer"][1],
            f"accelerated mask='stored' reaches a lower objective than hoyer in {iters} iterations",
        ),
        verdict(
            fast.objective[-1] <= target and fast.times[-1] < hoyer.times[-1],
            f"accelerated mask='stored' reaches hoyer's objective after {hoyer.n_iter} "
            f"iterations sooner ({hoyer.times[-1] / fast.times[-1]:.1f}x)",
        ),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations and repeats")
    parser.add_argument("--iters", type=int, default=None, help="K (default 10, --quick 5)")
    parser.add_argument("--repeats", type=int, default=None, help="R (default 3, --quick 1)")
    parser.add_argument("--sparse-scale", type=float, default=1.0)
    parser.add_argument("--skip-dense", action="store_true")
    parser.add_argument("--skip-sparse", action="store_true")
    parser.add_argument("--accelerated", action="store_true")
    parser.add_argument("--hoyer-iters", type=int, default=100)
    parser.add_argument("--accelerated-stored", action="store_true")
    parser.add_argument("--stored-hoyer-iters", type=int, default=50)
    args = parser.parse_args()
    iters = args.iters or (5 if args.quick else 10)
    repeats = args.repeats or (1 if args.quick else 3)
    print(f"machine: {platform.processor() or platform.machine()}, {platform.platform()}")
    start = time.perf_counter()
    results = []
    if not args.skip_dense:
        results += dense(iters, repeats)
    if not args.skip_sparse:
        results += sparse(max(2, iters // 2), max(1, repeats - 1), args.sparse_scale)
    if args.accelerated:
        results += accelerated(iters, repeats, args.hoyer_iters)
    if args.accelerated_stored:
        results += accelerated_stored(
            2, max(1, repeats - 1), args.sparse_scale, args.stored_hoyer_iters
        )
    print(f"{sum(results)} of {len(results)} PASS, {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
