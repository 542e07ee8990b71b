r"""The method table: every method :func:`nmfsc.compare` can run, and how to run one.

Every run starts from the same ``(W0, H0)`` (see :func:`starting_point`) and
returns a :class:`MethodRun`: the factors, the stopping record and the curve of the
relative error :math:`\lVert V - WH \rVert_F / \lVert V \rVert_F` against
iterations and seconds.

Curves. For the solvers whose objective is :math:`\tfrac12\lVert V - WH\rVert_F^2`
(``nmf_sc``, ``nmf_sc_accelerated``, ``nmf_euclidean``) fitted to all of V
the curve is read off the solver's own objective record,
:math:`\sqrt{2E}/\lVert V\rVert_F`, at no cost. For the others, and for
those fitted through a mask (held-out or missing entries: their objective
covers the training entries only, where the table measures the filled V),
a callback evaluates the table's error after iterations 1, 2, 3, 4, 5, 7, 9, 12, ...
(each about 1.25 times the last: 34 points in 2000 iterations) and at the
end; the callback's own time is subtracted from the clock.

scikit-learn. ``sklearn.decomposition.NMF`` is fitted to ``X = V.T``
(samples x features), so its ``W`` is our ``H.T`` and its ``components_`` our
``W.T``; it starts from ``W=H0.T, H=W0.T`` (``init="custom"``) and runs under
nmfsc's stopping rule, not its own: in chunks of ``window`` (10) iterations
with scikit-learn's ``tol=0`` (so a chunk runs all its iterations), each chunk
continued from the last one's factors (``init="custom"`` again: the iterates
are those of one long call), until the relative decrease of its own objective
over the last chunk,

.. math:: \tfrac12 \lVert V - WH \rVert_F^2
          + \alpha\,(T \lVert W \rVert_1 + N \lVert H \rVert_1)

(:math:`\alpha` the L1 weight, on both factors with scikit-learn's scaling,
0 without a penalty), falls below ``tol``, or ``max_iter``, or
``max_time``, as for nmfsc's solvers (:func:`nmfsc.solvers.framework.tol_reached`).
scikit-learn's own rules (``"cd"``: projected-gradient violation relative to
its first value; ``"mu"``: decrease relative to the initial error) are looser
and can stop it after 2 iterations far from convergence, so they are not
used. Its curve has a point after every chunk; the time of evaluating the
objective is not counted, scikit-learn's per-call input checks are.

scipy.sparse V is passed to every method as it is (nmfsc's solvers and
scikit-learn's NMF both take it) and the errors come from sparse products
(:mod:`nmfsc.comparison._errors`): V is never made dense.

The first point of nmf_sc's curve read off its objective is its start after
its own initialisation (W0's columns projected to the target sparseness,
H0's rows scaled), so it differs from the other methods' shared starting
error.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from nmfsc.comparison._errors import frobenius_norm, relative_error
from nmfsc.solvers import ConvergenceWarning, DegenerateFitWarning
from nmfsc.solvers.dispatch import method_name
from nmfsc.solvers.framework import progress_bar, random_start, tol_reached
from nmfsc.solvers.registry import SOLVERS, compared_solvers, solver
from nmfsc.solvers.stationarity import stationarity

__all__ = [
    "METHODS",
    "METHOD_DESCRIPTIONS",
    "NMFSC_METHODS",
    "SKLEARN_METHODS",
    "MethodRun",
    "available_methods",
    "failed_run",
    "run_method",
    "run_sklearn",
    "sklearn_available",
    "starting_point",
]

#: Methods backed by nmfsc's own solvers, in the order of their table
#: (:data:`nmfsc.solvers.registry.SOLVERS`): ``nmf_sc`` is
#: ``nmf_sc(solver="hoyer")``, the paper's algorithm, ``nmf_sc_accelerated``
#: ``nmf_sc(solver="accelerated")``, the same problem from the same start.
NMFSC_METHODS = compared_solvers()
#: Methods backed by scikit-learn (left out when it is not installed).
SKLEARN_METHODS = ("sklearn_mu", "sklearn_cd", "sklearn_cd_l1")
#: Every method name :func:`nmfsc.compare` accepts, in table order.
METHODS = NMFSC_METHODS + SKLEARN_METHODS


def _call_keywords(spec):
    """``solver="<variant>"`` and the row's fixed keywords, as a call writes them."""
    keywords = [("solver", spec.variant), *spec.fixed_keywords]
    return ", ".join(f"{name}={value!r}".replace("'", '"') for name, value in keywords)


