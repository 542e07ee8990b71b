"""Input checks shared by the public API. Every error names the argument.

General arrays and numbers (:func:`as_float_array`, :func:`check_sparseness`,
:func:`check_positive_int`, :func:`check_nonneg_real`,
:func:`check_optional_sparseness`), the solvers' data and starting factors
(:func:`check_data`, :func:`check_factor`) and image shapes
(:func:`check_image_shape`), seeds (:func:`check_random_state`) and masked
arrays (:func:`reject_masked`, which :func:`as_float_array` applies).
"""

import numbers

import numpy as np


def as_float_array(x, name, ndim=None, allow_empty=False):
    """Return ``x`` as a float64 ndarray, rejecting what cannot be projected.

    Raises ``ValueError`` naming ``name`` for a wrong number of dimensions, an
    empty array or non-finite entries, and ``TypeError`` for non-numeric input
    and for masked arrays (:func:`reject_masked`).
    """
    reject_masked(x, name)
    if hasattr(x, "toarray") and hasattr(x, "nnz"):
        raise TypeError(
            f"{name} is a scipy.sparse matrix; pass a dense array (e.g. {name}.toarray())"
        )
    arr = np.asarray(x)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.integer)
        or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got an array with ndim={arr.ndim}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty (shape {arr.shape}); it needs at least one entry")
    arr = np.asarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def reject_masked(x, name):
    """Refuse a NumPy masked array: ``np.asarray`` would silently drop its mask."""
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(
            f"{name} is a numpy masked array; nmfsc does not use masks: pass "
            f"{name}.filled(...) or np.asarray({name})"
        )


def check_sparseness(value, name):
    """A target sparseness must be a real number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in [0, 1], got {value!r}")
    value = float(value)
    if not (0.0 <= value <= 1.0):
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return value


def check_non_negative_int(value, name):
    """An integer >= 0 (not a bool), as an int; ValueError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")
    return int(value)


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


def check_optional_sparseness(value, name):
    """None (unconstrained) or a real number in [0, 1]."""
    if value is None:
        return None
    return check_sparseness(value, name)


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


def check_image_shape(image_shape, name):
    """A (height, width) pair of positive integers, as a tuple of ints."""
    if isinstance(image_shape, (str, bytes)) or not hasattr(image_shape, "__len__"):
        raise TypeError(f"{name} must be a (height, width) pair, got {image_shape!r}")
    if len(image_shape) != 2:
        raise ValueError(
            f"{name} must be a (height, width) pair, got {len(image_shape)} numbers: "
            f"{tuple(image_shape)!r}"
        )
    for side in image_shape:
        if isinstance(side, bool) or not isinstance(side, numbers.Integral):
            raise TypeError(f"{name} must hold two positive integers, got {image_shape!r}")
    height = check_positive_int(image_shape[0], f"{name}[0] (height)")
    width = check_positive_int(image_shape[1], f"{name}[1] (width)")
    return height, width


def check_random_state(value, name="random_state"):
    """None, a non-negative int, or a numpy Generator, BitGenerator or SeedSequence."""
    accepted = (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)
    if value is None or isinstance(value, accepted):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be None, a non-negative int or a numpy.random.Generator, got {value!r}"
        )
    if value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value
