"""Numba kernel for block coordinate descent over the rows of a factor with
a mask: ``nmf_sc(solver="accelerated", mask=...)``.

The objective is E(W, H) = 0.5 ||Omega * (V - W H)||^2 (Omega the 0/1 mask).
With the other rows fixed, E depends on a row x = x_k of the factor X
(H, or W^T) through

    f_k(x) = 0.5 sum_t d_t x_t^2 - <b, x> + const,

with the weights d_t = sum_i Omega_it y_i^2 and b_t = sum_i Omega_it y_i
R^(k)_it, y the k-th column of the other factor (W[:, k], or H[k]) and
R^(k) = V - sum_{j != k} w_j h_j. The kernel keeps the residual
E = Omega * (V - W H) (zero where unobserved; for the W step its transpose,
so that both steps read it row by row and the inner loops run along its
rows), so that b_t = sum_i y_i E_it + d_t x_t: one pass over E per row.
After a row changes by delta, E_it -= Omega_it y_i delta_t, in the same
pass as the next row's b. A sweep over the M rows costs O(M N T).

Three constraint sets (the ``RULE_*`` of :mod:`nmfsc._kernels.rowblocks`):

* ``RULE_NONNEG``: the exact minimiser x_t = max(0, b_t / d_t), element by
  element (masked HALS); an entry with d_t = 0 (no observed entry of V
  weighs on it: f_k does not depend on it) keeps its value.
* ``RULE_UNIT`` (x >= 0, ||x||_2 = 1, ||x||_1 = l1) and ``RULE_SCALED``
  (x = r u, r >= 0, u in that set): no closed form with unequal weights;
  the kernel takes majorised steps. With L = max_t d_t,
  f_k(y) <= f_k(x) + <grad, y - x> + 0.5 L ||y - x||^2
  = 0.5 L ||y - z||^2 + const, z = x - (d * x - b) / L, whose minimiser over
  the set is u = P(z), Hoyer's projection (RULE_UNIT), or r u with
  u = P(z) and r = <z, u> (RULE_SCALED; none when r <= 0). The step is
  repeated on the same row (b and d do not depend on x) up to ``inner``
  times, until one decreases f_k by at most ``inner_delta`` times the first.

A step is taken only if f_k, computed here in float64, does not rise, so E
never rises up to rounding. With a full mask d_t = g_kk for every t, so
z = b / g_kk and the first step is the unmasked kernel's exact update.
Every sum is taken in a fixed order: the same input gives the same bits.
"""

import math

import numpy as np
from numba import njit

from nmfsc._kernels.projection import METHOD_FAST, STATUS_OK, project_vector_guided
from nmfsc._kernels.rowblocks import RULE_NONNEG, RULE_SCALED, RULE_UNIT

__all__ = ["RULE_NONNEG", "RULE_SCALED", "RULE_UNIT", "sweep_masked_rows"]


@njit(cache=True, nogil=True)
def _weighted_value(d, b, x, n):
    """f_k(x) = 0.5 sum_t d_t x_t^2 - <b, x>, in float64."""
    q = 0.0
    p = 0.0
    for t in range(n):
        xt = np.float64(x[t])
        q += d[t] * xt * xt
        p += b[t] * xt
    return 0.5 * q - p


@njit(cache=True, nogil=True)
def _pass(E, mask, y, delta, scatter, ynext, bnext, gather):
    """One pass over E (m x n): with ``scatter``, E -= Omega * (y delta^T);
    with ``gather``, ``bnext`` = the next row's sum_i ynext_i E_it (E as
    updated), summed over i in order. The mask multiplies (0 or 1) rather
    than branches, so that the loops over t vectorise; E stays exactly 0
    where unobserved."""
    m, n = E.shape
    if gather:
        bnext[:] = 0.0
    for i in range(m):
        Ei = E[i]
        if scatter:
            yi = np.float64(y[i])
            if yi != 0.0:
                mi = mask[i]
                for t in range(n):
                    Ei[t] -= np.float64(mi[t]) * (yi * delta[t])
        if gather:
            zi = np.float64(ynext[i])
            if zi != 0.0:
                for t in range(n):
                    bnext[t] += zi * Ei[t]


