"""Numba kernels for the L1/L2 sparseness projection (Hoyer 2004, Section 3.2).

Problem. Given x in R^n, rho = L1 / L2 in [1, sqrt(n)], find the closest point s
to x with s >= 0, sum(s) = L1 and ||s||_2 = L2.

Both kernels compute the *shape* u, the projection for the targets (rho, 1), and
return s = L2 * u. This is exact: the projection has the form
s = beta * max(x - alpha, 0) (Thom & Palm 2013), so it is covariant under a
positive scaling of x and of (L1, L2) separately. The input is first scaled by
an exact power of two (``2**-e`` with ``max|x| = f * 2**e``), which keeps ties
bit-identical and keeps every intermediate far from overflow and underflow, for
any finite input from 1e-308 to 1e308.

On a support S of size k (the entries not fixed at zero), the point of the
hyperplane sum(s) = rho closest to x, pushed out along x's own direction until
||s||_2 = 1, is (centred form of the paper's quadratic step)

    s_i = rho / k + t * e_i,   e_i = y_i - mean_S(y),   t = sqrt((1 - rho^2 / k) / sum_S e^2),

which is algebraically the paper's ``v + alpha * (v - midpoint)`` with the root of
the quadratic taken in closed form, and needs no discriminant. If every s_i is
non-negative this is the answer; otherwise the entries with s_i <= 0 leave S and
the step repeats. Each such round is one *pass*, counted as the paper counts them.

Accuracy. ``t`` is about 1 / spread(y_S), so an error of one rounding in the mean
would cost t * k * eps * |mean| in sum(s): for a nearly constant (or shifted,
``c + small noise``) input that is no longer small. So the deviations are taken
around the rounded mean, rescaled by a power of two to unit spread, and the
rounded mean is then corrected in that rescaled space:

    e_i = (y_i - mean) * sc - delta,   sc = 2**-e with hi - lo = f * 2**e,
    delta = mean_S((y - mean) * sc),

which is accurate to a few roundings of e_i itself, and cannot underflow. Which
entries leave S is decided on the computed s_i themselves (never on a threshold
in y-space), and a rounded expression that is monotone in y_i keeps every
support an upper set of y: the support is exactly ``y >= min over S``, so no
mask is kept, and s >= 0 on S exactly when it is at min over S.

Passes. To read the data once per pass, sum, min, max and the moments are
gathered together, the moments about a pilot centre known before the pass (the
previous support's mean); they convert exactly to delta and sum e^2 above
(:func:`_centred`), and a second pass recentres at the rounded mean only when
that conversion would cancel more than one bit. Sums run in a fixed order, so
every compiled variant gives the same bits (see "reductions" below).

Ties. If the remaining support is all tied (min == max) while the targets ask for
a sparser vector (rho^2 < k), every point of the feasible circle is equally close
and the projection is not unique. The kernels then break the tie by index: the
tied values are replaced by the ramp k-1, k-2, ..., 0 in index order (the limit of
an infinitesimal perturbation favouring earlier indices), which makes the result
deterministic and identical for both methods.

Sparseness 1. For rho = 1 (L1 = L2) the only feasible points have a single
non-zero entry, and the answer is L2 at the largest y (earliest index on ties,
as the tie-break gives). Both kernels return it directly, in one pass: the
passes would reach it only up to rounding, leaving entries whose exact shape is
0 at +1e-17.

Status codes: 0 ok, 1 non-finite input.
"""

import math

import numba
import numpy as np
from numba import njit, prange

from nmfsc._kernels.bracket import (
    BRACKET_MIN_N,
    bracket_shape_into,
    shape_map,
    shape_value,
    stack_lanes,
)
from nmfsc._kernels.bracket import CHUNK as BRACKET_CHUNK
from nmfsc._kernels.bracket import MAX_PASSES as BRACKET_MAX_PASSES

STATUS_OK = 0
STATUS_NONFINITE = 1

METHOD_HOYER = 0
METHOD_FAST = 1
# The fast method when the caller wants the paper's pass count: it skips the
# bracketing path for long vectors (module ``bracket``), whose passes are its own.
METHOD_FAST_COUNTED = 2

# Michelot-style filter passes allowed before the fast kernel sorts what is left;
# this bounds its worst case at O(n log n) (each pass is O(current support)).
_FILTER_PASSES_SLACK = 8


def max_filter_passes(n):
    """The filter passes the fast kernel may make on a vector of length ``n``
    before it sorts what is left: ``2 ceil(log2(n)) + 8``."""
    # ceil(log2(n)) in integer arithmetic: (n - 1).bit_length() for n >= 2
    # (np.ceil(np.log2(n)) gives the same, slower: two NumPy calls from Python).
    if n < 2:
        return 2 + _FILTER_PASSES_SLACK
    return 2 * (int(n) - 1).bit_length() + _FILTER_PASSES_SLACK


# 1 - rho^2 / k at or below this is taken as 0 (the flat vector rho / k, whose
# norm is then within 5e-16 of 1): for a target sparseness of exactly 0,
# rho = fl(sqrt(n)) leaves r2 = 1 - rho^2 / n an ulp above 0, and its square
# root would bend the flat answer by 1e-8.
_R2_FLAT = 1e-15

# Input whose sum and norm already match the targets to this relative tolerance
# is returned unchanged.
_FEASIBLE_RTOL = 1e-13


@njit(cache=True)
def _power_of_two_scale(maxabs):
    """Return 2**-e with maxabs = f * 2**e, 0.5 <= f < 1 (1.0 if maxabs == 0).

    Capped at 2**1000 (2**1074 would overflow): a subnormal maxabs is then
    scaled to at least 2**-74, still far from underflow when squared.
    """
    if maxabs == 0.0:
        return 1.0
    _, e = math.frexp(maxabs)
    return math.ldexp(1.0, min(-e, 1000))


@njit(cache=True)
def _abs_max_and_finite(x):
    """max |x|, and whether every entry is finite."""
    maxabs = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        if not math.isfinite(v):
            return 0.0, False
        a = abs(v)
        if a > maxabs:
            maxabs = a
    return maxabs, True


