r"""How far a fit is from a stationary point of its constrained problem.

For :math:`E(W, H) = \tfrac12 \lVert V - WH \rVert_F^2` the gradients are

.. math:: G_W = W (H H^T) - V H^T, \qquad G_H = (W^T W) H - W^T V .

A fit is stationary where no feasible direction lowers E to first order: the
gradient projected onto the tangent cone of the feasible set is zero. Each
factor's residual is measured as follows.

**A non-negative factor** X (no sparseness target): the *gradient mapping*
:math:`L\,(X - \max(X - G/L, 0))`, entrywise :math:`G_{ij}` where
:math:`G_{ij} < 0` and :math:`\min(G_{ij}, L X_{ij})` elsewhere, with
:math:`L` the block's Lipschitz constant (:math:`\lVert HH^T\rVert_2` for W,
:math:`\lVert W^TW\rVert_2` for H). At an exact zero it is the projected
gradient :math:`\min(G_{ij}, 0)`; at a tiny positive entry (which
multiplicative updates approach but never reach) it is tiny, so the measure
falls continuously as such a fit converges.

**A vector held to a sparseness** (its entries non-negative, its ratio
:math:`\lVert x\rVert_1/\lVert x\rVert_2` fixed): a column of W under
``sparseness_w`` is free in scale (nmf_sc projects each column at its own
norm), a row of H under ``sparseness_h`` is also held at unit L2 norm. On
the support S (entries above :data:`SUPPORT_RTOL` times the vector's
largest, so that rounding leftovers of the projection count as zeros) the
tangent directions keep the constraints to first order, off it an entry may
only grow, and the residual is the exact projection of the gradient onto
that cone, by Moreau's decomposition the distance from :math:`-g` to the
normal cone:

.. math:: \min_{\mu} \; \lVert P (g_S + \mu a_S) \rVert^2
          + \sum_{i \notin S} \min(g_i + \mu, 0)^2 ,

with :math:`a = \mathbf 1 - (\lVert x\rVert_1/\lVert x\rVert_2^2)\, x` the
gradient of the ratio's constraint on S and P the identity for W's columns;
for H's rows :math:`a = \mathbf 1_S` and P removes the component along
:math:`x_S` (the L2 norm's multiplier, eliminated in closed form). The
minimum over :math:`\mu` of this convex piecewise quadratic is found exactly
from the sorted breakpoints :math:`-g_i` (:func:`_min_over_mu`). A vector
whose support entries are all equal (sparseness 0 on a full support, 1 on a
single entry) sits where the constraint is degenerate and its set is a point
(a ray for W's columns): only W's scale direction counts there.

**Vectors held to a sparseness on average** (``average_sparseness``: only
the mean over W's columns, or H's rows, is fixed) share one multiplier:
column i's terms above enter with :math:`\mu / \lVert x_i\rVert_2` (the
ratio's gradient carries the 1 / L2 norm that one vector alone absorbs into
its own :math:`\mu`), and the sum over the columns, again a convex
piecewise quadratic in :math:`\mu`, is minimised exactly
(:func:`_average_residual`). It is never below the per-vector residual: one
multiplier for all is a special case of one per vector.

:func:`stationarity` reports, for each factor, the norm of its residual
relative to the norms of the gradient's two terms,

.. math:: \rho_W = \frac{\lVert R_W \rVert_F}
                         {\lVert W H H^T \rVert_F + \lVert V H^T \rVert_F},

(and :math:`\rho_H` alike), and their maximum. Each ratio is the same at
any scale of V, W and H, needs no start to compare with (so a resumed run
reports the same), and is 0 at a stationary point.
"""

from __future__ import annotations

import numpy as np

from nmfsc.solvers._data import is_sparse

__all__ = [
    "SUPPORT_RTOL",
    "constrained_residual",
    "masked_stationarity",
    "projected_residual",
    "stationarity",
]

#: Entries of a constrained vector at most this times its largest are zeros.
SUPPORT_RTOL = 1e-10
#: Relative size below which a constraint's gradient on the support vanishes.
_DEGENERATE = 1e-12


