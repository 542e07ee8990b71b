"""The fast method's path for long vectors: Newton steps on the threshold, then one gather.

The projection is s = beta * max(y - alpha, 0) (Thom & Palm 2013), y = x
(|x| for the signed variant): it is fixed by its threshold alpha. For
n >= :data:`BRACKET_MIN_N` the fast method (``projection._fast_shape_into``)
would read the vector 7-10 times to find it; this path usually reads it three
times (a level pass, a band pass, the write), in vectorised loops whose sums
stay in registers.

The threshold. For a level a, let k, g = sum(y - a) and h = sum((y - a)^2)
run over the y > a. psi(a) = g / sqrt(h) is the L1/L2 ratio of the shape with
threshold a, decreasing in a, and alpha solves psi(alpha) = rho. Since
g' = -k and h' = -2 g, psi' = (g^2 - k h) / h^(3/2) needs only k, g and h, and
one Newton step from a is

    a' = a + h (g - rho sqrt(h)) / (k h - g^2)                 (_newton_step)

with an error about psi'' (a - a')^2 / (2 |psi'|): quadratic, so a start off
by 1-3 % of the entries (a sample's threshold) lands within 0.01-0.3 %.

1. *Start* (no pass). A deterministic strided sample of m = n / 16 entries
   (256 to 2048) gives the first level: the threshold of the sample projected
   with the targets rescaled to its length (rho sqrt(m / n)), by the same
   Newton steps on the sample, kept in a bracket (:func:`_sample_threshold`);
   or, given a ``guide`` (the support size to expect, from the caller), the
   sample's order statistic of that rank (:func:`_select`). Neither sorts.
2. *Level pass* (:func:`_level_pass`): exact k, g and h at the level, over the
   whole vector; g also proves the input finite (below). The Newton step and
   the band around where it lands follow (:func:`_next_band`,
   :func:`_band_around`): with f the density of y at the threshold (the
   sample's, in a window holding 32 sample entries), psi'' is
   f / sqrt(h) - 3 g (k h - g^2) / h^(5/2), so the error is about

       E = D^2 / 2 * (f h / (k h - g^2) - 3 g / h),   D = a' - a,

   positive where psi is convex (|N(0, 1)|, exponential tails: the step
   lands below alpha), negative in a gap or a flat cluster (it overshoots).
   The band is centred on a' + E and reaches max(E1 / 2, 3 |E| / 2) plus 8
   entries to each side, E1 the first term of E alone, which bounded |E| by
   6-10 times on every input measured. Where the step leaves the bracket
   that the levels so far have set (each level is below or above alpha as
   psi(level) > or < rho), or overshoots (from below: more than twice as far
   as the paper's step, a lower bound, :func:`_hoyer_level`; from above: more
   than a fourfold support in the sample), the paper's step or the bracket's
   sample median replaces it. A band the sample expects to hold more than
   n / 16 entries asks for another level pass there (at most three).
3. *Band pass* (:func:`_band_pass`): the count and moments of the sure part
   y > hi, and the band (lo, hi] gathered into ``out`` (a scratch until step
   5). A block of 16 entries is copied only when one of them is in the band,
   so the gather of a narrow band adds little to the pass. A sure part the sample
   expects to be tiny (a very sparse target) is gathered with the band.
4. *Solve and verify.* The paper's passes (entries with s <= 0 leave the
   support) run on the band only, with the sure part's sums
   (:func:`_solve_band`). The result is *verified*: s(hi) > 0 unless nothing
   is above hi, and s(lo) <= 0 unless nothing is at or below lo; s is
   monotone in y, so every entry outside the band is then on the correct
   side. A band that missed is replaced by a Newton step from its failing
   edge, whose exact sums the pass gave, and step 3 repeats. After six level
   and band passes in all, or when an accuracy guard fails, the caller runs
   the exact kernel: correctness never depends on the sample, the error
   model or the number of passes.
5. *Write* l2 * max(s(y), 0) (a vectorised map).

Sums. Every sum is taken in an order written out in the source, with no
fastmath, so that all compiled specializations (a strided or a contiguous
vector, the serial and the parallel batch build) give the same bits: entry i
goes to lane i % 16 of a lane row, the rows are folded by a fixed tree, and
the tail is added in index order. A vector longer than :data:`CHUNK`
(32,768) is summed that way chunk by chunk, and the chunks' sums are added
in index order; the band pass gathers each chunk's band at the chunk's
offset and then moves the pieces together. The chunks depend on n alone, so
they run on any number of threads (``threaded``) with the same bits. The
lane rows are arrays on the stack (:func:`stack_lanes`), which LLVM keeps
in vector registers (two AVX-512 or four AVX2 registers a row); rows in heap
arrays stay in memory, and the loops then wait on store-to-load forwarding,
several times slower. The level
pass's g adds w * d for every entry (w = 1 above the level, else 0), so a NaN
(0 * NaN) or infinite entry makes it NaN or infinite: no sum reaches the
solve before the input is known finite.

The shape is s(v) = m + t * ((v - c) * sce - dbar) with c a pilot centre
known before the band pass (the sample's median of the entries above the
band, :func:`_pilot`: not their mean, which a heavy tail puts far above the
bulk, so that every bulk entry's large square rounds against the top one's
in its lane), sce a power of two of the support's spread,
dbar = mean((y - c) * sce) over the support and
t = sqrt((1 - rho^2 / k) / sum(((y - c) * sce - dbar)^2)): every rounding
step is monotone in v, so the support is an upper set of y. The last step on
the band must lose at most one bit to cancellation in its moments (as in the
exact kernel); if c is too far from the support's mean for that, the band
pass is repeated with the sample's median of the solved support as c. The
steps that only drop entries may lose eight bits, which can misplace only
entries within about 1e-13 of the threshold.

Falls back (returns -1) on: non-finite input or overflowing sums, input that
(nearly) meets the targets already (the exact kernel copies it unchanged: the
solved map l2 * s(v) is then the identity on the support), six level and band
passes without a verified band, a flat or all-tied support (the exact kernel
breaks ties by index).
"""

