r"""How far a fit is from a stationary point of its constrained problem.

For :math:`E(W, H) = \tfrac12 \lVert V - WH \rVert_F^2` the gradients are

.. math:: G_W = W (H H^T) - V H^T, \qquad G_H = (W^T W) H - W^T V .

A non-negative factor X with gradient G is stationary where the *projected
gradient* vanishes: :math:`G_{ij}` where :math:`X_{ij} > 0`, and
:math:`\min(G_{ij}, 0)` where :math:`X_{ij} = 0` (a zero entry whose gradient
is non-negative cannot improve by growing).

A vector x held to given L1 and L2 norms (a column of W under
``sparseness_w``, a row of H under ``sparseness_h``: the set nmf_sc's
projection lands on) is stationary where the gradient g satisfies the KKT
conditions of :math:`\{x \ge 0,\ \lVert x\rVert_1 = l_1,\ \lVert x\rVert_2 = l_2\}`:

.. math:: g + \mu \mathbf 1 + \nu x - \zeta = 0, \quad \zeta \ge 0,\quad \zeta_i x_i = 0 .

On the support S (:math:`x_i > 0`), :math:`(\mu, \nu)` is the least-squares
fit of :math:`-g_S` by :math:`\mathbf 1_S` and :math:`x_S`, and the residual
:math:`r_S = g_S + \mu \mathbf 1_S + \nu x_S` is the part of the gradient in
the tangent space of the set; off the support :math:`r_i = \min(g_i + \mu, 0)`
(an entry that would lower E by entering the support). The residual is the
gradient projected onto the set's tangent cone.

:func:`stationarity` reports, for each factor, the norm of its residual
relative to the norms of the gradient's two terms,

.. math:: \rho_W = \frac{\lVert R_W \rVert_F}
                         {\lVert W H H^T \rVert_F + \lVert V H^T \rVert_F},

(and :math:`\rho_H` alike), and their maximum. Each ratio lies in [0, 1] up to
rounding, is the same at any scale of V, W and H, needs no start to compare
with (so a resumed run reports the same), and is 0 exactly at a stationary
point.
"""

from __future__ import annotations

import numpy as np

from nmfsc.solvers._data import is_sparse

__all__ = ["constrained_residual", "projected_residual", "stationarity"]


def projected_residual(X, G):
    """The projected gradient of a non-negative factor X (entrywise): G where
    X > 0, min(G, 0) where X = 0."""
    return np.where(X > 0, G, np.minimum(G, 0.0))


def constrained_residual(X, G, axis):
    r"""The gradient G projected onto the tangent cone of the set that holds each
    column (``axis=0``) or row (``axis=1``) of X to its L1 and L2 norms and to
    non-negative entries (module docstring). An all-zero vector is left to the
    non-negative rule (:func:`projected_residual`)."""
    if axis == 1:
        return constrained_residual(X.T, G.T, 0).T
    X = np.asarray(X, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    support = X > 0
    count = support.sum(axis=0)
    ones_g = np.where(support, G, 0.0).sum(axis=0)
    x_g = (X * G).sum(axis=0)
    x_1 = X.sum(axis=0)
    x_x = (X * X).sum(axis=0)
    # Least squares of -g_S by [1_S, x_S]: the 2 x 2 normal equations per vector.
    det = count * x_x - x_1 * x_1
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = np.where(det > 0, -(x_x * ones_g - x_1 * x_g) / det, 0.0)
        nu = np.where(det > 0, -(count * x_g - x_1 * ones_g) / det, 0.0)
    # One entry (det = 0): x_S is a multiple of 1_S, fit by mu alone.
    single = (det <= 0) & (count > 0)
    mu = np.where(single, -ones_g / np.maximum(count, 1), mu)
    nu = np.where(single, 0.0, nu)
    residual = np.where(support, G + mu + nu * X, np.minimum(G + mu, 0.0))
    empty = count == 0
    if empty.any():
        residual[:, empty] = projected_residual(X[:, empty], G[:, empty])
    return residual


def _gradient_terms(V, W, H):
    """(W H H^T, V H^T, W^T W H, W^T V) for V / max|V| and W / max|V|, the two
    terms of each gradient in units where no square overflows or underflows
    (the ratios are the same at any scale); V itself is not copied."""
    scale = float(max(V.max(), -V.min())) if V.shape[0] * V.shape[1] else 0.0
    scale = scale if np.isfinite(scale) and scale > 0 else 1.0
    W = W / scale
    VHt = np.asarray(V @ H.T) / scale
    WtV = np.asarray((V.T @ W).T if is_sparse(V) else W.T @ V) / scale
    return W, W @ (H @ H.T), VHt, (W.T @ W) @ H, WtV


def stationarity(V, W, H, *, sparseness_w=None, sparseness_h=None):
    r"""How far ``(W, H)`` is from a stationary point of nmf_sc's problem.

    Parameters
    ----------
    V : ndarray or scipy.sparse matrix, shape (N, T)
    W : ndarray, shape (N, M)
    H : ndarray, shape (M, T)
    sparseness_w, sparseness_h : float, optional
        Whether W's columns (H's rows) are held to a sparseness, i.e. to their
        L1 and L2 norms; None: that factor is only non-negative.

    Returns
    -------
    dict
        ``W`` and ``H``: :math:`\rho_W`, :math:`\rho_H` (module docstring);
        ``max``: the larger, 0 at a stationary point. NaN where a factor's
        gradient terms are both zero (nothing to measure against).

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.solvers.stationarity import stationarity
    >>> rng = np.random.default_rng(0)
    >>> W, H = rng.random((6, 2)), rng.random((2, 5))
    >>> round(stationarity(W @ H, W, H)["max"], 12)  # an exact fit is stationary
    0.0
    """
    W = np.asarray(W, dtype=np.float64)
    H = np.asarray(H, dtype=np.float64)
    W, WHHt, VHt, WtWH, WtV = _gradient_terms(V, W, H)
    G_W, G_H = WHHt - VHt, WtWH - WtV
    R_W = constrained_residual(W, G_W, 0) if sparseness_w is not None else None
    R_H = constrained_residual(H, G_H, 1) if sparseness_h is not None else None
    R_W = projected_residual(W, G_W) if R_W is None else R_W
    R_H = projected_residual(H, G_H) if R_H is None else R_H
    out = {}
    for name, R, a, b in (("W", R_W, WHHt, VHt), ("H", R_H, WtWH, WtV)):
        scale = float(np.linalg.norm(a) + np.linalg.norm(b))
        out[name] = float(np.linalg.norm(R)) / scale if scale > 0 else float("nan")
    both = [out["W"], out["H"]]
    out["max"] = float("nan") if np.isnan(both).all() else float(np.nanmax(both))
    return out
