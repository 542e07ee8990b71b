"""Kernel calls spread over threads (nmfsc/_threads.py): the groups, the
order of the results, errors, a forked child, and solver results that do not
depend on the number of threads."""

import multiprocessing
import threading
import time
import warnings

import numpy as np
import pytest

from nmfsc import ConvergenceWarning, _blocked, _threads, nmf_sc
from nmfsc._blocked import PARALLEL_ENTRIES


@pytest.mark.parametrize("count", [0, 1, 2, 7, 72])
@pytest.mark.parametrize("groups", [1, 2, 3, 16])
def test_split_covers_the_range_in_contiguous_groups(count, groups):
    ranges = _threads.split(count, groups)
    assert len(ranges) == max(1, min(groups, count))
    assert [i for a, b in ranges for i in range(a, b)] == list(range(count))
    sizes = [b - a for a, b in ranges]
    assert max(sizes) - min(sizes) <= 1


def test_run_groups_keeps_the_order_and_uses_other_threads():
    names = []

    def call(k):
        names.append(threading.current_thread().name)
        return k * k

    from functools import partial

    assert _threads.run_groups([partial(call, k) for k in range(5)]) == [0, 1, 4, 9, 16]
    assert names.count(threading.current_thread().name) >= 1
    assert len(set(names)) > 1  # the pool ran the others
    assert _threads.run_groups([]) == []


@pytest.mark.parametrize("failing", [0, 1])
def test_an_error_in_a_group_is_raised_after_all_finish(failing):
    # The first call runs in this thread, the others on the pool; whichever
    # fails, the error is raised only once every group has finished (a slow
    # group is still running when the failing one has raised).
    done = []

    def fails():
        raise ValueError("group failed")

    def quick():
        done.append(1)

    def slow():
        time.sleep(0.3)
        done.append(1)

    calls = [fails, slow, slow] if failing == 0 else [quick, fails, slow]
    with pytest.raises(ValueError, match="group failed"):
        _threads.run_groups(calls)
    assert len(done) == 2


def _child(queue):
    queue.put(_threads.run_groups([lambda: 1, lambda: 2, lambda: 3]))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
# Python 3.12+ warns that forking a process with threads may deadlock: that
# is the case under test.
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")
def test_groups_that_run_groups_finish():
    # A pool thread that runs groups itself (a blocked sum inside a Dask
    # group) runs them in its own thread instead of waiting on the pool,
    # where its work would queue behind itself (a deadlock before).
    from functools import partial

    def inner(k):
        return sum(_threads.run_groups([partial(int, k), partial(int, 2 * k)]))

    calls = [partial(inner, k) for k in range(4)]
    done = []
    worker = threading.Thread(target=lambda: done.append(_threads.run_groups(calls)))
    worker.start()
    worker.join(30)
    assert done == [[0, 3, 6, 9]]


def test_a_forked_child_makes_its_own_pool():
    # The parent's pool has threads; a forked child's copy has none, and
    # submitting to it would wait forever. The child must make a new pool.
    _threads.run_groups([lambda: 0, lambda: 0])
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == [1, 2, 3]


def test_nmf_sc_gives_the_same_bits_on_one_thread_and_on_several(monkeypatch):
    # Rows long enough for the projection to be split over threads: which
    # thread projects a row never changes the result.
    rng = np.random.default_rng(0)
    V = np.abs(rng.standard_normal((40, 9000)))
    assert 8 * 9000 >= PARALLEL_ENTRIES

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return nmf_sc(V, 8, sparseness_h=0.8, random_state=1, max_iter=15, tol=0)

    monkeypatch.setattr(_blocked, "threads", lambda: 1)
    one = run()
    monkeypatch.setattr(_blocked, "threads", lambda: 3)
    several = run()
    np.testing.assert_array_equal(one.H, several.H)
    np.testing.assert_array_equal(one.W, several.W)
    np.testing.assert_array_equal(one.objective, several.objective)


