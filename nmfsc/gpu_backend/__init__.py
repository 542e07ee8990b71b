"""nmf_sc, nmf_euclidean and the projection on a GPU: V as a CuPy array.

The design (see ``docs/gpu.md``): V, W and H stay on the device for the
whole run; the products are cuBLAS's (CuPy's matmul), the projection of
the factors' rows is array code (:mod:`~nmfsc.gpu_backend.device_projection`), and
only scalars (the objective, the line search's test) and M x M or M-long
results come back to the host. The loop, the stopping rules, the warnings,
the callback and the checkpoints are the solvers' own
(:class:`~nmfsc.solvers.framework.Run`); checkpoints copy W and H to the
host to save them, never V.

The array code is written once over an array namespace ``xp`` (``cupy`` on
a GPU; ``numpy`` runs the very same code on the CPU, which is how it is
tested where no GPU is):

- :mod:`~nmfsc.gpu_backend.arrays`: the namespace of an array, the checks
  of V, the float64 sums;
- :mod:`~nmfsc.gpu_backend.device_projection`: Hoyer's projection of many rows
  at once, exact (Hoyer's passes over all rows, each a few reductions, to
  the closed-form threshold of a consistent support,
  :mod:`~nmfsc.gpu_backend.thresholds`; a sort where they do not settle);
- :mod:`~nmfsc.gpu_backend.fused`: the same projection of CuPy rows as
  fused Numba CUDA kernels (:mod:`~nmfsc.gpu_backend.cuda_kernels`, four
  launches; :mod:`~nmfsc.gpu_backend.grid_kernels`, one), used
  where numba-cuda is installed; numba.cuda is imported only then, by
  :mod:`~nmfsc.gpu_backend.cuda_target` (which lets numba-cuda 0.30 load
  beside numpy 2.5);
- :mod:`~nmfsc.gpu_backend.steps`: the data object and the iterations of
  nmf_sc (``solver="hoyer"`` and ``"accelerated"``) and nmf_euclidean;
- :mod:`~nmfsc.gpu_backend.sweeps`: the accelerated solver's block
  coordinate sweeps over a factor's rows;
- :mod:`~nmfsc.gpu_backend.run`: the loop's hooks for device arrays.

The package plugs into nmfsc through :mod:`nmfsc.backends`: importing it
(``import nmfsc`` does) registers :data:`GPU_BACKEND`, which accepts a CuPy
array (:func:`is_cupy_array`, which imports nothing) and declares what it
runs: the steps of nmf_sc (both solvers), nmf_euclidean and
fit_coefficients, its projection, its norm and its copy from the host.
CuPy is imported only when such a run starts.
"""

from __future__ import annotations

from nmfsc.backends import Backend, register_backend
from nmfsc.solvers.accelerated import AcceleratedSteps
from nmfsc.solvers.coefficients import CoefficientSteps
from nmfsc.solvers.hoyer import HoyerSteps
from nmfsc.solvers.standard import EuclideanSteps

__all__ = ["GPU_BACKEND", "cupy_or_error", "is_cupy_array", "solve_on_gpu", "to_gpu"]


def is_cupy_array(V):
    """Whether V is a ``cupy.ndarray``, decided without importing CuPy."""
    return type(V).__module__.startswith("cupy")


def cupy_or_error():
    """The ``cupy`` module, or an ImportError saying how to get it."""
    try:
        import cupy
    except ImportError:
        raise ImportError(
            'the GPU backend needs CuPy: pip install "nmfsc[gpu]" (CuPy for CUDA 12), '
            "or run on the CPU"
        ) from None
    return cupy


def to_gpu(V):
    """V copied to the current GPU as a CuPy array; an ImportError without
    CuPy, a RuntimeError (one line) where CUDA finds no GPU."""
    cupy = cupy_or_error()
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # CUDA's own error types differ by version
        raise RuntimeError(f"CuPy finds no usable GPU ({error}); run on the CPU") from None
    if count < 1:
        raise RuntimeError("CuPy finds no GPU; run on the CPU")
    return cupy.asarray(V)


def solve_on_gpu(steps, V, n_components, params, settings):
    """Run the backend's steps class ``steps`` (device arrays) on the device
    array V (:func:`nmfsc.gpu_backend.run.run_on_device`)."""
    from nmfsc.gpu_backend.run import run_on_device

    return run_on_device(steps, V, n_components, params, settings)


def _project_batch_on_device(X, l1, l2, axis, nonneg, method, return_passes):
    from nmfsc.gpu_backend.device_projection import project_batch_device

    return project_batch_device(X, l1, l2, axis, nonneg, method, return_passes)


def _frobenius_norm_on_device(V, scale):
    from nmfsc._array_api import namespace
    from nmfsc.gpu_backend.arrays import device_frobenius_norm

    return device_frobenius_norm(namespace(V), V, scale)


_STEPS = "nmfsc.gpu_backend.steps."
#: The GPU backend: what it runs and how (:class:`nmfsc.backends.Backend`).
GPU_BACKEND = Backend(
    "gpu",
    is_cupy_array,
    solve_on_gpu,
    steps={
        HoyerSteps: _STEPS + "DeviceHoyerSteps",
        AcceleratedSteps: _STEPS + "DeviceAcceleratedSteps",
        EuclideanSteps: _STEPS + "DeviceEuclideanSteps",
        CoefficientSteps: _STEPS + "DeviceCoefficientSteps",
    },
    array_name="CuPy (GPU) array",
    array_api=True,
    project_batch=_project_batch_on_device,
    frobenius_norm=_frobenius_norm_on_device,
    from_host=to_gpu,
    to_memory="cupy.asnumpy(X)",
)
register_backend(GPU_BACKEND)
