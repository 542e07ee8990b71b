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
support an upper set of y: the support is exactly ``y >= min over S``.

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

import numpy as np
from numba import njit, prange

STATUS_OK = 0
STATUS_NONFINITE = 1

METHOD_HOYER = 0
METHOD_FAST = 1

# Michelot-style filter passes allowed before the fast kernel sorts what is left;
# this bounds its worst case at O(n log n) (each pass is O(current support)).
_FILTER_PASSES_SLACK = 8

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


# The reductions below add in a fixed order: four interleaved partial sums
# (lanes i % 4, for instruction-level parallelism), combined as (0 + 1) + (2 + 3),
# then the tail in index order. No fastmath: with "reassoc"/"contract" LLVM was
# free to reorder and fuse (FMA) differently in each compiled specialization, so
# a strided x (a column view, layout 'A') and its contiguous copy (layout 'C',
# as the batch path passes it) got moments differing in the last bit, and an
# entry whose exact shape is 0 came out as +2.8e-17 in one and 0 in the other.
# The written order makes every build, layout and the inlined copies agree.


@njit(cache=True, inline="always")
def _load(x, i, scale, nonneg):
    """y_i = scale * x_i (scale * |x_i| for the signed variant)."""
    v = x[i] if nonneg else abs(x[i])
    return v * scale


@njit(cache=True)
def _scaled_sum_min_max(x, scale, nonneg):
    """Sum, min and max of y = scale * x (scale * |x| for the signed variant)."""
    n = x.shape[0]
    head = n - n % 4
    t0 = t1 = t2 = t3 = 0.0
    lo0 = lo1 = lo2 = lo3 = np.inf
    hi0 = hi1 = hi2 = hi3 = -np.inf
    for i in range(0, head, 4):
        a = _load(x, i, scale, nonneg)
        b = _load(x, i + 1, scale, nonneg)
        c = _load(x, i + 2, scale, nonneg)
        d = _load(x, i + 3, scale, nonneg)
        t0 += a
        t1 += b
        t2 += c
        t3 += d
        lo0 = min(lo0, a)
        lo1 = min(lo1, b)
        lo2 = min(lo2, c)
        lo3 = min(lo3, d)
        hi0 = max(hi0, a)
        hi1 = max(hi1, b)
        hi2 = max(hi2, c)
        hi3 = max(hi3, d)
    total = (t0 + t1) + (t2 + t3)
    lo = min(min(lo0, lo1), min(lo2, lo3))
    hi = max(max(hi0, hi1), max(hi2, hi3))
    for i in range(head, n):
        v = _load(x, i, scale, nonneg)
        total += v
        lo = min(lo, v)
        hi = max(hi, v)
    return total, lo, hi


@njit(cache=True)
def _scaled_centred_moments(x, scale, nonneg, mean, sc):
    """sum(e) and sum(e^2), e = (scale * x - mean) * sc (|x| if signed)."""
    n = x.shape[0]
    head = n - n % 4
    s0 = s1 = s2 = s3 = 0.0
    q0 = q1 = q2 = q3 = 0.0
    for i in range(0, head, 4):
        a = (_load(x, i, scale, nonneg) - mean) * sc
        b = (_load(x, i + 1, scale, nonneg) - mean) * sc
        c = (_load(x, i + 2, scale, nonneg) - mean) * sc
        d = (_load(x, i + 3, scale, nonneg) - mean) * sc
        s0 += a
        s1 += b
        s2 += c
        s3 += d
        q0 += a * a
        q1 += b * b
        q2 += c * c
        q3 += d * d
    se = (s0 + s1) + (s2 + s3)
    se2 = (q0 + q1) + (q2 + q3)
    for i in range(head, n):
        e = (_load(x, i, scale, nonneg) - mean) * sc
        se += e
        se2 += e * e
    return se, se2


@njit(cache=True)
def _centred_moments(b, k, mean, sc):
    """sum(e) and sum(e^2), e = (b[:k] - mean) * sc."""
    return _scaled_centred_moments(b[:k], 1.0, True, mean, sc)


@njit(cache=True)
def _step(k, rho, total, lo, hi, se, se2):
    """Parameters of s(v) = m + t * ((v - mean) * sc - delta) on a support of k.

    ``se``, ``se2`` are the moments of (v - mean) * sc with mean = total / k and
    sc = 2**-e of (hi - lo) (:func:`_mean_and_unit`).
    """
    m = rho / k
    r2 = 1.0 - rho * rho / k
    mean, sc = _mean_and_unit(k, total, lo, hi)
    delta = se / k
    t = math.sqrt(r2 / (se2 - delta * se))
    return m, t, mean, sc, delta


@njit(cache=True)
def _mean_and_unit(k, total, lo, hi):
    return total / k, _power_of_two_scale(hi - lo)


