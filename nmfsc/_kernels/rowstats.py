r"""Numba kernels for the per-chunk statistics of the distributed projection.

:mod:`nmfsc.dask_backend.chunked_projection` projects the rows of a chunked M x T
array; each of its passes needs, per row of each chunk, the statistics of the
row's *selected* entries

.. math:: S = \{ j : y_j \ge lo,\; m + t (y_j - \bar y) > 0 \},

namely the count k, the sum, the centred sum of squares about the selection's
own mean, the least and the largest selected entry, and the largest entry
*not* selected. These kernels compute them with a few branch-free loops over each row (the
centred squares after the sum, as a two-pass variance does), reading float32
or float64 input as float64 without a copy, and without the temporaries of
the NumPy expressions they replace. The chunk may be a trial ``H - mu dH``
formed entry by entry from H and dH, so that it is never stored.

The selection test ``m + t * (y - mean) > 0`` is evaluated with the same
operations in the same order as NumPy's (no ``fastmath``, so no fused
multiply-add), so it selects exactly the entries that the projection's
writer keeps (:mod:`nmfsc.dask_backend.chunked_projection`).

Every kernel writes into ``out`` and validates nothing. The columns of ``out``
are those of :mod:`nmfsc.dask_backend.chunked_projection`: count, sum, centred sum of
squares, min, max, (non-finite flag, argmax, max of all: first pass only),
max of the entries not selected. The count is stored as a float64 (exact up
to 2^53 entries).
"""

import math
import sys

from numba import njit

__all__ = ["all_and_positive_stats", "selected_stats"]

# Columns of one block of statistics (as nmfsc.dask_backend.chunked_projection's).
K, SUM, M2, LO, HI, BAD, ARG, MAX, OUT = range(9)
WIDTH = 9
#: The largest float64: the far side of a lane's min / max for an entry not taken.
BIG = sys.float_info.max
#: Entries at or above this magnitude are flagged as the non-finite ones are
#: (``v + BIG`` must round to BIG), far beyond any trial of a normalised H.
HUGE = 2.0**960


@njit(cache=True, inline="always")
def _value(y, d, mu, i, j):
    """Entry (i, j) of the chunk as float64: y, or the trial y - d mu formed
    in y's dtype exactly as NumPy forms ``y - np.multiply(d, mu)``."""
    if d is None:
        return float(y[i, j])
    return float(y[i, j] - d[i, j] * mu)


@njit(cache=True, inline="always")
def _chosen(v, lo, m, t, mean):
    """Whether v is selected: ``v >= lo`` and ``m + t (v - mean) > 0``."""
    return (v >= lo) & (m + t * (v - mean) > 0.0)


@njit(cache=True, inline="always")
def _take(v, lo, m, t, mean, k, total, least, largest, outside):
    """One entry into one lane's (count, sum, min, max selected, max not selected).

    Branch-free: the selection is data-dependent, so a branch on it is
    mispredicted about half the time, and a condition feeding several selects
    is compiled to such a branch, several times slower per entry
    (benchmarks/README.md). The selection enters as s = 0.0 / 1.0: v s and v +- (1 - s) BIG
    are v exactly when selected, and the other side of min / max (v + BIG
    rounds to BIG for |v| < 2^970: the first pass flags larger entries).
    """
    s = 1.0 if _chosen(v, lo, m, t, mean) else 0.0
    big = (1.0 - s) * BIG
    return (
        k + s,
        total + v * s,
        min(least, v + big),
        max(largest, v - big),
        max(outside, v - s * BIG),
    )


