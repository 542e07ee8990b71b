"""Hoyer's sparseness measure and the conversions between sparseness and norms.

For x in R^n (n >= 2) with x != 0,

    sparseness(x) = (sqrt(n) - ||x||_1 / ||x||_2) / (sqrt(n) - 1),

which is 1 for a vector with a single non-zero entry, 0 for a vector whose
entries all have the same magnitude, and interpolates smoothly in between.
It is undefined (0 / 0) for n = 1 and for the zero vector: :func:`sparseness`
raises ``ValueError`` there, :func:`sparseness_or_nan` (for the solvers'
results and the scores' summaries) returns NaN. Both compute the measure with
the same operations, so they give the same bits wherever it is defined.
"""

from __future__ import annotations

from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nmfsc._parameters import check
from nmfsc._validation import (
    as_float_array,
    reject_masked,
)

__all__ = ["sparseness", "sparseness_or_nan", "l1_for_sparseness", "sparseness_for_l1"]

# Relative slack on l2 <= l1 <= sqrt(n) l2 in sparseness_for_l1 (as in projection.py),
# so that norms computed from sparseness 0 or 1 in floating point are not refused.
_NORM_RTOL = 1e-12


@overload
def sparseness(x: ArrayLike, axis: None = ...) -> float: ...
@overload
def sparseness(x: ArrayLike, axis: int) -> NDArray[np.float64]: ...
def sparseness(x: ArrayLike, axis: int | None = None) -> float | NDArray[np.float64]:
    """Hoyer's sparseness of a vector, or of every column or row of a matrix.

    Parameters
    ----------
    x : array_like
        A vector of length n >= 2, or a 2-D array.
    axis : {None, 0, 1}
        ``None``: ``x`` must be 1-D and one number is returned. ``0``: the
        sparseness of every column of a 2-D ``x`` (shape ``(n_cols,)``).
        ``1``: of every row (shape ``(n_rows,)``).

    Returns
    -------
    float or ndarray
        ``(sqrt(n) - ||x||_1 / ||x||_2) / (sqrt(n) - 1)``, in [0, 1]. Only the
        magnitudes count, so the signed vectors of the signed projection have a
        sparseness too.

    Raises
    ------
    ValueError
        For vectors of length 1 and for all-zero vectors (the measure is 0/0
        there), for NaN or infinite entries, and for a wrong ``axis``/``ndim``.

    See Also
    --------
    l1_for_sparseness : The L1 norm that gives a sparseness.
    sparseness_for_l1 : The sparseness of an L1 norm (its inverse).
    project : The closest vector of a given sparseness.
    sparseness_summary : The sparseness of both factors of a fit.
    nmfsc.plotting.plot_sparseness_bars : Vectors drawn with their sparseness (Figure 2).

    References
    ----------
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    >>> from nmfsc import sparseness
    >>> float(sparseness([0.0, 0.0, 1.0, 0.0]))
    1.0
    >>> float(sparseness([1.0, 1.0, 1.0, 1.0]))
    0.0
    """
    if axis is None:
        arr = as_float_array(x, "x", ndim=1)
        vectors = arr[:, None]
    elif axis in (0, 1):
        arr = as_float_array(x, "x", ndim=2)
        vectors = arr if axis == 0 else arr.T
    else:
        raise ValueError(f"axis must be None, 0 or 1, got {axis!r}")
    n = vectors.shape[0]
    if n < 2:
        raise ValueError(
            "sparseness is undefined for vectors of length 1 (sqrt(n) - 1 = 0); it needs n >= 2"
        )
    peak = np.max(np.abs(vectors), axis=0)
    zero = peak == 0
    if np.any(zero):
        where = (
            "" if axis is None else f" (index {int(np.flatnonzero(zero)[0])} along axis {1 - axis})"
        )
        raise ValueError(f"sparseness is undefined for an all-zero vector{where}")
    values = _columns_sparseness(vectors, peak)
    return float(values[0]) if axis is None else values


def sparseness_or_nan(X, axis):
    """Hoyer's sparseness of every column (``axis=0``) or row (``axis=1``) of a
    2-D array, NaN where it is undefined.

    Parameters
    ----------
    X : ndarray, shape (n_rows, n_cols)
        Float array; it is not validated (NaN entries give NaN).
    axis : {0, 1}
        0: the sparseness of every column, 1: of every row.

    Returns
    -------
    ndarray
        As :func:`sparseness` ``(X, axis)`` where that is defined, and NaN for
        an all-zero vector and for every vector when they have length 1.
    """
    vectors = X if axis == 0 else X.T
    n = vectors.shape[0]
    out = np.full(vectors.shape[1], np.nan)
    if n < 2:
        return out
    peak = np.max(np.abs(vectors), axis=0)
    ok = peak > 0
    out[ok] = _columns_sparseness(vectors[:, ok], peak[ok])
    return out


def _columns_sparseness(vectors, peak):
    """The measure of every column of ``vectors`` (length n >= 2), given each
    column's largest magnitude ``peak`` (> 0). Dividing by it first keeps the
    L2 norm from overflowing."""
    n = vectors.shape[0]
    scaled = vectors / peak
    l1 = np.sum(np.abs(scaled), axis=0)
    l2 = np.sqrt(np.sum(scaled * scaled, axis=0))
    root_n = np.sqrt(n)
    return np.clip((root_n - l1 / l2) / (root_n - 1.0), 0.0, 1.0)


