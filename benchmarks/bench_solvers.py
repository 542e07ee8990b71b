"""Benchmark of the solvers' iterations (issue 6). A script, not a test.

    python benchmarks/bench_solvers.py [--quick] [--iters K] [--repeats R]

Per-iteration time of ``nmf_sc`` and of ``nmf_euclidean`` on the paper's three
shapes, with random non-negative data (|N(0, 1)| + 1e-4, divided by its max):

* CBCL    361 x 2429,  M = 49, nmf_sc with s_W = 0.8 (Figure 3a),
* ORL     2576 x 400,  M = 25, nmf_sc with s_W = 0.5 (Figure 4a),
* natural 288 x 10000, M = 72, nmf_sc with s_H = 0.85 (Figure 5),

against

* a plain NumPy transcription of SPEC.md (below), run in the same process from
  the same start: no cached products, the residual V - W H formed for every
  objective (in nmf_sc: for every line-search trial), and the projection by the
  NumPy transcription of the paper's algorithm (``numpy_projection`` from
  bench_projection.py) called in a Python loop, one vector at a time;
* scikit-learn's ``NMF`` (``solver="mu"`` and ``solver="cd"``,
  ``beta_loss="frobenius"``, ``init="custom"`` from the same W and H,
  ``tol=0`` so that it never stops early, no regularisation).

BLAS threads. Every method spends most of its time in BLAS products; the
machine line gives the BLAS and its thread count. ``--blas-threads 1`` limits
it for every method alike (on a machine whose cores are busy with other jobs a
multi-threaded OpenBLAS can stall for a scheduler time slice at every call,
which swamps the comparison).

Timing. Every method runs K iterations, best of R rounds, after a warm-up run
(numba compilation); a round runs every method once, so the repeats of the
methods are interleaved in time. nmfsc's time is the loop time it records itself
(``result.times[-1] / n_iter``: the iterations with their objective history,
not the input checks and the start); the transcriptions record the same way.
scikit-learn records nothing per iteration, so its time per iteration is
``(t(K) - t(1)) / (K - 1)`` from two whole ``fit_transform`` calls with
``max_iter`` K and 1, which removes its set-up and final error computation.
(With ``tol=0`` scikit-learn's "mu" computes no objective during the
iterations; nmfsc records one after every iteration.)

Trajectory check. nmfsc and its transcription compute the same iteration from
the same start, so their objectives after K iterations must agree to rounding;
the table gives the relative difference. scikit-learn's "mu" is Euclidean NMF
too, but it updates W before H (SPEC: H, then W), rescales nothing and adds no
1e-9 to the denominators, so its objective only stays near nmf_euclidean's
(about 1e-3 relative after 30 iterations; shown for information, and the
printed line names only the rescaling); "cd" is a different algorithm.

The projection of one trial of H. After the tables, the rows of one line-search
trial of H on the natural shape (H - mu dH after 40 iterations) are projected
by the kernel as ``project_batch`` calls it (unguided) and as nmf_sc calls it
(guided by the support sizes of H), against one ``np.sum`` per row: where
natural's extra time per iteration goes (issue 14, points 2 and 3).

Targets (issue 6): nmf_sc at least 5x faster per iteration than its
transcription; nmf_euclidean no slower per iteration than scikit-learn's "mu";
nmf_sc within 2x of scikit-learn's "mu". Issue 14: nmf_sc at most 1.2x
nmf_euclidean per iteration. Prints one Markdown table per shape,
PASS / FAIL lines, and the machine.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_projection import fmt_time, machine, numpy_projection  # noqa: E402

import nmfsc  # noqa: E402
from nmfsc import ConvergenceWarning  # noqa: E402

EPS = 1e-9
MU_MIN = 1e-200
MAX_SC_OVER_EUCLIDEAN = 1.2  # issue 14, point 3

SHAPES = [
    ("CBCL", (361, 2429), 49, {"sparseness_w": 0.8}),
    ("ORL", (2576, 400), 25, {"sparseness_w": 0.5}),
    ("natural", (288, 10000), 72, {"sparseness_h": 0.85}),
]


# --- plain NumPy transcriptions (SPEC.md) -------------------------------------------------
def _euclid(V, W, H):
    R = V - W @ H
    return 0.5 * np.sum(R * R)


def _l1(s, n):
    return np.sqrt(n) - (np.sqrt(n) - 1.0) * s


def _project_columns(X, s, own_norm):
    out = np.empty_like(X)
    n = X.shape[0]
    for j in range(X.shape[1]):
        l2 = np.sqrt(X[:, j] @ X[:, j]) if own_norm else 1.0
        out[:, j], _ = numpy_projection(X[:, j], _l1(s, n) * l2, l2)
    return out


def _project_rows(X, s):
    return _project_columns(X.T, s, own_norm=False).T


def numpy_nmf_sc(V, W, H, n_iter, sparseness_w=None, sparseness_h=None):
    """SPEC's nmf_sc. Returns (objective history, elapsed time after each iteration)."""
    H = H / np.sqrt(np.sum(H * H, axis=1))[:, None]
    if sparseness_w is not None:
        W = _project_columns(W, sparseness_w, own_norm=False)
    if sparseness_h is not None:
        H = _project_rows(H, sparseness_h)
    mu_w = mu_h = 1.0
    history, times = [_euclid(V, W, H)], [0.0]
    t0 = time.perf_counter()
    for _ in range(n_iter):
        if sparseness_h is not None:
            dH = W.T @ (W @ H - V)
            before = _euclid(V, W, H)
            while True:
                trial = _project_rows(H - mu_h * dH, sparseness_h)
                if _euclid(V, W, trial) <= before or mu_h < MU_MIN:
                    break
                mu_h /= 2.0
            mu_h *= 1.2
            H = trial
        else:
            H = H * (W.T @ V) / (W.T @ W @ H + EPS)
            norms = np.sqrt(np.sum(H * H, axis=1))
            H = H / norms[:, None]
            W = W * norms[None, :]
        if sparseness_w is not None:
            dW = (W @ H - V) @ H.T
            before = _euclid(V, W, H)
            while True:
                trial = _project_columns(W - mu_w * dW, sparseness_w, own_norm=True)
                if _euclid(V, trial, H) <= before or mu_w < MU_MIN:
                    break
                mu_w /= 2.0
            mu_w *= 1.2
            W = trial
        else:
            W = W * (V @ H.T) / (W @ H @ H.T + EPS)
        history.append(_euclid(V, W, H))
        times.append(time.perf_counter() - t0)
    return history, times