def projected_residual(X, G, lipschitz):
    """The gradient mapping of a non-negative factor X (module docstring):
    G where G < 0, min(G, L X) elsewhere, with L = ``lipschitz``.

    See Also
    --------
    stationarity : The measure built from it.
    constrained_residual : The residual with a sparseness constraint.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.solvers.stationarity import projected_residual
    >>> X = np.array([[0.0, 2.0], [1.0, 0.0]])
    >>> G = np.array([[0.5, 0.5], [-1.0, 3.0]])
    >>> projected_residual(X, G, lipschitz=1.0)  # a zero with G > 0 cannot go lower: 0
    array([[ 0. ,  0.5],
           [-1. ,  0. ]])
    """
    return np.where(G < 0, G, np.minimum(G, lipschitz * X))


def _min_over_mu(A, B, C, b, weights=None):
    r"""``(value, mu)``: the minimum over :math:`\mu` of
    :math:`A\mu^2 + 2B\mu + C + \sum_i w_i \max(b_i - \mu, 0)^2` (A >= 0;
    the weights :math:`w_i > 0` are 1 unless given).

    Its half-derivative :math:`(A + \sum_{b_i > \mu} w_i)\mu + B - \sum_{b_i > \mu}
    w_i b_i` is increasing and piecewise linear: with b sorted in decreasing
    order its root lies where the first m terms are active and
    :math:`\mu_m = (\sum_{j \le m} w_j b_j - B) / (A + \sum_{j \le m} w_j)` falls
    in :math:`[b_{m+1}, b_m)`."""
    order = np.argsort(-b, kind="stable")
    b = b[order]
    w = np.ones_like(b) if weights is None else weights[order]
    sums = np.concatenate(([0.0], np.cumsum(w * b)))
    denominator = A + np.concatenate(([0.0], np.cumsum(w)))
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = (sums - B) / denominator
    upper = np.concatenate(([np.inf], b))
    lower = np.concatenate((b, [-np.inf]))
    valid = (denominator > 0) & (mu >= lower) & (mu < upper)
    if valid.any():
        best = mu[np.argmax(valid)]
    else:  # A = 0 and no active term at the minimum: f is flat there (B = 0)
        best = b[0] if b.size else 0.0
    value = A * best * best + 2 * B * best + C + float(np.sum(w * np.maximum(b - best, 0.0) ** 2))
    return max(value, 0.0), best


class _Vector:
    """One constrained vector's pieces of its residual (module docstring):
    its support, the ratio's gradient ``a`` on it (times the L2 norm), the
    gradient ``v`` there (without its component along x when the norm is
    held) and the gradient ``g`` off it; ``degenerate`` where the support's
    entries are all equal, ``zero`` for an all-zero vector."""

    def __init__(self, x, g, free_scale):
        self.g, self.free_scale = g, free_scale
        peak = x.max() if x.size else 0.0
        self.zero = not peak > 0
        if self.zero:
            return
        self.support = x > SUPPORT_RTOL * peak
        xs, gs = x[self.support], g[self.support]
        l1, self.l2sq = xs.sum(), float(xs @ xs)
        self.xs, self.gs = xs, gs
        # The ratio's gradient on the support, (1 - (l1 / l2^2) x) / l2, is orthogonal
        # to x, so it is also P 1 when the L2 norm is held (P removing x's direction).
        self.a = 1.0 - (l1 / self.l2sq) * xs
        self.v = gs if free_scale else gs - (float(gs @ xs) / self.l2sq) * xs
        self.degenerate = float(self.a @ self.a) <= _DEGENERATE * xs.size
        self.off = -g[~self.support]  # the breakpoints of the entries off the support

    def residual(self, mu, shared=False):
        """The residual at the ratio's multiplier ``mu`` (per unit of 1 / L2
        norm); ``shared``: the multiplier is the whole factor's (a mean
        sparseness), so a vector of equal entries may still grow entries off
        its support while other vectors give up sparseness."""
        if self.zero:  # only non-negativity binds
            return np.minimum(self.g, 0.0)
        r = np.zeros_like(self.g)
        if self.degenerate:  # equal entries: the set is a point (a ray)
            if self.free_scale:
                r[self.support] = (float(self.gs @ self.xs) / self.l2sq) * self.xs
            if shared:
                r[~self.support] = np.minimum(-self.off + mu, 0.0)
            return r
        r[self.support] = self.v + mu * self.a
        r[~self.support] = np.minimum(-self.off + mu, 0.0)
        return r