def _positive_norms(value, name):
    """A norm or array of norms as float64: numeric, not masked, finite and > 0."""
    reject_masked(value, name)
    arr = np.asarray(value)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"{name} must be a real number or an array of them, got {value!r}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return arr


@overload
def l1_for_sparseness(sparseness: float, n: int, l2: float = ...) -> float: ...
@overload
def l1_for_sparseness(
    sparseness: ArrayLike, n: int, l2: ArrayLike = ...
) -> float | NDArray[np.float64]: ...
def l1_for_sparseness(
    sparseness: ArrayLike, n: int, l2: ArrayLike = 1.0
) -> float | NDArray[np.float64]:
    """The L1 norm that gives a length-``n`` vector with L2 norm ``l2`` the
    requested ``sparseness``: ``l1 = l2 * (sqrt(n) - (sqrt(n) - 1) * sparseness)``.

    ``l2`` may be an array (one norm per vector); the result then has its shape.
    For n = 1 every sparseness gives ``l1 = l2``.

    Parameters
    ----------
    sparseness : float or array_like
        The target sparseness, in [0, 1] (1: one non-zero entry; 0: all equal).
    n : int
        The length of the vectors, at least 1.
    l2 : float or array_like, default 1.0
        Their L2 norm (finite, > 0), one value or one per vector.

    Returns
    -------
    float or ndarray of float64
        The L1 norm, between ``l2`` (sparseness 1) and ``sqrt(n) * l2``
        (sparseness 0); an array when ``sparseness`` or ``l2`` is one.

    Raises
    ------
    TypeError
        For a non-numeric argument or a masked ``l2``.
    ValueError
        For ``sparseness`` outside [0, 1], ``n < 1``, ``l2`` not finite and
        > 0, and an ``l2`` so large that ``l1`` would overflow to infinity.

    See Also
    --------
    sparseness_for_l1 : Its inverse.
    sparseness : The sparseness of a vector.
    project : Projects onto the L1 and L2 norms it gives.

    References
    ----------
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    >>> from nmfsc import l1_for_sparseness, sparseness_for_l1
    >>> l1_for_sparseness(0.8, 100)  # 10 - 9 * 0.8
    2.8
    >>> l1_for_sparseness(1.0, 100, l2=2.0), l1_for_sparseness(0.0, 100, l2=2.0)
    (2.0, 20.0)
    >>> round(float(sparseness_for_l1(2.8, 1.0, 100)), 12)
    0.8
    """
    s = check("sparseness", sparseness)
    n = check("n", n)
    root_n = np.sqrt(n)
    l2_arr = _positive_norms(l2, "l2")
    with np.errstate(over="ignore"):
        l1 = l2_arr * (root_n - (root_n - 1.0) * s)
    if not np.all(np.isfinite(l1)):
        raise ValueError(
            f"l2={l2!r} is too large: the L1 norm for n={n} would overflow to infinity; "
            "scale the vector down"
        )
    return float(l1) if l1.ndim == 0 else l1


def sparseness_for_l1(l1: ArrayLike, l2: ArrayLike, n: int) -> NDArray[np.float64]:
    """Inverse of :func:`l1_for_sparseness`: ``(sqrt(n) - l1 / l2) / (sqrt(n) - 1)``.

    ``l1`` and ``l2`` are scalars or arrays of one shape (or broadcastable);
    every pair must be the norms of some length-``n`` vector,
    ``l2 <= l1 <= sqrt(n) * l2`` (up to a relative 1e-12 of rounding), so that
    the result lies in [0, 1].

    Raises
    ------
    TypeError
        For a non-numeric or masked argument.
    ValueError
        For ``n < 2``, NaN or infinite norms, ``l2 <= 0``, and pairs outside
        that range.

    See Also
    --------
    l1_for_sparseness : Its inverse.
    sparseness : The sparseness of a vector.

    References
    ----------
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc import sparseness, sparseness_for_l1
    >>> x = np.array([0.0, 3.0, 4.0, 0.0])  # L1 norm 7, L2 norm 5
    >>> round(float(sparseness_for_l1(7.0, 5.0, 4)), 12), round(float(sparseness(x)), 12)
    (0.6, 0.6)
    >>> sparseness_for_l1([2.0, 4.0], 2.0, 4)  # the norms of (2, 0, 0, 0) and (1, 1, 1, 1)
    array([1., 0.])
    """
    n = check("n", n)
    if n < 2:
        raise ValueError("sparseness is undefined for vectors of length 1; it needs n >= 2")
    l1_arr = _positive_norms(l1, "l1")
    l2_arr = _positive_norms(l2, "l2")
    try:
        l1_b, l2_b = np.broadcast_arrays(l1_arr, l2_arr)
    except ValueError:
        raise ValueError(
            f"l1 and l2 must have one shape (or broadcast), got {l1_arr.shape} and {l2_arr.shape}"
        ) from None
    root_n = np.sqrt(n)
    with np.errstate(over="ignore", under="ignore"):
        bad = (l1_b < l2_b * (1.0 - _NORM_RTOL)) | (l1_b > root_n * l2_b * (1.0 + _NORM_RTOL))
    if np.any(bad):
        i = np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape)
        a, b = float(l1_b[i]), float(l2_b[i])
        raise ValueError(
            f"l1={a!r} is out of range for l2={b!r} and n={n}: the norms of a length-n vector "
            f"satisfy l2 <= l1 <= sqrt(n) * l2 = {float(root_n * b)!r} (sparseness in [0, 1])"
        )
    return (root_n - l1_arr / l2_arr) / (root_n - 1.0)
