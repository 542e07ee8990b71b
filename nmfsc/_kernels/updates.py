"""Numba kernels for the elementwise parts of the NMF updates.

Every kernel takes arrays, modifies its first argument in place (or returns one
number) and validates nothing. The matrix products (W^T V, W^T W, H H^T, V H^T,
W H) stay in numpy, which hands them to BLAS; these kernels fuse what comes
after a product into one pass without temporaries.

Shapes follow the paper: V and W H are N x T, W is N x M, H is M x T.

``error_model="numpy"``: a division by zero gives inf or NaN as in numpy
instead of raising, so a degenerate iterate shows up in the objective.

Subnormal results are written as zero (:func:`flush_subnormal`). A
multiplicative update drives the entries it does not need geometrically to
zero, and after a few thousand iterations one entry in ten of CBCL's H is
subnormal (below 2.2e-308). On Intel CPUs every floating-point operation with
a subnormal operand takes a microcode assist, so a BLAS product of such an H
is many times slower than of the same H with those entries zero, and so are
nmf_sc's iterations (the measurements are in benchmarks/README.md). An entry
that small adds nothing to a sum of numbers above about 1e-292 (it is below
half their ulp), and zero times anything stays zero, so the iterates move only
in their last digits where such entries meet other tiny ones (after thousands
of iterations, the figures' objectives moved by at most 6e-6 relative, their
claims not at all); NaN is kept.
"""

import math

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy", inline="always")
def flush_subnormal(value, tiny):
    """``value``, or 0.0 if it is non-zero and smaller in magnitude than
    ``tiny`` (the smallest normal number of the array it is written to:
    ``np.finfo(dtype).tiny``). NaN is returned as it is."""
    return 0.0 if abs(value) < tiny else value


@njit(cache=True, nogil=True, error_model="numpy")
def multiplicative_update_into(X, num, den, eps, out, row_ss):
    """``out = X * (num / (den + eps))`` (Lee & Seung's Euclidean update,
    written to a new array or over ``den``: each entry is read before it is
    written), and ``row_ss[i] = sum_j out[i, j]**2`` (for
    :func:`scale_rows_to_unit_l2`).

    The sums of squares run in a second loop over the (cache-warm) rows with
    four interleaved partial sums: a single running sum would be one long
    dependency chain, several times slower than the update itself. The order is
    fixed, so the result is deterministic; it may differ from the sequential
    sum of :func:`normalize_rows_to_unit_l2` in the last bits.
    """
    rows, cols = X.shape
    tiny = np.finfo(out.dtype).tiny
    for i in range(rows):
        for j in range(cols):
            out[i, j] = flush_subnormal(X[i, j] * (num[i, j] / (den[i, j] + eps)), tiny)
    for i in range(rows):
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        j = 0
        while j + 4 <= cols:
            s0 += out[i, j] * out[i, j]
            s1 += out[i, j + 1] * out[i, j + 1]
            s2 += out[i, j + 2] * out[i, j + 2]
            s3 += out[i, j + 3] * out[i, j + 3]
            j += 4
        while j < cols:
            s0 += out[i, j] * out[i, j]
            j += 1
        row_ss[i] = (s0 + s1) + (s2 + s3)


@njit(cache=True, nogil=True, error_model="numpy")
def scale_rows_to_unit_l2(H, W, row_ss):
    """:func:`normalize_rows_to_unit_l2` with the rows' sums of squares given
    (as :func:`multiplicative_update_into` leaves them)."""
    M, T = H.shape
    N = W.shape[0]
    tiny = np.finfo(H.dtype).tiny
    for j in range(M):
        norm = math.sqrt(row_ss[j])
        if norm > 0.0:
            for t in range(T):
                H[j, t] = flush_subnormal(H[j, t] / norm, tiny)
            for i in range(N):
                W[i, j] *= norm


@njit(cache=True, error_model="numpy")
def outer_sum_update(X, num, r, c):
    """``X[i, j] *= num[i, j] / (r[i] + c[j])``.

    One kernel for every divergence-type update whose denominator is a row
    constant, a column constant or their sum: the divergence W step (r = 0,
    c = row sums of H), the divergence H step (r = column sums of W, c = 0),
    the sparse-NMF H step (r = 1 + alpha, c = 0) and the local-NMF W step
    (r = row sums of W, c = row sums of H). Adding an exact 0.0 changes nothing.
    """
    rows, cols = X.shape
    tiny = np.finfo(X.dtype).tiny
    for i in range(rows):
        for j in range(cols):
            X[i, j] = flush_subnormal(X[i, j] * (num[i, j] / (r[i] + c[j])), tiny)


@njit(cache=True, error_model="numpy")
def sqrt_update(X, num):
    """``X = sqrt(X * num)`` (local NMF's H step)."""
    rows, cols = X.shape
    for i in range(rows):
        for j in range(cols):
            X[i, j] = math.sqrt(X[i, j] * num[i, j])


