"""Input checks, the random start and small helpers shared by every solver."""

from __future__ import annotations

import numbers

import numpy as np

from nmfsc._validation import as_float_array, check_positive_int, check_sparseness

__all__ = [
    "check_data",
    "check_factor",
    "check_loop_options",
    "check_nonneg_real",
    "check_optional_sparseness",
    "expanded_objective",
    "random_start",
]


def check_data(V):
    """``V`` as a float64 array with at least one positive entry, and max(V).

    float32 (or integer) input is accepted and converted: the solvers compute
    in float64. scipy.sparse input is refused with a TypeError that says to
    call ``.toarray()`` (the updates are dense anyway).
    """
    V = as_float_array(V, "V", ndim=2)
    if np.any(V < 0):
        raise ValueError(f"V has negative entries; NMF needs V >= 0 (min(V) = {float(V.min())!r})")
    scale = float(V.max())
    if scale == 0.0:
        raise ValueError(f"V is all zeros (shape {V.shape}); there is nothing to factorize")
    return V, scale


def check_factor(X, name, shape):
    """A user-given W_init or H_init: finite, non-negative, of the right shape."""
    if X is None:
        return None
    X = as_float_array(X, name, ndim=2)
    if X.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {X.shape}")
    if np.any(X < 0):
        raise ValueError(f"{name} has negative entries; it must be >= 0")
    return X


def check_optional_sparseness(value, name):
    """None (unconstrained) or a real number in [0, 1]."""
    if value is None:
        return None
    return check_sparseness(value, name)


def check_nonneg_real(value, name, *, positive=False, allow_none=False):
    """A finite real number >= 0 (> 0 with ``positive``), or None if allowed."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (positive and value == 0):
        what = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be finite and {what}, got {value!r}")
    return value


def check_loop_options(
    max_iter, tol, window, max_time, callback, checkpoint_every, checkpoint_seconds
):
    """Validate the stopping and bookkeeping options common to every solver."""
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral):
        raise TypeError(f"max_iter must be a non-negative integer, got {max_iter!r}")
    if max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter!r}")
    tol = check_nonneg_real(tol, "tol")
    window = check_positive_int(window, "window")
    max_time = check_nonneg_real(max_time, "max_time", positive=True, allow_none=True)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {callback!r}")
    checkpoint_every = check_positive_int(checkpoint_every, "checkpoint_every")
    checkpoint_seconds = check_nonneg_real(
        checkpoint_seconds, "checkpoint_seconds", positive=True, allow_none=True
    )
    return int(max_iter), tol, window, max_time, checkpoint_every, checkpoint_seconds


def random_start(random_state, N, M, T):
    """SPEC's random start: ``W = |randn(N, M)|`` then ``H = |randn(M, T)|``.

    ``random_state`` is anything :func:`numpy.random.default_rng` takes: None,
    an int (or a SeedSequence) or a Generator (which is advanced).
    """
    try:
        rng = np.random.default_rng(random_state)
    except (TypeError, ValueError) as err:
        raise type(err)(
            "random_state must be None, a non-negative int or a numpy.random.Generator, "
            f"got {random_state!r} ({err})"
        ) from None
    W = np.abs(rng.standard_normal((N, M)))
    H = np.abs(rng.standard_normal((M, T)))
    return W, H


#: The objective recorded after an iteration comes from the expansion below
#: unless it is smaller than this fraction of ||V||^2; then it is recomputed
#: exactly (see :func:`expanded_objective`).
EXACT_BELOW = 1e-4


class ColumnGram:
    """``X^T X``, computed once per array and reused while it is asked for the
    same array object.

    The solvers never modify the arrays of their state in place, so the array's
    identity stands for its contents: nmf_sc's W step computes W^T W of its
    result for the objective and the next H step needs it again (as every H
    step does when W is fixed), and nmf_euclidean's next H step needs the W^T W
    its objective took. A miss computes the same product, so a resumed run,
    whose W is a loaded copy, gets the same bits. Only the last array is kept.
    """

    def __init__(self):
        self._last = None

    def __call__(self, X):
        if self._last is not None and self._last[0] is X:
            return self._last[1]
        gram = X.T @ X
        self._last = (X, gram)
        return gram


def expanded_objective(vv, A, X, G, columns, quad=None):
    """``0.5 ||V - W H||_F^2`` from products an iteration has already computed.

    For a W step (``columns=True``: ``X = W``, ``A = V H^T``, ``G = H H^T``)::

        0.5 (||V||^2 - 2 <V H^T, W> + <H H^T, W^T W>)

    and for an H step (``columns=False``: ``X = H``, ``A = W^T V``,
    ``G = W^T W``) the same with ``<W^T V, H>`` and ``<W^T W, H H^T>``; ``vv`` is
    ||V||^2. It costs O(M^2 N) (or O(M^2 T)) instead of the O(N T M) of forming
    W H. The expansion cancels: its absolute error is a few roundings of
    ||V||^2 (about 1e-16 ||V||^2 to 1e-15 ||V||^2), so its *relative* error is
    that over E. Callers that record it recompute E exactly when it is below
    ``EXACT_BELOW * vv``, which bounds the relative error of every recorded
    objective by about 1e-11. ``quad`` is ``W^T W`` (``H H^T``) if the caller
    has it.
    """
    if quad is None:
        quad = X.T @ X if columns else X @ X.T
    return 0.5 * (vv - 2.0 * float(np.vdot(A, X)) + float(np.vdot(G, quad)))
