r"""Numba kernel of the grouped ("average sparseness") projection,
:func:`nmfsc.projection.project_average` (Ohib, Gillis et al. 2022).

Problem. Given r vectors x_i of length n, norms l_i > 0 and a target ratio
rho_bar = sqrt(n) - (sqrt(n) - 1) s, find the y_i >= 0 with ||y_i||_2 = l_i and
sum_i rho(y_i) = K = r rho_bar (rho = L1 / L2) closest to the x_i. The
solution is y_i = l_i (x_i - mu / l_i)_+ / ||.|| for one shared multiplier mu,
where F(mu) = sum_i rho_i(mu) = K (the public docstring has the proof).

Coordinates. Vector i is scaled by an exact power of two to x^_i (largest
magnitude in [0.5, 1)), and its weight w_i = l_i 2^(A_i) (A_i: that power) is
written f_i 2^(e_i) with f_i in [0.5, 1), the largest at e_i = 1000 after a
common shift (so that products of small relative weights and small relative
entries keep full precision in the multiplier's range below), so
that vector i's threshold is t_i(mu) = mu / w_i = ldexp(mu, -e_i) / f_i in
x^-space, for any finite input. Its *breakpoints*, the mu at which an entry
leaves the support, are bp_ij = ldexp(f_i x^_ij, e_i), sorted with x^_i; the
support at mu is counted on them (entries with bp > mu), so that counts and
breakpoints agree exactly.

Rho. On a support of the k largest entries, with mean m, centred sum of
squares C and u = m - t (> 0) the mean margin,

    rho = k u / sqrt(C + k u^2) = k / sqrt(k + (sqrt(C) / u)^2),

continuous and non-increasing in mu; rho = 1 once t reaches the largest entry
(k = 0: the vector is its largest entry alone). sqrt(C) is computed at a
power-of-two scale of the deviations, so that it cannot underflow. A support
of tied entries (C = 0) has rho = sqrt(k): where the m largest entries tie,
rho jumps from sqrt(m) to 1 at their breakpoint. A root at a breakpoint HI is
met by the vectors whose support changes there, each given a ratio between
its values just right and just left of HI (the same fraction of that range
for all), and projected at it by :func:`nmfsc.projection.project`'s kernel,
which breaks ties by index. ("Just left" is nu = -2^-1074 below, so that a
vector of tiny relative weight, whose whole transition lies closer to HI
than a float can tell, is counted with its full range.)

Search. (1) The piece, an open interval (LO, HI) between consecutive
breakpoints holding the root: bisection over the breakpoints, each step
pivoting at the weighted median of the medians of what is left of every
vector's breakpoints in (LO, HI) (O(log(r n)) steps), with rho from running
(Welford) prefix statistics of each sorted vector: O(r log n) per step.
(2) In the piece, each support's mean (compensated: rounded, plus the mean
of the deviations from it) and sqrt(C), computed afresh by two passes (ties:
exactly m and 0), and the multiplier written mu = HI + nu, so that
u_i(nu) = (m_i - t_i(HI)) - ldexp(nu, -e_i) / f_i keeps the margins'
precision however close the thresholds are to the breakpoint (the vector
whose top is nearest HI has u_i w_i >= |nu| / k_i). The piece is checked on
these accurate sums (G at both ends); should the bisection's faster sums
have misplaced it, the search steps to the neighbouring piece (rarely, and
never back). (3) G(nu) = F - K is concave and decreasing in nu, so Newton's
method from the right end (G < 0) descends monotonically onto the root,
safeguarded by bisection in the bracket; it stops when a step no longer
moves nu (full float64 precision).

Every vector's output is computed from the same u_i as its rho in F, so the
result's mean ratio is the solved one to rounding. The caller sorts the rows
(NumPy's sort is several times faster than Numba's).
"""

import math

import numpy as np
from numba import njit

from nmfsc._kernels.sparse_projection import METHOD_FAST, project_vector

# Newton (and safeguarding bisection) steps within the final piece; the far
# left piece (targets near sparseness 0) needs the most, about 1.5x per step.
_MAX_STEPS = 600

# The largest weight is 2^_MU_EXPONENT (times f in [0.5, 1)), so that the
# multiplier has the float range below it, 2^1000 to 2^-1022 at full precision,
# for the products of relative weights and relative entries; none exceeds it.
_MU_EXPONENT = 1000