#: One line per method that names what a row of the report is.
METHOD_DESCRIPTIONS = {
    **{
        method_name(s): (f"{s.name}({_call_keywords(s)}), " if s.variant else "") + s.description
        for s in SOLVERS
        if s.compared
    },
    "sklearn_mu": 'scikit-learn NMF(solver="mu")',
    "sklearn_cd": 'scikit-learn NMF(solver="cd")',
    "sklearn_cd_l1": 'scikit-learn NMF(solver="cd") with an L1 penalty matched to nmf_sc',
}


@dataclass
class MethodRun:
    """One method's run from one start: factors, stopping record and curve."""

    method: str
    W: np.ndarray
    H: np.ndarray
    n_iter: int
    stop_reason: str
    time_s: float
    iterations: list = field(default_factory=list)
    times: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    params: dict = field(default_factory=dict)
    #: Why the run failed (an exception's one line), or None when it ran.
    failure: str | None = None
    #: How far the fit is from stationary (NMFResult.stationarity; a masked
    #: fit's on the entries it fits), None where not measured (an objective
    #: other than the squared error).
    stationarity: float | None = None


def failed_run(method, V, n_components, error):
    """The :class:`MethodRun` of a method that raised ``error``: all-zero factors of
    the right shapes, no curve, ``stop_reason`` ``"failed"`` and the error's
    one line in ``failure``, so that the other methods' rows stand."""
    N, T = V.shape
    dtype = V.dtype if np.dtype(V.dtype).kind == "f" else np.float64
    W, H = np.zeros((N, n_components), dtype), np.zeros((n_components, T), dtype)
    line = " ".join(str(error).split()) or "no message"
    return MethodRun(method, W, H, 0, "failed", 0.0, failure=f"{type(error).__name__}: {line}")


def sklearn_available() -> bool:
    """True when ``sklearn.decomposition.NMF`` can be imported."""
    try:
        from sklearn.decomposition import NMF  # noqa: F401
    except ImportError:
        return False
    return True


def available_methods() -> tuple:
    """The methods that can run here: all of :data:`METHODS`, less scikit-learn's
    when it is not installed."""
    return METHODS if sklearn_available() else NMFSC_METHODS


def starting_point(V, n_components, seed):
    r"""The start shared by every method for ``seed``.

    :math:`W_0 = \max(V)\,|R_W|`, :math:`H_0 = |R_H|` with :math:`R_W` (N x M)
    and :math:`R_H` (M x T) standard normal from ``numpy.random.default_rng(seed)``:
    the solvers' random start (Hoyer's MATLAB code's), with W0 in the units
    of V (the solvers work on ``V / max(V)``, where this W0 is ``|R_W|``).

    Returns
    -------
    (ndarray, ndarray)
        ``W0`` of shape (N, M) and ``H0`` of shape (M, T).
    """
    N, T = V.shape
    W0, H0 = random_start(seed, N, n_components, T)  # the solvers' own draw
    return W0 * float(V.max()), H0


class _Curve:
    """A solver callback sampling the relative error; its own time is not counted."""

    def __init__(self, V, W0, H0):
        self.V = V
        self.norm_V = frobenius_norm(V)
        self.overhead = 0.0
        self.next = 1
        self.iterations = [0]
        self.times = [0.0]
        self.errors = [self.error(W0, H0)]

    def error(self, W, H):
        return relative_error(self.V, W, H, self.norm_V)

    def __call__(self, state):
        if state.iteration >= self.next:
            now = time.perf_counter()
            self.iterations.append(int(state.iteration))
            self.times.append(float(state.elapsed) - self.overhead)
            self.errors.append(self.error(state.W, state.H))
            self.next = max(state.iteration + 1, int(np.ceil(1.25 * state.iteration)))
            self.overhead += time.perf_counter() - now
        return False


