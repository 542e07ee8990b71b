"""Time to objective of nmf_sc's solvers (issue 14, point 4). A script, not a test.

    python benchmarks/bench_time_to_objective.py [--quick] [--seeds 0,1,2] [--max-time S]
                                                  [--blas-threads B]

On the paper's three data sets (``NMFSC_DATA_DIR`` must hold them):

* CBCL    361 x 2429,  M = 49, s_W = 0.8 (Figure 3a),
* ORL     2576 x 400,  M = 25, s_W = 0.5 (Figure 4a),
* natural 288 x 10000, M = 72, s_H = 0.85 (Figure 5; patches of ``random_state=0``),

``nmf_sc(solver="hoyer")``, the paper's algorithm, runs from
``random_state=seed`` (``--seeds``, default 0: the start; the natural patches
are always those of ``random_state=0``) to its ``tol=1e-5`` stop or 3,000
iterations; its final objective is the *target*. Then
``nmf_sc(solver="accelerated")`` runs from the same start (the same W0, H0) to
its own ``tol=1e-5`` stop, 3,000 iterations, or half the hoyer run's time,
whichever comes first. Times are the loop times the solvers record
(``result.times``: the iterations with their objective history; the start and
the input checks are left out of both). The table gives hoyer's time to its
stop, the accelerated solver's time to reach the target (the first recorded
objective at or below it), their ratio (target: at least 5), and both final
objectives (target: the accelerated one no worse). Each run is measured once
(they take minutes), one after the other in the same process, after a short
warm-up run of both (numba compilation): on a machine shared with other jobs the
ratio varies with the load. The curves (objective against time, log axes) are
saved as ``benchmarks/time_to_objective.png`` (the first seed's runs). With
several seeds, a last line per data set gives the smallest ratio."""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_projection import machine  # noqa: E402

from nmfsc import ConvergenceWarning, nmf_sc  # noqa: E402
from nmfsc.datasets import load_cbcl, load_natural, load_orl  # noqa: E402

DATASETS = [
    ("CBCL", load_cbcl, 49, {"sparseness_w": 0.8}),
    ("ORL", load_orl, 25, {"sparseness_w": 0.5}),
    ("natural", lambda: load_natural(random_state=0), 72, {"sparseness_h": 0.85}),
]
TOL = 1e-5
MAX_ITER = 3000
#: The accelerated run stops at the latest after this share of hoyer's time.
FAST_SHARE = 0.5
FIGURE = Path(__file__).parent / "time_to_objective.png"


def run(V, M, params, solver, max_iter, max_time, seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return nmf_sc(
            V,
            M,
            **params,
            solver=solver,
            random_state=seed,
            tol=TOL,
            max_iter=max_iter,
            max_time=max_time,
        )


def time_to(result, target):
    """The first recorded time at which the objective is at or below ``target`` (None: never)."""
    hit = np.flatnonzero(result.objective <= target)
    return float(result.times[hit[0]]) if hit.size else None


def bench(V, M, params, max_iter, max_time, seed):
    """Both solvers on one data set from one start: (hoyer's result, the accelerated result)."""
    hoyer = run(V, M, params, "hoyer", max_iter, max_time, seed)
    fast_time = FAST_SHARE * float(hoyer.times[-1])
    fast = run(V, M, params, "accelerated", max_iter, fast_time, seed)
    return hoyer, fast


def ratio_of(hoyer, fast):
    """hoyer's time over the accelerated solver's time to hoyer's final objective (0: never)."""
    reached = time_to(fast, hoyer.objective[-1])
    return hoyer.times[-1] / reached if reached else 0.0


def row(name, hoyer, fast):
    target = hoyer.objective[-1]
    reached = time_to(fast, target)
    ratio = hoyer.times[-1] / reached if reached else float("nan")
    worse = fast.objective[-1] > target
    verdict = "PASS" if reached and ratio >= 5 and not worse else "FAIL"
    return (
        f"| {name} | {hoyer.n_iter} ({hoyer.stop_reason}) | {hoyer.times[-1]:.1f} s "
        f"| {'not reached' if reached is None else f'{reached:.2f} s'} "
        f"| {f'{ratio:.1f}x' if reached else f'< {1 / FAST_SHARE:.0f}x'} "
        f"| {target:.6g} | {fast.objective[-1]:.6g} ({fast.n_iter} it, {fast.stop_reason}) "
        f"| {verdict} |"
    ), verdict == "PASS"


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), squeeze=False)
    for ax, (name, hoyer, fast) in zip(axes[0], results, strict=True):
        for result, label in ((hoyer, "hoyer (the paper's)"), (fast, "accelerated")):
            ax.loglog(result.times[1:], result.objective[1:], label=label)
        ax.axhline(hoyer.objective[-1], color="grey", lw=0.8, ls="--", label="target")
        ax.set(title=name, xlabel="wall time (s)", ylabel="objective 0.5 ||V - WH||^2")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 iterations (a smoke test)")
    parser.add_argument(
        "--seeds", default="0", help="comma-separated random_state values (default 0)"
    )
    parser.add_argument(
        "--max-time", type=float, default=1800.0, help="seconds per hoyer run (default 1800)"
    )
    parser.add_argument("--blas-threads", type=int, default=None, help="limit BLAS threads")
    parser.add_argument("--figure", type=Path, default=FIGURE, help="where to save the curves")
    args = parser.parse_args(argv)
    if args.blas_threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=args.blas_threads, user_api="blas")
    max_iter = 30 if args.quick else MAX_ITER
    wall = time.perf_counter()
    print(
        "| data | hoyer iterations (stop) | hoyer time | accelerated time to hoyer's "
        "objective | ratio | hoyer objective | accelerated objective | target |"
    )
    print("|---|---|---|---|---|---|---|---|")
    seeds = [int(seed) for seed in args.seeds.split(",")]
    results, summaries, passed = [], [], True
    for name, load, M, params in DATASETS:
        V = load()
        for solver in ("hoyer", "accelerated"):  # warm-up: numba compilation
            run(V, M, params, solver, 2, None)
        ratios = []
        for seed in seeds:
            hoyer, fast = bench(V, M, params, max_iter, args.max_time, seed)
            label = name if len(seeds) == 1 else f"{name}, seed {seed}"
            line, ok = row(label, hoyer, fast)
            print(line, flush=True)
            ratios.append(ratio_of(hoyer, fast))
            if seed == seeds[0]:
                results.append((name, hoyer, fast))
            passed &= ok
        if len(seeds) > 1:
            summaries.append(f"{name}: smallest ratio over seeds {args.seeds}: {min(ratios):.1f}x")
    for line in summaries:
        print(f"- {line}")
    if not args.quick:
        plot(results, args.figure)
        print(f"Curves: {args.figure}")
    wall = time.perf_counter() - wall
    print(
        f"Machine: {machine()}. Wall time {wall:.0f} s. "
        f"Targets (ratio >= 5, final objective no worse): {'PASS' if passed else 'not all met'}."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
