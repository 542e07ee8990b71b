r"""The projection in one cooperative launch: every Hoyer pass on the whole
grid (Numba CUDA); the host side is :mod:`nmfsc.gpu_backend.fused`
(``form="grid"``).

The four-launch form (:mod:`nmfsc.gpu_backend.cuda_kernels`) runs the
passes after the second on one block per row: a row's passes then read at
the rate of one multiprocessor, and a projection of a few long rows (the
accelerated solver's, one row at a time) leaves the rest of the GPU idle.
Here every pass is spread over the whole grid, as the first two are
there, and the passes are separated by a grid-wide barrier
(``cuda.cg.this_grid().sync()``, which needs a cooperative launch: every
block resident at once, so the host launches at most
``max_cooperative_grid_blocks`` blocks and each takes the tiles ``block,
block + blocks, ...``). One launch:

0. the rows' ticket counters and ``active`` set to 0, and a barrier;
1. the first pass over every tile (row r, chunk c): ``first_sums``'s
   block (:func:`~nmfsc.gpu_backend.cuda_kernels.pass_kernels`'s
   ``first_tile``), the row's fate and first threshold decided by its last
   block to finish (a ticket counter per row);
2. barrier; then while any row is still ``ACTIVE`` (``active[p]``, the
   rows left active by pass p, counted by the rows' last blocks), pass p +
   1 over the tiles of the active rows, and a barrier;
3. the norm :math:`\lVert \max(a - \alpha, 0) \rVert` over the tiles of
   the settled rows, :math:`\beta` and the condition test (``FALLBACK``)
   decided by each row's last block; a barrier;
4. the result, ``scale``'s block (``scale_tile``) over every tile.

Every barrier is reached by every block the same number of times: the
loop's test reads ``active``, which no block writes after the barrier
before it.

The passes after the first keep their support in a buffer B of the rows'
shape, lane by lane: thread t of a tile keeps the entries of its lane
(``c * chunk + t + j * threads``, j < ``per_lane``) that lie above the
threshold in the lane's first places, in their order, and their number
in ``held``. The second pass reads the rows and keeps; a later pass reads
B (the support only shrinks), and keeps (rewrites B in place) only where
the support of the pass before is below
:data:`~nmfsc.gpu_backend.cuda_kernels.COMPACT_BELOW` of what B holds, as
``solve_rows`` decides, or reads the rows again where its threshold fell
below the level B was kept at. Each thread reads and sums its lane's
entries in the lane's order whether they come from the rows or from B,
and a tile's sums are added by the same tree, so every pass's partials
are those of ``second_sums`` at the same threshold, bit for bit, and a
row's result does not depend on the number of blocks, nor on what B
holds. The rows add their partials in the same order too.

Per row, the kernels share ``rows`` and ``fates`` as the four-launch form
does, with more columns: :data:`KEPT` (the level B was kept at),
:data:`STORED` (the entries B holds) and :data:`MODE` (whether the next
pass reads the rows, :data:`FROM_ROWS`, and keeps, :data:`KEEP`).

For Numba's CUDA simulator, whose cooperative grids have one block, the
same phases run also as one plain kernel each (``first_step``,
``pass_step``, ``norm_step``, ``scale_step``) on a grid of many blocks,
the launch itself being the barrier (they take the counters at 0): the
tests hold both to the same bits.
"""

from __future__ import annotations

import math
from functools import cache

from numba import cuda, float64, int64

from nmfsc.gpu_backend.cuda_kernels import (
    ACTIVE,
    ALPHA,
    BETA,
    COMPACT_BELOW,
    CONDITION,
    DONE,
    FALLBACK,
    FATE,
    L1,
    L2,
    PASSES,
    READ,
    SETTLED,
    SIZE,
    SOLVE_THREADS,
    STUCK,
    UNROLL,
    WRITTEN,
    after_pass,
    pass_kernels,
)
from nmfsc.gpu_backend.thresholds import KAPPA_MAX

__all__ = [
    "FATE_COLUMNS",
    "FROM_ROWS",
    "KEEP",
    "KEPT",
    "MODE",
    "ROW_COLUMNS",
    "STORED",
    "grid_kernels",
]