def run_method(
    method,
    V,
    n_components,
    start,
    *,
    params,
    max_iter,
    tol,
    max_time,
    progress,
    observed=None,
    scored=None,
):
    """Run one of nmfsc's solvers from ``start = (W0, H0)``.

    Parameters
    ----------
    method : str
        One of :data:`NMFSC_METHODS`.
    params : dict
        The solver's own settings (``sparseness_w``/``sparseness_h``, ``alpha``).
    max_iter, tol, max_time, progress
        Passed to the solver (``window`` is the solvers' default, 10).
    observed : Observed, optional
        The entries the solver fits (its ``mask``; the training entries of a
        held-out comparison); None: every entry.
    scored : ndarray or sparse matrix, optional
        The V the table's errors are measured on, where it is not ``V`` (a
        sparse V's training entries are fitted, the filled V scored); the
        curve's errors are those of this matrix.

    Returns
    -------
    MethodRun
    """
    spec = solver(method)
    W0, H0 = start
    scored = V if scored is None else scored
    # A fit's own objective is the curve where it is the table's error: not
    # for a masked fit, whose objective leaves the hidden entries out.
    own = spec.squared_error and observed is None and scored is V
    curve = None if own else _Curve(scored, W0, H0)  # None: read off E
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the row has the stop
        warnings.simplefilter("ignore", DegenerateFitWarning)  # and the dead samples
        result = spec.run(
            V,
            n_components,
            W_init=W0,
            H_init=H0,
            max_iter=max_iter,
            tol=tol,
            max_time=max_time,
            callback=curve,
            progress=progress,
            **({} if observed is None else {"mask": observed}),
            **params,
        )
    if result.stop_reason == "interrupted":  # Ctrl-C stops the comparison, not one run
        raise KeyboardInterrupt
    wall = time.perf_counter() - t0 - (curve.overhead if curve else 0.0)
    run = MethodRun(method, result.W, result.H, int(result.n_iter), result.stop_reason, wall)
    run.params = dict(params)
    run.stationarity = result.stationarity
    if curve is None:
        norm_V = frobenius_norm(V)
        run.iterations = list(range(len(result.objective)))
        run.times = [float(t) for t in result.times]
        run.errors = [float(np.sqrt(max(2.0 * e, 0.0)) / norm_V) for e in result.objective]
    else:
        run.iterations, run.times, run.errors = curve.iterations, curve.times, curve.errors
        if run.iterations[-1] != run.n_iter:
            run.iterations.append(run.n_iter)
            run.times.append(float(result.times[-1]) - curve.overhead)
            run.errors.append(curve.error(result.W, result.H))
    return run


def _sklearn_model(solver, n_components, alpha_W, alpha_H, max_iter, tol):
    from sklearn.decomposition import NMF

    return NMF(
        n_components,
        init="custom",
        solver=solver,
        beta_loss="frobenius",
        tol=tol,
        max_iter=max_iter,
        alpha_W=alpha_W,
        alpha_H=alpha_H,
        l1_ratio=1.0,
    )


#: Iterations of one scikit-learn call: nmfsc's ``window``, over which the
#: stopping rule compares the objective.
SKLEARN_CHUNK = 10


