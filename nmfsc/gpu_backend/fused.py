r"""The projection of many rows with fused CUDA kernels: four launches per
projection, or one (the "grid" form, :func:`project_rows_fused`),
whatever the number of Hoyer passes, with no host read
between them, where the array code of
:mod:`nmfsc.gpu_backend.device_projection` makes about ten passes over the
rows' memory per Hoyer pass and reads a result on the host after each.

The kernels (:mod:`nmfsc.gpu_backend.cuda_kernels`, Numba CUDA) read CuPy's
arrays in place (``__cuda_array_interface__``) and run on CuPy's current
stream. The memory traffic, in whole passes over the rows (n entries
each), of a projection whose supports are :math:`k_2 > k_3 > \dots`
entries:

- the first pass (threshold :math:`-\infty`) reads the rows once; it also
  gives each row's total, norm, and whether it is finite and
  non-negative, so the "already meets the targets" test costs nothing
  more;
- the second pass reads the rows again;
- the later passes run one block per row: the first of them reads the
  rows once more and keeps its support, :math:`k_3` entries, in a buffer
  B of the rows' size (each thread its own slots, in the rows' order);
  the others read B (the support only shrinks), and rewrite it in place
  only where the support of the pass before is below
  :data:`~nmfsc.gpu_backend.cuda_kernels.COMPACT_BELOW` (three quarters)
  of what B holds;
- the norm of :math:`\max(a - \alpha, 0)` reads B (the rows, for a row
  that settled at the second pass);
- the result: one read of every row and one write, in the dtype asked
  for (the solvers ask for the rows' own: float32 rows get a float32 result).

That is the four-launch form's (:mod:`~nmfsc.gpu_backend.cuda_kernels`).
The one-launch form (:mod:`~nmfsc.gpu_backend.grid_kernels`) reads the
same, but for the third pass: its second pass keeps its support,
:math:`k_2` entries, lane by lane in B, and the passes after it and the
norm read B.

The host reads each row's fate once, after the last launch. The rare
rows take the array code's paths, on those rows only: a row whose passes
do not settle (or that has no room) is projected by
:func:`~nmfsc.gpu_backend.array_projection.project_rows_by_arrays`
with its threshold from its sorted entries, one whose threshold cannot give
an accurate result (nearly equal entries on its support:
:func:`~nmfsc.gpu_backend.thresholds.condition_parts`) by the CPU kernel
(copied to the host and back), and a row at sparseness 1 gets
:math:`L_2` at its first largest entry. The result is that of
:func:`~nmfsc.gpu_backend.device_projection.project_rows` to rounding (the
sums are added in another order).
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict

import numpy as np

from nmfsc._array_api import to_host
from nmfsc.gpu_backend import cuda_kernels as K
from nmfsc.gpu_backend import grid_kernels as G
from nmfsc.gpu_backend.array_projection import project_rows_by_arrays
from nmfsc.gpu_backend.cuda_target import raised_by_numba
from nmfsc.gpu_backend.thresholds import max_passes
from nmfsc.projection import project

__all__ = [
    "BLOCK",
    "FORM",
    "FORMS",
    "chosen_form",
    "CHUNK_PER_THREAD",
    "layout",
    "project_rows_fused",
    "release_workspaces",
    "solve_threads",
]

#: The projection's forms (:func:`project_rows_fused`): four launches, or one.
FORMS = ("rows", "grid")
#: The form :func:`project_rows_fused` takes where none is asked for: "auto"
#: (:func:`chosen_form`), or one of :data:`FORMS`.
FORM = "auto"
#: The GPUs (their ids; None: the simulator) on which the "grid" form
#: cannot run (:func:`_launch_grid`).
_GRID_FAILED: set = set()

#: Threads per block, at most (fewer for short rows).
BLOCK = 256
#: Entries each thread reads per (row, chunk): a chunk is ``threads * 16``
#: entries (4,096 for long rows), so a row of 10^6 takes 245 blocks.
CHUNK_PER_THREAD = 16
#: Chunks per row, at most (CUDA's limit on a grid's y dimension).
MAX_CHUNKS = 65_535


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


def solve_threads(lanes):
    """Threads of ``solve_rows``'s block for rows of ``lanes`` (chunk,
    thread) lanes: a power of two from 32 to
    :data:`~nmfsc.gpu_backend.cuda_kernels.SOLVE_THREADS`, no more than the
    lanes where they are fewer (each thread takes whole lanes)."""
    count = 32
    while count < K.SOLVE_THREADS and count * 2 <= lanes:
        count *= 2
    return count


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
        self.specialized = {}
        self.configured = {}

    def view(self, array):
        """The array as the kernels take it (no copy, no synchronisation)."""
        if self.simulated:
            return array
        return self.cuda.as_cuda_array(array, sync=False)

    def typed(self, kernel, args):
        """``kernel`` specialised to the types of ``args`` (compiled at the
        first call)."""
        typed = self.specialized.get(kernel)
        if typed is None:
            # Numba's simulator has no specialisation; its kernels take any types.
            typed = kernel if self.simulated else kernel.specialize(*args)
            self.specialized[kernel] = typed
        return typed

    def cooperative_blocks(self, kernel, block, *args):
        """The most blocks of ``block`` threads that ``kernel``, which syncs
        its whole grid, may be launched with on this GPU (all resident at
        once); one under the simulator, whose cooperative grids have one
        block."""
        if self.simulated:
            return 1
        overload = next(iter(self.typed(kernel, args).overloads.values()))
        return int(overload.max_cooperative_grid_blocks(block))

    def __call__(self, kernel, grid, block, *args):
        key = (kernel, grid, block)
        configured = self.configured.get(key)
        if configured is None:
            configured = self.typed(kernel, args)[grid, block, self.stream]
            self.configured[key] = configured
        configured(*args)


class _Workspace:
    """The fused projection's arrays for rows of one shape and dtype, their
    device views and the configured kernels (:class:`_Launcher`), kept
    from one projection to the next of the same rows (an ``nmf_sc`` run
    projects its trials' rows, of one shape, many times): a view and a
    configuration cost host time, tens of microseconds each. Only the rows
    X and the result S are viewed at each projection. Kept per GPU, CuPy
    stream and host thread (:func:`_workspace`), so that no two
    projections share one at the same time.

    Per row: ``rows`` and ``fates``
    (:mod:`~nmfsc.gpu_backend.cuda_kernels`, with the columns the "grid"
    form adds: :mod:`~nmfsc.gpu_backend.grid_kernels`; the fates' ticket
    counters start at 0 and the kernels leave them so); per (row, chunk),
    a pass's partial ``counts`` and ``sums``; the buffer B, of the rows'
    shape and dtype. The "grid" form's also: ``held``, the entries B holds
    per lane, and ``active``, the rows left active by each pass (``limit``
    passes at most), which its kernel sets to 0 with the ticket counters."""

    def __init__(self, xp, X, chunks, threads, form, limit):
        count = X.shape[0]
        self.launch = _Launcher(xp)
        self.rows = xp.zeros((count, G.ROW_COLUMNS))
        self.fates = xp.zeros((count, G.FATE_COLUMNS), dtype=xp.int64)
        self.counts = xp.empty((count, chunks, 2), dtype=xp.int64)
        self.sums = xp.empty((count, chunks, 2))
        self.B = xp.empty_like(X)
        self.blocks = None  # the "grid" form's most blocks at once, found at its first launch
        names = ["rows", "fates", "counts", "sums", "B"]
        if form == "grid":
            self.held = xp.zeros((count, chunks * threads), dtype=xp.int32)
            self.active = xp.zeros(limit + 1, dtype=xp.int64)
            names += ["held", "active"]
        self.views = {name: self.launch.view(getattr(self, name)) for name in names}


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


def _workspace(xp, X, dtype, chunks, threads, form, limit):
    """The :class:`_Workspace` for projecting X (its shape and dtype) into
    ``dtype`` with this layout and form, on this GPU, CuPy stream and host thread:
    kept from the last such projection, or made (the least recently used
    of :data:`KEEP_WORKSPACES` is dropped)."""
    if xp is np:
        place = None
    else:
        place = (X.device.id, xp.cuda.get_current_stream().ptr)
    key = (place, threading.get_ident(), X.shape, X.dtype, dtype, chunks, threads, form)
    with _WORKSPACES_LOCK:
        workspace = _WORKSPACES.pop(key, None)
    if workspace is None:
        workspace = _Workspace(xp, X, chunks, threads, form, limit)
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
    form=None,
    threads=None,
    chunk=None,
    row_threads=None,
    blocks=None,
    info=None,
):
    """:func:`nmfsc.gpu_backend.device_projection.project_rows` by the fused
    kernels: ``(S, finite)``, S of X's shape in ``dtype`` (float64 by
    default; the kernels compute each entry in float64 and store it
    rounded once), NaN in the rows that are not finite, ``finite`` a
    boolean per row, a NumPy array (the host has read the rows' fates). ``xp`` is ``cupy`` on a
    GPU, or ``numpy`` under Numba's CUDA simulator (the tests).

    ``form`` (:data:`FORMS`, or "auto": :func:`chosen_form`; :data:`FORM`
    by default) is "rows", four launches whose passes after the second
    run one block per row, or "grid", one cooperative launch whose every
    pass runs on the whole grid (:mod:`~nmfsc.gpu_backend.grid_kernels`);
    where the GPU cannot run the latter (no cooperative launch, no
    ``cudadevrt`` to link, the launch refused), the former, with one
    RuntimeWarning per GPU. Both give the same projection to rounding.

    ``threads`` and ``chunk`` override :func:`layout`, ``row_threads``
    :func:`solve_threads` (the tests use small ones), and ``blocks`` caps
    the "grid" form's blocks (the tests vary it: the result does not
    depend on it). A dict ``info``
    receives ``passes`` (the most Hoyer passes a row took on the device),
    ``sorted`` and ``on_cpu`` (rows that took those paths), ``read`` and
    ``written`` (entries the passes and the norm read, and entries kept),
    and ``form`` (the one that ran): the benchmark's account of the
    memory traffic."""
    form = FORM if form is None else form
    if form == "auto":
        form = chosen_form(xp, X)
    if form not in FORMS:
        raise ValueError(f"form must be 'auto' or one of {FORMS}, got {form!r}")
    if xp is np:
        return _project_rows(
            xp, X, l1, l2, nonneg, dtype, form, threads, chunk, row_threads, blocks, info
        )
    from numba import cuda

    # CuPy's device (where the workspace's arrays are made) and Numba's
    # context: the array's GPU, whatever GPU is current.
    with X.device, cuda.gpus[X.device.id]:
        return _project_rows(
            xp, X, l1, l2, nonneg, dtype, form, threads, chunk, row_threads, blocks, info
        )


def chosen_form(xp, X):
    """The form "auto" takes for the rows X: "grid" where they are fewer
    than the GPU's multiprocessors, on which "rows" would run its passes
    after the second one block per row (leaving multiprocessors idle: all
    but one for the accelerated solver's projections, a row at a time),
    else "rows". "rows" under the simulator (NumPy arrays)."""
    if xp is np:
        return "rows"
    multiprocessors = _device_attribute(xp, X.device.id, _MULTIPROCESSOR_COUNT)
    return "grid" if X.shape[0] < multiprocessors else "rows"


def _device_attribute(xp, device, attribute):
    """CUDA's device attribute ``attribute`` of GPU ``device``, read once."""
    key = (device, attribute)
    value = _ATTRIBUTES.get(key)
    if value is None:
        value = _ATTRIBUTES[key] = int(xp.cuda.runtime.deviceGetAttribute(attribute, device))
    return value


#: CUDA's device attributes cudaDevAttrMultiProcessorCount and
#: cudaDevAttrCooperativeLaunch.
_MULTIPROCESSOR_COUNT, _COOPERATIVE_LAUNCH = 16, 95
#: The device attributes read so far, by (GPU, attribute) (:func:`_device_attribute`).
_ATTRIBUTES: dict = {}


def _project_rows(xp, X, l1, l2, nonneg, dtype, form, threads, chunk, row_threads, blocks, info):
    if X.dtype != xp.float32:  # float32 rows stay float32; their sums are float64
        X = X.astype(xp.float64, copy=False)
    X = xp.ascontiguousarray(X)
    count, n = X.shape
    if threads is None or chunk is None:
        threads, chunk = layout(n)
    if chunk % threads:
        raise ValueError(f"chunk ({chunk}) must be a multiple of threads ({threads})")
    chunks = -(-n // chunk)
    if form == "grid" and (None if xp is np else X.device.id) in _GRID_FAILED:
        form = "rows"
    S = xp.empty((count, n), dtype=xp.float64 if dtype is None else dtype)
    limit = max_passes(n)
    work = _workspace(xp, X, S.dtype, chunks, threads, form, limit)
    work.rows[:, K.L1] = l1
    work.rows[:, K.L2] = l2
    signed = not nonneg
    if form == "grid":
        if not _launch_grid(xp, work, X, S, threads, chunk, signed, limit, blocks):
            return _project_rows(
                xp, X, l1, l2, nonneg, dtype, "rows", threads, chunk, row_threads, None, info
            )
    else:
        if row_threads is None:
            row_threads = solve_threads(chunks * threads)
        work.fates[:, K.DONE] = 0  # as the kernels leave them, unless one was cut short
        _launch_rows(work, X, S, threads, chunk, row_threads, signed, limit)
    fates = to_host(work.fates)  # the one host read
    fate = fates[:, K.FATE]
    stuck = np.flatnonzero(fate == K.STUCK)
    if stuck.size:  # the array code's threshold, by a sort
        rows = xp.asarray(stuck)
        S[rows], _ = project_rows_by_arrays(
            xp, X[rows], l1[rows], l2[rows], nonneg, S.dtype, by_sort=True
        )
    single = np.flatnonzero(fate == K.SINGLE)
    if single.size:
        rows = xp.asarray(single)
        A = X[rows] if nonneg else xp.abs(X[rows])
        first_largest = xp.argmax(A, axis=1)
        value = l2[rows]
        if signed:
            value = value * xp.where(X[rows, first_largest] < 0, -1.0, 1.0)
        S[rows, first_largest] = value
    for r in np.flatnonzero(fate == K.FALLBACK):
        S[r] = xp.asarray(project(to_host(X[r]), float(l1[r]), float(l2[r]), nonneg=nonneg))
    if info is not None:
        info.update(
            passes=int(fates[:, K.PASSES].max()),
            sorted=int(stuck.size),
            on_cpu=int(np.sum(fate == K.FALLBACK)),
            read=int(fates[:, K.READ].sum()),
            written=int(fates[:, K.WRITTEN].sum()),
            form=form,
        )
    return S, fate != K.NONFINITE


def _launch_rows(work, X, S, threads, chunk, row_threads, signed, limit):
    """The "rows" form's four launches (:mod:`~nmfsc.gpu_backend.cuda_kernels`),
    at most ``limit`` Hoyer passes."""
    count = X.shape[0]
    kernels = K.pass_kernels(threads, row_threads, chunk // threads)
    launch, v = work.launch, work.views
    x_, s_ = launch.view(X), launch.view(S)
    grid = (count, v["counts"].shape[1])
    nonneg = not signed  # the kernels' boolean arguments are Python bools (see _Launcher)
    row, partials = (v["rows"], v["fates"]), (v["counts"], v["sums"])
    launch(kernels.first_sums, grid, threads, x_, signed, nonneg, *row, *partials)
    launch(kernels.second_sums, grid, threads, x_, signed, *row, *partials)
    launch(kernels.solve_rows, count, row_threads, x_, v["B"], signed, *row, limit)
    launch(kernels.scale, grid, threads, x_, signed, *row, s_)


def _launch_grid(xp, work, X, S, threads, chunk, signed, limit, most=None):
    """The "grid" form's one cooperative launch
    (:mod:`~nmfsc.gpu_backend.grid_kernels`), at most ``limit`` Hoyer
    passes, on as many blocks as there
    are tiles, or as the GPU holds at once (found at a workspace's first
    projection, then kept), or ``most``. False, with one RuntimeWarning
    per GPU, where the GPU cannot run it: no cooperative launch, the
    kernel not compiled or linked (no ``cudadevrt``), or its launch
    refused (then nothing ran); an error that is not Numba's or CUDA's
    propagates."""
    kernel = G.grid_kernels(threads, chunk // threads).project
    launch, v = work.launch, work.views
    args = (
        launch.view(X),
        v["B"],
        v["held"],
        signed,
        not signed,
        v["rows"],
        v["fates"],
        v["counts"],
        v["sums"],
        v["active"],
        limit,
        launch.view(S),
    )
    tiles = X.shape[0] * v["counts"].shape[1]
    try:
        if work.blocks is None:
            if xp is not np and not _device_attribute(xp, X.device.id, _COOPERATIVE_LAUNCH):
                raise _GridUnavailable("this GPU has no cooperative launch")
            work.blocks = launch.cooperative_blocks(kernel, threads, *args)
            if work.blocks < 1:
                raise _GridUnavailable("no block of the kernel fits on a multiprocessor")
        launch(kernel, min(tiles, work.blocks, most or tiles), threads, *args)
    except Exception as error:
        if not (isinstance(error, _GridUnavailable) or raised_by_numba(error)):
            raise
        _GRID_FAILED.add(None if xp is np else X.device.id)
        warnings.warn(
            f"the one-launch GPU projection cannot run here ({type(error).__name__}: "
            f"{error}); projecting in four launches instead",
            RuntimeWarning,
            stacklevel=4,
        )
        return False
    return True


class _GridUnavailable(RuntimeError):
    """The GPU cannot run the "grid" form (:func:`_launch_grid`)."""
