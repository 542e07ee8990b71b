"""Docstring sections shared by every solver, written once.

A solver's docstring holds the placeholders ``%(data)s`` (V, n_components),
``%(options)s`` (start, stopping, callback, progress, checkpoints) and
``%(returns)s``, each alone on a line indented by four spaces, as the
sections' text; :func:`document` fills them in.
"""

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["DIVERGENCE_UNITS", "EUCLIDEAN_UNITS", "MASK", "OPTIONS", "document"]

F = TypeVar("F", bound=Callable[..., Any])

DATA = """\
    V : array_like or scipy.sparse matrix / array, shape (N, T)
        Non-negative data, one sample per column. float64 and float32 are kept
        (float32 V gives float32 W and H, products in float32); other dtypes
        become float64. scipy.sparse CSR and CSC (matrices or arrays; other
        formats are converted to CSR) are used as they are, never made dense,
        and so are memory-mapped arrays (``np.load(path, mmap_mode="r")``).
        Internally divided by ``max(V)`` (for sparse and mapped V inside the
        products, so without a copy).
    n_components : int
        M, the number of basis vectors (columns of W, rows of H)."""

#: The ``mask`` parameter, after %(data)s in the solvers that take one.
MASK = """
    mask : bool array of V's shape, "stored", Observed or None, default None
        Where V was observed (True); an :class:`~nmfsc.observed.Observed`
        says the same as one of the other two. The objective is then summed over the
        observed entries only, :math:`\\tfrac12 \\lVert \\Omega \\odot (V - W H)
        \\rVert_F^2`, V is divided by its largest observed entry, and the
        unobserved entries of V are never read (they may be NaN). ``"stored"``,
        for scipy.sparse V: the stored entries (explicit zeros included) are
        the observed ones, and neither V nor the mask is made dense. The
        updates are those of the unmasked solver with the masked gradient and
        weighted multiplicative updates (:doc:`/solvers`, "Missing values"). Not on
        Dask arrays."""