def _vector_residual(x, g, free_scale):
    """The residual of one constrained vector (module docstring)."""
    vector = _Vector(x, g, free_scale)
    if vector.zero or vector.degenerate:
        return vector.residual(0.0)
    a, v = vector.a, vector.v
    _, mu = _min_over_mu(float(a @ a), float(a @ v), float(v @ v), vector.off)
    return vector.residual(mu)


def _average_residual(X, G, free_scale):
    r"""The residual of X's columns under one constraint on their mean
    sparseness (``average_sparseness``): each column's terms as alone, with
    one multiplier :math:`\mu` for all, column i's scaled by :math:`c_i = 1 /
    \lVert x_i\rVert_2` (the ratio's gradient). The sum over columns of the
    module docstring's quadratic is minimised over :math:`\mu` at once
    (:func:`_min_over_mu` with weights :math:`c_i^2` at breakpoints
    :math:`-g_j / c_i`). Columns whose support entries are all equal count
    as in :func:`constrained_residual` on their support, and their entries
    off it take part (they may grow while other columns give up sparseness);
    all-zero columns are left to non-negativity."""
    vectors = [_Vector(X[:, j], G[:, j], free_scale) for j in range(X.shape[1])]
    A = B = C = 0.0
    breaks, weights = [], []
    for vector in vectors:
        if vector.zero:
            continue
        c = 1.0 / np.sqrt(vector.l2sq)
        if not vector.degenerate:
            A += c * c * float(vector.a @ vector.a)
            B += c * float(vector.a @ vector.v)
            C += float(vector.v @ vector.v)
        breaks.append(vector.off / c)
        weights.append(np.full(vector.off.size, c * c))
    mu = 0.0
    if breaks:
        _, mu = _min_over_mu(A, B, C, np.concatenate(breaks), np.concatenate(weights))
    R = np.empty_like(G)
    for j, vector in enumerate(vectors):
        c = 0.0 if vector.zero else 1.0 / np.sqrt(vector.l2sq)
        R[:, j] = vector.residual(mu * c, shared=True)
    return R


