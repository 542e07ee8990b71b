r"""The fused projection's CUDA kernels (Numba CUDA); the host side is
:mod:`nmfsc.gpu_backend.fused`.

A projection is four launches, whatever the number of Hoyer passes, with
no host read between them:

1. ``first_sums`` (a block for each (row, chunk)): the first pass
   (threshold :math:`-\infty`): each chunk's count of entries, its sums
   :math:`S_1 = \sum a_i` and :math:`S_2 = \sum a_i^2`, and ``odd``, the
   entries that are not finite (counted in units of ``NOT_FINITE``) plus
   those below 0. The last block of a row to finish (a ticket counter per
   row) adds the row's partials and decides the row's fate (not finite,
   already meeting its targets, sparseness 1, no room) and its first
   threshold, Hoyer's closed form :math:`\alpha = S_1/k - \rho \sqrt{(S_2
   - S_1^2/k) / (k (k - \rho^2))}`, :math:`\rho = L_1 / L_2`.
2. ``second_sums`` (the same grid): the second pass, the support
   :math:`\{i : a_i > \alpha\}`'s count and sums; the row's last block
   gives the next threshold and whether the support has settled.
3. ``solve_rows`` (a block of ``row_threads`` threads for each row): the
   rest of Hoyer's passes, until the support stops changing. The first
   reads the rows and keeps its support in a buffer B of the rows' size,
   each thread in its own slots; the later ones read B (the support only
   shrinks), and a pass rewrites B with its own support, in place, only
   where the support of the pass before is below :data:`COMPACT_BELOW` of
   what B holds. A row whose threshold falls below the level B was kept
   at (by rounding) reads the rows again for that pass, and keeps its
   support. Then :math:`\lVert \max(a - \alpha, 0) \rVert` (from B, or
   from the rows where B holds nothing, a row settled by the second pass,
   or too little, after such a fall), :math:`\beta = L_2 /
   \lVert\cdot\rVert`, and the condition test that
   leaves a row to the CPU kernel (``FALLBACK``:
   :func:`nmfsc.gpu_backend.thresholds.condition_parts` above
   ``KAPPA_MAX``). A row not settled in ``limit`` passes, or with no room
   (:math:`k \le \rho^2`), is ``STUCK``: the host gives it the array
   code's threshold.
4. ``scale`` (a block for each (row, chunk)): the result :math:`s = \beta
   \max(a - \alpha, 0)` (with x's signs for the signed variant), x itself
   for rows that meet their targets, NaN for rows that are not finite, 0
   for the rest (the host fills them).

The launches 1, 2 and 4 read the rows with every multiprocessor busy; 3
reads the rows once more, then only the kept supports, one block per row,
each thread with :data:`UNROLL` loads in flight and no other read between.

The layout: a row is cut into chunks of ``threads * per_lane`` entries,
and a chunk into ``threads`` lanes: lane t of chunk c holds the entries
``c * chunk + t + j * threads`` for ``j < per_lane`` (so a block of
``threads`` threads reads a chunk coalesced, thread t its lane, and sums
them in float64 in that order). A block's sums are combined by a tree in
shared memory (thread t adds thread t + h, for h = width/2, ..., 1), a
row's partials by its last block, thread t those of chunks t, t +
threads, ... in order, then the tree. In ``solve_rows``, thread u takes
the lanes u, u + row_threads, ... and their entries in that order, which
are also its slots in B. No sum uses atomics (only the tickets, integer
counters, are atomic), so the same rows and layout give the same bits on
every launch.

``a`` is x, or :math:`|x|` when ``signed``; float32 entries are read as
float64, so every sum is float64. These are the formulas of
:func:`nmfsc.gpu_backend.thresholds.thresholds_by_passes`, whose array
code the tests hold them to (under Numba's CUDA simulator).

Per row, the kernels share ``rows`` (float64, row x 5 at least: the
targets :math:`L_1, L_2`, the threshold :math:`\alpha`, :math:`\beta`
and the condition) and ``fates`` (int64, row x 6 at least: the fate, the
last support's size, the passes taken, the entries the passes read, the
entries they kept in B, and the row's ticket counter, 0 between
launches); :mod:`~nmfsc.gpu_backend.grid_kernels` adds columns.

Importing this module imports ``numba.cuda``; only
:mod:`nmfsc.gpu_backend.fused` does, when a CuPy array is projected.
"""

