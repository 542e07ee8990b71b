"""Overhead of ``nmfsc.compare`` over its solver runs (issue 11). A script, not a test.

    python benchmarks/bench_compare.py [--quick] [--repeats R] [--max-iter K]

On the bars data (64 x 1000, M = 16, nmf_sc at sW = 0.74 and, so that the
matched-L1 search has work to do, a second case at sW = 0.85), one seed, every
available method, ``progress=False``:

* ``compare``: the wall time of the whole ``nmfsc.compare(...)`` call (no
  figures or files; those are written by ``save``, outside the call);
* ``solvers``: the sum of every solver call that ``compare`` makes, each timed
  alone from the same start (``starting_point``) with the same budgets and no
  callback: the five nmfsc solvers, scikit-learn's ``mu`` and ``cd``, and one
  ``cd`` fit per alpha of the L1 search (the path recorded in the result).
  scikit-learn is timed as one ``NMF.fit_transform`` call with ``max_iter``
  equal to the iterations the comparison ran and ``tol=0``, so the cost of
  running it in warm-started chunks (to record its error curve and apply
  nmfsc's stopping rule) counts as overhead of ``compare``.

Overhead = compare / solvers - 1; the target is at most 5 %. Best of R rounds
for both (a round times both, so they are interleaved), after a warm-up.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import time
import warnings

import numpy as np

import nmfsc
from nmfsc.comparison import starting_point
from nmfsc.datasets import bars
from nmfsc.solvers.registry import compared_solvers, solver

TARGET = 0.05


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (
        f"{cpu}, {os.cpu_count()} logical cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}, {platform.system()} {platform.release()}"
    )


def sklearn_available():
    """Whether scikit-learn is installed (``compare`` then runs its methods too)."""
    return importlib.util.find_spec("sklearn") is not None


def sklearn_fit(V, M, start, n_iter, alpha=0.0, solver="cd", penalty=None):
    from sklearn.decomposition import NMF

    W0, H0 = start
    model = NMF(
        M,
        init="custom",
        solver=solver,
        tol=0.0,
        max_iter=max(n_iter, 1),
        alpha_W=alpha if penalty == "H" else 0.0,
        alpha_H=alpha if penalty == "W" else 0.0,
        l1_ratio=1.0,
    )
    model.fit_transform(V.T, W=H0.T.copy(), H=W0.T.copy())


def own_keywords(spec, settings):
    """The solver's own settings as ``compare`` passes them: the sparseness to a
    solver that takes it, the L1 weight to one whose only keyword is ``alpha``."""
    if "sparseness_w" in spec.keywords:
        return {"sparseness_w": settings["sparseness_w"]}
    return {"alpha": settings["sparse_nmf_alpha"]} if spec.keywords == ("alpha",) else {}


def solvers_alone(V, M, result, settings):
    """Seconds of every solver call of ``result``, each run alone from the same start."""
    seed = settings["seeds"][0]
    start = starting_point(V, M, seed)
    budget = {"max_iter": settings["max_iter"], "tol": settings["tol"]}
    rows = {r["method"]: r for r in result.rows}
    total = 0.0
    warnings.simplefilter("ignore")
    for method in rows:
        t0 = time.perf_counter()
        if method in compared_solvers():
            spec = solver(method)  # a variant of nmf_sc runs as nmf_sc(solver=...)
            spec.run(
                V, M, W_init=start[0], H_init=start[1], **budget, **own_keywords(spec, settings)
            )
        elif method in ("sklearn_mu", "sklearn_cd"):
            sklearn_fit(V, M, start, rows[method]["n_iter"], solver=method[-2:])
        else:
            record = result.matched[0]
            fits = zip(record["path"][1:], record["fit_iterations"][1:], strict=True)
            for (alpha, _), n_iter in fits:  # alpha 0 is sklearn_cd's own run
                sklearn_fit(V, M, start, n_iter, alpha, penalty="W")
        total += time.perf_counter() - t0
    return total


def bench_case(V, M, sw, max_iter, repeats):
    kwargs = dict(sparseness_w=sw, seeds=(0,), max_iter=max_iter, progress=False, name="bars")
    best_cmp = best_solo = np.inf
    result = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = nmfsc.compare(V, M, **kwargs)
        best_cmp = min(best_cmp, time.perf_counter() - t0)
        best_solo = min(best_solo, solvers_alone(V, M, result, result.settings))
    return best_cmp, best_solo, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small budget: a smoke test")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--max-iter", type=int, default=2000, help="budget of every run (default: compare's)"
    )
    args = parser.parse_args(argv)
    max_iter, repeats = (30, 1) if args.quick else (args.max_iter, args.repeats)
    V, _ = bars(n_samples=1000, size=8, random_state=0)
    M = 16
    nmfsc.compare(V, M, sparseness_w=0.74, seeds=(0,), max_iter=3, progress=False)  # warm-up
    sk = "on" if sklearn_available() else "off"
    print(
        f"bars {V.shape[0]} x {V.shape[1]}, M = {M}, max_iter {max_iter}, tol 1e-4, "
        f"one seed, best of {repeats}; scikit-learn {sk}"
    )
    print("| case | compare (s) | solver runs alone (s) | overhead | L1 fits |")
    print("|---|---:|---:|---:|---:|")
    verdicts = []
    for sw in (0.74, 0.85):
        t_cmp, t_solo, result = bench_case(V, M, sw, max_iter, repeats)
        overhead = t_cmp / t_solo - 1.0
        fits = result.matched[0]["fits"] if result.matched else 0
        print(f"| sW = {sw} | {t_cmp:.3f} | {t_solo:.3f} | {overhead:+.1%} | {fits} |")
        verdicts.append(overhead <= TARGET)
    verdict = "PASS" if all(verdicts) else "FAIL"
    print(f"\n{verdict}: compare adds at most {TARGET:.0%} to its solver runs' time")
    print(f"Machine: {machine()}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
