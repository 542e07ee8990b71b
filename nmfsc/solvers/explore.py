r"""A lower local minimum of nmf_sc's problem within a time budget: :func:`explore_nmf_sc`.

nmf_sc's problem is not convex. From one start, a solver stops at one of
many stationary points (local minima of :math:`E(W, H)` on the constraint
set), and which one depends on its path: on the paper's data the accelerated
solver and the paper's algorithm, run to a stationary point from the same
start, end up to 0.35 % apart in error, each lower on some seeds
(benchmarks/README.md, "Best fit"). No local method can tell which basin is
the lowest; spending time on more than one can.

:func:`explore_nmf_sc` does *basin hopping* (Wales & Doye, 1997): it runs
``nmf_sc(solver="accelerated")`` from nmf_sc's start to its stop, then,
until the budget is spent, from a perturbed copy of the best fit so far,
and keeps a fit only where its objective is lower. A perturbation multiplies
every entry of W and of H by :math:`e^{\sigma z}`, z standard normal (drawn
from ``random_state``), with :math:`\sigma` taking the values
:data:`PERTURBATIONS` in turn (small ones explore near the best basin, large
ones are nearly fresh starts that keep the best fit's scale), then scales W
by the least-squares factor :math:`\langle V, WH\rangle / \lVert WH\rVert^2`.

Guarantees: every fit it keeps is a stop of the accelerated solver (its
constraints hold exactly, its ``stop_reason`` and ``stationarity`` are
that run's), and the kept objective never rises. The result's ``objective``
and ``times`` are the best objective so far after every iteration of every
hop, against the loop time since the start (a curve of error against time,
comparable to any solver's).
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from nmfsc._parameters import check
from nmfsc.solvers._result import ConvergenceWarning, NMFResult
from nmfsc.solvers.hoyer import nmf_sc

__all__ = ["PERTURBATIONS", "PROGRESS_SECONDS", "explore_nmf_sc"]

#: The spreads sigma of the perturbations, in turn (module docstring).
PERTURBATIONS = (0.5, 1.0, 2.0, 4.0)
#: With ``progress``, a line at least this often (seconds) besides each kept hop.
PROGRESS_SECONDS = 5.0


def explore_nmf_sc(
    V: ArrayLike,
    n_components: int,
    *,
    sparseness_w: float | None = None,
    sparseness_h: float | None = None,
    max_time: float,
    max_hops: int | None = None,
    random_state: Any = None,
    W_init: ArrayLike | None = None,
    H_init: ArrayLike | None = None,
    tol: float = 1e-5,
    stationarity_tol: float | None = None,
    progress: bool = False,
) -> NMFResult:
    r"""nmf_sc's problem, searched for a lower local minimum for ``max_time`` seconds.

    The accelerated solver from nmf_sc's start, then from perturbed copies
    of the best fit so far, keeping the lowest (module docstring: basin
    hopping). Use it when the fit matters more than the time: the first fit
    is what ``nmf_sc(solver="accelerated")`` returns; every later one is
    kept only where it is lower.

    Parameters
    ----------
    V : array-like, shape (N, T)
        Non-negative data in memory (dense or scipy.sparse).
    n_components : int
        M, the number of basis vectors.
    sparseness_w, sparseness_h : float in [0, 1] or None
        The targets, as in :func:`nmfsc.nmf_sc` (each column of W, each row
        of H).
    max_time : float
        The budget in seconds (> 0): no hop starts after it, and the hop
        under way is stopped at it (its fit is then not kept).
    max_hops : int or None
        Stop after this many hops (perturbed runs) besides the first run.
    random_state : int, numpy Generator or None
        The start (nmf_sc's for this ``random_state``) and the perturbations.
    W_init, H_init : array-like or None
        A start of one's own instead (both, as nmf_sc's ``init="custom"``).
    tol, stationarity_tol : float
        Each run's stopping rule, as in :func:`nmfsc.nmf_sc`.
    progress : bool
        A line on stderr for each kept hop, and every :data:`PROGRESS_SECONDS`:
        the hops so far, the best error, the time.

    Returns
    -------
    NMFResult
        The best fit. ``objective`` and ``times``: the best objective so far
        after every iteration of every run; ``n_iter``: all their iterations;
        ``stop_reason``, ``converged`` and ``stationarity``: the kept run's;
        ``params["explore"]``: the hops run and kept, and the budget.

    See Also
    --------
    nmf_sc : One run of the same problem (``solver="accelerated"``).
    nmfsc.solvers.stationarity.stationarity : How far a fit is from stationary.

    References
    ----------
    D. J. Wales and J. P. K. Doye, "Global optimization by basin-hopping and
    the lowest energy structures of Lennard-Jones clusters containing up to
    110 atoms", J. Phys. Chem. A 101:5111-5116, 1997.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.solvers.explore import explore_nmf_sc
    >>> V = np.abs(np.random.default_rng(0).standard_normal((30, 40)))
    >>> res = explore_nmf_sc(V, 4, sparseness_w=0.6, max_time=60, max_hops=4, random_state=0)
    >>> res.params["explore"]["hops"], res.stop_reason
    (4, 'tol')
    >>> bool(np.all(np.diff(res.objective) <= 0))  # the best so far never rises
    True
    """
    budget = check("max_time", max_time)
    if budget is None:
        raise TypeError("explore_nmf_sc needs max_time, its budget in seconds")
    hops_allowed = None if max_hops is None else check("max_hops", max_hops)
    perturb = _perturbation_stream(random_state)
    options = {
        "sparseness_w": sparseness_w,
        "sparseness_h": sparseness_h,
        "solver": "accelerated",
        "tol": tol,
        "stationarity_tol": stationarity_tol,
        "max_iter": 2**62,
    }
    began = time.perf_counter()
    start = {"random_state": random_state}
    if W_init is not None or H_init is not None:
        start.update(init="custom", W_init=W_init, H_init=H_init)
    best = _run(V, n_components, options, budget, **start)
    objective, times = list(best.objective), list(best.times)
    hops = kept = 0
    said = time.perf_counter()
    while (hops_allowed is None or hops < hops_allowed) and best.stop_reason != "interrupted":
        left = budget - (time.perf_counter() - began)
        if left <= 0:
            break
        sigma = PERTURBATIONS[hops % len(PERTURBATIONS)]
        try:
            W, H = _perturbed(V, best.W, best.H, sigma, perturb)
        except KeyboardInterrupt:  # between runs: the best so far, as within one
            best = dataclasses.replace(best, stop_reason="interrupted", converged=False)
            break
        offset = time.perf_counter() - began
        trial = _run(V, n_components, options, left, init="custom", W_init=W, H_init=H)
        hops += 1
        finished = trial.stop_reason not in ("max_time", "interrupted")
        lower = finished and trial.objective[-1] < objective[-1]
        steps = np.asarray(trial.objective[1:], dtype=np.float64)
        objective.extend(
            np.minimum(steps, objective[-1]) if lower else [objective[-1]] * steps.size
        )
        times.extend(offset + np.asarray(trial.times[1:], dtype=np.float64))
        if lower:
            best, kept = trial, kept + 1
        if progress and (lower or time.perf_counter() - said >= PROGRESS_SECONDS):
            said = time.perf_counter()
            print(
                f"explore_nmf_sc: hop {hops} (sigma {sigma:g}): error {trial.relative_error:.6g}"
                f"{' (kept)' if lower else ''}; best {best.relative_error:.6g}; "
                f"{time.perf_counter() - began:.1f} s",
                file=sys.stderr,
                flush=True,
            )
        if trial.stop_reason == "interrupted":
            best = dataclasses.replace(best, stop_reason="interrupted", converged=False)
    record = {"hops": hops, "kept": kept, "max_time": budget, "perturbations": PERTURBATIONS}
    return dataclasses.replace(
        best,
        # the first run's own history may rise by rounding (~1e-16 of E)
        objective=np.minimum.accumulate(np.asarray(objective, dtype=np.float64)),
        times=np.asarray(times, dtype=np.float64),
        n_iter=len(objective) - 1,
        params={**best.params, "explore": record},
    )


def _perturbation_stream(random_state):
    """The generator of the perturbations: ``random_state`` itself when it is
    a Generator (after the start has drawn from it), else a stream apart
    from the start's (a child of its seed)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(np.random.SeedSequence(random_state).spawn(1)[0])


def _run(V, n_components, options, budget, **start):
    """One nmf_sc run within ``budget`` seconds, its own warnings silenced
    (the result says how it stopped)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return nmf_sc(V, n_components, max_time=budget, **options, **start)


def _perturbed(V, W, H, sigma, rng):
    """W and H, each entry times exp(sigma z), W then scaled by the
    least-squares factor <V, W H> / ||W H||^2 (1 where it is not positive),
    from M x M and M x T products alone (W H is never formed)."""
    W = W * np.exp(sigma * rng.standard_normal(W.shape))
    H = H * np.exp(sigma * rng.standard_normal(H.shape))
    WtV = np.asarray(V.T @ W).T if hasattr(V, "nnz") else W.T @ np.asarray(V)
    fit = float(np.vdot(WtV, H))
    norm = float(np.vdot(W.T @ W, H @ H.T))
    factor = fit / norm if norm > 0 and fit > 0 else 1.0
    return W * factor, H