def numpy_euclidean(V, W, H, n_iter):
    """SPEC's Euclidean NMF (nmfmse). Returns (history, elapsed times)."""
    history, times = [_euclid(V, W, H)], [0.0]
    t0 = time.perf_counter()
    for _ in range(n_iter):
        H = H * (W.T @ V) / (W.T @ W @ H + EPS)
        W = W * (V @ H.T) / (W @ H @ H.T + EPS)
        norms = np.sqrt(np.sum(H * H, axis=1))
        H = H / norms[:, None]
        W = W * norms[None, :]
        history.append(_euclid(V, W, H))
        times.append(time.perf_counter() - t0)
    return history, times


# --- timing -------------------------------------------------------------------------------
def _opts(k):
    return {"random_state": 0, "max_iter": k, "tol": 0.0}


def _per_iteration(fn):
    """``fn()`` -> (history, times); its time per iteration and last objective."""
    history, times = fn()
    return times[-1] / (len(times) - 1), history[-1]


def _sklearn(V, W0, H0, M, solver, iters):
    """scikit-learn's NMF as a runner: (t(K) - t(1)) / (K - 1) and its objective."""
    from sklearn.decomposition import NMF

    def fit(k):
        model = NMF(
            n_components=M,
            init="custom",
            solver=solver,
            beta_loss="frobenius",
            tol=0.0,
            max_iter=k,
        )
        t0 = time.perf_counter()
        model.fit_transform(V, W=W0.copy(), H=H0.copy())
        return time.perf_counter() - t0, 0.5 * model.reconstruction_err_**2

    def run():
        t_k, objective = fit(iters)
        t_1, _ = fit(1)
        return (t_k - t_1) / (iters - 1), objective

    return run