@njit(cache=True)
def _shape_at(v, m, t, mean, sc, delta):
    """s(v): monotone non-decreasing in v (t > 0), as every rounding step is."""
    return m + t * ((v - mean) * sc - delta)


@njit(cache=True)
def _hoyer_shape(y, rho, out):
    """The paper's algorithm on y (already scaled), targets (rho, 1).

    Writes the shape into ``out`` and returns the number of passes.
    """
    n = y.shape[0]
    vals = y.copy()
    in_support = np.ones(n, dtype=np.bool_)
    k = n
    passes = 0
    while True:
        total = 0.0
        lo = np.inf
        hi = -np.inf
        for i in range(n):
            if in_support[i]:
                v = vals[i]
                total += v
                lo = min(lo, v)
                hi = max(hi, v)
        m = rho / k
        r2 = 1.0 - rho * rho / k
        if r2 <= _R2_FLAT or k == 1:
            # Only the flat vector m * 1 has the targets on this support.
            passes += 1
            for i in range(n):
                out[i] = m if in_support[i] else 0.0
            return passes
        if lo == hi:
            # All tied but a sparser vector is asked for: break the tie by index.
            j = k - 1
            for i in range(n):
                if in_support[i]:
                    vals[i] = float(j)
                    j -= 1
            continue
        mean, sc = _mean_and_unit(k, total, lo, hi)
        se = 0.0
        se2 = 0.0
        for i in range(n):
            if in_support[i]:
                e = (vals[i] - mean) * sc
                se += e
                se2 += e * e
        m, t, mean, sc, delta = _step(k, rho, total, lo, hi, se, se2)
        passes += 1
        any_negative = False
        for i in range(n):
            if in_support[i]:
                v = _shape_at(vals[i], m, t, mean, sc, delta)
                out[i] = v
                if v < 0.0:
                    any_negative = True
            else:
                out[i] = 0.0
        if not any_negative:
            return passes
        for i in range(n):
            if in_support[i] and out[i] <= 0.0:
                in_support[i] = False
                out[i] = 0.0
                k -= 1


@njit(cache=True)
def _filter_input(x, scale, nonneg, m, t, mean, sc, delta, buf):
    """Copy the y = scale * x with s(y) > 0 into buf (order kept, branch-free).

    Returns (count, sum, min, max) of what was kept.
    """
    k = 0
    total = 0.0
    lo = np.inf
    hi = -np.inf
    for i in range(x.shape[0]):
        v = x[i] if nonneg else abs(x[i])
        v *= scale
        keep = _shape_at(v, m, t, mean, sc, delta) > 0.0
        buf[k] = v
        k += 1 if keep else 0
        total += v if keep else 0.0
        lo = min(lo, v if keep else np.inf)
        hi = max(hi, v if keep else -np.inf)
    return k, total, lo, hi


@njit(cache=True)
def _filter_buffer(b, k, m, t, mean, sc, delta):
    """Keep b[i] with s(b[i]) > 0 (in place, order kept); return (k, sum, min, max)."""
    j = 0
    total = 0.0
    lo = np.inf
    hi = -np.inf
    for i in range(k):
        v = b[i]
        keep = _shape_at(v, m, t, mean, sc, delta) > 0.0
        b[j] = v
        j += 1 if keep else 0
        total += v if keep else 0.0
        lo = min(lo, v if keep else np.inf)
        hi = max(hi, v if keep else -np.inf)
    return j, total, lo, hi


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
def _sum_min_max(b, k):
    total = 0.0
    lo = np.inf
    hi = -np.inf
    for i in range(k):
        v = b[i]
        total += v
        lo = min(lo, v)
        hi = max(hi, v)
    return total, lo, hi


