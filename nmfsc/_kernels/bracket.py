"""The fast method's path for long vectors: bracket the threshold on a sample.

The projection is s = beta * max(y - alpha, 0) (Thom & Palm 2013): it is fixed by
its support {y > alpha}. For n >= :data:`BRACKET_MIN_N` the fast method
(``projection._fast_shape_into``) would read the vector 7-10 times, and its
passes keep a float min and max, which LLVM leaves scalar on AVX2. This path
reads it twice, in loops that hold only masked sums:

1. A deterministic strided sample of ``m`` entries (no pass) is sorted and
   projected exactly, with the targets rescaled to its length
   (rho_s = rho * sqrt(m / n)); around its support size k_s, a band of sample
   order statistics [lo, hi] (k_s -/+ d, d about 4 binomial standard
   deviations plus m / 64) should contain the true threshold.
2. One full pass (:func:`_band_pass`): count and centred moments of the sure
   part y > hi and the sum and sum of squares of all y; then the band
   lo < y <= hi is gathered into ``out`` (a scratch until step 4). A NaN or
   +-inf entry makes sum(y) non-finite, so the sums also prove the input finite
   before anything else uses them (no pass is compiled with fastmath).
3. The paper's passes (entries with s <= 0 leave the support) run on the band
   only, with the sure part's sums (:func:`_solve_band`). The result is
   *verified*: s(hi) > 0 and s(lo) <= 0, with s monotone in y, so every entry
   outside the band is on the correct side. If not, or if any accuracy guard
   fails, the caller falls back to the exact kernel (correctness never depends
   on the sample).
4. One full pass writes l2 * max(s(y), 0) (a vectorised map).

Sums use the fixed-order 64-lane scheme of ``projection`` (no fastmath), so
every compiled specialization gives the same bits.

The shape is s(v) = m + t * ((v - c) * sce - dbar) with c the sample support's
mean (a pilot centre known before the pass), sce a power of two of the sample
spread, dbar = mean((y - c) * sce) over the support and
t = sqrt((1 - rho^2 / k) / sum(((y - c) * sce - dbar)^2)): every rounding step is
monotone in v, so the support is an upper set of y.

Falls back (returns -1) on: non-finite input or overflowing sums, input that
nearly meets the targets already (the exact kernel copies it unchanged), a band
that misses, more than one bit lost to cancellation in the moments, a flat or
all-tied support.
"""

import math

import numpy as np
from numba import njit

from nmfsc._kernels.radix import sort_descending

# As projection._R2_FLAT: 1 - rho^2 / k at or below this is the flat case.
r2_flat = 1e-15


@njit(cache=True)
def power_of_two_scale(maxabs):
    """2**-e with maxabs = f * 2**e, 0.5 <= f < 1, capped at 2**1000."""
    _, e = math.frexp(maxabs)
    return math.ldexp(1.0, min(-e, 1000))


# Below this length the fast kernel is used as it is (it is already fast there).
BRACKET_MIN_N = 4096

_LANES = 64
_ROWS = 8
# Near-feasible input (relative) goes to the exact kernel, which decides it.
_NEAR_FEASIBLE = 1e-9
# Moments losing more than one bit to cancellation: fall back.
_CANCELLATION = 0.5
# Squares of the scaled deviations below this may have underflowed: fall back.
_MIN_C2 = 2.0**-800


