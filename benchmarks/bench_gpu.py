"""The GPU backend against the CPU, at the natural-image problem's size. A script, not a test.

    python benchmarks/bench_gpu.py                     # on a machine with a GPU and CuPy
    python benchmarks/bench_gpu.py --numpy --shape 288 3000   # the same code, NumPy, no GPU
    bash benchmarks/run_gpu_checks.sh                  # this script, then the GPU tests

Prints every number issue 46's GPU targets name, measured in one process:

- ``nmf_sc`` at N x T (default 288 x 1,000,000), rank 72,
  ``sparseness_h=0.85``, float64, seconds per iteration on the GPU (V a
  CuPy array) and on the CPU (V a NumPy array, all the CPU's threads),
  the same start for both; their objective histories are compared;
- the iteration's matrix products alone on the GPU (W^T V, W^T W H, the
  trial's H H^T and V H^T, each once: what one iteration with one line
  search trial multiplies);
- the projection of H's 72 rows of T entries on the GPU against one pass
  over them (a sum): by the fused Numba CUDA kernels (what ``nmf_sc`` uses
  where Numba's CUDA target is installed) in both their forms, four
  launches ("rows") and one cooperative launch ("grid"), with the Hoyer
  passes they took, and by the array code (CuPy operations, the
  fallback) in the same run; and the projection of one of those rows
  (what the accelerated solver projects, one row at a time) by each form;
- in the GPU run, the projections per iteration (one per line search
  trial) and the time in them, and the rest of the iteration against its
  products;
- the same iteration on 4,096 columns of V, and its projections: the
  host's floor per iteration (its launches, host reads and Python, with
  little for the GPU to do), against which the iteration's time shows how
  much of it the GPU's work adds;
- float32 against float64 on the GPU (seconds per iteration);
- ``nmf_sc(solver="accelerated")``, float64, seconds per iteration on the
  GPU and on the CPU from the same start (its sweeps go row by row on the
  GPU), and the gap of their objective histories.

V is random (|N(0, 1)|, scaled to max 1, so no scaled copy is made), or
``--data FILE.npy``. Each GPU time is after a warm-up run (CuPy compiles
its kernels on first use) and is the median of the iterations' own times
(``NMFResult.times``; every iteration ends in a host read of its objective,
so these times include the device's work). ``--numpy`` runs the GPU
backend's array code with NumPy on the CPU, to try the script where no GPU
is; its "GPU" numbers are then the CPU's. ``--form`` is the fused
projection's form the runs use (``nmfsc.gpu_backend.fused.FORM``; the
projection alone is timed in both). Exit status 1 when a target is missed.

Memory on the GPU: V (8 N T bytes in float64), about six M x T arrays
for the projection, and an N x T temporary for the exact objective at the
start and the end: about 15 GB at the default size in float64.
"""

import argparse
import contextlib
import os
import platform
import sys
import time
import warnings

import numpy as np
from numba.core.errors import NumbaPerformanceWarning

from nmfsc import ConvergenceWarning, l1_for_sparseness, nmf_sc
from nmfsc.gpu_backend import GPU_BACKEND
from nmfsc.gpu_backend import fused as fused_module
from nmfsc.gpu_backend.array_projection import project_rows_by_arrays
from nmfsc.gpu_backend.device_projection import fused_kernels, project_rows
from nmfsc.gpu_backend.run import run_on_device
from nmfsc.solvers.accelerated import AcceleratedSteps
from nmfsc.solvers.framework import LoopSettings
from nmfsc.solvers.hoyer import HoyerSteps

# Issue 46's targets.
MIN_GPU_OVER_CPU = 75.0
MAX_ITERATION_OVER_PRODUCTS = 3.0
MAX_PROJECTION_OVER_PASS = 10.0
#: float32 no slower than float64 per iteration (float64's products run on
#: tensor cores: float32 gains only in the memory passes).
MIN_FLOAT32_OVER_FLOAT64 = 1.0
#: Seconds per iteration on SMALL_COLUMNS columns (the host's floor), at most.
MAX_FLOOR_SECONDS = 1.5e-3
MIN_ACCELERATED_GPU_OVER_CPU = 15.0
#: Columns of the run that gives the host's floor per iteration.
SMALL_COLUMNS = 4096


