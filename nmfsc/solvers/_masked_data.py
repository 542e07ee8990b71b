r"""The data of a masked run: V observed only where a mask is true, and the
products the masked solvers take of it (:mod:`nmfsc.solvers.masked`).

The objective is :math:`E(W, H) = \tfrac12 \lVert \Omega \odot (\tilde V - W H)
\rVert_F^2` with :math:`\Omega` the mask (1 where V was observed) and
:math:`\tilde V = \Omega \odot V / s`, :math:`s` the largest observed entry.
The masked solvers ask a data object for

=====================================  ==========================================
``product(W, H)``                      :math:`Y = \Omega \odot (W H)`
``residual(Y)``                        :math:`R = Y - \tilde V` (zero where unobserved)
``half_squared(R)``                    :math:`\tfrac12 \lVert R \rVert_F^2`, in float64
``left(W, X)``, ``right(X, H)``        :math:`W^T X` (M x T), :math:`X H^T` (N x M)
``right_rows(H, X)``                   :math:`H X^T` (M x N, C-contiguous)
``wtv(W)``, ``vht(H)``                 :math:`W^T \tilde V`, :math:`\tilde V H^T`
``residual_energy(W, H, out)``         R and :math:`\tfrac12 \lVert R \rVert_F^2` in one pass
``residual_of(W, H)``                  R alone, where E is not wanted (the stationarity)
``h_terms(W, R)``, ``w_terms(H, R)``   a multiplicative update's two sums, from R
=====================================  ==========================================

where X is an "observed" matrix (Y, R or :math:`\tilde V`). Three kinds
(:func:`open_masked` picks):

:class:`MaskedDense` -- a dense V and a boolean mask of its shape. V's
unobserved entries are never read (they may be NaN): :math:`\tilde V` is a
copy with zeros there. Y and R are N x T arrays.

:class:`MaskedStored` -- a scipy.sparse CSR or CSC V with ``mask="stored"``:
the stored entries (explicit zeros included) are the observed ones. Y and R
are sparse matrices sharing V's indices; :math:`Y` is formed at the stored
entries alone by a Numba kernel (:func:`nmfsc._kernels.masked.stored_product`,
O(nnz M)), and neither V nor the mask is ever made dense: the memory beyond
the factors is O(nnz).

:class:`~nmfsc.solvers._masked_all_but.MaskedAllBut` -- a scipy.sparse V
observed at every entry but a sparse set (:meth:`Observed.all_but
<nmfsc.observed.Observed.all_but>`: its zeros are data, a few entries are
held out). R is the low-rank matrix W H minus a sparse one, kept as the
factors and W H on the unobserved entries; nothing is made dense
(:mod:`nmfsc.solvers._masked_all_but`).

The solvers work from R alone: :math:`\Omega \odot (W H) = R + \tilde V`, so
the multiplicative update's denominator is its numerator plus a product of
R (:meth:`MaskedDense.h_terms`), and one pass forms R and E together
(:meth:`MaskedDense.residual_energy`, into a buffer the caller reuses).
"""

from __future__ import annotations

import hashlib
from functools import partial

import numpy as np

from nmfsc import _entries
from nmfsc._kernels import masked as _km
from nmfsc._kernels import updates as _ku
from nmfsc._threads import run_groups, split, threads
from nmfsc._validation import check_data, reject_masked
from nmfsc.observed import Observed
from nmfsc.solvers._data import inner, is_sparse, total
from nmfsc.solvers._loop import Run
from nmfsc.solvers._masked_all_but import MaskedAllBut, drop_entries
from nmfsc.solvers.checkpoint import fingerprint
from nmfsc.solvers.stationarity import masked_stationarity

__all__ = ["MaskedDense", "MaskedStored", "open_masked"]

#: A stored product of at least this many entries runs on all threads.
PARALLEL_STORED = 1 << 16

#: What to do about NaN at an entry that the mask marks observed.
_OBSERVED_NAN = "NaN where mask is True: mark those entries missing, e.g. mask & ~np.isnan(V)"
_ALL_BUT_NAN = "NaN at an observed entry: add its position to the unobserved entries"
_STORED_NAN = (
    "a stored NaN is an observed entry with mask='stored': leave the missing ones out of V"
)


