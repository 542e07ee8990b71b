"""Benchmark of real-data scale (issue 12). A script, not a test.

    python benchmarks/bench_scale.py [--part sparse|float32|init|all] [--reduced]
                                     [--iters K] [--repeats R] [--blas-threads T]

Three parts, each printing a Markdown table and PASS / FAIL lines:

sparse
    A 100,000 x 20,000 scipy.sparse CSR matrix with 0.5 % stored values (10^7,
    uniform in (0, 1]), rank 20: ``nmf_sc`` with ``sparseness_h=0.7`` and
    ``nmf_euclidean`` against scikit-learn's ``NMF(solver="mu")`` (Frobenius,
    ``init="custom"`` from the same W and H, ``tol=0``), in one process.
    Per-iteration time: nmfsc's own loop time over K iterations
    (``result.times[-1] / n_iter``, which includes recording the objective);
    scikit-learn's ``(t(K) - t(1)) / (K - 1)`` from two whole ``fit_transform``
    calls (its set-up and final error removed). Peak memory: the peak of
    :mod:`tracemalloc` during the call, over what was allocated before it
    (V itself is not counted; numpy and scipy report their buffers to it),
    from separate, untimed calls of 2 iterations, two ways: with the starting
    W and H made before the call (not counted) and inside it (counted).
    scikit-learn updates the W and H it is given in place; nmfsc leaves the
    caller's arrays alone and works on its own normalised copy, so the first
    way charges nmfsc one W that scikit-learn's caller paid for. The dense
    copy of V would take 16 GB.
    Targets: time per iteration <= 1.5x scikit-learn mu's, peak <= 1.2x.

float32
    Dense natural-image-like data, 288 x 1,000,000 (ON / OFF halves of
    Laplacian 12 x 12 "patches", floored at 1e-4, divided by the maximum so
    that max(V) = 1 and neither dtype makes a normalised copy), rank 72,
    ``nmf_sc`` with ``sparseness_h=0.85``, in float64 and float32, both held in
    memory and run in turn (``--repeats`` runs of K iterations each, float64
    then float32, so that both see the same load; the best run of each is
    shown, all are printed): time per iteration, and the part of it spent in
    the projection of H's rows (nmf_sc's ``_Projector.step_rows``, timed around
    the kernel call, which forms each trial row as it projects it), and
    tracemalloc peaks (V, 2.3 GB / 1.15 GB, not counted) of the iterations
    (from the end of iteration 1 to the end of 3) and of the whole call (which
    adds the start's exact objective and, in float64, the result's
    ``relative_error = ||V - W H|| / ||V||``, computed as before from N x T
    temporaries so that float64 results keep their bits). Targets: float32 >=
    1.5x faster, <= 0.5x the memory.

init
    Iterations and time until the paper-mode stopping rule (relative change
    below 1e-5 over 10 iterations, the solvers' defaults; at most 5000
    iterations, 300 s: the budgets of reproduce/experiments.py) from
    ``init="random"`` and ``init="nndsvda"``, seed 0, on CBCL (nmf_sc, M = 49,
    s_W = 0.8; Figure 3a) and ORL (nmf_sc, M = 25, s_W = 0.5; Figure 4a),
    with the final objective (lower is better), the time the SVD start took,
    and when each start first reached the random start's final objective.
    Needs the data sets (``NMFSC_DATA_DIR``).

``--reduced`` divides the sparse and float32 sizes by 10 (a quick check; the
tables say so).
"""

