"""Where a GPU iteration of nmf_sc spends its time, function by function. A script, not a test.

    python benchmarks/profile_gpu_iteration.py                  # on a machine with a GPU and CuPy
    python benchmarks/profile_gpu_iteration.py --numpy --shape 288 3000   # the same code, NumPy

``benchmarks/bench_gpu.py`` gives an iteration's total, its projections and
its products; this script splits the rest. It runs ``nmf_sc`` (``solver=
"hoyer"``, ``sparseness_h=0.85``, the bench's V: |N(0, 1)| scaled to max 1)
and profiles its iterations after the ``--skip`` first (which hold the
start's halvings of the step size) with cProfile. ``CUDA_LAUNCH_BLOCKING=1``
is set before CuPy loads, so every kernel launch and cuBLAS call returns
only when the GPU has finished it: a function's own time is then the GPU
time of the work it launches, not the time until the next host read.
(Launches that wait cost a few microseconds each, so the iteration is a
little slower than in the bench.) Prints the iteration's time, then
nmfsc's functions by cumulative time and every function by its own time,
per profiled iteration.

Then it splits the fused projection (:mod:`nmfsc.gpu_backend.fused`) of
the run's H rows, stepped as a trial is, by kernel: for each kernel the
launches per projection, the host's time per launch call, and the GPU's
time per launch (CUDA events around it); and the whole projection's host
and GPU time (``cupyx.profiler.benchmark``), with the default chunks and
chunks of 8 to 64 entries per thread, and of 4,096 columns of the rows
(the host's floor), and of one row (the accelerated solver's), in each of
the projection's forms (``--form`` is the run's). This part runs without
``CUDA_LAUNCH_BLOCKING`` in a second process (``--kernels-only``).
"""

import os
import sys

if "--kernels-only" not in sys.argv:
    os.environ.setdefault("CUDA_LAUNCH_BLOCKING", "1")  # before CuPy loads: see the docstring

import argparse
import cProfile
import io
import pstats
import subprocess
import time
import warnings
from collections import defaultdict

import numpy as np
from bench_gpu import array_module, fit, random_V