@njit(cache=True)
def sample_size(n):
    """Entries in the strided sample: n / 16, clamped to [256, 2048]."""
    return min(max(n // 16, 256), 2048)


@njit(cache=True)
def _sample_band(x, nonneg, rho, n, widen, guide):
    """(ok, scale, lo, hi, c, sce) from the sorted strided sample, in y = scale * x.

    The band is centred on the sample's own support size k_s (the sample
    projected with rho_s = rho * sqrt(m / n)), or, for a ``guide`` in (0, n],
    on the sample rank guide * m / n: where the caller knows the support size
    to expect (a solver's previous projection of the same row), the sample
    only has to place that rank, which its order statistics do to a binomial
    error. (A heavy-tailed row defeats the projected sample: its top 1 % can
    hold 85 % of the sum of squares, and a sample of n / 16 sees a handful of
    them.)"""
    m = sample_size(n)
    stride = n // m
    z = np.empty(m)
    maxabs = 0.0
    for j in range(m):
        v = x[j * stride] if nonneg else abs(x[j * stride])
        z[j] = v
        maxabs = max(maxabs, abs(v))
    if not math.isfinite(maxabs) or maxabs == 0.0:
        return False, 1.0, 0.0, 0.0, 0.0, 1.0
    scale = power_of_two_scale(maxabs)
    z = sort_descending(z * scale)
    top = z[0]
    spread = top - z[m - 1]
    if spread <= 0.0:
        return False, 1.0, 0.0, 0.0, 0.0, 1.0
    p1 = np.empty(m + 1)
    p2 = np.empty(m + 1)
    p1[0] = 0.0
    p2[0] = 0.0
    for i in range(m):
        d = z[i] - top
        p1[i + 1] = p1[i] + d
        p2[i + 1] = p2[i] + d * d
    rho_s = rho * math.sqrt(m / n)
    k = m
    guided = 0 < guide <= n
    if guided:
        k = min(max(int(guide * m / n + 0.5), 1), m)
    for _ in range(0 if guided else 64):
        r2 = 1.0 - rho_s * rho_s / k
        mz = p1[k] / k
        c2 = p2[k] - p1[k] * mz
        if r2 <= 0.0 or c2 <= 0.0 or k <= 1:
            break
        alpha = top + mz - rho_s / k / math.sqrt(r2 / c2)
        lo_i = 0
        hi_i = k
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            if z[mid] > alpha:
                lo_i = mid + 1
            else:
                hi_i = mid
        if lo_i == k or lo_i == 0:
            break
        k = lo_i
    p = k / m
    d = widen * (int(4.0 * math.sqrt(k * (1.0 - p) + 1.0)) + m // 64 + 2)
    hi = z[k - 1 - d] if k - 1 - d >= 0 else np.inf
    lo = z[k + d] if k + d < m else -np.inf
    c = top + p1[k] / k
    sce = power_of_two_scale(spread)
    return True, scale, lo, hi, c, sce


@njit(cache=True, inline="always")
def _load(x, i, scale, nonneg):
    v = x[i] if nonneg else abs(x[i])
    return v * scale


@njit(cache=True)
def _compact_band(x, n, nonneg, scale, lo, hi, buf):
    """Copy the y in (lo, hi] of x[:n] to buf, in order (branch-free); return their count."""
    kb = 0
    for i in range(n):
        v = _load(x, i, scale, nonneg)
        buf[kb] = v
        kb += 1 if v > lo and v <= hi else 0
    return kb


@njit(cache=True)
def _band_pass(x, nonneg, scale, lo, hi, c, sce, buf, lanes):
    """One pass over y = scale * x: see the module docstring, step 2.

    Returns (kb, sums): kb band entries in buf[:kb]; sums = (sure count,
    sure sum e, sure sum e^2, 0, sum y, sum y^2), e = (y - c) * sce. The masked
    sums run in the 64 lanes (a vectorised map), the band is gathered by a
    separate branch-free loop: a store inside the lane loop kept it scalar.
    """
    n = x.shape[0]
    r0 = lanes[0]
    r1 = lanes[1]
    r2 = lanes[2]
    r4 = lanes[4]
    r5 = lanes[5]
    for j in range(_LANES):
        r0[j] = 0.0
        r1[j] = 0.0
        r2[j] = 0.0
        r4[j] = 0.0
        r5[j] = 0.0
    head = n - n % _LANES
    # (The lane loop must not sit inside a branch: LLVM then leaves it scalar.)
    for i in range(0, head, _LANES):
        for j in range(_LANES):
            v = _load(x, i + j, scale, nonneg)
            w = 1.0 if v > hi else 0.0
            e = (v - c) * sce
            r0[j] += w
            r1[j] += w * e
            r2[j] += w * (e * e)
            r4[j] += v
            r5[j] += v * v
    kb = _compact_band(x, head, nonneg, scale, lo, hi, buf)
    lanes[3, :] = 0.0
    sums = np.zeros(6)
    for r in range(6):
        row = lanes[r]
        for w in (32, 16, 8, 4, 2, 1):
            for j in range(w):
                row[j] += row[j + w]
        sums[r] = row[0]
    for i in range(head, n):
        v = x[i] * scale if nonneg else abs(x[i]) * scale
        e = (v - c) * sce
        if v > hi:
            sums[0] += 1.0
            sums[1] += e
            sums[2] += e * e
        elif v > lo:
            buf[kb] = v
            kb += 1
        sums[4] += v
        sums[5] += v * v
    return kb, sums


@njit(cache=True)
def _band_moments(buf, kb, c, sce):
    """(sum e, sum e^2) over buf[:kb], e = (v - c) * sce, in four interleaved
    accumulators (a fixed order: one dependent chain of additions would cost
    its latency, 4 cycles, per entry)."""
    a0 = a1 = a2 = a3 = 0.0
    b0 = b1 = b2 = b3 = 0.0
    head = kb - kb % 4
    for i in range(0, head, 4):
        e0 = (buf[i] - c) * sce
        e1 = (buf[i + 1] - c) * sce
        e2 = (buf[i + 2] - c) * sce
        e3 = (buf[i + 3] - c) * sce
        a0 += e0
        a1 += e1
        a2 += e2
        a3 += e3
        b0 += e0 * e0
        b1 += e1 * e1
        b2 += e2 * e2
        b3 += e3 * e3
    for i in range(head, kb):
        e0 = (buf[i] - c) * sce
        a0 += e0
        b0 += e0 * e0
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)


@njit(cache=True)
def _solve_band(buf, kb, ks, s1, s2, rho, c, sce):
    """The paper's passes on the band buf[:kb] (compacted in place) plus the sure
    part (ks entries, moments s1, s2): (ok, passes, m, t, dbar, c)."""
    passes = 0
    while True:
        if ks == 0 and kb > 0:
            # No sure part: centre at the band's own mean (exact two-pass moments).
            c = c + _band_moments(buf, kb, c, 1.0)[0] / kb
        a, b = _band_moments(buf, kb, c, sce)
        a += s1
        b += s2
        k = ks + kb
        if k <= 1:
            return False, passes, 0.0, 0.0, 0.0, c
        r2 = 1.0 - rho * rho / k
        dbar = a / k
        if r2 <= r2_flat or not (a * dbar <= _CANCELLATION * b):
            return False, passes, 0.0, 0.0, 0.0, c
        c2 = b - a * dbar
        if not (c2 > _MIN_C2):
            return False, passes, 0.0, 0.0, 0.0, c
        m = rho / k
        t = math.sqrt(r2 / c2)
        passes += 1
        keep = 0
        for i in range(kb):
            v = buf[i]
            buf[keep] = v
            keep += 1 if m + t * ((v - c) * sce - dbar) > 0.0 else 0
        if keep == kb:
            return True, passes, m, t, dbar, c
        kb = keep


@njit(cache=True)
def bracket_shape_into(x, nonneg, rho, l1, l2, out, guide):
    """Project x (length n >= BRACKET_MIN_N, 1 < rho < sqrt(n)) into out by
    bracketing the threshold (module docstring). ``guide``: the support size to
    expect, or 0 (see :func:`_sample_band`); it moves only the band, so only
    the speed and the last bits depend on it. Returns the passes, or -1 when
    the caller must use the exact kernel instead (nothing useful in out)."""
    n = x.shape[0]
    lanes = np.empty((_ROWS, _LANES))
    # A band that misses is widened fourfold once (a sample of a row already
    # near its targets can misjudge the support), then the exact kernel runs.
    for widen in (1, 4):
        ok, scale, lo, hi, c, sce = _sample_band(x, nonneg, rho, n, widen, guide)
        if not ok:
            return -1
        kb, sums = _band_pass(x, nonneg, scale, lo, hi, c, sce, out, lanes)
        ks = sums[0]
        s1, s2 = sums[1], sums[2]
        # A NaN or +-inf entry makes sum(y) NaN or infinite.
        if not (math.isfinite(sums[4]) and math.isfinite(sums[5]) and math.isfinite(s2)):
            return -1
        norm = math.sqrt(sums[5]) / scale
        near_l1 = abs(sums[4] / scale - l1) <= _NEAR_FEASIBLE * l1
        if near_l1 and abs(norm - l2) <= _NEAR_FEASIBLE * l2:
            return -1
        ok, passes, m, t, dbar, c = _solve_band(out, kb, int(ks), s1, s2, rho, c, sce)
        if not ok:
            return -1
        # Verify the bracket: everything above hi kept, everything at or below lo dropped.
        if (hi == np.inf or m + t * ((hi - c) * sce - dbar) > 0.0) and (
            lo == -np.inf or m + t * ((lo - c) * sce - dbar) <= 0.0
        ):
            break
        if widen == 4:
            return -1
    for i in range(n):
        v = x[i] * scale if nonneg else abs(x[i]) * scale
        s = m + t * ((v - c) * sce - dbar)
        out[i] = l2 * s if s > 0.0 else 0.0
    return passes + 2


@njit(cache=True)
def row_supports(X):
    """The non-zero entries of each row of X (int64): ``np.count_nonzero(X,
    axis=1)``, in one vectorised read (numpy's takes five times as long)."""
    out = np.zeros(X.shape[0], np.int64)
    for i in range(X.shape[0]):
        count = 0
        for j in range(X.shape[1]):
            count += X[i, j] != 0
        out[i] = count
    return out


@njit(cache=True)
def column_supports(X):
    """The non-zero entries of each column of C-ordered X (int64):
    ``np.count_nonzero(X, axis=0)``, row by row."""
    out = np.zeros(X.shape[1], np.int64)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            out[j] += X[i, j] != 0
    return out