def run_sklearn(
    V,
    n_components,
    start,
    *,
    solver="cd",
    penalty=None,
    alpha=0.0,
    max_iter,
    tol,
    max_time,
    progress,
    label=None,
):
    r"""scikit-learn's NMF from ``start``, to nmfsc's stopping rule (see the module notes).

    Parameters
    ----------
    solver : {"cd", "mu"}
        scikit-learn's solver.
    penalty : {None, "W", "H"}
        With ``"W"`` or ``"H"`` (in *our* orientation: the factor whose
        sparseness the weight is tuned for, :mod:`._matched`), the L1
        penalty :math:`\alpha` (``l1_ratio=1``) on both factors, as
        scikit-learn's ``alpha_W`` with its default ``alpha_H="same"``: on one
        factor alone the objective has no minimum (W / c, c H leaves W H and
        lowers the penalty without end), so a fit never converges and its
        sparseness is that of where ``max_iter`` stopped it. scikit-learn
        scales the weight by the other dimension (``alpha_H * n_samples``,
        ``alpha_W * n_features``): the objective's terms are ``alpha * T``
        times ``||W||_1`` and ``alpha * N`` times ``||H||_1``.
    alpha : float
        The L1 weight.
    max_iter, tol, max_time
        nmfsc's budgets and rule: stop when the objective's relative decrease
        over the last :data:`SKLEARN_CHUNK` iterations is below ``tol``.

    Returns
    -------
    MethodRun
        ``stop_reason`` ``"tol"`` (nmfsc's rule, or an exact fixed point,
        such as a factor the penalty set to zero: every component off),
        ``"max_iter"`` or ``"max_time"``.
    """
    from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning

    label = label or f"sklearn_{solver}"
    W0, H0 = start
    N, T = V.shape
    alpha_W = alpha_H = float(alpha) if penalty else 0.0  # scikit-learn's alpha_H="same"
    norm_V = frobenius_norm(V)
    X = V.T
    W_sk = np.array(H0.T, dtype=V.dtype)  # scikit-learn wants the start in X's dtype
    H_sk = np.array(W0.T, dtype=V.dtype)

    def objective(W, H):
        error = relative_error(V, W, H, norm_V)
        l1 = alpha_W * (T * float(np.abs(W).sum()) + N * float(np.abs(H).sum()))
        return 0.5 * (error * norm_V) ** 2 + l1, error

    E0, e0 = objective(H_sk.T, W_sk.T)
    history, iterations, times, errors = [E0], [0], [0.0], [e0]
    bar = progress_bar(progress, label, max_iter)
    n_iter, elapsed, stop = 0, 0.0, None
    try:
        while (stop := _sklearn_stop(history, n_iter, elapsed, max_iter, tol, max_time)) is None:
            chunk = min(SKLEARN_CHUNK, max_iter - n_iter)
            model = _sklearn_model(solver, n_components, alpha_W, alpha_H, chunk, 0.0)
            t0 = time.perf_counter()
            # invalid: scikit-learn's own reconstruction_err_ (unused here) takes the
            # square root of a rounding-negative error when a sparse X is fitted exactly.
            with warnings.catch_warnings(), np.errstate(invalid="ignore"):
                warnings.simplefilter("ignore", SkConvergenceWarning)
                W_sk = model.fit_transform(X, W=W_sk, H=H_sk)
            H_sk, done = model.components_, int(model.n_iter_)
            elapsed += time.perf_counter() - t0
            n_iter += done
            E, e = objective(H_sk.T, W_sk.T)
            history.append(E)
            iterations.append(n_iter)
            times.append(elapsed)
            errors.append(e)
            if bar is not None:
                bar.update(done)
            if done < chunk:  # scikit-learn's tol=0 rule: an exact fixed point
                stop = "tol"
                break
            if not (W_sk.any() and H_sk.any()):
                # A factor the penalty zeroed stays zero (an exact fixed point:
                # every component off), and scikit-learn refuses it as a start.
                stop = "tol"
                break
    finally:
        if bar is not None:
            bar.close()
    run = MethodRun(label, H_sk.T.copy(), W_sk.T.copy(), n_iter, stop, elapsed)
    run.iterations, run.times, run.errors = iterations, times, errors
    if not penalty:  # the squared error alone: its stationarity is nmfsc's measure
        run.stationarity = stationarity(V, run.W, run.H)["max"]
    run.params = {"alpha": float(alpha), "matched_on": penalty} if penalty else {}
    return run


def _sklearn_stop(history, n_iter, elapsed, max_iter, tol, max_time):
    """nmfsc's stop reason before the next chunk (``history``: the objective
    after every chunk of :data:`SKLEARN_CHUNK` iterations), or None."""
    if tol_reached(history, 1, tol):
        return "tol"
    if n_iter >= max_iter:
        return "max_iter"
    if max_time is not None and elapsed >= max_time:
        return "max_time"
    return None