#: ``rows``'s column beyond the four-launch form's: the threshold B's
#: entries were kept above.
KEPT = 5
#: Columns of ``rows``.
ROW_COLUMNS = 6
#: ``fates``'s columns beyond the four-launch form's: the entries B holds;
#: the next pass's mode.
STORED, MODE = 6, 7
#: Columns of ``fates``.
FATE_COLUMNS = 8
#: The bits of a row's mode: the next pass reads the rows (not B); it
#: keeps its support in B.
FROM_ROWS, KEEP = 1, 2


@cache
def grid_kernels(threads, per_lane=16):
    """The one-launch form's kernels for blocks of ``threads`` threads (a
    power of two) per tile of ``threads * per_lane`` entries: a namespace
    with ``project`` (the cooperative kernel) and the phases as kernels of
    their own, ``first_step``, ``pass_step``, ``norm_step`` and
    ``scale_step`` (the simulator's multi-block form, module docstring)."""
    base = pass_kernels(threads, max(threads, SOLVE_THREADS), per_lane)
    first_tile, scale_tile = base.first_tile, base.scale_tile
    last_block, row_totals, write_partials = base.last_block, base.row_totals, base.write_partials
    chunk = threads * per_lane

    @cuda.jit(device=True)
    def lane_count(A, held, r, c, t, from_rows):
        """The entries of thread t's lane of tile (r, c): of the rows
        (``from_rows``), or those B holds for it."""
        if not from_rows:
            return held[r, c * threads + t]
        start = c * chunk + t
        n = A.shape[1]
        return min(per_lane, (n - start + threads - 1) // threads) if start < n else 0

    @cuda.jit(device=True)
    def load_lane(A, B, r, c, t, signed, from_rows, first, count, values):
        """Entries ``first``, ..., ``first + UNROLL - 1`` of thread t's lane
        of tile (r, c) into ``values``, of the rows (``from_rows``;
        :math:`|x|` where ``signed``) or of B, every load issued before any
        is used; NaN (which compares false) from ``count`` on."""
        start = c * chunk + t
        for q in range(UNROLL):
            j = first + q
            x = math.nan
            if j < count:
                if from_rows:
                    x = float64(A[r, start + j * threads])
                    if signed:
                        x = abs(x)
                else:
                    x = float64(B[r, start + j * threads])
            values[q] = x

    @cuda.jit(device=True)
    def pass_tile(A, B, held, r, c, t, signed, rows, fates, partials, active, p, limit, shared):
        """Pass p over tile (r, c) of an active row: its partials, its
        support kept in B where the row's mode says so, and in the row's
        last block the row's next threshold, mode and fate (and
        ``active[p]`` counts it while it stays active)."""
        counts_out, sums_out = partials
        counts, sums, flag, values = shared
        alpha = rows[r, ALPHA]
        mode = fates[r, MODE]
        from_rows = (mode & FROM_ROWS) != 0
        keep = (mode & KEEP) != 0
        count = lane_count(A, held, r, c, t, from_rows)
        start = c * chunk + t
        k = 0
        s1 = 0.0
        s2 = 0.0
        for first in range(0, count, UNROLL):
            load_lane(A, B, r, c, t, signed, from_rows, first, count, values)
            for q in range(UNROLL):
                x = values[q]
                if x > alpha:
                    if keep:  # in place: places up to first + q are read already
                        B[r, start + k * threads] = x
                    k += 1
                    s1 += x
                    s2 += x * x
        if keep:
            held[r, c * threads + t] = k
        write_partials(r, c, t, k, 0, s1, s2, counts, sums, counts_out, sums_out)
        if not last_block(fates, r, t, counts_out.shape[1], flag):
            return
        k, _, s1, s2 = row_totals(counts_out, sums_out, r, t, counts, sums)
        if t != 0:
            return
        stored = fates[r, STORED]
        kept_level = rows[r, KEPT]
        passes = fates[r, PASSES] + 1
        read = fates[r, READ] + (A.shape[1] if from_rows else stored)
        written = fates[r, WRITTEN]
        if keep:  # B holds this pass's support, kept at its threshold
            stored = k
            kept_level = alpha
            written += k
        here, new, condition = after_pass(k, s1, s2, rows[r, L1] / rows[r, L2], fates[r, SIZE])
        if here == ACTIVE and passes >= limit:
            here = STUCK
        # B holds the entries above kept_level: the next pass reads it where
        # its threshold is not lower (always, but for rounding), else the
        # rows, and then keeps again.
        again = not new >= kept_level
        mode = 0
        if again:
            mode = FROM_ROWS | KEEP
        elif k < COMPACT_BELOW * stored:
            mode = KEEP
        rows[r, ALPHA] = new
        rows[r, CONDITION] = condition
        rows[r, KEPT] = kept_level
        fates[r, FATE] = here
        fates[r, SIZE] = k
        fates[r, PASSES] = passes
        fates[r, READ] = read
        fates[r, WRITTEN] = written
        fates[r, STORED] = stored
        fates[r, MODE] = mode
        fates[r, DONE] = 0  # for the next pass
        if here == ACTIVE:
            cuda.atomic.add(active, p, 1)

    @cuda.jit(device=True)
    def norm_tile(A, B, held, r, c, t, signed, rows, fates, partials, shared):
        """Tile (r, c) of a settled row: its part of
        :math:`\\lVert \\max(a - \\alpha, 0) \\rVert^2`, and in the row's
        last block :math:`\\beta` and the condition test."""
        counts_out, sums_out = partials
        counts, sums, flag, values = shared
        alpha = rows[r, ALPHA]
        from_rows = (fates[r, MODE] & FROM_ROWS) != 0
        count = lane_count(A, held, r, c, t, from_rows)
        ss = 0.0
        for first in range(0, count, UNROLL):
            load_lane(A, B, r, c, t, signed, from_rows, first, count, values)
            for q in range(UNROLL):
                z = values[q] - alpha
                if z > 0:
                    ss += z * z
        write_partials(r, c, t, 0, 0, ss, 0.0, counts, sums, counts_out, sums_out)
        if not last_block(fates, r, t, counts_out.shape[1], flag):
            return
        _, _, ss, _ = row_totals(counts_out, sums_out, r, t, counts, sums)
        if t != 0:
            return
        norm = math.sqrt(ss)
        beta = rows[r, L2] / (norm if norm > 0 else 1.0)
        rows[r, BETA] = beta
        if not rows[r, CONDITION] * beta / rows[r, L1] <= KAPPA_MAX:
            fates[r, FATE] = FALLBACK
        fates[r, READ] += A.shape[1] if from_rows else fates[r, STORED]
        fates[r, DONE] = 0

    @cuda.jit(device=True)
    def reset_counters(fates, active, block, blocks):
        """The rows' ticket counters and ``active`` to 0, whatever a launch
        cut short left there (the first phase counts from 0)."""
        t = cuda.threadIdx.x
        for r in range(block * threads + t, fates.shape[0], blocks * threads):
            fates[r, DONE] = 0
        if block == 0:
            for p in range(t, active.shape[0], threads):
                active[p] = 0

    @cuda.jit(device=True)
    def first_phase(A, signed, nonneg, rows, fates, partials, active, block, blocks, shared):
        """The first pass over every tile; each row's last block also sets
        the row's mode for the second pass (read the rows, keep) and counts
        it in ``active[1]`` if it is active."""
        counts_out, sums_out = partials
        chunks = counts_out.shape[1]
        t = cuda.threadIdx.x
        for tile in range(block, A.shape[0] * chunks, blocks):
            r = tile // chunks
            c = tile - r * chunks
            if first_tile(A, r, c, t, signed, nonneg, rows, fates, counts_out, sums_out, shared):
                rows[r, KEPT] = math.inf  # B holds nothing yet
                fates[r, STORED] = 0
                fates[r, MODE] = FROM_ROWS | KEEP
                if fates[r, FATE] == ACTIVE:
                    cuda.atomic.add(active, 1, 1)

    @cuda.jit(device=True)
    def pass_phase(
        A, B, held, signed, rows, fates, partials, active, p, limit, block, blocks, shared
    ):
        """Pass p over the tiles of the rows still active."""
        chunks = partials[0].shape[1]
        t = cuda.threadIdx.x
        for tile in range(block, A.shape[0] * chunks, blocks):
            r = tile // chunks
            if fates[r, FATE] == ACTIVE:  # the same for every thread of the block
                c = tile - r * chunks
                pass_tile(
                    A, B, held, r, c, t, signed, rows, fates, partials, active, p, limit, shared
                )

    @cuda.jit(device=True)
    def norm_phase(A, B, held, signed, rows, fates, partials, block, blocks, shared):
        """The norm over the tiles of the settled rows."""
        chunks = partials[0].shape[1]
        t = cuda.threadIdx.x
        for tile in range(block, A.shape[0] * chunks, blocks):
            r = tile // chunks
            if fates[r, FATE] == SETTLED:
                norm_tile(
                    A, B, held, r, tile - r * chunks, t, signed, rows, fates, partials, shared
                )

    @cuda.jit(device=True)
    def scale_phase(A, signed, rows, fates, S, block, blocks, values):
        """The result over every tile."""
        chunks = -(-A.shape[1] // chunk)
        t = cuda.threadIdx.x
        for tile in range(block, A.shape[0] * chunks, blocks):
            r = tile // chunks
            scale_tile(A, r, tile - r * chunks, t, signed, rows, fates, S, values)

    @cuda.jit
    def project(A, B, held, signed, nonneg, rows, fates, counts_out, sums_out, active, limit, S):
        grid = cuda.cg.this_grid()
        block = cuda.blockIdx.x
        blocks = cuda.gridDim.x
        partials = (counts_out, sums_out)
        # Declared in each kernel: the simulator's device functions cannot.
        shared = (
            cuda.shared.array((2, threads), int64),
            cuda.shared.array((2, threads), float64),
            cuda.shared.array(1, int64),
            cuda.local.array(UNROLL, float64),
        )
        reset_counters(fates, active, block, blocks)
        grid.sync()
        first_phase(A, signed, nonneg, rows, fates, partials, active, block, blocks, shared)
        grid.sync()
        p = 1
        while active[p] != 0:  # no block writes active[p] after the barrier before
            p += 1
            pass_phase(
                A, B, held, signed, rows, fates, partials, active, p, limit, block, blocks, shared
            )
            grid.sync()
        norm_phase(A, B, held, signed, rows, fates, partials, block, blocks, shared)
        grid.sync()
        scale_phase(A, signed, rows, fates, S, block, blocks, shared[3])

    @cuda.jit
    def first_step(A, signed, nonneg, rows, fates, counts_out, sums_out, active):
        # Declared in each kernel: the simulator's device functions cannot.
        shared = (
            cuda.shared.array((2, threads), int64),
            cuda.shared.array((2, threads), float64),
            cuda.shared.array(1, int64),
            cuda.local.array(UNROLL, float64),
        )
        first_phase(
            A,
            signed,
            nonneg,
            rows,
            fates,
            (counts_out, sums_out),
            active,
            cuda.blockIdx.x,
            cuda.gridDim.x,
            shared,
        )

    @cuda.jit
    def pass_step(A, B, held, signed, rows, fates, counts_out, sums_out, active, p, limit):
        # Declared in each kernel: the simulator's device functions cannot.
        shared = (
            cuda.shared.array((2, threads), int64),
            cuda.shared.array((2, threads), float64),
            cuda.shared.array(1, int64),
            cuda.local.array(UNROLL, float64),
        )
        pass_phase(
            A,
            B,
            held,
            signed,
            rows,
            fates,
            (counts_out, sums_out),
            active,
            p,
            limit,
            cuda.blockIdx.x,
            cuda.gridDim.x,
            shared,
        )

    @cuda.jit
    def norm_step(A, B, held, signed, rows, fates, counts_out, sums_out):
        # Declared in each kernel: the simulator's device functions cannot.
        shared = (
            cuda.shared.array((2, threads), int64),
            cuda.shared.array((2, threads), float64),
            cuda.shared.array(1, int64),
            cuda.local.array(UNROLL, float64),
        )
        norm_phase(
            A,
            B,
            held,
            signed,
            rows,
            fates,
            (counts_out, sums_out),
            cuda.blockIdx.x,
            cuda.gridDim.x,
            shared,
        )

    @cuda.jit
    def scale_step(A, signed, rows, fates, S):
        values = cuda.local.array(UNROLL, float64)
        scale_phase(A, signed, rows, fates, S, cuda.blockIdx.x, cuda.gridDim.x, values)

    return _GridKernels(project, first_step, pass_step, norm_step, scale_step)


class _GridKernels:
    """The one-launch form's kernels of one layout (:func:`grid_kernels`)."""

    def __init__(self, project, first_step, pass_step, norm_step, scale_step):
        self.project = project
        self.first_step = first_step
        self.pass_step = pass_step
        self.norm_step = norm_step
        self.scale_step = scale_step
