"""The outer loop shared by every solver: start, stopping rule, progress bar,
callback, checkpoints and the result.

A solver supplies a *steps* object (see :class:`Steps`); this module runs it.
The per-iteration work is the steps object's; everything about *when* to stop
and what to record is here, once.

Stopping rule
-------------
After iteration k (k >= ``window``) the run has converged when the relative
change of the objective over the last ``window`` iterations,

    |E[k - window] - E[k]| / |E[k - window]|,

falls below ``tol`` (stop reason ``"tol"``). For the monotone solvers
(nmf_sc, Euclidean and divergence NMF) this is the relative decrease; the
absolute value matters for local and sparse NMF, whose recorded objective is
not what their updates minimise and may rise for a while: a rise is not
convergence. A solver may also report its own convergence (nmf_sc: step size
below 1e-200, ``"step_size"``). Not converged: ``"max_iter"`` (``n_iter``
reached ``max_iter``), ``"max_time"`` (the loop's cumulative wall-clock time
reached ``max_time``; a resumed run counts the time before the checkpoint),
``"interrupted"`` (KeyboardInterrupt) -- these three give a
:class:`ConvergenceWarning` -- and ``"callback"`` (the callback returned True;
no warning, the caller asked for it).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

from nmfsc._validation import check_positive_int
from nmfsc.solvers._common import (
    check_data,
    check_factor,
    check_loop_options,
    random_start,
)
from nmfsc.solvers._result import ConvergenceWarning, IterationState, NMFResult
from nmfsc.solvers.checkpoint import (
    array_digest,
    fingerprint,
    load_checkpoint,
    save_checkpoint,
)
from nmfsc.sparseness import sparseness_or_nan

__all__ = ["Steps", "solve", "tol_reached"]

_WARN_HINT = {
    "max_iter": "max_iter={max_iter} reached; raise max_iter (or loosen tol={tol}) "
    "to let it converge, or resume from a checkpoint with a larger max_iter",
    "max_time": "max_time={max_time} s reached; raise max_time (or pass max_time=None)",
    "interrupted": "interrupted by KeyboardInterrupt; pass checkpoint=... and resume=True "
    "to continue where it stopped",
}


class Steps:
    """Interface of a solver's iteration (subclassed in nmfsc.py and baselines.py).

    ``V`` is the normalised data (max 1). A *state* is a dict of the arrays and
    numbers that define an iterate (``"W"``, ``"H"``, C-contiguous float64,
    and any scalars such as step sizes); it is what a checkpoint stores.
    """

    name = "?"
    #: The objective of V / s is s**-power times the objective of V.
    objective_power = 2

    def __init__(self, V, n_components):
        self.V = V
        self.n_components = n_components

    def initialize(self, W, H):
        """The state at the start, from the raw random (or given) W and H."""
        return {"W": W, "H": H}

    def start(self, state):
        """Prepare caches for ``state``; return its objective (normalised units)."""
        raise NotImplementedError

    def step(self, state):
        """One iteration. Returns ``(new_state, objective, stop_reason)``.

        ``state`` must not be modified: the loop keeps it until the new one is
        complete, so an interrupt never leaves a half-updated iterate.
        ``objective`` is None when no iteration was completed (then
        ``stop_reason`` says why, and ``new_state``, if not None, only updates
        bookkeeping such as a step size); ``stop_reason`` is None unless the
        solver itself wants to stop.
        """
        raise NotImplementedError

    def step_sizes(self, state):
        return None


def tol_reached(history, window, tol):
    """The stopping rule of the module docstring, on a list of objective values."""
    k = len(history) - 1
    if k < window:
        return False
    old, new = history[k - window], history[k]
    if old == new:
        return bool(tol > 0)  # covers an exact fit (0 == 0)
    return bool(abs(old - new) < tol * abs(old))


def _start_description(random_state, W_init, H_init):
    """What determines the start, for checkpoint matching (None: not comparable)."""
    seed = None
    if W_init is None or H_init is None:
        if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
            seed = int(random_state)
        else:
            return None
    return {"seed": seed, "W_init": array_digest(W_init), "H_init": array_digest(H_init)}


def _read_only(X):
    view = X.view()
    view.flags.writeable = False
    return view


def _progress_bar(progress, name, total, initial):
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise ImportError(
            "progress=True needs tqdm (pip install tqdm); or pass progress=False"
        ) from None
    return tqdm(total=total, initial=initial, desc=name, unit="it", dynamic_ncols=True)


def solve(
    make_steps,
    V,
    n_components,
    *,
    solver_params,
    W_init,
    H_init,
    random_state,
    max_iter,
    tol,
    window,
    max_time,
    callback,
    progress,
    checkpoint,
    checkpoint_every,
    checkpoint_seconds,
    resume,
):
    """Validate, start (or resume), iterate until a stop, and build the result.

    ``make_steps(V_normalised, n_components)`` returns the :class:`Steps`.
    ``solver_params`` are the solver's own settings (already validated), saved
    in the result and checked when resuming.
    """
    V, scale = check_data(V)
    M = check_positive_int(n_components, "n_components")
    N, T = V.shape
    W_init = check_factor(W_init, "W_init", (N, M))
    H_init = check_factor(H_init, "H_init", (M, T))
    max_iter, tol, window, max_time, checkpoint_every, checkpoint_seconds = check_loop_options(
        max_iter, tol, window, max_time, callback, checkpoint_every, checkpoint_seconds
    )
    if checkpoint is not None and not isinstance(checkpoint, (str, Path)):
        raise TypeError(f"checkpoint must be a path (str or Path) or None, got {checkpoint!r}")
    path = None if checkpoint is None else Path(checkpoint)
    if resume and path is None:
        raise ValueError("resume=True needs a checkpoint path (checkpoint=...)")

    Vn = V / scale
    steps = make_steps(Vn, M)
    factor = scale**steps.objective_power
    params = {"n_components": M, **solver_params}
    meta = None
    if path is not None:
        meta = {
            "solver": steps.name,
            "params": params,
            "data": fingerprint(V),
            "start": _start_description(random_state, W_init, H_init),
        }

    if resume and path.exists():
        state, iteration, history, times = load_checkpoint(path, meta)
        steps.start(state)
    else:
        W0, H0 = random_start(random_state, N, M, T)
        if W_init is not None:
            W0 = W_init / scale
        if H_init is not None:
            H0 = H_init.copy()
        state = steps.initialize(np.ascontiguousarray(W0), np.ascontiguousarray(H0))
        history = [float(steps.start(state)) * factor]
        times = [0.0]
        iteration = 0

    def save():
        save_checkpoint(
            path,
            state=committed[0],
            meta=meta,
            iteration=committed[1],
            objective=history[: committed[1] + 1],
            times=times[: committed[1] + 1],
        )

    committed = (state, iteration)
    bar = _progress_bar(progress, steps.name, max_iter, min(iteration, max_iter))
    t0 = time.perf_counter() - times[-1]
    last_save = time.perf_counter()
    stop = None
    try:
        while True:
            iteration = committed[1]
            if tol_reached(history, window, tol):
                stop = "tol"
                break
            if iteration >= max_iter:
                stop = "max_iter"
                break
            if max_time is not None and time.perf_counter() - t0 >= max_time:
                stop = "max_time"
                break
            new_state, objective, reason = steps.step(committed[0])
            if objective is not None:
                history.append(float(objective) * factor)
                times.append(time.perf_counter() - t0)
                committed = (new_state, iteration + 1)
            elif new_state is not None:  # no iteration, but e.g. a new step size
                committed = (new_state, iteration)
            state, iteration = committed
            if bar is not None and objective is not None:
                prev = history[-2]
                change = (prev - history[-1]) / abs(prev) if prev != 0 else 0.0
                bar.set_postfix(
                    objective=f"{history[-1]:.6g}", rel_change=f"{change:.2e}", refresh=False
                )
                bar.update(1)
            if reason is not None:
                stop = reason
                break
            if callback is not None:
                view = IterationState(
                    iteration=iteration,
                    objective=history[-1],
                    W=_read_only(state["W"] * scale),
                    H=_read_only(state["H"]),
                    elapsed=times[-1],
                )
                if callback(view) is True:
                    stop = "callback"
                    break
            if path is not None:
                now = time.perf_counter()
                if iteration % checkpoint_every == 0 or (
                    checkpoint_seconds is not None and now - last_save >= checkpoint_seconds
                ):
                    save()
                    last_save = now
    except KeyboardInterrupt:
        stop = "interrupted"
    finally:
        if bar is not None:
            bar.close()

    state, iteration = committed
    del history[iteration + 1 :]
    del times[iteration + 1 :]
    if path is not None:
        save()

    converged = stop in ("tol", "step_size")
    if stop in _WARN_HINT:
        hint = _WARN_HINT[stop].format(max_iter=max_iter, tol=tol, max_time=max_time)
        warnings.warn(
            f"{steps.name} stopped after {iteration} iterations without converging: {hint}",
            ConvergenceWarning,
            stacklevel=3,
        )

    W = state["W"] * scale
    H = state["H"].copy()
    norm_v = np.linalg.norm(V)
    relative_error = float(np.linalg.norm(V - W @ H) / norm_v)
    return NMFResult(
        W=W,
        H=H,
        objective=np.array(history),
        times=np.array(times),
        sparseness_W=sparseness_or_nan(W, 0),
        sparseness_H=sparseness_or_nan(H, 1),
        n_iter=iteration,
        converged=converged,
        stop_reason=stop,
        solver=steps.name,
        params={
            **params,
            "max_iter": max_iter,
            "tol": tol,
            "window": window,
            "max_time": max_time,
        },
        scale=scale,
        step_sizes=steps.step_sizes(state),
        relative_error=relative_error,
    )
