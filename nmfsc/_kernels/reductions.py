"""Numba kernels for sums over large arrays, cut into pieces of a fixed size.

Each kernel computes the partial sum of every piece in a range of pieces and
writes it to ``partials[piece]``; the caller (:mod:`nmfsc._blocked`) runs
ranges of pieces on several threads (the kernels release the GIL) and adds
the partials in piece order. A piece's sum runs in float64 whatever the
dtype, with interleaved accumulators added in a fixed order, so the
total depends on the size of the pieces and never on how many threads
computed them.

Every kernel validates nothing.
"""

import numpy as np
from numba import njit

#: Interleaved accumulators of a piece's sum (independent lanes, which the
#: compiler keeps in vector registers; their order is fixed).
LANES = 16


@njit(cache=True, nogil=True)
def dot_pieces(a, b, piece, first, stop, partials):
    """``partials[p] = sum(a[p*piece : (p+1)*piece] * b[...])`` for the pieces
    ``first <= p < stop`` of the flat arrays a and b (the last piece may be
    shorter), in float64: entry j goes to accumulator ``j % LANES``, the tail
    after the last full group of LANES to a running sum, then the
    accumulators are added in order."""
    n = a.shape[0]
    acc = np.empty(LANES)
    for p in range(first, stop):
        lo = p * piece
        hi = min(n, lo + piece)
        acc[:] = 0.0
        j = lo
        while j + LANES <= hi:
            for k in range(LANES):
                acc[k] += np.float64(a[j + k]) * np.float64(b[j + k])
            j += LANES
        total = 0.0
        while j < hi:
            total += np.float64(a[j]) * np.float64(b[j])
            j += 1
        for k in range(LANES):
            total += acc[k]
        partials[p] = total


@njit(cache=True, nogil=True)
def squared_difference(V, WH):
    """``sum((V - WH)**2)`` of two 2-D arrays of the same shape (any strides),
    in float64, row by row with four accumulators, rows added in order."""
    rows, cols = V.shape
    total = 0.0
    for i in range(rows):
        s0 = s1 = s2 = s3 = 0.0
        j = 0
        while j + 4 <= cols:
            d0 = np.float64(V[i, j]) - np.float64(WH[i, j])
            d1 = np.float64(V[i, j + 1]) - np.float64(WH[i, j + 1])
            d2 = np.float64(V[i, j + 2]) - np.float64(WH[i, j + 2])
            d3 = np.float64(V[i, j + 3]) - np.float64(WH[i, j + 3])
            s0 += d0 * d0
            s1 += d1 * d1
            s2 += d2 * d2
            s3 += d3 * d3
            j += 4
        while j < cols:
            d0 = np.float64(V[i, j]) - np.float64(WH[i, j])
            s0 += d0 * d0
            j += 1
        total += (s0 + s1) + (s2 + s3)
    return total