@njit(cache=True)
def _first_above(b, value, lo, hi):
    """The first index j in [lo, hi) with b[j] > value (b ascending), else hi."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if b[mid] > value:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def _first_at_or_above(b, value, lo, hi):
    """The first index j in [lo, hi) with b[j] >= value (b ascending), else hi."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if b[mid] >= value:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def _threshold(mu, e, f):
    """Vector's threshold in its own (x^) coordinates: mu / (f 2^e)."""
    return math.ldexp(mu, -e) / f


@njit(cache=True)
def _rho(k, root, u):
    """L1 / L2 of the margins on a support of k entries (root: the square
    root of their centred sum of squares; u: their mean margin), and its
    derivative in u."""
    if k == 0:
        return 1.0, 0.0
    root_k = math.sqrt(k)
    if root == 0.0:
        return root_k, 0.0
    if not (u > 0.0):
        return 1.0, 0.0
    q = root / u
    q2 = q * q
    s = k + q2
    rho = k / math.sqrt(s)
    slope = k * q2 / (u * s * math.sqrt(s))
    # Rounding can put rho an ulp outside [1, sqrt(k)]; the slope stays, for
    # Newton's steps (at u -> 0+, where rho -> 1, it is steepest).
    return min(max(rho, 1.0), root_k), slope


@njit(cache=True)
def _support_stats(row, start):
    """Mean (m + d: rounded, and the mean of the deviations from it) and the
    square root of the centred sum of squares of ``row[start:]`` (sorted),
    by two passes, the squares taken at a power-of-two scale of the largest
    deviation so that they cannot underflow. Tied entries give m exactly and
    d = root = 0."""
    n = row.shape[0]
    k = n - start
    if row[start] == row[n - 1]:
        return row[n - 1], 0.0, 0.0
    s = 0.0
    for j in range(start, n):
        s += row[j]
    m = s / k
    s = 0.0
    for j in range(start, n):
        s += row[j] - m
    d = s / k
    big = 0.0
    for j in range(start, n):
        big = max(big, abs((row[j] - m) - d))
    if big == 0.0:
        return m, d, 0.0
    sc = math.ldexp(1.0, min(-math.frexp(big)[1], 1021))
    ss = 0.0
    for j in range(start, n):
        dev = ((row[j] - m) - d) * sc
        ss += dev * dev
    return m, d, math.sqrt(ss) / sc


@njit(cache=True)
def _prefix_stats(srt, pm, pc):
    """Running mean and centred sum of squares (Welford) of the k largest
    entries of every sorted row, k = 1..n, as ``pm[k, q]``, ``pc[k, q]`` (ties
    add exactly nothing). The rows advance together: independent chains."""
    ra, n = srt.shape
    m = np.zeros(ra)
    c = np.zeros(ra)
    for k in range(1, n + 1):
        inv = 1.0 / k
        for q in range(ra):
            v = srt[q, n - k]
            d = v - m[q]
            m[q] += d * inv
            c[q] += d * (v - m[q])
            pm[k, q] = m[q]
            pc[k, q] = c[q]


@njit(cache=True)
def _ratio_sum_at(pivot, bp, pm, pc, ev, fv):
    """F(pivot) from the prefix statistics (the supports at pivot: bp > pivot)."""
    ra, n = bp.shape
    total = 0.0
    for q in range(ra):
        k = n - _first_above(bp[q], pivot, 0, n)
        if k == 0:
            total += 1.0
        else:
            u = pm[k, q] - _threshold(pivot, ev[q], fv[q])
            total += _rho(k, math.sqrt(pc[k, q]), u)[0]
    return total


@njit(cache=True)
def _locate_piece(bp, pm, pc, ev, fv, target):
    """(LO, HI): consecutive breakpoints (LO may be -inf) with F(LO) > target
    >= F(HI) by the prefix statistics, found by bisection over the breakpoints."""
    ra, n = bp.shape
    lo_mu = -np.inf
    hi_mu = np.inf
    wlo = np.zeros(ra, dtype=np.int64)
    whi = np.full(ra, n, dtype=np.int64)
    values = np.empty(ra)
    weights = np.empty(ra)
    while True:
        m = 0
        total = 0.0
        for q in range(ra):
            if whi[q] > wlo[q]:
                values[m] = bp[q, (wlo[q] + whi[q]) >> 1]
                weights[m] = whi[q] - wlo[q]
                total += weights[m]
                m += 1
        if m == 0:
            break
        order = np.argsort(values[:m], kind="mergesort")
        pivot = values[order[m - 1]]
        acc = 0.0
        for j in range(m):
            acc += weights[order[j]]
            if 2.0 * acc >= total:
                pivot = values[order[j]]
                break
        if _ratio_sum_at(pivot, bp, pm, pc, ev, fv) > target:
            lo_mu = pivot
            for q in range(ra):
                wlo[q] = _first_above(bp[q], lo_mu, wlo[q], whi[q])
        else:
            hi_mu = pivot
            for q in range(ra):
                whi[q] = _first_at_or_above(bp[q], hi_mu, wlo[q], whi[q])
    if not (hi_mu < np.inf):  # F(top) = r < target always; kept for safety
        hi_mu = -np.inf
        for q in range(ra):
            hi_mu = max(hi_mu, bp[q, n - 1])
    return lo_mu, hi_mu


