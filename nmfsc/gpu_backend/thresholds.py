"""Each row's threshold, by Hoyer's passes or by a sort, in array code
(CuPy or NumPy): the formulas of :mod:`nmfsc.gpu_backend.projection`'s
docstring. Used by the array code's projection and, for the rows whose
passes do not settle, by the fused kernels' (:mod:`nmfsc.gpu_backend.fused`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["max_passes", "thresholds_by_passes", "thresholds_by_sort"]


def max_passes(n):
    """The passes :func:`thresholds_by_passes` may take (as the CPU kernels' filter)."""
    return 2 * int(np.ceil(np.log2(max(n, 2)))) + 8


def thresholds_by_passes(xp, A, rho, limit):
    """Each row's threshold by Hoyer's passes, on all rows at once.

    Start from the whole row as the support; each pass takes the support's
    count k and sums S1, S2 (one reduction over the rows), sets the
    threshold to the closed form of that support, and keeps the entries above
    it. The support only shrinks; a row is done when it no longer changes
    (the threshold is then the exact one of a consistent support). Returns
    ``(threshold, found)``; rows not settled within ``limit`` passes, or
    left with no room (k <= rho^2), are not found."""
    count = A.shape[0]
    alpha = xp.full(count, -xp.inf)
    size = xp.full(count, -1, dtype=xp.int64)  # the last pass's support size
    found = xp.zeros(count, dtype=bool)
    for _ in range(limit):
        Z = xp.where(A > alpha[:, None], A, 0.0)
        k = xp.count_nonzero(A > alpha[:, None], axis=1)
        S1 = Z.sum(axis=1, dtype=xp.float64)
        if Z.dtype == xp.float64:
            S2 = xp.einsum("ij,ij->i", Z, Z)
        else:
            S2 = xp.sum(Z * Z, axis=1, dtype=xp.float64)
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
    return xp.where(found, alpha, 0.0), found


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
