"""Array code over an array namespace ``xp``: NumPy's functions on NumPy or CuPy arrays.

``xp`` is the module of the arrays a computation works on: ``cupy`` for
CuPy arrays, ``numpy`` otherwise (scikit-learn's ``get_namespace`` is the
model). Code that calls only the functions the two share runs on a GPU and,
in the tests, on the CPU: the GPU backend's array code
(:mod:`nmfsc.gpu_backend`) and :class:`nmfsc.SparseNMF`'s checks and
transforms of device data. CuPy is imported only for a CuPy array.
"""

from __future__ import annotations

import numpy as np

__all__ = ["as_float_array_in", "namespace", "to_host"]


def namespace(x):
    """``cupy`` for a CuPy array, else ``numpy``.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc._array_api import namespace
    >>> namespace(np.ones(3)) is np
    True
    """
    if type(x).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def to_host(x):
    """x as a NumPy array (``.get()`` for a CuPy array).

    Examples
    --------
    >>> from nmfsc._array_api import to_host
    >>> to_host([1.0, 2.0])
    array([1., 2.])
    """
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


def as_float_array_in(xp, X, name, ndim, *, check_finite=True):
    """X checked where it is (``xp``'s arrays) as
    :func:`nmfsc._validation.as_float_array` checks a host array, with its
    messages (real numeric dtype, ``ndim`` dimensions, not empty, finite):
    float32 and float64 stay as they are, other real dtypes become float64
    there. ``check_finite=False`` leaves the finiteness to the caller (a
    message of its own).

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc._array_api import as_float_array_in
    >>> as_float_array_in(np, np.ones((2, 2), dtype=np.int64), "X", 2).dtype
    dtype('float64')
    >>> as_float_array_in(np, np.ones(3), "X", 2)
    Traceback (most recent call last):
    ...
    ValueError: X must be 2-D, got an array with ndim=1
    """
    if X.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be a real numeric array, got dtype {X.dtype}")
    if X.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got an array with ndim={X.ndim}")
    if X.size == 0:
        raise ValueError(f"{name} is empty (shape {X.shape}); it needs at least one entry")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(xp.float64)
    if check_finite and not bool(xp.isfinite(X).all()):
        raise ValueError(f"{name} contains NaN or infinity")
    return X