@njit(cache=True)
def _piece_stats(srt, bp, ev, fv, lo_mu, hi_mu, kk, mean, delta, root, base):
    """Every vector's support on the piece (lo_mu, hi_mu) (its entries with
    bp > lo_mu), the support's compensated mean (mean + delta), root of its
    centred sum of squares, and base: its mean margin u at nu = 0."""
    ra, n = srt.shape
    for q in range(ra):
        start = 0 if lo_mu == -np.inf else _first_above(bp[q], lo_mu, 0, n)
        kk[q] = n - start
        if start == n:
            mean[q] = 0.0
            delta[q] = 0.0
            root[q] = 0.0
            base[q] = 0.0
            continue
        m, d, c = _support_stats(srt[q], start)
        mean[q] = m
        delta[q] = d
        root[q] = c
        base[q] = (m - _threshold(hi_mu, ev[q], fv[q])) + d


@njit(cache=True)
def _switching(srt, bp, ev, fv, hi_mu, kk, root, base, nu, rho_minus, rho_plus, switch):
    """The vectors with an entry leaving their support at hi_mu: their ratio
    just left of it (at nu) and just right (without those entries); returns
    the sum of the differences, what they can absorb of the target there."""
    ra, n = srt.shape
    span = 0.0
    for q in range(ra):
        k = kk[q]
        switch[q] = k > 0 and bp[q, n - k] == hi_mu
        if not switch[q]:
            continue
        rho_minus[q] = _rho(k, root[q], _margin_mean(base[q], nu, ev[q], fv[q]))[0]
        start = _first_above(bp[q], hi_mu, n - k, n)
        if start == n:
            rho_plus[q] = 1.0
        else:
            m, d, c = _support_stats(srt[q], start)
            u = (m - _threshold(hi_mu, ev[q], fv[q])) + d
            rho_plus[q] = _rho(n - start, c, u)[0]
        span += max(rho_minus[q] - rho_plus[q], 0.0)
    return span


@njit(cache=True)
def _margin_mean(base, nu, e, f):
    return base - _threshold(nu, e, f)


@njit(cache=True)
def _excess(nu, kk, root, base, ev, fv, target):
    """G(nu) = F(HI + nu) - target on the piece, and G'(nu)."""
    g = -target
    dg = 0.0
    for q in range(kk.shape[0]):
        k = kk[q]
        if k == 0:
            g += 1.0
            continue
        rho, slope = _rho(k, root[q], _margin_mean(base[q], nu, ev[q], fv[q]))
        g += rho
        if slope > 0.0:
            dg -= math.ldexp(slope, -ev[q]) / fv[q]
    return g, dg


@njit(cache=True)
def _solve_piece(lo_nu, b, gb, kk, root, base, ev, fv, target):
    """The root of G in (lo_nu, b), G(b) = gb < 0 < G(lo_nu): Newton from
    the right (G concave, decreasing), bisection where a step leaves the
    bracket; the end of the final bracket where |G| is least."""
    a = lo_nu
    ga = np.inf
    for _ in range(_MAX_STEPS):
        dg = _excess(b, kk, root, base, ev, fv, target)[1]
        cand = np.nan
        if dg < 0.0 and dg > -np.inf:
            cand = b - gb / dg
            if cand >= b:
                break  # the step no longer moves b: converged
        if not (cand > a and cand < b):
            if a == -np.inf:
                cand = 2.0 * b - math.ldexp(1.0, _MU_EXPONENT - 60)
            elif a < 4.0 * b:
                # Ends orders of magnitude apart (b < 0): halve the exponent
                # range first (the geometric mean), then the interval.
                cand = -(math.sqrt(-a) * math.sqrt(-b))
            else:
                cand = 0.5 * a + 0.5 * b
            if not (cand > a and cand < b):
                break  # a and b adjacent
        gc = _excess(cand, kk, root, base, ev, fv, target)[0]
        if gc > 0.0:
            a = cand
            ga = gc
        elif gc < 0.0:
            b = cand
            gb = gc
        else:
            return cand
    if ga < -gb:
        return a
    return b