def cpu_name():
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def card_name(xp):
    if xp is np:
        return "none (--numpy: the GPU code on the CPU)"
    props = xp.cuda.runtime.getDeviceProperties(0)
    memory = props["totalGlobalMem"] / 2**30
    return f"{props['name'].decode()} ({memory:.0f} GiB)"


def synchronizer(xp):
    return (lambda: None) if xp is np else xp.cuda.Device().synchronize


def best_seconds(fn, sync, repeats=5):
    """Best of ``repeats`` timed calls of ``fn`` (after one warm-up), device synchronised."""
    fn()
    sync()
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def array_module(numpy):
    """NumPy with ``--numpy`` (the GPU code on the CPU), else CuPy (an error
    naming what to install where CuPy or a GPU is missing)."""
    if numpy:
        return np
    from nmfsc.gpu_backend import cupy_or_error

    return cupy_or_error()


def random_V(rng, shape):
    """The benchmarks' V: |N(0, 1)| entries scaled to max 1 (so the solvers
    make no scaled copy), float64, on the host."""
    V = np.abs(rng.standard_normal(tuple(shape)))
    V /= V.max()
    return V


def fit(xp, V, rank, iterations, sparseness_h, solver="hoyer", callback=None):
    """nmf_sc(solver=solver) on V (a CuPy array: the public call; NumPy with
    --numpy: the GPU backend's run) for ``iterations`` iterations from seed 0."""
    keywords = dict(max_iter=iterations, tol=0, random_state=0, callback=callback)
    params = {"sparseness_w": None, "sparseness_h": sparseness_h}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if xp is np:
            settings = LoopSettings.from_keywords("nmf_sc", keywords)
            steps = AcceleratedSteps if solver == "accelerated" else HoyerSteps
            return run_on_device(GPU_BACKEND.steps_for(steps), V, rank, params, settings)
        return nmf_sc(V, rank, **params, **keywords, solver=solver)


def per_iteration(result, skip=1):
    """Median seconds per iteration, the first ``skip`` left out (warm caches)."""
    steps = np.diff(result.times)[skip:]
    return float(np.median(steps if steps.size else np.diff(result.times)))


def history_gap(a, b):
    """The largest relative gap of two runs' objective histories, over the
    iterations both have."""
    common = min(a.n_iter, b.n_iter) + 1
    mine, theirs = np.asarray(a.objective[:common]), np.asarray(b.objective[:common])
    return float(np.max(np.abs(mine - theirs) / theirs))


@contextlib.contextmanager
def timed_projections(sync):
    """Count and time a run's projections (one per line search trial), by
    wrapping the device steps' ``project_rows`` for the duration (the
    device synchronised before and after each, as the trial's test of its
    result synchronises anyway). Yields ``(callback, marks)``: pass the
    callback to the run (it keeps no iterate, so the run is not slowed);
    ``marks`` then holds (calls, seconds) so far at each iteration's end."""
    from nmfsc.gpu_backend import steps as device_steps

    original, total, marks = device_steps.project_rows, [0, 0.0], []

    def timed(*args, **kwargs):
        sync()
        start = time.perf_counter()
        out = original(*args, **kwargs)
        sync()
        total[0] += 1
        total[1] += time.perf_counter() - start
        return out

    def callback(state):
        marks.append(tuple(total))

    callback.keeps_iterates = False  # type: ignore[attr-defined]
    device_steps.project_rows = timed
    try:
        yield callback, marks
    finally:
        device_steps.project_rows = original


def projections_per_iteration(marks):
    """Median projections and seconds in them per iteration, the first
    iteration left out (it holds the start's halvings of the step size)."""
    per = np.diff(np.asarray(marks, dtype=float), axis=0)[1:]
    if not per.size:
        return float("nan"), float("nan")
    return float(np.median(per[:, 0])), float(np.median(per[:, 1]))


