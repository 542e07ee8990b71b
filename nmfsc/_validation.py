"""Input checks shared by the public API. Every error names the argument.

Arrays (:func:`as_float_array`), the solvers' data and starting factors
(:func:`check_data`, :func:`check_factor`) and image shapes
(:func:`check_image_shape`), seeds (:func:`check_random_state`) and masked
arrays (:func:`reject_masked`, which :func:`as_float_array` applies). The
public parameters' numbers are checked against their one declaration,
:data:`nmfsc._parameters.PARAMETERS`.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import NDArray

from nmfsc._parameters import Integer


def as_float_array(
    x: Any, name: str, ndim: int | None = None, allow_empty: bool = False
) -> NDArray[np.float64]:
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


def _first_position(k, shape):
    """Row and column of the flat (C order) index k."""
    row, col = np.unravel_index(k, shape)
    return f"row {int(row)}, column {int(col)}"


def _stored_position(V, k):
    """Row and column of the k-th stored value of a CSR or CSC matrix."""
    outer = int(np.searchsorted(V.indptr, k, side="right")) - 1
    inner = int(V.indices[k])
    row, col = (inner, outer) if V.format == "csc" else (outer, inner)
    return f"row {row}, column {col}"


#: What to do about NaN in V, where the caller has not said which entries are missing.
NAN_ADVICE = (
    "for missing entries, pass mask= to nmf_sc or nmf_euclidean, missing_values=np.nan "
    "to compare or SparseNMF"
)


def _check_values(values, where, what, nan_advice=NAN_ADVICE):
    """NaN, infinity and negative values of ``values`` (the entries of a dense
    V, or the stored values of a sparse one): a ValueError that counts them and
    names the first. ``where(k)`` describes the position of flat index k.
    ``nan_advice`` says what to do about NaN; infinity is never a missing
    value, so its advice is always to replace or drop it."""
    lo, hi = values.min(), values.max()  # NaN propagates; no temporaries
    if not (np.isfinite(lo) and np.isfinite(hi)):
        bad = ~np.isfinite(values)
        first, count = int(np.argmax(bad)), int(bad.sum())
        infinite = np.isinf(values)
        n_infinite = int(infinite.sum())
        advice = [nan_advice] if n_infinite < count else []
        if n_infinite:
            inf_advice = "infinity is not a missing value: replace or drop the infinite entries"
            if n_infinite < count:  # NaN too: where the first infinity is
                inf_advice += f" ({n_infinite}, the first at {where(int(np.argmax(infinite)))})"
            advice.append(inf_advice)
        raise ValueError(
            f"V contains NaN or infinity ({count} non-finite {what}, the first "
            f"at {where(first)}); NMF needs finite V ({'; '.join(advice)})"
        )
    if lo < 0:
        negative = values < 0
        first = int(np.argmax(negative))
        raise ValueError(
            f"V has negative entries; NMF needs V >= 0 ({int(negative.sum())} negative "
            f"{what}, the first at {where(first)}; min(V) = {float(lo)!r})"
        )
    return float(hi)


def _check_sparse_data(V, nan_advice):
    if V.ndim != 2:
        raise ValueError(f"V must be 2-D, got a sparse array with ndim={V.ndim}")
    if V.format not in ("csr", "csc"):
        V = V.tocsr()  # O(nnz): the solvers use CSR or CSC
    if V.dtype not in (np.float32, np.float64):
        if not (np.issubdtype(V.dtype, np.number) or V.dtype == np.bool_) or np.iscomplexobj(V):
            raise TypeError(f"V must be a real numeric array, got dtype {V.dtype}")
        V = V.astype(np.float64)
    if V.shape[0] == 0 or V.shape[1] == 0:
        raise ValueError(f"V is empty (shape {V.shape}); it needs at least one entry")
    if not V.has_canonical_format:  # duplicates summed, indices sorted
        V = V.copy()
        V.sum_duplicates()
    scale = 0.0
    if V.nnz:
        scale = _check_values(V.data, lambda k: _stored_position(V, k), "stored values", nan_advice)
    return V, scale


def _check_dense_data(V, nan_advice):
    arr = np.asanyarray(V)  # keeps a np.memmap as it is
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.integer)
        or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"V must be a real numeric array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"V must be 2-D, got an array with ndim={arr.ndim}")
    if arr.size == 0:
        raise ValueError(f"V is empty (shape {arr.shape}); it needs at least one entry")
    if arr.dtype not in (np.float32, np.float64):
        arr = np.asarray(arr, dtype=np.float64)
    elif type(arr) not in (np.ndarray, np.memmap):
        arr = np.asarray(arr)
    return arr, _check_values(arr, lambda k: _first_position(k, arr.shape), "entries", nan_advice)


def check_data(V, nan_advice=NAN_ADVICE):
    """``V`` checked, and max(V): the data of every solver.

    Dense V stays float64 or float32 (other real dtypes become float64), and
    an ndarray of those dtypes, a np.memmap included, is not copied. scipy.sparse
    V stays sparse: CSR and CSC as given (other formats become CSR), float32 or
    float64, duplicates summed. Raises TypeError for non-numeric V and
    ValueError, counting the offenders and naming the first position, for
    negative, NaN or infinite values, a V that is not 2-D, empty or all zeros.
    Rows and columns of zeros are allowed; a masked array is refused.
    ``nan_advice`` is what the message for NaN advises (by default: how to
    mark missing entries); for infinity it advises replacing or dropping the
    infinite entries, which are never missing values.
    """
    reject_masked(V, "V")
    if hasattr(V, "nnz") and hasattr(V, "tocsr"):
        V, scale = _check_sparse_data(V, nan_advice)
    else:
        V, scale = _check_dense_data(V, nan_advice)
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
    height = Integer(1).check(image_shape[0], f"{name}[0] (height)")
    width = Integer(1).check(image_shape[1], f"{name}[1] (width)")
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
