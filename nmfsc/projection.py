"""The L1/L2 projection operator of Hoyer (2004), Section 3.2.

Given a vector x and targets L1 and L2, find the point s closest to x in the
Euclidean sense with

    sum_i s_i = L1,   ||s||_2 = L2,   s >= 0              (``nonneg=True``)

or, for the signed variant (``nonneg=False``), sum_i |s_i| = L1 and
||s||_2 = L2 with s taking the signs of x (the projection of |x|, signs restored).
The set is non-empty exactly when L2 <= L1 <= sqrt(n) L2; to reach a sparseness
``s`` at norm ``L2``, take ``L1 = l1_for_sparseness(s, n, L2)``.

Two exact methods, both Numba kernels in :mod:`nmfsc._kernels.sparse_projection`:

``"hoyer"``
    The paper's algorithm: project onto the hyperplane, then onto the sphere
    around the hyperplane's centre, zero the negative entries and repeat. Each
    repetition is a *pass*; the paper counts them in its Figure 6. Cost
    O(n x passes).
``"fast"`` (default)
    The same passes, but the surviving entries are compacted into a buffer
    once they are at most half of what a pass reads, so later passes cost
    O(support) instead of O(n); finished by an O(k log k) sort-and-scan if it
    has not converged after ``2 log2(n) + 8`` passes: worst case O(n log n), in
    practice a few streaming passes. For n >= 1024 (without
    ``return_passes``) it first finds the threshold alpha of
    s = beta * max(x - alpha, 0) approximately, from a strided sample and one
    Newton step on the whole vector, then reads the vector twice more: one
    pass sums the part surely above a narrow band around alpha and gathers
    the entries inside it, the exact passes run on those alone, and a last
    pass writes s. The band is verified; if it missed, it is replaced, and
    after a few misses the passes above run instead, so the result never
    depends on the sample.

Both return identical results to rounding wherever the projection is unique.
Where it is not (ties among the largest entries, e.g. a constant vector, with a
target sparser than the tie allows), both break the tie by index, favouring
earlier entries, so results are deterministic. At sparseness 1 (``l1 == l2``)
both return ``l2`` at the largest entry and exact zeros elsewhere. Results do
not depend on how ``x`` is laid out in memory: a strided column, its contiguous
copy and the same column in :func:`project_batch` give identical bits.

A vector of 2^17 entries or more is projected on all of numba's threads
(``NUMBA_NUM_THREADS``) by :func:`project`, and by :func:`project_batch`
when it has fewer vectors than threads, when called from the main thread:
the fast method's passes run over chunks of a fixed length (32,768
entries), whose sums are added in order, so the bits are the same on any
number of threads. (The paper's method, and a fast one asked for its
passes, run on one thread.)

:func:`project_average` holds a group of vectors (the columns of W, or the
rows of H) at a sparseness *on average* (Ohib, Gillis et al., TMLR 2022),
each at its own norm and free to differ from the others: the exact closest
point. The vectors are thresholded as in ``project``, each at
``mu / l_i`` for one multiplier ``mu`` shared by all, found by bisection over
the vectors' breakpoints and then Newton's method (kernel
:mod:`nmfsc._kernels.grouped`); its docstring has the derivation and the proof
that the point is the global solution.

Computation is in float64 whatever the input dtype (float32 input is accepted
and converted); the results are float64.

A C-contiguous float64 ndarray with scalar targets in range goes to the kernel
at once, with almost no checks in Python; the kernel's own finiteness test sends NaN and
infinity back to the full checks, so every input gets the same result and the
same error either way.
"""

from __future__ import annotations

import math
import numbers
import threading
from typing import Literal, TypeGuard, overload

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from nmfsc._kernels import grouped as _g
from nmfsc._kernels import sparse_projection as _k
from nmfsc._parameters import check
from nmfsc._threads import threads
from nmfsc._validation import as_float_array, reject_masked
from nmfsc.backends import backend_for

__all__ = ["project", "project_average", "project_batch"]

