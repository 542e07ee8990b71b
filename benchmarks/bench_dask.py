"""Benchmark of nmf_sc on Dask arrays (issue 17): overhead in memory, and out of core.

Part ``overhead``: V (N x T float64) fits in memory; nmf_sc (and nmf_euclidean)
run K iterations (30 by default) from the same start on the NumPy array and on
the same array as a Dask array chunked along its columns, with Dask's local
threaded scheduler, after an untimed 2-iteration run of each. The runs
alternate (in-memory, Dask, in-memory, ...; ``--repeats`` pairs), and each gives
the loop's time per iteration (``res.times[-1] / n_iter``, the start excluded);
the ratio is taken per pair and its median reported, with the Dask run's
reductions (``dask.compute`` calls) per iteration. A run's first iterations
halve the step size many times (about 16 trial projections in iteration 2,
against 2-3 later), so K = 10 weighs that start far more than a real run of
thousands of iterations does.

Part ``ooc``: V (N x T float32, at least 8 GB) is written to disk as an
``.npy`` stack chunk by chunk (never held in memory), then factorized by
nmf_sc with sparseness_h on a ``LocalCluster`` of 2 worker processes with a
memory limit each (2 GB by default), 20 iterations (or until ``--max-time``).
Reported: time per iteration (loop time / iterations, start excluded); bytes
per iteration sent by the client into the graphs (W, W^T W: counted where
they are made Dask keys), received by the client (the results of every
``dask.compute``), and moved between workers (the workers'
``transfer_outgoing_bytes_total``), each counted from the end of iteration 1
to the end of the run; and the peak resident memory of each worker process
(sampled every 0.5 s). The stack is deleted afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import threading
import time
import warnings
from pathlib import Path

import dask
import dask.array as da
import numpy as np

import nmfsc
from nmfsc.dask_backend import chunked, steps
from nmfsc.solvers import ConvergenceWarning

MACHINE_LINE = "2-core AMD EPYC (znver3, AVX2) VM"


class Traffic:
    """Counts the bytes the client puts into graphs and receives from compute."""

    def __init__(self):
        self.sent = self.received = self.computes = 0
        self._compute, self._as_delayed = dask.compute, chunked.as_delayed

    def __enter__(self):
        def compute(*args, **kwargs):
            result = self._compute(*args, **kwargs)
            self.computes += 1
            self.received += _nbytes(result)
            return result

        def as_delayed(value, prefix):
            if prefix != "H":  # the start's split of H is not per iteration
                self.sent += _nbytes(value)
            return self._as_delayed(value, prefix)

        dask.compute = compute
        chunked.as_delayed = steps.as_delayed = as_delayed
        return self

    def __exit__(self, *exc):
        dask.compute = self._compute
        chunked.as_delayed = steps.as_delayed = self._as_delayed


def _nbytes(value):
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return int(getattr(value, "nbytes", 8))


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return func(*args, **kwargs)


def bench_overhead(N, T, M, chunks, iters, repeats):
    rng = np.random.default_rng(0)
    V = rng.random((N, M)) @ (rng.random((M, T)) * (rng.random((M, T)) < 0.3))
    V += 0.1 * rng.random((N, T))
    Vd = da.from_array(V, chunks=(N, T // chunks))
    print(
        f"\n## Overhead: V {N} x {T} float64 in memory, M = {M}, {chunks} chunks, "
        f"{iters} iterations, threaded scheduler, {repeats} interleaved pairs\n"
    )
    print(
        "| solver | in memory / iteration | Dask / iteration | ratio (median) | "
        "ratios | reductions / iteration |"
    )
    print("|---|---:|---:|---:|---|---:|")
    cases = [
        ("nmf_sc, s_H = 0.7", nmfsc.nmf_sc, {"sparseness_h": 0.7}),
        ("nmf_sc, s_W = 0.5", nmfsc.nmf_sc, {"sparseness_w": 0.5}),
        ("nmf_euclidean", nmfsc.nmf_euclidean, {}),
    ]
    for label, solver, kw in cases:
        kw = {**kw, "random_state": 0, "max_iter": iters, "tol": 0}
        for warm_up in (V, Vd):  # thread pools, kernels from the cache, Dask's imports
            _quiet(solver, warm_up, M, **{**kw, "max_iter": 2})
        mem, dsk, ratios, computes = [], [], [], 0
        for _ in range(repeats):
            a = _quiet(solver, V, M, **kw)
            with Traffic() as traffic:
                b = _quiet(solver, Vd, M, **kw)
            computes = traffic.computes
            mem.append(a.times[-1] / a.n_iter)
            dsk.append(b.times[-1] / b.n_iter)
            ratios.append(dsk[-1] / mem[-1])
            assert np.max(np.abs(a.objective - b.objective) / a.objective) < 1e-9
        print(
            f"| {label} | {statistics.median(mem) * 1e3:.0f} ms | "
            f"{statistics.median(dsk) * 1e3:.0f} ms | {statistics.median(ratios):.2f} | "
            f"{', '.join(f'{r:.2f}' for r in ratios)} | {computes / iters:.1f} |"
        )


def write_stack(folder, N, T, M, width):
    """V = W H + noise (float32), written chunk by chunk as an .npy stack."""

    def block(i):
        rng = np.random.default_rng(1000 + i)
        W = np.random.default_rng(7).random((N, M), dtype=np.float32)
        H = rng.random((M, width), dtype=np.float32) * (rng.random((M, width)) < 0.3)
        return W @ H + np.float32(0.1) * rng.random((N, width), dtype=np.float32)

    parts = [
        da.from_delayed(dask.delayed(block)(i), shape=(N, width), dtype=np.float32)
        for i in range(T // width)
    ]
    folder.parent.mkdir(parents=True, exist_ok=True)  # to_npy_stack makes only the last
    with dask.config.set(scheduler="threads", num_workers=2):
        da.to_npy_stack(folder, da.concatenate(parts, axis=1), axis=1)


def _worker_stats(dask_worker):
    import psutil

    return psutil.Process().memory_info().rss, dask_worker.transfer_outgoing_bytes_total


def bench_ooc(folder, N, T, M, width, iters, memory_limit, max_time, keep):
    from distributed import Client, LocalCluster

    gb = N * T * 4 / 1e9
    print(
        f"\n## Out of core: V {N} x {T} float32 ({gb:.1f} GB) as an .npy stack of "
        f"{T // width} chunks of {N} x {width}; 2 workers x {memory_limit}; M = {M}\n"
    )
    t0 = time.perf_counter()
    write_stack(folder, N, T, M, width)
    print(f"written in {time.perf_counter() - t0:.0f} s")
    try:
        with (
            LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                memory_limit=memory_limit,
                processes=True,
                dashboard_address=":0",
            ) as cluster,
            Client(cluster) as client,
        ):
            run_ooc(client, da.from_npy_stack(folder), M, iters, max_time)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def run_ooc(client, V, M, iters, max_time):
    peaks, stop = {}, threading.Event()

    def sample():
        while not stop.is_set():
            try:
                for addr, (rss, _) in client.run(_worker_stats).items():
                    peaks[addr] = max(peaks.get(addr, 0), rss)
            except Exception:  # a worker restarting: sample again
                pass
            stop.wait(0.5)

    marks = {}

    def callback(state):
        print(f"iteration {state.iteration}: loop {state.elapsed:.1f} s", flush=True)
        if state.iteration == 1:
            moved = sum(b for _, b in client.run(_worker_stats).values())
            marks["first"] = (traffic.sent, traffic.received, moved, state.elapsed)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    with Traffic() as traffic:
        res = _quiet(
            nmfsc.nmf_sc,
            V,
            M,
            sparseness_h=0.7,
            random_state=0,
            max_iter=iters,
            tol=0,
            max_time=max_time,
            callback=callback,
        )
        moved = sum(b for _, b in client.run(_worker_stats).values())
    stop.set()
    sampler.join()
    total = time.perf_counter() - t0
    sent0, recv0, moved0, _ = marks.get("first", (0, 0, 0, 0.0))
    k = max(1, res.n_iter - 1)
    print(
        f"iterations {res.n_iter} ({res.stop_reason}); whole call {total:.0f} s, loop "
        f"{res.times[-1]:.0f} s, start {total - res.times[-1]:.0f} s"
    )
    print(
        "| iterations | time / iteration | client -> cluster / it | cluster -> client / it "
        "| worker <-> worker / it | peak worker RSS |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    peak = ", ".join(f"{p / 2**30:.2f} GiB" for p in peaks.values())
    sent, received = (traffic.sent - sent0) / k / 1e6, (traffic.received - recv0) / k / 1e6
    print(
        f"| {res.n_iter} | {res.times[-1] / res.n_iter:.1f} s | {sent:.2f} MB | "
        f"{received:.2f} MB | {(moved - moved0) / k / 1e6:.1f} MB | {peak} |"
    )
    print(
        f"objective {res.objective[0]:.6g} -> {res.objective[-1]:.6g}; sparseness_H "
        f"{np.round(res.sparseness_H, 4).tolist()}"
    )


def machine():
    return (
        f"Machine: {MACHINE_LINE} ({platform.machine()}, {os.cpu_count()} logical cores, "
        f"shared), Python {platform.python_version()}, numpy {np.__version__}, "
        f"dask {dask.__version__}."
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=["overhead", "ooc", "all"], default="overhead")
    parser.add_argument("--reduced", action="store_true", help="small sizes, a quick check")
    parser.add_argument("--iters", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folder", default="/tmp/nmfsc_dask_bench/V")
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--max-time", type=float, default=None, help="cap on the ooc loop (s)")
    parser.add_argument("--keep", action="store_true", help="keep the ooc stack")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    if args.part in ("overhead", "all"):
        size = (200, 4000, 5, 4) if args.reduced else (2000, 20000, 10, 4)
        bench_overhead(*size, args.iters or 30, args.repeats)
    if args.part in ("ooc", "all"):
        N, T, width = (200, 40000, 5000) if args.reduced else (1000, 2_000_000, 50_000)
        bench_ooc(
            Path(args.folder),
            N,
            T,
            10,
            width,
            args.iters or 20,
            args.memory_limit,
            args.max_time,
            args.keep,
        )
    print(f"\n{machine()} Total {time.perf_counter() - t0:.0f} s.")


if __name__ == "__main__":
    main()