# A run of each solver that splits everything the threads split: T = 9000
# columns make several blocks of nmfsc._blocked's products and pieces of its
# sums, and BLAS's own dot product is threaded from 10,000 entries.
_RUN_SOLVERS = """
import hashlib, sys, warnings
import numpy as np
from nmfsc import ConvergenceWarning, nmf_euclidean, nmf_sc
warnings.simplefilter("ignore", ConvergenceWarning)
rng = np.random.default_rng(0)
V = np.abs(rng.standard_normal((30, 9000)))
runs = {
    "hoyer": lambda: nmf_sc(V, 6, sparseness_h=0.8, random_state=1, max_iter=6, tol=0),
    "hoyer_w": lambda: nmf_sc(V, 6, sparseness_w=0.5, random_state=1, max_iter=6, tol=0),
    "accelerated": lambda: nmf_sc(
        V, 6, sparseness_h=0.8, solver="accelerated", random_state=1, max_iter=4, tol=0
    ),
    "euclidean": lambda: nmf_euclidean(V, 6, random_state=1, max_iter=6, tol=0),
}
for name, run in runs.items():
    res = run()
    digest = hashlib.sha256()
    for array in (res.W, res.H, np.asarray(res.objective), np.asarray(res.relative_error)):
        digest.update(np.ascontiguousarray(array).tobytes())
    print(name, digest.hexdigest())
"""


def _solver_digests(threads):
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    env.update(MKL_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    done = subprocess.run(
        [sys.executable, "-c", _RUN_SOLVERS], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return dict(line.split() for line in done.stdout.splitlines())


def test_the_solvers_give_the_same_bits_on_one_and_two_threads():
    # Separate processes with the usual controls set before Python starts
    # (numba's and the BLAS's threads): the partitions of every product and
    # sum are fixed by the shapes, never by the thread count.
    one, two = _solver_digests(1), _solver_digests(2)
    assert set(one) == {"hoyer", "hoyer_w", "accelerated", "euclidean"}
    assert one == two


@pytest.mark.parametrize("solver", ["hoyer", "accelerated", "euclidean"])
def test_the_solvers_give_the_same_bits_on_one_and_three_threads(monkeypatch, solver):
    # Three groups on a machine of any size: nmfsc's modules read the thread
    # count through their own name of _threads.threads.
    from nmfsc import nmf_euclidean

    rng = np.random.default_rng(2)
    V = np.abs(rng.standard_normal((20, 9000)))

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            if solver == "euclidean":
                return nmf_euclidean(V, 5, random_state=3, max_iter=5, tol=0)
            return nmf_sc(V, 5, sparseness_h=0.7, solver=solver, random_state=3, max_iter=5, tol=0)

    results = []
    for count in (1, 3):
        monkeypatch.setattr(_blocked, "threads", lambda count=count: count)
        results.append(run())
    one, three = results
    np.testing.assert_array_equal(one.W, three.W)
    np.testing.assert_array_equal(one.H, three.H)
    np.testing.assert_array_equal(one.objective, three.objective)


def test_overlapping_single_blas_blocks_restore_the_setting(monkeypatch):
    # Blocks entered and left by two threads, the first to enter leaving
    # first, leave BLAS at its thread count from before (threadpoolctl's own
    # limits, restored in that order, leave it at one thread). A stand-in
    # controller records the setting (OpenBLAS itself may ignore a setting
    # made from a thread other than the one that started it).
    class Library:
        num_threads = 4

    class Limiter:
        def __init__(self, limits):
            self.original = Library.num_threads
            Library.num_threads = limits

        def restore_original_limits(self):
            Library.num_threads = self.original

    class Controller:
        lib_controllers = [Library()]

        def limit(self, limits):
            return Limiter(limits)

    monkeypatch.setattr(_threads, "_blas_controller", Controller)
    first_in = threading.Event()
    second_in = threading.Event()

    def first():
        with _threads.single_blas():
            first_in.set()
            second_in.wait(10)

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(10)
    with _threads.single_blas():
        second_in.set()
        thread.join(10)  # the first block has left; this one is still inside
        assert _threads.blas_threads() == 1
    assert _threads.blas_threads() == 4
    assert _threads.threads() == min(4, _threads.pool_threads())
