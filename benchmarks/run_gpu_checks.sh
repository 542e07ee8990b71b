#!/usr/bin/env bash
# Issue 46's GPU checks in one go, for a machine with an NVIDIA GPU and CuPy,
# in an order that keeps the most wanted output when time is short: the
# versions and whether the fused projection's kernels compile, their accuracy
# (benchmarks/accuracy_gpu_projection.py --cupy), then benchmarks/bench_gpu.py
# (every GPU number; arguments are passed on to it), then
# benchmarks/profile_gpu_iteration.py (where the iteration's time goes),
# then the GPU tests (tests/test_gpu.py and tests/test_cuda_target.py, on 4
# processes where pytest-xdist is installed; the fused kernels' tests under
# Numba's CUDA simulator, tests/test_gpu_kernels.py, need no GPU: CI runs
# them). Meanwhile, from the start, Numba compiles nmfsc's CPU kernels in
# the background (its cache then serves the bench's CPU runs and the
# tests): on a fresh machine that takes a minute. Each part runs under its
# own time limit (seconds: BENCH_LIMIT, default 300; PROFILE_LIMIT, default
# 60; TESTS_LIMIT, default 240), so one slow part does not take the others'
# output with it. Runs from a checkout without installing it (needs
# numpy, numba, scipy, pytest, hypothesis and CuPy; any cupy-cuda1Nx that
# matches the driver; and numba-cuda for the fused projection, else the array
# code projects). FORM (default auto) is the fused projection's form in the
# bench's and the profile's runs (--form; both time each form's projection).
#
#     bash benchmarks/run_gpu_checks.sh            # about 15 GB of GPU memory
set -o pipefail
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 -c "import cupy; print('CuPy', cupy.__version__, 'GPUs:', cupy.cuda.runtime.getDeviceCount())" || exit 1
timeout 240 python3 -c "
import warnings
import numpy as np
from nmfsc import nmf_sc
V = np.abs(np.random.default_rng(0).standard_normal((288, 3000)))
with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    for solver in ('hoyer', 'accelerated'):
        nmf_sc(V, 72, sparseness_h=0.85, max_iter=2, tol=0, random_state=0, solver=solver)
" >/dev/null 2>&1 &
warm_up=$!
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
timeout 120 python3 -c "
import time
from importlib.metadata import PackageNotFoundError, version
for name in ('numpy', 'numba', 'numba-cuda'):
    try:
        print(name, version(name))
    except PackageNotFoundError:
        print(name, 'is not installed')
import cupy
from nmfsc import l1_for_sparseness
from nmfsc.gpu_backend.device_projection import fused_kernels
fused = fused_kernels()
print('fused projection kernels:', 'yes' if fused else 'NO (the array code projects)')
if fused:
    start = time.perf_counter()
    for dtype in (cupy.float64, cupy.float32):
        X = cupy.abs(cupy.random.default_rng(0).standard_normal((4, 5000))).astype(dtype)
        for form in ('rows', 'grid'):
            info = {}
            fused(cupy, X, cupy.full(4, l1_for_sparseness(0.8, 5000)), cupy.ones(4),
                  dtype=dtype, form=form, info=info)
            print('form', form, 'ran as', info['form'], dtype.__name__)
    cupy.cuda.Device().synchronize()
    print(f'compiled and ran them (float64 and float32) in {time.perf_counter() - start:.1f} s')
"
timeout 60 python3 benchmarks/accuracy_gpu_projection.py --cupy  # the fused kernels' gaps to the CPU
wait "$warm_up"  # the CPU kernels compiled: the bench's CPU times are the kernels' own
timeout "${BENCH_LIMIT:-300}" python3 benchmarks/bench_gpu.py --form "${FORM:-auto}" "$@"
bench=$?
timeout "${PROFILE_LIMIT:-60}" python3 benchmarks/profile_gpu_iteration.py --iterations 6 \
    --form "${FORM:-auto}"
workers=$(python3 -c "import xdist" 2>/dev/null && echo "-n 4 -p no:benchmark")
# shellcheck disable=SC2086  # $workers: empty, or the words of xdist's options
timeout "${TESTS_LIMIT:-240}" python3 -m pytest tests/test_gpu.py tests/test_cuda_target.py \
    -q -p no:cacheprovider -rs $workers
tests=$?
echo "benchmark exit $bench (1: a target missed; 124: out of time), tests exit $tests"
exit $(( tests != 0 ))
