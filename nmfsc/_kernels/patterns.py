"""Numba kernels for sets of entries of a matrix held as CSR patterns: the
held-out entries of a sparse V whose zeros are data and the data of a
masked run on every entry but those (:mod:`nmfsc._entries` calls them).

A pattern is CSR with sorted, distinct column indices in each row: the pair
(indptr, indices). Each kernel makes one pass over its inputs into outputs
its caller allocates, so that a set of entries costs its indices (int32)
and values, never an int64 position per entry or a sort.
"""

from numba import njit

__all__ = ["fill_pattern", "in_pattern", "merge_rows", "values_at"]


@njit(cache=True, nogil=True)
def fill_pattern(positions, n_cols, indptr, indices):
    """The pattern of the entries at the increasing row-major ``positions``
    (row * n_cols + column): ``indptr`` (zeros on entry) and ``indices``
    filled."""
    for p in positions:
        indptr[p // n_cols + 1] += 1
    for i in range(indptr.shape[0] - 1):
        indptr[i + 1] += indptr[i]
    for k in range(positions.shape[0]):
        indices[k] = positions[k] % n_cols


@njit(cache=True, nogil=True)
def in_pattern(indptr, indices, pattern_indptr, pattern_indices, out):
    """``out[k]`` = whether the k-th stored entry of a CSR matrix (indptr,
    indices) is in the pattern (same shape); both sorted within rows, so
    each row is one merge."""
    for i in range(indptr.shape[0] - 1):
        q, stop = pattern_indptr[i], pattern_indptr[i + 1]
        for k in range(indptr[i], indptr[i + 1]):
            c = indices[k]
            while q < stop and pattern_indices[q] < c:
                q += 1
            out[k] = q < stop and pattern_indices[q] == c


@njit(cache=True, nogil=True)
def merge_rows(
    indptr,
    indices,
    data,
    keep,
    pattern_indptr,
    pattern_indices,
    row_values,
    out_indptr,
    out_indices,
    out_data,
):
    """Row by row in column order, into ``out_indices`` and ``out_data``
    (``out_indptr`` given): the stored entries of (indptr, indices, data)
    where ``keep`` is true, and every entry of the pattern (disjoint from
    those kept) with its row's value ``row_values[i]``."""
    for i in range(indptr.shape[0] - 1):
        o = out_indptr[i]
        k, stop = indptr[i], indptr[i + 1]
        q, q_stop = pattern_indptr[i], pattern_indptr[i + 1]
        while k < stop or q < q_stop:
            if k < stop and not keep[k]:
                k += 1
                continue
            if q < q_stop and (k >= stop or pattern_indices[q] < indices[k]):
                out_indices[o] = pattern_indices[q]
                out_data[o] = row_values[i]
                q += 1
            else:
                out_indices[o] = indices[k]
                out_data[o] = data[k]
                k += 1
            o += 1


@njit(cache=True, nogil=True)
def values_at(indptr, indices, data, pattern_indptr, pattern_indices, out):
    """``out[q]`` = the value of the CSR matrix (indptr, indices, data) at
    the q-th entry of the pattern, 0 where it stores none; both sorted
    within rows."""
    for i in range(pattern_indptr.shape[0] - 1):
        k, stop = indptr[i], indptr[i + 1]
        for q in range(pattern_indptr[i], pattern_indptr[i + 1]):
            c = pattern_indices[q]
            while k < stop and indices[k] < c:
                k += 1
            out[q] = data[k] if k < stop and indices[k] == c else 0.0
