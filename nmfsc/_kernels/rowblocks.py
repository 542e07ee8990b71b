"""Numba kernel for block coordinate descent over the rows of a factor.

Both sub-problems of NMF minimise, over the rows x_k of a factor X (M x n),

    f(X) = 0.5 <G, X X^T> - <A, X>          (G = G^T, M x M; A: M x n).

With the other rows fixed, f depends on row k through

    f_k(x) = 0.5 g_kk ||x||^2 - <b_k, x>,    b_k = a_k - sum_{j != k} g_kj x_j,

so a sweep that replaces x_1, ..., x_M in turn by a minimiser of f_k over
the row's constraint set never raises f (Gauss-Seidel). Three constraint
sets, three exact minimisers (``RULE_*``):

* ``RULE_NONNEG``, x >= 0: x = max(0, b_k / g_kk), HALS (Cichocki & Phan 2009).
* ``RULE_UNIT``, x >= 0, ||x||_2 = 1, ||x||_1 = l1: ||x|| is fixed, so f_k is
  -<b_k, x> up to a constant, and its minimiser over the set is the point of
  the set nearest to b_k: Hoyer's projection of b_k (Potluru et al. 2013).
* ``RULE_SCALED``, x = r u with r >= 0 and u in the set above (a fixed
  sparseness at any norm): for a given u, r = <b_k, u> / g_kk is best and
  f_k = -<b_k, u>^2 / (2 g_kk), so u is again the projection of b_k, and
  r = max(<b_k, u>, 0) / g_kk; where <b_k, u> <= 0 (no direction of the set
  has a positive inner product with b_k) the row is left as it is.

A row is replaced only if f_k does not rise by the values computed here (in
float64), so the sweep is monotone by construction, rounding included, for a
float64 factor; a float32 factor stores the accepted row rounded to float32,
which can move f_k by that rounding. A row with a non-finite b_k is left as
it is, and so is a row with g_kk <= 0 (a zero row of the other factor) under
RULE_NONNEG and RULE_SCALED; under RULE_UNIT f_k = -<b_k, x> up to a constant
whatever g_kk, and the row is the projection of b_k as above.

Computing b_k from scratch reads every other row: M^2 n reads per sweep. The
kernel instead keeps R = G X (the caller passes it, computed by BLAS) and
processes the rows in blocks of ``BLOCK``: within a block, b_k is corrected
for the rows of the block already changed (their changes D), and after the
block R is brought up to date (R += G[:, block] D), so each sweep reads R
about M / BLOCK times. R then holds G X for the next sweep. Every sum is taken
in a fixed order (no fastmath), so the same input gives the same bits. A
block's rows are one call of :func:`sweep_block` (sequential: each row reads
the changes of the rows before it); the update of R after it,
:func:`update_r`, is the bulk of a sweep's work (M^2 n of its operations)
and runs on ranges of columns, which the caller spreads over threads.
"""

import math

import numpy as np
from numba import njit

from nmfsc._kernels.sparse_projection import METHOD_FAST, STATUS_OK, project_vector_guided

RULE_NONNEG = 0
RULE_UNIT = 1
RULE_SCALED = 2

#: Rows per block: a block's changes D (BLOCK x n) are read by every later
#: row of the block and by the update of R.
BLOCK = 8


@njit(cache=True)
def _row_value(g, b, x, n):
    """f_k(x) = 0.5 g ||x||^2 - <b, x> (four accumulators, fixed order)."""
    q0 = q1 = q2 = q3 = 0.0
    p0 = p1 = p2 = p3 = 0.0
    head = n - n % 4
    for i in range(0, head, 4):
        x0, x1, x2, x3 = (
            np.float64(x[i]),
            np.float64(x[i + 1]),
            np.float64(x[i + 2]),
            np.float64(x[i + 3]),
        )
        q0 += x0 * x0
        q1 += x1 * x1
        q2 += x2 * x2
        q3 += x3 * x3
        p0 += b[i] * x0
        p1 += b[i + 1] * x1
        p2 += b[i + 2] * x2
        p3 += b[i + 3] * x3
    for i in range(head, n):
        xi = np.float64(x[i])
        q0 += xi * xi
        p0 += b[i] * xi
    return 0.5 * g * ((q0 + q1) + (q2 + q3)) - ((p0 + p1) + (p2 + p3))


