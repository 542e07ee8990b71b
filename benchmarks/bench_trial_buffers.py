"""nmf_sc's trial buffers (issue 33): reused against fresh, on 1 and 2 threads,
stepped in turn in one process so that every run sees the same load.

The natural-image problem of ``bench_threads.py`` (V 288 x 200,000,
``natural_like`` seed 0, rank 72, ``sparseness_h=0.85``, ``random_state=0``).
Four runs of the solver's loop (:class:`nmfsc.solvers.framework.Run` of
``HoyerSteps``) take one iteration each in turn: {buffers reused (a run
without a callback), fresh (a run with one)} x {1, 2 threads}. One thread
is threadpoolctl's BLAS limit 1, which nmfsc's thread count follows
(``nmfsc._threads.threads``); the process has ``NUMBA_NUM_THREADS`` 2 (set
here before numba loads). Per run and iteration the fastest of ``--rounds``
rounds is kept; the table gives wall-clock, process CPU (user + sys) and
the calling thread's CPU time per iteration, averaged over iterations 2 to
``--iterations`` (the first holds the start's halvings of the step size).
All four runs must give the same objectives (checked).

Interleaving iterations makes the comparison of the four runs fair on a
shared machine, but the 2-thread run still needs both cores free at once:
under load its wall-clock time is noise; its calling thread's CPU time is
not (it bounds the speed-up). About a minute on 2 idle cores.

    python benchmarks/bench_trial_buffers.py [--rounds 3] [--iterations 6]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import warnings
from functools import partial
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from threadpoolctl import threadpool_limits  # noqa: E402

from benchmarks.bench_scale import natural_like  # noqa: E402
from nmfsc.solvers.framework import LoopSettings, Run  # noqa: E402
from nmfsc.solvers.hoyer import HoyerSteps  # noqa: E402

OPTIONS = {"sparseness_w": None, "sparseness_h": 0.85}
RUNS = [(threads, reuse) for threads in (1, 2) for reuse in (True, False)]


def _keep_nothing(state):
    return False


def start(V, reuse, iterations):
    """A started Run (its steps and committed state); a callback turns reuse off."""
    settings = LoopSettings.from_keywords(
        "nmf_sc",
        {
            "random_state": 0,
            "tol": 0,
            "max_iter": iterations,
            "callback": None if reuse else _keep_nothing,
        },
    )
    run = Run(partial(HoyerSteps, **OPTIONS), V, 72, OPTIONS, settings)
    return run.steps, run.committed[0]


def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=6)
    args = parser.parse_args(argv)
    K = args.iterations
    warnings.simplefilter("ignore")
    V = natural_like(144, 200_000, np.random.default_rng(0), np.float64)
    best = {run: np.full((K, 3), np.inf) for run in RUNS}
    same = True
    for _ in range(args.rounds):
        runs = {run: list(start(V, run[1], K)) for run in RUNS}
        objectives = {run: [] for run in RUNS}
        for k in range(K):
            for run in RUNS:
                steps, state = runs[run]
                with threadpool_limits(run[0], user_api="blas"):
                    t0, c0, m0 = time.perf_counter(), cpu(), time.thread_time()
                    new, objective, _ = steps.step(state)
                    times = [time.perf_counter() - t0, cpu() - c0, time.thread_time() - m0]
                best[run][k] = np.minimum(best[run][k], times)
                objectives[run].append(objective)
                runs[run][1] = new
        same = same and len({tuple(v) for v in objectives.values()}) == 1
    print(f"nmf_sc(sparseness_h=0.85), rank 72, V 288 x 200,000; iterations 2-{K}, ", end="")
    print(f"best of {args.rounds} rounds; ms per iteration")
    print("| threads | buffers | wall | CPU (user + sys) | calling thread's CPU |")
    print("|---|---|---:|---:|---:|")
    mean = {run: best[run][1:].mean(axis=0) * 1e3 for run in RUNS}
    for run in RUNS:
        wall, total, calling = mean[run]
        label = "reused" if run[1] else "fresh"
        print(f"| {run[0]} | {label} | {wall:.0f} | {total:.0f} | {calling:.0f} |")
    for reuse in (True, False):
        one, two = mean[(1, reuse)], mean[(2, reuse)]
        label = "reused" if reuse else "fresh"
        print(
            f"{label}: 2 threads {one[0] / two[0]:.2f}x one thread (wall); "
            f"CPU-time bound {one[1] / two[2]:.2f}x"
        )
    print(f"{'PASS' if same else 'FAIL'} the four runs gave the same objectives")
    ratio = mean[(1, True)][0] / mean[(2, True)][0]
    verdict = "PASS" if ratio >= 1.8 else "FAIL"
    print(f"{verdict} 2 threads at least 1.8x one thread, buffers reused: {ratio:.2f}x")


if __name__ == "__main__":
    main()
