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

``mask="stored"`` (:func:`sweep_stored_rows`): the residual is kept at the
stored entries of a CSR or CSC pattern alone (nnz values), and the passes
run over them (:func:`_stored_pass`), scattering into b where the row's
entries are the pattern's inner index and gathering where they are its outer
one, each b_t summed in the dense pass's order; the rows' updates are the
same routine (:func:`_row_update`). A sweep then costs O(M nnz).

V observed at every entry but a sparse set U (:func:`sweep_all_but_rows`):
b comes from the Gram matrix of the other factor, W^T V, and W H on U
alone, which the sweep keeps up to date; a sweep costs O(M^2 n + M nnz(U)).
"""

import math

import numpy as np
from numba import njit

from nmfsc._kernels.rowblocks import RULE_NONNEG, RULE_SCALED, RULE_UNIT
from nmfsc._kernels.sparse_projection import METHOD_FAST, STATUS_OK, project_vector_guided

__all__ = [
    "RULE_NONNEG",
    "RULE_SCALED",
    "RULE_UNIT",
    "stored_weights",
    "sweep_all_but_rows",
    "sweep_masked_rows",
    "sweep_stored_rows",
]


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
def _row_update(Xk, d, b, rule, l1, max_passes, inner, inner_delta, z, u, new, delta):
    """Row k's update, shared by both sweeps: on entry ``b`` holds
    sum_i y_i E_it; it becomes b of f_k (+ d * x), the row takes its rule's
    update (module docstring) and, when f_k does not rise, is replaced in
    place with its change as stored in ``delta``. Returns (decrease of f_k,
    whether the row changed)."""
    n = Xk.shape[0]
    finite = True
    for t in range(n):
        b[t] += d[t] * np.float64(Xk[t])
        finite &= math.isfinite(b[t])
    gain = 0.0
    changed = False
    if finite:
        if rule == RULE_NONNEG:
            for t in range(n):
                new[t] = max(b[t] / d[t], 0.0) if d[t] > 0.0 else np.float64(Xk[t])
            before = _weighted_value(d, b, Xk, n)
            after = _weighted_value(d, b, new, n)
            if after <= before:
                gain = before - after
                changed = True
        else:
            gain, taken = _constrained_steps(
                Xk, d, b, rule, l1, max_passes, inner, inner_delta, z, u, new
            )
            changed = taken > 0
    if changed:
        for t in range(n):
            old = np.float64(Xk[t])
            Xk[t] = new[t]
            delta[t] = np.float64(Xk[t]) - old  # the change as stored (float32 rounds)
    else:
        gain = 0.0
    return gain, changed


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
        gain, changed = _row_update(
            X[k], D[k], b, rule, l1, max_passes, inner, inner_delta, z, u, new, delta
        )
        decrease += gain
        unchanged += 0 if changed else 1
        following = k + 1 < M
        if changed or following:
            nxt = Y[k + 1] if following else Y[k]
            _pass(E, mask, Y[k], delta, changed, nxt, b, following)
    return decrease, unchanged


@njit(cache=True, nogil=True)
def _stored_pass(indptr, indices, E, scatter, y, delta, update, ynext, bnext, gather):
    """:func:`_pass` on the stored entries: E holds the residual's values in
    the pattern's order (CSR or CSC: ``indptr``, ``indices``). With
    ``scatter`` the row's entries are the pattern's inner index c and the
    other factor's the outer index o, so at the stored entry k = (o, c):
    with ``update`` E_k -= y_o delta_c, with ``gather`` bnext_c +=
    ynext_o E_k; else the two exchange (E_k -= y_c delta_o, bnext_o +=
    ynext_c E_k). Either way each bnext entry is summed over the other
    index in increasing order, as :func:`_pass` sums it."""
    if gather:
        bnext[:] = 0.0
    for o in range(indptr.shape[0] - 1):
        first, stop = indptr[o], indptr[o + 1]
        if scatter:
            yo = np.float64(y[o]) if update else 0.0
            zo = np.float64(ynext[o]) if gather else 0.0
            if yo == 0.0 and zo == 0.0:
                continue
            for k in range(first, stop):
                c = indices[k]
                if yo != 0.0:
                    E[k] -= yo * delta[c]
                if zo != 0.0:
                    bnext[c] += zo * E[k]
        else:
            step = delta[o] if update else 0.0
            total = 0.0
            for k in range(first, stop):
                c = indices[k]
                if step != 0.0:
                    E[k] -= np.float64(y[c]) * step
                if gather:
                    total += np.float64(ynext[c]) * E[k]
            if gather:
                bnext[o] = total


@njit(cache=True, nogil=True)
def sweep_stored_rows(
    X, Y, indptr, indices, E, scatter, D, rule, l1, max_passes, inner, inner_delta, b, scratch
):
    """:func:`sweep_masked_rows` with the residual kept at the stored entries
    of a sparse pattern (``mask="stored"``): E (float64, nnz) holds
    V - W H there in the order of the pattern's ``indptr`` and ``indices``
    (CSR or CSC), and ``scatter`` says whether X's entries are the
    pattern's inner index (:func:`_stored_pass`): for a CSR pattern the H
    step scatters and the W step gathers, for CSC the reverse, so neither
    needs the other layout. The rows' updates are :func:`sweep_masked_rows`'
    (one :func:`_row_update`), and each b is summed in the dense kernel's
    order, so a pattern and the dense mask of it give the same sweep; a
    sweep costs O(nnz M) plus the rows' updates.
    """
    M, n = X.shape
    z, u, new, delta = scratch[0], scratch[1], scratch[2], scratch[3]
    decrease = 0.0
    unchanged = 0
    _stored_pass(indptr, indices, E, scatter, Y[0], delta, False, Y[0], b, True)
    for k in range(M):
        gain, changed = _row_update(
            X[k], D[k], b, rule, l1, max_passes, inner, inner_delta, z, u, new, delta
        )
        decrease += gain
        unchanged += 0 if changed else 1
        following = k + 1 < M
        if changed or following:
            nxt = Y[k + 1] if following else Y[k]
            _stored_pass(indptr, indices, E, scatter, Y[k], delta, changed, nxt, b, following)
    return decrease, unchanged


@njit(cache=True, nogil=True)
def stored_weights(indptr, indices, Yt, scatter, out):
    """The weights d of every row at a sparse pattern, transposed: ``out``
    (n x M, float64) = sum over the stored entries (o, c) of the other
    factor's squared entries, ``out[c] += Yt[o]**2`` with ``scatter``, else
    ``out[o] += Yt[c]**2`` (:func:`_stored_pass`'s orientation). Yt (m x M)
    is the other factor with its rows along the pattern's other index: W
    for the H step, H^T for the W step. ``out`` is overwritten."""
    out[:] = 0.0
    M = Yt.shape[1]
    for o in range(indptr.shape[0] - 1):
        for k in range(indptr[o], indptr[o + 1]):
            c = indices[k]
            x = c if scatter else o
            other = o if scatter else c
            for j in range(M):
                y = np.float64(Yt[other, j])
                out[x, j] += y * y


@njit(cache=True, nogil=True)
def sweep_all_but_rows(
    X, Y, A, G, indptr, indices, hidden, D, rule, l1, max_passes, inner, inner_delta, b, scratch
):
    """:func:`sweep_masked_rows` for V observed at every entry but a sparse
    set U (a sparse V whose zeros are data, some entries held out): the
    residual is never formed. With A = Y V (M x n, V zero on U), G = Y Y^T
    (M x M) and ``hidden`` the values of (W H) on U (float64, updated in
    place), row k's sum over the observed entries is

        sum_i y_i E_it = A_kt - sum_j G_kj X_jt + sum_{i in U_t} y_i (W H)_it,

    U_t the unobserved entries of X's entry t (``indptr``/``indices``: U
    with X's entries as its outer index, their positions in ``hidden``'s
    order). When the row changes by delta, (W H)_it += y_i delta_t on U_t.
    The rows' updates are :func:`sweep_masked_rows`' (:func:`_row_update`);
    D holds the weights d_t = G_kk - sum_{i in U_t} y_i^2. A sweep costs
    O(M^2 n + M nnz(U)) plus the rows' updates: the unmasked sweep's cost,
    with no pass over V.
    """
    M, n = X.shape
    z, u, new, delta = scratch[0], scratch[1], scratch[2], scratch[3]
    decrease = 0.0
    unchanged = 0
    for k in range(M):
        Yk = Y[k]
        for t in range(n):
            b[t] = A[k, t]
        for j in range(M):
            g = G[k, j]
            if g != 0.0:
                Xj = X[j]
                for t in range(n):
                    b[t] -= g * np.float64(Xj[t])
        for t in range(n):
            total = 0.0
            for p in range(indptr[t], indptr[t + 1]):
                total += np.float64(Yk[indices[p]]) * hidden[p]
            b[t] += total
        gain, changed = _row_update(
            X[k], D[k], b, rule, l1, max_passes, inner, inner_delta, z, u, new, delta
        )
        decrease += gain
        if changed:
            for t in range(n):
                step = delta[t]
                if step != 0.0:
                    for p in range(indptr[t], indptr[t + 1]):
                        hidden[p] += np.float64(Yk[indices[p]]) * step
        else:
            unchanged += 1
    return decrease, unchanged