_METHODS = {"hoyer": _k.METHOD_HOYER, "fast": _k.METHOD_FAST}
# Relative slack on the feasibility test L2 <= L1 <= sqrt(n) L2, so that targets
# computed from sparseness 0 or 1 in floating point are not rejected.
_TARGET_RTOL = 1e-12

# The scalar types the fast path takes as targets as they are (a Python or NumPy
# float or a Python int: float(value) is then exact or the value numpy would use).
_SCALAR_TYPES = (float, int, np.float64)
_FLOAT64 = np.dtype(np.float64)
# The shortest vector that project and project_batch project on all threads
# (the fast method's passes in chunks of bracket.CHUNK, 32,768 entries:
# at least four of them; below, starting the threads costs more than they save).
_THREADED_MIN_N = 1 << 17


def _array_projection(x):
    """The projection of the backend whose array x is (its
    :attr:`~nmfsc.backends.Backend.project_batch`), or None (NumPy and
    array-likes)."""
    backend = backend_for(x)
    return None if backend is None else backend.project_batch


def _method_code(method):
    try:
        return _METHODS[method]
    except (KeyError, TypeError):
        raise ValueError(f"method must be one of {sorted(_METHODS)}, got {method!r}") from None


def _check_targets(l1, l2, n, count):
    """Broadcast l1, l2 to ``count`` values and check that they are reachable."""
    reject_masked(l1, "l1")
    reject_masked(l2, "l2")
    l1 = np.asarray(l1, dtype=np.float64)
    l2 = np.asarray(l2, dtype=np.float64)
    try:
        l1 = np.broadcast_to(l1, (count,)).copy()
        l2 = np.broadcast_to(l2, (count,)).copy()
    except ValueError:
        raise ValueError(
            f"l1 and l2 must be scalars or have one value per vector ({count}), "
            f"got shapes {np.shape(l1)} and {np.shape(l2)}"
        ) from None
    if not np.all(np.isfinite(l2)) or np.any(l2 <= 0):
        bad = l2[~(np.isfinite(l2) & (l2 > 0))][0]
        raise ValueError(f"l2 must be finite and > 0, got {bad!r}")
    if not np.all(np.isfinite(l1)) or np.any(l1 <= 0):
        bad = l1[~(np.isfinite(l1) & (l1 > 0))][0]
        raise ValueError(f"l1 must be finite and > 0, got {bad!r}")
    low = l2 * (1.0 - _TARGET_RTOL)
    high = np.sqrt(n) * l2 * (1.0 + _TARGET_RTOL)
    bad = (l1 < low) | (l1 > high)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        where = "" if count == 1 else f" (vector {i})"
        raise ValueError(
            f"l1={l1[i]!r} is unreachable{where} for a vector of length {n} with "
            f"l2={l2[i]!r}: it must satisfy l2 <= l1 <= sqrt(n) * l2 = {np.sqrt(n) * l2[i]!r}"
        )
    return l1, l2


def _fast_targets(l1, l2, n):
    """``(l1, l2)`` as floats when both are plain scalars that pass every test of
    :func:`_check_targets` (same arithmetic, scalar), else None.

    The fast path's one check of the targets: a few float operations, no arrays.
    None sends the call down the full path, which gives the same errors.
    """
    if type(l1) not in _SCALAR_TYPES or type(l2) not in _SCALAR_TYPES:
        return None
    l1 = float(l1)
    l2 = float(l2)
    # NaN fails every comparison, so "not (...)" also refuses it.
    if not (0.0 < l2 < math.inf and 0.0 < l1 < math.inf):
        return None
    if not (l2 * (1.0 - _TARGET_RTOL) <= l1 <= math.sqrt(n) * l2 * (1.0 + _TARGET_RTOL)):
        return None
    return l1, l2


def _is_plain_float64(x: object, ndim: int) -> TypeGuard[NDArray[np.float64]]:
    """Whether ``x`` goes to the kernel as it is: a non-empty, C-contiguous
    float64 ndarray (not a subclass: no masked arrays) of ``ndim`` dimensions."""
    return (
        type(x) is np.ndarray
        and x.dtype == _FLOAT64
        and x.ndim == ndim
        and x.size > 0
        and x.flags.c_contiguous
    )


