"""Numba kernels of the masked objective on a sparse pattern (``mask="stored"``).

Only the stored entries of a CSR (or CSC) matrix V are observed, so W H is
needed only there: :func:`stored_product` forms those entries, O(nnz M),
without forming W H. CSR is the triple (indptr, indices, data) with the
stored values of row o at data[indptr[o]:indptr[o + 1]] and their columns in
indices; CSC is the same with rows and columns exchanged. Kernels validate
nothing (their callers in :mod:`nmfsc.solvers.masked` check the input) and
release the GIL, so that groups of rows run on several threads.
"""

import numpy as np
from numba import njit

__all__ = ["stored_product", "stored_update_terms"]


@njit(cache=True, nogil=True)
def stored_product(indptr, indices, A, B, first, stop, out):
    """``out[k] = sum_j A[o, j] * B[indices[k], j]`` for the stored entries k
    of the outer rows ``first <= o < stop`` (rows of CSR, columns of CSC),
    each sum in float64.

    For CSR, A = W (N x M) and B = H^T (T x M); for CSC, A = H^T and B = W:
    ``out[k]`` is then (W H) at the k-th stored entry.
    """
    M = A.shape[1]
    for o in range(first, stop):
        for k in range(indptr[o], indptr[o + 1]):
            b = indices[k]
            y = 0.0
            for j in range(M):
                y += np.float64(A[o, j]) * np.float64(B[b, j])
            out[k] = y


@njit(cache=True, nogil=True)
def stored_update_terms(indptr, indices, values, A, B, first, stop, scatter, num, den):
    """The two sums of a weighted multiplicative update in one pass over the
    stored entries k of the outer rows ``first <= o < stop``: with
    ``c = indices[k]``, ``v = values[k]`` and ``y = sum_j A[o, j] B[c, j]``
    (in float64; (W H) at the entry),

    * ``scatter``: ``num[c] += v A[o]`` and ``den[c] += y A[o]``;
    * else:        ``num[o] += v B[c]`` and ``den[o] += y B[c]``.

    For CSR (A = W, B = H^T) the scatter gives (M * V)^T W and (M * W H)^T W
    (T x M, the H update's numerator and denominator transposed), the gather
    (M * V) H^T and (M * W H) H^T (N x M, the W update's); for CSC (A = H^T,
    B = W) the gather gives the H update's and the scatter the W update's.
    ``num`` and ``den`` are float64 and are added to (zero them first); a
    scatter's rows are shared between outer rows, so threads take their own.
    """
    M = A.shape[1]
    for o in range(first, stop):
        for k in range(indptr[o], indptr[o + 1]):
            c = indices[k]
            y = 0.0
            for j in range(M):
                y += np.float64(A[o, j]) * np.float64(B[c, j])
            v = np.float64(values[k])
            if scatter:
                for j in range(M):
                    a = np.float64(A[o, j])
                    num[c, j] += v * a
                    den[c, j] += y * a
            else:
                for j in range(M):
                    b = np.float64(B[c, j])
                    num[o, j] += v * b
                    den[o, j] += y * b