OPTIONS = """\
    init : {"random", "nndsvd", "nndsvda", "nndsvdar", "custom"}, default "random"
        The start. ``"random"``: ``W = |randn(N, M)|``, then ``H = |randn(M, T)|``,
        absolute values of standard normal draws from ``random_state``, as
        Hoyer's MATLAB code starts (the paper's).
        ``"nndsvd"``: Boutsidis & Gallopoulos' non-negative double SVD of
        ``V / max(V)`` (exact SVD for dense V up to 10^7 entries, else a
        randomized one seeded by ``random_state``); its zeros stay zero under
        multiplicative updates, so ``"nndsvda"`` (zeros filled with the mean
        of ``V / max(V)``) or ``"nndsvdar"`` (with small random values) suit
        those better. ``"custom"``: ``W_init`` and ``H_init``, both required.
        Whatever the start, the solver's own start-up is then applied (nmf_sc
        projects it onto the constraints, as the paper does its random start).
    W_init, H_init : array_like, shape (N, M) / (M, T), optional
        Starting factors in the units of V (W_init is divided by ``max(V)``).
        Each replaces its random (or NNDSVD) draw; the solver's own start-up
        (if any) is then applied as to a random start.
    random_state : None, int or numpy.random.Generator
        Seed of the random start ``W = |randn(N, M)|`` then
        ``H = |randn(M, T)|``, drawn from ``numpy.random.default_rng(random_state)``
        on the normalised data (both are always drawn, so giving W_init alone
        leaves H as it would have been). A Generator is advanced.
    max_iter : int, default 10000
        Iteration limit (stop reason ``"max_iter"``, with a ConvergenceWarning).
    tol : float, default 1e-5
        Converged (stop reason ``"tol"``) after the first iteration k with
        ``|E[k-window] - E[k]| < tol * |E[k-window]|``. ``tol=0`` never stops
        this way.
    window : int, default 10
        Iterations over which the relative change is measured.
    stationarity_tol : float or None, default None
        With a value, the run is converged (stop reason ``"tol"``) only where
        the fit is stationary to it: where
        :attr:`~nmfsc.solvers.NMFResult.stationarity` (the projected
        gradient relative to the gradient's terms, 0 at a stationary point)
        is at most ``stationarity_tol``, checked every ``window`` iterations;
        the rate rule of ``tol`` then stops nothing, and a run that never gets
        there stops by ``max_iter`` or ``max_time``, not converged. For the
        solvers of the squared error on V in memory, with a ``mask`` or
        without (a ValueError otherwise). None: ``tol``'s rate rule alone (the paper's,
        which the figures use).
    max_time : float or None, default None
        Wall-clock limit in seconds of the iteration loop, checked before each
        iteration; a resumed run counts the time before its checkpoint (stop
        reason ``"max_time"``, with a ConvergenceWarning).
    callback : callable or None
        Called after every iteration with an :class:`~nmfsc.solvers.IterationState`
        (``iteration``, ``objective``, ``W`` in V's units, ``H``, ``elapsed``;
        read-only arrays). Returning True (or a true NumPy bool, or 1)
        stops the run (stop reason ``"callback"``: not converged, no
        warning); False or None goes on, anything else is a TypeError. The arrays it is given
        stay as they are, so it may keep them; for that, nmf_sc writes its
        line-search trials into new arrays, where a run without a callback
        reuses the buffers of earlier iterates. A callback object whose
        attribute ``keeps_iterates`` is False declares that it keeps no
        array, and the run reuses its buffers as without one.
    progress : bool, default False
        Show a tqdm progress bar with the objective and its relative change.
    checkpoint : str or Path or None
        File the state is saved to every ``checkpoint_every`` iterations (and
        every ``checkpoint_seconds`` seconds if given), atomically (a unique
        temporary file beside it, then rename), and once more when the run
        stops for any reason, KeyboardInterrupt included. The file is kept
        after the run. Its folder must exist and be writable (checked before
        the first iteration).
    checkpoint_every : int, default 50
        Iterations between saves.
    checkpoint_seconds : float or None, default None
        Also save when this many seconds have passed since the last save.
    resume : bool, default False
        Continue from ``checkpoint`` if the file exists (else start afresh).
        The continued run is bit-identical (W, H, objective) to an
        uninterrupted one; a checkpoint written for other data, another
        solver, other parameters or another integer seed is refused with
        :class:`~nmfsc.CheckpointMismatchError` (a ValueError). A start
        that no integer seed names (``random_state`` None or a Generator,
        on either side) is not compared: the checkpoint's run continues.
        The stopping options may differ (e.g. a larger max_iter)."""

RETURNS = """\
    NMFResult
        ``W`` in V's units (``max(V)`` times the internal W, so that
        ``W @ H ~ V``), ``H``, the objective history ``objective``, cumulative
        ``times``, the sparseness of W's columns and H's rows, ``n_iter``,
        ``converged``, ``stop_reason``, ``step_sizes`` and ``relative_error``
        (``||V - W H||_F / ||V||_F``); see :class:`nmfsc.NMFResult`.
        The objective is in V's units: %(units)s.

    Warns
    -----
    ConvergenceWarning
        When stopped by max_iter, max_time or KeyboardInterrupt. A
        KeyboardInterrupt returns the last complete iterate (after saving the
        checkpoint, if any) instead of propagating."""

EUCLIDEAN_UNITS = """``max(V)**2`` times that of the normalised
        problem, i.e. exactly ``0.5 * ||V - W @ H||_F**2`` of the returned
        factors"""
DIVERGENCE_UNITS = """``max(V)`` times that of the normalised problem,
        so that its divergence term is ``D(V || W @ H)`` of the returned
        factors"""


def document(units: str, mask: bool = False) -> Callable[[F], F]:
    """Fill a solver's ``%(data)s``, ``%(options)s`` and ``%(returns)s``; with
    ``mask``, the ``mask`` parameter follows the data's."""

    def decorate(func: F) -> F:
        func.__doc__ = (
            (func.__doc__ or "")
            .replace("    %(data)s", DATA + (MASK if mask else ""))
            .replace("    %(options)s", OPTIONS)
            .replace("    %(returns)s", RETURNS.replace("%(units)s", units))
        )
        return func

    return decorate