import math

import numba
import numpy as np
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

# As projection._R2_FLAT: 1 - rho^2 / k at or below this is the flat case.
r2_flat = 1e-15


@njit(cache=True, error_model="numpy")
def power_of_two_scale(maxabs):
    """2**-e with maxabs = f * 2**e, 0.5 <= f < 1, capped at 2**1000."""
    _, e = math.frexp(maxabs)
    return math.ldexp(1.0, min(-e, 1000))


# Below this length the fast kernel is used as it is: the sample (at least 256
# entries) would be most of the vector, and the gain shrinks to nothing near
# CBCL's 361 entries (the timings are in benchmarks/README.md).
BRACKET_MIN_N = 1024

# Entries in a chunk of the passes over a long vector (a multiple of _LANES):
# every pass sums each chunk on its own and then adds the chunks' sums in
# order, and gathers each chunk's band at the chunk's own offset, so that the
# chunks can run on any number of threads with the same result (the
# partition depends on the length only). A vector of at most CHUNK entries is
# one chunk: its passes are the unchunked ones.
CHUNK = 1 << 15

# Lanes of the fixed-order sums: 16 float64 lanes, two AVX-512 or four AVX2
# registers per summed quantity.
_LANES = 16
# Near-feasible input (relative) goes to the exact kernel, which decides it.
_NEAR_FEASIBLE = 1e-9
# Moments losing more than one bit to cancellation: fall back (the last
# step on the band; the steps that drop entries may lose eight bits).
_CANCELLATION = 0.5
_CANCELLATION_STEP = 1.0 - 2.0**-8
# Squares of the scaled deviations below this may have underflowed: fall back.
_MIN_C2 = 2.0**-800
# Level passes (Newton steps on the whole vector) at most.
_MAX_LEVEL_PASSES = 3
# Level and band passes at most before falling back to the exact kernel.
MAX_PASSES = 6
# A band the sample expects to hold more than n / _MAX_BAND_SHARE entries
# asks for another level pass instead (at the band's centre).
_MAX_BAND_SHARE = 16
# A sure part the sample expects to hold at most n / _SMALL_SURE_PART
# entries is gathered with the band.
_SMALL_SURE_PART = 256
# The band's half-width beyond the corrected Newton point: this share of
# the error bound, and entries (expected, at the sample's local density).
_BAND_SPREAD = 0.5
_BAND_MARGIN = 8.0
# A Newton step from below longer than this many times the paper's step
# (a lower bound) is taken for an overshoot.
_OVERSHOOT = 2.0
# From above, a step may grow the support (in the sample) to this many times
# plus this many entries.
_GROWTH = 4.0
_GROWTH_SLACK = 16.0
# Sample entries above the band that a sample median pilot needs.
_PILOT_COUNT = 8
# Sample entries that the local density estimate counts at least.
_DENSITY_COUNT = 32


@intrinsic
def stack_lanes(typingctx, count):
    """A pointer to ``count`` (a literal int) float64 on the calling
    function's stack (an alloca in its entry block): lane rows that LLVM
    promotes to registers."""
    if not isinstance(count, types.IntegerLiteral):
        return None
    size = count.literal_value

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, context.get_value_type(types.float64), size=size)

    return types.CPointer(types.float64)(count), codegen


@njit(cache=True, error_model="numpy", inline="always")
def _zeroed(row):
    """The lane row, set to zero."""
    for j in range(_LANES):
        row[j] = 0.0
    return row


@njit(cache=True, error_model="numpy", inline="always")
def _fold(row):
    """Sum of a lane row in a fixed tree order (halves added pairwise);
    overwrites the row."""
    for w in (8, 4, 2, 1):
        for j in range(w):
            row[j] += row[j + w]
    return row[0]


@njit(cache=True, error_model="numpy")
def _chunks(n, chunk):
    """The chunks of ``chunk`` entries (the last one shorter) covering n."""
    return (n + chunk - 1) // chunk


