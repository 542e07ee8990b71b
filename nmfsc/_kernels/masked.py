"""Numba kernels of the masked objective: the residual of a dense V under a
boolean mask (:func:`masked_residual`), and the products on a sparse pattern
(``mask="stored"``).

Only the stored entries of a CSR (or CSC) matrix V are observed, so W H is
needed only there: :func:`stored_product` forms those entries, O(nnz M),
without forming W H. CSR is the triple (indptr, indices, data) with the
stored values of row o at data[indptr[o]:indptr[o + 1]] and their columns in
indices; CSC is the same with rows and columns exchanged. Kernels validate
nothing (their callers in :mod:`nmfsc.solvers.masked` check the input) and
release the GIL, so that groups of rows run on several threads.

Every kernel may reassociate its float64 sums (``fastmath={"reassoc"}``, no
other fast-math flag): an M-long dot product then runs on SIMD partial sums
instead of one dependency chain. The order is fixed
by the compiled code, so a run repeats itself bit for bit on one machine;
another CPU's vector width may move the last bits.
"""

import numpy as np
from numba import njit

from nmfsc._kernels.updates import flush_subnormal

__all__ = [
    "masked_residual",
    "stored_product",
    "stored_residual",
    "stored_sums",
    "stored_update_terms",
    "stored_w_update_residual",
]


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def masked_residual(Y, V, mask, first, stop):
    """In place on rows ``first <= i < stop`` of Y (= W H on entry):
    ``Y[i, t] = Y[i, t] * mask[i, t] - V[i, t]``, the residual
    Omega * (W H) - V (V is zero where unobserved); returns the half sum of
    its squares over those rows, each row summed in float64.

    One pass over the rows replaces numpy's mask product, subtraction and
    inner product (three passes and two N x T temporaries). The product by
    the mask (not a branch) keeps numpy's ``Y * mask`` (an infinite entry of
    W H gives NaN even where unobserved) and lets the loop vectorise; the
    row's sum may be reassociated (``fastmath={"reassoc"}``, SIMD partial
    sums), the only rounding that differs from numpy's ``vdot``."""
    total = 0.0
    for i in range(first, stop):
        y, v, m = Y[i], V[i], mask[i]
        row = 0.0
        for t in range(y.shape[0]):
            r = y[t] * m[t] - v[t]
            y[t] = r
            row += np.float64(r) * np.float64(r)
        total += row
    return 0.5 * total


@njit(inline="always", fastmath={"reassoc"})
def _stored_dot(A, B, o, b):
    """``sum_j A[o, j] B[b, j]`` in float64: (W H) at a stored entry."""
    y = 0.0
    for j in range(A.shape[1]):
        y += np.float64(A[o, j]) * np.float64(B[b, j])
    return y


@njit(inline="always", fastmath={"reassoc"})
def _add_terms(A, B, o, c, v, y, scatter, num, den):
    """One stored entry's share of an update's two sums (value v, W H there
    y): ``num[c] += v A[o]``, ``den[c] += y A[o]`` when ``scatter``, else
    ``num[o] += v B[c]``, ``den[o] += y B[c]`` (:func:`stored_update_terms`)."""
    M = A.shape[1]
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


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def stored_product(indptr, indices, A, B, first, stop, out):
    """``out[k] = sum_j A[o, j] * B[indices[k], j]`` for the stored entries k
    of the outer rows ``first <= o < stop`` (rows of CSR, columns of CSC),
    each sum in float64.

    For CSR, A = W (N x M) and B = H^T (T x M); for CSC, A = H^T and B = W:
    ``out[k]`` is then (W H) at the k-th stored entry.
    """
    for o in range(first, stop):
        for k in range(indptr[o], indptr[o + 1]):
            out[k] = _stored_dot(A, B, o, indices[k])


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def stored_residual(indptr, indices, values, A, B, first, stop, out):
    """``out[k] = y - values[k]`` with y (W H) at the stored entry k (as
    :func:`stored_product`), for the outer rows ``first <= o < stop``; returns
    the half sum of the squares of those ``out[k]``, in float64."""
    total = 0.0
    for o in range(first, stop):
        for k in range(indptr[o], indptr[o + 1]):
            r = _stored_dot(A, B, o, indices[k]) - np.float64(values[k])
            out[k] = r
            total += r * r
    return 0.5 * total


@njit(cache=True, nogil=True, fastmath={"reassoc"})
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
    for o in range(first, stop):
        for k in range(indptr[o], indptr[o + 1]):
            c = indices[k]
            y = _stored_dot(A, B, o, c)
            _add_terms(A, B, o, c, np.float64(values[k]), y, scatter, num, den)


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def stored_sums(indptr, indices, values, residuals, A, B, first, stop, scatter, num, den):
    """:func:`stored_update_terms` with (W H) at each stored entry k taken as
    ``y = residuals[k] + values[k]`` (R = (W H) - V at the stored entries,
    known) instead of the dot product: the two sums of a weighted
    multiplicative update in one pass of two M-long additions per entry."""
    for o in range(first, stop):
        for k in range(indptr[o], indptr[o + 1]):
            v = np.float64(values[k])
            y = np.float64(residuals[k]) + v
            _add_terms(A, B, o, indices[k], v, y, scatter, num, den)


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def stored_w_update_residual(indptr, indices, values, W, Ht, first, stop, eps, W_out, residuals):
    """The weighted multiplicative W update and the residual of its result,
    row by row of a CSR pattern, for the rows ``first <= o < stop``; returns
    the half sum of squares of the residuals written.

    For row o, with c the column and v the value of each stored entry k:
    ``num = sum_k v H^T[c]`` and ``den = sum_k y H^T[c]``, y = W[o] . H^T[c]
    (both in float64), then
    ``W_out[o] = W[o] * (num / (den + eps))`` (subnormals flushed, as
    :func:`nmfsc._kernels.updates.multiplicative_update_into`), then
    ``residuals[k] = W_out[o] . H^T[c] - v``. Row o's sums are complete
    after its own entries (CSR gathers the W step), so the new row and its
    residuals follow while its entries are in cache: one pass gives the
    update and the objective of the new iterate, which would otherwise take
    a second pass over the stored entries.
    """
    M = W.shape[1]
    tiny = np.finfo(W_out.dtype).tiny
    num = np.empty(M)
    den = np.empty(M)
    total = 0.0
    for o in range(first, stop):
        num[:] = 0.0
        den[:] = 0.0
        for k in range(indptr[o], indptr[o + 1]):
            c = indices[k]
            y = _stored_dot(W, Ht, o, c)
            v = np.float64(values[k])
            for j in range(M):
                b = np.float64(Ht[c, j])
                num[j] += v * b
                den[j] += y * b
        for j in range(M):
            W_out[o, j] = flush_subnormal(W[o, j] * (num[j] / (den[j] + eps)), tiny)
        for k in range(indptr[o], indptr[o + 1]):
            r = _stored_dot(W_out, Ht, o, indices[k]) - np.float64(values[k])
            residuals[k] = r
            total += r * r
    return 0.5 * total
