r"""The errors :func:`nmfsc.compare` reports, for dense and scipy.sparse V alike.

For V (N x T), W (N x M) and H (M x T):

- relative error :math:`e = \lVert V - WH \rVert_F / \lVert V \rVert_F`;
- rescaled relative error :math:`\min_c \lVert V - c\,WH \rVert_F / \lVert V \rVert_F`,
  reached at :math:`c^* = \langle V, WH \rangle / \lVert WH \rVert_F^2`
  (:math:`c^* = 0` and error 1 when :math:`WH = 0`).

Dense V: computed from the N x T product :math:`WH`, as compare always did
(the same bits). scipy.sparse V is never made dense and no N x T array is
formed: with :math:`v = \lVert V\rVert_F^2`, :math:`x = \langle W^T V, H\rangle`
(a sparse product, M x T) and :math:`q = \langle W^T W, H H^T\rangle = \lVert WH\rVert_F^2`,

.. math:: \lVert V - c\,WH \rVert_F^2 = v - 2 c\, x + c^2 q ,

so :math:`e^2 = (v - 2x + q) / v` and the rescaled error is
:math:`(v - x^2 / q) / v`, in O(nnz(V) M + (N + T) M^2). The expansion cancels
when the error is small next to :math:`\lVert V\rVert_F` (absolute error about
1e-16 :math:`v` in the squared norm); below ``EXACT_BELOW`` :math:`v` the
squared error is computed exactly, by blocks of :math:`WH` (see
:class:`nmfsc.solvers._data.ScaledData`), as the solvers do for their own
objective. The two ways agree to about 1e-12 relative.
"""

from __future__ import annotations

import numpy as np

from nmfsc.solvers.framework import EXACT_BELOW, ScaledData, inner, is_sparse

__all__ = ["frobenius_norm", "relative_error", "rescaled_error"]


def frobenius_norm(V):
    r""":math:`\lVert V \rVert_F` of dense or scipy.sparse V (its stored values only)."""
    if is_sparse(V):
        return float(np.sqrt(ScaledData(V, 1.0).vv))
    return float(np.linalg.norm(V))


def _sparse_terms(V, W, H):
    """The ScaledData of V and :math:`(v, x, q)` of the module docstring."""
    data = ScaledData(V, 1.0)
    cross = inner(data.wtv(W), H)
    quad = inner(W.T @ W, H @ H.T)
    return data, data.vv, cross, quad


def _squared(data, vv, value, W, H, c):
    """``value`` (an expanded ||V - c W H||^2), or the exact one when it is small."""
    if value >= EXACT_BELOW * vv:
        return value
    return 2.0 * data.exact_half_squared_error(c * W if c != 1.0 else W, H)


def relative_error(V, W, H, norm_V=None):
    r""":math:`\lVert V - WH \rVert_F / \lVert V \rVert_F` (``norm_V``: the
    denominator if the caller has it)."""
    if not is_sparse(V):
        norm_V = float(np.linalg.norm(V)) if norm_V is None else norm_V
        return float(np.linalg.norm(V - W @ H) / norm_V)
    data, vv, cross, quad = _sparse_terms(V, W, H)
    squared = _squared(data, vv, vv - 2.0 * cross + quad, W, H, 1.0)
    return float(np.sqrt(max(squared, 0.0) / vv))


def rescaled_error(V, W, H):
    r"""The best scalar rescaling of WH and its error.

    Returns
    -------
    (float, float)
        :math:`c^* = \langle V, WH\rangle / \lVert WH\rVert_F^2` and
        :math:`\lVert V - c^* WH\rVert_F / \lVert V\rVert_F`.
    """
    if not is_sparse(V):
        WH = W @ H
        denom = float(np.vdot(WH, WH))
        c = float(np.vdot(V, WH)) / denom if denom > 0 else 0.0
        return c, float(np.linalg.norm(V - c * WH) / np.linalg.norm(V))
    data, vv, cross, quad = _sparse_terms(V, W, H)
    c = cross / quad if quad > 0 else 0.0
    squared = _squared(data, vv, vv - 2.0 * c * cross + c * c * quad, W, H, c)
    return float(c), float(np.sqrt(max(squared, 0.0) / vv))
