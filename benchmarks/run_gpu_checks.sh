#!/usr/bin/env bash
# Issue 33's GPU checks in one go, for a machine with an NVIDIA GPU and CuPy:
# the GPU tests (tests/test_gpu.py, including those that skip without a GPU),
# then benchmarks/bench_gpu.py (arguments are passed on to it). Runs from a
# checkout without installing it (needs numpy, numba, scipy, pytest,
# hypothesis and CuPy; any cupy-cuda1Nx that matches the driver).
#
#     bash benchmarks/run_gpu_checks.sh            # about 15 GB of GPU memory
set -o pipefail
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 -c "import cupy; print('CuPy', cupy.__version__, 'GPUs:', cupy.cuda.runtime.getDeviceCount())" || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -m pytest tests/test_gpu.py -q -p no:cacheprovider -rs
tests=$?
python3 benchmarks/bench_gpu.py "$@"
bench=$?
echo "tests exit $tests, benchmark exit $bench (1: a target missed)"
exit $(( tests != 0 ))