# --- reductions -------------------------------------------------------------------
#
# Every sum below is taken in an order written out in the source, so that all
# compiled specializations (a strided column view and a contiguous row, the
# serial and the parallel batch build, the copies inlined into callers) round
# identically: no fastmath. (With fastmath "reassoc"/"contract" LLVM vectorised
# and fused each specialization its own way, and project() of a column view and
# project_batch() of the same column differed in the last bit, which moved
# entries of exact shape 0 to +2.8e-17.)
#
# The order: entry i goes to lane i % _LANES of a lane row (one row per
# accumulated quantity); the lanes are combined by a fixed tree (_fold_sum) and
# the tail (n % _LANES entries) is added last, in index order. The inner loop
# over the lanes has no dependence between iterations, so LLVM vectorises it as
# an elementwise map (SIMD) without reassociating anything. The rows are arrays
# on the pass's stack (``bracket.stack_lanes``), which LLVM keeps in vector
# registers: rows in a heap scratch stayed in memory, and every pass waited on
# store-to-load forwarding (2.5 and 3.7 times one np.sum for the stats and
# select passes at n = 10^6; 64 lanes then, to hide that latency). Inputs
# shorter than _LANES take the tail loop alone.

_LANES = 16  # the folds below assume 16

# Block length of the two-step compaction (decide, then move).
_COMPACT_BLOCK = 256

# Pilot-shifted moments (see _centred) are used when they lose at most one bit to
# cancellation: A^2 / k <= B / 2; otherwise a second pass centres exactly.
_PILOT_CANCELLATION = 0.5

# Deviations scaled by more than this below the support's unit (sc / sce, see
# _centred) may have lost their squares to underflow: recentre.
_MAX_PILOT_RATIO = 2.0**400

# Below this spread, unscaled squares could lose bits to underflow: scale first.
_MIN_UNSCALED_SPREAD = 2.0**-450


@njit(cache=True, inline="always")
def _lane_row():
    """A lane row on the calling pass's stack (uninitialised)."""
    return numba.carray(stack_lanes(_LANES), _LANES)


@njit(cache=True, inline="always")
def _fold_sum(row):
    """Sum of a lane row in a fixed tree order (halves added pairwise, a
    vectorised map each); overwrites the row."""
    for w in (8, 4, 2, 1):
        for j in range(w):
            row[j] += row[j + w]
    return row[0]


@njit(cache=True, inline="always")
def _fold_min(row):
    for w in (8, 4, 2, 1):
        for j in range(w):
            row[j] = min(row[j], row[j + w])
    return row[0]


@njit(cache=True, inline="always")
def _fold_max(row):
    for w in (8, 4, 2, 1):
        for j in range(w):
            row[j] = max(row[j], row[j + w])
    return row[0]


@njit(cache=True, inline="always")
def _load(x, i, scale, nonneg):
    """y_i = scale * x_i (scale * |x_i| for the signed variant)."""
    v = x[i] if nonneg else abs(x[i])
    return v * scale


@njit(cache=True, inline="always")
def _shape_at(v, m, t, mean, sc, delta):
    """s(v): monotone non-decreasing in v (t > 0), as every rounding step is."""
    return m + t * ((v - mean) * sc - delta)


@njit(cache=True)
def _sample_mean(x, scale, nonneg):
    """Mean of up to 64 evenly strided y: a pilot centre for the moments."""
    n = x.shape[0]
    count = min(n, 64)
    stride = n // count
    total = 0.0
    for j in range(count):
        total += _load(x, j * stride, scale, nonneg)
    return total / count


@njit(cache=True)
def _stats_tail(x, start, n, scale, nonneg, c, sce, total, lo, hi, a, b):
    """Add the entries start..n-1 to the sums of :func:`_stats_pass`, in order."""
    for i in range(start, n):
        v = _load(x, i, scale, nonneg)
        e = (v - c) * sce
        total += v
        a += e
        b += e * e
        lo = min(lo, v)
        hi = max(hi, v)
    return total, lo, hi, a, b


@njit(cache=True)
def _stats_pass(x, n, scale, nonneg, c, sce):
    """Over y = scale * x[:n]: sum, min, max, and the moments A = sum(e) and
    B = sum(e^2) of the deviations e = (y - c) * sce from a pilot centre c."""
    head = n - n % _LANES
    if head == 0:
        return _stats_tail(x, 0, n, scale, nonneg, c, sce, 0.0, np.inf, -np.inf, 0.0, 0.0)
    # (The lane loop must not sit inside a branch: LLVM then leaves it scalar.)
    s0 = _lane_row()
    s1 = _lane_row()
    s2 = _lane_row()
    mn = _lane_row()
    mx = _lane_row()
    for j in range(_LANES):
        s0[j] = 0.0
        s1[j] = 0.0
        s2[j] = 0.0
        mn[j] = np.inf
        mx[j] = -np.inf
    for i in range(0, head, _LANES):
        for j in range(_LANES):
            v = _load(x, i + j, scale, nonneg)
            e = (v - c) * sce
            s0[j] += v
            s1[j] += e
            s2[j] += e * e
            mn[j] = min(mn[j], v)
            mx[j] = max(mx[j], v)
    total = _fold_sum(s0)
    a = _fold_sum(s1)
    b = _fold_sum(s2)
    lo = _fold_min(mn)
    hi = _fold_max(mx)
    return _stats_tail(x, head, n, scale, nonneg, c, sce, total, lo, hi, a, b)


@njit(cache=True)
def _select_tail(x, start, n, scale, nonneg, keep_lo, m, t, mean, sc, delta, c, sce, acc):
    """Add the entries start..n-1 to the sums of :func:`_select_pass`, in order."""
    count, total, lo, hi, a, b = acc
    for i in range(start, n):
        v = _load(x, i, scale, nonneg)
        if (v >= keep_lo) & (_shape_at(v, m, t, mean, sc, delta) > 0.0):
            e = (v - c) * sce
            count += 1.0
            total += v
            a += e
            b += e * e
            lo = min(lo, v)
            hi = max(hi, v)
    return int(count), total, lo, hi, a, b