def open_masked(V, observed):
    """``(data, scale)`` of V at its ``observed`` entries (an
    :class:`~nmfsc.observed.Observed`); every check of V against them is
    here, each refusal one line naming the problem."""
    reject_masked(V, "V")
    if observed.unobserved is not None:
        if observed.unobserved.shape != V.shape:
            raise ValueError(
                f"the unobserved entries are of a {observed.unobserved.shape} matrix, "
                f"V is {V.shape}"
            )
        if not is_sparse(V):  # dense anyway: the dense mask of the same entries
            return open_masked(V, Observed(mask=observed.to_mask()))
        V, scale = check_data(drop_entries(V, observed.unobserved), nan_advice=_ALL_BUT_NAN)
        return MaskedAllBut(V, observed.unobserved, scale), scale
    if observed.stored:
        if not is_sparse(V):
            raise ValueError(
                "mask='stored' needs a scipy.sparse V (its stored entries are the observed "
                "ones); for a dense V pass a boolean array of V's shape"
            )
        V, scale = check_data(V, nan_advice=_STORED_NAN)
        return MaskedStored(V, scale), scale
    if is_sparse(V):
        raise ValueError(
            "a scipy.sparse V takes mask='stored' (observed = its stored entries); "
            "a boolean mask would make it dense: pass V.toarray() with that mask instead"
        )
    mask = observed.mask
    values = np.asanyarray(V)
    if mask.shape != values.shape:
        raise ValueError(f"mask must have V's shape {values.shape}, got {mask.shape}")
    if not mask.any():
        raise ValueError("mask has no observed entry (it is all False): there is nothing to fit")
    numeric = np.issubdtype(values.dtype, np.number) or values.dtype == np.bool_
    if numeric and values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    observed = np.where(mask, values, 0) if numeric else values  # else: check_data's TypeError
    try:
        observed, scale = check_data(observed, nan_advice=_OBSERVED_NAN)
    except ValueError as err:
        raise ValueError(f"{err} (checked at the observed entries only)") from None
    return MaskedDense(observed, mask, scale), scale


def _digest(*parts):
    digest = hashlib.sha256()
    for part in parts:
        digest.update(np.ascontiguousarray(part).data)
    return digest.hexdigest()


class MaskedDense:
    """Dense V with a boolean mask (module docstring)."""

    sparse = False

    def __init__(self, observed, mask, scale):
        self.mask = np.ascontiguousarray(mask)
        self.scale = scale
        self.V = observed / scale  # a new array: zeros where unobserved
        self.shape, self.dtype = self.V.shape, self.V.dtype
        self.vv = inner(self.V, self.V)
        self.count = int(np.count_nonzero(self.mask))

    def fingerprint(self):
        """The checkpoint's data fingerprint: V's observed values and the mask."""
        return f"{fingerprint(self.V * self.scale)}:mask:{_digest(self.mask)[:32]}"

    def product(self, W, H):
        Y = W @ H
        np.multiply(Y, self.mask, out=Y)
        return Y

    def residual(self, Y):
        return Y - self.V

    def half_squared(self, R):
        return 0.5 * inner(R, R)

    def left(self, W, X):
        return W.T @ X

    def right(self, X, H):
        return X @ H.T

    def right_rows(self, H, X):
        return H @ X.T

    def wtv(self, W):
        return W.T @ self.V

    def vht(self, H):
        return self.V @ H.T

    def mean(self):
        """The mean observed entry (NNDSVD's fill)."""
        return total(self.V) / self.count

    def residual_energy(self, W, H, out=None):
        """``(R, E)``: :math:`R = \\Omega \\odot (W H) - \\tilde V` and
        :math:`E = \\tfrac12 \\lVert R \\rVert_F^2` (float64), in one BLAS product
        into ``out`` (reused when it has R's shape and dtype, else a new
        array) and one pass of :func:`nmfsc._kernels.masked.masked_residual`
        over its rows, by threads over groups of rows."""
        dtype = np.result_type(W.dtype, H.dtype)
        if out is None or out.shape != self.shape or out.dtype != dtype:
            out = np.empty(self.shape, dtype=dtype)
        np.matmul(W, H, out=out)
        groups = threads() if out.size >= PARALLEL_STORED else 1
        kernel = partial(_km.masked_residual, out, self.V, self.mask)
        halves = run_groups([partial(kernel, a, b) for a, b in split(self.shape[0], groups)])
        return out, float(sum(halves))

    def residual_of(self, W, H):
        """R of (W, H) (:meth:`residual_energy`'s; its E comes with it at no
        extra pass)."""
        return self.residual_energy(W, H)[0]

    def h_terms(self, W, R):
        """The H update's numerator and denominator from R:
        :math:`W^T \\tilde V` and :math:`W^T (\\Omega \\odot W H) = W^T \\tilde V + W^T R`."""
        num = self.wtv(W)
        den = self.left(W, R)
        den += num
        return num, den

    def w_terms(self, H, R):
        """The W update's :math:`\\tilde V H^T` and :math:`\\tilde V H^T + R H^T`."""
        num = self.vht(H)
        den = self.right(R, H)
        den += num
        return num, den

    def w_update_residual(self, W, H, eps):
        """None: a dense W update and its residual are two steps
        (:meth:`MaskedStored.w_update_residual` fuses them)."""
        return None

    def half_squared_error(self, W, H):
        return self.residual_energy(W, H)[1]

    def relative_error(self, W, H):
        """``||mask * (V - W H)||_F / ||mask * V||_F`` (W in V / s's units)."""
        return float(np.sqrt(max(0.0, 2.0 * self.half_squared_error(W, H) / self.vv)))