def bench_shape(shape, M, params, iters, repeats):
    """Time every method on one shape; the repeats are interleaved (every
    method once per round, best round kept), so that a slow spell of a shared
    machine does not fall on one method's runs only."""
    V = np.abs(np.random.default_rng(0).standard_normal(shape)) + 1e-4
    V /= V.max()  # the solvers normalise too; then W is in the same units everywhere
    N, T = V.shape
    rng = np.random.default_rng(0)  # nmfsc's random start with random_state=0
    W0 = np.abs(rng.standard_normal((N, M)))
    H0 = np.abs(rng.standard_normal((M, T)))

    def run_sc():
        res = nmfsc.nmf_sc(V, M, **params, **_opts(iters))
        return res.objective, res.times

    def run_eu():
        res = nmfsc.nmf_euclidean(V, M, **_opts(iters))
        return res.objective, res.times

    runners = {
        "sc": lambda: _per_iteration(run_sc),
        "sc_np": lambda: _per_iteration(lambda: numpy_nmf_sc(V, W0, H0, iters, **params)),
        "eu": lambda: _per_iteration(run_eu),
        "eu_np": lambda: _per_iteration(lambda: numpy_euclidean(V, W0, H0, iters)),
        "mu": _sklearn(V, W0, H0, M, "mu", iters),
        "cd": _sklearn(V, W0, H0, M, "cd", iters),
    }
    nmfsc.nmf_sc(V, M, **params, **_opts(2))  # compile / warm up
    nmfsc.nmf_euclidean(V, M, **_opts(2))
    _sklearn(V, W0, H0, M, "mu", 2)()
    _sklearn(V, W0, H0, M, "cd", 2)()
    rows = {key: (np.inf, None) for key in runners}
    for _ in range(repeats):
        for key, run in runners.items():
            t, objective = run()
            rows[key] = (min(rows[key][0], t), objective)
    return rows


