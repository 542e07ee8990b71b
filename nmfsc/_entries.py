"""Sets of a matrix's entries held as CSR patterns, without a dense array or
an int64 position kept per entry: the held-out entries of a sparse V whose
zeros are data (:mod:`nmfsc.comparison._holdout`), and the products a
masked run on every other entry takes at them
(:mod:`nmfsc.solvers._masked_all_but`).

A pattern is a ``scipy.sparse.csr_array`` of booleans with sorted, distinct
column indices in each row, its index dtype the one scipy keeps without a
copy (:func:`index_dtype`). The passes are the Numba kernels of
:mod:`nmfsc._kernels.patterns`.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from scipy.sparse import csr_array

from nmfsc._kernels import masked as _km
from nmfsc._kernels import patterns as _kp
from nmfsc._threads import run_groups, split, threads

__all__ = [
    "in_pattern",
    "index_dtype",
    "keep_entries",
    "merge_rows",
    "pattern",
    "pattern_of_positions",
    "product_at",
    "values_at",
]

#: A product at a pattern of at least this many terms runs on all threads.
PARALLEL_TERMS = 1 << 16


def index_dtype(count, n_cols):
    """The index dtype of a CSR pattern of ``count`` entries and ``n_cols``
    columns that scipy keeps as it is: int32 where it holds both (indptr and
    indices share it), else int64."""
    limit = np.iinfo(np.int32).max
    return np.dtype(np.int32) if count <= limit and n_cols <= limit else np.dtype(np.int64)


def pattern(indptr, indices, shape):
    """The pattern (booleans, one byte per entry) of CSR arrays ``indptr`` and
    ``indices``, sorted within rows."""
    return csr_array((np.ones(indices.size, dtype=bool), indices, indptr), shape=shape)


def pattern_of_positions(positions, shape):
    """The pattern of the entries at the increasing row-major ``positions``
    (row * n_cols + column) of a matrix of ``shape``."""
    n_rows, n_cols = shape
    dtype = index_dtype(positions.shape[0], n_cols)
    indptr = np.zeros(n_rows + 1, dtype=dtype)
    indices = np.empty(positions.shape[0], dtype=dtype)
    _kp.fill_pattern(positions, n_cols, indptr, indices)
    return pattern(indptr, indices, shape)


def in_pattern(A, where):
    """Whether each stored entry of the canonical CSR matrix ``A`` is in the
    pattern ``where`` (booleans, one per stored entry)."""
    out = np.empty(A.nnz, dtype=bool)
    _kp.in_pattern(A.indptr, A.indices, where.indptr, where.indices, out)
    return out


def values_at(A, where):
    """The values of the canonical CSR matrix ``A`` at the entries of the
    pattern ``where``, in its order (0 where A stores none)."""
    out = np.empty(where.nnz, dtype=A.dtype)
    _kp.values_at(A.indptr, A.indices, A.data, where.indptr, where.indices, out)
    return out


def keep_entries(A, keep):
    """The canonical CSR (or CSC) matrix ``A`` with only its stored entries
    where ``keep`` (booleans, one per stored entry) is true, of A's type and
    shape; the others are no longer stored."""
    counts = np.concatenate(([0], np.cumsum(keep)))[A.indptr]
    return type(A)((A.data[keep], A.indices[keep], counts), shape=A.shape)


def merge_rows(A, keep, where, row_values):
    """A CSR matrix of A's type and shape: the stored entries of the canonical
    CSR ``A`` where ``keep`` is true, and every entry of the pattern
    ``where`` (disjoint from those kept) with its row's value
    ``row_values[i]``; canonical, no sort."""
    kept = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
    counts = kept[A.indptr[1:]] - kept[A.indptr[:-1]] + np.diff(where.indptr)
    dtype = index_dtype(int(counts.sum()), A.shape[1])
    indptr = np.zeros(A.shape[0] + 1, dtype=dtype)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=dtype)
    data = np.empty(int(indptr[-1]), dtype=A.dtype)
    values = np.asarray(row_values, dtype=A.dtype)
    _kp.merge_rows(
        A.indptr,
        A.indices,
        A.data,
        keep,
        where.indptr,
        where.indices,
        values,
        indptr,
        indices,
        data,
    )
    return type(A)((data, indices, indptr), shape=A.shape)


def product_at(where, W, H, dtype=np.float64):
    """W H at the entries of a CSR or CSC pattern ``where`` of W H's shape, in
    its order (one dot product of length M each, summed in float64, stored
    as ``dtype``), by threads over groups of outer rows; W H is never
    formed."""
    out = np.empty(where.nnz, dtype=dtype)
    Ht = np.ascontiguousarray(H.T)
    A, B = (Ht, W) if where.format == "csc" else (W, Ht)
    outer = where.indptr.shape[0] - 1
    groups = split(outer, threads() if where.nnz * W.shape[1] >= PARALLEL_TERMS else 1)
    kernel = partial(_km.stored_product, where.indptr, where.indices, A, B)
    run_groups([partial(kernel, a, b, out) for a, b in groups])
    return out
