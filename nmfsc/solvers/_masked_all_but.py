r"""The data of a masked run on a scipy.sparse V observed at every entry but
a sparse set U: a count or TF-IDF matrix, whose zeros are data, with some
entries held out (:meth:`nmfsc.observed.Observed.all_but`).

The objective is the masked one of :mod:`nmfsc.solvers._masked_data`,
:math:`E = \tfrac12 \lVert \Omega \odot (\tilde V - W H) \rVert_F^2`, with
:math:`\Omega` zero on U alone and :math:`\tilde V` V divided by its largest
observed entry, zero on U (V's values there are never read). Neither V nor
the mask is made dense, and W H is never formed: the residual is a low-rank
matrix minus a sparse one,

.. math:: R = \Omega \odot (W H) - \tilde V = W H - Q, \qquad
   Q = \tilde V + P_U(W H),

:math:`P_U(W H)` the entries of W H on U (:math:`|U|` dot products of
length M). So every product the masked solvers take of R is a product of
the factors' Gram matrices and of two sparse matrices,

.. math:: W^T R = (W^T W) H - W^T \tilde V - W^T P_U(W H), \qquad
   R H^T = W (H H^T) - \tilde V H^T - P_U(W H) H^T,

and E by the Gram expansion,

.. math:: 2E = \langle W^T W, H H^T \rangle - 2 \langle W^T \tilde V, H \rangle
   - \lVert P_U(W H) \rVert^2 + \lVert \tilde V \rVert^2 .

Each costs O(M (nnz(V) + |U|) + M^2 (N + T)), and the memory beyond the
factors is O(nnz(V) + |U|). :class:`LowRankResidual` is R in that form; the
masked solvers (:mod:`nmfsc.solvers.masked`) take it where they take the
dense or stored R of the other kinds.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from nmfsc import _entries
from nmfsc.solvers._data import BLOCK_ENTRIES, EXACT_BELOW, inner, total
from nmfsc.solvers.checkpoint import fingerprint

__all__ = ["LowRankResidual", "MaskedAllBut", "drop_entries"]


def drop_entries(V, pattern):
    """A scipy.sparse V as CSR without its stored entries on ``pattern`` (a CSR
    pattern of V's shape, sorted within rows), duplicates summed; their
    values are never read, so a NaN there is no error."""
    V = V.tocsr(copy=True)
    V.sum_duplicates()
    return _entries.keep_entries(V, ~_entries.in_pattern(V, pattern))


class LowRankResidual:
    """The residual :math:`R = W H - Q` of (W, H) (module docstring): the
    factors and ``at_unobserved``, W H on U in U's CSR order (float64)."""

    def __init__(self, W, H, at_unobserved, pattern):
        self.W, self.H = W, H
        self.at_unobserved = at_unobserved
        self._pattern = pattern

    def unobserved_part(self):
        """:math:`P_U(W H)` as a CSR matrix of U's pattern."""
        U = self._pattern
        return sparse.csr_array((self.at_unobserved, U.indices, U.indptr), shape=U.shape)


class MaskedAllBut:
    """A scipy.sparse V observed at every entry but the CSR ``pattern`` U
    (module docstring). ``V`` is checked, without its entries on U
    (:func:`drop_entries`), and ``scale`` its largest entry."""

    sparse = True

    def __init__(self, V, pattern, scale):
        self.raw = V
        self.pattern = pattern
        self.scale = scale
        self.shape, self.dtype = V.shape, V.dtype
        self.V_sparse = V / scale  # zero on U: its entries there are not stored
        self.vv = inner(self.V_sparse.data.reshape(1, -1), self.V_sparse.data.reshape(1, -1))
        self.count = V.shape[0] * V.shape[1] - pattern.nnz
        self._wtv = None  # (W, W^T V) of the last W (wtv)

    def fingerprint(self):
        """The checkpoint's data fingerprint: V's observed values and U."""
        U = self.pattern
        digest = fingerprint(sparse.csr_array((np.ones(U.nnz), U.indices, U.indptr), U.shape))
        return f"{fingerprint(self.raw)}:all-but:{digest}"

    def at_unobserved(self, W, H, pattern=None):
        """W H at the stored entries of ``pattern`` (U by default; a CSC
        pattern gives them in its order), float64
        (:func:`nmfsc._entries.product_at`)."""
        return _entries.product_at(self.pattern if pattern is None else pattern, W, H)

    def residual_energy(self, W, H, out=None):
        """``(R, E)``: R a :class:`LowRankResidual`, E by the Gram expansion
        (module docstring), float64; exactly by blocks of rows of W H where
        the expansion is below ``EXACT_BELOW`` of :math:`\\lVert \tilde V
        \rVert^2` (its cancellation would then cost the fit's digits), as
        for an unmasked sparse V (``out`` is not used)."""
        R = self.residual_of(W, H)
        quad = inner(_gram(W.T), _gram(H))
        cross = inner(np.asarray(self.wtv(W), dtype=np.float64), H)
        hidden = float(np.dot(R.at_unobserved, R.at_unobserved))
        energy = 0.5 * (quad - 2.0 * cross - hidden + self.vv)
        if energy >= EXACT_BELOW * self.vv:
            return R, energy
        return R, self.exact_half_squared_error(W, H)

    def residual_of(self, W, H):
        """R of (W, H) alone, a :class:`LowRankResidual`: without E, whose
        Gram expansion and (near an exact fit) O(N T M) recomputation
        :meth:`residual_energy` would add."""
        return LowRankResidual(W, H, self.at_unobserved(W, H), self.pattern)

    def exact_half_squared_error(self, W, H):
        """:math:`\tfrac12 \\lVert \\Omega \\odot (\tilde V - W H) \rVert^2` by
        blocks of rows of W H (``BLOCK_ENTRIES`` entries each), zero on U:
        O(N T M) time, O(block) memory."""
        N, T = self.shape
        step = max(1, BLOCK_ENTRIES // max(1, T))
        U, result = self.pattern, 0.0
        for start in range(0, N, step):
            part = slice(start, min(N, start + step))
            R = np.asarray(W[part] @ H, dtype=np.float64)
            R -= self.V_sparse[part].toarray()
            local = U[part]
            rows = np.repeat(np.arange(local.shape[0]), np.diff(local.indptr))
            R[rows, local.indices] = 0.0
            result += inner(R, R)
        return 0.5 * result

    def half_squared_error(self, W, H):
        return self.residual_energy(W, H)[1]

    def relative_error(self, W, H):
        """``||mask * (V - W H)||_F / ||mask * V||_F`` (W in V / s's units)."""
        return float(np.sqrt(max(0.0, 2.0 * self.half_squared_error(W, H) / self.vv)))

    def wtv(self, W):
        """:math:`W^T \\tilde V` (M x T), read-only: kept for the last W asked
        for (the same array object), since the H step asks for it at its
        gradient and at every line-search trial's E with W unchanged (the
        solvers never modify their factors in place)."""
        kept = self._wtv
        if kept is not None and kept[0] is W:
            return kept[1]
        value = np.ascontiguousarray((self.V_sparse.T @ W).T)
        value.flags.writeable = False
        self._wtv = (W, value)
        return value

    def vht(self, H):
        """:math:`\\tilde V H^T` (N x M)."""
        return np.asarray(self.V_sparse @ H.T)

    def mean(self):
        """The mean observed entry (NNDSVD's fill)."""
        return total(self.V_sparse.data) / max(1, self.count)

    def left(self, W, R):
        """:math:`W^T R` (M x T)."""
        num, den = self.h_terms(W, R)
        den -= num
        return den

    def right(self, R, H):
        """:math:`R H^T` (N x M)."""
        num, den = self.w_terms(H, R)
        den -= num
        return den

    def right_rows(self, H, R):
        """:math:`H R^T` (M x N, C-contiguous)."""
        return np.ascontiguousarray(self.right(R, H).T)

    def h_terms(self, W, R):
        """The H update's :math:`W^T \\tilde V` and
        :math:`W^T (\\Omega \\odot W H) = (W^T W) H - W^T P_U(W H)`."""
        dtype = np.result_type(W.dtype, R.H.dtype)
        num = self.wtv(W).astype(dtype, copy=False)
        den = _gram(W.T) @ R.H - (R.unobserved_part().T @ W).T
        return num, np.ascontiguousarray(den, dtype=dtype)

    def w_terms(self, H, R):
        """The W update's :math:`\\tilde V H^T` and
        :math:`(\\Omega \\odot W H) H^T = W (H H^T) - P_U(W H) H^T`."""
        dtype = np.result_type(R.W.dtype, H.dtype)
        num = self.vht(H).astype(dtype, copy=False)
        den = R.W @ _gram(H) - R.unobserved_part() @ H.T
        return num, np.ascontiguousarray(den, dtype=dtype)

    def w_update_residual(self, W, H, eps):
        """None: the W update and its residual are two steps."""
        return None


def _gram(X):
    """X X^T in float64."""
    X = np.asarray(X, dtype=np.float64)
    return X @ X.T