class MaskedStored(MaskedDense):
    """scipy.sparse V whose stored entries are the observed ones (module docstring)."""

    sparse = True

    def __init__(self, V, scale):
        self.raw = V
        self.scale = scale
        self.csc = V.format == "csc"
        self.shape, self.dtype = V.shape, V.dtype
        self.values = V.data / scale  # V / s at the stored entries, O(nnz)
        self.V_sparse = self.with_values(self.values)
        self.vv = inner(self.values.reshape(1, -1), self.values.reshape(1, -1))
        self.count = V.nnz

    def fingerprint(self):
        return f"{fingerprint(self.raw)}:stored"

    def with_values(self, values):
        """A sparse matrix of V's pattern (indices shared, not copied) holding ``values``."""
        V = self.raw
        return type(V)((values, V.indices, V.indptr), shape=V.shape, copy=False)

    def product(self, W, H):
        """W H at the stored entries (:func:`nmfsc._entries.product_at`)."""
        dtype = np.result_type(W.dtype, H.dtype)
        return self.with_values(_entries.product_at(self.raw, W, H, dtype))

    def residual(self, Y):
        return self.with_values(Y.data - self.values)

    def residual_energy(self, W, H, out=None):
        """``(R, E)`` at the stored entries in one pass
        (:func:`nmfsc._kernels.masked.stored_residual`); R is a sparse matrix
        of V's pattern (``out`` is not used)."""
        V = self.raw
        values = np.empty(V.nnz, dtype=np.result_type(W.dtype, H.dtype))
        A, B = self._operands(W, H)
        halves = run_groups(
            [
                partial(_km.stored_residual, V.indptr, V.indices, self.values, A, B, a, b, values)
                for a, b in self._groups(W.shape[1])
            ]
        )
        return self.with_values(values), float(sum(halves))

    def w_update_residual(self, W, H, eps):
        """``(W', R, E)``: the weighted multiplicative W update
        :math:`W' = W \\odot (\\tilde V H^T) \\oslash ((\\Omega \\odot W H) H^T + \\epsilon)`
        and the residual and E of (W', H), for a CSR V in one pass over the
        stored entries (:func:`nmfsc._kernels.masked.stored_w_update_residual`).
        A CSC V's W step scatters, so its sums are complete only at the end of
        a pass: there the update takes one pass
        (:func:`~nmfsc._kernels.masked.stored_update_terms`) and R another."""
        V = self.raw
        dtype = np.result_type(W.dtype, H.dtype)
        W_new = np.empty(W.shape, dtype=dtype)
        if self.csc:
            num, den = self.w_update_terms(W, H)
            _ku.multiplicative_update_into(W, num, den, eps, W_new, np.empty(W.shape[0]))
            return W_new, *self.residual_energy(W_new, H)
        values = np.empty(V.nnz, dtype=dtype)
        kernel = partial(
            _km.stored_w_update_residual,
            V.indptr,
            V.indices,
            self.values,
            W,
            np.ascontiguousarray(H.T),
        )
        halves = run_groups(
            [partial(kernel, a, b, eps, W_new, values) for a, b in self._groups(W.shape[1])]
        )
        return W_new, self.with_values(values), float(sum(halves))

    def _operands(self, W, H):
        """``(A, B)`` of the kernels: (W, H^T) for CSR, (H^T, W) for CSC."""
        Ht = np.ascontiguousarray(H.T)
        return (Ht, W) if self.csc else (W, Ht)

    def _groups(self, M):
        """The outer rows' ranges, one per thread when the pass is large."""
        V = self.raw
        return split(V.indptr.shape[0] - 1, threads() if V.nnz * M >= PARALLEL_STORED else 1)

    def half_squared(self, R):
        values = R.data.reshape(1, -1)
        return 0.5 * inner(values, values)

    def left(self, W, X):
        return np.ascontiguousarray((X.T @ W).T)

    def right(self, X, H):
        return np.asarray(X @ H.T)

    def right_rows(self, H, X):
        return np.ascontiguousarray(self.right(X, H).T)

    def wtv(self, W):
        return self.left(W, self.V_sparse)

    def vht(self, H):
        return self.right(self.V_sparse, H)

    def mean(self):
        return total(self.values) / max(1, self.count)

    def w_update_terms(self, W, H):
        """(M * V) H^T and (M * W H) H^T in one pass over the stored entries
        (a CSC V's W update)."""
        return self._products_terms(W, H, scatter=self.csc, size=self.shape[0])

    def _products_terms(self, W, H, scatter, size):
        """``(num, den)`` of :func:`~nmfsc._kernels.masked.stored_update_terms`."""
        V = self.raw
        kernel = partial(_km.stored_update_terms, V.indptr, V.indices, self.values)
        return self._update_terms(kernel, *self._operands(W, H), scatter, size)

    def h_terms(self, W, R):
        """The H update's :math:`W^T \\tilde V` and :math:`W^T (\\Omega \\odot W H)`
        from R's values in one pass of
        :func:`nmfsc._kernels.masked.stored_sums` (no dot product: the entries
        of W H are R + V)."""
        num, den = self._sums(W, R, scatter=not self.csc, size=self.shape[1])
        return np.ascontiguousarray(num.T), np.ascontiguousarray(den.T)

    def w_terms(self, H, R):
        """The W update's :math:`\\tilde V H^T` and :math:`(\\Omega \\odot W H) H^T` from R."""
        return self._sums(np.ascontiguousarray(H.T), R, scatter=self.csc, size=self.shape[0])

    def _sums(self, weights, R, scatter, size):
        """The kernel's ``(num, den)``, each ``size`` x M, weighted by the rows
        of W (H step) or of H^T (W step): the kernel reads one of its
        operands A and B (the scatter A, the gather B), so the weights are
        passed as both."""
        V = self.raw
        kernel = partial(_km.stored_sums, V.indptr, V.indices, self.values, R.data)
        return self._update_terms(kernel, weights, weights, scatter, size)

    def _update_terms(self, kernel, A, B, scatter, size):
        """``(num, den)``, each ``size`` x M, of ``kernel(A, B, first, stop,
        scatter, num, den)`` (:func:`~nmfsc._kernels.masked.stored_update_terms`
        or :func:`~nmfsc._kernels.masked.stored_sums`): threads over groups of
        outer rows, each with its own sums when they scatter."""
        M = A.shape[1]
        groups = self._groups(M)
        count = len(groups) if scatter else 1
        sums = np.zeros((count, 2, size, M))
        calls = [
            partial(
                kernel,
                A,
                B,
                a,
                b,
                scatter,
                sums[g if scatter else 0, 0],
                sums[g if scatter else 0, 1],
            )
            for g, (a, b) in enumerate(groups)
        ]
        run_groups(calls)
        total_sums = sums.sum(axis=0) if count > 1 else sums[0]
        dtype = np.result_type(A.dtype, B.dtype)
        return total_sums[0].astype(dtype, copy=False), total_sums[1].astype(dtype, copy=False)