def constrained_residual(X, G, axis, free_scale, average=False):
    r"""The gradient G projected onto the tangent cone of the set that holds each
    column (``axis=0``) or row (``axis=1``) of X to its sparseness and to
    non-negative entries; ``free_scale``: the vectors' norms are free (W's
    columns under ``sparseness_w``), else held too (H's rows under
    ``sparseness_h``); ``average``: only their mean sparseness is held
    (:func:`_average_residual`). See the module docstring.

    See Also
    --------
    stationarity : The measure built from it.
    projected_residual : The residual without a sparseness constraint.

    Examples
    --------
    A gradient along the vector itself only changes its scale:

    >>> import numpy as np
    >>> from nmfsc.solvers.stationarity import constrained_residual
    >>> x = np.array([[3.0], [4.0], [0.0]])  # one column, held to its sparseness
    >>> g = x.copy()
    >>> constrained_residual(x, g, axis=0, free_scale=False).ravel()  # norm held: stationary
    array([0., 0., 0.])
    >>> constrained_residual(x, g, axis=0, free_scale=True).ravel()  # W's columns: scale free
    array([3., 4., 0.])
    """
    X = np.asarray(X, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    if axis == 1:
        return constrained_residual(X.T, G.T, 0, free_scale, average).T
    if average:
        return _average_residual(X, G, free_scale)
    R = np.empty_like(G)
    for j in range(X.shape[1]):
        R[:, j] = _vector_residual(X[:, j], G[:, j], free_scale)
    return R


def _gradient_terms(V, W, H):
    """(W, W H H^T, V H^T, W^T W H, W^T V) for V / max|V| and W / max|V|, the
    two terms of each gradient in units where no square overflows or
    underflows (the ratios are the same at any scale); V is not copied."""
    scale = float(max(V.max(), -V.min())) if V.shape[0] * V.shape[1] else 0.0
    scale = scale if np.isfinite(scale) and scale > 0 else 1.0
    W = W / scale
    VHt = np.asarray(V @ H.T) / scale
    WtV = np.asarray((V.T @ W).T if is_sparse(V) else W.T @ V) / scale
    return W, W @ (H @ H.T), VHt, (W.T @ W) @ H, WtV


def stationarity(V, W, H, *, sparseness_w=None, sparseness_h=None, average_sparseness=False):
    r"""How far ``(W, H)`` is from a stationary point of nmf_sc's problem.

    Parameters
    ----------
    V : ndarray or scipy.sparse matrix, shape (N, T)
    W : ndarray, shape (N, M)
    H : ndarray, shape (M, T)
    sparseness_w, sparseness_h : float, optional
        Whether W's columns (H's rows) are held to a sparseness; None: that
        factor is only non-negative.
    average_sparseness : bool, default False
        Whether the sparseness is held only on average over W's columns (H's
        rows), each free to differ: one multiplier for the whole factor.

    Returns
    -------
    dict
        ``W`` and ``H``: :math:`\rho_W`, :math:`\rho_H` (module docstring);
        ``max``: the larger, 0 at a stationary point. NaN where a factor's
        gradient terms are both zero (nothing to measure against).

    See Also
    --------
    projected_residual : The residual of a factor that is only non-negative.
    constrained_residual : The residual of a factor held to a sparseness.
    nmfsc.nmf_sc : Its ``stationarity_tol`` stops on this measure.

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
    return _measure(W, H, (WHHt, VHt), (WtWH, WtV), sparseness_w, sparseness_h, average_sparseness)


def masked_stationarity(
    data, W, H, *, sparseness_w=None, sparseness_h=None, average_sparseness=False
):
    r""":func:`stationarity` of the masked objective
    :math:`\tfrac12 \lVert \Omega \odot (\tilde V - W H) \rVert_F^2`.

    The gradients are :math:`G_W = (\Omega \odot W H) H^T - \tilde V H^T`
    and :math:`G_H = W^T (\Omega \odot W H) - W^T \tilde V`, whose two terms
    the masked data gives (``w_terms`` and ``h_terms``); the residuals and
    the ratios are :func:`stationarity`'s, with the unmasked Lipschitz
    constants :math:`\lVert H H^T \rVert_2` and :math:`\lVert W^T W \rVert_2`
    (the masked ones are at most these).

    Parameters
    ----------
    data : masked data
        :func:`nmfsc.solvers._masked_data.open_masked`'s: :math:`\tilde V`
        (V divided by its largest observed entry) at the observed entries.
    W : ndarray, shape (N, M)
        In :math:`\tilde V`'s units (the ratios are the same at any scale).
    H : ndarray, shape (M, T)
    sparseness_w, sparseness_h, average_sparseness
        As for :func:`stationarity`.

    Returns
    -------
    dict
        As :func:`stationarity`'s.

    See Also
    --------
    stationarity : The measure without a mask.
    """
    W = np.asarray(W, dtype=np.float64)
    H = np.asarray(H, dtype=np.float64)
    R = data.residual_of(W, H)
    WtV, WtWH = data.h_terms(W, R)
    VHt, WHHt = data.w_terms(H, R)
    return _measure(W, H, (WHHt, VHt), (WtWH, WtV), sparseness_w, sparseness_h, average_sparseness)


def _measure(W, H, w_terms, h_terms, sparseness_w, sparseness_h, average_sparseness):
    """The ratios of :func:`stationarity` from each gradient's two terms
    (``w_terms``: W H H^T and V H^T, or their masked forms; ``h_terms``
    alike), their difference the gradient."""
    (WHHt, VHt), (WtWH, WtV) = w_terms, h_terms
    G_W, G_H = WHHt - VHt, WtWH - WtV
    if sparseness_w is not None:
        R_W = constrained_residual(W, G_W, 0, True, average_sparseness)
    else:
        R_W = projected_residual(W, G_W, np.linalg.norm(H @ H.T, 2))
    if sparseness_h is not None:
        R_H = constrained_residual(H, G_H, 1, False, average_sparseness)
    else:
        R_H = projected_residual(H, G_H, np.linalg.norm(W.T @ W, 2))
    out = {}
    for name, R, a, b in (("W", R_W, WHHt, VHt), ("H", R_H, WtWH, WtV)):
        scale = float(np.linalg.norm(a) + np.linalg.norm(b))
        out[name] = float(np.linalg.norm(R)) / scale if scale > 0 else float("nan")
    both = [out["W"], out["H"]]
    out["max"] = float("nan") if np.isnan(both).all() else float(np.nanmax(both))
    return out