@njit(cache=True, error_model="numpy")
def normalize_rows_to_unit_l2(H, W):
    """Scale every row of H to unit L2 norm and multiply W's columns by the old
    norms, so that W H is unchanged. A zero row is left as it is. The sums of
    squares run sequentially along each row."""
    M, T = H.shape
    row_ss = np.empty(M)
    for j in range(M):
        ss = 0.0
        for t in range(T):
            ss += H[j, t] * H[j, t]
        row_ss[j] = ss
    scale_rows_to_unit_l2(H, W, row_ss)


@njit(cache=True, error_model="numpy")
def normalize_columns_to_unit_sum(W):
    """Divide every column of W by its sum. A zero column is left as it is."""
    N, M = W.shape
    tiny = np.finfo(W.dtype).tiny
    for j in range(M):
        s = 0.0
        for i in range(N):
            s += W[i, j]
        if s > 0.0:
            for i in range(N):
                W[i, j] = flush_subnormal(W[i, j] / s, tiny)


@njit(cache=True, error_model="numpy")
def half_squared_residual(V, WH):
    """``0.5 * ||V - WH||_F^2`` in one pass, without forming V - WH."""
    rows, cols = V.shape
    total = 0.0
    for i in range(rows):
        acc = 0.0
        for j in range(cols):
            d = V[i, j] - WH[i, j]
            acc += d * d
        total += acc
    return 0.5 * total


@njit(cache=True, error_model="numpy")
def divergence_and_quotient(V, WH, eps, C):
    """Return ``D(V || WH) = sum(V log(V / WH) - V + WH)`` and write
    ``C = V / (WH + eps)`` in the same pass.

    Entries with V = 0 contribute WH to D (0 log 0 = 0) and 0 to C, the limit
    of both expressions; an entry with V > 0 and WH = 0 makes D infinite.
    """
    rows, cols = V.shape
    total = 0.0
    for i in range(rows):
        acc = 0.0
        for j in range(cols):
            v = V[i, j]
            y = WH[i, j]
            if v > 0.0:
                acc += v * math.log(v / y) - v + y
                C[i, j] = v / (y + eps)
            else:
                acc += y
                C[i, j] = 0.0
        total += acc
    return total


@njit(cache=True, error_model="numpy")
def quotient(V, WH, eps, C):
    """``C = V / (WH + eps)``, with 0 where V = 0 (also when WH + eps = 0)."""
    rows, cols = V.shape
    for i in range(rows):
        for j in range(cols):
            v = V[i, j]
            C[i, j] = v / (WH[i, j] + eps) if v > 0.0 else 0.0


# --------------------------------------------------------------------------
# Kernels for scipy.sparse data (nmfsc.solvers._data). A CSR matrix is the
# triple (indptr, indices, data) with the stored values of row o at
# data[indptr[o]:indptr[o + 1]] and their columns in indices; CSC is the same
# with rows and columns exchanged. Sums run in float64 whatever the dtype.
# --------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def compressed_quotient(indptr, indices, data, scale, A, B, eps, out, with_divergence):
    """At every stored entry k of a CSR (or CSC) matrix V, with
    ``y = sum_j A[o, j] * B[indices[k], j]`` (o its row, or column): write
    ``out[k] = v / (y + eps)`` with ``v = data[k] / scale`` (0 where v = 0),
    and, if ``with_divergence``, return ``sum(v log(v / y) - v)`` over the
    entries with v > 0 (else 0.0).

    For CSR, A = W (N x M) and B = H^T (T x M); for CSC, A = H^T and B = W:
    y is then (W H) at the entry, computed in float64 without forming W H.
    """
    n_outer = indptr.shape[0] - 1
    M = A.shape[1]
    total = 0.0
    for o in range(n_outer):
        acc = 0.0
        for k in range(indptr[o], indptr[o + 1]):
            b = indices[k]
            y = 0.0
            for j in range(M):
                y += A[o, j] * B[b, j]
            v = data[k] / scale
            if v > 0.0:
                out[k] = v / (y + eps)
                if with_divergence:
                    acc += v * math.log(v / y) - v
            else:
                out[k] = 0.0
        total += acc
    return total


@njit(cache=True)
def csr_rows_times_dense(indptr, indices, data, B, start, scale, out):
    """``out = V[start : start + len(out)] @ B / scale`` for CSR V (rows
    ``start`` on), without slicing V (which would copy the rows' values and
    indices). Each row is accumulated in stored order, as scipy's product,
    then divided by ``scale``."""
    rows, cols = out.shape
    for r in range(rows):
        for j in range(cols):
            out[r, j] = 0.0
        i = start + r
        for k in range(indptr[i], indptr[i + 1]):
            v = data[k]
            c = indices[k]
            for j in range(cols):
                out[r, j] += v * B[c, j]
        for j in range(cols):
            out[r, j] /= scale
