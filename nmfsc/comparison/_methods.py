r"""The method table: every method :func:`nmfsc.compare` can run, and how to run one.

Every run starts from the same ``(W0, H0)`` (see :func:`starting_point`) and
returns a :class:`Run`: the factors, the stopping record and the curve of the
relative error :math:`\lVert V - WH \rVert_F / \lVert V \rVert_F` against
iterations and seconds.

Curves. For the solvers whose objective is :math:`\tfrac12\lVert V - WH\rVert_F^2`
(``nmf_sc``, ``nmf_euclidean``) the curve is read off the solver's own
objective record, :math:`\sqrt{2E}/\lVert V\rVert_F`, at no cost. For the others
a callback evaluates the error after iterations 1, 2, 3, 4, 5, 7, 9, 12, ...
(each about 1.25 times the last: 34 points in 2000 iterations) and at the
end; the callback's own time is subtracted from the clock.

scikit-learn. ``sklearn.decomposition.NMF`` is fitted to ``X = V.T``
(samples x features), so its ``W`` is our ``H.T`` and its ``components_`` our
``W.T``; it starts from ``W=H0.T, H=W0.T`` (``init="custom"``) and runs as one
``fit_transform`` call with the same ``max_iter`` and ``tol``, but under its
own stopping rule: ``"mu"`` stops when the decrease of
:math:`\lVert X - WH\rVert_F` over the last 10 iterations, relative to its
value at the start, is below ``tol`` (tested every 10 iterations); ``"cd"``
when the projected-gradient violation falls below ``tol`` times its first
value. Both are looser than nmfsc's rule (relative to the current objective),
so scikit-learn may stop earlier at the same ``tol``. scikit-learn has no
per-iteration hook: its curve has the start and the end only, and
``max_time`` does not apply to it. (Running it in warm-started chunks to get a
curve and nmfsc's rule adds its per-call checks and error evaluations to its
time, a large share of it (benchmarks/README.md), so the comparison runs it as
its users do.)

scipy.sparse V is passed to every method as it is (nmfsc's solvers and
scikit-learn's NMF both take it) and the errors come from sparse products
(:mod:`nmfsc.comparison._errors`): V is never made dense.

The first point of nmf_sc's curve is its start after its own initialisation
(W0's columns projected to the target sparseness, H0's rows scaled), so it
differs from the other methods' shared starting error.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from nmfsc.comparison._errors import frobenius_norm, relative_error
from nmfsc.solvers import ConvergenceWarning
from nmfsc.solvers.framework import progress_bar, random_start
from nmfsc.solvers.registry import compared_solvers, solver

__all__ = [
    "METHODS",
    "NMFSC_METHODS",
    "SKLEARN_METHODS",
    "Run",
    "available_methods",
    "run_method",
    "run_sklearn",
    "sklearn_available",
    "starting_point",
]

#: Methods backed by nmfsc's own solvers, in the order of their table
#: (:data:`nmfsc.solvers.registry.SOLVERS`).
NMFSC_METHODS = compared_solvers()
#: Methods backed by scikit-learn (left out when it is not installed).
SKLEARN_METHODS = ("sklearn_mu", "sklearn_cd", "sklearn_cd_l1")
#: Every method name :func:`nmfsc.compare` accepts, in table order.
METHODS = NMFSC_METHODS + SKLEARN_METHODS


@dataclass
class Run:
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
    SPEC's random start, with W0 in the units of V (the solvers work on
    ``V / max(V)``, where this W0 is ``|R_W|``).

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


def run_method(method, V, n_components, start, *, params, max_iter, tol, max_time, progress):
    """Run one of nmfsc's solvers from ``start = (W0, H0)``.

    Parameters
    ----------
    method : str
        One of :data:`NMFSC_METHODS`.
    params : dict
        The solver's own settings (``sparseness_w``/``sparseness_h``, ``alpha``).
    max_iter, tol, max_time, progress
        Passed to the solver (``window`` is the solvers' default, 10).

    Returns
    -------
    Run
    """
    spec = solver(method)
    W0, H0 = start
    curve = None if spec.squared_error else _Curve(V, W0, H0)  # None: read off E
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
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
            **params,
        )
    if result.stop_reason == "interrupted":  # Ctrl-C stops the comparison, not one run
        raise KeyboardInterrupt
    wall = time.perf_counter() - t0 - (curve.overhead if curve else 0.0)
    run = Run(method, result.W, result.H, int(result.n_iter), result.stop_reason, wall)
    run.params = dict(params)
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
            run.errors.append(float(result.relative_error))
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
    r"""scikit-learn's NMF from ``start``, one call (see the module notes).

    Parameters
    ----------
    solver : {"cd", "mu"}
        scikit-learn's solver.
    penalty : {None, "W", "H"}
        The factor (in *our* orientation) that gets the L1 penalty
        :math:`\alpha\,\lVert\cdot\rVert_1` (``l1_ratio=1``): ``"W"`` is
        scikit-learn's ``alpha_H`` (our W is its ``components_.T``), ``"H"`` its
        ``alpha_W``. scikit-learn scales the weight by the other dimension
        (``alpha_H * n_samples``, ``alpha_W * n_features``).
    alpha : float
        The L1 weight.
    max_iter, tol
        scikit-learn's own (its stopping rule); ``max_time`` is not used.

    Returns
    -------
    Run
    """
    from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning

    label = label or f"sklearn_{solver}"
    W0, H0 = start
    alpha_W = float(alpha) if penalty == "H" else 0.0
    alpha_H = float(alpha) if penalty == "W" else 0.0
    model = _sklearn_model(solver, n_components, alpha_W, alpha_H, max_iter, tol)
    bar = progress_bar(progress, label, max_iter)
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkConvergenceWarning)
            coef = model.fit_transform(  # scikit-learn wants the start in X's dtype
                V.T, W=np.array(H0.T, dtype=V.dtype), H=np.array(W0.T, dtype=V.dtype)
            )
    finally:
        wall = time.perf_counter() - t0
        if bar is not None:
            bar.update(max_iter)
            bar.close()
    n_iter = int(model.n_iter_)
    norm_V = frobenius_norm(V)
    run = Run(
        label,
        model.components_.T.copy(),
        coef.T.copy(),
        n_iter,
        "tol" if n_iter < max_iter else "max_iter",
        wall,
    )
    run.iterations = [0, n_iter]
    run.times = [0.0, wall]
    run.errors = [relative_error(V, W0, H0, norm_V), float(model.reconstruction_err_) / norm_V]
    run.params = {"alpha": float(alpha), "penalty_on": penalty} if penalty else {}
    return run