@njit(cache=True)
def _select_pass(x, n, scale, nonneg, keep_lo, m, t, mean, sc, delta, c, sce):
    """The y = scale * x[:n] that a step keeps: y >= keep_lo and s(y) > 0.

    Branch-free, nothing moved. Returns their count, sum, min, max, and the
    moments A, B of e = (y - c) * sce as in :func:`_stats_pass`. With m = 1,
    t = 0 (s = 1) it selects the upper set y >= keep_lo.
    """
    head = n - n % _LANES
    if head == 0:
        acc = (0.0, 0.0, np.inf, -np.inf, 0.0, 0.0)
        return _select_tail(x, 0, n, scale, nonneg, keep_lo, m, t, mean, sc, delta, c, sce, acc)
    cn = _lane_row()
    s0 = _lane_row()
    s1 = _lane_row()
    s2 = _lane_row()
    mn = _lane_row()
    mx = _lane_row()
    for j in range(_LANES):
        cn[j] = 0.0
        s0[j] = 0.0
        s1[j] = 0.0
        s2[j] = 0.0
        mn[j] = np.inf
        mx[j] = -np.inf
    for i in range(0, head, _LANES):
        for j in range(_LANES):
            v = _load(x, i + j, scale, nonneg)
            keep = (v >= keep_lo) & (_shape_at(v, m, t, mean, sc, delta) > 0.0)
            e = (v - c) * sce
            cn[j] += 1.0 if keep else 0.0
            s0[j] += v if keep else 0.0
            s1[j] += e if keep else 0.0
            s2[j] += e * e if keep else 0.0
            mn[j] = min(mn[j], v if keep else np.inf)
            mx[j] = max(mx[j], v if keep else -np.inf)
    count = _fold_sum(cn)
    total = _fold_sum(s0)
    a = _fold_sum(s1)
    b = _fold_sum(s2)
    lo = _fold_min(mn)
    hi = _fold_max(mx)
    acc = (count, total, lo, hi, a, b)
    return _select_tail(x, head, n, scale, nonneg, keep_lo, m, t, mean, sc, delta, c, sce, acc)


@njit(cache=True)
def _compact_tail(x, start, n, scale, nonneg, keep_lo, m, t, mean, sc, delta, buf, k):
    for i in range(start, n):
        v = _load(x, i, scale, nonneg)
        keep = (v >= keep_lo) & (_shape_at(v, m, t, mean, sc, delta) > 0.0)
        buf[k] = v
        k += 1 if keep else 0
    return k


@njit(cache=True)
def _compact(x, n, scale, nonneg, keep_lo, m, t, mean, sc, delta, buf):
    """Copy the kept y (as in :func:`_select_pass`) to buf, order kept; return
    their count. ``buf`` may be ``x`` itself (the writes trail the reads).

    By blocks: the decisions for a block are computed first (a vectorised map),
    then the block is compacted with a branch-free scalar loop that only loads,
    stores and counts (twice as fast as deciding inside that loop).
    """
    head = n - n % _COMPACT_BLOCK
    if head == 0:
        return _compact_tail(x, 0, n, scale, nonneg, keep_lo, m, t, mean, sc, delta, buf, 0)
    vals = np.empty(_COMPACT_BLOCK)
    flags = np.empty(_COMPACT_BLOCK, dtype=np.int64)
    k = 0
    for i in range(0, head, _COMPACT_BLOCK):
        for j in range(_COMPACT_BLOCK):
            v = _load(x, i + j, scale, nonneg)
            vals[j] = v
            flags[j] = (v >= keep_lo) & (_shape_at(v, m, t, mean, sc, delta) > 0.0)
        for j in range(_COMPACT_BLOCK):
            buf[k] = vals[j]
            k += flags[j]
    return _compact_tail(x, head, n, scale, nonneg, keep_lo, m, t, mean, sc, delta, buf, k)


@njit(cache=True)
def _mean_and_unit(k, total, lo, hi):
    return total / k, _power_of_two_scale(hi - lo)


@njit(cache=True)
def _centred(k, total, lo, hi, c, a, b, sce):
    """(delta, c2, ok) of a support from the moments A, B of (y - c) * sce.

    With mean = total / k (rounded) and sc = 2**-e of hi - lo, the step needs
    delta = (mean_exact - mean) * sc and c2 = sum(((y - mean_exact) * sc)^2); with
    r = sc / sce (a power of two),

        delta = (c - mean) * sc + (A / k) * r,    c2 = (B - A^2 / k) * r^2.

    ``ok`` is False when that is not accurate: B - A^2 / k cancels more than one
    bit (c far from the mean for the spread), or the deviations were scaled so
    far below the spread (r > 2**400) that their squares may have underflowed.
    Recentring at c = mean with sce = sc is then the plain two-pass formula
    (r = 1), which is always ok.
    """
    if lo == hi:
        return 0.0, 0.0, True
    mean, sc = _mean_and_unit(k, total, lo, hi)
    r = sc / sce
    am = a / k
    delta = (c - mean) * sc + am * r
    c2 = ((b - a * am) * r) * r
    ok = (b > 0.0) & (a * am <= _PILOT_CANCELLATION * b) & (r <= _MAX_PILOT_RATIO)
    return delta, c2, ok


# --- the step ---------------------------------------------------------------------


@njit(cache=True)
def _step(k, rho, total, lo, hi, delta, c2):
    """Parameters of s(v) = m + t * ((v - mean) * sc - delta) on a support of k.

    ``delta`` and ``c2`` as returned by :func:`_centred`.
    """
    m = rho / k
    r2 = 1.0 - rho * rho / k
    mean, sc = _mean_and_unit(k, total, lo, hi)
    t = math.sqrt(r2 / c2)
    return m, t, mean, sc, delta


# --- the paper's algorithm ----------------------------------------------------------


@njit(cache=True)
def _write_shape(x, scale, nonneg, l2, lo, m, t, mean, sc, delta, out):
    """out = l2 * s(y) on the support y >= lo, 0 elsewhere (a vectorised map)."""
    for i in range(x.shape[0]):
        v = _load(x, i, scale, nonneg)
        s = l2 * max(_shape_at(v, m, t, mean, sc, delta), 0.0)
        out[i] = s if v >= lo else 0.0


