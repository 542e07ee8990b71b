r"""The fused projection's CUDA kernels (Numba CUDA); the host side is
:mod:`nmfsc.gpu_backend.fused`.

The rows are cut into chunks of ``chunk`` entries; a block of ``threads``
threads (a power of two) takes one (row, chunk): thread t reads the entries
``start + t, start + t + threads, ...`` (coalesced), sums them in float64
in that order, and the block's sums are combined by a tree in shared memory
(thread t adds thread t + h, for h = threads/2, ..., 1). Each (row, chunk)
writes its partial sums; a per-row kernel (a block of ``ROW_THREADS``
threads for each row) then adds a row's partials: thread t those of chunks
t, t + ROW_THREADS, ... in order, then the same tree. No sum uses
atomics, so the same rows, threads and chunk give the same bits on every
launch. (Only the count of rows still
moving is an atomic integer counter, which is exact.)

- :func:`pass_kernels` ``(threads).support_sums``: one Hoyer pass, for every
  row whose state is ``ACTIVE``: the support :math:`\{i : a_i > \alpha\}`'s
  count k, :math:`S_1 = \sum a_i`, :math:`S_2 = \sum a_i^2`, and ``odd``,
  the entries that are not finite (counted in units of ``NOT_FINITE``)
  plus those below 0. With :math:`\alpha = -\infty` (the first pass) S1 and
  S2 are the row's total and squared norm. A row reads its entries from A,
  or from B where B holds a support at a threshold no higher (``from_a``
  0); where ``compact`` is set, the pass keeps its support in B, each
  thread in its own slots in A's order (in place when it reads B).
- ``finish_pass``: per row, the partials' sums; after the first pass the
  row's fate (not finite, already meeting its targets, sparseness 1); then
  Hoyer's closed form :math:`\alpha_k = S_1/k - \rho \sqrt{(S_2 - S_1^2/k) /
  (k (k - \rho^2))}` with :math:`\rho = L_1 / L_2`. A row whose support
  did not change is ``SETTLED``; one with no room (:math:`k \le \rho^2`)
  or a threshold that is not finite is ``STUCK`` (it would never settle).
  It also decides the next pass's source (B where B still holds a superset
  of its support, else A) and whether the next pass keeps its support
  (``compact``: where this pass's support is below :data:`COMPACT_BELOW`
  of the entries the next one reads).
- ``clip_sums`` and ``finish_norm``: :math:`\lVert \max(a - \alpha, 0)
  \rVert` of the settled rows, then :math:`\beta = L_2 / \lVert\cdot\rVert`;
  a row whose condition :math:`\kappa`
  (:func:`nmfsc.gpu_backend.thresholds.condition_parts`, its support's
  part kept by ``finish_pass``) exceeds ``KAPPA_MAX`` is left to the CPU
  kernel (``FALLBACK``).
- ``scale``: the result, :math:`s = \beta \max(a - \alpha, 0)` (with x's
  signs for the signed variant), x itself for rows that meet their targets,
  NaN for rows that are not finite, 0 for the rest (the host fills them).

``a`` is x, or :math:`|x|` when ``signed``; float32 entries are read as
float64, so every sum is float64. These are the formulas and order of
:func:`nmfsc.gpu_backend.thresholds.thresholds_by_passes`, whose array code
the tests hold them to (under Numba's CUDA simulator).

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
    "COMPACT_BELOW",
    "FALLBACK",
    "MEETS",
    "NOT_FINITE",
    "NONFINITE",
    "ROW_THREADS",
    "SETTLED",
    "SINGLE",
    "STUCK",
    "pass_kernels",
]

#: A row's state: still passing; settled (its threshold found); stuck (no
#: pass will settle it: the sort decides); already meeting its targets;
#: sparseness 1; not finite; left to the CPU kernel (no consistent support).
ACTIVE, SETTLED, STUCK, MEETS, SINGLE, NONFINITE, FALLBACK = range(7)
#: The unit in which ``odd`` counts entries that are not finite (below it:
#: the entries < 0).
NOT_FINITE = 1 << 32
#: Threads of the per-row kernels' blocks (``finish_pass``, ``finish_norm``):
#: one block per row adds the row's partials.
ROW_THREADS = 32
#: "Already meets the targets" and "sparseness 1", relative (the CPU kernels').
FEASIBLE_RTOL = 1e-13
#: A pass keeps its support in B (rewrites it, compacted) when the support
#: of the pass before is below this fraction of the entries it reads: a
#: rewrite costs a write of the support and saves the next passes' reads
#: of the entries it drops.
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
    each, with one barrier per level for the four, not one for each."""

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


