"""Side-by-side comparison of sparseness-constrained NMF with standard NMF.

``python -m reproduce compare [--dataset cbcl|orl|natural|swimmer|bars|all] [--quick]``

On each data set every method starts from the same random matrices
(``W0 = |randn(N, M)|``, ``H0 = |randn(M, T)|`` from ``--seed``, W0 in the units
of V scaled to a maximum of 1, as SPEC.md's solvers start) and runs to its own
stopping rule or the time cap:

- ``nmf_euclidean`` and ``nmf_divergence`` (Lee & Seung), ``local_nmf``
  (Li et al. 2001) and ``sparse_nmf`` (Liu et al. 2003, alpha = 100, the middle of
  the paper's three values);
- ``nmf_sc`` at the paper's settings for the real data (CBCL sW = 0.8 as Figure 3a,
  ORL sW = 0.6 as Figure 4b, natural sH = 0.85 as Figure 5) and, for the
  synthetic data, sW = the mean sparseness of the true parts (bars: 0.74), except
  on the swimmer data, where that level (0.95) leaves nmf_sc in a poor local
  minimum and sW = 0.8 is used;
- when scikit-learn is installed, ``sklearn.decomposition.NMF(solver="cd")``
  plain, and with its L1 penalty on the factor that nmf_sc constrains, tuned by a
  log-scale bisection until that factor's mean sparseness matches nmf_sc's target.

For each data set it writes ``<out>/compare/<dataset>.md`` and ``.json`` (relative
error ``||V - WH||_F / ||V||_F``, mean sparseness of W's columns and H's rows, the
locality / orientation / part-recovery scores, iterations, wall time, stop reason),
``<dataset>_bases.png`` (the bases side by side) and ``<dataset>_curves.png``
(relative error against wall time for every method).

Timing: the error curve is recorded in a per-iteration callback whose own time is
subtracted from the clock, so the curves show the solvers' time. scikit-learn runs
in chunks of ``SKLEARN_CHUNK`` iterations, each warm-started from the last W, H
(its coordinate descent keeps no other state, so the path is that of one long
run); its convergence test restarts with each chunk.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import nmfsc
from nmfsc.scores import locality, orientation, sparseness_summary

DATASETS = ("cbcl", "orl", "natural", "swimmer", "bars")
SKLEARN_CHUNK = 10
SPARSE_NMF_ALPHA = 100.0
# Budget of each method in full mode (seconds); --max-time overrides it.
FULL_MAX_TIME = {"cbcl": 60.0, "orl": 60.0, "natural": 60.0, "swimmer": 20.0, "bars": 20.0}
FULL_MAX_ITER = 20000
QUICK_MAX_ITER = 5


@dataclass(frozen=True)
class Problem:
    """One data set, ready to factorise."""

    name: str
    V: np.ndarray
    n_components: int
    image_shape: tuple[int, int]
    nmf_sc_params: dict
    true_parts: np.ndarray | None = None

    @property
    def on_off(self) -> bool:
        return self.name == "natural"


def load_problem(name: str, seed: int) -> Problem:
    """The data matrix, the number of components and nmf_sc's settings for ``name``."""
    from nmfsc import datasets

    if name == "cbcl":
        return Problem(name, datasets.load_cbcl(), 49, (19, 19), {"sparseness_w": 0.8})
    if name == "orl":
        return Problem(name, datasets.load_orl(), 25, (56, 46), {"sparseness_w": 0.6})
    if name == "natural":
        V = datasets.load_natural(random_state=seed)
        return Problem(name, V, 72, (12, 12), {"sparseness_h": 0.85})
    if name == "swimmer":
        V, parts = datasets.swimmer()
        # The parts' own sparseness (0.95) traps nmf_sc in a poor local minimum
        # (relative error 0.70, limb recovery 0.22 from seed 0); 0.8 recovers the
        # limbs (0.91). Measured with nmf_sc, seed 0, 3000 iterations.
        return _synthetic(name, V, parts, 17, (32, 32), parts[:, 1:], target=0.8)
    if name == "bars":
        V, parts = datasets.bars(n_samples=1000, size=8, random_state=seed)
        return _synthetic(name, V, parts, 16, (8, 8), parts)
    raise ValueError(f"unknown data set {name!r}; choose from {', '.join(DATASETS)}")


