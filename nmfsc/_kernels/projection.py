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

    s_i = rho / k + t * (y_i - mean_S(y)),   t = sqrt((1 - rho^2 / k) / c2),
    c2 = sum_{i in S} (y_i - mean_S(y))^2,

which is algebraically the paper's ``v + alpha * (v - midpoint)`` with the root of
the quadratic taken in closed form, and needs no discriminant. If every s_i is
non-negative this is the answer; otherwise the entries with s_i <= 0 leave S and
the step repeats. Each such round is one *pass*, counted as the paper counts them.

Ties. If the remaining support is all tied (c2 == 0) while the targets ask for a
sparser vector (rho^2 < k), every point of the feasible circle is equally close
and the projection is not unique. The kernels then break the tie by index: the
tied values are replaced by the ramp k-1, k-2, ..., 0 in index order (the limit of
an infinitesimal perturbation favouring earlier indices), which makes the result
deterministic and identical for both methods.

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


@njit(cache=True)
def _power_of_two_scale(maxabs):
    """Return 2**-e with maxabs = f * 2**e, 0.5 <= f < 1 (1.0 if maxabs == 0)."""
    if maxabs == 0.0:
        return 1.0
    _, e = math.frexp(maxabs)
    return math.ldexp(1.0, -e)


@njit(cache=True)
def _abs_max_and_finite(x, nonneg):
    """max |x| (max of x's magnitudes), and whether every entry is finite."""
    maxabs = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        if not math.isfinite(v):
            return 0.0, False
        a = abs(v)
        if a > maxabs:
            maxabs = a
    return maxabs, True


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
        for i in range(n):
            if in_support[i]:
                total += vals[i]
        mean = total / k
        c2 = 0.0
        for i in range(n):
            if in_support[i]:
                d = vals[i] - mean
                c2 += d * d
        m = rho / k
        r2 = 1.0 - rho * rho / k
        if r2 <= 0.0 or k == 1:
            t = 0.0
        elif c2 == 0.0:
            # All tied but a sparser vector is asked for: break the tie by index.
            j = k - 1
            for i in range(n):
                if in_support[i]:
                    vals[i] = float(j)
                    j -= 1
            continue
        else:
            t = math.sqrt(r2 / c2)
        passes += 1
        any_negative = False
        for i in range(n):
            if in_support[i]:
                v = m + t * (vals[i] - mean)
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


@njit(cache=True, fastmath={"reassoc", "contract"})
def _scaled_sum_min_max(x, scale, nonneg):
    total = 0.0
    lo = np.inf
    hi = -np.inf
    for i in range(x.shape[0]):
        v = x[i] if nonneg else abs(x[i])
        v *= scale
        total += v
        lo = min(lo, v)
        hi = max(hi, v)
    return total, lo, hi


@njit(cache=True, fastmath={"reassoc", "contract"})
def _scaled_centred_sumsq(x, scale, mean, nonneg):
    c2 = 0.0
    for i in range(x.shape[0]):
        v = x[i] if nonneg else abs(x[i])
        d = v * scale - mean
        c2 += d * d
    return c2


@njit(cache=True, fastmath={"reassoc", "contract"})
def _centred_sumsq(b, k, mean):
    c2 = 0.0
    for i in range(k):
        d = b[i] - mean
        c2 += d * d
    return c2


@njit(cache=True)
def _filter_above(b, k, theta):
    """Keep b[i] > theta (in place, order kept); return (new k, sum, min)."""
    j = 0
    total = 0.0
    lo = np.inf
    for i in range(k):
        v = b[i]
        if v > theta:
            b[j] = v
            j += 1
            total += v
            if v < lo:
                lo = v
    return j, total, lo


@njit(cache=True)
def _support_from_sorted(b, k, rho):
    """Exact support size on values b[:k] (any order): sort, then scan prefixes.

    Returns (j, mean, t, theta): support = the j largest values, all > theta.
    """
    srt = np.sort(b[:k])[::-1]
    mean = 0.0
    m2 = 0.0
    for j in range(1, k + 1):
        v = srt[j - 1]
        delta = v - mean
        mean += delta / j
        m2 += delta * (v - mean)
        r2 = 1.0 - rho * rho / j
        if r2 <= 0.0 or m2 <= 0.0:
            if j < k:
                continue
            return j, mean, 0.0, -np.inf
        t = math.sqrt(r2 / m2)
        alpha = mean - (rho / j) / t
        if srt[j - 1] > alpha and (j == k or srt[j] <= alpha):
            theta = srt[j] if j < k else alpha
            return j, mean, t, theta
    return k, mean, 0.0, -np.inf