@njit(cache=True)
def _hoyer_passes(x, scale, nonneg, rho, passes, k, total, lo, hi, delta, c2):
    """The paper's passes over all n entries of y = scale * x, from the support
    y >= lo described by (k, total, lo, hi, delta, c2), until s >= 0 on it.

    Returns (tied, passes, k, lo, m, t, mean, sc, delta): the final support and
    step, or ``tied`` if the support became all tied with a sparser target.
    """
    n = x.shape[0]
    while True:
        m = rho / k
        r2 = 1.0 - rho * rho / k
        if r2 <= _R2_FLAT or k == 1:
            # Only the flat vector m * 1 has the targets on this support.
            return False, passes + 1, k, lo, m, 0.0, 0.0, 1.0, 0.0
        if lo == hi:
            return True, passes, k, lo, m, 0.0, 0.0, 1.0, 0.0
        m, t, mean, sc, delta = _step(k, rho, total, lo, hi, delta, c2)
        passes += 1
        # s is monotone in y: s >= 0 on the support iff at its least entry.
        if _shape_at(lo, m, t, mean, sc, delta) >= 0.0:
            return False, passes, k, lo, m, t, mean, sc, delta
        # The entries with s <= 0 leave the support (and never come back).
        c, sce = mean, sc
        k, total, lo, hi, a, b = _select_pass(
            x, n, scale, nonneg, lo, m, t, mean, sc, delta, c, sce
        )
        delta, c2, ok = _centred(k, total, lo, hi, c, a, b, sce)
        if not ok:
            c, sce = _mean_and_unit(k, total, lo, hi)
            sel = _select_pass(x, n, scale, nonneg, lo, 1.0, 0.0, 0.0, 1.0, 0.0, c, sce)
            delta, c2, ok = _centred(k, total, lo, hi, c, sel[4], sel[5], sce)


@njit(cache=True)
def _hoyer_into(x, scale, nonneg, rho, l2, out, total, lo, hi, delta, c2):
    """The paper's algorithm: every pass reads all n entries (O(n x passes)).

    Starts from the full support described by ``total`` ... ``c2`` (see
    :func:`_scaled_stats`); writes l2 times the shape into ``out`` and returns
    the number of passes. The support is always an upper set y >= lo, so it
    needs no mask; an all-tied support is broken by index (module docstring) on
    a copy in which the ramp replaces the tied entries and the others are -1.
    """
    n = x.shape[0]
    tied, passes, k, lo, m, t, mean, sc, delta = _hoyer_passes(
        x, scale, nonneg, rho, 0, n, total, lo, hi, delta, c2
    )
    if not tied:
        _write_shape(x, scale, nonneg, l2, lo, m, t, mean, sc, delta, out)
        return passes
    y = np.empty(n)
    j = k - 1
    for i in range(n):
        if _load(x, i, scale, nonneg) >= lo:
            y[i] = float(j)
            j -= 1
        else:
            y[i] = -1.0
    c = 0.5 * (k - 1)
    sce = _power_of_two_scale(k - 1.0)
    k, total, lo, hi, a, b = _select_pass(y, n, 1.0, True, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, c, sce)
    delta, c2, _ = _centred(k, total, lo, hi, c, a, b, sce)
    # The ramp has no ties left (k = 1 is the flat case).
    _, passes, k, lo, m, t, mean, sc, delta = _hoyer_passes(
        y, 1.0, True, rho, passes, k, total, lo, hi, delta, c2
    )
    _write_shape(y, 1.0, True, l2, lo, m, t, mean, sc, delta, out)
    return passes


# --- the fast method ---------------------------------------------------------------


@njit(cache=True)
def _count_positive_sorted(srt, k, m, t, mean, sc, delta):
    """Number of leading entries of srt[:k] (descending) with s > 0."""
    lo_i = 0
    hi_i = k
    while lo_i < hi_i:
        mid = (lo_i + hi_i) // 2
        if _shape_at(srt[mid], m, t, mean, sc, delta) > 0.0:
            lo_i = mid + 1
        else:
            hi_i = mid
    return lo_i


@njit(cache=True)
def _sorted_passes(b, k, rho, m, t, mean, sc, delta):
    """Finish the support search on b[:k] by sorting: O(k log k) in all.

    The current step (m, t, mean, sc, delta) on b[:k] has negative entries. Sort
    b[:k] descending in place and run the same passes with prefix sums (O(log k)
    each: the support stays a prefix). Returns (k, passes) with b[:k] the
    support candidate; the caller re-checks it with exact moments. ``passes``
    counts the passes done here, the current and the final one excluded.
    """
    srt = np.sort(b[:k])[::-1]
    b[:k] = srt
    k = _count_positive_sorted(srt, k, m, t, mean, sc, delta)
    # Prefix sums of z = srt - srt[0] (<= 0): no cancellation against the top.
    top = srt[0]
    p1 = np.empty(k + 1)
    p2 = np.empty(k + 1)
    p1[0] = 0.0
    p2[0] = 0.0
    for i in range(k):
        z = srt[i] - top
        p1[i + 1] = p1[i] + z
        p2[i + 1] = p2[i] + z * z
    extra = 0
    while k > 1:
        r2 = 1.0 - rho * rho / k
        mz = p1[k] / k
        c2 = p2[k] - p1[k] * mz
        if r2 <= _R2_FLAT or c2 <= 0.0:
            break
        tz = math.sqrt(r2 / c2)
        mk = rho / k
        if mk + tz * (srt[k - 1] - top - mz) >= 0.0:
            break
        # Entries with mk + tz * (v - top - mz) > 0 stay (a prefix).
        lo_i = 0
        hi_i = k
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            if mk + tz * (srt[mid] - top - mz) > 0.0:
                lo_i = mid + 1
            else:
                hi_i = mid
        if lo_i == k or lo_i == 0:
            break
        k = lo_i
        extra += 1
    return k, extra


