"""The outer loop shared by every solver: start, stopping rule, progress bar,
callback, checkpoints and the result.

:func:`solve` runs a :class:`Run` through its named steps: start or resume
(:meth:`Run.start_or_resume`), iterate (:meth:`Run.iterate`: the stop test
:meth:`Run.stop_test`, then :meth:`Run.advance`, which records the
iteration, shows it, asks the callback and checkpoints), then finish (truncate
the history, save) and build the result. What differs for data that is not a
NumPy or SciPy array (the Dask backend's chunked H, its checkpoint format) is
in a few hook methods (:meth:`Run.open_data`, :meth:`Run.load`,
:meth:`Run.write_checkpoint`, :meth:`Run.callback_factors`,
:meth:`Run.final_factors`), which a subclass overrides.

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
convergence. A solver may also report its own convergence (nmf_sc: step
size below 1e-200, ``"step_size"``), which the loop believes only where the
objective had stopped falling: where it still fell by more than ``tol``
(and more than :data:`RESOLVED_FALL`, the recorded objective's own
accuracy) over the last ``window`` iterations, the line search stalled and
the stop is ``"stalled"``, not converged (float32 factors do this: rounding
a trial's entries to float32 costs more than a small step gains). Not
converged: ``"max_iter"`` (``n_iter`` reached ``max_iter``),
``"max_time"`` (the loop's cumulative wall-clock time reached
``max_time``; a resumed run counts the time before the checkpoint),
``"stalled"``, ``"interrupted"`` (KeyboardInterrupt) -- these four give a
:class:`ConvergenceWarning` -- and ``"callback"`` (the callback returned
True; no warning, the caller asked for it).
"""

from __future__ import annotations

import math
import numbers
import time
import warnings

import numpy as np

from nmfsc._parameters import check
from nmfsc._validation import check_data
from nmfsc.solvers._data import DenseData, ScaledData, make_data
from nmfsc.solvers._progress import progress_bar, show_progress
from nmfsc.solvers._result import (
    ConvergenceWarning,
    DegenerateFitWarning,
    IterationState,
    NMFResult,
    degenerate_counts,
    degenerate_message,
)
from nmfsc.solvers._start import fresh_start, start_description
from nmfsc.solvers.checkpoint import (
    check_checkpoint_path,
    fingerprint,
    load_checkpoint,
    save_checkpoint,
)
from nmfsc.solvers.stationarity import stationarity
from nmfsc.sparseness import sparseness_or_nan

__all__ = ["RESOLVED_FALL", "Run", "Steps", "falling", "solve", "tol_reached"]

#: The relative fall of the recorded objective over ``window`` iterations
#: below which a solver's own convergence test (nmf_sc's step size) is
#: believed whatever ``tol``: smaller falls are within the recorded
#: objective's accuracy (about 1e-11 relative, nmfsc.solvers._objective).
RESOLVED_FALL = 1e-10

_WARN_HINT = {
    "max_iter": "max_iter={max_iter} reached; raise max_iter (or loosen tol={tol}) "
    "to let it converge, or resume from a checkpoint with a larger max_iter",
    "max_time": "max_time={max_time} s reached; raise max_time (or pass max_time=None)",
    "stalled": "its line search found no descent step (step size below 1e-200) while the "
    "objective still fell by {fall:.2g} (relative) over the last {window} iterations, "
    "more than tol={tol}{advice}",
    "interrupted": "interrupted by KeyboardInterrupt; pass checkpoint=... and resume=True "
    "to continue where it stopped",
}
#: The hints that differ when ``stationarity_tol`` decides convergence.
_WARN_HINT_STATIONARITY = {
    "max_iter": "max_iter={max_iter} reached before the fit was stationary to "
    "stationarity_tol={stationarity_tol} (it is at {stationarity:.2g}); raise max_iter "
    "(or loosen stationarity_tol), or resume from a checkpoint with a larger max_iter",
    "stalled": "its line search found no descent step (step size below 1e-200) at a fit "
    "that is not stationary to stationarity_tol={stationarity_tol} (it is at "
    "{stationarity:.2g}); solver='accelerated' minimises the same objective another way",
}
#: The end of the "stalled" warning, by the factors' dtype.
_STALLED_ADVICE = {
    "float32": ": with float32 factors, rounding a trial to float32 costs more than a "
    "small step gains; fit V.astype(np.float64), or use solver='accelerated'",
    "float64": "; solver='accelerated' minimises the same objective another way",
}


