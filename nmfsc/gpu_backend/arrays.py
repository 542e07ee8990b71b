"""The GPU backend's array code around its runs, over an array namespace ``xp``.

``xp`` is the module of the arrays a run works on (:func:`nmfsc._array_api.namespace`:
``cupy`` for CuPy arrays, ``numpy`` otherwise). The backend's array code
calls only functions the two share, so the same lines run on a GPU and, in
the tests, on the CPU; :func:`stepped` alone has a CuPy form of its own (one
fused kernel), whose NumPy form is the same operations.
"""

from __future__ import annotations

import numpy as np

from nmfsc._array_api import as_float_array_in

__all__ = ["check_device_data", "device_frobenius_norm", "inner", "stepped"]


def stepped(xp, X, D, mu):
    """``X - mu * D``, the trial of a gradient step (mu a Python float,
    taken in X's dtype as NumPy takes it). On CuPy arrays, one kernel
    (``cupy.fuse``) reads X and D and writes the trial: three passes over
    the factor's memory, where the two operations make five (the product
    is written, then read again); its entries may differ from NumPy's in
    the last bit (the GPU may fuse the multiply and the subtraction)."""
    if xp is np or D.dtype != X.dtype:  # (the solvers' X and D share a dtype)
        return X - mu * D
    return _fused_step(xp)(X, D, X.dtype.type(mu))


_FUSED_STEP: list = []


def _fused_step(xp):
    """``cupy.fuse`` of ``x - mu * d``, made once per process."""
    if not _FUSED_STEP:
        _FUSED_STEP.append(xp.fuse(kernel_name="nmfsc_stepped")(lambda x, d, mu: x - mu * d))
    return _FUSED_STEP[0]


def inner(xp, A, B):
    """``sum(A * B)`` as a Python float: ``vdot`` for float64 (the in-memory
    solvers' operation), the products summed in float64 otherwise."""
    if A.dtype == np.float64 and B.dtype == np.float64:
        return float(xp.vdot(A, B))
    return float(xp.sum(A * B, dtype=xp.float64))


def device_frobenius_norm(xp, X, scale):
    """``||X||_F`` as ``scale * ||X / scale||_F`` (``scale``: max(X) > 0), summed
    on the device by :func:`inner`: the value
    :func:`nmfsc.solvers.framework.frobenius_norm` gives for a host array,
    with no copy of X to the host (a scaled copy on the device)."""
    normalised = X / scale
    return scale * float(np.sqrt(inner(xp, normalised, normalised)))


def check_device_data(xp, V):
    """V checked as the in-memory solvers check it (2-D, non-empty, real,
    finite, non-negative, not all zeros), on the device, and max(V).

    float32 and float64 stay as they are, other real dtypes become float64
    (on the device). Each error is one line naming the problem."""
    V = as_float_array_in(xp, V, "V", 2, check_finite=False)
    bad = int(xp.count_nonzero(~xp.isfinite(V)))
    if bad:
        raise ValueError(f"V contains {bad} NaN or infinite values; remove or impute them")
    low = float(V.min())
    if low < 0:
        count = int(xp.count_nonzero(V < 0))
        raise ValueError(f"V has {count} negative entries (min {low!r}); NMF needs V >= 0")
    scale = float(V.max())
    if scale == 0.0:
        raise ValueError(f"V is all zeros (shape {V.shape}); there is nothing to factorize")
    return V, scale
