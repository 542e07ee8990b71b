"""What every solver returns, and the warning it gives when it did not converge."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "ConvergenceWarning",
    "DegenerateFitWarning",
    "IterationState",
    "NMFResult",
    "degenerate_counts",
    "degenerate_message",
]


class ConvergenceWarning(UserWarning):
    """A solver stopped before its convergence test was met.

    Given for the stop reasons ``"max_iter"``, ``"max_time"`` and
    ``"interrupted"``; the message names the limit and how to raise it.

    See Also
    --------
    NMFResult : ``stop_reason`` says which limit stopped the run.
    DegenerateFitWarning : The other warning a fit can give.
    nmfsc.solvers.stationarity.stationarity : How far a fit is from stationary.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from nmfsc import ConvergenceWarning, nmf_euclidean
    >>> V = np.random.default_rng(0).random((20, 30))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = nmf_euclidean(V, 3, random_state=0, max_iter=2)
    >>> res.stop_reason, caught[0].category is ConvergenceWarning
    ('max_iter', True)
    >>> print(caught[0].message)
    nmf_euclidean stopped after 2 iterations without converging: max_iter=2 reached; ...

    A run kept short on purpose can silence it:

    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", ConvergenceWarning)
    ...     res = nmf_euclidean(V, 3, random_state=0, max_iter=2)
    """


class DegenerateFitWarning(UserWarning):
    """A fit left samples with all-zero coefficients or components unused.

    A dead sample is a column of V whose column of H is all zero (``W H`` is
    zero there) although some basis vector overlaps it (:math:`W^T v_j` has a
    positive entry, so a coefficient would lower the error); a component whose
    column of W or row of H is all zero adds nothing to the fit. With
    multiplicative updates (nmf_sc's unconstrained factor, and the projection's
    zeros for a very sparse target) a zero never moves again, so such a fit can
    stop "converged" far above the optimum. The message names how many; for
    ``nmf_sc(solver="hoyer")`` it suggests ``solver="accelerated"`` (block
    coordinate descent, which can revive a zero row or column). The counts are
    also in ``NMFResult.dead_samples`` and
    ``NMFResult.unused_components``.

    See Also
    --------
    ConvergenceWarning : The run stopped before its convergence test was met.
    NMFResult : The factors, with their zero rows and columns.

    Examples
    --------
    A sparse target on sparse data leaves some samples without coefficients:

    >>> import warnings
    >>> import numpy as np
    >>> from nmfsc import DegenerateFitWarning, nmf_sc
    >>> rng = np.random.default_rng(0)
    >>> V = rng.random((30, 40)) * (rng.random((30, 40)) < 0.1)  # mostly zeros
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = nmf_sc(V, 4, sparseness_w=0.9, random_state=0, tol=1e-4)
    >>> caught[0].category is DegenerateFitWarning, res.dead_samples > 0
    (True, True)
    >>> print(caught[0].message)
    nmf_sc left ... of 40 samples with all-zero coefficients (columns of H) ...
    >>> nmf_sc(V, 4, sparseness_w=0.9, random_state=0, tol=1e-4, solver="accelerated").dead_samples
    0
    """


@dataclass(frozen=True, repr=False)
class NMFResult:
    """The factors of ``V ~ W H`` and the record of the run that found them.

    Attributes
    ----------
    W : ndarray, shape (N, M)
        Basis vectors in columns, in the units of the ``V`` passed in (the
        solvers work on ``V / max(V)`` and return ``W * max(V)``), so that
        ``W @ H`` approximates ``V`` itself.
    H : ndarray, shape (M, T)
        Coefficients, one row per component; unchanged by the rescaling.
    objective : ndarray, shape (n_iter + 1,)
        The solver's objective at the start (index 0) and after every
        iteration, in the units given by ``objective_units``: normally those
        of ``V`` (the objective of the normalised problem times ``scale**2``
        for the Euclidean solvers, ``scale`` for the divergence solvers); see
        each solver for its objective.
    times : ndarray, shape (n_iter + 1,)
        Cumulative seconds of the iteration loop at each entry of
        ``objective`` (0 at the start; a resumed run continues the count).
    sparseness_W : ndarray, shape (M,)
        Hoyer's sparseness of every column of W (NaN for an all-zero column).
    sparseness_H : ndarray, shape (M,)
        Hoyer's sparseness of every row of H (NaN for an all-zero row).
    n_iter : int
        Completed iterations (counting those before a resume).
    converged : bool
        True when the solver's own convergence test stopped it.
    stop_reason : str
        ``"tol"`` (relative decrease below ``tol``), ``"step_size"`` (nmf_sc's
        step size fell below 1e-200 once the objective had stopped falling),
        ``"stalled"`` (the same while it still fell by more than ``tol``
        over the window: not converged), ``"max_iter"``, ``"max_time"``,
        ``"callback"`` or ``"interrupted"`` (KeyboardInterrupt).
    solver : str
        The solver's name, e.g. ``"nmf_sc"``.
    params : dict
        The settings of the run (n_components, the solver's own parameters and
        the stopping settings).
    scale : float
        ``max(V)``, the factor between the internal and the returned W.
    objective_units : {"V", "V / scale"}
        ``"V"``: ``objective`` is in V's units. ``"V / scale"``: it is the
        objective of the normalised data ``V / max(V)``, because in V's units it
        would overflow or underflow float64 (when ``scale**2``, or ``scale``
        for the divergence solvers, lies outside 1e-150 to 1e150). Every other
        attribute is in V's units (or scale-free) whatever the scale.
    step_sizes : tuple of float or None
        ``(mu_W, mu_H)`` at the end of an nmf_sc run, None for other solvers.
    relative_error : float
        ``||V - W H||_F / ||V||_F``, computed on the normalised data (the same
        number, finite at any scale of V).
    dead_samples : int or None
        Samples whose coefficients (column of H) are all zero although a
        basis vector overlaps them (a positive entry of :math:`W^T v_j`: a
        coefficient would lower the error); the fit does not represent them.
        None when not counted: a Dask array H, or nmf_sc with ``sparseness_h``
        (H's zeros are then the constraint's: rows with few non-zeros must
        leave some samples at zero).
    unused_components : int
        Components whose column of W or row of H is all zero. nmf_sc warns
        with :class:`DegenerateFitWarning` when either count is above zero.
    stationarity : float or None
        How far the fit is from a stationary point of its problem: the larger
        of W's and H's projected gradient, each relative to its gradient's
        terms (:func:`nmfsc.solvers.stationarity.stationarity`; 0 at a
        stationary point, in [0, 1]). A rate of decrease that falls below
        ``tol`` says the run slowed down; this says how far it still is. For
        the squared-error solvers on V in memory, of the masked objective
        with a mask (:func:`~nmfsc.solvers.stationarity.masked_stationarity`);
        None otherwise.

    See Also
    --------
    nmf_sc : A solver that returns one (as do the other four).
    SparseNMF : Keeps the result of its fit as ``result_``.
    nmfsc.solvers.IterationState : What a callback sees during the run.
    sparseness_summary : The sparseness of the factors of a result.
    ConvergenceWarning : Warned when ``stop_reason`` is a limit.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc import nmf_euclidean
    >>> V = np.random.default_rng(0).random((20, 30))
    >>> res = nmf_euclidean(V, 3, random_state=0, tol=1e-3)
    >>> res.W.shape, res.H.shape, res.solver, res.stop_reason, res.converged
    ((20, 3), (3, 30), 'nmf_euclidean', 'tol', True)
    >>> len(res.objective) == len(res.times) == res.n_iter + 1  # the start, then each iteration
    True
    >>> error = np.linalg.norm(V - res.W @ res.H) / np.linalg.norm(V)  # W is in V's units
    >>> bool(np.isclose(res.relative_error, error))
    True
    """

    W: np.ndarray
    H: np.ndarray
    objective: np.ndarray
    times: np.ndarray
    sparseness_W: np.ndarray
    sparseness_H: np.ndarray
    n_iter: int
    converged: bool
    stop_reason: str
    solver: str
    params: dict = field(default_factory=dict)
    scale: float = 1.0
    objective_units: str = "V"
    step_sizes: tuple | None = None
    relative_error: float = float("nan")
    dead_samples: int | None = 0
    unused_components: int = 0
    stationarity: float | None = None

    def __repr__(self):
        N, M = self.W.shape
        T = self.H.shape[1]
        final = self.objective[-1] if len(self.objective) else float("nan")
        return (
            f"NMFResult(solver={self.solver!r}, V {N}x{T}, M={M}, n_iter={self.n_iter}, "
            f"stop_reason={self.stop_reason!r}, converged={self.converged}, "
            f"objective={final:.6g}, relative_error={self.relative_error:.4g})"
        )


@dataclass(frozen=True)
class IterationState:
    """What a ``callback`` sees after every iteration (read-only arrays).

    Attributes
    ----------
    iteration : int
        Iterations completed so far.
    objective : float
        The objective after this iteration, in the units of ``V``.
    W : ndarray, shape (N, M)
        The current basis, in the units of ``V`` (a fresh read-only array).
    H : ndarray, shape (M, T)
        The current coefficients (a read-only view).
    elapsed : float
        Seconds of the loop so far.

    See Also
    --------
    nmfsc.nmf_sc : Its ``callback`` parameter (the other solvers' too).
    nmfsc.NMFResult : What the run returns when it stops.

    Examples
    --------
    A callback that records the objective and stops the run after five
    iterations (returning True stops it):

    >>> import numpy as np
    >>> from nmfsc import nmf_euclidean
    >>> V = np.random.default_rng(0).random((20, 30))
    >>> seen = []
    >>> def record(state):
    ...     seen.append((state.iteration, state.objective))
    ...     return state.iteration == 5
    >>> res = nmf_euclidean(V, 3, random_state=0, callback=record)
    >>> [iteration for iteration, _ in seen], res.stop_reason
    ([1, 2, 3, 4, 5], 'callback')
    >>> bool(np.allclose([objective for _, objective in seen], res.objective[1:]))
    True
    """

    iteration: int
    objective: float
    W: np.ndarray
    H: np.ndarray
    elapsed: float


def degenerate_counts(W, H, data_columns):
    r"""``(dead_samples, unused_components)`` of a fit (see :class:`NMFResult`).

    A dead sample j has an all-zero column of H although the fit would gain by
    giving it coefficients: :math:`(W^T V)_{:j}` has a positive entry, so the
    gradient of :math:`\tfrac12\lVert V - WH\rVert_F^2` in :math:`H_{:j}` is
    negative somewhere (a column of V that no basis vector touches is rightly
    left at zero and not counted). ``data_columns(indices)`` gives those
    columns of V (dense or scipy.sparse; only the all-zero columns of H are
    read). An unused component has an all-zero column of W or row of H.
    ``dead_samples`` is None when H is not a NumPy array (a Dask array: not
    counted).
    """
    unused_w = ~np.any(W != 0, axis=0)
    if not isinstance(H, np.ndarray):
        return None, int(np.count_nonzero(unused_w))
    unused = unused_w | ~np.any(H != 0, axis=1)
    zero_columns = np.flatnonzero(~np.any(H != 0, axis=0))
    dead = 0
    for start in range(0, zero_columns.size, 1024):  # a block of V's columns at a time
        part = data_columns(zero_columns[start : start + 1024])
        gain = np.asarray(part.T @ W)  # (W^T V)^T for these columns, sparse V too
        dead += int(np.count_nonzero(np.any(gain > 0, axis=1)))
    return dead, int(np.count_nonzero(unused))


def degenerate_message(result, name, hint):
    """The :class:`DegenerateFitWarning` text for ``result`` (None: nothing to say,
    or no ``hint``, the solver's remedy)."""
    dead, unused = result.dead_samples or 0, result.unused_components
    if hint is None or not (dead or unused):
        return None
    N, M = result.W.shape
    T = result.H.shape[1]
    what = [f"{dead} of {T} samples with all-zero coefficients (columns of H)"] if dead else []
    if unused:
        what.append(f"{unused} of {M} components unused (zero in W or H)")
    return (
        f"{name} left {' and '.join(what)} after {result.n_iter} iterations "
        f"(stop: {result.stop_reason}); {hint}"
    )