class Steps:
    """Interface of a solver's iteration (subclassed in hoyer.py, standard.py and penalized.py).

    ``data`` is the normalised data V / max(V), as an object that gives the
    products the updates need (:mod:`nmfsc.solvers._data`: dense, sparse or
    memory-mapped V alike). A *state* is a dict of the arrays and numbers that
    define an iterate (``"W"``, ``"H"``, C-contiguous, of the data's dtype,
    float64 or float32, and any scalars such as step sizes); it is what a
    checkpoint stores.
    """

    name = "?"
    #: What to suggest when a fit leaves dead samples or unused components
    #: (:class:`DegenerateFitWarning`); None: count them, do not warn.
    degenerate_hint: str | None = None
    #: The objective of V / s is s**-power times the objective of V.
    objective_power = 2
    #: The scalar entries of a state besides W and H (step sizes, each > 0).
    state_scalars: tuple[str, ...] = ()
    #: Whether the result reports NMFResult.stationarity (squared-error solvers).
    measures_stationarity = False

    def __init__(self, data, n_components):
        self.data = data
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

    def reuse_buffers(self):
        """Told by the loop, before the start, that no one but the loop holds
        an iterate (the run has no callback, which could keep ``state.H``):
        :meth:`step` may then write into the arrays of an iterate before the
        committed one, never into the committed iterate's (nmf_sc's line
        search reuses its trial buffers). Nothing here."""


def falling(history, window, tol):
    """The relative fall of the objective over the last ``window`` iterations
    (since the start, for fewer) if it is more than ``tol`` and
    :data:`RESOLVED_FALL`, else 0.0: the evidence that a solver's own
    convergence test (nmf_sc's step size) stopped a run that was still
    descending (``"stalled"``). A rise is no fall."""
    k = len(history) - 1
    if k < 1:
        return 0.0
    old, new = history[max(0, k - window)], history[k]
    fall = (old - new) / abs(old) if old != 0 else 0.0
    return fall if fall > max(tol, RESOLVED_FALL) else 0.0


def tol_reached(history, window, tol):
    """The stopping rule of the module docstring, on a list of objective values."""
    k = len(history) - 1
    if k < window:
        return False
    old, new = history[k - window], history[k]
    if old == new:
        return bool(tol > 0)  # covers an exact fit (0 == 0)
    return bool(abs(old - new) < tol * abs(old))


def _read_only(X):
    view = X.view()
    view.flags.writeable = False
    return view


def solve(make_steps, V, n_components, *, solver_params, settings):
    """Validate, start (or resume), iterate until a stop, and build the result.

    ``make_steps(data, n_components)`` returns the :class:`Steps` (``data``:
    :func:`nmfsc.solvers._data.make_data` of the checked V).
    ``solver_params`` are the solver's own settings (already validated), saved
    in the result and checked when resuming; ``settings`` are the call's
    :class:`~nmfsc.solvers._settings.LoopSettings`, not yet validated.
    """
    return Run(make_steps, V, n_components, solver_params, settings).run(stacklevel=4)


def keeps_iterates(callback) -> bool:
    """Whether a run's ``callback`` may keep the arrays of the states it is
    given: any callback, unless it says ``keeps_iterates = False`` (as
    SparseNMF's stopping rule does, which reads the objective alone). Without
    such a callback the steps reuse the buffers of earlier iterates
    (:meth:`Steps.reuse_buffers`)."""
    return callback is not None and getattr(callback, "keeps_iterates", True) is not False