@njit(cache=True)
def _fast_shape_into(x, scale, nonneg, rho, l2, out, max_filter_passes, total, lo, c2):
    """Fast exact projection of x (unscaled) into out.

    ``total``, ``lo`` and ``c2`` are the sum, minimum and centred sum of squares
    of the scaled input (see :func:`project_vector`). Support finding as in the
    paper (entries with s_i <= 0 leave the support), but on a compacted buffer of
    survivors, so a pass costs O(|support|) instead of O(n); after
    ``max_filter_passes`` passes the rest is sorted and scanned (O(k log k)),
    which bounds the worst case by O(n log n). Returns the number of
    support-finding passes, or -1 when the support is all tied (the caller then
    falls back to the index tie-break of the paper's kernel).
    """
    n = x.shape[0]
    mean = total / n
    m = rho / n
    r2 = 1.0 - rho * rho / n
    if r2 <= 0.0 or n == 1:
        for i in range(n):
            out[i] = l2 * m
        return 1
    if c2 == 0.0:
        return -1
    t = math.sqrt(r2 / c2)
    theta = mean - m / t
    passes = 1
    if lo >= theta:
        # Full support: one sphere step, as the paper's first pass.
        for i in range(n):
            v = x[i] if nonneg else abs(x[i])
            out[i] = l2 * max(m + t * (v * scale - mean), 0.0)
        return passes
    # Compact the survivors y > theta into a buffer.
    buf = np.empty(n)
    k = 0
    total = 0.0
    lo = np.inf
    for i in range(n):
        v = x[i] if nonneg else abs(x[i])
        v *= scale
        if v > theta:
            buf[k] = v
            k += 1
            total += v
            if v < lo:
                lo = v
    while True:
        mean = total / k
        c2 = _centred_sumsq(buf, k, mean)
        m = rho / k
        r2 = 1.0 - rho * rho / k
        if r2 <= 0.0 or k == 1:
            t = 0.0
            break
        if c2 == 0.0:
            return -1
        t = math.sqrt(r2 / c2)
        new_theta = mean - m / t
        passes += 1
        if lo >= new_theta:
            break
        if passes > max_filter_passes:
            k, mean, t, sorted_theta = _support_from_sorted(buf, k, rho)
            m = rho / k
            if t == 0.0 and k > 1 and 1.0 - rho * rho / k > 0.0:
                return -1
            theta = max(theta, sorted_theta)
            break
        theta = max(theta, new_theta)
        k, total, lo = _filter_above(buf, k, theta)
    for i in range(n):
        v = x[i] if nonneg else abs(x[i])
        v *= scale
        if v > theta:
            out[i] = l2 * max(m + t * (v - mean), 0.0)
        else:
            out[i] = 0.0
    return passes


@njit(cache=True)
def _scaled_stats(x, nonneg):
    """One pass (two if the raw sum overflows): scale, sum, min and centred sumsq
    of y = scale * x (or of scale * |x| for the signed variant).

    Returns (finite, scale, total, lo, c2).
    """
    n = x.shape[0]
    total, lo, hi = _scaled_sum_min_max(x, 1.0, nonneg)
    if math.isfinite(total):
        scale = _power_of_two_scale(max(abs(lo), abs(hi)))
        total *= scale
        lo *= scale
    else:
        maxabs, finite = _abs_max_and_finite(x, nonneg)
        if not finite:
            return False, 1.0, 0.0, 0.0, 0.0
        scale = _power_of_two_scale(maxabs)
        total, lo, hi = _scaled_sum_min_max(x, scale, nonneg)
    c2 = _scaled_centred_sumsq(x, scale, total / n, nonneg)
    return True, scale, total, lo, c2


@njit(cache=True)
def project_vector(x, l1, l2, nonneg, method, out, max_filter_passes):
    """Project x onto {s : sum|s| = l1, ||s||_2 = l2} (s >= 0 unless signed).

    ``l1`` must already lie in [l2, sqrt(n) * l2] and l2 > 0 (the caller
    validates). Writes into ``out`` (which must not alias x) and returns
    (status, passes). Input that already meets the targets (to 1e-13 relative)
    is copied unchanged, in one pass.
    """
    n = x.shape[0]
    finite, scale, total, lo, c2 = _scaled_stats(x, nonneg)
    if not finite:
        return STATUS_NONFINITE, 0
    mean = total / n
    norm = math.sqrt(c2 + n * mean * mean)
    if (
        lo >= 0.0
        and abs(total - l1 * scale) <= 1e-13 * l1 * scale
        and abs(norm - l2 * scale) <= 1e-13 * l2 * scale
    ):
        for i in range(n):
            out[i] = x[i]
        return STATUS_OK, 1
    rho = l1 / l2
    rho = min(max(rho, 1.0), math.sqrt(n))
    if method == METHOD_FAST:
        passes = _fast_shape_into(
            x, scale, nonneg, rho, l2, out, max_filter_passes, total, lo, c2
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