def _synthetic(name, V, parts, n_components, shape, scored_parts, target=None):
    if target is None:
        target = round(float(np.mean(nmfsc.sparseness(parts, axis=0))), 2)
    return Problem(name, V, n_components, shape, {"sparseness_w": target}, scored_parts)


def starting_point(problem: Problem, seed: int):
    """(W0, H0) shared by every method: SPEC.md's random start, W0 in V's units."""
    rng = np.random.default_rng(seed)
    N, T = problem.V.shape
    M = problem.n_components
    W0 = np.abs(rng.standard_normal((N, M)))
    H0 = np.abs(rng.standard_normal((M, T)))
    return W0 * problem.V.max(), H0


# --------------------------------------------------------------------------
# Running one method with an error-versus-time trace
# --------------------------------------------------------------------------
def relative_error(V, W, H, norm_V=None) -> float:
    norm_V = np.linalg.norm(V) if norm_V is None else norm_V
    return float(np.linalg.norm(V - W @ H) / norm_V)


class _Trace:
    """A callback recording (solver time, relative error); its own time is not counted."""

    def __init__(self, V):
        self.V = V
        self.norm_V = float(np.linalg.norm(V))
        self.times: list[float] = []
        self.errors: list[float] = []
        self.overhead = 0.0
        self.start = time.perf_counter()

    def record_start(self, W, H):
        """The error of the shared start, at time 0 (its computation is not counted)."""
        now = time.perf_counter()
        self.times.append(0.0)
        self.errors.append(relative_error(self.V, W, H, self.norm_V))
        self.overhead += time.perf_counter() - now

    def record(self, W, H, iteration):
        now = time.perf_counter()
        if iteration <= 20 or iteration % 5 == 0:
            self.times.append(now - self.start - self.overhead)
            self.errors.append(relative_error(self.V, W, H, self.norm_V))
        self.overhead += time.perf_counter() - now

    def __call__(self, state):
        self.record(state.W, state.H, state.iteration)
        return False


def _budget(problem, options):
    if options.quick:
        return QUICK_MAX_ITER, None
    cap = options.max_time if options.max_time is not None else FULL_MAX_TIME[problem.name]
    return FULL_MAX_ITER, cap