@njit(cache=True)
def _row_stats(y, d, mu, i, lo, m, t, mean, out, c):
    """The statistics of row i's entries with ``_chosen``, into out[i, c:c+WIDTH].

    Two loops (count, sum and extremes; then the squares about the
    selection's own mean), each with four interleaved lanes combined as
    ((0, 1), (2, 3)) so that no single running sum is one long dependency
    chain. The order is fixed, so the result is deterministic.
    """
    n = y.shape[1]
    k0 = k1 = k2 = k3 = 0.0
    t0 = t1 = t2 = t3 = 0.0
    a0 = a1 = a2 = a3 = BIG
    b0 = b1 = b2 = b3 = -BIG
    o0 = o1 = o2 = o3 = -BIG
    j = 0
    while j + 4 <= n:
        k0, t0, a0, b0, o0 = _take(_value(y, d, mu, i, j), lo, m, t, mean, k0, t0, a0, b0, o0)
        k1, t1, a1, b1, o1 = _take(_value(y, d, mu, i, j + 1), lo, m, t, mean, k1, t1, a1, b1, o1)
        k2, t2, a2, b2, o2 = _take(_value(y, d, mu, i, j + 2), lo, m, t, mean, k2, t2, a2, b2, o2)
        k3, t3, a3, b3, o3 = _take(_value(y, d, mu, i, j + 3), lo, m, t, mean, k3, t3, a3, b3, o3)
        j += 4
    while j < n:
        k0, t0, a0, b0, o0 = _take(_value(y, d, mu, i, j), lo, m, t, mean, k0, t0, a0, b0, o0)
        j += 1
    k = (k0 + k1) + (k2 + k3)
    total = (t0 + t1) + (t2 + t3)
    own = total / k if k > 0 else 0.0
    c0 = c1 = c2 = c3 = 0.0
    if k > 0:
        j = 0
        while j + 4 <= n:
            c0 += _square(_value(y, d, mu, i, j), own, lo, m, t, mean)
            c1 += _square(_value(y, d, mu, i, j + 1), own, lo, m, t, mean)
            c2 += _square(_value(y, d, mu, i, j + 2), own, lo, m, t, mean)
            c3 += _square(_value(y, d, mu, i, j + 3), own, lo, m, t, mean)
            j += 4
        while j < n:
            c0 += _square(_value(y, d, mu, i, j), own, lo, m, t, mean)
            j += 1
    out[i, c + K] = k
    out[i, c + SUM] = total
    out[i, c + M2] = (c0 + c1) + (c2 + c3)
    out[i, c + LO] = min(min(a0, a1), min(a2, a3)) if k > 0 else math.inf
    out[i, c + HI] = max(max(b0, b1), max(b2, b3)) if k > 0 else -math.inf
    out[i, c + OUT] = max(max(o0, o1), max(o2, o3)) if k < n else -math.inf


@njit(cache=True, inline="always")
def _square(v, own, lo, m, t, mean):
    """(v - own)^2 if v is selected, else 0.0 (branch-free, as ``_take``)."""
    e = (v - own) * (1.0 if _chosen(v, lo, m, t, mean) else 0.0)
    return e * e


@njit(cache=True, nogil=True)
def selected_stats(y, d, mu, lo, m, t, mean, out):
    """Row i: the statistics of {j : x_ij >= lo_i, m_i + t_i (x_ij - mean_i) > 0}.

    x is the chunk ``y`` (M x n, float32 or float64) when ``d`` is None, else
    the trial ``y - d mu`` (``d`` like ``y``, ``mu`` a scalar of y's dtype),
    formed entry by entry and never stored. ``lo, m, t, mean`` have M
    entries; ``out`` is M x WIDTH (columns BAD, ARG and MAX are left as they
    are).
    """
    for i in range(y.shape[0]):
        _row_stats(y, d, mu, i, lo[i], m[i], t[i], mean[i], out, 0)


@njit(cache=True, nogil=True)
def all_and_positive_stats(y, offset, out):
    """The first pass: row i's statistics of all entries into out[i, :WIDTH]
    (with the non-finite flag, the global index ``offset + j`` of the row's
    largest entry, earliest on ties, and that entry) and of its positive
    entries into out[i, WIDTH:2 WIDTH].

    All entries are ``y >= -inf`` with the shape (1, 0, 0), which selects
    every finite entry; a row with a non-finite entry (or one of magnitude
    ``HUGE`` or more) is flagged, and its statistics are not used. Positive
    entries are ``y >= 0`` with (0, 1, 0): ``y > 0``.
    """
    for i in range(y.shape[0]):
        bad = 0.0
        best = -1
        top = -math.inf
        for j in range(y.shape[1]):
            v = float(y[i, j])
            if not abs(v) < HUGE:  # also NaN
                bad = 1.0
            if best < 0 or v > top:
                best = j
                top = v
        out[i, BAD] = bad
        # An empty chunk has no largest entry: -inf loses every merge (a 0
        # would win over a row whose entries are all negative).
        out[i, ARG] = offset + best if y.shape[1] > 0 else -1.0
        out[i, MAX] = top
        _row_stats(y, None, 0.0, i, -math.inf, 1.0, 0.0, 0.0, out, 0)
        _row_stats(y, None, 0.0, i, 0.0, 0.0, 1.0, 0.0, out, WIDTH)