class Run:
    """One run of a solver: the normalised problem, its settings, the committed
    iterate ``(state, iteration)`` and the objective and time histories.

    The committed pair is replaced as a whole once an iteration is complete,
    so that an interrupt never leaves a half-updated iterate.
    """

    def __init__(self, make_steps, V, n_components, solver_params, settings):
        self.open_data(V)
        M = check("n_components", n_components)
        N, T = self.data.shape
        self.settings = settings = settings.validated(N, M, T)
        self.check_settings()
        self.steps = make_steps(self.data, M)
        self.last_stationarity_check = None
        if settings.stationarity_tol is not None and not self.measures_stationarity():
            raise ValueError(
                f"stationarity_tol is measured for the solvers of the squared error (nmf_sc, "
                f"nmf_euclidean) on V in memory, not for {self.steps.name} "
                f"here; use tol (the rate of decrease) instead"
            )
        if not keeps_iterates(settings.callback):  # only the loop holds iterates
            self.steps.reuse_buffers()
        self.factor, self.objective_units = objective_factor(self.scale, self.steps.objective_power)
        self.params = {"n_components": M, **solver_params}
        self.shape = (N, M, T)
        self.meta = None
        if settings.checkpoint is not None:
            check_checkpoint_path(settings.checkpoint)  # fail now, not after an hour's work
            self.meta = {
                "solver": self.steps.name,
                "params": self.params,
                "data": self.fingerprint(),
                "start": start_description(settings),
            }
        self.start_or_resume()

    # -- hooks: what a run on other data (the Dask backend) overrides ---------

    def open_data(self, V):
        """Check V and set ``self.data`` (the normalised data) and ``self.scale``."""
        self.V, self.scale = check_data(V)
        self.data = make_data(self.V, self.scale)

    def check_settings(self):
        """Reject settings this kind of run cannot honour (none here)."""

    def fingerprint(self):
        """The data's fingerprint, saved with a checkpoint and checked on resume."""
        return fingerprint(self.V)

    def load(self, path):
        """``(state, iteration, history, times)`` from the checkpoint at ``path``."""
        N, M, T = self.shape
        layout = {"W": (N, M), "H": (M, T), **dict.fromkeys(self.steps.state_scalars, ())}
        return load_checkpoint(path, self.meta, layout, dtype=self.data.dtype)

    #: Saves a checkpoint (keyword arguments of :func:`save_checkpoint`).
    write_checkpoint = staticmethod(save_checkpoint)

    def callback_factors(self, state):
        """W (in V's units) and H as the callback sees them: read-only views."""
        return _read_only(state["W"] * self.scale), _read_only(state["H"])

    def final_factors(self, state):
        """The result's W, H, their sparseness and the relative error."""
        H = state["H"].copy()
        relative_error = self.data.relative_error(state["W"], H)
        W = in_data_units(state["W"], self.scale, in_place=isinstance(self.data, ScaledData))
        return {
            "W": W,
            "H": H,
            "sparseness_W": self.sparseness(W, 0),
            "sparseness_H": self.sparseness(H, 1),
            "relative_error": relative_error,
        }

    # -- the loop --------------------------------------------------------------

    def run(self, stacklevel):
        """Iterate until a stop, finish and return the result; warn (at
        ``stacklevel`` from here) when the run stopped without converging."""
        stop = self.iterate()
        self.finish()
        result = self.result(stop)  # before the warning: an error here must not be lost behind it
        self.warn_if_degenerate(result, stacklevel + 1)
        if stop in _WARN_HINT:
            s = self.settings
            hints = _WARN_HINT
            if s.stationarity_tol is not None and stop in _WARN_HINT_STATIONARITY:
                hints = _WARN_HINT_STATIONARITY
            hint = hints[stop].format(
                stationarity_tol=s.stationarity_tol,
                stationarity=result.stationarity,
                max_iter=s.max_iter,
                tol=s.tol,
                max_time=s.max_time,
                window=s.window,
                fall=falling(self.history, s.window, s.tol),
                advice=_STALLED_ADVICE.get(np.dtype(self.committed[0]["W"].dtype).name, ""),
            )
            warnings.warn(
                f"{self.steps.name} stopped after {self.committed[1]} iterations without "
                f"converging: {hint}",
                ConvergenceWarning,
                stacklevel=stacklevel,
            )
        return result

    def warn_if_degenerate(self, result, stacklevel):
        """A :class:`DegenerateFitWarning` when the solver has a hint (see below)."""
        message = degenerate_message(result, self.steps.name, self.steps.degenerate_hint)
        if message is not None:
            warnings.warn(message, DegenerateFitWarning, stacklevel=stacklevel)

    def data_columns(self, columns):
        """V's ``columns`` (indices), dense or scipy.sparse."""
        return self.V[:, columns]

    def start_or_resume(self):
        """The committed iterate and histories: from the checkpoint when resuming
        (and it exists), else the solver's start from the random or given factors."""
        path = self.settings.checkpoint
        if self.settings.resume and path.exists():
            state, iteration, self.history, self.times = self.load(path)
            self.steps.start(state)
        else:
            state = fresh_start(self.steps, self.settings, self.scale, self.shape)
            self.history = [float(self.steps.start(state)) * self.factor]
            self.times = [0.0]
            iteration = 0
        self.committed = (state, iteration)

    def iterate(self):
        """Iterate until a stop; return the stop reason (``"interrupted"`` for a
        KeyboardInterrupt, which leaves the last committed iterate). Any other
        exception (a callback's, a worker's, a MemoryError) propagates after
        the committed iterate is saved to the checkpoint, if there is one, so
        that ``resume=True`` continues from it."""
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
        except Exception as error:
            if self.settings.checkpoint is not None:
                try:
                    self.finish()
                except Exception as failure:  # the disk that failed the run, say
                    error.add_note(f"nmfsc: the checkpoint could not be saved either: {failure}")
            raise
        finally:
            if bar is not None:
                bar.close()

    def stop_test(self):
        """The stop reason before the next iteration (tol, max_iter, max_time), or
        None. With ``stationarity_tol``, "tol" is the fit stationary to it (checked
        every ``window`` iterations) and the rate rule stops nothing."""
        s = self.settings
        if s.stationarity_tol is None:
            if tol_reached(self.history, s.window, s.tol):
                return "tol"
        elif self.stationary_now():
            return "tol"
        if self.committed[1] >= s.max_iter:
            return "max_iter"
        if s.max_time is not None and time.perf_counter() - self.t0 >= s.max_time:
            return "max_time"
        return None

    def stationary_now(self, every_window=True):
        """Whether the committed iterate is stationary to ``stationarity_tol``:
        measured at every ``window``-th iteration (False at the others), or
        now with ``every_window=False``."""
        iteration = self.committed[1]
        if every_window and (
            iteration % self.settings.window or iteration == self.last_stationarity_check
        ):
            return False
        self.last_stationarity_check = iteration
        state = self.committed[0]
        W = np.multiply(state["W"], self.scale, dtype=np.float64)  # in V's units
        return bool(self.stationarity({"W": W, "H": state["H"]}) <= self.settings.stationarity_tol)

    def advance(self, bar):
        """One step of the solver: record it, show it, ask the callback and save
        a checkpoint when one is due. Returns a stop reason or None."""
        new_state, objective, reason = self.steps.step(self.committed[0])
        self.record(new_state, objective)
        if bar is not None and objective is not None:
            show_progress(bar, self.history)
        if reason == "step_size" and falling(self.history, self.settings.window, self.settings.tol):
            return "stalled"
        if reason == "step_size" and self.settings.stationarity_tol is not None:
            return "step_size" if self.stationary_now(every_window=False) else "stalled"
        if reason is not None:
            return reason
        if self.callback_stops():
            return "callback"
        self.checkpoint_if_due()
        return None

    def record(self, new_state, objective):
        """Commit the step's state; an iteration (``objective`` not None) also
        extends the histories."""
        iteration = self.committed[1]
        if objective is not None:
            self.history.append(float(objective) * self.factor)
            self.times.append(time.perf_counter() - self.t0)
            self.committed = (new_state, iteration + 1)
        elif new_state is not None:  # no iteration, but e.g. a new step size
            self.committed = (new_state, iteration)

    def callback_stops(self):
        """Call the callback (if any) with the committed iterate; True if it
        said stop: any true bool or integer (NumPy's included, as a test of
        an array gives), where None and false ones go on."""
        if self.settings.callback is None:
            return False
        state, iteration = self.committed
        W, H = self.callback_factors(state)
        view = IterationState(
            iteration=iteration,
            objective=self.history[-1],
            W=W,
            H=H,
            elapsed=self.times[-1],
        )
        answer = self.settings.callback(view)
        if answer is None or isinstance(answer, (bool, np.bool_, numbers.Integral)):
            return bool(answer)
        raise TypeError(
            f"the callback returned {type(answer).__name__} {answer!r:.60}; return True to "
            "stop the run, or False or None to go on"
        )

    def checkpoint_if_due(self):
        """Save every ``checkpoint_every`` iterations or ``checkpoint_seconds`` seconds."""
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
        self.write_checkpoint(
            self.settings.checkpoint,
            state=state,
            meta=self.meta,
            iteration=iteration,
            objective=self.history[: iteration + 1],
            times=self.times[: iteration + 1],
        )

    def finish(self):
        """Drop history entries past the committed iterate; save the checkpoint."""
        iteration = self.committed[1]
        del self.history[iteration + 1 :]
        del self.times[iteration + 1 :]
        if self.settings.checkpoint is not None:
            self.save()

    def result(self, stop):
        """The :class:`NMFResult` of the committed iterate, in V's units."""
        state, iteration = self.committed
        s = self.settings
        factors = self.final_factors(state)
        dead, unused = degenerate_counts(factors["W"], factors["H"], self.data_columns)
        if self.params.get("sparseness_h") is not None:
            dead = None  # H's zeros are the constraint's (see NMFResult.dead_samples)
        return NMFResult(
            **factors,
            dead_samples=dead,
            unused_components=unused,
            objective=np.array(self.history),
            times=np.array(self.times),
            n_iter=iteration,
            converged=stop in ("tol", "step_size"),
            stop_reason=stop,
            solver=self.steps.name,
            params={
                **self.params,
                "max_iter": s.max_iter,
                "tol": s.tol,
                "window": s.window,
                "stationarity_tol": s.stationarity_tol,
                "max_time": s.max_time,
            },
            scale=self.scale,
            objective_units=self.objective_units,
            step_sizes=self.steps.step_sizes(state),
            stationarity=self.stationarity(factors),
        )

    def measures_stationarity(self):
        """Whether :attr:`NMFResult.stationarity` is measured for this run."""
        return self.steps.measures_stationarity and isinstance(self.data, DenseData | ScaledData)

    def stationarity(self, factors):
        """:attr:`NMFResult.stationarity` of the final factors: for a solver that
        measures it, on data in memory without a mask (see NMFResult); else None."""
        if not self.measures_stationarity():
            return None
        return stationarity(
            self.V,
            factors["W"],
            factors["H"],
            sparseness_w=self.params.get("sparseness_w"),
            sparseness_h=self.params.get("sparseness_h"),
            average_sparseness=self.params.get("average_sparseness", False),
        )["max"]

    def sparseness(self, X, axis):
        """:func:`~nmfsc.sparseness.sparseness_or_nan` of X's columns (rows).

        For data that is not dense in memory, a few vectors at a time, so that
        its temporaries stay small next to a tall W (same values to rounding);
        dense data keeps the one call (and its bits).
        """
        if not isinstance(self.data, ScaledData):
            return sparseness_or_nan(X, axis)
        count = X.shape[1 - axis]
        parts = [
            sparseness_or_nan(X[:, j : j + 4] if axis == 0 else X[j : j + 4], axis)
            for j in range(0, count, 4)
        ]
        return np.concatenate(parts)