def bench_trial_projection(repeats, calls=20):
    """The projection of one trial of H on the natural shape (issue 14, point 3):
    the rows H - mu dH after 40 iterations of nmf_sc (s_H = 0.85) on the
    benchmark's data, projected by the kernel unguided (project_batch's path)
    and guided by H's support sizes, against one np.sum per row; and the
    whole step, numpy's trial then the guided kernel against the fused kernel
    that forms each trial row just before projecting it (nmf_sc's path).
    Interleaved, best of ``repeats`` rounds of ``calls`` calls each."""
    from nmfsc._kernels import bracket
    from nmfsc._kernels import sparse_projection as projection
    from nmfsc.solvers.hoyer import support_sizes
    from nmfsc.sparseness import l1_for_sparseness

    shape, M, params = SHAPES[2][1:]
    V = np.abs(np.random.default_rng(0).standard_normal(shape)) + 1e-4
    V /= V.max()
    res = nmfsc.nmf_sc(V, M, **params, **_opts(40))
    W, H = res.W, res.H
    mu = res.step_sizes[1]
    dH = (W.T @ W) @ H - W.T @ V
    X = np.ascontiguousarray(H - mu * dH)
    guide = support_sizes(H)  # nmf_sc's own guide
    T = shape[1]
    rho = l1_for_sparseness(params["sparseness_h"], T)
    l1, l2 = np.full(M, rho), np.ones(M)
    out = np.empty_like(X)
    status, passes = np.zeros(M, np.int64), np.zeros(M, np.int64)
    max_passes = projection.max_filter_passes(T)
    common = (X, l1, l2, True, projection.METHOD_FAST, out, status, passes, max_passes)
    scratch = np.empty(T)  # the fused kernel's trial row, then the bracket's output
    step = (H, dH, mu, rho, False, projection.METHOD_FAST, out, status, passes, max_passes)
    runners = {
        "unguided": lambda: projection.project_rows(*common),
        "guided": lambda: projection.project_rows_guided(*common, guide),
        "step": lambda: (
            np.subtract(H, mu * dH, out=X),
            projection.project_rows_guided(*common, guide),
        ),
        "fused": lambda: projection.project_step_rows(*step, guide, scratch),
        "np.sum": lambda: [np.sum(row) for row in X],
    }
    best = dict.fromkeys(runners, np.inf)
    for _ in range(repeats):
        for key, run in runners.items():
            run()
            t0 = time.perf_counter()
            for _ in range(calls):
                run()
            best[key] = min(best[key], (time.perf_counter() - t0) / calls)
    taken = {
        "unguided": sum(
            bracket.bracket_shape_into(x, True, rho, rho, 1.0, scratch, 0) >= 0 for x in X
        ),
        "guided": sum(
            bracket.bracket_shape_into(x, True, rho, rho, 1.0, scratch, g) >= 0
            for x, g in zip(X, guide, strict=True)
        ),
    }
    print(f"### The projection of one trial of H: {M} rows of {T} (natural shape, s_H = 0.85)\n")
    print("| kernel | time | / 72 np.sum | rows the bracket answers |")
    print("|---|---:|---:|---:|")
    for key, title in [
        ("unguided", "unguided (project_batch's path)"),
        ("guided", "guided by H's support sizes"),
    ]:
        ratio = best[key] / best["np.sum"]
        print(f"| {title} | {fmt_time(best[key])} | {ratio:.1f} | {taken[key]} / {M} |")
    print(f"| {M} np.sum, one per row | {fmt_time(best['np.sum'])} | 1.0 | |\n")
    print(
        "With the trial formed from H and dH (nmf_sc's step): numpy's H - mu dH, then the "
        f"guided kernel {fmt_time(best['step'])}; the fused kernel, which forms each trial "
        f"row just before projecting it (`project_step_rows`, nmf_sc's path, the same bits) "
        f"{fmt_time(best['fused'])} ({best['step'] / best['fused']:.2f}x).\n"
    )


def _rel(a, b):
    return abs(a - b) / abs(b)