from __future__ import annotations

import math
from functools import cache

from numba import cuda, float64, int64

from nmfsc.gpu_backend.thresholds import KAPPA_MAX

__all__ = [
    "ACTIVE",
    "ALPHA",
    "BETA",
    "COMPACT_BELOW",
    "CONDITION",
    "DONE",
    "FALLBACK",
    "FATE",
    "L1",
    "L2",
    "MEETS",
    "NONFINITE",
    "NOT_FINITE",
    "PASSES",
    "READ",
    "SETTLED",
    "SINGLE",
    "SIZE",
    "SOLVE_THREADS",
    "STUCK",
    "UNROLL",
    "WRITTEN",
    "after_pass",
    "pass_kernels",
]

#: A row's fate: still passing; settled (its threshold found); stuck (no
#: pass will settle it: the sort decides); already meeting its targets;
#: sparseness 1; not finite; left to the CPU kernel (its threshold cannot
#: give an accurate result).
ACTIVE, SETTLED, STUCK, MEETS, SINGLE, NONFINITE, FALLBACK = range(7)
#: The columns of ``rows``.
L1, L2, ALPHA, BETA, CONDITION = range(5)
#: The columns of ``fates``.
FATE, SIZE, PASSES, READ, WRITTEN, DONE = range(6)
#: The unit in which ``odd`` counts entries that are not finite (below it:
#: the entries < 0).
NOT_FINITE = 1 << 32
#: Threads of ``solve_rows``'s blocks (one block per row), at most.
SOLVE_THREADS = 512
#: Entries each thread of ``solve_rows`` loads before it uses them: the
#: loads in flight that let one block per row read at a useful rate.
UNROLL = 8
#: "Already meets the targets" and "sparseness 1", relative (the CPU kernels').
FEASIBLE_RTOL = 1e-13
#: A pass of ``solve_rows`` rewrites B with its support when the support of
#: the pass before is below this fraction of what B holds (the support
#: only shrinks, so its own is too): a rewrite costs a write of the
#: support and saves the next passes' reads of the entries it drops.
COMPACT_BELOW = 0.75


@cache
def _trees(width):
    """Device functions that add a value of each of a block's ``width``
    threads (a power of two) by a tree in shared memory: thread t adds
    thread t + h's, for h = width/2, ..., 1 (a fixed order, so the same
    bits on every launch). ``tree_sum(shared, t, value)`` returns the
    block's sum of ``value``; ``tree_sums(counts, sums, t)`` adds each row
    of ``counts`` (2 x width, int64) and ``sums`` (2 x width, float64),
    whose column t thread t has written, into column 0: the same tree for
    each, with one barrier per level for the four, not one for each. Both
    end with a barrier, so every thread may read the sums after them,
    until the block writes its next values (a thread that reads them
    late, after another thread has gone on to the next tile, reads
    those: only thread 0's reads are used)."""

    @cuda.jit(device=True)
    def tree_sum(shared, t, value):
        shared[t] = value
        cuda.syncthreads()
        half = width // 2
        while half > 0:
            if t < half:
                shared[t] += shared[t + half]
            cuda.syncthreads()
            half //= 2
        return shared[0]

    @cuda.jit(device=True)
    def tree_sums(counts, sums, t):
        cuda.syncthreads()
        half = width // 2
        while half > 0:
            if t < half:
                counts[0, t] += counts[0, t + half]
                counts[1, t] += counts[1, t + half]
                sums[0, t] += sums[0, t + half]
                sums[1, t] += sums[1, t + half]
            cuda.syncthreads()
            half //= 2

    return tree_sum, tree_sums


@cuda.jit(device=True)
def _closed_form(k, s1, s2, rho):
    """Hoyer's threshold of a support of k entries with sums s1, s2 (NaN
    where there is no room, k <= rho^2)."""
    kf = float64(k)
    room = kf * (kf - rho * rho)
    if not room > 0:
        return math.nan
    centred = max(s2 - s1 * s1 / kf, 0.0)
    return s1 / kf - rho * math.sqrt(centred / room)


@cuda.jit(device=True)
def _condition(k, s1, s2, alpha, rho):
    """:func:`nmfsc.gpu_backend.thresholds.condition_parts` of one support."""
    kf = float64(k)
    room = kf * (kf - rho * rho)
    centred = s2 - s1 * s1 / kf
    if not (centred > 0 and room > 0):
        return math.inf
    spread = (s2 / centred) * rho * math.sqrt(centred / room)
    return kf * (abs(alpha) + abs(s1 / kf) + spread)