class MaskedRun(Run):
    """A :class:`~nmfsc.solvers._loop.Run` on masked data: the data and the
    checkpoint's fingerprint (V's observed values and the mask) are the mask's.

    ``MaskedRun(observed, make_steps, V, n_components, solver_params, settings)``,
    ``observed`` an :class:`~nmfsc.observed.Observed`; ``make_steps`` builds a
    masked steps class (:mod:`nmfsc.solvers.masked`).
    """

    def __init__(self, observed, *args):
        self.observed = observed
        super().__init__(*args)

    def open_data(self, V):
        self.data, self.scale = open_masked(V, self.observed)
        self.V = None  # never used: every product is the data object's

    def fingerprint(self):
        return self.data.fingerprint()

    def measures_stationarity(self):
        """Whether :attr:`NMFResult.stationarity` is measured: for the masked
        steps of the squared error that fit both factors."""
        return self.steps.measures_stationarity

    def stationarity(self, factors):
        """:func:`~nmfsc.solvers.stationarity.masked_stationarity` of the
        factors (W in V's units), or None where it is not measured."""
        if not self.measures_stationarity():
            return None
        return masked_stationarity(
            self.data,
            np.divide(factors["W"], self.scale, dtype=np.float64),
            factors["H"],
            sparseness_w=self.params.get("sparseness_w"),
            sparseness_h=self.params.get("sparseness_h"),
            average_sparseness=self.params.get("average_sparseness", False),
        )["max"]

    def data_columns(self, columns):
        """The observed entries of V's ``columns`` divided by its scale, zeros
        where unobserved (what :func:`~nmfsc.solvers._result.degenerate_counts`
        reads to tell a dead sample)."""
        data = self.data
        return (data.V_sparse if data.sparse else data.V)[:, columns]