@njit(cache=True, nogil=True)
def sweep_block(X, R, G, A, rule, l1, max_passes, b, new, D, start, stop, decrease):
    """The rows ``start..stop-1`` (one block, at most BLOCK rows) of a sweep
    over the rows of X (module docstring), in place; R is left for
    :func:`update_r` to bring up to date.

    X (M x n, float64 or float32) is updated; R (M x n, float64) must hold
    G X as of the block's start. ``l1`` (M, float64): the L1 norm of each
    unit row (RULE_UNIT, RULE_SCALED). ``b``, ``new`` (n, float64) are scratch; ``D``
    (BLOCK x n, float64) receives the changes of the block's rows (zero for
    a row left as it was), which :func:`update_r` reads. Returns (decrease,
    unchanged): ``decrease`` (the sweep's sum so far) plus the block's rows'
    decreases of f, added one by one, and the number of rows left as they
    were.

    The changes of the block's rows are combined eight at a time in one
    expression per entry (coefficients of rows outside the block, or not yet
    changed, are 0), so that b is read and written once per row.
    """
    M, n = X.shape
    unchanged = 0
    c = np.zeros(BLOCK)
    D0, D1, D2, D3 = D[0], D[1], D[2], D[3]
    D4, D5, D6, D7 = D[4], D[5], D[6], D[7]
    D[:, :] = 0.0
    for k in range(start, stop):
        g = np.float64(G[k, k])
        for j in range(BLOCK):
            c[j] = np.float64(G[k, start + j]) if start + j < k else 0.0
        c0, c1, c2, c3, c4, c5, c6, c7 = c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
        Xk = X[k]
        Ak = A[k]
        Rk = R[k]
        for i in range(n):
            done = ((c0 * D0[i] + c1 * D1[i]) + (c2 * D2[i] + c3 * D3[i])) + (
                (c4 * D4[i] + c5 * D5[i]) + (c6 * D6[i] + c7 * D7[i])
            )
            b[i] = (np.float64(Ak[i]) - Rk[i] + g * np.float64(Xk[i])) - done
        finite = True
        for i in range(n):
            finite &= math.isfinite(b[i])
        accept = False
        if finite and (g > 0.0 or rule == RULE_UNIT):
            if rule == RULE_NONNEG:
                for i in range(n):
                    new[i] = max(b[i] / g, 0.0)
                accept = True
            else:
                # Unguided: early in a run b_k's projection is far sparser
                # or denser than x_k, and a wrong guide costs a fallback.
                status, _ = project_vector_guided(
                    b, l1[k], 1.0, True, METHOD_FAST, new, max_passes, 0
                )
                accept = status == STATUS_OK
                if accept and rule == RULE_SCALED:
                    p = 0.0
                    for i in range(n):
                        p += b[i] * new[i]
                    r = p / g
                    accept = r > 0.0 and math.isfinite(r)
                    if accept:
                        for i in range(n):
                            new[i] *= r
        before = after = 0.0
        if accept:
            before = _row_value(g, b, Xk, n)
            after = _row_value(g, b, new, n)
            accept = after <= before
        if accept:
            decrease += before - after
            d = D[k - start]
            for i in range(n):
                old = np.float64(Xk[i])
                Xk[i] = new[i]
                d[i] = np.float64(Xk[i]) - old  # the change as stored (float32 rounds)
        else:
            unchanged += 1
    return decrease, unchanged


@njit(cache=True, nogil=True)
def update_r(R, G, D, start, stop, lo, hi):
    """``R[:, lo:hi] += G[:, start:stop] D[:, lo:hi]`` after the block
    ``start..stop-1`` of a sweep (:func:`sweep_block`): every row of R, the
    block's changes at once, each entry by the same expression whatever
    the columns' range (so ranges may run on separate threads)."""
    update_r_rows(R, G, D, start, stop, 0, R.shape[0], lo, hi)


@njit(cache=True, nogil=True)
def update_r_rows(R, G, D, start, stop, r0, r1, lo, hi):
    """:func:`update_r` on the rows ``r0..r1-1`` of R alone: each entry by
    the same expression, so that rows and columns may be brought up to date
    in any pieces, on any threads, in any order (each entry once per
    block, the blocks in order)."""
    c = np.zeros(BLOCK)
    D0, D1, D2, D3 = D[0], D[1], D[2], D[3]
    D4, D5, D6, D7 = D[4], D[5], D[6], D[7]
    for r in range(r0, r1):
        for j in range(BLOCK):
            c[j] = np.float64(G[r, start + j]) if start + j < stop else 0.0
        c0, c1, c2, c3, c4, c5, c6, c7 = c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
        Rr = R[r]
        for i in range(lo, hi):
            Rr[i] += ((c0 * D0[i] + c1 * D1[i]) + (c2 * D2[i] + c3 * D3[i])) + (
                (c4 * D4[i] + c5 * D5[i]) + (c6 * D6[i] + c7 * D7[i])
            )
