r"""The data V of a run and every product the solvers take of it.

The update rules (the Steps classes) never touch V itself: they ask a data
object for the products below, all of the *normalised* data
:math:`\tilde V = V / s`, :math:`s = \max(V)`:

=====================================  ==========================================
``wtv(W)``, ``vht(H)``                 :math:`W^T \tilde V` (M x T), :math:`\tilde V H^T` (N x M)
``hvt(H)``                             :math:`H \tilde V^T` (M x N, C-contiguous)
``vht_blocks(H)``                      :math:`\tilde V H^T` by blocks of rows
``vv``                                 :math:`\lVert \tilde V \rVert_F^2` (float64)
``half_squared_error(W, H)``           :math:`\tfrac12 \lVert \tilde V - W H \rVert_F^2`
``divergence_and_quotient(W, H, e, C)``  :math:`\sum \tilde V \log(\tilde V / WH) - \tilde V`
                                       :math:`+ WH`, and :math:`C = \tilde V \oslash (WH + e)`
``quotient(W, H, e, C)``               :math:`C` alone
``wtc(W, C)``, ``cht(C, H)``           :math:`W^T C`, :math:`C H^T`
=====================================  ==========================================

Two kinds (:func:`make_data` picks):

:class:`DenseData` -- an in-memory ndarray (float64 or float32): ``V / s`` is
copied once (not when s = 1) and the products are numpy's, cut into blocks of
a fixed size on nmfsc's threads (:mod:`nmfsc._blocked`: the same bits on any
number of threads). Only the
divergence solvers keep an N x T buffer for W H. float32 data keeps float32
products (BLAS sgemm); the scalar sums of the objective run in float64
(:func:`inner`).

:class:`ScaledData` -- V used as given, never copied and never made dense: a
scipy.sparse CSR or CSC matrix or array, or a memory-mapped ndarray. Every
product is taken of V and divided by s (:math:`(V H^T) / s`, ...). The
Euclidean objective is expanded,

.. math:: \tfrac12 \lVert \tilde V - W H \rVert^2 = \tfrac12 \big(\lVert \tilde V\rVert^2
          - 2 \langle W^T \tilde V, H \rangle + \langle W^T W, H H^T \rangle\big),

and recomputed exactly, by blocks of about 2^20 entries of W H, when it is
below ``EXACT_BELOW`` ||V||^2 (where the expansion's cancellation would cost
relative accuracy). The divergence needs (W H) only at V's stored entries (a
Numba kernel over the CSR / CSC indices, O(nnz M)): every entry contributes
its y = (W H)_it, which sum to :math:`(\mathbf 1^T W)(H \mathbf 1)`, and only
the entries with v > 0 add :math:`v \log(v / y) - v`, so
:math:`D = \sum_{v > 0} (v \log(v / y) - v) + (\mathbf 1^T W)(H \mathbf 1)`.
C is a sparse matrix sharing V's indices (only its values are new).

Every scale: the products of V taken before the division by s overflow when
s is huge (s N max|H| above the dtype's maximum) and lose their bits when s
is tiny, and :math:`\lVert V\rVert^2` does so far sooner. So
:math:`\lVert \tilde V\rVert^2` is always summed from :math:`V / s` (by
blocks), and outside :func:`divides_first`'s range (s^2 not a normal number of
V's dtype: s outside about [1e-154, 1e154] for float64, [1e-19, 1e19] for
float32) the products are taken of :math:`V / s` too: sparse V's stored
values are divided once (a copy of the values, sharing V's indices), a memory
map is read and divided by blocks of rows.
"""

from __future__ import annotations

import numpy as np

from nmfsc import _blocked
from nmfsc._blocked import inner
from nmfsc._kernels import updates as _k

__all__ = [
    "EXACT_BELOW",
    "DenseData",
    "ScaledData",
    "divides_first",
    "frobenius_norm",
    "normalised_squares",
    "inner",
    "is_sparse",
    "make_data",
    "total",
]