import argparse
import os
import platform
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nmfsc  # noqa: E402


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def peak_bytes(func, *args, **kwargs):
    """The tracemalloc peak of one call, above what was allocated before it."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        _quiet(func, *args, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - base


def _mb(n):
    return f"{n / 2**20:,.0f} MB"


def _ms(t):
    return f"{t * 1e3:,.0f} ms" if t < 10 else f"{t:,.1f} s"


def _line(ok, text):
    print(f"- {'PASS' if ok else 'FAIL'}: {text}")


def sklearn_mu_time(X, W, H, iters):
    """scikit-learn NMF(mu) seconds per iteration, (t(K) - t(1)) / (K - 1)."""
    from sklearn.decomposition import NMF

    def fit(k):
        model = NMF(W.shape[1], solver="mu", init="custom", max_iter=k, tol=0.0)
        t0 = time.perf_counter()
        _quiet(model.fit_transform, X, W=W.copy(), H=H.copy())
        return time.perf_counter() - t0

    return (fit(iters) - fit(1)) / (iters - 1)


def sklearn_mu_peak(X, W, H, iters, inside):
    """Peak of NMF(mu); ``inside``: the start's copies are made in the measured call."""
    from sklearn.decomposition import NMF

    model = NMF(W.shape[1], solver="mu", init="custom", max_iter=iters, tol=0.0)
    if inside:
        return peak_bytes(lambda: model.fit_transform(X, W=W.copy(), H=H.copy()))
    W, H = W.copy(), H.copy()
    return peak_bytes(lambda: model.fit_transform(X, W=W, H=H))


