"""Each row's threshold, by Hoyer's passes or by a sort, in array code
(CuPy or NumPy): the formulas of :mod:`nmfsc.gpu_backend.device_projection`'s
docstring. Used by the array code's projection and, for the rows whose
passes do not settle, by the fused kernels' (:mod:`nmfsc.gpu_backend.fused`).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "KAPPA_MAX",
    "condition_parts",
    "max_passes",
    "row_squares",
    "support_moments",
    "thresholds_by_passes",
    "thresholds_by_sort",
]

#: The largest condition :math:`\kappa` (:func:`condition_parts`) at which a
#: row's projection by its threshold is kept; a row above it is projected
#: by the CPU kernel instead.
KAPPA_MAX = 2.0**16


def max_passes(n):
    """The passes :func:`thresholds_by_passes` may take (as the CPU kernels' filter)."""
    return 2 * int(np.ceil(np.log2(max(n, 2)))) + 8


def row_squares(xp, Z):
    """Each row's sum of squares, in float64. Float32 entries are squared in
    float64 (through a float64 copy of the rows), as the CPU kernels and the
    fused kernels square them: a square rounded to float32 would move S2,
    and with it the threshold, by far more than float64's rounding."""
    if Z.dtype != xp.float64:
        Z = Z.astype(xp.float64)
    return xp.einsum("ij,ij->i", Z, Z)


def support_moments(xp, A, alpha):
    """Each row's support above its threshold ``alpha`` (1-D): its count k
    and the sums s1, s2 of its entries and their squares (float64)."""
    above = A > alpha[:, None]
    Z = xp.where(above, A, 0.0)
    return xp.count_nonzero(above, axis=1), Z.sum(axis=1, dtype=xp.float64), row_squares(xp, Z)


def condition_parts(xp, k, s1, s2, alpha, rho):
    r"""The rows' condition numbers, all but the factor :math:`\beta / L_1`.

    The projection computed from a threshold, :math:`s = \beta \max(a -
    \alpha, 0)`, carries :math:`\alpha`'s absolute error
    :math:`\delta\alpha` into every entry of the support, which moves
    :math:`\sum s` by :math:`k \beta\, \delta\alpha`. With
    :math:`\alpha = m - \rho \sqrt{c / (k (k - \rho^2))}`, :math:`m =
    S_1 / k`, :math:`c = S_2 - S_1^2 / k`, rounding gives about
    :math:`\delta\alpha \approx \epsilon (|\alpha| + |m| + (S_2 / c)\, \rho
    \sqrt{c / (k (k - \rho^2))})`: the last term is the cancellation in c,
    which is large where the support's entries are nearly equal (a row
    like ``1 + 1e-4 * noise``). So the relative error of :math:`\sum s`
    is about :math:`\epsilon \kappa`,

    .. math:: \kappa = \frac{\beta}{L_1}\, k \Big(|\alpha| + |m| +
              \frac{S_2}{c}\, \rho \sqrt{\frac{c}{k (k - \rho^2)}}\Big),

    an upper estimate (the error seen on such rows is below it). This
    returns the part after :math:`\beta / L_1` (infinite where c <= 0 or
    k <= rho^2), from the support's count k and sums s1, s2 (1-D arrays of
    ``xp``; the fused kernels compute the same formula).
    Rows with :math:`\kappa >` :data:`KAPPA_MAX` are projected by the CPU
    kernel, whose centred form is accurate there."""
    k = k * 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        centred = s2 - s1 * s1 / k
        room = k * (k - rho * rho)
        spread = (s2 / centred) * rho * xp.sqrt(centred / room)
        part = k * (xp.abs(alpha) + xp.abs(s1 / k) + spread)
    return xp.where((centred > 0) & (room > 0), part, xp.inf)


def thresholds_by_passes(xp, A, rho, limit):
    """Each row's threshold by Hoyer's passes, on all rows at once.

    Start from the whole row as the support; each pass takes the support's
    count k and sums S1, S2 (one reduction over the rows), sets the
    threshold to the closed form of that support, and keeps the entries above
    it. The support only shrinks; a row is done when it no longer changes
    (the threshold is then the exact one of a consistent support). Returns
    ``(threshold, found, moments)``; rows not settled within ``limit``
    passes, or left with no room (k <= rho^2), are not found. ``moments``
    is the last pass's :func:`support_moments`: for a found row, those of
    its support above its threshold."""
    count = A.shape[0]
    alpha = xp.full(count, -xp.inf)
    size = xp.full(count, -1, dtype=xp.int64)  # the last pass's support size
    found = xp.zeros(count, dtype=bool)
    for _ in range(limit):
        k, S1, S2 = support_moments(xp, A, alpha)
        kf = k.astype(xp.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            room = kf * (kf - rho * rho)
            centred = xp.maximum(S2 - S1 * S1 / kf, 0.0)
            new = S1 / kf - rho * xp.sqrt(centred / room)
        settled = (k == size) & (room > 0) & xp.isfinite(new)
        found = settled
        if bool(settled.all()):
            alpha = new
            break
        alpha = xp.where(room > 0, new, alpha)
        size = k
    # A settled row's threshold is that of its final support (the last pass's).
    return xp.where(found, alpha, 0.0), found, (k, S1, S2)


def thresholds_by_sort(xp, A, rho):
    """Each row's threshold from its sorted entries (module docstring):
    ``(threshold, found)``; rows with no consistent support are not found."""
    count, n = A.shape
    A = A.astype(xp.float64, copy=False)
    rho = rho[:, None]
    Y = -xp.sort(-A, axis=1)
    S1 = xp.cumsum(Y, axis=1)
    S2 = xp.cumsum(Y * Y, axis=1)
    k = xp.arange(1, n + 1, dtype=xp.float64)[None, :]
    room = k * (k - rho * rho)
    centred = xp.maximum(S2 - S1 * S1 / k, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = S1 / k - rho * xp.sqrt(centred / room)
        below = xp.concatenate([Y[:, 1:], xp.full((count, 1), -xp.inf)], axis=1)
        valid = (room > 0) & (alpha < Y) & (alpha >= below) & xp.isfinite(alpha)
        # <z, y> / ||z|| with z = y - alpha on the support: closeness to x.
        norm2 = S2 - 2.0 * alpha * S1 + k * alpha * alpha
        score = xp.where(valid & (norm2 > 0), (S2 - alpha * S1) / xp.sqrt(norm2), -xp.inf)
    best = xp.argmax(score, axis=1)
    found = xp.take_along_axis(valid, best[:, None], axis=1)[:, 0]
    return xp.take_along_axis(alpha, best[:, None], axis=1)[:, 0], found
