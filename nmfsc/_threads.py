"""Independent calls of compiled kernels spread over the machine's cores.

Numba kernels compiled with ``nogil=True`` release Python's GIL, so plain
threads run them in parallel. One thread pool per process serves every such
call (made on first use, and made again in a child process after a fork,
whose copy of the parent's pool has no threads). The calling thread runs the
first group of calls itself, so a call on one core costs no hand-off.

The number of threads (:func:`threads`) is numba's setting,
``NUMBA_NUM_THREADS`` (by default the CPUs this process may use), read
without starting numba's own threading layer, and at most the BLAS's own
thread count at the time of the call (``OPENBLAS_NUM_THREADS`` /
``MKL_NUM_THREADS`` when Python started, or ``threadpoolctl``'s
``threadpool_limits`` at run time): the usual controls of both libraries
set it. nmfsc's products run BLAS single-threaded inside the pool's groups
(:func:`single_blas`), so the two pools never run at once. Which thread runs
a call never changes its result: the groups are contiguous and each call
computes what it would compute alone.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

import numba

__all__ = ["blas_threads", "pool_threads", "run_groups", "single_blas", "split", "threads"]

#: The pool of this process: (pid, workers, executor), replaced when the pid
#: changes or more workers are needed (the old one is shut down: its threads
#: end once their work is done).
_POOL: list[tuple[int, int, ThreadPoolExecutor]] = []
_POOL_LOCK = threading.Lock()


#: The limiter of the blocks inside :func:`single_blas` now (its first
#: entry), then one None per such block.
_SINGLE: list[Any] = []
_SINGLE_LOCK = threading.Lock()

#: threadpoolctl's controller of the BLAS libraries loaded in this process,
#: made on first use (it inspects the loaded libraries once).
_BLAS: list[Any] = []


def _blas_controller() -> Any:
    with _POOL_LOCK:
        if not _BLAS:
            from threadpoolctl import ThreadpoolController

            _BLAS.append(ThreadpoolController().select(user_api="blas"))
        return _BLAS[0]


def blas_threads() -> int | None:
    """The BLAS's thread count now (the least over the loaded BLAS
    libraries), or None when threadpoolctl finds none."""
    counts = [lib.num_threads for lib in _blas_controller().lib_controllers]
    return min(counts) if counts else None


def pool_threads() -> int:
    """numba's ``NUMBA_NUM_THREADS``, at least 1: the most threads nmfsc runs
    (the Dask backend's in-process passes use them all, whatever the BLAS
    limit its run sets for its tasks' products)."""
    return max(1, int(getattr(numba.config, "NUMBA_NUM_THREADS", 1)))


def threads() -> int:
    """The threads to use: :func:`pool_threads`, at most the BLAS's thread
    count (:func:`blas_threads`)."""
    blas = blas_threads()
    return pool_threads() if blas is None else max(1, min(pool_threads(), blas))


@contextmanager
def single_blas() -> Iterator[None]:
    """BLAS limited to one thread inside the block (threadpoolctl), restored
    after: for products taken on the pool's threads. Read :func:`threads`
    before entering it.

    Blocks that overlap in time (from several threads of the program) share
    one limit: the first to enter sets it, the last to leave restores the
    setting from before the first, so that interleaved exits never leave
    BLAS at one thread. (OpenBLAS may ignore a setting made from a thread
    other than its first caller, once several threads have called it: BLAS
    then keeps its threads inside the blocks: slower on busy cores, and the
    same bits where its dgemm and dsyrk give the same bits on any thread
    count, as they did in benchmarks/README.md's check.)"""
    controller = _blas_controller()
    with _SINGLE_LOCK:
        if not _SINGLE:
            _SINGLE.append(controller.limit(limits=1))
        _SINGLE.append(None)  # one entry per block inside
    try:
        yield
    finally:
        with _SINGLE_LOCK:
            _SINGLE.pop()
            if len(_SINGLE) == 1:
                _SINGLE.pop().restore_original_limits()


def _pool(workers: int) -> ThreadPoolExecutor:
    pid = os.getpid()
    with _POOL_LOCK:
        if not _POOL or _POOL[0][0] != pid or _POOL[0][1] < workers:
            if _POOL and _POOL[0][0] == pid:
                _POOL[0][2].shutdown(wait=False)
            _POOL[:] = [(pid, workers, ThreadPoolExecutor(max_workers=workers))]
        return _POOL[0][2]


def split(count: int, groups: int) -> list[tuple[int, int]]:
    """``groups`` contiguous ``(start, stop)`` ranges covering ``range(count)``,
    as equal as they can be (fewer when ``count`` is smaller)."""
    groups = max(1, min(groups, count))
    bounds = [count * g // groups for g in range(groups + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


#: ``busy`` is True in a pool thread while it runs a call.
_WORKER = threading.local()


def _as_worker(call: Callable[[], Any]) -> Any:
    _WORKER.busy = True
    try:
        return call()
    finally:
        _WORKER.busy = False


def run_groups(calls: Sequence[Callable[[], Any]]) -> list[Any]:
    """``[call() for call in calls]``, the first in this thread and the others
    on the pool, at the same time; results in order. Every call has finished
    before this returns or raises (the calls write into shared buffers); an
    exception is then raised here, the first call's own if it raised, else
    the first of the others' in order.

    Called from one of the pool's own threads (a call that itself runs
    groups, such as a blocked sum inside a Dask backend's group), it runs
    the calls one after the other in that thread: a pool thread waiting for
    work queued behind itself would never be served."""
    if len(calls) <= 1 or getattr(_WORKER, "busy", False):
        return [call() for call in calls]
    pool = _pool(len(calls) - 1)
    others = [pool.submit(_as_worker, call) for call in calls[1:]]
    try:
        first = calls[0]()
    finally:
        wait(others)
    return [first, *(future.result() for future in others)]