@njit(cache=True, nogil=True)
def _constrained_steps(x, d, b, rule, l1, max_passes, inner, inner_delta, z, u, new):
    """Up to ``inner`` majorised steps on f_k from ``x`` (module docstring),
    the result in ``new``; returns (decrease, steps taken)."""
    n = x.shape[0]
    L = 0.0
    for t in range(n):
        L = max(L, d[t])
    if not L > 0.0 or not math.isfinite(L):
        return 0.0, 0
    for t in range(n):
        new[t] = np.float64(x[t])
    current = _weighted_value(d, b, new, n)
    first = -1.0
    total = 0.0
    taken = 0
    for _ in range(inner):
        for t in range(n):
            z[t] = new[t] - (d[t] * new[t] - b[t]) / L
        status, _ = project_vector_guided(z, l1, 1.0, True, METHOD_FAST, u, max_passes, 0)
        if status != STATUS_OK:
            break
        if rule == RULE_SCALED:
            r = 0.0
            for t in range(n):
                r += z[t] * u[t]
            if not (r > 0.0 and math.isfinite(r)):
                break
            for t in range(n):
                u[t] *= r
        after = _weighted_value(d, b, u, n)
        if not after <= current:
            break
        decrease = current - after
        for t in range(n):
            new[t] = u[t]
        current = after
        total += decrease
        taken += 1
        if first < 0.0:
            first = decrease
        elif not decrease > inner_delta * first:
            break
    return total, taken


@njit(cache=True, nogil=True)
def sweep_masked_rows(X, Y, E, mask, D, rule, l1, max_passes, inner, inner_delta, b, scratch):
    """One sweep over the rows of X (module docstring), in place.

    X (M x n) is the factor, Y (M x m) the other factor's rows: for the H
    step X = H, Y = W^T and E the residual Omega * (V - W H) (N x T); for
    the W step X = W^T, Y = H and E the residual's transpose (T x N), so
    that both read E row by row. E (float64) holds the residual on entry and
    on exit (up to rounding); ``mask`` (m x n, bool) is Omega in E's layout.
    D (M x n, float64) holds the weights d of every row. ``b`` (n) and
    ``scratch`` (4 x n) are float64 scratch. Returns (decrease, unchanged):
    the sum of the rows' decreases of f_k, and the number of rows left as
    they were.
    """
    M, n = X.shape
    z, u, new, delta = scratch[0], scratch[1], scratch[2], scratch[3]
    decrease = 0.0
    unchanged = 0
    _pass(E, mask, Y[0], delta, False, Y[0], b, True)
    for k in range(M):
        Xk = X[k]
        d = D[k]
        finite = True
        for t in range(n):
            b[t] += d[t] * np.float64(Xk[t])
            finite &= math.isfinite(b[t])
        changed = False
        if finite:
            if rule == RULE_NONNEG:
                for t in range(n):
                    new[t] = max(b[t] / d[t], 0.0) if d[t] > 0.0 else np.float64(Xk[t])
                before = _weighted_value(d, b, Xk, n)
                after = _weighted_value(d, b, new, n)
                if after <= before:
                    decrease += before - after
                    changed = True
            else:
                gain, taken = _constrained_steps(
                    Xk, d, b, rule, l1, max_passes, inner, inner_delta, z, u, new
                )
                if taken > 0:
                    decrease += gain
                    changed = True
        if changed:
            for t in range(n):
                old = np.float64(Xk[t])
                Xk[t] = new[t]
                delta[t] = np.float64(Xk[t]) - old  # the change as stored (float32 rounds)
        else:
            unchanged += 1
        following = k + 1 < M
        if changed or following:
            nxt = Y[k + 1] if following else Y[k]
            _pass(E, mask, Y[k], delta, changed, nxt, b, following)
    return decrease, unchanged