#: The objective is reported in V's units when ``scale**power`` lies within
#: ``10**±OBJECTIVE_EXPONENT_LIMIT``; every normalised objective (at most
#: ``N T / 2``, at least ~1e-150 for any useful fit) then stays a normal float64.
OBJECTIVE_EXPONENT_LIMIT = 150


def objective_factor(scale, power):
    """``(factor, units)``: the recorded objective is ``factor`` times that of V / s.

    ``(scale**power, "V")`` when that factor lies within 1e±150, so that the
    history is in V's units (the same numbers as ever); otherwise ``(1.0,
    "V / scale")``: the objective of the normalised problem, because V's own
    would overflow to inf or underflow to 0 (and the stopping rule would see
    zeros). The choice depends on the scale alone, so it is the same for the
    whole run and for a resumed one.
    """
    if abs(power * math.log10(scale)) <= OBJECTIVE_EXPONENT_LIMIT:
        return scale**power, "V"
    return 1.0, "V / scale"


def in_data_units(W_normalised, scale, *, in_place):
    """``W_normalised * scale``, the basis in V's units; an error if that overflows.

    ``in_place`` multiplies the run's own array (the run is over) to spare a
    copy of a tall W.
    """
    with np.errstate(over="ignore"):
        W = np.multiply(W_normalised, scale, out=W_normalised if in_place else None)
    if not np.isfinite(W).all():
        raise FloatingPointError(
            f"W in V's units overflows {W.dtype} (max(V) = {scale:.3g}): divide V by a "
            "power of ten (e.g. 1e10) and multiply W by it afterwards"
        )
    return W