def products_seconds(xp, V, W, H, sync):
    """One iteration's products on the device: W^T V, (W^T W) H, H H^T, V H^T."""

    def products():
        WtW = W.T @ W
        WtV = W.T @ V
        WtWH = WtW @ H
        HHt = H @ H.T
        VHt = V @ H.T
        return WtV, WtWH, HHt, VHt

    return best_seconds(products, sync)


def time_forms(xp, fused, trial, l1s, ones, sync, pass_s, run_form):
    """The fused projection of ``trial``'s rows and of its first row alone,
    timed in each form. Returns ``(forms, how, note)``: ``forms`` maps a
    form to (seconds for the rows, seconds for one row, its ``info``);
    ``how`` says how the runs' form (``run_form``) projected; ``note``,
    each form's memory traffic and time in passes (``pass_s``)."""
    forms = {}
    for form in fused_module.FORMS:
        info: dict = {}
        fused(xp, trial, l1s, ones, form=form, info=info)
        forms[form] = (
            best_seconds(lambda f=form: fused(xp, trial, l1s, ones, form=f), sync),
            best_seconds(lambda f=form: fused(xp, trial[:1], l1s[:1], ones[:1], form=f), sync),
            info,
        )
    info = forms[run_form if run_form in forms else fused_module.chosen_form(xp, trial)][2]
    how = (
        f"fused kernels, form {info['form']!r}, {info['passes']} Hoyer passes, "
        f"{info['sorted']} rows sorted, {info['on_cpu']} on the CPU"
    )
    notes = []
    for form, (seconds, _, info) in forms.items():
        # The passes' reads and writes (entries), the result's read and write
        # (float64), in whole passes over the rows (the norm's read of the last
        # support is left out: a few per cent of a pass).
        read, kept = info["read"] / trial.size, info["written"] / trial.size
        floor = read + kept + 1 + 8 / trial.dtype.itemsize
        notes.append(
            f"form {form!r} (ran as {info['form']!r}): {floor:.1f} passes' worth of memory "
            f"traffic (its passes read {read:.2f} passes' worth of entries and kept "
            f"{kept:.2f}), {seconds / pass_s:.1f} passes' time"
        )
    return forms, how, "The fused projection's " + "; ".join(notes)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", type=int, nargs=2, default=(288, 10**6), metavar=("N", "T"))
    parser.add_argument("--rank", type=int, default=72)
    parser.add_argument("--sparseness-h", type=float, default=0.85)
    parser.add_argument("--iterations", type=int, default=20, help="GPU iterations per run")
    parser.add_argument("--cpu-iterations", type=int, default=3, help="CPU iterations")
    parser.add_argument(
        "--accelerated-iterations",
        type=int,
        default=3,
        help='iterations of solver="accelerated", GPU and CPU',
    )
    parser.add_argument("--data", help="an .npy file of V (N x T) instead of random V")
    parser.add_argument(
        "--form",
        choices=("auto", *fused_module.FORMS),
        default=fused_module.FORM,
        help="the fused projection's form in the runs (default: %(default)s)",
    )
    parser.add_argument(
        "--numpy", action="store_true", help="run the GPU code with NumPy (no GPU needed)"
    )
    args = parser.parse_args(argv)
    fused_module.FORM = args.form
    xp = array_module(args.numpy)
    sync = synchronizer(xp)
    wall = time.perf_counter()
    rng = np.random.default_rng(2004)
    if args.data:
        V_host = np.load(args.data, mmap_mode="r")
        V_host = np.ascontiguousarray(V_host, dtype=np.float64)
        V_host /= V_host.max()  # max 1: the solvers make no scaled copy
    else:
        V_host = random_V(rng, args.shape)
    N, T = V_host.shape
    M = args.rank
    V = xp.asarray(V_host)
    print(f"# nmf_sc on the GPU: V {N} x {T}, rank {M}, sparseness_h={args.sparseness_h}\n")

    fit(xp, V[:, : min(T, 4096)], M, 2, args.sparseness_h)  # warm-up: CuPy's kernels
    with timed_projections(sync) as (mark, projections):
        gpu = fit(xp, V, M, args.iterations, args.sparseness_h, callback=mark)
    gpu_s = per_iteration(gpu)
    # The host's floor: the same iteration on 4,096 columns, where the GPU's
    # work is small, takes about what its launches, host reads and Python do.
    small = min(T, SMALL_COLUMNS)
    with timed_projections(sync) as (mark, small_projections):
        floor = fit(xp, V[:, :small], M, args.iterations, args.sparseness_h, callback=mark)
    floor_s = per_iteration(floor)
    V32 = V.astype(xp.float32)
    fit(xp, V32[:, : min(T, 4096)], M, 2, args.sparseness_h)
    gpu32 = fit(xp, V32, M, args.iterations, args.sparseness_h)
    gpu32_s = per_iteration(gpu32)
    products32_s = products_seconds(xp, V32, gpu32.W, gpu32.H, sync)
    del V32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu = nmf_sc(
            V_host,
            M,
            sparseness_h=args.sparseness_h,
            max_iter=args.cpu_iterations,
            tol=0,
            random_state=0,
        )
    cpu_s = per_iteration(cpu)  # as the GPU's: the first (the start's halvings of mu) left out
    common = min(cpu.n_iter, gpu.n_iter) + 1
    gap = history_gap(gpu, cpu)

    n_fast = args.accelerated_iterations
    fit(xp, V[:, : min(T, 4096)], M, 2, args.sparseness_h, "accelerated")  # warm-up
    gpu_fast = fit(xp, V, M, n_fast, args.sparseness_h, "accelerated")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu_fast = nmf_sc(
            V_host,
            M,
            sparseness_h=args.sparseness_h,
            max_iter=n_fast,
            tol=0,
            random_state=0,
            solver="accelerated",
        )

    W, H = gpu.W, gpu.H  # V has max 1: W is in the run's units
    products_s = products_seconds(xp, V, W, H, sync)
    l1 = l1_for_sparseness(args.sparseness_h, T)
    ones = xp.ones(M)
    trial = H + 0.01 * xp.asarray(rng.random((M, T)))
    l1s = l1 * ones
    projection_s = best_seconds(lambda: project_rows(xp, trial, l1s, ones), sync)
    array_code_s = best_seconds(lambda: project_rows_by_arrays(xp, trial, l1s, ones), sync, 3)
    pass_s = best_seconds(lambda: float(trial.sum()), sync)
    fused = None if xp is np else fused_kernels()
    if fused is not None:
        warnings.simplefilter("ignore", NumbaPerformanceWarning)  # small grids: as project_rows
        warnings.filterwarnings("ignore", message=".*under-utilization")  # numba-cuda's class
        forms, how, fused_note = time_forms(xp, fused, trial, l1s, ones, sync, pass_s, args.form)
    else:
        forms, fused_note = {}, ""
        how = "array code: Numba's CUDA target is missing" if xp is not np else "--numpy"

    print("| what | seconds |")
    print("|---|---|")
    print(
        f"| nmf_sc, GPU, float64, per iteration (median of {max(gpu.n_iter - 1, 1)}, "
        f"the first left out) | {gpu_s:.4f} |"
    )
    print(f"| nmf_sc, GPU, float32, per iteration | {gpu32_s:.4f} |")
    print(f"| the float32 iteration's products alone | {products32_s:.4f} |")
    print(
        f"| nmf_sc, CPU ({os.cpu_count()} logical cores), float64, per iteration "
        f"(median of {max(cpu.n_iter - 1, 1)}, the first left out) | {cpu_s:.3f} |"
    )
    print(
        f"| the iteration's products alone, GPU (W^T V, W^T W H, H H^T, V H^T) | {products_s:.4f} |"
    )
    floor_trials, floor_in_projection = projections_per_iteration(small_projections)
    print(
        f"| the same iteration on {N} x {small} (the host's floor: launches, host reads, "
        f"Python), per iteration; its {floor_trials:g} projections | "
        f"{floor_s:.4f}; {floor_in_projection:.4f} |"
    )
    print(
        f"| projection of H's {M} rows of {T}, GPU, as nmf_sc does it ({how}) "
        f"| {projection_s:.5f} |"
    )
    for form in fused_module.FORMS:
        seconds = f"{forms[form][0]:.5f}" if form in forms else "not run"
        print(f"| the same, fused kernels, form {form!r} | {seconds} |")
    for form in fused_module.FORMS:
        seconds = f"{forms[form][1]:.5f}" if form in forms else "not run"
        print(f"| one of those rows (the accelerated solver's), form {form!r} | {seconds} |")
    print(f"| the same, array code (the fallback) | {array_code_s:.5f} |")
    print(f"| one pass over them (a sum), GPU | {pass_s:.5f} |")
    print(
        f'| nmf_sc(solver="accelerated"), GPU, float64, per iteration '
        f"(median of {gpu_fast.n_iter}) | {per_iteration(gpu_fast, skip=0):.4f} |"
    )
    print(
        f'| nmf_sc(solver="accelerated"), CPU, float64, per iteration '
        f"(median of {cpu_fast.n_iter}) | {per_iteration(cpu_fast, skip=0):.3f} |"
    )
    print(
        f"\nObjective histories, GPU vs CPU over {common - 1} iterations: "
        f"max relative gap {gap:.1e}; solver='accelerated' over {n_fast}: "
        f"{history_gap(gpu_fast, cpu_fast):.1e}."
    )
    if fused is not None:
        print(fused_note + f"; the array code {array_code_s / pass_s:.1f} passes' time.")
    trials, in_projection = projections_per_iteration(projections)
    rest = gpu_s - in_projection
    print(
        f"In the GPU float64 run, per iteration (medians, the first left out): {trials:g} "
        f"projections (one per line search trial) taking {in_projection:.4f} s; the rest "
        f"of the iteration, {rest:.4f} s, is {rest / products_s:.2f}x "
        f"the products alone. CPU start to end: {cpu.times[-1]:.1f} s.\n"
    )
    checks = [
        (cpu_s / gpu_s, MIN_GPU_OVER_CPU, ">=", "GPU over the CPU's cores, per iteration"),
        (gpu_s / products_s, MAX_ITERATION_OVER_PRODUCTS, "<=", "GPU iteration over its products"),
        (projection_s / pass_s, MAX_PROJECTION_OVER_PASS, "<=", "projection over one pass"),
        (gpu_s / gpu32_s, MIN_FLOAT32_OVER_FLOAT64, ">=", "float32 over float64 speed"),
        (floor_s / MAX_FLOOR_SECONDS, 1.0, "<=", f"iteration on {small} columns over 1.5 ms"),
        (
            per_iteration(cpu_fast, skip=0) / per_iteration(gpu_fast, skip=0),
            MIN_ACCELERATED_GPU_OVER_CPU,
            ">=",
            "accelerated, GPU over the CPU's cores, per iteration",
        ),
    ]
    passed = []
    for value, target, sense, text in checks:
        ok = value >= target if sense == ">=" else value <= target
        passed.append(ok)
        print(f"- {'PASS' if ok else 'FAIL'}: {text}: {value:.2f}x (target {sense} {target:g}x)")
    print(f"\nThe runs' fused projection: form {args.form!r}.")
    print(f"GPU: {card_name(xp)}. CPU: {cpu_name()}, {os.cpu_count()} logical cores.")
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}"
        + (
            ""
            if xp is np
            else f", CuPy {xp.__version__}, CUDA runtime {xp.cuda.runtime.runtimeGetVersion()}"
        )
        + f". {time.perf_counter() - wall:.0f} s in all."
    )
    return 0 if all(passed) else 1


if __name__ == "__main__":
    sys.exit(main())