def run_nmfsc_method(method, problem, start, options, **params):
    """Run one of nmfsc's solvers from ``start``; returns the table row and trace."""
    solver = getattr(nmfsc, method)
    max_iter, max_time = _budget(problem, options)
    W0, H0 = start
    trace = _Trace(problem.V)
    trace.record_start(W0, H0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        result = solver(
            problem.V,
            problem.n_components,
            W_init=W0,
            H_init=H0,
            max_iter=max_iter,
            max_time=max_time,
            callback=trace,
            **params,
        )
    wall = time.perf_counter() - trace.start - trace.overhead
    trace.times.append(wall)
    trace.errors.append(relative_error(problem.V, result.W, result.H, trace.norm_V))
    return _row(
        method, problem, result.W, result.H, result.n_iter, wall, result.stop_reason, params
    ), trace


def _sklearn_nmf():
    try:
        from sklearn.decomposition import NMF
    except ImportError:
        return None
    return NMF


def run_sklearn(problem, start, options, *, penalty=None, alpha=0.0, label="sklearn_cd"):
    """scikit-learn's coordinate-descent NMF from ``start`` (X = V.T, so W_sk = H.T).

    ``penalty`` is ``"W"`` (L1 on the basis: sklearn's ``alpha_H``) or ``"H"`` (L1
    on the coefficients: sklearn's ``alpha_W``).
    """
    from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning

    NMF = _sklearn_nmf()
    max_iter, max_time = _budget(problem, options)
    W0, H0 = start
    coef, basis = H0.T.copy(), W0.T.copy()
    X = problem.V.T
    trace = _Trace(problem.V)
    trace.record_start(W0, H0)
    alpha_W = alpha if penalty == "H" else 0.0
    alpha_H = alpha if penalty == "W" else 0.0
    n_iter, stop = 0, "max_iter"
    while n_iter < max_iter:
        chunk = min(SKLEARN_CHUNK, max_iter - n_iter)
        model = NMF(
            problem.n_components,
            init="custom",
            solver="cd",
            beta_loss="frobenius",
            max_iter=chunk,
            alpha_W=alpha_W,
            alpha_H=alpha_H,
            l1_ratio=1.0,
            random_state=options.seed,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkConvergenceWarning)
            coef = model.fit_transform(X, W=coef, H=basis)
        basis = model.components_
        n_iter += model.n_iter_
        trace.record(basis.T, coef.T, n_iter)
        if model.n_iter_ < chunk:
            stop = "tol"
            break
        if max_time is not None and trace.times[-1] >= max_time:
            stop = "max_time"
            break
    wall = time.perf_counter() - trace.start - trace.overhead
    W, H = basis.T, coef.T
    params = {"alpha": alpha, "penalty": penalty} if penalty else {}
    return _row(label, problem, W, H, n_iter, wall, stop, params), trace


def tune_sklearn_alpha(problem, start, options, target, penalty, log=print):
    """Log-scale bisection of sklearn's L1 weight until the factor's sparseness is ``target``.

    Returns (alpha, achieved mean sparseness, number of fits). Tuning fits run with
    a tenth of the time budget each (or the quick budget).
    """
    from dataclasses import replace

    fast = (
        options if options.quick else replace(options, max_time=_budget(problem, options)[1] / 10.0)
    )

    def achieved(alpha):
        row, _ = run_sklearn(problem, start, fast, penalty=penalty, alpha=alpha)
        key = "sparseness_W_mean" if penalty == "W" else "sparseness_H_mean"
        value = row[key]
        # Every component zeroed: the penalty is too strong, count it as above target.
        return np.inf if value is None else value

    lo, hi = 0.0, 1e-6
    fits = 0
    value = achieved(hi)
    fits += 1
    while value < target and hi < 1e6:
        lo, hi = hi, hi * 10.0
        value = achieved(hi)
        fits += 1
    steps = 2 if options.quick else 8
    best = (hi, value)
    for _ in range(steps):
        mid = np.sqrt(lo * hi) if lo > 0 else hi / 10.0
        value = achieved(mid)
        fits += 1
        if abs(value - target) < abs(best[1] - target):
            best = (mid, value)
        if value < target:
            lo = mid
        else:
            hi = mid
    log(
        f"  sklearn L1 on {penalty}: alpha {best[0]:.3g} gives sparseness {best[1]:.3f} "
        f"(target {target}, {fits} fits)"
    )
    return best[0], best[1], fits


# --------------------------------------------------------------------------
# Scores and the table
# --------------------------------------------------------------------------
def _row(method, problem, W, H, n_iter, wall, stop, params):
    summary = sparseness_summary(W, H)
    row = {
        "method": method,
        "params": params,
        "relative_error": relative_error(problem.V, W, H),
        "sparseness_W_mean": _finite(summary["W"]["mean"]),
        "sparseness_H_mean": _finite(summary["H"]["mean"]),
        "zero_components": int(summary["W"]["n_undefined"]),
        "n_iter": int(n_iter),
        "wall_time_s": float(wall),
        "stop_reason": stop,
    }
    row.update(_scores(problem, W))
    row["_W"] = W
    return row


def _finite(value):
    return None if value is None or not np.isfinite(value) else float(value)


def _scores(problem, W):
    nonzero = np.any(W != 0, axis=0)
    out = {}
    if problem.on_off:
        values = orientation(W, problem.image_shape, on_off=True)
        out["orientation_mean"] = _finite(np.nanmean(values)) if nonzero.any() else None
    else:
        values = locality(W, problem.image_shape)
        out["locality_mean"] = _finite(np.nanmean(values)) if nonzero.any() else None
    if problem.true_parts is not None:
        from nmfsc.datasets import part_recovery

        out["part_recovery"] = part_recovery(W, problem.true_parts)
    return out


COLUMNS = [
    ("method", "method", "{}"),
    ("relative_error", "rel. error", "{:.4f}"),
    ("sparseness_W_mean", "sparseness W", "{:.3f}"),
    ("sparseness_H_mean", "sparseness H", "{:.3f}"),
    ("locality_mean", "locality", "{:.3f}"),
    ("orientation_mean", "orientation", "{:.3f}"),
    ("part_recovery", "part recovery", "{:.3f}"),
    ("n_iter", "iterations", "{}"),
    ("wall_time_s", "time (s)", "{:.2f}"),
    ("stop_reason", "stop", "{}"),
]


def markdown_table(rows) -> str:
    columns = [c for c in COLUMNS if any(c[0] in r for r in rows)]
    lines = [
        "| " + " | ".join(title for _, title, _ in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for row in rows:
        cells = []
        for key, _, fmt in columns:
            value = row.get(key)
            cells.append("n/a" if value is None else fmt.format(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------
def bases_figure(problem, rows):
    from matplotlib.figure import Figure

    from nmfsc.plotting import plot_basis

    n = len(rows)
    n_cols = min(4, n)
    n_rows = -(-n // n_cols)
    fig = Figure(figsize=(3.2 * n_cols, 3.6 * n_rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(n_rows, n_cols)).ravel()
    grid = {"cbcl": 7, "orl": 5, "natural": 12, "swimmer": 6, "bars": 8}[problem.name]
    for ax, row in zip(axes, rows, strict=False):
        W = row["_W"]
        if problem.on_off:
            pixels = problem.image_shape[0] * problem.image_shape[1]
            plot_basis(
                W[:pixels] - W[pixels:], problem.image_shape, ax=ax, n_cols=grid, signed=True
            )
        else:
            plot_basis(
                W,
                problem.image_shape,
                ax=ax,
                n_cols=grid,
                normalize="l2" if problem.name == "cbcl" else "max",
            )
        ax.set_title(_label(row), fontsize=9)
    for ax in axes[n:]:
        ax.set_axis_off()
    title = f"Bases learned on {problem.name}"
    if problem.on_off:
        title += " (ON minus OFF, grey = 0)"
    fig.suptitle(title)
    return fig


def _label(row):
    params = row["params"]
    extra = ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items()
    )
    return f"{row['method']}" + (f"\n({extra})" if extra else "")


def curves_figure(problem, rows, traces):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.subplots()
    for row, trace in zip(rows, traces, strict=True):
        ax.plot(trace.times, trace.errors, marker=".", markersize=3, label=row["method"])
    ax.set_xscale("symlog", linthresh=1e-3)
    ax.set_yscale("log")
    ax.set_xlabel("wall time (s)")
    ax.set_ylabel(r"relative error $\|V - WH\|_F / \|V\|_F$")
    ax.set_title(f"Relative error against time on {problem.name}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    return fig


# --------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------
def _warm_up(plan):
    """Compile (or load) every solver's kernels first, so no method's time includes it."""
    V = np.abs(np.random.default_rng(0).standard_normal((6, 5))) + 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        for method, params in plan:
            getattr(nmfsc, method)(V, 2, random_state=0, max_iter=2, **params)


def compare_dataset(name, options, log=print):
    """Run every method on one data set and write its table, JSON and figures."""
    from nmfsc.plotting import save_figure
    from reproduce._harness import versions

    problem = load_problem(name, options.seed)
    start = starting_point(problem, options.seed)
    log(
        f"[compare {name}] V {problem.V.shape[0]}x{problem.V.shape[1]}, "
        f"M = {problem.n_components}, nmf_sc {problem.nmf_sc_params}"
    )
    plan = [
        ("nmf_euclidean", {}),
        ("nmf_divergence", {}),
        ("local_nmf", {}),
        ("sparse_nmf", {"alpha": SPARSE_NMF_ALPHA}),
        ("nmf_sc", problem.nmf_sc_params),
    ]
    _warm_up(plan)
    rows, traces = [], []
    for method, params in plan:
        row, trace = run_nmfsc_method(method, problem, start, options, **params)
        log(
            f"  {method}: rel. error {row['relative_error']:.4f}, "
            f"{row['n_iter']} iterations, {row['wall_time_s']:.1f} s ({row['stop_reason']})"
        )
        rows.append(row)
        traces.append(trace)
    tuning = None
    if _sklearn_nmf() is not None:
        row, trace = run_sklearn(problem, start, options)
        rows.append(row)
        traces.append(trace)
        log(f"  sklearn_cd: rel. error {row['relative_error']:.4f}, {row['n_iter']} iterations")
        penalty, target = next(
            ("W" if key == "sparseness_w" else "H", value)
            for key, value in problem.nmf_sc_params.items()
        )
        plain = row["sparseness_W_mean" if penalty == "W" else "sparseness_H_mean"]
        if plain is not None and plain >= target:
            # An L1 penalty only raises sparseness: nothing to tune.
            tuning = {
                "penalty_on": penalty,
                "target_sparseness": target,
                "alpha": None,
                "note": f"plain scikit-learn NMF is already sparser ({plain:.3f}) than the "
                "target; an L1 penalty cannot lower it, so sklearn_cd_l1 is left out",
            }
            log(f"  sklearn L1 on {penalty}: not tuned, {tuning['note']}")
        else:
            alpha, achieved, fits = tune_sklearn_alpha(
                problem, start, options, target, penalty, log
            )
            row, trace = run_sklearn(
                problem, start, options, penalty=penalty, alpha=alpha, label="sklearn_cd_l1"
            )
            rows.append(row)
            traces.append(trace)
            tuning = {
                "penalty_on": penalty,
                "target_sparseness": target,
                "alpha": alpha,
                "achieved_in_tuning": achieved,
                "fits": fits,
            }
    else:
        log("  scikit-learn is not installed: its NMF is left out of the comparison")

    out = options.out_dir / "compare"
    out.mkdir(parents=True, exist_ok=True)
    paths = [*save_figure(bases_figure(problem, rows), out / f"{name}_bases")]
    paths.append(save_figure(curves_figure(problem, rows, traces), out / f"{name}_curves")[0])
    header = (
        f"# Comparison on {name}\n\n"
        f"V is {problem.V.shape[0]} x {problem.V.shape[1]}, M = {problem.n_components}, "
        f"seed {options.seed}{', quick mode (not a result)' if options.quick else ''}. "
        f"Every method starts from the same W0, H0.\n\n"
    )
    md = out / f"{name}.md"
    md.write_text(header + markdown_table(rows))
    paths.append(md)
    document = {
        "dataset": name,
        "shape": list(problem.V.shape),
        "n_components": problem.n_components,
        "nmf_sc_params": problem.nmf_sc_params,
        "seed": options.seed,
        "quick": options.quick,
        "max_time_per_method": _budget(problem, options)[1],
        "sklearn_l1_tuning": tuning,
        "versions": versions(),
        "methods": [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows],
        "curves": {
            r["method"]: {"time_s": t.times, "relative_error": t.errors}
            for r, t in zip(rows, traces, strict=True)
        },
    }
    js = out / f"{name}.json"
    js.write_text(json.dumps(document, indent=2) + "\n")
    paths.append(js)
    return paths


def main(options, datasets=DATASETS):
    """Compare every method on each data set in ``datasets``; returns the paths written."""
    paths = []
    for name in datasets:
        paths.extend(compare_dataset(name, options))
    return [Path(p) for p in paths]