@cache
def pass_kernels(threads, row_threads=ROW_THREADS):
    """The kernels for blocks of ``threads`` threads per (row, chunk) and
    ``row_threads`` per row (:data:`ROW_THREADS`; both powers of two:
    shared arrays need them as constants; the tests use small ones): a
    namespace with ``support_sums``, ``finish_pass``, ``clip_sums``,
    ``finish_norm`` and ``scale``."""
    for name, value in (("threads", threads), ("row_threads", row_threads)):
        if value < 1 or value & (value - 1):
            raise ValueError(f"{name} must be a power of two, got {value}")

    tree_sum, tree_sums = _trees(threads)
    row_tree_sum, row_tree_sums = _trees(row_threads)

    @cuda.jit
    def support_sums(
        A, B, kept, from_a, compact, signed, alpha, state, chunk, count_out, s1_out, s2_out, odd_out
    ):
        r = cuda.blockIdx.x
        c = cuda.blockIdx.y
        t = cuda.threadIdx.x
        if state[r] != ACTIVE:  # the whole block leaves: no barrier is skipped by half of it
            return
        n = A.shape[1]
        start = c * chunk
        end = min(start + chunk, n)
        level = alpha[r]
        keep = compact[r] != 0
        k = 0
        s1 = 0.0
        s2 = 0.0
        odd = 0
        w = 0  # the support's entries this thread keeps in B (its slots, in order)
        if from_a[r]:
            i = start + t
            while i < end:
                x = float64(A[r, i])
                if signed:
                    x = abs(x)
                if x > level:
                    k += 1
                    s1 += x
                    s2 += x * x
                    if keep:
                        B[r, start + t + w * threads] = x
                        w += 1
                if not math.isfinite(x):
                    odd += NOT_FINITE
                elif x < 0:
                    odd += 1
                i += threads
        else:  # B holds a support at most this one's level: this thread's entries, in A's order
            for j in range(kept[r, c, t]):
                x = float64(B[r, start + t + j * threads])
                if x > level:
                    k += 1
                    s1 += x
                    s2 += x * x
                    if keep:
                        B[r, start + t + w * threads] = x  # w <= j: in place
                        w += 1
        if keep:
            kept[r, c, t] = w
        counts = cuda.shared.array((2, threads), int64)
        sums = cuda.shared.array((2, threads), float64)
        counts[0, t] = k
        counts[1, t] = odd
        sums[0, t] = s1
        sums[1, t] = s2
        tree_sums(counts, sums, t)
        if t == 0:
            count_out[r, c] = counts[0, 0]
            s1_out[r, c] = sums[0, 0]
            s2_out[r, c] = sums[1, 0]
            odd_out[r, c] = counts[1, 0]

    @cuda.jit
    def finish_pass(
        count_in,
        s1_in,
        s2_in,
        odd_in,
        l1,
        l2,
        first,
        nonneg,
        n,
        alpha,
        size,
        state,
        moving,
        p,
        from_a,
        compact,
        stored,
        kept_level,
        condition,
    ):
        r = cuda.blockIdx.x
        t = cuda.threadIdx.x
        if state[r] != ACTIVE:  # the whole block leaves
            return
        # The row's partials: thread t adds chunks t, t + row_threads, ...
        # in order, then the block's tree (the same bits every launch).
        counts = cuda.shared.array((2, row_threads), int64)
        sums = cuda.shared.array((2, row_threads), float64)
        k = 0
        s1 = 0.0
        s2 = 0.0
        odd = 0
        for c in range(t, count_in.shape[1], row_threads):
            k += count_in[r, c]
            s1 += s1_in[r, c]
            s2 += s2_in[r, c]
            odd += odd_in[r, c]
        counts[0, t] = k
        counts[1, t] = odd
        sums[0, t] = s1
        sums[1, t] = s2
        row_tree_sums(counts, sums, t)
        if t != 0:
            return
        k = counts[0, 0]
        odd = counts[1, 0]
        s1 = sums[0, 0]
        s2 = sums[1, 0]
        rho = l1[r] / l2[r]
        if first:
            if odd >= NOT_FINITE:
                state[r] = NONFINITE
                return
            if (
                abs(s1 - l1[r]) <= FEASIBLE_RTOL * l1[r]
                and abs(math.sqrt(s2) - l2[r]) <= FEASIBLE_RTOL * l2[r]
                and (odd == 0 or not nonneg)
            ):
                state[r] = MEETS
                return
            if abs(rho - 1.0) <= FEASIBLE_RTOL:
                state[r] = SINGLE
                return
        kf = float64(k)
        room = kf * (kf - rho * rho)
        if not room > 0:
            state[r] = STUCK
            return
        centred = max(s2 - s1 * s1 / kf, 0.0)
        new = s1 / kf - rho * math.sqrt(centred / room)
        if not math.isfinite(new):
            state[r] = STUCK
            return
        # B holds the entries above kept_level (the threshold of the last
        # pass that kept its support): the next pass reads it where its
        # threshold is not lower (always, but for rounding), else the rows.
        if compact[r]:
            stored[r] = k
            kept_level[r] = alpha[r]
            in_b = True
        else:
            in_b = from_a[r] == 0
        from_a[r] = 0 if in_b and new >= kept_level[r] else 1
        # Keep the next pass's support where this one is already well
        # below what the next pass reads (its support is at most this one).
        slots = stored[r] if from_a[r] == 0 else n
        compact[r] = 1 if kf < COMPACT_BELOW * float64(slots) else 0
        alpha[r] = new
        if k == size[r]:
            state[r] = SETTLED
            # thresholds.condition_parts of this support (k, s1, s2 and its
            # threshold), for finish_norm's test of the result's accuracy.
            if centred > 0:
                spread = (s2 / centred) * rho * math.sqrt(centred / room)
                condition[r] = kf * (abs(new) + abs(s1 / kf) + spread)
            else:
                condition[r] = math.inf
            return
        size[r] = k
        cuda.atomic.add(moving, p, 1)

    @cuda.jit
    def clip_sums(A, B, kept, from_a, signed, alpha, state, chunk, ss_out):
        r = cuda.blockIdx.x
        c = cuda.blockIdx.y
        t = cuda.threadIdx.x
        if state[r] != SETTLED:
            return
        n = A.shape[1]
        start = c * chunk
        end = min(start + chunk, n)
        level = alpha[r]
        ss = 0.0
        if from_a[r]:
            i = start + t
            while i < end:
                x = float64(A[r, i])
                if signed:
                    x = abs(x)
                z = x - level
                if z > 0:
                    ss += z * z
                i += threads
        else:  # the entries above the threshold are among B's, in A's order
            for j in range(kept[r, c, t]):
                z = float64(B[r, start + t + j * threads]) - level
                if z > 0:
                    ss += z * z
        ss = tree_sum(cuda.shared.array(threads, float64), t, ss)
        if t == 0:
            ss_out[r, c] = ss

    @cuda.jit
    def finish_norm(ss_in, l1, l2, condition, state, factor):
        r = cuda.blockIdx.x
        t = cuda.threadIdx.x
        if state[r] != SETTLED:  # the whole block leaves
            return
        ss = 0.0
        for c in range(t, ss_in.shape[1], row_threads):  # as finish_pass adds
            ss += ss_in[r, c]
        ss = row_tree_sum(cuda.shared.array(row_threads, float64), t, ss)
        if t != 0:
            return
        norm = math.sqrt(ss)
        beta = l2[r] / (norm if norm > 0 else 1.0)
        factor[r] = beta
        if not condition[r] * beta / l1[r] <= KAPPA_MAX:  # thresholds.condition_parts
            state[r] = FALLBACK

    @cuda.jit
    def scale(A, signed, alpha, factor, state, chunk, S):
        r = cuda.blockIdx.x
        c = cuda.blockIdx.y
        t = cuda.threadIdx.x
        n = A.shape[1]
        start = c * chunk
        end = min(start + chunk, n)
        fate = state[r]
        level = alpha[r]
        beta = factor[r]
        i = start + t
        while i < end:
            x = float64(A[r, i])
            a = abs(x) if signed else x
            if fate == SETTLED:
                z = a - level
                s = z * beta if z > 0 else 0.0
            elif fate == MEETS:
                s = a
            elif fate == NONFINITE:
                s = math.nan
            else:
                s = 0.0
            if signed and x < 0:
                s = -s
            S[r, i] = s
            i += threads

    return _Kernels(support_sums, finish_pass, clip_sums, finish_norm, scale)


class _Kernels:
    """The five kernels of one block size (:func:`pass_kernels`)."""

    def __init__(self, support_sums, finish_pass, clip_sums, finish_norm, scale):
        self.support_sums = support_sums
        self.finish_pass = finish_pass
        self.clip_sums = clip_sums
        self.finish_norm = finish_norm
        self.scale = scale
