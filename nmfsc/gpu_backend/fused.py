r"""The projection of many rows with fused CUDA kernels: a few passes over
the rows' memory, where the array code of
:mod:`nmfsc.gpu_backend.device_projection` makes about ten per Hoyer pass.

The kernels (:mod:`nmfsc.gpu_backend.cuda_kernels`, Numba CUDA) read CuPy's
arrays in place (``__cuda_array_interface__``) and run on CuPy's current
stream. The memory traffic, in whole passes over the rows (n entries
each), of a projection that takes P passes whose supports are
:math:`k_1 > k_2 > \dots` entries:

- the first pass (threshold :math:`-\infty`) reads the rows once; it also
  gives each row's total, norm, and whether it is finite and
  non-negative, so the "already meets the targets" test costs nothing
  more;
- a later pass reads the rows again, or the entries a buffer B of the
  rows' size holds (each thread its own slots, in the rows' order): the
  support of an earlier pass, a superset of its own, since the support
  only shrinks (a row whose threshold falls, by rounding, reads the rows
  again). Where the support of the pass before is below
  :data:`~nmfsc.gpu_backend.cuda_kernels.COMPACT_BELOW` (three quarters)
  of what the pass reads, the pass also keeps its own support in B (in
  place when it reads B): a write of :math:`k_p` entries that spares the
  later passes the entries it drops. So a pass costs :math:`b` entries
  read, plus :math:`k_p` written where it keeps, with :math:`b` the rows'
  n or B's last kept support;
- the norm of :math:`\max(a - \alpha, 0)` reads B (or the rows);
- the result: one read of every row and one write, in the dtype asked
  for (the solvers ask for the rows' own: float32 rows get a float32 result).

Keeping only where the support has shrunk that far costs less than
keeping it at every pass (benchmarks/README.md has the count on an
``nmf_sc`` run's trials); the array code makes about ten passes per Hoyer
pass. Every sum is the same, added in the same order, as if each pass
read the whole rows.
The host reads one integer every :data:`CHECK_EVERY` passes (the rows
still moving in the last) to know when to stop, so that it queues the
launches of the passes between while the GPU runs the ones before; a
pass after every row has settled changes nothing (its blocks leave at
once). The rare rows take the array code's paths, on those rows only: a
row whose passes do not settle gets its threshold from its sorted
entries (:func:`~nmfsc.gpu_backend.thresholds.thresholds_by_sort`), one
with no consistent support in floating point, or whose threshold cannot
give an accurate result (nearly equal entries on its support:
:func:`~nmfsc.gpu_backend.thresholds.condition_parts`), is projected by
the CPU kernel (copied to the host and back), and a row at sparseness 1
gets :math:`L_2` at its first largest entry. The result is that of
:func:`~nmfsc.gpu_backend.device_projection.project_rows` to rounding (the sums
are added in another order).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from nmfsc._array_api import to_host
from nmfsc.gpu_backend import cuda_kernels as K
from nmfsc.gpu_backend.thresholds import (
    condition_parts,
    max_passes,
    support_moments,
    thresholds_by_sort,
)
from nmfsc.projection import project

__all__ = ["BLOCK", "CHUNK_PER_THREAD", "layout", "project_rows_fused", "release_workspaces"]

#: Threads per block, at most (fewer for short rows).
BLOCK = 256
#: Entries each thread reads per (row, chunk): a chunk is ``threads * 16``
#: entries (4,096 for long rows), so a row of 10^6 takes 245 blocks.
CHUNK_PER_THREAD = 16
#: Chunks per row, at most (CUDA's limit on a grid's y dimension).
MAX_CHUNKS = 65_535
#: Passes launched between two host reads of the rows still moving.
CHECK_EVERY = 2


def layout(n):
    """``(threads, chunk)`` for rows of n entries: a power of two from 32 to
    :data:`BLOCK` threads, chunks of ``threads * CHUNK_PER_THREAD`` entries.
    A function of n only, so a row's sums are added in the same order on
    every launch."""
    threads = 32
    while threads < BLOCK and threads * CHUNK_PER_THREAD < n:
        threads *= 2
    chunk = threads * CHUNK_PER_THREAD
    if n > MAX_CHUNKS * chunk:  # a grid's second dimension holds at most 65,535 blocks
        chunk = -(-n // (MAX_CHUNKS * threads)) * threads
    return threads, chunk


class _Launcher:
    """Kernels launched on CuPy's current stream, on CuPy arrays viewed as
    Numba device arrays (each viewed once: a view costs host time at
    every launch), or, under Numba's CUDA simulator, on NumPy arrays as
    they are. Each (kernel, grid, block) is specialised to its arguments'
    types and configured at its first launch, and launched as such after:
    Numba's typing of the arguments and its launch configuration cost
    host time at every launch, which a pass of a fraction of a
    millisecond would otherwise wait on. A specialised kernel takes its
    arguments as the types it was compiled for, unchecked, so a launcher
    serves one workspace, whose key (:func:`_workspace`) fixes the dtype
    of every array passed; the scalars are passed as Python bools and
    ints."""

    def __init__(self, xp):
        from numba import cuda

        self.cuda = cuda
        self.simulated = xp is np
        if self.simulated:
            self.stream = 0
        else:
            pointer = xp.cuda.get_current_stream().ptr
            self.stream = cuda.external_stream(pointer) if pointer else cuda.default_stream()
        self.configured = {}

    def view(self, array):
        """The array as the kernels take it (no copy, no synchronisation)."""
        if self.simulated:
            return array
        return self.cuda.as_cuda_array(array, sync=False)

    def __call__(self, kernel, grid, block, *args):
        key = (kernel, grid, block)
        configured = self.configured.get(key)
        if configured is None:
            # Numba's simulator has no specialisation; its kernels take any types.
            typed = kernel if self.simulated else kernel.specialize(*args)
            configured = self.configured[key] = typed[grid, block, self.stream]
        configured(*args)


class _Workspace:
    """The fused projection's arrays for rows of one shape and dtype, their
    device views and the configured kernels (:class:`_Launcher`), kept
    from one projection to the next of the same rows (an ``nmf_sc`` run
    projects its trials' rows, of one shape, many times): a view and a
    configuration cost host time, tens of microseconds each, of which a
    projection would otherwise spend a millisecond on twenty arrays and
    five kernels. Only the rows X, the result S and the buffer B (X's
    size) are viewed at each projection. Kept per GPU, CuPy stream and
    host thread (:func:`_workspace`), so that no two projections share
    one at the same time.

    Per row: its targets ``l1``, ``l2``; its threshold ``alpha``, ``state``
    (``cuda_kernels.ACTIVE`` ...), support ``size`` at the last pass,
    ``factor`` (beta); where its passes read (``from_a``), whether the next
    keeps its support (``compact``), the size and threshold of the support
    B holds (``stored``, ``kept_level``), its ``condition``; per pass, the
    rows still ``moving``; per (row, chunk), the partials (``parts``: count,
    S1, S2, odd) and per thread the entries it ``kept`` in B."""

    def __init__(self, xp, count, chunks, threads, limit):
        self.launch = _Launcher(xp)
        self.l1, self.l2, self.alpha, self.factor, self.kept_level, self.condition = (
            xp.empty(count) for _ in range(6)
        )
        self.state, self.from_a, self.compact = (xp.empty(count, dtype=xp.int32) for _ in range(3))
        self.size, self.stored = (xp.empty(count, dtype=xp.int64) for _ in range(2))
        self.moving = xp.empty(limit, dtype=xp.int64)
        self.kept = xp.empty((count, chunks, threads), dtype=xp.int32)
        self.parts = [xp.empty((count, chunks), dtype=d) for d in (xp.int64, float, float)]
        self.parts.append(xp.empty((count, chunks), dtype=xp.int64))
        self.views = {
            name: self.launch.view(getattr(self, name))
            for name in (
                "l1",
                "l2",
                "alpha",
                "factor",
                "kept_level",
                "condition",
                "state",
                "from_a",
                "compact",
                "size",
                "stored",
                "moving",
                "kept",
            )
        }
        self.views["parts"] = [self.launch.view(part) for part in self.parts]

    def reset(self, l1, l2):
        """The start of a projection to the targets ``l1``, ``l2``."""
        self.l1[...] = l1
        self.l2[...] = l2
        for array, value in (
            (self.alpha, -np.inf),
            (self.factor, 1.0),
            (self.kept_level, -np.inf),
            (self.condition, np.inf),
            (self.state, K.ACTIVE),
            (self.from_a, 1),
            (self.compact, 0),
            (self.size, -1),
            (self.stored, 0),
            (self.moving, 0),
            (self.kept, 0),
        ):
            array.fill(value)


#: Workspaces kept (:func:`_workspace`), the last used last.
_WORKSPACES: OrderedDict = OrderedDict()
#: Workspaces kept at most: an ``nmf_sc`` run with both factors constrained
#: projects rows of two shapes in turn.
KEEP_WORKSPACES = 4


#: Guards :data:`_WORKSPACES` (projections in several host threads).
_WORKSPACES_LOCK = threading.Lock()


def release_workspaces():
    """Drop the workspaces this host thread keeps (:func:`_workspace`),
    their memory going back to CuPy's pool: at the end of a run and of a
    public projection
    (:func:`nmfsc.gpu_backend.device_projection.release_fused_workspaces`).
    Other threads' workspaces stay, for their runs."""
    me = threading.get_ident()
    with _WORKSPACES_LOCK:
        for key in [key for key in _WORKSPACES if key[1] == me]:
            del _WORKSPACES[key]


def _workspace(xp, X, dtype, chunks, threads, limit):
    """The :class:`_Workspace` for projecting X (its shape and dtype) into
    ``dtype`` with this layout, on this GPU, CuPy stream and host thread:
    kept from the last such projection, or made (the least recently used
    of :data:`KEEP_WORKSPACES` is dropped)."""
    if xp is np:
        place = None
    else:
        place = (X.device.id, xp.cuda.get_current_stream().ptr)
    key = (place, threading.get_ident(), X.shape, X.dtype, dtype, chunks, threads)
    with _WORKSPACES_LOCK:
        workspace = _WORKSPACES.pop(key, None)
    if workspace is None:
        workspace = _Workspace(xp, X.shape[0], chunks, threads, limit)
    with _WORKSPACES_LOCK:
        _WORKSPACES[key] = workspace
        while len(_WORKSPACES) > KEEP_WORKSPACES:
            _WORKSPACES.popitem(last=False)
    return workspace


def project_rows_fused(
    xp,
    X,
    l1,
    l2,
    nonneg=True,
    *,
    dtype=None,
    threads=None,
    chunk=None,
    row_threads=None,
    check_every=CHECK_EVERY,
    info=None,
):
    """:func:`nmfsc.gpu_backend.device_projection.project_rows` by the fused
    kernels: ``(S, finite)``, S of X's shape in ``dtype`` (float64 by
    default; the kernels compute each entry in float64 and store it
    rounded once), NaN in the rows that are not finite, ``finite`` a
    boolean per row. ``xp`` is ``cupy`` on a
    GPU, or ``numpy`` under Numba's CUDA simulator (the tests).
    ``threads`` and ``chunk`` override :func:`layout`, and ``row_threads``
    :data:`~nmfsc.gpu_backend.cuda_kernels.ROW_THREADS` (the tests use small
    ones). ``check_every``: passes between the host's reads of the rows
    still moving (:data:`CHECK_EVERY`; the result does not depend on it;
    with ``info``, every pass is read). A dict ``info`` receives
    ``passes`` (Hoyer passes taken),
    ``sorted`` and ``on_cpu`` (rows that took those paths), ``read`` and
    ``written`` (entries the passes read and kept): the benchmark's account
    of the memory traffic (counting them costs time: not for timed calls)."""
    if check_every < 1:
        raise ValueError(f"check_every must be at least 1, got {check_every!r}")
    if xp is np:
        return _project_rows(
            xp, X, l1, l2, nonneg, dtype, threads, chunk, row_threads, check_every, info
        )
    from numba import cuda

    # CuPy's device (where the workspace's arrays are made) and Numba's
    # context: the array's GPU, whatever GPU is current.
    with X.device, cuda.gpus[X.device.id]:
        return _project_rows(
            xp, X, l1, l2, nonneg, dtype, threads, chunk, row_threads, check_every, info
        )


def _project_rows(xp, X, l1, l2, nonneg, dtype, threads, chunk, row_threads, check_every, info):
    if X.dtype != xp.float32:  # float32 rows stay float32; their sums are float64
        X = X.astype(xp.float64, copy=False)
    X = xp.ascontiguousarray(X)
    count, n = X.shape
    if threads is None or chunk is None:
        threads, chunk = layout(n)
    chunks = -(-n // chunk)
    row_threads = K.ROW_THREADS if row_threads is None else row_threads
    kernels = K.pass_kernels(threads, row_threads)
    nonneg = bool(nonneg)  # the kernels' boolean arguments (see _Launcher)
    signed = not nonneg
    l1 = xp.ascontiguousarray(l1, dtype=xp.float64)
    l2 = xp.ascontiguousarray(l2, dtype=xp.float64)
    limit = max_passes(n)
    S = xp.empty((count, n), dtype=xp.float64 if dtype is None else dtype)
    work = _workspace(xp, X, S.dtype, chunks, threads, limit)
    work.reset(l1, l2)
    launch = work.launch
    # The arrays CuPy reads and writes below, and the kernels' views of them.
    alpha, state, moving, condition = work.alpha, work.state, work.moving, work.condition
    from_a, compact, kept = work.from_a, work.compact, work.kept
    v = work.views
    l1_, l2_, alpha_, state_, moving_, factor_ = (
        v[name] for name in ("l1", "l2", "alpha", "state", "moving", "factor")
    )
    size_, from_a_, compact_, kept_, stored_ = (
        v[name] for name in ("size", "from_a", "compact", "kept", "stored")
    )
    kept_level_, condition_, parts = v["kept_level"], v["condition"], v["parts"]
    # The support's entries, kept by each thread in its own slots of its
    # chunk, so that later passes read only them (the support shrinks).
    x_, s_, b_ = map(launch.view, (X, S, xp.empty_like(X)))
    traffic = [0, 0]  # entries read and written by the passes (only with ``info``)
    grid = (count, chunks)
    per_row = (count, row_threads)  # the per-row kernels: a block for each row
    for p in range(limit):
        if info is not None:
            active = state == K.ACTIVE
            keeps = active & (compact == 1)
            in_b = kept.sum(axis=(1, 2))
            traffic[0] += int(xp.sum(xp.where(active, xp.where(from_a == 1, n, in_b), 0)))
        launch(
            kernels.support_sums,
            grid,
            threads,
            x_,
            b_,
            kept_,
            from_a_,
            compact_,
            signed,
            alpha_,
            state_,
            chunk,
            *parts,
        )
        launch(
            kernels.finish_pass,
            *per_row,
            *parts,
            l1_,
            l2_,
            p == 0,
            nonneg,
            n,
            alpha_,
            size_,
            state_,
            moving_,
            p,
            from_a_,
            compact_,
            stored_,
            kept_level_,
            condition_,
        )
        if info is not None:
            traffic[1] += int(xp.sum(xp.where(keeps, kept.sum(axis=(1, 2)), 0)))
        due = info is not None or (p + 1) % check_every == 0
        if due and int(moving[p]) == 0:
            break
    passes = p + 1  # exact with ``info``, where every pass is read
    fates = to_host(state)
    unsettled = np.flatnonzero((fates == K.ACTIVE) | (fates == K.STUCK))
    if unsettled.size:
        rows = xp.asarray(unsettled)
        A = X[rows] if nonneg else xp.abs(X[rows])
        rho = l1[rows] / l2[rows]
        threshold, found = thresholds_by_sort(xp, A, rho)
        alpha[rows] = xp.where(found, threshold, 0.0)
        state[rows] = xp.where(found, K.SETTLED, K.FALLBACK).astype(xp.int32)
        moments = support_moments(xp, A, alpha[rows])
        condition[rows] = condition_parts(xp, *moments, alpha[rows], rho)
        # Read the rows from here on: B holds (at most) a pass's support, not
        # the sort's, and a stuck row's kept_level may not describe it.
        from_a[rows] = 1
    ss_part = parts[1]  # the S1 partials are spent: the clipped norms' partials
    launch(
        kernels.clip_sums,
        grid,
        threads,
        x_,
        b_,
        kept_,
        from_a_,
        signed,
        alpha_,
        state_,
        chunk,
        ss_part,
    )
    launch(kernels.finish_norm, *per_row, ss_part, l1_, l2_, condition_, state_, factor_)
    launch(kernels.scale, grid, threads, x_, signed, alpha_, factor_, state_, chunk, s_)
    fates = to_host(state)  # finish_norm leaves ill-conditioned rows to the CPU
    single = np.flatnonzero(fates == K.SINGLE)
    if single.size:
        rows = xp.asarray(single)
        A = X[rows] if nonneg else xp.abs(X[rows])
        first = xp.argmax(A, axis=1)
        value = l2[rows] * xp.where(X[rows, first] < 0, -1.0, 1.0) if signed else l2[rows]
        S[rows, first] = value
    for r in np.flatnonzero(fates == K.FALLBACK):
        S[r] = xp.asarray(project(to_host(X[r]), float(l1[r]), float(l2[r]), nonneg=nonneg))
    if info is not None:
        info.update(
            passes=passes,
            sorted=int(unsettled.size),
            on_cpu=int(np.sum(fates == K.FALLBACK)),
            read=traffic[0],
            written=traffic[1],
        )
    return S, state != K.NONFINITE