@cuda.jit(device=True)
def after_pass(k, s1, s2, rho, size):
    """A row's ``(fate, threshold, condition)`` after a pass whose support
    has k entries with sums s1, s2, where the pass before had ``size``:
    ``STUCK`` where the closed form gives no threshold, ``SETTLED`` (with
    the support's condition) where the support kept its size, else
    ``ACTIVE``; the condition is infinite unless settled."""
    new = _closed_form(k, s1, s2, rho)
    if not math.isfinite(new):
        return STUCK, new, math.inf
    if k == size:
        return SETTLED, new, _condition(k, s1, s2, new, rho)
    return ACTIVE, new, math.inf


@cache
def pass_kernels(threads, row_threads=SOLVE_THREADS, per_lane=16):
    """The kernels for blocks of ``threads`` threads per (row, chunk) of
    ``threads * per_lane`` entries and ``row_threads`` per row in
    ``solve_rows`` (``threads`` and ``row_threads`` powers of two: shared
    arrays need them as constants; the tests use small ones;
    ``row_threads`` a multiple of ``threads``): a namespace with
    ``first_sums``, ``second_sums``, ``solve_rows`` and ``scale``."""
    for name, value in (("threads", threads), ("row_threads", row_threads)):
        if value < 1 or value & (value - 1):
            raise ValueError(f"{name} must be a power of two, got {value}")
    if row_threads % threads:
        # Then a thread's slots run through the chunks in order, so that its
        # in-place compaction writes only slots within the row.
        raise ValueError(f"row_threads ({row_threads}) must be a multiple of threads ({threads})")
    if per_lane < 1:
        raise ValueError(f"per_lane must be at least 1, got {per_lane}")
    chunk = threads * per_lane

    _, tree_sums = _trees(threads)  # (the grid kernels add by tree_sums alone)
    row_tree_sum, row_tree_sums = _trees(row_threads)

    @cuda.jit(device=True)
    def last_block(fates, r, t, chunks, flag):
        """After a block's partials are written: whether it is the last of
        row r's blocks to finish (then every partial of the row is there).
        Every thread gets the answer (a barrier inside). The fences pair
        up: each block's (release) before its ticket, and the last block's
        (acquire) after it, before any of its threads reads the partials
        of the others."""
        if t == 0:
            cuda.threadfence()  # this block's partials, seen before its ticket
            ticket = cuda.atomic.add(fates, (r, DONE), 1)
            flag[0] = 1 if ticket == chunks - 1 else 0
        cuda.syncthreads()
        last = flag[0] == 1
        if last:
            cuda.threadfence()  # the others' partials, read after their tickets
        return last

    @cuda.jit(device=True)
    def row_totals(counts_in, sums_in, r, t, counts, sums):
        """The row's partials added: thread t those of chunks t, t +
        threads, ... in order, then the tree; (k, odd, s1, s2)."""
        k = 0
        odd = 0
        s1 = 0.0
        s2 = 0.0
        for j in range(t, counts_in.shape[1], threads):
            k += counts_in[r, j, 0]
            odd += counts_in[r, j, 1]
            s1 += sums_in[r, j, 0]
            s2 += sums_in[r, j, 1]
        counts[0, t] = k
        counts[1, t] = odd
        sums[0, t] = s1
        sums[1, t] = s2
        tree_sums(counts, sums, t)
        return counts[0, 0], counts[1, 0], sums[0, 0], sums[1, 0]

    @cuda.jit(device=True)
    def chunk_sums(A, r, c, t, signed, level, counts, sums, counts_out, sums_out, buffer):
        """This block's chunk of row r: the count, odd count and sums of its
        entries above ``level``, written as the chunk's partials."""
        n = A.shape[1]
        start = c * chunk
        end = min(start + chunk, n)
        k = 0
        odd = 0
        s1 = 0.0
        s2 = 0.0
        i = start + t
        while i < end:
            for q in range(UNROLL):  # the loads first, so that they are in flight together
                at = i + q * threads
                buffer[q] = float64(A[r, at]) if at < end else -math.inf
            for q in range(UNROLL):
                if i + q * threads < end:
                    x = buffer[q]
                    if signed:
                        x = abs(x)
                    if x > level:
                        k += 1
                        s1 += x
                        s2 += x * x
                    if not math.isfinite(x):
                        odd += NOT_FINITE
                    elif x < 0:
                        odd += 1
            i += UNROLL * threads
        write_partials(r, c, t, k, odd, s1, s2, counts, sums, counts_out, sums_out)

    @cuda.jit(device=True)
    def write_partials(r, c, t, k, odd, s1, s2, counts, sums, counts_out, sums_out):
        """The block's sums of each thread's (k, odd, s1, s2), by the tree,
        written as chunk c of row r's partials."""
        counts[0, t] = k
        counts[1, t] = odd
        sums[0, t] = s1
        sums[1, t] = s2
        tree_sums(counts, sums, t)
        if t == 0:
            counts_out[r, c, 0] = counts[0, 0]
            counts_out[r, c, 1] = counts[1, 0]
            sums_out[r, c, 0] = sums[0, 0]
            sums_out[r, c, 1] = sums[1, 0]
        cuda.syncthreads()  # the shared arrays are free again

    @cuda.jit(device=True)
    def first_tile(A, r, c, t, signed, nonneg, rows, fates, counts_out, sums_out, shared):
        """The first pass over chunk c of row r (``first_sums``'s block):
        its partials, and in the row's last block the row's fate and first
        threshold. ``shared`` is (counts, sums, flag, buffer), the block's
        scratch. Returns True in the thread that wrote the row's fate
        (thread 0 of the row's last block), False in every other."""
        counts, sums, flag, buffer = shared
        chunk_sums(A, r, c, t, signed, -math.inf, counts, sums, counts_out, sums_out, buffer)
        if not last_block(fates, r, t, counts_out.shape[1], flag):
            return False
        k, odd, s1, s2 = row_totals(counts_out, sums_out, r, t, counts, sums)
        if t != 0:
            return False
        l1 = rows[r, L1]
        l2 = rows[r, L2]
        rho = l1 / l2
        alpha = -math.inf
        if odd >= NOT_FINITE:
            here = NONFINITE
        elif (
            abs(s1 - l1) <= FEASIBLE_RTOL * l1
            and abs(math.sqrt(s2) - l2) <= FEASIBLE_RTOL * l2
            and (odd == 0 or not nonneg)
        ):
            here = MEETS
        elif abs(rho - 1.0) <= FEASIBLE_RTOL:
            here = SINGLE
        else:
            alpha = _closed_form(k, s1, s2, rho)
            here = ACTIVE if math.isfinite(alpha) else STUCK
        n = A.shape[1]
        rows[r, ALPHA] = alpha
        fates[r, FATE] = here
        fates[r, SIZE] = k
        fates[r, PASSES] = 1
        fates[r, READ] = n
        fates[r, WRITTEN] = 0
        fates[r, DONE] = 0  # for the next launch
        return True

    @cuda.jit
    def first_sums(A, signed, nonneg, rows, fates, counts_out, sums_out):
        shared = (
            cuda.shared.array((2, threads), int64),
            cuda.shared.array((2, threads), float64),
            cuda.shared.array(1, int64),
            cuda.local.array(UNROLL, float64),
        )
        first_tile(
            A,
            cuda.blockIdx.x,
            cuda.blockIdx.y,
            cuda.threadIdx.x,
            signed,
            nonneg,
            rows,
            fates,
            counts_out,
            sums_out,
            shared,
        )

    @cuda.jit
    def second_sums(A, signed, rows, fates, counts_out, sums_out):
        r = cuda.blockIdx.x
        c = cuda.blockIdx.y
        t = cuda.threadIdx.x
        if fates[r, FATE] != ACTIVE:  # the whole row leaves, ticket and all
            return
        counts = cuda.shared.array((2, threads), int64)
        sums = cuda.shared.array((2, threads), float64)
        flag = cuda.shared.array(1, int64)
        buffer = cuda.local.array(UNROLL, float64)
        level = rows[r, ALPHA]
        chunk_sums(A, r, c, t, signed, level, counts, sums, counts_out, sums_out, buffer)
        if not last_block(fates, r, t, counts_out.shape[1], flag):
            return
        k, _, s1, s2 = row_totals(counts_out, sums_out, r, t, counts, sums)
        if t != 0:
            return
        here, new, condition = after_pass(k, s1, s2, rows[r, L1] / rows[r, L2], fates[r, SIZE])
        fates[r, FATE] = here
        rows[r, CONDITION] = condition
        rows[r, ALPHA] = new
        fates[r, SIZE] = k
        fates[r, PASSES] = 2
        fates[r, READ] = 2 * A.shape[1]
        fates[r, DONE] = 0

    @cuda.jit(device=True)
    def slot(u, p):
        """Where thread u's p-th slot is in a row: its lanes u, u +
        row_threads, ... in order, each lane's entries in order."""
        i = p // per_lane
        lane = u + i * row_threads
        c = lane // threads
        return c * chunk + (lane - c * threads) + (p - i * per_lane) * threads

    @cuda.jit(device=True)
    def load_slots(A, B, r, u, p, slots, from_a, buffer):
        """Thread u's slots p, ..., p + UNROLL - 1 of the rows (``from_a``)
        or of B into ``buffer``, every load issued before any is used (so
        that they are in flight together); NaN, which compares false, past
        its ``slots`` or the row's end."""
        n = A.shape[1]
        for q in range(UNROLL):
            x = math.nan
            if p + q < slots:
                at = slot(u, p + q)
                if from_a:
                    if at < n:
                        x = float64(A[r, at])
                else:
                    x = float64(B[r, at])
            buffer[q] = x

    @cuda.jit(device=True)
    def slot_sums(A, B, r, u, slots, from_a, keep, signed, alpha, buffer):
        """Thread u's entries above alpha, from its slots of the rows
        (``from_a``) or its first ``slots`` slots of B: (count, S1, S2), in
        its slots' order; where ``keep``, they are kept in its slots of B
        (in place: a slot is written only once read). Returns also the
        count kept."""
        k = 0
        s1 = 0.0
        s2 = 0.0
        w = 0
        p = 0
        while p < slots:
            load_slots(A, B, r, u, p, slots, from_a, buffer)
            for q in range(UNROLL):
                x = buffer[q]
                if signed:
                    x = abs(x)
                if x > alpha:
                    k += 1
                    s1 += x
                    s2 += x * x
                    if keep:
                        B[r, slot(u, w)] = x
                        w += 1
            p += UNROLL
        return k, s1, s2, w

    @cuda.jit(device=True)
    def slot_clipped(A, B, r, u, slots, from_a, signed, alpha, buffer):
        """Thread u's sum of :math:`(a - \\alpha)^2` over its entries above alpha."""
        ss = 0.0
        p = 0
        while p < slots:
            load_slots(A, B, r, u, p, slots, from_a, buffer)
            for q in range(UNROLL):
                x = buffer[q]
                if signed:
                    x = abs(x)
                z = x - alpha
                if z > 0:
                    ss += z * z
            p += UNROLL
        return ss

    @cuda.jit
    def solve_rows(A, B, signed, rows, fates, limit):
        r = cuda.blockIdx.x
        u = cuda.threadIdx.x
        here = fates[r, FATE]
        if here != ACTIVE and here != SETTLED:  # the whole block leaves
            return
        n = A.shape[1]
        lanes = ((n + chunk - 1) // chunk) * threads
        mine = (lanes - u + row_threads - 1) // row_threads if u < lanes else 0
        everything = mine * per_lane  # this thread's slots of the rows
        counts = cuda.shared.array((2, row_threads), int64)
        sums = cuda.shared.array((2, row_threads), float64)
        # [threshold]; [go on, read the rows, keep], written by thread 0 between barriers.
        control = cuda.shared.array(1, float64)
        switches = cuda.shared.array(3, int64)
        buffer = cuda.local.array(UNROLL, float64)
        rho = rows[r, L1] / rows[r, L2]
        alpha = rows[r, ALPHA]
        held = 0  # this thread's entries in B
        from_a = True
        keep = True
        # Thread 0's record of the row (only it reads them).
        size = fates[r, SIZE]
        stored = 0
        kept_level = math.inf
        passes = fates[r, PASSES]
        read = fates[r, READ]
        written = fates[r, WRITTEN]
        condition = rows[r, CONDITION]
        go = here == ACTIVE
        while go:
            k, s1, s2, w = slot_sums(
                A, B, r, u, everything if from_a else held, from_a, keep, signed, alpha, buffer
            )
            if keep:
                held = w
            counts[0, u] = k
            counts[1, u] = 0
            sums[0, u] = s1
            sums[1, u] = s2
            row_tree_sums(counts, sums, u)
            if u == 0:
                k = counts[0, 0]
                s1 = sums[0, 0]
                s2 = sums[1, 0]
                passes += 1
                read += n if from_a else stored
                if keep:  # B holds this pass's support, kept at its threshold
                    stored = k
                    kept_level = alpha
                    written += k
                here, new, condition = after_pass(k, s1, s2, rho, size)
                if here == ACTIVE and passes >= limit:
                    here = STUCK
                more = 1 if here == ACTIVE else 0
                size = k
                # B holds the entries above kept_level: the next pass (or the
                # norm) reads it where its threshold is not lower (always,
                # but for rounding), else the rows, and then keeps again.
                again = not new >= kept_level
                control[0] = new
                switches[0] = more
                switches[1] = 1 if again else 0
                switches[2] = 1 if again or k < COMPACT_BELOW * stored else 0
            cuda.syncthreads()
            go = switches[0] == 1
            alpha = control[0]
            from_a = switches[1] == 1
            keep = switches[2] == 1
            cuda.syncthreads()  # every thread has read the switches before thread 0 writes again
        if u == 0:  # thread 0's fate, for every thread
            fates[r, FATE] = here
            fates[r, PASSES] = passes
            fates[r, WRITTEN] = written
            fates[r, READ] = read
            switches[0] = 1 if here == SETTLED else 0
        cuda.syncthreads()
        if switches[0] == 0:  # stuck: the host sorts
            return
        ss = slot_clipped(A, B, r, u, everything if from_a else held, from_a, signed, alpha, buffer)
        ss = row_tree_sum(cuda.shared.array(row_threads, float64), u, ss)
        if u == 0:
            norm = math.sqrt(ss)
            beta = rows[r, L2] / (norm if norm > 0 else 1.0)
            rows[r, ALPHA] = alpha
            rows[r, BETA] = beta
            if not condition * beta / rows[r, L1] <= KAPPA_MAX:
                fates[r, FATE] = FALLBACK
            fates[r, READ] = read + (n if from_a else stored)

    @cuda.jit(device=True)
    def scale_tile(A, r, c, t, signed, rows, fates, S, buffer):
        """``scale``'s block: chunk c of row r's result."""
        n = A.shape[1]
        start = c * chunk
        end = min(start + chunk, n)
        here = fates[r, FATE]
        alpha = rows[r, ALPHA]
        beta = rows[r, BETA]
        i = start + t
        while i < end:
            for q in range(UNROLL):  # the loads first, so that they are in flight together
                at = i + q * threads
                buffer[q] = float64(A[r, at]) if at < end else 0.0
            for q in range(UNROLL):
                at = i + q * threads
                if at < end:
                    x = buffer[q]
                    a = abs(x) if signed else x
                    if here == SETTLED:
                        z = a - alpha
                        s = z * beta if z > 0 else 0.0
                    elif here == MEETS:
                        s = a
                    elif here == NONFINITE:
                        s = math.nan
                    else:
                        s = 0.0
                    if signed and x < 0:
                        s = -s
                    S[r, at] = s
            i += UNROLL * threads

    @cuda.jit
    def scale(A, signed, rows, fates, S):
        buffer = cuda.local.array(UNROLL, float64)
        scale_tile(
            A, cuda.blockIdx.x, cuda.blockIdx.y, cuda.threadIdx.x, signed, rows, fates, S, buffer
        )

    return _Kernels(
        first_sums,
        second_sums,
        solve_rows,
        scale,
        device=(first_tile, scale_tile, last_block, row_totals, write_partials),
    )


class _Kernels:
    """The four kernels of one layout (:func:`pass_kernels`), and the device
    functions of its blocks that :mod:`nmfsc.gpu_backend.grid_kernels`
    builds on: ``first_tile``, ``scale_tile``, ``last_block``,
    ``row_totals`` and ``write_partials``."""

    def __init__(self, first_sums, second_sums, solve_rows, scale, device):
        self.first_sums = first_sums
        self.second_sums = second_sums
        self.solve_rows = solve_rows
        self.scale = scale
        (
            self.first_tile,
            self.scale_tile,
            self.last_block,
            self.row_totals,
            self.write_partials,
        ) = device