def report(name, shape, M, params, iters, repeats, rows):
    label = ", ".join(f"s_{k[-1].upper()} = {v}" for k, v in params.items())
    t = {key: value[0] for key, value in rows.items()}
    E = {key: value[1] for key, value in rows.items()}
    print(
        f"### {name}: V {shape[0]} x {shape[1]}, M = {M}, nmf_sc with {label} "
        f"({iters} iterations, best of {repeats})\n"
    )
    print("| method | time / iteration | nmfsc is faster by | objective after the run |")
    print("|---|---:|---:|---:|")
    lines = [
        (f"nmfsc `nmf_sc` ({label})", "sc", "sc"),
        ("NumPy transcription of nmf_sc", "sc_np", "sc"),
        ("nmfsc `nmf_euclidean`", "eu", "eu"),
        ("NumPy transcription of Euclidean NMF", "eu_np", "eu"),
        ('scikit-learn NMF "mu"', "mu", "eu"),
        ('scikit-learn NMF "cd"', "cd", "eu"),
    ]
    for title, key, ours in lines:
        ratio = "" if key == ours else f"{t[key] / t[ours]:.2f}x"
        print(f"| {title} | {fmt_time(t[key])} | {ratio} | {E[key]:.10g} |")
    print()
    checks = [
        (
            "nmf_sc >= 5x faster than its NumPy transcription",
            t["sc_np"] / t["sc"] >= 5.0,
            f"{t['sc_np'] / t['sc']:.1f}x",
        ),
        (
            'nmf_euclidean no slower than scikit-learn "mu"',
            t["eu"] <= t["mu"],
            f"nmfsc / sklearn = {t['eu'] / t['mu']:.2f}",
        ),
        (
            f"nmf_sc within {MAX_SC_OVER_EUCLIDEAN:g}x of nmf_euclidean per iteration (issue 14)",
            t["sc"] <= MAX_SC_OVER_EUCLIDEAN * t["eu"],
            f"nmf_sc / nmf_euclidean = {t['sc'] / t['eu']:.2f}",
        ),
        (
            'nmf_sc within 2x of scikit-learn "mu"',
            t["sc"] <= 2.0 * t["mu"],
            f"nmf_sc / sklearn = {t['sc'] / t['mu']:.2f}",
        ),
    ]
    for text, ok, value in checks:
        print(f"- {'PASS' if ok else 'FAIL'}: {text} ({value})")
    print(
        "- trajectory, relative difference of the objectives after the run: "
        f"nmf_sc vs transcription {_rel(E['sc'], E['sc_np']):.1e}, "
        f"nmf_euclidean vs transcription {_rel(E['eu'], E['eu_np']):.1e} "
        f'(vs scikit-learn "mu", which does not rescale H: {_rel(E["eu"], E["mu"]):.1e})\n'
    )
    return all(ok for _, ok, _ in checks)


def threads():
    """The thread counts of the run: BLAS's and the projections' (numba's setting)."""
    return f"{blas()}, projections on {numba.config.NUMBA_NUM_THREADS} thread(s)"


def blas():
    try:
        from threadpoolctl import threadpool_info

        return ", ".join(
            f"{i['internal_api']} {i['version']} ({i['num_threads']} threads)"
            for i in threadpool_info()
            if i["user_api"] == "blas"
        )
    except ImportError:
        return "BLAS unknown (no threadpoolctl)"


def main(argv=None):
    import sklearn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few iterations, one repeat")
    parser.add_argument("--iters", type=int, default=None, help="iterations per run (>= 2)")
    parser.add_argument("--repeats", type=int, default=None, help="runs (best is kept)")
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=None,
        help="limit BLAS to this many threads for every method (threadpoolctl), and "
        "nmfsc's row-parallel projections with it (numba's NUMBA_NUM_THREADS); on a "
        "machine shared with other jobs a multi-threaded BLAS can stall at every call",
    )
    parser.add_argument(
        "--time-to-objective",
        action="store_true",
        help="then run bench_time_to_objective.py (issue 14, point 4; minutes)",
    )
    args = parser.parse_args(argv)
    if args.blas_threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=args.blas_threads, user_api="blas")
        # nmfsc reads numba's thread count at each call (nmfsc._threads), so
        # that its projections use as many threads as the products do.
        numba.config.NUMBA_NUM_THREADS = args.blas_threads
    iters = max(2, args.iters or (4 if args.quick else 30))
    repeats = args.repeats or (1 if args.quick else 3)
    wall = time.perf_counter()
    passed = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning

        warnings.simplefilter("ignore", SklearnConvergenceWarning)
        for name, shape, M, params in SHAPES:
            rows = bench_shape(shape, M, params, iters, repeats)
            passed &= report(name, shape, M, params, iters, repeats, rows)
        bench_trial_projection(repeats)
    wall = time.perf_counter() - wall
    print(
        f"Machine: {machine()}, scikit-learn {sklearn.__version__}, {threads()}. "
        f"Wall time {wall:.0f} s. All targets {'PASS' if passed else 'not met (see FAIL)'}."
    )
    if args.time_to_objective:
        import bench_time_to_objective

        bench_time_to_objective.main(["--quick"] if args.quick else [])
    return 0


if __name__ == "__main__":
    sys.exit(main())