@njit(cache=True)
def _write_single(x, length, out):
    """``length`` at the largest entry of x (earliest on ties), zeros elsewhere."""
    best = 0
    for j in range(x.shape[0]):
        out[j] = 0.0
        if x[j] > x[best]:
            best = j
    out[best] = length


@njit(cache=True)
def _write_vector(x, xh_row, srt_row, k, mean, delta, root, u, length, out):
    """length * (x^ - t)_+ / ||.|| on the support of the k largest entries,
    with the margins (x^_j - mean) - delta + u."""
    n = xh_row.shape[0]
    if k == 0:
        _write_single(x, length, out)
        return
    low = srt_row[n - k]
    if root == 0.0 or not math.isfinite(u):
        value = length / math.sqrt(k)
        for j in range(n):
            out[j] = value if xh_row[j] >= low else 0.0
        return
    top = ((srt_row[n - 1] - mean) - delta) + u
    if not (top > 0.0):
        _write_single(x, length, out)
        return
    sc = math.ldexp(1.0, min(-math.frexp(top)[1], 1021))  # a float, even for a subnormal top
    ss = 0.0
    for j in range(n):
        v = 0.0
        if xh_row[j] >= low:
            v = ((xh_row[j] - mean) - delta) + u
            if v < 0.0:
                v = 0.0
            v *= sc
        out[j] = v
        ss += v * v
    norm = math.sqrt(ss)
    for j in range(n):
        out[j] = length * (out[j] / norm)