def _raise_nonfinite(name, status, axis):
    bad = np.flatnonzero(status == _k.STATUS_NONFINITE)
    if bad.size:
        what = "column" if axis == 0 else "row"
        raise ValueError(f"{name} contains NaN or infinity ({what} {int(bad[0])})")


@overload
def project(
    x: ArrayLike,
    l1: float,
    l2: float,
    *,
    nonneg: bool = ...,
    method: str = ...,
    return_passes: Literal[False] = ...,
) -> NDArray[np.float64]: ...
@overload
def project(
    x: ArrayLike,
    l1: float,
    l2: float,
    *,
    nonneg: bool = ...,
    method: str = ...,
    return_passes: Literal[True],
) -> tuple[NDArray[np.float64], int]: ...
def project(
    x: ArrayLike,
    l1: float,
    l2: float,
    *,
    nonneg: bool = True,
    method: str = "fast",
    return_passes: bool = False,
) -> NDArray[np.float64] | tuple[NDArray[np.float64], int]:
    """Closest vector to ``x`` with L1 norm ``l1`` and L2 norm ``l2``.

    Parameters
    ----------
    x : array_like, shape (n,)
        Any finite real vector (it need not be non-negative).
    l1, l2 : float
        Target norms, with ``0 < l2 <= l1 <= sqrt(n) * l2``.
    nonneg : bool, default True
        Constrain the result to be non-negative. ``False`` gives the signed
        variant: ``|s|`` is the projection of ``|x|`` and ``s`` takes x's signs.
    method : {"fast", "hoyer"}
        Algorithm (see the module docstring); both are exact.
    return_passes : bool
        Also return the number of passes (the paper's iteration count).

    Returns
    -------
    s : ndarray of float64, shape (n,)
    passes : int
        Only with ``return_passes=True``.

    See Also
    --------
    project_batch : Every column or row of a matrix at one sparseness.
    project_average : A sparseness held on average over the vectors.
    l1_for_sparseness : The L1 norm of a sparseness.
    sparseness : The sparseness of the result.
    nmfsc.plotting.plot_passes : Its passes against the dimension (Figure 6).

    References
    ----------
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc import project, l1_for_sparseness, sparseness
    >>> x = np.array([0.1, 0.5, 0.2, 0.9])
    >>> s = project(x, l1_for_sparseness(0.7, 4), 1.0)
    >>> round(sparseness(s), 10), round(float(np.linalg.norm(s)), 10)
    (0.7, 1.0)
    """
    # Fast path: well-formed input goes straight to the kernel, whose first pass
    # also tests finiteness; anything else, or a non-finite x, takes the full
    # path below, which raises the errors. (Written inline: a helper call costs
    # a measurable share of what this path adds to the kernel.)
    if (
        type(x) is np.ndarray
        and x.ndim == 1
        and x.dtype is _FLOAT64
        and type(method) is str
        and type(l1) in _SCALAR_TYPES
        and type(l2) in _SCALAR_TYPES
    ):
        n = x.shape[0]
        code = _METHODS.get(method)
        if return_passes and code == _k.METHOD_FAST:
            code = _k.METHOD_FAST_COUNTED
        t1 = float(l1)
        t2 = float(l2)
        if (
            n
            and code is not None
            and x.strides[0] == 8
            # NaN fails every comparison, so "not (...)" also refuses it.
            and 0.0 < t2 < math.inf
            and t2 * (1.0 - _TARGET_RTOL) <= t1 <= math.sqrt(n) * t2 * (1.0 + _TARGET_RTOL)
        ):
            out = np.empty(n)
            kernel = _k.project_vector_threaded if _threaded(n, 1) else _k.project_vector
            status, passes = kernel(x, t1, t2, bool(nonneg), code, out, _k.max_filter_passes(n))
            if status == _k.STATUS_OK:
                return (out, int(passes)) if return_passes else out
    return _project_checked(x, l1, l2, nonneg, method, return_passes)