@njit(cache=True)
def _fast_shape_into(x, scale, nonneg, rho, l2, out, max_filter_passes, total, lo, hi, delta, c2):
    """Fast exact projection of x (unscaled) into out.

    ``total``, ``lo``, ``hi``, ``delta`` and ``c2`` describe the scaled input
    (see :func:`_scaled_stats`). The passes are the paper's (entries with
    s_i <= 0 leave the support, which stays an upper set ``y >= lo``), but a
    pass only reads what can still be in the support: while the support is more
    than half of the entries read, the next one is found by a branch-free,
    vectorised pass that moves nothing (:func:`_select_pass`); once it is at most
    half, the survivors are compacted into ``out`` (then overwritten by the
    result) and later passes read only them. After ``max_filter_passes`` passes
    the rest is sorted and finished with prefix sums (O(k log k)), which bounds
    the worst case by O(n log n). Returns the number of passes, or -1 when the
    support is all tied (the caller then falls back to the index tie-break of the
    paper's kernel).
    """
    n = x.shape[0]
    k = n  # size of the current support, {y >= lo}
    kb = -1  # -1: the support is read from x; else from out[:kb], which holds it
    passes = 0
    sorted_once = False
    while True:
        m = rho / k
        r2 = 1.0 - rho * rho / k
        if r2 <= _R2_FLAT or k == 1:
            # Only the flat vector m * 1 has the targets on this support.
            t = 0.0
            mean = 0.0
            sc = 1.0
            delta = 0.0
            passes += 1
            break
        if lo == hi:
            return -1
        m, t, mean, sc, delta = _step(k, rho, total, lo, hi, delta, c2)
        passes += 1
        if _shape_at(lo, m, t, mean, sc, delta) >= 0.0:
            break
        c = mean  # pilot centre and unit of the next support's moments
        sce = sc
        if passes > max_filter_passes and not sorted_once:
            sorted_once = True
            # Sort the support itself: compact exactly {y >= lo} into out[:k].
            if kb < 0:
                kb = _compact(x, n, scale, nonneg, lo, 1.0, 0.0, 0.0, 1.0, 0.0, out)
            elif kb > k:
                kb = _compact(out, kb, 1.0, True, lo, 1.0, 0.0, 0.0, 1.0, 0.0, out)
            k, extra = _sorted_passes(out, k, rho, m, t, mean, sc, delta)
            passes += extra
            kb = k
            c = out[k // 2]
            total, lo, hi, a, b = _stats_pass(out, k, 1.0, True, c, sce)
        elif kb < 0 and 2 * k <= n:
            kb = _compact(x, n, scale, nonneg, lo, m, t, mean, sc, delta, out)
            k = kb
            total, lo, hi, a, b = _stats_pass(out, k, 1.0, True, c, sce)
        elif kb < 0:
            k, total, lo, hi, a, b = _select_pass(
                x, n, scale, nonneg, lo, m, t, mean, sc, delta, c, sce
            )
        elif 2 * k <= kb:
            kb = _compact(out, kb, 1.0, True, lo, m, t, mean, sc, delta, out)
            k = kb
            total, lo, hi, a, b = _stats_pass(out, k, 1.0, True, c, sce)
        else:
            k, total, lo, hi, a, b = _select_pass(
                out, kb, 1.0, True, lo, m, t, mean, sc, delta, c, sce
            )
        delta, c2, ok = _centred(k, total, lo, hi, c, a, b, sce)
        if not ok:
            # Two-pass moments: centred at the rounded mean, in units of the spread.
            c, sce = _mean_and_unit(k, total, lo, hi)
            if kb < 0:
                sel = _select_pass(x, n, scale, nonneg, lo, 1.0, 0.0, 0.0, 1.0, 0.0, c, sce)
            else:
                sel = _select_pass(out, kb, 1.0, True, lo, 1.0, 0.0, 0.0, 1.0, 0.0, c, sce)
            a, b = sel[4], sel[5]
            delta, c2, ok = _centred(k, total, lo, hi, c, a, b, sce)
    # The support is an upper set of y: exactly the y >= lo.
    _write_shape(x, scale, nonneg, l2, lo, m, t, mean, sc, delta, out)
    return passes


@njit(cache=True)
def _scaled_stats(x, nonneg):
    """Scale, sum, min, max and centred moments of y = scale * x (or of
    scale * |x| for the signed variant), usually in one pass.

    The moments are taken about a pilot centre (the mean of 64 strided entries)
    in the same pass as the sum; a second pass is needed only if the raw sum or
    squares overflow, the spread is small enough for squares to underflow, or
    the pilot was too far from the mean (:func:`_centred`).

    Returns (finite, scale, total, lo, hi, delta, c2); delta and c2 as in
    :func:`_centred`, 0 when lo == hi.
    """
    n = x.shape[0]
    c = _sample_mean(x, 1.0, nonneg)
    total, lo, hi, a, b = np.inf, 0.0, 0.0, 0.0, 0.0
    if math.isfinite(c):
        total, lo, hi, a, b = _stats_pass(x, n, 1.0, nonneg, c, 1.0)
    if math.isfinite(total) and math.isfinite(b) and (lo == hi or hi - lo >= _MIN_UNSCALED_SPREAD):
        scale = _power_of_two_scale(max(abs(lo), abs(hi)))
        total *= scale
        lo *= scale
        hi *= scale
        c *= scale
        a *= scale
        b = (b * scale) * scale
    else:
        if math.isfinite(total):
            scale = _power_of_two_scale(max(abs(lo), abs(hi)))
        else:
            maxabs, finite = _abs_max_and_finite(x)
            if not finite:
                return False, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0
            scale = _power_of_two_scale(maxabs)
        c = _sample_mean(x, scale, nonneg)
        total, lo, hi, a, b = _stats_pass(x, n, scale, nonneg, c, 1.0)
    delta, c2, ok = _centred(n, total, lo, hi, c, a, b, 1.0)
    if not ok:
        c, sce = _mean_and_unit(n, total, lo, hi)
        a, b = _stats_pass(x, n, scale, nonneg, c, sce)[3:]
        delta, c2, ok = _centred(n, total, lo, hi, c, a, b, sce)
    return True, scale, total, lo, hi, delta, c2


@njit(cache=True)
def _meets_targets(n, scale, total, lo, hi, delta, c2, l1, l2):
    """Whether y / scale is non-negative with sum l1 and norm l2 (to 1e-13)."""
    if lo < 0.0:
        return False
    if lo == hi:
        sumsq = n * lo * lo
    else:
        mean, sc = _mean_and_unit(n, total, lo, hi)
        exact_mean = mean + delta / sc
        sumsq = n * exact_mean * exact_mean + c2 / sc / sc
    # Compare unscaled: a quotient that overflows is simply unequal.
    raw_total = total / scale
    raw_norm = math.sqrt(sumsq) / scale
    return abs(raw_total - l1) <= _FEASIBLE_RTOL * l1 and abs(raw_norm - l2) <= _FEASIBLE_RTOL * l2


@njit(cache=True)
def _single_entry_into(x, nonneg, l2, out):
    """Sparseness 1 (rho = 1): l2 at the largest y, earliest index on ties.

    L1 = L2 leaves only the vectors with one non-zero entry, and the closest
    puts it at the largest y. Solved directly rather than by passes, whose
    rounding can leave entries of exact shape 0 at +1e-17 (e.g. x = [0.1, 0, 0, 0]).
    Returns 1 (pass).
    """
    best = 0
    top = x[0] if nonneg else abs(x[0])
    for i in range(x.shape[0]):
        v = x[i] if nonneg else abs(x[i])
        out[i] = 0.0
        if v > top:
            top = v
            best = i
    out[best] = l2
    return 1


@njit(cache=True)
def project_vector(x, l1, l2, nonneg, method, out, max_filter_passes):
    """Project x onto {s : sum|s| = l1, ||s||_2 = l2} (s >= 0 unless signed).

    ``l1`` must already lie in [l2, sqrt(n) * l2] and l2 > 0 (the caller
    validates). Writes into ``out`` (which must not alias x) and returns
    (status, passes). Input that already meets the targets (to 1e-13 relative)
    is copied unchanged.
    """
    return project_vector_guided(x, l1, l2, nonneg, method, out, max_filter_passes, 0)


@njit(cache=True)
def project_vector_threaded(x, l1, l2, nonneg, method, out, max_filter_passes):
    """:func:`project_vector` with the passes of the fast method's bracketing
    path (n >= ``BRACKET_MIN_N``) run on all of numba's threads, by chunks of
    a length fixed by n alone (``bracket.CHUNK``): the same bits as
    :func:`project_vector` on any number of threads. The exact kernel (the
    paper's method, a counted or fallen-back fast one) runs on one thread.
    Numba's threading layer is launched: call it from one thread at a time."""
    return _project_vector(x, l1, l2, nonneg, method, out, max_filter_passes, 0, True)


@njit(cache=True)
def project_vector_guided(x, l1, l2, nonneg, method, out, max_filter_passes, guide):
    """:func:`project_vector` told the support size to expect (``guide``; 0:
    none). The fast method's bracketing path (n >= ``BRACKET_MIN_N``) then
    starts its Newton steps at the sample's order statistic of that rank
    instead of at the threshold of the projected sample, which a heavy-tailed
    vector can throw far off (``bracket.shape_into``), and needs fewer full
    passes. The guide moves only the start: the result is the same
    projection, with last bits that may differ from the unguided call's."""
    return _project_vector(x, l1, l2, nonneg, method, out, max_filter_passes, guide, False)


@njit(cache=True)
def _project_vector(x, l1, l2, nonneg, method, out, max_filter_passes, guide, threaded):
    """:func:`project_vector_guided`, its bracketing path's passes on all
    threads if ``threaded``."""
    if _takes_bracket(x.shape[0], l1, l2, method):
        passes = bracket_shape_into(x, nonneg, l1 / l2, l1, l2, out, guide, threaded)
        if passes >= 0:
            return STATUS_OK, passes
    return _project_exact(x, l1, l2, nonneg, method, out, max_filter_passes)


@njit(cache=True)
def _takes_bracket(n, l1, l2, method):
    """Whether the fast method's bracketing path (module ``bracket``) tries
    first: a long vector (n >= ``BRACKET_MIN_N``), the fast method not asked
    for the paper's pass count, and 1 < l1 / l2 < sqrt(n)."""
    rho = l1 / l2
    return method == METHOD_FAST and n >= BRACKET_MIN_N and rho > 1.0 and rho * rho < n


@njit(cache=True)
def _project_exact(x, l1, l2, nonneg, method, out, max_filter_passes):
    """:func:`project_vector` by the exact kernels alone (the paper's passes,
    or the fast method's filtered ones), without the bracketing path."""
    n = x.shape[0]
    finite, scale, total, lo, hi, delta, c2 = _scaled_stats(x, nonneg)
    if not finite:
        return STATUS_NONFINITE, 0
    if _meets_targets(n, scale, total, lo, hi, delta, c2, l1, l2):
        for i in range(n):
            out[i] = x[i]
        return STATUS_OK, 1
    rho = l1 / l2
    rho = min(max(rho, 1.0), math.sqrt(n))
    if rho == 1.0:
        passes = _single_entry_into(x, nonneg, l2, out)
    elif method != METHOD_HOYER:
        passes = _fast_shape_into(
            x, scale, nonneg, rho, l2, out, max_filter_passes, total, lo, hi, delta, c2
        )
    else:
        passes = -1
    if passes < 0:
        passes = _hoyer_into(x, scale, nonneg, rho, l2, out, total, lo, hi, delta, c2)
    if not nonneg:
        for i in range(n):
            if x[i] < 0.0:
                out[i] = -out[i]
    return STATUS_OK, passes


def _project_rows_body(X, l1, l2, nonneg, method, out, status, passes, max_filter_passes):
    for r in prange(X.shape[0]):
        st, p = project_vector(X[r], l1[r], l2[r], nonneg, method, out[r], max_filter_passes)
        status[r] = st
        passes[r] = p


# One body, two builds (umap's pattern). The parallel build is not cached:
# numba's cache is keyed on the Python function, which both builds share. The
# serial builds release the GIL (nogil), so that the solvers can run groups of
# rows on several threads (nmfsc._threads).
project_rows = njit(cache=True, nogil=True)(_project_rows_body)
project_rows_parallel = njit(parallel=True)(_project_rows_body)


# The columns that project_columns gathers at once: 8 float64 are one 64-byte
# cache line of a row of X, so each line is read once.
COLUMN_BLOCK = 8
# The rows of X that a gather or a scatter takes at once (a tile of 64 x 8
# entries stays in the first-level cache while it is turned).
COLUMN_TILE = 64


def _project_columns_body(
    X, l1, l2, nonneg, method, out, status, passes, max_filter_passes, groups
):
    """Project the columns of the C-ordered X (targets ``l1[j]``, ``l2[j]``) into
    the columns of ``out``: :func:`project_vector` on a contiguous copy of
    each column, so the bits are those of the column projected alone.

    The columns go COLUMN_BLOCK at a time through a scratch block: one pass
    over the block's rows of X gathers them; a column is never read with a
    stride of a whole row per entry, nor is X transposed whole. A column that
    takes the bracketing path (``bracket.shape_map``) keeps its map (a row of
    ``maps``) instead of a result; another is projected into a second scratch
    row. A block with such a column is written at once, turned back from
    its scratch rows (:func:`_write_columns`). The blocks whose columns all
    have maps are written last, from X and their maps, by whole rows of X
    and ``out`` (:func:`_write_mapped`, all of a run of such blocks at
    once): walking a block of 8 columns down the rows of a wide array reads
    a cache line for every 8 entries from L3 or memory, and costs about
    twice (n = 3,000) to four times (n = 100,000) the same entries read
    along the rows.

    The blocks are split into ``groups`` contiguous runs (one per thread of
    the parallel build), each with its own scratch, allocated once: fresh
    scratch for every block would fault its pages in again each time; the
    final write splits the rows of X the same way. Every entry's result is
    computed alone, so the bits are the same on any number of groups."""
    n, cols = X.shape
    blocks = (cols + COLUMN_BLOCK - 1) // COLUMN_BLOCK
    groups = max(1, min(groups, blocks))
    maps = np.zeros((cols, COLUMN_MAP))
    written = np.zeros(blocks, np.bool_)
    # (No more scratch rows than columns: a few very long columns.)
    depth = min(COLUMN_BLOCK, cols)
    for g in prange(groups):
        buf = np.empty((depth, n))
        res = np.empty((depth, n))
        for blk in range(blocks * g // groups, blocks * (g + 1) // groups):
            j0 = blk * COLUMN_BLOCK
            width = min(COLUMN_BLOCK, cols - j0)
            _gather_columns(X, j0, buf[:width])
            mapped = True
            for b in range(width):
                j = j0 + b
                st, p = _column_map(
                    buf[b], l1[j], l2[j], nonneg, method, res[b], max_filter_passes, maps[j]
                )
                status[j] = st
                passes[j] = p
                mapped &= maps[j, 0] != 0.0
            if not mapped:
                _write_columns(buf[:width], res[:width], maps[j0 : j0 + width], nonneg, out, j0)
                written[blk] = True
    if written.all():
        return
    # The maps as rows (mm, t, c, sce, dbar, l2), each contiguous over the columns.
    params = np.ascontiguousarray(maps[:, 1:].T)
    parts = max(1, min(groups, n))
    for g in prange(parts):
        i0 = n * g // parts
        i1 = n * (g + 1) // parts
        blk = 0
        while blk < blocks:
            if written[blk]:
                blk += 1
                continue
            end = blk
            while end < blocks and not written[end]:
                end += 1
            j0 = blk * COLUMN_BLOCK
            j1 = min(end * COLUMN_BLOCK, cols)
            _write_mapped(X, params, nonneg, out, i0, i1, j0, j1)
            blk = end


# A column's row in project_columns' maps: (mapped, mm, t, c, sce, dbar, l2),
# mapped = 1 where the bracketing path's map gives the column.
COLUMN_MAP = 7


@njit(cache=True)
def _column_map(x, l1, l2, nonneg, method, scratch, max_filter_passes, row):
    """Project the contiguous column x: by the bracketing path's map, stored
    in ``row`` (``bracket.shape_map``; its band goes to ``scratch``) and not
    applied, or (row[0] = 0) into ``scratch`` by the exact kernel, exactly
    as :func:`project_vector` decides. Returns (status, passes)."""
    if _takes_bracket(x.shape[0], l1, l2, method):
        p, mm, t, c, sce, dbar = shape_map(
            x, nonneg, l1 / l2, l1, l2, scratch, 0, BRACKET_MAX_PASSES, BRACKET_CHUNK, False
        )
        if p >= 0:
            row[0] = 1.0
            row[1] = mm
            row[2] = t
            row[3] = c
            row[4] = sce
            row[5] = dbar
            row[6] = l2
            return STATUS_OK, p
    row[0] = 0.0
    return _project_exact(x, l1, l2, nonneg, method, scratch, max_filter_passes)


@njit(cache=True)
def _write_columns(buf, res, maps, nonneg, out, j0):
    """out[:, j0 + b] = the projection of column b of the block: from its map
    (:func:`_column_map`) applied to buf[b], or res[b]. COLUMN_TILE rows at a
    time: each column's entries are computed into a tile (a vectorised map
    over contiguous entries), which is then turned into out's rows."""
    width, n = buf.shape
    tile = np.empty((width, COLUMN_TILE))
    for i0 in range(0, n, COLUMN_TILE):
        i1 = min(i0 + COLUMN_TILE, n)
        for b in range(width):
            src = buf[b, i0:i1]
            dst = tile[b, : i1 - i0]
            if maps[b, 0] != 0.0:
                mm, t, c, sce, dbar, l2 = (
                    maps[b, 1],
                    maps[b, 2],
                    maps[b, 3],
                    maps[b, 4],
                    maps[b, 5],
                    maps[b, 6],
                )
                for i in range(i1 - i0):
                    dst[i] = shape_value(src[i], nonneg, mm, t, c, sce, dbar, l2)
            else:
                kept = res[b, i0:i1]
                for i in range(i1 - i0):
                    dst[i] = kept[i]
        if width == COLUMN_BLOCK:
            for i in range(i0, i1):
                for b in range(COLUMN_BLOCK):
                    out[i, j0 + b] = tile[b, i - i0]
        else:
            for i in range(i0, i1):
                for b in range(width):
                    out[i, j0 + b] = tile[b, i - i0]


@njit(cache=True)
def _write_mapped(X, params, nonneg, out, i0, i1, j0, j1):
    """out[i, j] = the projection's entry for X[i, j] from column j's map
    (``params[:, j]`` = (mm, t, c, sce, dbar, l2), :func:`_column_map`) for
    the rows i0 <= i < i1 and columns j0 <= j < j1, row by row of X: the
    same bits as the bracketing path's write pass (``bracket.shape_value``),
    in a loop along the rows that vectorises across the columns (slices of
    the C-ordered arrays' rows, which numba knows to be contiguous)."""
    mm = params[0, j0:j1]
    t = params[1, j0:j1]
    c = params[2, j0:j1]
    sce = params[3, j0:j1]
    dbar = params[4, j0:j1]
    l2 = params[5, j0:j1]
    width = j1 - j0
    for i in range(i0, i1):
        src = X[i, j0:j1]
        dst = out[i, j0:j1]
        for j in range(width):
            dst[j] = shape_value(src[j], nonneg, mm[j], t[j], c[j], sce[j], dbar[j], l2[j])


@njit(cache=True)
def _gather_columns(X, j0, buf):
    """buf[b] = X[:, j0 + b] for the block's columns, row by row of X (a
    whole block, COLUMN_BLOCK columns, unrolled: its loads are one cache
    line, twice as fast as a loop over a width known at run time)."""
    width, n = buf.shape
    if width == COLUMN_BLOCK:
        for i in range(n):
            row = X[i, j0 : j0 + COLUMN_BLOCK]
            for b in range(COLUMN_BLOCK):
                buf[b, i] = row[b]
    else:
        for i in range(n):
            for b in range(width):
                buf[b, i] = X[i, j0 + b]


@njit(cache=True, nogil=True)
def transpose_into(src, out):
    """``out[j, i] = src[i, j]`` (an exact copy), COLUMN_BLOCK x COLUMN_BLOCK
    tiles at a time: each cache line of src and of out is read or written
    whole while its tile is turned, where NumPy's transposing copy of a
    tall array reads a line per entry (it takes about 1.7x as long)."""
    rows, cols = src.shape
    for i0 in range(0, rows, COLUMN_BLOCK):
        i1 = min(i0 + COLUMN_BLOCK, rows)
        for j0 in range(0, cols, COLUMN_BLOCK):
            j1 = min(j0 + COLUMN_BLOCK, cols)
            for j in range(j0, j1):
                for i in range(i0, i1):
                    out[j, i] = src[i, j]


project_columns = njit(cache=True, nogil=True)(_project_columns_body)
project_columns_parallel = njit(parallel=True)(_project_columns_body)


@njit(cache=True, nogil=True)
def project_rows_guided(X, l1, l2, nonneg, method, out, status, passes, max_filter_passes, guide):
    """:func:`project_rows` with a support size to expect for each row
    (``guide[r]``, 0: none; see :func:`project_vector_guided`), serial. The
    solvers pass the support sizes of the factor they step from, whose
    projection the trial's is close to."""
    for r in range(X.shape[0]):
        st, p = project_vector_guided(
            X[r], l1[r], l2[r], nonneg, method, out[r], max_filter_passes, guide[r]
        )
        status[r] = st
        passes[r] = p


@njit(cache=True, nogil=True)
def project_step_rows(
    X, G, mu, l1_unit, own_norm, method, out, status, passes, max_filter_passes, guide, row
):
    """Project the rows of the trial ``X - mu * G`` of a projected gradient
    step (non-negative, guided: :func:`project_rows_guided`), forming each
    trial row in ``row`` (scratch, one row long) just before projecting it.

    Each row goes to L1 = l1_unit * L2 with L2 = 1, or with ``own_norm`` at
    its own L2 norm (nmf_sc's columns of W: rows of C = W^T), summed in four
    accumulators in a fixed order. A row whose norm is zero or not finite
    cannot be projected at it: its status is STATUS_NONFINITE (the step is
    to be retried with a smaller mu), as for a row that is not finite.

    The trial's entries are mu * G, then the difference: the two roundings of
    numpy's ``X - mu * G`` in float64 (float32 entries are computed in
    float64 and rounded once into a float32 ``row``). The trial is never
    stored whole: each row's projection reads it from cache instead of
    memory (a row of 10,000 entries takes 80 kB), which on natural's shape
    halves the cost of the step and its projection."""
    cols = X.shape[1]
    head = cols - cols % 4
    for r in range(X.shape[0]):
        x = X[r]
        g = G[r]
        for i in range(cols):
            row[i] = x[i] - mu * g[i]
        l2 = 1.0
        if own_norm:
            # The squares of the entries as stored (a float32 row is rounded).
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            for i in range(0, head, 4):
                s0 += np.float64(row[i]) * np.float64(row[i])
                s1 += np.float64(row[i + 1]) * np.float64(row[i + 1])
                s2 += np.float64(row[i + 2]) * np.float64(row[i + 2])
                s3 += np.float64(row[i + 3]) * np.float64(row[i + 3])
            for i in range(head, cols):
                s0 += np.float64(row[i]) * np.float64(row[i])
            l2 = math.sqrt((s0 + s1) + (s2 + s3))
            if not (l2 > 0.0 and math.isfinite(l2)):
                status[r] = STATUS_NONFINITE
                passes[r] = 0
                continue
        st, p = project_vector_guided(
            row, l1_unit * l2, l2, True, method, out[r], max_filter_passes, guide[r]
        )
        status[r] = st
        passes[r] = p


@njit(cache=True)
def project_rows_same_targets(X, l1, l2, nonneg, method, out, passes, max_filter_passes):
    """:func:`project_rows` with one (l1, l2) for every row, serial: the fast
    path of ``project_batch`` (no target arrays to build, no status array to
    scan). Returns the number of rows that were not finite (0: all done)."""
    bad = 0
    for r in range(X.shape[0]):
        st, p = project_vector(X[r], l1, l2, nonneg, method, out[r], max_filter_passes)
        passes[r] = p
        bad += st
    return bad