def bench_sparse(reduced, iters):
    N, T, M, density = 100_000, 20_000, 20, 0.005
    if reduced:
        N, T = N // 10, T // 10
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    V = sp.random(N, T, density=density, format="csr", random_state=rng, dtype=np.float64)
    V.data = 1.0 - V.data  # (0, 1]: no explicit zeros
    made = time.perf_counter() - t0
    scale = float(V.data.max())
    W0 = np.abs(rng.standard_normal((N, M)))
    H0 = np.abs(rng.standard_normal((M, T)))
    print(
        f"\n## Sparse: {N:,} x {T:,}, {V.nnz:,} stored values ({100 * density:g} %), "
        f"rank {M}{' (REDUCED size)' if reduced else ''}\n"
    )
    print(
        f"(matrix made in {made:.1f} s; CSR takes {_mb(V.data.nbytes + V.indices.nbytes)}; "
        f"a dense float64 copy would take {N * T * 8 / 1e9:.1f} GB)\n"
    )
    start = {"W_init": W0 * scale, "H_init": H0}
    runs = {
        "nmf_sc (s_H = 0.7)": (nmfsc.nmf_sc, {"sparseness_h": 0.7}),
        "nmf_euclidean": (nmfsc.nmf_euclidean, {}),
    }
    for solver, kwargs in runs.values():  # compile, the blocked products included
        _quiet(solver, V[: min(N, 30_000)], M, max_iter=2, random_state=0, **kwargs)
    t_sk = sklearn_mu_time(V, W0 * scale, H0, iters)
    m_sk = [sklearn_mu_peak(V, W0 * scale, H0, 2, inside) for inside in (False, True)]
    rows = [("scikit-learn NMF(mu)", t_sk, m_sk)]
    for name, (solver, kwargs) in runs.items():
        res = _quiet(solver, V, M, init="custom", max_iter=iters, tol=0, **start, **kwargs)
        peaks = []
        for inside in (False, True):
            W_given, H_given = W0 * scale, H0.copy()

            def call(solver=solver, kwargs=kwargs, inside=inside, W=W_given, H=H_given):
                W_init, H_init = (W.copy(), H.copy()) if inside else (W, H)
                options = {"init": "custom", "W_init": W_init, "H_init": H_init, "tol": 0}
                return solver(V, M, max_iter=2, **options, **kwargs)

            peaks.append(peak_bytes(call))
            del W_given, H_given
        rows.append((name, res.times[-1] / res.n_iter, peaks))
    print(
        "| method | time / iteration | vs sklearn mu | peak, start not counted | vs sklearn "
        "| peak, start counted | vs sklearn |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, t, (a, b) in rows:
        print(
            f"| {name} | {_ms(t)} | {t / t_sk:.2f} | {_mb(a)} | {a / m_sk[0]:.2f} "
            f"| {_mb(b)} | {b / m_sk[1]:.2f} |"
        )
    print()
    for name, t, (a, b) in rows[1:]:
        _line(t / t_sk <= 1.5, f"{name} time per iteration <= 1.5x sklearn mu's: {t / t_sk:.2f}x")
        _line(a / m_sk[0] <= 1.2, f"{name} peak (start not counted) <= 1.2x: {a / m_sk[0]:.2f}x")
        _line(b / m_sk[1] <= 1.2, f"{name} peak (start counted) <= 1.2x: {b / m_sk[1]:.2f}x")


def natural_like(N_half, T, rng, dtype):
    """ON / OFF halves of Laplacian 'patches', floored at 1e-4, max 1."""
    V = np.empty((2 * N_half, T), dtype=dtype)
    step = 50_000
    for start in range(0, T, step):
        x = rng.laplace(size=(N_half, min(step, T - start)))
        V[:N_half, start : start + x.shape[1]] = np.maximum(x, 1e-4)
        V[N_half:, start : start + x.shape[1]] = np.maximum(-x, 1e-4)
    V /= V.max()
    return V


def _projection_clock():
    """Wrap the projection of nmf_sc's line-search trials (its row projector's
    ``step_rows``) so that its seconds are summed (the kernel's share of an
    iteration); returns (the dict of the sum, a restore function)."""
    from nmfsc.solvers import hoyer

    projector = hoyer._Projector
    original = projector.step_rows
    spent = {"s": 0.0}

    def step_rows(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent["s"] += time.perf_counter() - t0

    projector.step_rows = step_rows
    return spent, lambda: setattr(projector, "step_rows", original)


def _iteration_peak(V, M, options):
    """tracemalloc peaks: from the end of iteration 1 to the end of 3, and of the whole call."""
    seen = {}

    def watch(state):
        if state.iteration == 1:
            tracemalloc.reset_peak()
        elif state.iteration == 3:
            seen["peak"] = tracemalloc.get_traced_memory()[1]

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        _quiet(nmfsc.nmf_sc, V, M, max_iter=3, callback=watch, **options)
        call_peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    return seen["peak"] - before, call_peak


def bench_float32(reduced, iters, repeats=2):
    T, M = 1_000_000, 72
    if reduced:
        T //= 10
    print(
        f"\n## float32 vs float64: dense 288 x {T:,}, rank {M}, nmf_sc s_H = 0.85"
        f"{' (REDUCED size)' if reduced else ''}\n"
    )
    dtypes = (np.float64, np.float32)
    data = {d: natural_like(144, T, np.random.default_rng(0), d) for d in dtypes}
    options = {"sparseness_h": 0.85, "random_state": 0, "tol": 0}
    for V in data.values():  # compile
        _quiet(nmfsc.nmf_sc, np.ascontiguousarray(V[:, :2000]), M, max_iter=2, **options)
    times = {d: [] for d in dtypes}
    shares = {d: [] for d in dtypes}
    spent, restore = _projection_clock()
    try:
        for _ in range(repeats):  # interleaved: both dtypes see the same load
            for d in dtypes:
                spent["s"] = 0.0
                res = _quiet(nmfsc.nmf_sc, data[d], M, max_iter=iters, **options)
                times[d].append(res.times[-1] / res.n_iter)
                shares[d].append(spent["s"] / res.n_iter)  # the start's projection is outside
    finally:
        restore()
    results = {}
    for d in dtypes:
        best = int(np.argmin(times[d]))
        results[d] = (times[d][best], shares[d][best], *_iteration_peak(data[d], M, options))
    print(
        f"| dtype | V | time / iteration (best of {repeats}) | of which projection | other "
        "| peak during iterations 2-3 | peak of the whole call |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for d, (t, proj, it_peak, call_peak) in results.items():
        print(
            f"| {np.dtype(d).name} | {_mb(data[d].nbytes)} | {_ms(t)} | {_ms(proj)} "
            f"| {_ms(t - proj)} | {_mb(it_peak)} | {_mb(call_peak)} |"
        )
    (t64, p64, i64, c64), (t32, p32, i32, c32) = results[np.float64], results[np.float32]
    print(
        f"\nall times: float64 {[round(t, 3) for t in times[np.float64]]} s, "
        f"float32 {[round(t, 3) for t in times[np.float32]]} s; projection / iteration "
        f"float64 {p64:.3f} s, float32 {p32:.3f} s ({p64 / p32:.2f}x); the rest "
        f"{(t64 - p64) / (t32 - p32):.2f}x\n"
    )
    _line(t64 / t32 >= 1.5, f"float32 >= 1.5x faster per iteration: {t64 / t32:.2f}x")
    # "half the memory": the arrays that scale with the data halve; a few fixed-size
    # ones (the same in both runs) may leave the ratio a fraction of a percent above.
    half = f"float32 iteration peak half float64's (within 1 %): {i32 / i64:.4f}x"
    _line(i32 / i64 <= 0.505, half)
    _line(c32 / c64 <= 0.5, f"float32 whole-call peak <= 0.5x float64's: {c32 / c64:.4f}x")


def bench_init():
    from nmfsc import datasets

    print("\n## Starts: iterations and time to the paper-mode tolerance (tol 1e-5, window 10)\n")
    cases = [
        ("CBCL 361 x 2429, nmf_sc M 49 s_W 0.8", datasets.load_cbcl, 49, {"sparseness_w": 0.8}),
        ("ORL 2576 x 400, nmf_sc M 25 s_W 0.5", datasets.load_orl, 25, {"sparseness_w": 0.5}),
    ]
    print(
        "| data, solver | init | stop | iterations | loop time | start time | final objective "
        "| iterations (time) to the random start's final objective |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for label, load, M, kwargs in cases:
        V = load()
        _quiet(nmfsc.nmf_sc, V[:, :50], 5, max_iter=2, random_state=0, **kwargs)  # compile
        target = None
        for init in ("random", "nndsvda"):
            t0 = time.perf_counter()
            res = _quiet(
                nmfsc.nmf_sc, V, M, init=init, random_state=0, max_iter=5000, max_time=300, **kwargs
            )
            start = time.perf_counter() - t0 - res.times[-1]
            target = res.objective[-1] if target is None else target
            reached = np.flatnonzero(res.objective <= target * (1 + 1e-12))
            to_target = (
                f"{reached[0]} ({res.times[reached[0]]:.1f} s)" if reached.size else "not reached"
            )
            print(
                f"| {label} | {init} | {res.stop_reason} | {res.n_iter} | {res.times[-1]:.1f} s "
                f"| {start:.2f} s | {res.objective[-1]:.6g} | {to_target} |"
            )


def machine(blas_threads):
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features()
        avx2 = "avx2" if features.get("avx2") else "no avx2"
        cpu += f" (LLVM target {llvm.get_host_cpu_name()}, {avx2})"
    except Exception:  # noqa: BLE001 (the machine line is a courtesy)
        pass
    return (
        f"Machine: {cpu}, {os.cpu_count()} logical cores (shared), Python "
        f"{platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"BLAS threads {blas_threads or 'default'}."
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=["sparse", "float32", "init", "all"], default="all")
    parser.add_argument("--reduced", action="store_true", help="sizes divided by 10")
    parser.add_argument("--iters", type=int, default=5, help="iterations timed (K)")
    parser.add_argument("--repeats", type=int, default=2, help="float32 part: interleaved runs")
    parser.add_argument("--blas-threads", type=int, default=None)
    args = parser.parse_args(argv)
    if args.blas_threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.blas_threads)
    t0 = time.perf_counter()
    if args.part in ("sparse", "all"):
        bench_sparse(args.reduced, args.iters)
    if args.part in ("float32", "all"):
        bench_float32(args.reduced, args.iters, args.repeats)
    if args.part in ("init", "all"):
        bench_init()
    print(f"\n{machine(args.blas_threads)} Total {time.perf_counter() - t0:.0f} s.")


if __name__ == "__main__":
    main()
