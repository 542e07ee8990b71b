"""Independent calls of compiled kernels spread over the machine's cores.

Numba kernels compiled with ``nogil=True`` release Python's GIL, so plain
threads run them in parallel. One thread pool per process serves every such
call (made on first use, and made again in a child process after a fork,
whose copy of the parent's pool has no threads). The calling thread runs the
first group of calls itself, so a call on one core costs no hand-off.

The number of threads is numba's setting, ``NUMBA_NUM_THREADS`` (by default
the CPUs this process may use), read without starting numba's own threading
layer. Which thread runs a call never changes its result: the groups are
contiguous and each call computes what it would compute alone.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numba

__all__ = ["run_groups", "split", "threads"]

#: The pool of this process: (pid, workers, executor), replaced when the pid
#: changes or more workers are needed (the old one is shut down: its threads
#: end once their work is done).
_POOL: list[tuple[int, int, ThreadPoolExecutor]] = []
_POOL_LOCK = threading.Lock()


def threads() -> int:
    """The threads to use: numba's ``NUMBA_NUM_THREADS``, at least 1."""
    return max(1, int(getattr(numba.config, "NUMBA_NUM_THREADS", 1)))


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


def run_groups(calls: Sequence[Callable[[], Any]]) -> list[Any]:
    """``[call() for call in calls]``, the first in this thread and the others
    on the pool, at the same time; results in order. Every call has finished
    before this returns or raises (the calls write into shared buffers); an
    exception is then raised here, the first call's own if it raised, else
    the first of the others' in order."""
    if len(calls) <= 1:
        return [call() for call in calls]
    pool = _pool(len(calls) - 1)
    others = [pool.submit(call) for call in calls[1:]]
    try:
        first = calls[0]()
    finally:
        wait(others)
    return [first, *(future.result() for future in others)]
