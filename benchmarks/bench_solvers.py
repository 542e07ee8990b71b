"""Benchmark of the solvers' iterations (issue 6). A script, not a test.

    python benchmarks/bench_solvers.py [--quick] [--iters K]

Per-iteration time of ``nmf_sc`` (s_W = 0.8, the setting of Figure 3a),
``nmf_euclidean`` and ``nmf_divergence`` on a CBCL-sized problem (V 361 x 2429,
M = 49): the real preprocessed CBCL faces when NMFSC_DATA_DIR is set (and holds
them), else random |N(0, 1)| data of that shape. Each is compared with a plain
NumPy transcription of the same iteration (below): no cached products, the
residual V - W H formed for every objective (in nmf_sc: for every line-search
trial), and the projection by the NumPy transcription of the paper's algorithm
(``numpy_projection`` from bench_projection.py) called in a Python loop, one
column of W at a time.

Both run K iterations from the same random start with the objective recorded
after each (as the solvers do), after a warm-up run that compiles the kernels.
The package's time is the loop time the solver records (``result.times``), the
reference's a ``perf_counter`` around its loop; the time per iteration is
best-of-``--repeats``. The table also gives the relative difference of the final
objectives, a check that both computed the same iteration. Prints a Markdown
table and the machine.
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_projection import fmt_time, machine, numpy_projection  # noqa: E402

import nmfsc  # noqa: E402
from nmfsc import ConvergenceWarning  # noqa: E402

EPS = 1e-9
SHAPE = (361, 2429)
M = 49
S_W = 0.8


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


def numpy_nmf_sc_w(V, W, H, n_iter):
    """nmf_sc with s_W only: multiplicative H step (rows rescaled), projected W step."""
    W = _project_columns(W, S_W, own_norm=False)
    H = H / np.sqrt(np.sum(H * H, axis=1))[:, None]
    mu = 1.0
    history = [_euclid(V, W, H)]
    for _ in range(n_iter):
        H = H * (W.T @ V) / (W.T @ W @ H + EPS)
        norms = np.sqrt(np.sum(H * H, axis=1))
        H = H / norms[:, None]
        W = W * norms[None, :]
        dW = (W @ H - V) @ H.T
        before = _euclid(V, W, H)
        while True:
            trial = _project_columns(W - mu * dW, S_W, own_norm=True)
            if _euclid(V, trial, H) <= before:
                break
            mu /= 2.0
        mu *= 1.2
        W = trial
        history.append(_euclid(V, W, H))
    return history


def numpy_euclidean(V, W, H, n_iter):
    history = [_euclid(V, W, H)]
    for _ in range(n_iter):
        H = H * (W.T @ V) / (W.T @ W @ H + EPS)
        W = W * (V @ H.T) / (W @ H @ H.T + EPS)
        norms = np.sqrt(np.sum(H * H, axis=1))
        H = H / norms[:, None]
        W = W * norms[None, :]
        history.append(_euclid(V, W, H))
    return history


def _divergence(V, W, H):
    WH = W @ H
    return np.sum(V * np.log(V / WH) - V + WH)


def numpy_divergence(V, W, H, n_iter):
    history = [_divergence(V, W, H)]
    for _ in range(n_iter):
        W = W * ((V / (W @ H + EPS)) @ H.T) / np.sum(H, axis=1)[None, :]
        H = H * (W.T @ (V / (W @ H + EPS))) / np.sum(W, axis=0)[:, None]
        norms = np.sqrt(np.sum(H * H, axis=1))
        H = H / norms[:, None]
        W = W * norms[None, :]
        history.append(_divergence(V, W, H))
    return history


CASES = [
    (
        "nmf_sc (s_W = 0.8)",
        lambda V, k: nmfsc.nmf_sc(V, M, sparseness_w=S_W, **_opts(k)),
        numpy_nmf_sc_w,
    ),
    ("nmf_euclidean", lambda V, k: nmfsc.nmf_euclidean(V, M, **_opts(k)), numpy_euclidean),
    ("nmf_divergence", lambda V, k: nmfsc.nmf_divergence(V, M, **_opts(k)), numpy_divergence),
]


def _opts(k):
    return {"random_state": 0, "max_iter": k, "tol": 0.0}


def load_data():
    if os.environ.get("NMFSC_DATA_DIR"):
        try:
            from nmfsc.datasets import load_cbcl

            return load_cbcl(), "CBCL faces (load_cbcl)"
        except Exception as err:  # noqa: BLE001 - fall back, and say why
            print(f"(could not load CBCL: {err}; using random data)", file=sys.stderr)
    V = np.abs(np.random.default_rng(0).standard_normal(SHAPE)) + 1e-4
    return V, "random |N(0,1)| + 1e-4"


def run(V, iters, repeats):
    N, T = V.shape
    V = V / V.max()  # the solvers normalise too; then W is the same in both
    rng = np.random.default_rng(0)
    W0 = np.abs(rng.standard_normal((N, M)))
    H0 = np.abs(rng.standard_normal((M, T)))
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, solver, reference in CASES:
            solver(V, 2)  # compile
            fast, ref = [], []
            for _ in range(repeats):
                res = solver(V, iters)
                fast.append(res.times[-1] / res.n_iter)
                t0 = time.perf_counter()
                history = reference(V, W0, H0, iters)
                ref.append((time.perf_counter() - t0) / iters)
            diff = abs(res.objective[-1] - history[-1]) / abs(history[-1])
            rows.append((name, min(fast), min(ref), diff))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few iterations, one repeat")
    parser.add_argument("--iters", type=int, default=None, help="iterations per run")
    parser.add_argument("--repeats", type=int, default=None, help="runs (best is kept)")
    args = parser.parse_args(argv)
    iters = args.iters or (5 if args.quick else 30)
    repeats = args.repeats or (1 if args.quick else 3)
    V, source = load_data()
    wall = time.perf_counter()
    rows = run(V, iters, repeats)
    wall = time.perf_counter() - wall
    print(
        f"## Time per iteration, V {V.shape[0]} x {V.shape[1]} ({source}), M = {M}, "
        f"{iters} iterations, best of {repeats}\n"
    )
    print("| solver | nmfsc | numpy reference | numpy / nmfsc | final objective rel. diff |")
    print("|---|---:|---:|---:|---:|")
    for name, fast, ref, diff in rows:
        print(f"| {name} | {fmt_time(fast)} | {fmt_time(ref)} | {ref / fast:.1f} | {diff:.1e} |")
    print(f"\nMachine: {machine()}. Wall time {wall:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