def _project_checked(x, l1, l2, nonneg, method, return_passes):
    """:func:`project` with every input check (the full path)."""
    code = _method_code(method)
    device = _array_projection(x)
    if device is not None:
        return device(x, l1, l2, 0, nonneg, method, return_passes)
    if return_passes and code == _k.METHOD_FAST:
        code = _k.METHOD_FAST_COUNTED
    x = as_float_array(x, "x", ndim=1)
    n = x.shape[0]
    l1a, l2a = _check_targets(l1, l2, n, 1)
    out = np.empty(n)
    kernel = _k.project_vector_threaded if _threaded(n, 1) else _k.project_vector
    status, passes = kernel(x, l1a[0], l2a[0], bool(nonneg), code, out, _k.max_filter_passes(n))
    if status == _k.STATUS_NONFINITE:
        raise ValueError("x contains NaN or infinity")
    return (out, int(passes)) if return_passes else out


@overload
def project_batch(
    X: ArrayLike,
    l1: ArrayLike,
    l2: ArrayLike,
    *,
    axis: int = ...,
    nonneg: bool = ...,
    method: str = ...,
    parallel: bool = ...,
    return_passes: Literal[False] = ...,
) -> NDArray[np.float64]: ...
@overload
def project_batch(
    X: ArrayLike,
    l1: ArrayLike,
    l2: ArrayLike,
    *,
    axis: int = ...,
    nonneg: bool = ...,
    method: str = ...,
    parallel: bool = ...,
    return_passes: Literal[True],
) -> tuple[NDArray[np.float64], NDArray[np.int64]]: ...
def project_batch(
    X: ArrayLike,
    l1: ArrayLike,
    l2: ArrayLike,
    *,
    axis: int = 0,
    nonneg: bool = True,
    method: str = "fast",
    parallel: bool = False,
    return_passes: bool = False,
) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Project every column (``axis=0``) or row (``axis=1``) of ``X`` in one call.

    Parameters
    ----------
    X : array_like, shape (n_rows, n_cols)
    l1, l2 : float or array_like
        Target norms: scalars, or one value per vector (``n_cols`` values for
        ``axis=0``, ``n_rows`` for ``axis=1``); each pair must be reachable.
    axis : {0, 1}
        0 projects the columns (vectors of length ``n_rows``, as the columns
        of W in NMF), 1 the rows (as the rows of H).
    nonneg, method : see :func:`project`.
    parallel : bool, default False
        Use the multi-threaded build of the same kernel (the vectors on all
        threads at once). Results are identical. Whatever it says, fewer long
        vectors than threads are projected one at a time on all threads
        (module docstring).
    return_passes : bool
        Also return the passes of every vector.

    Returns
    -------
    S : ndarray of float64, same shape as X
    passes : ndarray of int64
        Only with ``return_passes=True``.

    See Also
    --------
    project : One vector.
    project_average : A sparseness held on average over the vectors.
    sparseness : The sparseness of each projected vector.

    References
    ----------
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    Hold every column of a 100 x 5 matrix at sparseness 0.8 and unit L2 norm,
    as nmf_sc does with the columns of W:

    >>> import numpy as np
    >>> from nmfsc import l1_for_sparseness, project_batch, sparseness
    >>> X = np.random.default_rng(0).random((100, 5))
    >>> S = project_batch(X, l1_for_sparseness(0.8, 100), 1.0)
    >>> np.round(sparseness(S, axis=0), 6)
    array([0.8, 0.8, 0.8, 0.8, 0.8])
    >>> bool(np.all(S >= 0)), np.allclose(np.linalg.norm(S, axis=0), 1.0)
    (True, True)
    """
    code = _METHODS.get(method) if type(method) is str else None
    if return_passes and code == _k.METHOD_FAST:
        code = _k.METHOD_FAST_COUNTED
    if code is not None and type(axis) is int and axis in (0, 1) and _is_plain_float64(X, 2):
        count, n = X.shape[::-1] if axis == 0 else X.shape
        targets = _fast_targets(l1, l2, n)
        if targets is not None:
            if axis == 0 and not _threaded(n, count):
                l1a, l2a = np.full(count, targets[0]), np.full(count, targets[1])
                out, status, passes = _columns_kernel(X, l1a, l2a, nonneg, code, parallel)
                result = None if status.any() else (out, passes)
            else:
                vectors = _transposed(X) if axis == 0 else X
                result = _batch_kernel(vectors, targets[0], targets[1], nonneg, code, parallel)
                if result is not None and axis == 0:
                    result = (_transposed(result[0]), result[1])
            if result is not None:
                out, passes = result
                return (out, passes) if return_passes else out
    return _project_batch_checked(X, l1, l2, axis, nonneg, method, parallel, return_passes)


def _batch_kernel(vectors, l1, l2, nonneg, code, parallel):
    """Project the rows of the C-contiguous ``vectors`` onto the scalar targets
    ``l1``, ``l2``; (out, passes), or None if a row is not finite."""
    count, n = vectors.shape
    out = np.empty_like(vectors)
    passes = np.zeros(count, dtype=np.int64)
    maxp = _k.max_filter_passes(n)
    if _threaded(n, count):
        status = np.zeros(count, dtype=np.int64)
        l1a, l2a = np.full(count, l1), np.full(count, l2)
        _rows_threaded(vectors, l1a, l2a, nonneg, code, out, status, passes)
        bad = status.any()
    elif parallel:
        status = np.zeros(count, dtype=np.int64)
        l1a, l2a = np.full(count, l1), np.full(count, l2)
        _k.project_rows_parallel(vectors, l1a, l2a, bool(nonneg), code, out, status, passes, maxp)
        bad = status.any()
    else:
        bad = _k.project_rows_same_targets(vectors, l1, l2, bool(nonneg), code, out, passes, maxp)
    return None if bad else (out, passes)


def _threaded(n, count):
    """Whether ``count`` vectors of length n are projected one at a time,
    each on all threads (``_k.project_vector_threaded``): when they are long
    (at least ``_THREADED_MIN_N``), fewer than the threads, and this is the
    main thread (numba's threading layer may refuse to be entered from two
    threads at once; a thread of nmfsc._threads' pool has its own share of
    the cores)."""
    return (
        n >= _THREADED_MIN_N
        and count < threads()
        and threading.current_thread() is threading.main_thread()
    )


def _rows_threaded(vectors, l1, l2, nonneg, code, out, status, passes):
    """The rows of ``vectors`` projected one after the other, each on all
    threads (the same bits as ``_k.project_rows``)."""
    maxp = _k.max_filter_passes(vectors.shape[1])
    for r in range(vectors.shape[0]):
        status[r], passes[r] = _k.project_vector_threaded(
            vectors[r], l1[r], l2[r], bool(nonneg), code, out[r], maxp
        )


def _transposed(X):
    """A C-contiguous copy of ``X.T`` (X C-contiguous), tile by tile."""
    out = np.empty(X.shape[::-1], dtype=X.dtype)
    _k.transpose_into(X, out)
    return out


def _columns_kernel(X, l1, l2, nonneg, code, parallel):
    """Project the columns of the C-contiguous float64 X onto the targets
    ``l1[j]``, ``l2[j]`` in place of a transposed copy (the kernel gathers a
    few columns at a time, and writes the columns that the bracketing path
    decides along X's rows at the end; the same bits as projecting each
    column alone, at any length); (out, status, passes) with out
    C-contiguous."""
    count = X.shape[1]
    out = np.empty_like(X)
    status = np.zeros(count, dtype=np.int64)
    passes = np.zeros(count, dtype=np.int64)
    maxp = _k.max_filter_passes(X.shape[0])
    if parallel:
        groups = numba.get_num_threads()
        _k.project_columns_parallel(
            X, l1, l2, bool(nonneg), code, out, status, passes, maxp, groups
        )
    else:
        _k.project_columns(X, l1, l2, bool(nonneg), code, out, status, passes, maxp, 1)
    return out, status, passes


def _project_batch_checked(X, l1, l2, axis, nonneg, method, parallel, return_passes):
    """:func:`project_batch` with every input check (the full path)."""
    code = _method_code(method)
    device = _array_projection(X)
    if device is not None:
        return device(X, l1, l2, axis, nonneg, method, return_passes)
    if return_passes and code == _k.METHOD_FAST:
        code = _k.METHOD_FAST_COUNTED
    if axis not in (0, 1):
        raise ValueError(f"axis must be 0 (columns) or 1 (rows), got {axis!r}")
    X = as_float_array(X, "X", ndim=2)
    count, n = X.shape[::-1] if axis == 0 else X.shape
    l1a, l2a = _check_targets(l1, l2, n, count)
    if axis == 0 and not _threaded(n, count) and not X.flags.f_contiguous:
        out, status, passes = _columns_kernel(
            np.ascontiguousarray(X), l1a, l2a, nonneg, code, parallel
        )
        _raise_nonfinite("X", status, axis)
        return (out, passes) if return_passes else out
    vectors = np.ascontiguousarray(X.T if axis == 0 else X)
    out = np.empty_like(vectors)
    status = np.zeros(count, dtype=np.int64)
    passes = np.zeros(count, dtype=np.int64)
    if _threaded(n, count):
        _rows_threaded(vectors, l1a, l2a, nonneg, code, out, status, passes)
    else:
        kernel = _k.project_rows_parallel if parallel else _k.project_rows
        kernel(vectors, l1a, l2a, bool(nonneg), code, out, status, passes, _k.max_filter_passes(n))
    _raise_nonfinite("X", status, axis)
    result = out.T if axis == 0 else out
    result = np.ascontiguousarray(result)
    return (result, passes) if return_passes else result


def project_average(
    X: ArrayLike,
    sparseness: float,
    *,
    axis: int = 0,
    norms: ArrayLike | None = None,
) -> NDArray[np.float64]:
    r"""The closest non-negative vectors to ``X``'s columns (or rows) whose
    sparseness is ``sparseness`` *on average*, each at its own norm.

    The group constraint of Ohib, Gillis et al., "Explicit group sparse
    projection with applications to deep learning and NMF" (TMLR 2022): the
    vectors share a budget of sparseness, and each takes what suits it.
    With :math:`\sigma(y) = (\sqrt n - \|y\|_1 / \|y\|_2) / (\sqrt n - 1)`
    (:func:`nmfsc.sparseness`), the result is the exact solution of

    .. math::

        \min_{Y} \|X - Y\|_F^2 \quad \text{s.t.} \quad y_i \ge 0, \quad
        \|y_i\|_2 = l_i, \quad \frac{1}{r} \sum_{i=1}^{r} \sigma(y_i) = s,

    over the r vectors :math:`y_i` of length n (``s``: ``sparseness``).

    Parameters
    ----------
    X : array_like, shape (n_rows, n_cols)
        Any finite real matrix (it need not be non-negative); float32 is
        accepted, the result is float64.
    sparseness : float
        The target mean sparseness s, in [0, 1].
    axis : {0, 1}, default 0
        0: the vectors are the columns (length ``n_rows``, as the columns of W
        in NMF); 1: the rows (as the rows of H).
    norms : None, float or array_like, default None
        The L2 norms :math:`l_i`: one for all vectors, or one per vector, each
        finite and >= 0. ``None``: every vector's own L2 norm (the solvers keep
        W's columns "at their own norm"; H's rows take ``norms=1.0``). A vector
        with :math:`l_i = 0` (with ``None``: a vector of zeros) stays zero and
        is left out of the mean, where its sparseness would be undefined; if
        every vector is, the result is all zeros.

    Returns
    -------
    Y : ndarray of float64, the shape of X
        The closest point. Vectors whose largest entries tie share them as
        :func:`project` does, earlier indices first, so the result is
        deterministic: the same input gives the same bits.

    Raises
    ------
    ValueError
        For NaN or infinity in ``X`` or ``norms``, a negative norm, ``norms``
        of the wrong length, ``X`` not 2-D or empty, vectors of length 1
        (their sparseness is undefined: n >= 2 is needed), ``sparseness``
        outside [0, 1], ``axis`` not 0 or 1, and (``norms=None``) a norm of X's
        vectors that overflows float64.
    TypeError
        For non-numeric ``X``, ``sparseness`` or ``norms``, and masked arrays.

    See Also
    --------
    project_batch : Every vector at the same sparseness.
    project : One vector.
    nmf_sc : Its ``average_sparseness=True`` uses this projection.

    Notes
    -----
    *Reduction.* With the norms fixed, :math:`\|x_i - y_i\|^2 = \|x_i\|^2 +
    l_i^2 - 2 \langle x_i, y_i \rangle`, and :math:`\sigma(y_i)` is affine in
    :math:`\|y_i\|_1 / l_i`. The problem is therefore

    .. math::

        \max_Y \sum_i \langle x_i, y_i \rangle \quad \text{s.t.} \quad
        y_i \ge 0, \quad \|y_i\|_2 = l_i, \quad
        \sum_i \frac{\|y_i\|_1}{l_i} = K = r \left(\sqrt n - s (\sqrt n - 1)\right).

    *One multiplier.* The Lagrangian :math:`L(Y, \mu) = \sum_i \langle x_i -
    \mu / l_i, y_i \rangle + \mu K` separates. Over :math:`y \ge 0,\ \|y\|_2
    = l`, :math:`\langle x - \tau, y \rangle` is largest at

    .. math::

        y = l \, \frac{(x - \tau)_+}{\|(x - \tau)_+\|_2}
        \quad (\tau < \max x), \qquad
        y = l \, e_{\arg\max x} \quad (\tau \ge \max x),

    with value :math:`l\, g(\tau)`, :math:`g(\tau) = \|(x - \tau)_+\|_2`
    below :math:`\max x` and :math:`\max x - \tau` above. So every
    :math:`y_i` is its vector thresholded at :math:`\tau_i = \mu / l_i`: one
    shared multiplier, a threshold per vector. The dual function
    :math:`d(\mu) = \sum_i l_i\, g_i(\mu / l_i) + \mu K` is convex, with
    :math:`d'(\mu) = K - \sum_i \rho_i(\mu)`, where :math:`\rho_i` is the
    ratio :math:`\|\cdot\|_1 / \|\cdot\|_2` of :math:`(x_i - \mu / l_i)_+`,
    defined as 1 once :math:`\mu / l_i` reaches :math:`\max x_i` (the vector
    is then its largest entry alone, :math:`l_i` there). Each
    :math:`\rho_i` is continuous and non-increasing, from :math:`\sqrt n`
    (:math:`\mu \to -\infty`: :math:`\mu` may be negative, thresholds below
    zero make vectors *less* sparse) down to 1, except where the m largest
    entries of :math:`x_i` tie: there it falls from :math:`\sqrt m` to 1 at
    :math:`\mu = l_i \max x_i`, where any :math:`y_i \ge 0` on the tied
    entries is a maximiser; such vectors take the ratio the budget leaves
    them (each the same fraction of its range :math:`[1, \sqrt m]`), as
    :func:`project` gives it: ties broken by index, earliest first.

    *Exactness.* For every :math:`\mu` and every feasible Y, :math:`\sum_i
    \langle x_i, y_i \rangle = L(Y, \mu) \le d(\mu)` (weak duality). At the
    root :math:`\mu^*` of :math:`\sum_i \rho_i = K` the maximisers above form
    a feasible :math:`Y^*` with :math:`L(Y^*, \mu^*) = d(\mu^*)`, so no
    feasible point does better: :math:`Y^*` is the global solution, although
    the set (a product of spheres) is not convex. At :math:`s = 0` every
    vector is flat (:math:`l_i / \sqrt n` everywhere), at :math:`s = 1` a
    single entry, its largest.

    *Computation.* Every vector is sorted once, O(r n log n); bisection over
    the vectors' breakpoints (the :math:`\mu` where an entry leaves a
    support) locates the piece holding :math:`\mu^*`, at O(r log n) per
    evaluation of :math:`\sum_i \rho_i`; within the piece the supports are
    fixed and the equation is smooth, concave and monotone, and Newton's
    method from the right end, safeguarded by the bracket, solves it to full
    float64 precision, the margins :math:`x_{ij} - \tau_i` taken about each
    support's own mean (never as :math:`S_2 - 2 \tau S_1 + p \tau^2`). The
    kernel is :mod:`nmfsc._kernels.grouped`.

    References
    ----------
    R. Ohib, N. Gillis et al., "Explicit group sparse projection with
    applications to deep learning and NMF", Transactions on Machine
    Learning Research, 2022.

    Examples
    --------
    Hold 5 columns of a 100 x 5 matrix at sparseness 0.8 on average, each at
    its own norm:

    >>> import numpy as np
    >>> from nmfsc import l1_for_sparseness, project_average, project_batch, sparseness
    >>> X = np.random.default_rng(0).random((100, 5))
    >>> Y = project_average(X, 0.8)
    >>> s = sparseness(Y, axis=0)
    >>> round(float(s.mean()), 10), bool(s.min() < 0.8 < s.max())
    (0.8, True)
    >>> norms = np.linalg.norm(X, axis=0)
    >>> bool(np.all(Y >= 0)), np.allclose(np.linalg.norm(Y, axis=0), norms)
    (True, True)

    It is at least as close to X as every column at sparseness 0.8:

    >>> S = project_batch(X, l1_for_sparseness(0.8, 100, norms), norms)
    >>> bool(np.linalg.norm(X - Y) <= np.linalg.norm(X - S))
    True
    """
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or axis not in (0, 1):
        raise ValueError(f"axis must be 0 (columns) or 1 (rows), got {axis!r}")
    target = check("sparseness", sparseness)
    X = as_float_array(X, "X", ndim=2)
    vectors = np.ascontiguousarray(X.T if axis == 0 else X)
    n = vectors.shape[1]
    what = "column" if axis == 0 else "row"
    if n < 2:
        raise ValueError(
            f"X's {what}s have length 1 (shape {X.shape}, axis={axis}): the sparseness of a "
            "vector of length 1 is undefined (sqrt(n) - 1 = 0); project_average needs n >= 2"
        )
    lengths = _average_norms(norms, vectors, what)
    out = np.empty_like(vectors)
    sorted_rows = np.sort(vectors, axis=1)
    _g.project_average_rows(vectors, sorted_rows, lengths, target, out, _k.max_filter_passes(n))
    return np.ascontiguousarray(out.T) if axis == 0 else out


def _average_norms(norms, vectors, what):
    """The norms of :func:`project_average`, one per row of ``vectors``:
    checked, or (None) each row's own L2 norm, computed without overflow."""
    count = vectors.shape[0]
    if norms is None:
        exponent = np.frexp(np.max(np.abs(vectors), axis=1))[1]
        scaled = np.ldexp(vectors, -exponent[:, None])
        with np.errstate(over="ignore"):
            lengths = np.ldexp(np.sqrt(np.sum(scaled * scaled, axis=1)), exponent)
        if not np.all(np.isfinite(lengths)):
            i = int(np.flatnonzero(~np.isfinite(lengths))[0])
            raise ValueError(
                f"the L2 norm of X's {what} {i} overflows float64: pass norms= or scale X down"
            )
        return lengths
    reject_masked(norms, "norms")
    arr = np.asarray(norms)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"norms must be None, a real number or one per vector, got {norms!r}")
    try:
        lengths = np.broadcast_to(arr.astype(np.float64), (count,)).copy()
    except ValueError:
        raise ValueError(
            f"norms must be a scalar or have one value per {what} ({count}), got shape {arr.shape}"
        ) from None
    bad = ~(np.isfinite(lengths) & (lengths >= 0))
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"norms must be finite and >= 0, got {lengths[i]!r} ({what} {i})")
    return lengths
