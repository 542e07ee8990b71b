"""The loop of a Dask run: start or resume, iterate, stop, checkpoint, result.

The same rules as :mod:`nmfsc.solvers._loop` (the stopping rule
:func:`~nmfsc.solvers._loop.tol_reached`, the stop reasons, the warnings, the
callback and the checkpoint schedule), with H a
:class:`~nmfsc.dask_backend.chunked.ChunkedRows`. The start is the in-memory
solver's, formed on the client (W and H drawn from ``random_state`` or given
as W_init / H_init, as NumPy arrays), then H is split into V's column chunks;
the result's H is a ``dask.array.Array`` of the persisted chunks.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from nmfsc._validation import check_positive_int
from nmfsc.dask_backend.chunked import DaskData, compute, reduce_tree, task
from nmfsc.dask_backend.stack_checkpoint import load_stack_checkpoint, save_stack_checkpoint
from nmfsc.dask_backend.steps import DaskEuclideanSteps, DaskHoyerSteps
from nmfsc.solvers._loop import progress_bar, tol_reached
from nmfsc.solvers._result import ConvergenceWarning, IterationState, NMFResult
from nmfsc.solvers._start import fresh_start, start_description
from nmfsc.solvers.checkpoint import check_checkpoint_path
from nmfsc.sparseness import sparseness_or_nan

__all__ = ["dask_nmf_euclidean", "dask_nmf_sc"]

_HINT = {
    "max_iter": "max_iter={max_iter} reached; raise max_iter (or loosen tol={tol}) "
    "to let it converge, or resume from a checkpoint with a larger max_iter",
    "max_time": "max_time={max_time} s reached; raise max_time (or pass max_time=None)",
    "interrupted": "interrupted by KeyboardInterrupt; pass checkpoint=... and resume=True "
    "to continue where it stopped",
}


def dask_nmf_sc(V, n_components, sparseness_w, sparseness_h, settings):
    """:func:`nmfsc.nmf_sc` for a Dask array V (arguments already checked)."""

    def make_steps(data, M):
        return DaskHoyerSteps(data, M, sparseness_w, sparseness_h)

    params = {"sparseness_w": sparseness_w, "sparseness_h": sparseness_h}
    return solve_dask(make_steps, V, n_components, params, settings)


def dask_nmf_euclidean(V, n_components, settings):
    """:func:`nmfsc.nmf_euclidean` for a Dask array V."""
    return solve_dask(DaskEuclideanSteps, V, n_components, {}, settings)


def solve_dask(make_steps, V, n_components, solver_params, settings):
    run = DaskRun(make_steps, V, n_components, solver_params, settings)
    stop = run.iterate()
    run.finish()
    if stop in _HINT:
        s = run.settings
        hint = _HINT[stop].format(max_iter=s.max_iter, tol=s.tol, max_time=s.max_time)
        warnings.warn(
            f"{run.steps.name} stopped after {run.committed[1]} iterations without "
            f"converging: {hint}",
            ConvergenceWarning,
            stacklevel=4,
        )
    return run.result(stop)


class DaskRun:
    """One run on a Dask array: as the in-memory loop's run (module docstring)."""

    def __init__(self, make_steps, V, n_components, solver_params, settings):
        self.data = DaskData(V)
        M = check_positive_int(n_components, "n_components")
        N, T = self.data.shape
        self.settings = settings = settings.validated(N, M, T)
        if settings.init not in ("random", "custom"):
            raise ValueError(
                f"init={settings.init!r} is not available for a Dask array V; pass "
                "init='random' (the default) or W_init and H_init"
            )
        self.scale = self.data.scale
        self.steps = make_steps(self.data, M)
        self.factor = self.scale**2
        self.params = {"n_components": M, **solver_params}
        self.shape = (N, M, T)
        self.meta = None
        if settings.checkpoint is not None:
            check_checkpoint_path(settings.checkpoint)
            self.meta = {
                "solver": self.steps.name,
                "params": self.params,
                "data": self.data.fingerprint(),
                "start": start_description(settings),
            }
        self.start_or_resume()

    def start_or_resume(self):
        path = self.settings.checkpoint
        if self.settings.resume and path.exists():
            state, iteration, self.history, self.times = load_stack_checkpoint(
                path, self.meta, self.steps, self.data, self.shape
            )
            self.steps.start(state)
        else:
            state = fresh_start(self.steps, self.settings, self.scale, self.shape)
            self.history = [float(self.steps.start(state)) * self.factor]
            self.times = [0.0]
            iteration = 0
        self.committed = (state, iteration)

    def iterate(self):
        s = self.settings
        iteration = self.committed[1]
        bar = progress_bar(s.progress, self.steps.name, s.max_iter, min(iteration, s.max_iter))
        self.t0 = time.perf_counter() - self.times[-1]
        self.last_save = time.perf_counter()
        try:
            while True:
                stop = self.stop_test() or self.advance(bar)
                if stop is not None:
                    return stop
        except KeyboardInterrupt:
            return "interrupted"
        finally:
            if bar is not None:
                bar.close()

    def stop_test(self):
        s = self.settings
        if tol_reached(self.history, s.window, s.tol):
            return "tol"
        if self.committed[1] >= s.max_iter:
            return "max_iter"
        if s.max_time is not None and time.perf_counter() - self.t0 >= s.max_time:
            return "max_time"
        return None

    def advance(self, bar):
        state, iteration = self.committed
        new_state, objective, reason = self.steps.step(state)
        if objective is not None:
            self.history.append(float(objective) * self.factor)
            self.times.append(time.perf_counter() - self.t0)
            self.committed = (new_state, iteration + 1)
            if bar is not None:
                bar.update(1)
        elif new_state is not None:
            self.committed = (new_state, iteration)
        if reason is not None:
            return reason
        if self.settings.callback is not None and self.callback_stops():
            return "callback"
        self.checkpoint_if_due()
        return None

    def callback_stops(self):
        state, iteration = self.committed
        W = state["W"] * self.scale
        W.flags.writeable = False
        view = IterationState(
            iteration=iteration,
            objective=self.history[-1],
            W=W,
            H=state["H"].to_dask_array(),
            elapsed=self.times[-1],
        )
        return self.settings.callback(view) is True

    def checkpoint_if_due(self):
        s = self.settings
        if s.checkpoint is None:
            return
        now = time.perf_counter()
        if self.committed[1] % s.checkpoint_every == 0 or (
            s.checkpoint_seconds is not None and now - self.last_save >= s.checkpoint_seconds
        ):
            self.save()
            self.last_save = now

    def save(self):
        state, iteration = self.committed
        save_stack_checkpoint(
            self.settings.checkpoint,
            state=state,
            meta=self.meta,
            iteration=iteration,
            objective=self.history[: iteration + 1],
            times=self.times[: iteration + 1],
        )

    def finish(self):
        iteration = self.committed[1]
        del self.history[iteration + 1 :]
        del self.times[iteration + 1 :]
        if self.settings.checkpoint is not None:
            self.save()

    def result(self, stop):
        state, iteration = self.committed
        s = self.settings
        H = state["H"]
        W = state["W"] * self.scale
        return NMFResult(
            W=W,
            H=H.to_dask_array(),
            objective=np.array(self.history),
            times=np.array(self.times),
            sparseness_W=sparseness_or_nan(W, 0),
            sparseness_H=row_sparseness(H),
            n_iter=iteration,
            converged=stop in ("tol", "step_size"),
            stop_reason=stop,
            solver=self.steps.name,
            params={
                **self.params,
                "max_iter": s.max_iter,
                "tol": s.tol,
                "window": s.window,
                "max_time": s.max_time,
            },
            scale=self.scale,
            step_sizes=self.steps.step_sizes(state),
            relative_error=self.data.relative_error(W, H, state["W"]),
        )


def _row_norms(h):
    h = np.asarray(h, dtype=np.float64)
    return np.stack([np.abs(h).sum(axis=1), np.einsum("ij,ij->i", h, h), np.abs(h).max(axis=1)])


def _merge_norms(*parts):
    return np.stack(
        [sum(p[0] for p in parts), sum(p[1] for p in parts), np.max([p[2] for p in parts], axis=0)]
    )


def row_sparseness(H):
    """Hoyer's sparseness of every row of chunked H (NaN for a zero row): one reduction."""
    l1, ss, peak = compute(reduce_tree([task(_row_norms, h) for h in H.parts], _merge_norms))[0]
    T = H.shape[1]
    out = np.full(H.shape[0], np.nan)
    ok = peak > 0
    if T >= 2:
        root = np.sqrt(T)
        out[ok] = (root - l1[ok] / np.sqrt(ss[ok])) / (root - 1.0)
    return out