#: An expanded Euclidean objective below this fraction of ||V||^2 is
#: recomputed exactly (see :func:`nmfsc.solvers._objective.expanded_objective`).
EXACT_BELOW = 1e-4

#: Entries of W H formed at a time by the blocked exact objective.
BLOCK_ENTRIES = 1 << 20


def is_sparse(V):
    """Whether V is a scipy.sparse matrix or array (duck-typed: scipy is not imported)."""
    return hasattr(V, "nnz") and hasattr(V, "tocsr")


def total(X):
    """``sum(X)`` as a Python float, accumulated in float64."""
    if X.dtype == np.float64:
        return float(np.sum(X))
    return float(np.sum(X, dtype=np.float64))


def divides_first(scale, dtype):
    """Whether the products of V must be taken of ``V / scale`` (not of V, then
    divided): when ``scale**2`` is not a normal number of ``dtype`` (module
    docstring), where a product of V with the factors can overflow or fall
    into the subnormals."""
    info = np.finfo(np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.float64)
    return not float(np.sqrt(info.tiny)) <= scale <= float(np.sqrt(info.max))


def _row_blocks(V, scale, dtype):
    """``(rows, V[rows] / scale)`` in ``dtype`` by blocks of about 2^16 entries:
    no copy of dense or mapped V is ever whole."""
    step = max(1, (BLOCK_ENTRIES // 16) // max(1, V.shape[1]))
    for start in range(0, V.shape[0], step):
        rows = slice(start, min(V.shape[0], start + step))
        yield rows, np.asarray(V[rows], dtype=dtype) / np.dtype(dtype).type(scale)


def normalised_squares(V, scale):
    """``||V / scale||_F^2`` summed in float64 from V / scale (dense V by blocks
    of rows, sparse V from its stored values): no square of V itself is taken,
    so that it neither overflows nor underflows whatever the scale."""
    if is_sparse(V):
        values = V.data.astype(np.float64) / scale
        return inner(values, values)
    squares = 0.0
    for _, block in _row_blocks(V, scale, np.float64):
        squares += inner(block, block)
    return squares


def frobenius_norm(V, scale):
    """``||V||_F`` computed as ``scale * ||V / scale||_F`` (scale: max(V)), so that
    it neither overflows nor underflows where the norm itself is a float64;
    dense V by blocks of rows (no copy of V), sparse V from its stored values."""
    return scale * float(np.sqrt(normalised_squares(V, scale)))


def make_data(V, scale):
    """The data object of checked V (:func:`nmfsc._validation.check_data`):
    :class:`ScaledData` for scipy.sparse or memory-mapped V, else :class:`DenseData`."""
    if is_sparse(V) or isinstance(V, np.memmap):
        return ScaledData(V, scale)
    return DenseData(V, scale)


class DenseData:
    """In-memory dense V: ``V / scale`` copied once, products by numpy (module docstring)."""

    sparse = False

    def __init__(self, V, scale):
        self.raw = V
        self.scale = scale
        self.V = V if scale == 1.0 else V / scale
        self.shape, self.dtype = V.shape, V.dtype
        self.vv = inner(self.V, self.V)
        self._WH = None  # the W H buffer, allocated when first needed

    def wh_buffer(self):
        if self._WH is None:
            self._WH = np.empty_like(self.V)
        return self._WH

    def wtv(self, W, out=None):
        """W^T V, written into ``out`` (M x T, C-contiguous) if given."""
        return _blocked.matmul_columns(W.T, self.V, out=out)

    def vht(self, H):
        return _blocked.matmul_summed(self.V, H.T)

    def hvt(self, H):
        """H V^T, in the layout of nmf_sc's projected W step (one column of W
        per row): one product, no transposed copy of V H^T."""
        return _blocked.matmul_summed(H, self.V.T)

    def vht_blocks(self, H):
        """V H^T as one block: ``(slice(None), V H^T)``."""
        yield slice(None), self.vht(H)

    def mean(self):
        return total(self.V) / self.V.size

    def half_squared_error(self, W, H):
        """``0.5 ||V - W H||^2`` from W H formed by blocks of columns
        (:func:`nmfsc._blocked.half_squared_error`): no N x T array is made."""
        return _blocked.half_squared_error(self.V, W, H)

    def relative_error(self, W_normalised, H):
        """``||V - W H||_F / ||V||_F``, computed on the normalised data as
        ``||V / s - W_normalised H||_F / ||V / s||_F`` (the same number, with no
        overflow or underflow whatever the scale of V)."""
        return float(np.sqrt(2.0 * self.half_squared_error(W_normalised, H) / self.vv))

    def new_quotient(self):
        return np.empty_like(self.V)

    def divergence_and_quotient(self, W, H, eps, C):
        WH = self.wh_buffer()
        np.matmul(W, H, out=WH)
        return _k.divergence_and_quotient(self.V, WH, eps, C)

    def quotient(self, W, H, eps, C):
        WH = self.wh_buffer()
        np.matmul(W, H, out=WH)
        _k.quotient(self.V, WH, eps, C)

    def wtc(self, W, C):
        return W.T @ C

    def cht(self, C, H):
        return C @ H.T


class ScaledData:
    """V as given (scipy.sparse CSR / CSC, or a memory map): products of V
    divided by ``scale`` (of V / scale outside :func:`divides_first`'s range:
    sparse V's values divided once, mapped V by blocks); no N x T temporaries
    (module docstring)."""

    def __init__(self, V, scale):
        self.raw = V
        self.scale = scale
        self.shape, self.dtype = V.shape, V.dtype
        self.sparse = is_sparse(V)
        self.csc = self.sparse and V.format == "csc"
        self.vv = normalised_squares(V, scale)
        #: ``values / divisor`` is V / s: V and s, or (outside divides_first's
        #: range) sparse V / s and 1; mapped V is then read by blocks, divided.
        self.values, self.divisor = V, scale
        self.blocked = False
        if divides_first(scale, V.dtype):
            if self.sparse:
                normalised = (V.data / V.data.dtype.type(scale), V.indices, V.indptr)
                self.values = type(V)(normalised, shape=V.shape, copy=False)
                self.divisor = 1.0
            else:
                self.blocked = True

    # --- the Euclidean products ---------------------------------------------
    def wtv(self, W, out=None):
        """W^T V, written into ``out`` (M x T, C-contiguous) if given."""
        M, T = W.shape[1], self.shape[1]
        if out is None:
            out = np.empty((M, T), dtype=np.result_type(W.dtype, self.dtype))
        if self.blocked:
            out[...] = 0.0
            for rows, block in _row_blocks(self.raw, self.scale, out.dtype):
                out += W[rows].T @ block
        elif self.sparse:
            np.divide((self.values.T @ W).T, self.divisor, out=out)
        else:
            np.divide(W.T @ self.values, self.divisor, out=out)
        return out

    def vht(self, H):
        if self.blocked:
            out = np.empty((self.shape[0], H.shape[0]), dtype=np.result_type(H.dtype, self.dtype))
            for rows, block in _row_blocks(self.raw, self.scale, out.dtype):
                out[rows] = block @ H.T
            return out
        out = np.asarray(self.values @ H.T)
        if self.divisor != 1.0:
            out /= self.divisor
        return out

    def hvt(self, H):
        """H V^T (M x N, C-contiguous): V H^T transposed."""
        return np.ascontiguousarray(self.vht(H).T)

    def vht_blocks(self, H):
        """``(rows, (V H^T)[rows])`` by blocks of about 2^16 entries of V H^T
        (CSR or mapped V: row slices are cheap); CSC V in one block."""
        N = self.shape[0]
        step = max(1, (BLOCK_ENTRIES // 16) // H.shape[0])
        if self.csc or step >= N or self.blocked:
            yield slice(None), self.vht(H)
            return
        # The kernel reads H^T through a transposed view (the same operations,
        # the same bits as on a copy, about as fast): no M x T copy is held.
        Ht = H.T if self.sparse else np.ascontiguousarray(H.T)
        V = self.values
        for start in range(0, N, step):
            rows = slice(start, min(N, start + step))
            if self.sparse:  # a Numba kernel: V[rows] would copy the rows' values
                out = np.empty((rows.stop - start, Ht.shape[1]), dtype=Ht.dtype)
                _k.csr_rows_times_dense(V.indptr, V.indices, V.data, Ht, start, self.divisor, out)
            else:
                out = np.asarray(V[rows]) @ Ht
                out /= self.divisor
            yield rows, out

    def mean(self):
        if self.blocked:
            return sum(total(b) for _, b in _row_blocks(self.raw, self.scale, np.float64)) / (
                self.shape[0] * self.shape[1]
            )
        values = self.values.data if self.sparse else self.values
        return total(values) / self.divisor / (self.shape[0] * self.shape[1])

    def half_squared_error(self, W, H):
        """By the expansion (one product with V), exactly by blocks when small."""
        energy = 0.5 * (self.vv - 2.0 * inner(self.wtv(W), H) + inner(W.T @ W, H @ H.T))
        if energy >= EXACT_BELOW * self.vv:
            return energy
        return self.exact_half_squared_error(W, H)

    def exact_half_squared_error(self, W, H):
        """``0.5 ||V / s - W H||^2`` by blocks of rows (columns for CSC) of W H."""
        N, T = self.shape
        result = 0.0
        along = T if self.csc else N
        step = max(1, BLOCK_ENTRIES // max(1, N if self.csc else T))
        for start in range(0, along, step):
            part = slice(start, min(along, start + step))
            if self.csc:
                R, block = W @ H[:, part], self.raw[:, part]
            else:
                R, block = W[part] @ H, self.raw[part]
            block = block.toarray() if self.sparse else np.asarray(block)
            R -= block / self.scale
            result += inner(R, R)
        return 0.5 * result

    def relative_error(self, W_normalised, H):
        """``||V - W H||_F / ||V||_F``, from the normalised data (W_normalised in V / s's units)."""
        return float(np.sqrt(max(0.0, 2.0 * self.half_squared_error(W_normalised, H) / self.vv)))

    # --- the divergence products ---------------------------------------------
    def new_quotient(self):
        """A quotient holder: V's pattern with new values (sparse), or an N x T array."""
        if not self.sparse:
            return np.empty(self.shape, dtype=self.dtype)
        V = self.raw
        return type(V)((np.empty_like(V.data), V.indices, V.indptr), shape=V.shape, copy=False)

    def _sparse_quotient(self, W, H, eps, C, with_divergence):
        Ht = np.ascontiguousarray(H.T)
        A, B = (Ht, W) if self.csc else (W, Ht)
        V = self.values
        return _k.compressed_quotient(
            V.indptr, V.indices, V.data, self.divisor, A, B, eps, C.data, with_divergence
        )

    def _dense_blocks(self, W, H, eps, C, kernel):
        N, T = self.shape
        step = max(1, BLOCK_ENTRIES // T)
        result = 0.0
        for start in range(0, N, step):
            rows = slice(start, min(N, start + step))
            block = np.asarray(self.raw[rows]) / self.scale
            value = kernel(block, W[rows] @ H, eps, C[rows])
            result += 0.0 if value is None else value
        return result

    def divergence_and_quotient(self, W, H, eps, C):
        if not self.sparse:
            return self._dense_blocks(W, H, eps, C, _k.divergence_and_quotient)
        stored = self._sparse_quotient(W, H, eps, C, True)
        col_sums = W.sum(axis=0, dtype=np.float64)
        row_sums = H.sum(axis=1, dtype=np.float64)
        return stored + float(col_sums @ row_sums)

    def quotient(self, W, H, eps, C):
        if not self.sparse:
            self._dense_blocks(W, H, eps, C, _k.quotient)
        else:
            self._sparse_quotient(W, H, eps, C, False)

    def wtc(self, W, C):
        if not self.sparse:
            return W.T @ C
        return np.ascontiguousarray((C.T @ W).T)

    def cht(self, C, H):
        return np.asarray(C @ H.T)