@njit(cache=True)
def _fast_shape_into(x, scale, nonneg, rho, l2, out, max_filter_passes, total, lo, hi, se, se2):
    """Fast exact projection of x (unscaled) into out.

    ``total``, ``lo``, ``hi``, ``se`` and ``se2`` describe the scaled input (see
    :func:`project_vector`). Support finding as in the paper (entries with
    s_i <= 0 leave the support), but on a compacted buffer of survivors (``out``
    itself, overwritten at the end), so a pass costs O(|support|) instead of
    O(n); after ``max_filter_passes`` passes the rest is sorted and finished
    with prefix sums (O(k log k)), which bounds the worst case by O(n log n).
    Returns the number of passes, or -1 when the support is all tied (the
    caller then falls back to the index tie-break of the paper's kernel).
    """
    n = x.shape[0]
    m = rho / n
    r2 = 1.0 - rho * rho / n
    if r2 <= _R2_FLAT or n == 1:
        for i in range(n):
            out[i] = l2 * m
        return 1
    if lo == hi:
        return -1
    m, t, mean, sc, delta = _step(n, rho, total, lo, hi, se, se2)
    passes = 1
    if _shape_at(lo, m, t, mean, sc, delta) >= 0.0:
        # Full support: one sphere step, as the paper's first pass.
        for i in range(n):
            v = x[i] if nonneg else abs(x[i])
            out[i] = l2 * max(_shape_at(v * scale, m, t, mean, sc, delta), 0.0)
        return passes
    buf = out
    k, total, lo, hi = _filter_input(x, scale, nonneg, m, t, mean, sc, delta, buf)
    sorted_once = False
    while True:
        m = rho / k
        r2 = 1.0 - rho * rho / k
        if r2 <= _R2_FLAT or k == 1:
            t = 0.0
            mean = 0.0
            sc = 1.0
            delta = 0.0
            passes += 1
            break
        if lo == hi:
            return -1
        mean, sc = _mean_and_unit(k, total, lo, hi)
        se, se2 = _centred_moments(buf, k, mean, sc)
        m, t, mean, sc, delta = _step(k, rho, total, lo, hi, se, se2)
        passes += 1
        if _shape_at(lo, m, t, mean, sc, delta) >= 0.0:
            break
        if passes > max_filter_passes and not sorted_once:
            sorted_once = True
            k, extra = _sorted_passes(buf, k, rho, m, t, mean, sc, delta)
            passes += extra
            total, lo, hi = _sum_min_max(buf, k)
            continue
        k, total, lo, hi = _filter_buffer(buf, k, m, t, mean, sc, delta)
    # The support is an upper set of y: exactly the y >= lo.
    for i in range(n):
        v = x[i] if nonneg else abs(x[i])
        v *= scale
        s = l2 * max(_shape_at(v, m, t, mean, sc, delta), 0.0)
        out[i] = s if v >= lo else 0.0
    return passes


@njit(cache=True)
def _scaled_stats(x, nonneg):
    """Scale, sum, min, max and centred moments of y = scale * x (or of
    scale * |x| for the signed variant), in two passes (three if the raw sum
    overflows).

    Returns (finite, scale, total, lo, hi, se, se2); se and se2 are the moments
    of (y - total / n) * sc (see :func:`_step`), 0 when lo == hi.
    """
    n = x.shape[0]
    total, lo, hi = _scaled_sum_min_max(x, 1.0, nonneg)
    if math.isfinite(total):
        scale = _power_of_two_scale(max(abs(lo), abs(hi)))
        total *= scale
        lo *= scale
        hi *= scale
    else:
        maxabs, finite = _abs_max_and_finite(x)
        if not finite:
            return False, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0
        scale = _power_of_two_scale(maxabs)
        total, lo, hi = _scaled_sum_min_max(x, scale, nonneg)
    if lo == hi:
        return True, scale, total, lo, hi, 0.0, 0.0
    mean, sc = _mean_and_unit(n, total, lo, hi)
    se, se2 = _scaled_centred_moments(x, scale, nonneg, mean, sc)
    return True, scale, total, lo, hi, se, se2


@njit(cache=True)
def _meets_targets(n, scale, total, lo, hi, se, se2, l1, l2):
    """Whether y / scale is non-negative with sum l1 and norm l2 (to 1e-13)."""
    if lo < 0.0:
        return False
    if lo == hi:
        sumsq = n * lo * lo
    else:
        mean, sc = _mean_and_unit(n, total, lo, hi)
        sumsq = n * mean * mean + (2.0 * mean * se + se2 / sc) / sc
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
    is copied unchanged, in one pass.
    """
    n = x.shape[0]
    finite, scale, total, lo, hi, se, se2 = _scaled_stats(x, nonneg)
    if not finite:
        return STATUS_NONFINITE, 0
    if _meets_targets(n, scale, total, lo, hi, se, se2, l1, l2):
        for i in range(n):
            out[i] = x[i]
        return STATUS_OK, 1
    rho = l1 / l2
    rho = min(max(rho, 1.0), math.sqrt(n))
    if rho == 1.0:
        passes = _single_entry_into(x, nonneg, l2, out)
    elif method == METHOD_FAST:
        passes = _fast_shape_into(
            x, scale, nonneg, rho, l2, out, max_filter_passes, total, lo, hi, se, se2
        )
    else:
        passes = -1
    if passes < 0:
        y = np.empty(n)
        for i in range(n):
            y[i] = (x[i] if nonneg else abs(x[i])) * scale
        passes = _hoyer_shape(y, rho, out)
        for i in range(n):
            out[i] *= l2
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
# numba's cache is keyed on the Python function, which both builds share.
project_rows = njit(cache=True)(_project_rows_body)
project_rows_parallel = njit(parallel=True)(_project_rows_body)
