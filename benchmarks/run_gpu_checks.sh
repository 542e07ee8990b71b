#!/usr/bin/env bash
# Issue 33's GPU checks in one go, for a machine with an NVIDIA GPU and CuPy:
# the GPU tests (tests/test_gpu.py, including those that skip without a GPU,
# and tests/test_gpu_kernels.py, the fused projection's kernels under Numba's
# CUDA simulator), then benchmarks/bench_gpu.py (arguments are passed on to
# it). Runs from a checkout without installing it (needs numpy, numba, scipy,
# pytest, hypothesis and CuPy; any cupy-cuda1Nx that matches the driver; and
# numba-cuda for the fused projection, else the array code projects).
#
#     bash benchmarks/run_gpu_checks.sh            # about 15 GB of GPU memory
set -o pipefail
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 -c "import cupy; print('CuPy', cupy.__version__, 'GPUs:', cupy.cuda.runtime.getDeviceCount())" || exit 1
python3 -c "
from importlib.metadata import PackageNotFoundError, version
try:
    print('numba-cuda', version('numba-cuda'))
except PackageNotFoundError:
    print('numba-cuda is not installed: numba', version('numba'), 'provides numba.cuda')
from nmfsc.gpu_backend.projection import fused_kernels
print('fused projection kernels:', 'yes' if fused_kernels() else 'NO (the array code projects)')
"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -m pytest tests/test_gpu.py tests/test_gpu_kernels.py -q -p no:cacheprovider -rs
tests=$?
python3 benchmarks/bench_gpu.py "$@"
bench=$?
echo "tests exit $tests, benchmark exit $bench (1: a target missed)"
exit $(( tests != 0 ))
