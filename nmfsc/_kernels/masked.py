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

__all__ = ["stored_product"]


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