@njit(cache=True)
def project_average_rows(V, sorted_rows, norms, sparseness, out, max_filter_passes):
    """The grouped projection of the rows of V (module docstring).

    V: (r, n) C-contiguous float64, finite, n >= 2; ``sorted_rows``: every row
    of V sorted in ascending order (NumPy's sort is several times faster than
    Numba's: the caller sorts; scaling by a power of two keeps the order); norms: (r,) finite, >= 0
    (rows with norm 0 are left out and get zeros); 0 <= sparseness <= 1. Writes
    every row of ``out`` (not aliasing V). Returns the pieces visited after
    the bisection (0 when it placed the root), for the tests.
    """
    r, n = V.shape
    for i in range(r):
        for j in range(n):
            out[i, j] = 0.0
    rows = np.empty(r, dtype=np.int64)
    ra = 0
    for i in range(r):
        if norms[i] > 0.0:
            rows[ra] = i
            ra += 1
    if ra == 0:
        return 0
    root_n = math.sqrt(n)
    rho_bar = root_n - (root_n - 1.0) * sparseness
    if sparseness == 1.0 or rho_bar <= 1.0:
        for q in range(ra):
            _write_single(V[rows[q]], norms[rows[q]], out[rows[q]])
        return 0
    if rho_bar >= root_n:
        for q in range(ra):
            value = norms[rows[q]] / root_n
            for j in range(n):
                out[rows[q], j] = value
        return 0
    target = ra * rho_bar

    # Coordinates: x^ (exact power-of-two scaling), weights f 2^e, breakpoints.
    xh = np.empty((ra, n))
    srt = np.empty((ra, n))
    bp = np.empty((ra, n))
    fv = np.empty(ra)
    ev = np.zeros(ra, dtype=np.int64)
    sums = np.zeros(ra, dtype=np.int64)
    nonzero = np.zeros(ra, dtype=np.bool_)
    top_exponent = 0
    first = True
    for q in range(ra):
        x = V[rows[q]]
        peak = 0.0
        for j in range(n):
            peak = max(peak, abs(x[j]))
        f, exp_l = math.frexp(norms[rows[q]])
        fv[q] = f
        exp_x = 0
        if peak > 0.0:
            # At least 2^-1021 (below: a subnormal peak), so that 2^-exp_x is a
            # float and multiplying by it is exact, as ldexp, and cheaper.
            exp_x = max(math.frexp(peak)[1], -1021)
            nonzero[q] = True
            sums[q] = exp_l + exp_x
            if first or sums[q] > top_exponent:
                top_exponent = sums[q]
                first = False
        scale = math.ldexp(1.0, -exp_x)
        for j in range(n):
            xh[q, j] = x[j] * scale
            srt[q, j] = sorted_rows[rows[q], j] * scale
    for q in range(ra):
        if nonzero[q]:
            ev[q] = sums[q] - top_exponent + _MU_EXPONENT
        if ev[q] >= -1021:
            scale = math.ldexp(1.0, ev[q])
            for j in range(n):
                bp[q, j] = (fv[q] * srt[q, j]) * scale
        else:
            for j in range(n):
                bp[q, j] = math.ldexp(fv[q] * srt[q, j], ev[q])

    pm = np.empty((n + 1, ra))
    pc = np.empty((n + 1, ra))
    _prefix_stats(srt, pm, pc)
    lo_mu, hi_mu = _locate_piece(bp, pm, pc, ev, fv, target)

    kk = np.empty(ra, dtype=np.int64)
    mean = np.empty(ra)
    delta = np.empty(ra)
    root = np.empty(ra)
    base = np.empty(ra)
    rho_minus = np.empty(ra)
    rho_plus = np.empty(ra)
    switch = np.zeros(ra, dtype=np.bool_)
    top_bp = -np.inf
    for q in range(ra):
        top_bp = max(top_bp, bp[q, n - 1])
    # The multiplier just left of HI: G is taken there (a vector of tiny
    # relative weight can change its whole support between it and HI).
    nu_left = -math.ldexp(1.0, -1074)
    direction = 0
    visited = 0
    nu = nu_left
    at_breakpoint = False
    for _ in range(ra * n + 2):
        _piece_stats(srt, bp, ev, fv, lo_mu, hi_mu, kk, mean, delta, root, base)
        g0 = _excess(nu_left, kk, root, base, ev, fv, target)[0]
        if g0 >= 0.0:
            span = _switching(
                srt, bp, ev, fv, hi_mu, kk, root, base, nu_left, rho_minus, rho_plus, switch
            )
            if g0 - span > 0.0 and direction >= 0 and hi_mu < top_bp:
                # F just right of HI is still above the target: next piece up.
                nxt = np.inf
                for q in range(ra):
                    j = _first_above(bp[q], hi_mu, 0, n)
                    if j < n:
                        nxt = min(nxt, bp[q, j])
                lo_mu = hi_mu
                hi_mu = nxt
                direction = 1
                visited += 1
                continue
            at_breakpoint = True
            break
        lo_nu = -np.inf
        if lo_mu > -np.inf:
            lo_nu = lo_mu - hi_mu
            if _excess(lo_nu, kk, root, base, ev, fv, target)[0] <= 0.0 and direction <= 0:
                # F just right of LO is already at or below the target: next piece down.
                prev = -np.inf
                for q in range(ra):
                    j = _first_at_or_above(bp[q], lo_mu, 0, n)
                    if j > 0:
                        prev = max(prev, bp[q, j - 1])
                hi_mu = lo_mu
                lo_mu = prev
                direction = -1
                visited += 1
                continue
        nu = _solve_piece(lo_nu, nu_left, g0, kk, root, base, ev, fv, target)
        break

    if at_breakpoint:
        # The root is at HI: the vectors whose support changes there share
        # what the others leave of the target, each the same fraction of its
        # range [ratio just right of HI, ratio just left], as project gives it.
        rest = target
        span = 0.0
        for q in range(ra):
            if switch[q]:
                rest -= rho_plus[q]
                span += max(rho_minus[q] - rho_plus[q], 0.0)
            else:
                rest -= _rho(kk[q], root[q], _margin_mean(base[q], nu, ev[q], fv[q]))[0]
        frac = 0.0
        if span > 0.0:
            frac = min(max(rest / span, 0.0), 1.0)
        for q in range(ra):
            if switch[q]:
                i = rows[q]
                rho = rho_plus[q] + frac * max(rho_minus[q] - rho_plus[q], 0.0)
                project_vector(
                    V[i], rho * norms[i], norms[i], True, METHOD_FAST, out[i], max_filter_passes
                )
    for q in range(ra):
        if at_breakpoint and switch[q]:
            continue
        i = rows[q]
        u = _margin_mean(base[q], nu, ev[q], fv[q])
        _write_vector(V[i], xh[q], srt[q], kk[q], mean[q], delta[q], root[q], u, norms[i], out[i])
    return visited