from nmfsc.gpu_backend import fused as fused_module


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", type=int, nargs=2, default=(288, 10**6), metavar=("N", "T"))
    parser.add_argument("--rank", type=int, default=72)
    parser.add_argument("--sparseness-h", type=float, default=0.85)
    parser.add_argument("--iterations", type=int, default=8, help="iterations profiled")
    parser.add_argument("--skip", type=int, default=2, help="first iterations not profiled")
    parser.add_argument("--top", type=int, default=25, help="rows of each table")
    parser.add_argument(
        "--numpy", action="store_true", help="run the GPU code with NumPy (no GPU needed)"
    )
    parser.add_argument("--kernels-only", action="store_true", help="only the kernels' split")
    parser.add_argument(
        "--form",
        choices=("auto", *fused_module.FORMS),
        default=fused_module.FORM,
        help="the fused projection's form in the run (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    fused_module.FORM = args.form
    xp = array_module(args.numpy)
    V = xp.asarray(random_V(np.random.default_rng(2004), args.shape))
    if args.kernels_only:
        return kernels(xp, V, args)
    profile = cProfile.Profile()
    seen = [0]

    def callback(state):
        seen[0] += 1
        if seen[0] == args.skip:
            profile.enable()
        elif seen[0] == args.skip + args.iterations:
            profile.disable()

    callback.keeps_iterates = False  # type: ignore[attr-defined]

    fit(xp, V[:, : min(V.shape[1], 4096)], args.rank, 2, args.sparseness_h)  # warm-up
    iterations = args.skip + args.iterations
    result = fit(xp, V, args.rank, iterations, args.sparseness_h, callback=callback)
    profiled = np.diff(result.times)[args.skip : args.skip + args.iterations]
    print(
        f"# nmf_sc on {'NumPy (--numpy)' if xp is np else 'CuPy, CUDA_LAUNCH_BLOCKING='}"
        f"{'' if xp is np else os.environ['CUDA_LAUNCH_BLOCKING']}: V {args.shape[0]} x "
        f"{args.shape[1]}, rank {args.rank}, sparseness_h={args.sparseness_h}; "
        f"{profiled.size} iterations profiled, median {np.median(profiled):.4f} s each\n"
    )
    for order, restriction, title in (
        ("cumulative", "nmfsc", "nmfsc's functions by cumulative time"),
        ("tottime", "", "every function by its own time"),
    ):
        text = io.StringIO()
        stats = pstats.Stats(profile, stream=text)
        stats.sort_stats(order).print_stats(restriction, args.top)
        print(f"## {title} (seconds over all {profiled.size} iterations)")
        body = text.getvalue()
        print(body[body.find("ncalls") :] if "ncalls" in body else body)
    if xp is np:
        return 0
    command = [sys.executable, __file__, "--kernels-only", *(argv or sys.argv[1:])]
    unblocked = {key: value for key, value in os.environ.items() if key != "CUDA_LAUNCH_BLOCKING"}
    return subprocess.run(command, env=unblocked, check=False).returncode


def kernels(xp, V, args):
    """The fused projection's split by kernel (module docstring)."""
    from cupyx.profiler import benchmark

    from nmfsc.gpu_backend import fused
    from nmfsc.gpu_backend.device_projection import fused_kernels
    from nmfsc.sparseness import l1_for_sparseness

    if fused_kernels() is None:
        print("No fused kernels here (Numba's CUDA target is missing): nothing to split.")
        return 0
    H = fit(xp, V, args.rank, 3, args.sparseness_h).H
    M, T = H.shape
    trial = H + 0.01 * xp.asarray(np.random.default_rng(1).random((M, T)))
    l1 = xp.full(M, l1_for_sparseness(args.sparseness_h, T))
    ones = xp.ones(M)
    warnings.filterwarnings("ignore", message=".*under-utilization")  # small grids
    project = fused.project_rows_fused
    project(xp, trial, l1, ones)  # compiled
    host, gpu, calls = defaultdict(float), defaultdict(float), defaultdict(int)
    original = fused._Launcher.__call__

    def timed(self, kernel, grid, block, *kernel_args):
        name = kernel.py_func.__name__
        before, after = xp.cuda.Event(), xp.cuda.Event()
        before.record()
        start = time.perf_counter()
        original(self, kernel, grid, block, *kernel_args)
        host[name] += time.perf_counter() - start
        after.record()
        after.synchronize()
        gpu[name] += xp.cuda.get_elapsed_time(before, after) / 1e3
        calls[name] += 1

    repeats = 5
    pass_s = benchmark(lambda: trial.sum(), (), n_repeat=20, n_warmup=3)
    print(f"One pass over the rows (a sum): GPU {np.median(pass_s.gpu_times):.2e} s.")
    narrow = xp.ascontiguousarray(trial[:, :4096])
    narrow_l1 = xp.full(M, l1_for_sparseness(args.sparseness_h, 4096))
    for form in fused.FORMS:
        kwargs = {"form": form}
        project(xp, trial, l1, ones, **kwargs)  # compiled
        for totals in (host, gpu, calls):
            totals.clear()
        fused._Launcher.__call__ = timed
        try:
            for _ in range(repeats):
                project(xp, trial, l1, ones, **kwargs)
        finally:
            fused._Launcher.__call__ = original
        print(f"\n## The fused projection of {M} rows of {T}, form {form!r}, by kernel")
        print("| kernel | launches | host s per launch | GPU s per launch | GPU s in all |")
        print("|---|---:|---:|---:|---:|")
        for name in calls:
            n = calls[name]
            print(
                f"| {name} | {n / repeats:g} | {host[name] / n:.2e} | {gpu[name] / n:.2e} "
                f"| {gpu[name] / repeats:.2e} |"
            )
        whole = benchmark(project, (xp, trial, l1, ones), kwargs, n_repeat=20, n_warmup=3)
        print(
            f"\nThe whole projection (cupyx.profiler.benchmark, 20 runs): host "
            f"{np.median(whole.cpu_times):.2e} s, GPU {np.median(whole.gpu_times):.2e} s (medians)."
        )
        floor = benchmark(project, (xp, narrow, narrow_l1, ones), kwargs, n_repeat=20, n_warmup=3)
        print(
            f"The projection of {M} rows of 4,096 (the host's floor: little for the GPU): "
            f"host {np.median(floor.cpu_times):.2e} s, GPU {np.median(floor.gpu_times):.2e} s."
        )
        one = benchmark(project, (xp, trial[:1], l1[:1], ones[:1]), kwargs, n_repeat=20, n_warmup=3)
        print(
            f"The projection of one row of {T} (the accelerated solver's): "
            f"host {np.median(one.cpu_times):.2e} s, GPU {np.median(one.gpu_times):.2e} s."
        )
    threads, chunk = fused.layout(T)
    print(
        f"\nChunks of other sizes, form {args.form!r} (the default: {chunk} entries, "
        f"{threads} threads):"
    )
    print("| entries per thread | host s | GPU s |")
    print("|---:|---:|---:|")
    for per_thread in (8, 16, 32, 64):
        kwargs = {"threads": threads, "chunk": threads * per_thread, "form": args.form}
        project(xp, trial, l1, ones, **kwargs)  # its own workspace
        timed_run = benchmark(project, (xp, trial, l1, ones), kwargs, n_repeat=10, n_warmup=2)
        print(
            f"| {per_thread} | {np.median(timed_run.cpu_times):.2e} "
            f"| {np.median(timed_run.gpu_times):.2e} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