@njit(cache=True, error_model="numpy")
def sample_size(n):
    """Entries in the strided sample: n / 16, clamped to [256, 2048]."""
    return min(max(n // 16, 256), 2048)


@njit(cache=True, error_model="numpy")
def _sample(x, nonneg, n):
    """The strided sample of y (contiguous), its min, max and whether finite."""
    m = sample_size(n)
    stride = n // m
    z = np.empty(m)
    lo = np.inf
    hi = -np.inf
    for j in range(m):
        v = x[j * stride] if nonneg else abs(x[j * stride])
        z[j] = v
        lo = min(lo, v)
        hi = max(hi, v)
    return z, lo, hi, math.isfinite(lo) and math.isfinite(hi)


@njit(cache=True, error_model="numpy")
def _level_sums(z, a, scale):
    """(k, g, h) over the sample: k = #{z > a}, g = sum(d), h = sum(d^2),
    d = (z - a) * scale, in lane rows (a fixed order)."""
    return _level_chunk(z, True, a, scale)


@njit(cache=True, error_model="numpy")
def _newton_step(k, g, h, rho):
    """The Newton step on psi = g / sqrt(h) toward rho from a level with sums
    (k, g, h) (module docstring, step 2), in the units of g; NaN if undefined."""
    den = k * h - g * g
    if not (k >= 1.0 and h > 0.0 and den > 0.0):
        return np.nan
    return h * (g - rho * math.sqrt(h)) / den


@njit(cache=True, error_model="numpy")
def _sample_threshold(z, lo, hi, rho_s):
    """The threshold of the sample projected to L1/L2 = rho_s: Newton steps on
    its own psi from its minimum, kept inside a bracket (a step that leaves
    it bisects instead: psi is concave where the density rises toward the
    top); at most 40 steps."""
    scale = power_of_two_scale(hi - lo)
    below = lo  # psi(below) > rho_s, or below is under every entry
    above = hi  # psi(above) < rho_s, or nothing is above it
    a = lo
    k_prev = -1.0
    for _ in range(40):
        k, g, h = _level_sums(z, a, scale)
        if k == k_prev:
            break
        k_prev = k
        if k == 0.0 or g < rho_s * math.sqrt(h):
            above = a
        else:
            below = a
        step = _newton_step(k, g, h, rho_s)
        new = a + step / scale
        if not (below < new < above):
            new = 0.5 * (below + above)
        if new == a:
            break
        a = new
    return a


@njit(cache=True, error_model="numpy")
def _count_above(z, t):
    """The sample entries above t."""
    count = 0
    for i in range(z.shape[0]):
        count += z[i] > t
    return count


# The bit-for-bit partner of each type in a reinterpreting cast.
_BITCAST = {types.float64: types.int64, types.int64: types.float64}


@intrinsic
def _bitcast(typingctx, value):
    """The bits of a float64 as an int64, or of an int64 as a float64."""
    target = _BITCAST.get(value)
    if target is None:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(target))

    return target(value), codegen


_MAGNITUDE = 0x7FFFFFFFFFFFFFFF


@njit(cache=True, error_model="numpy", inline="always")
def _key(value):
    """An int64 that orders as the float64 does (about its logarithm): the
    bits, with the magnitude's flipped for a negative value. Its own inverse
    (:func:`_unkey`)."""
    bits = _bitcast(value)
    return bits ^ ((bits >> 63) & _MAGNITUDE)


@njit(cache=True, error_model="numpy", inline="always")
def _unkey(key):
    return _bitcast(key ^ ((key >> 63) & _MAGNITUDE))


@njit(cache=True, error_model="numpy")
def _select(z, lo, hi, rank, tol=0.0):
    """A value in [lo, hi] (finite) with about ``rank`` sample entries above
    it (to half their binomial error, sqrt(rank) / 2, or ``tol`` entries), by
    counting: regula falsi on the count over the values' keys (:func:`_key`,
    about their logarithm, so that a sample spread over orders of magnitude
    takes a few steps, not twenty), every other step a bisection. No sort:
    each count is one vectorised read of the sample."""
    clo = _count_above(z, lo)
    chi = _count_above(z, hi)
    if rank >= clo:
        return lo
    if rank <= chi:
        return hi
    tol = max(tol, 1.0, 0.5 * math.sqrt(rank))
    klo = _key(lo)
    khi = _key(hi)
    t = lo
    for it in range(128):
        frac = 0.5
        if it % 2 == 0:
            frac = min(max((clo - rank) / (clo - chi), 0.0625), 0.9375)
        if (klo < 0) == (khi < 0):
            kt = klo + np.int64(float(khi - klo) * frac)
        else:
            # Keys of both signs: their span may not fit an int64, half of it
            # does, and so does each partial sum (klo < 0 < khi).
            half = np.int64(float((khi >> 1) - (klo >> 1)) * frac)
            kt = (klo + half) + half
        if not (klo < kt < khi):
            # Adjacent values (ties): the nearer count of the two.
            return _unkey(klo) if clo - rank <= rank - chi else _unkey(khi)
        t = _unkey(kt)
        count = _count_above(z, t)
        if abs(count - rank) <= tol:
            break
        if count > rank:
            klo = kt
            clo = count
        else:
            khi = kt
            chi = count
    return t


@njit(cache=True, error_model="numpy")
def _pilot(z, zhi, threshold, fallback):
    """The centre of the band pass's moments: the sample's median of the
    entries above ``threshold`` (at least _PILOT_COUNT of them), else
    ``fallback``. Not the mean: in a heavy-tailed support the mean sits far
    above the bulk, and every bulk entry then adds a large square to a lane
    that already holds the top one's, rounding each time (1e-13 of the sum
    on a vector spanning 1e-50 to 1e66); the median is within a standard
    deviation of the mean, as the cancellation guard asks."""
    count = _count_above(z, threshold)
    if count < _PILOT_COUNT or not threshold < zhi:
        return fallback
    # The middle third of the support's sample entries is close enough.
    return _select(z, max(threshold, z.min()), zhi, 0.5 * count, count / 6.0)


@njit(cache=True, error_model="numpy")
def _level_chunk(x, nonneg, a, scale):
    """The sums of :func:`_level_pass` over x (one chunk, or all of a short
    vector): entry i in lane i % _LANES, the lanes folded, the tail added in
    order. (A chunk is passed as a slice: indices from a start known to be
    non-negative are what lets LLVM drop numba's wraparound test and
    vectorise the lanes.)"""
    n = x.shape[0]
    head = n - n % _LANES
    r0 = _zeroed(numba.carray(stack_lanes(_LANES), _LANES))
    r1 = _zeroed(numba.carray(stack_lanes(_LANES), _LANES))
    r2 = _zeroed(numba.carray(stack_lanes(_LANES), _LANES))
    # (The lane loop must not sit inside a branch: LLVM then leaves it scalar.)
    for i in range(0, head, _LANES):
        for j in range(_LANES):
            v = x[i + j] if nonneg else abs(x[i + j])
            d = (v - a) * scale
            w = 1.0 if d > 0.0 else 0.0
            p = w * d
            r0[j] += w
            r1[j] += p
            r2[j] += p * p
    k = _fold(r0)
    g = _fold(r1)
    h = _fold(r2)
    for i in range(head, n):
        v = x[i] if nonneg else abs(x[i])
        d = (v - a) * scale
        w = 1.0 if d > 0.0 else 0.0
        p = w * d
        k += w
        g += p
        h += p * p
    return k, g, h


def _level_chunks_body(x, nonneg, a, scale, chunk, parts):
    """parts[c] = the sums of chunk c (:func:`_level_chunk`)."""
    n = x.shape[0]
    for c in prange(parts.shape[0]):
        i0 = c * chunk
        k, g, h = _level_chunk(x[i0 : min(i0 + chunk, n)], nonneg, a, scale)
        parts[c, 0] = k
        parts[c, 1] = g
        parts[c, 2] = h


# One body, two builds (as projection.project_rows): the threaded build is not
# cached, numba's cache being keyed on the Python function they share.
_level_chunks = njit(cache=True, error_model="numpy")(_level_chunks_body)
_level_chunks_threaded = njit(parallel=True, error_model="numpy")(_level_chunks_body)


@njit(cache=True, error_model="numpy")
def _level_pass(x, nonneg, a, scale, chunk, threaded):
    """One pass over y: over y > a, the count k and g = sum(d), h = sum(d^2)
    with d = (y - a) * scale (a power of two). Returns (k, g, h).

    By chunks of ``chunk`` entries (:func:`_chunks`), on all threads if
    ``threaded``. g is the proof of finiteness: each entry adds w * d with
    w = 1 if d > 0, else 0, so a NaN (0 * NaN), +inf (1 * inf) or -inf
    (0 * -inf) entry makes it NaN or infinite."""
    n = x.shape[0]
    if n <= chunk:
        return _level_chunk(x, nonneg, a, scale)
    parts = np.empty((_chunks(n, chunk), 3))
    if threaded:
        _level_chunks_threaded(x, nonneg, a, scale, chunk, parts)
    else:
        _level_chunks(x, nonneg, a, scale, chunk, parts)
    k, g, h = parts[0, 0], parts[0, 1], parts[0, 2]
    for c in range(1, parts.shape[0]):
        k += parts[c, 0]
        g += parts[c, 1]
        h += parts[c, 2]
    return k, g, h


@njit(cache=True, error_model="numpy")
def _band_chunk(x, nonneg, lo, hi, c, sce, buf):
    """:func:`_band_pass` over x (one chunk, or all of a short vector; a
    slice, as in :func:`_level_chunk`), the band gathered into buf, of x's
    length. Returns (kb, ks, s1, s2)."""
    n = x.shape[0]
    head = n - n % _LANES
    r0 = _zeroed(numba.carray(stack_lanes(_LANES), _LANES))
    r1 = _zeroed(numba.carray(stack_lanes(_LANES), _LANES))
    r2 = _zeroed(numba.carray(stack_lanes(_LANES), _LANES))
    kb = 0
    for i in range(0, head, _LANES):
        inband = False
        for j in range(_LANES):
            v = x[i + j] if nonneg else abs(x[i + j])
            up = v > hi
            w = 1.0 if up else 0.0
            e = (v - c) * sce
            p = w * e
            r0[j] += w
            r1[j] += p
            r2[j] += p * e
            inband |= (v > lo) ^ up
        if inband:
            for j in range(_LANES):
                v = x[i + j] if nonneg else abs(x[i + j])
                buf[kb] = v
                kb += (v > lo) ^ (v > hi)
    ks = _fold(r0)
    s1 = _fold(r1)
    s2 = _fold(r2)
    for i in range(head, n):
        v = x[i] if nonneg else abs(x[i])
        e = (v - c) * sce
        if v > hi:
            ks += 1.0
            s1 += e
            s2 += e * e
        elif v > lo:
            buf[kb] = v
            kb += 1
    return kb, ks, s1, s2


def _band_chunks_body(x, nonneg, lo, hi, c, sce, buf, chunk, parts):
    """parts[c] = (kb, ks, s1, s2) of chunk c (:func:`_band_chunk`)."""
    n = x.shape[0]
    for q in prange(parts.shape[0]):
        i0 = q * chunk
        i1 = min(i0 + chunk, n)
        kb, ks, s1, s2 = _band_chunk(x[i0:i1], nonneg, lo, hi, c, sce, buf[i0:i1])
        parts[q, 0] = kb
        parts[q, 1] = ks
        parts[q, 2] = s1
        parts[q, 3] = s2


_band_chunks = njit(cache=True, error_model="numpy")(_band_chunks_body)
_band_chunks_threaded = njit(parallel=True, error_model="numpy")(_band_chunks_body)


@njit(cache=True, error_model="numpy")
def _band_pass(x, nonneg, lo, hi, c, sce, buf, chunk, threaded):
    """One pass over y: the count ks and the moments s1 = sum(e), s2 = sum(e^2),
    e = (y - c) * sce, of the sure part y > hi; and the band lo < y <= hi
    gathered into buf, in order. Returns (kb, ks, s1, s2).

    The masked sums run in the lane rows (a vectorised map) with a flag for
    the block of 16 entries; only a block with a band entry is copied, by a
    branch-free loop (a store with a running index in the summing loop would
    make it scalar). By chunks of ``chunk`` entries (:func:`_chunks`), on all
    threads if ``threaded``: each chunk gathers its band at its own offset,
    and the pieces are then moved together in order. The input must be
    known finite: a NaN entry is in neither part.
    """
    n = x.shape[0]
    if n <= chunk:
        return _band_chunk(x, nonneg, lo, hi, c, sce, buf)
    parts = np.empty((_chunks(n, chunk), 4))
    if threaded:
        _band_chunks_threaded(x, nonneg, lo, hi, c, sce, buf, chunk, parts)
    else:
        _band_chunks(x, nonneg, lo, hi, c, sce, buf, chunk, parts)
    kb = int(parts[0, 0])
    ks, s1, s2 = parts[0, 1], parts[0, 2], parts[0, 3]
    for q in range(1, parts.shape[0]):
        start = q * chunk
        for j in range(int(parts[q, 0])):
            buf[kb + j] = buf[start + j]
        kb += int(parts[q, 0])
        ks += parts[q, 1]
        s1 += parts[q, 2]
        s2 += parts[q, 3]
    return kb, ks, s1, s2


@njit(cache=True, error_model="numpy")
def _write_chunk(x, nonneg, mm, t, c, sce, dbar, l2, out):
    """out = l2 * max(s(y), 0), with x's signs for the signed variant (a
    vectorised map; a chunk is passed as slices)."""
    for i in range(x.shape[0]):
        v = x[i] if nonneg else abs(x[i])
        s = mm + t * ((v - c) * sce - dbar)
        out[i] = l2 * s if s > 0.0 else 0.0
    if not nonneg:
        for i in range(x.shape[0]):
            if x[i] < 0.0:
                out[i] = -out[i]


def _write_chunks_body(x, nonneg, mm, t, c, sce, dbar, l2, out, chunk):
    n = x.shape[0]
    for q in prange(_chunks(n, chunk)):
        i0 = q * chunk
        i1 = min(i0 + chunk, n)
        _write_chunk(x[i0:i1], nonneg, mm, t, c, sce, dbar, l2, out[i0:i1])


_write_chunks = njit(cache=True, error_model="numpy")(_write_chunks_body)
_write_chunks_threaded = njit(parallel=True, error_model="numpy")(_write_chunks_body)


@njit(cache=True, error_model="numpy")
def _band_around(z, n, level, step, k, g, h, scale, spread):
    """The band (lo, hi] around the Newton step from ``level`` (``step`` in x's
    units; k, g, h the level's sums in units of ``scale``): (ok, centre, lo, hi).

    The step's error is about psi'' D^2 / (2 |psi'|), D the step, with
    psi'' = f / sqrt(h) - 3 g (k h - g^2) / h^(5/2) (f the density of y at the
    threshold: from g' = -k, h' = -2 g, k' = -f), that is

        E = D^2 / 2 * (f h / (k h - g^2) - 3 g / h),

    positive (alpha above the landing point) where psi is convex, negative
    in a gap or a flat cluster. The band is centred on the corrected point
    and holds max(E1 / 2, 3 |E| / 2) plus _BAND_MARGIN entries on each side,
    E1 the first term alone, an upper bound of |E| on every input measured
    (6-10 times the error on |N(0, 1)|, exponential, uniform and two-level
    vectors; up to three times the corrected point's). The density f is the
    sample's, in the narrowest window around the landing point (grown by
    doubling) that holds _DENSITY_COUNT sample entries.
    """
    m = z.shape[0]
    new = level + step
    w = abs(step)
    if not w > 0.0:
        w = spread / m
    if not w > 0.0:
        return False, new, new, new
    count = 0
    for _ in range(64):
        count = 0
        for i in range(m):
            count += abs(z[i] - new) <= w
        if count >= _DENSITY_COUNT or w >= spread:
            break
        w *= 2.0
    # Entries per unit of d = (y - level) * scale.
    density = max(count, 1.0) * (n / m) / (2.0 * w * scale)
    d = step * scale
    first = 0.5 * d * d * density * h / (k * h - g * g)
    error = first - 1.5 * d * d * g / h
    half = max(_BAND_SPREAD * first, 1.5 * abs(error)) + _BAND_MARGIN / density
    centre = new + error / scale
    if not (math.isfinite(centre) and math.isfinite(half)):
        return False, new, new, new
    return True, centre, centre - half / scale, centre + half / scale


@njit(cache=True, error_model="numpy")
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


@njit(cache=True, error_model="numpy")
def _solve_band(buf, kb, ks, s1, s2, rho, c, sce):
    """The paper's passes on the band buf[:kb] (compacted in place) plus the sure
    part (ks entries, moments s1, s2 about c).

    Returns (status, passes, m, t, dbar, c, a0, b0, c0): status 0 solved, 1 a
    guard failed (fall back), 2 the band and the sure part hold too few
    entries for rho (the threshold is below the band), 3 solved but with c
    too far from the support's mean for the last step's accuracy (the band
    pass is to be repeated with a better pilot); a0, b0 the moments of the
    sure part and the whole band about c0, taken before any entry left.

    The moments are about the pilot c. The step that ends the passes (no
    entry leaves) must lose at most one bit to cancellation, as in the exact
    kernel; a step that drops entries may lose up to eight (a wide band below
    the support moves the mean of the first steps away from c), which can
    misplace only entries within about 1e-13 of the threshold.
    """
    passes = 0
    a0 = b0 = 0.0
    c0 = c
    while True:
        if ks == 0 and kb > 0:
            # No sure part: centre at the band's own mean (exact two-pass moments).
            c = c + _band_moments(buf, kb, c, 1.0)[0] / kb
        a, b = _band_moments(buf, kb, c, sce)
        a += s1
        b += s2
        if passes == 0:
            a0, b0, c0 = a, b, c
        k = ks + kb
        r2 = 1.0 - rho * rho / k if k > 0 else 0.0
        if r2 <= r2_flat:
            return 2, passes, 0.0, 0.0, 0.0, c, a0, b0, c0
        dbar = a / k
        if not (a * dbar <= _CANCELLATION_STEP * b):
            return 1, passes, 0.0, 0.0, 0.0, c, a0, b0, c0
        c2 = b - a * dbar
        if not (c2 > _MIN_C2):
            return 1, passes, 0.0, 0.0, 0.0, c, a0, b0, c0
        m = rho / k
        t = math.sqrt(r2 / c2)
        passes += 1
        keep = 0
        for i in range(kb):
            v = buf[i]
            buf[keep] = v
            keep += 1 if m + t * ((v - c) * sce - dbar) > 0.0 else 0
        if keep == kb:
            if not (a * dbar <= _CANCELLATION * b):
                # The support's mean is too far from c: status 3 with c moved
                # there, for a band pass with that pilot.
                return 3, passes, m, t, dbar, c, a0, b0, c0
            return 0, passes, m, t, dbar, c, a0, b0, c0
        kb = keep


@njit(cache=True, error_model="numpy")
def _sums_about(level, ks, s1, s2, c, sce):
    """(g, h) of the ks entries with moments s1, s2 about c (units sce),
    re-expressed about ``level``: for a Newton step only."""
    shift = (level - c) * sce
    return s1 - ks * shift, s2 - 2.0 * shift * s1 + ks * shift * shift


@njit(cache=True, error_model="numpy")
def _next_band(z, zlo, zhi, n, level, k, g, h, scale, rho, below, above):
    """From a level's exact sums (k, g, h in units of ``scale``): the bracket
    (below, above) narrowed by the side the level is on, the Newton step, and
    the band around where it lands (:func:`_band_around`), clipped to the
    bracket. Returns (ok, new, lo, hi, below, above).

    psi is flat where the threshold sits in a gap below a cluster and steep
    inside the cluster; its tangent from the flat side then overshoots. The
    step is then replaced: from below, by the paper's step on the support
    y > level (:func:`_hoyer_level`), which lands in [level, alpha], with the
    band up to the tangent's landing point; from above, by the bracket's
    sample median, with the whole bracket as the band (the band pass gathers
    a band the sample expects to be small, else the next level pass starts
    at the new level).
    """
    from_below = not (k == 0.0 or g < rho * math.sqrt(h))
    if from_below:
        below = max(below, level)
    else:
        above = min(above, level)
    step = _newton_step(k, g, h, rho) / scale
    new = level + step
    safe = _hoyer_level(level, k, g, h, scale, rho) if from_below else np.nan
    # From below, a tangent that goes more than twice as far as the paper's
    # step overshoots (on the inputs measured, where psi is convex, the two
    # land within 10 % of each other's distance). From above, one that more
    # than quadruples the support (in the sample) is taken for an overshoot
    # too (a small support near the top, where psi is steep).
    if from_below:
        trusted = not (new - level > _OVERSHOOT * (safe - level))
    else:
        grown = _GROWTH * _count_above(z, level) + _GROWTH_SLACK
        trusted = _count_above(z, new) <= grown
    if below < new < above and trusted:
        ok, centre, lo, hi = _band_around(z, n, level, step, k, g, h, scale, zhi - zlo)
        if ok and below < centre < above:
            return True, centre, max(lo, below), min(hi, above), below, above
    if below <= safe < above:
        top = new if below < new < above else above
        return True, safe, safe, top, below, above
    # The sample's median of the bracket (within the sample's range), or
    # from above at most a fourfold support.
    lo = max(below, zlo)
    hi = min(above, zhi)
    if not lo < hi:
        if not (math.isfinite(below) and math.isfinite(above)):
            return False, level, level, level, below, above
        return True, 0.5 * (below + above), below, above, below, above
    rank = 0.5 * (_count_above(z, lo) + _count_above(z, hi))
    if not from_below:
        rank = min(rank, _GROWTH * _count_above(z, level) + _GROWTH_SLACK)
    new = _select(z, lo, hi, rank)
    return True, new, below if from_below else new, above, below, above


@njit(cache=True, error_model="numpy")
def _hoyer_level(level, k, g, h, scale, rho):
    """The threshold of the paper's step on the support y > level (sums k, g,
    h in units of ``scale``): with the support a superset of the
    projection's, it is at most the projection's threshold (the entries the
    step drops are never in the support; Thom & Palm 2013). NaN if the
    support is too small for rho (k <= rho^2) or flat."""
    r2 = 1.0 - rho * rho / k
    c2 = h - g * g / k
    if not (r2 > 0.0 and c2 > 0.0):
        return np.nan
    # s(y) = rho / k + t * (d - g / k), d = (y - level) * scale, is 0 at:
    return level + (g / k - (rho / k) / math.sqrt(r2 / c2)) / scale


@njit(cache=True, error_model="numpy")
def bracket_shape_into(x, nonneg, rho, l1, l2, out, guide, threaded=False):
    """Project x (length n >= BRACKET_MIN_N, 1 < rho < sqrt(n)) into out by
    bracketing the threshold (module docstring), with x's signs for the signed
    variant. ``guide``: the support size to expect, or 0; it moves only the
    first level, so only the speed and the last bits depend on it.
    ``threaded``: run the passes' chunks (:data:`CHUNK`) on all of numba's
    threads (the same result). Returns the number of passes (full passes over
    x plus the exact passes on the band), or -1 when the caller must use the
    exact kernel instead (nothing useful in out)."""
    return shape_into(x, nonneg, rho, l1, l2, out, guide, MAX_PASSES, CHUNK, threaded)


@njit(cache=True, error_model="numpy")
def shape_into(x, nonneg, rho, l1, l2, out, guide, max_passes, chunk=CHUNK, threaded=False):
    """:func:`bracket_shape_into` with the number of level and band passes
    allowed (tests force a fallback with 1: one level pass, no band pass) and
    the chunk length of the passes (tests compare chunks against one)."""
    passes, mm, t, c, sce, dbar = shape_map(
        x, nonneg, rho, l1, l2, out, guide, max_passes, chunk, threaded
    )
    if passes < 0:
        return -1
    if threaded:
        _write_chunks_threaded(x, nonneg, mm, t, c, sce, dbar, l2, out, chunk)
    else:
        _write_chunk(x, nonneg, mm, t, c, sce, dbar, l2, out)
    return passes


@njit(cache=True, error_model="numpy", inline="always")
def shape_value(v, nonneg, mm, t, c, sce, dbar, l2):
    """The projection's entry for an entry v of x, given the map of
    :func:`shape_map`: l2 * max(s(|v|), 0) with v's sign (as the write pass)."""
    y = v if nonneg else abs(v)
    s = mm + t * ((y - c) * sce - dbar)
    r = l2 * s if s > 0.0 else 0.0
    return -r if (not nonneg) and v < 0.0 else r


@njit(cache=True, error_model="numpy")
def shape_map(x, nonneg, rho, l1, l2, scratch, guide, max_passes, chunk, threaded):
    """The passes of :func:`shape_into` without the write: (passes, mm, t, c,
    sce, dbar), the projection being l2 * max(mm + t * ((y - c) * sce - dbar), 0)
    (:func:`shape_value`); passes = -1 where the exact kernel must decide.
    ``scratch`` (n entries) takes the band."""
    out = scratch
    n = x.shape[0]
    z, zlo, zhi, finite = _sample(x, nonneg, n)
    if not finite or zhi <= zlo:
        return -1, 0.0, 0.0, 0.0, 1.0, 0.0
    m = z.shape[0]
    if 0 < guide <= n:
        level = _select(z, zlo, zhi, guide * m / n)
    else:
        level = _sample_threshold(z, zlo, zhi, rho * math.sqrt(m / n))
    spread = zhi - zlo
    scale = power_of_two_scale(spread)
    # The threshold lies in (below, above]: psi(below) > rho > psi(above).
    below = -np.inf
    above = np.inf
    lo = hi = c = level
    passes = 0
    level_passes = 0
    do_level = True
    solved = False
    mm = t = dbar = 0.0
    sce = 1.0
    keep_pilot = False
    for _ in range(max_passes):
        passes += 1
        if do_level:
            level_passes += 1
            k, g, h = _level_pass(x, nonneg, level, scale, chunk, threaded)
            if not (math.isfinite(g) and math.isfinite(h)):
                # A NaN or +-inf entry (or an overflow) makes g NaN or infinite.
                return -1, 0.0, 0.0, 0.0, 1.0, 0.0
            if k > 0.0:
                # A pilot centre where the sample has too few entries: the
                # mean of the entries above the level.
                c = level + g / k / scale
            ok, level, lo, hi, below, above = _next_band(
                z, zlo, zhi, n, level, k, g, h, scale, rho, below, above
            )
        else:
            if _count_above(z, hi) * (n / m) * _SMALL_SURE_PART <= n:
                # Few entries above the band: gather them too, so that the
                # band's moments are taken about its own mean (the pilot
                # centre can be a spread away from a small support's mean).
                hi = np.inf
            if not keep_pilot:
                c = _pilot(z, zhi, lo, c)
            keep_pilot = False
            sce = power_of_two_scale(max(zhi - max(lo, zlo), spread / m))
            kb, ks, s1, s2 = _band_pass(x, nonneg, lo, hi, c, sce, out, chunk, threaded)
            status, band_passes, mm, t, dbar, c_used, a0, b0, c0 = _solve_band(
                out, kb, int(ks), s1, s2, rho, c, sce
            )
            if status == 1:
                return -1, 0.0, 0.0, 0.0, 1.0, 0.0
            passes += band_passes
            if status == 3:
                # Repeat the band pass with a pilot nearer the support's mean.
                threshold = c_used + (dbar - mm / t) / sce
                c = _pilot(z, zhi, threshold, c_used + dbar / sce)
                keep_pilot = True
                do_level = False
                continue
            # Verify: everything above hi kept, everything at or below lo
            # dropped (status 2: too few entries above lo for rho).
            high_ok = status == 2 or ks == 0 or mm + t * ((hi - c_used) * sce - dbar) > 0.0
            low_ok = status == 0 and (
                n - ks - kb == 0 or mm + t * ((lo - c_used) * sce - dbar) <= 0.0
            )
            if high_ok and low_ok:
                c = c_used
                solved = True
                break
            if not high_ok:
                # The threshold is above hi: step from hi, whose sums are known.
                k = ks
                g, h = _sums_about(hi, ks, s1, s2, c, sce)
                level = hi
            else:
                # The threshold is at or below lo: step from lo, above which
                # everything was summed (the sure part and the whole band).
                k = ks + kb
                g, h = _sums_about(lo, k, a0, b0, c0, sce)
                level = lo
            ok, level, lo, hi, below, above = _next_band(
                z, zlo, zhi, n, level, k, g, h, sce, rho, below, above
            )
        if not ok:
            return -1, 0.0, 0.0, 0.0, 1.0, 0.0
        # A band the sample expects to hold more than n / _MAX_BAND_SHARE
        # entries asks for another level pass (at most _MAX_LEVEL_PASSES).
        expected = (_count_above(z, lo) - _count_above(z, hi)) * (n / m)
        do_level = expected * _MAX_BAND_SHARE > n and level_passes < _MAX_LEVEL_PASSES
    if not solved:
        return -1, 0.0, 0.0, 0.0, 1.0, 0.0
    # Input that (nearly) meets the targets already is the exact kernel's to
    # decide (it returns it unchanged): then l2 * s(v) = v on the support, at
    # its mean and at its top.
    top = max(zhi, hi)
    near = True
    for v in (c, top):
        near &= abs(l2 * (mm + t * ((v - c) * sce - dbar)) - v) <= _NEAR_FEASIBLE * abs(top)
    if near:
        return -1, 0.0, 0.0, 0.0, 1.0, 0.0
    return passes + 1, mm, t, c, sce, dbar


@njit(cache=True, error_model="numpy")
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
