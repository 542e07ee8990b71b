"""The loop of a run on device arrays: :class:`~nmfsc.solvers.framework.Run`
with its hooks for V, W and H kept on the device.

Only scalars, M-long and M x M arrays cross to the host during the
iterations, and, with ``solver="accelerated"``, a factor of at most
:data:`~nmfsc.gpu_backend.sweeps.HOST_ENTRIES` entries with the M x M and
M x n matrices of its sub-problem (:mod:`nmfsc.gpu_backend.sweeps`: swept
on the host, and back). A checkpoint copies W and H to the host to write them (as the
in-memory format, so :func:`nmfsc.solvers.checkpoint.load_checkpoint`
validates it) and a resumed run copies them back; V never leaves the
device: its fingerprint is a digest of its row and column sums and of two
products with fixed random vectors, computed there.
"""

from __future__ import annotations

import dataclasses
import hashlib
from functools import partial

import numpy as np

from nmfsc._array_api import namespace, to_host
from nmfsc.gpu_backend.arrays import check_device_data
from nmfsc.gpu_backend.device_projection import release_fused_workspaces
from nmfsc.gpu_backend.steps import DeviceData
from nmfsc.solvers.checkpoint import save_checkpoint
from nmfsc.solvers.framework import Run

__all__ = ["FINGERPRINT_SEED", "DeviceRun", "run_on_device"]

#: The seed of the fingerprint's two random weight vectors (:meth:`DeviceRun.fingerprint`).
FINGERPRINT_SEED = 20041457


def run_on_device(steps, V, n_components, params, settings, stacklevel=6):
    """Run the device steps class ``steps`` (what
    :data:`~nmfsc.gpu_backend.GPU_BACKEND` declares for an in-memory one,
    ``GPU_BACKEND.steps_for(HoyerSteps)``) with its keywords ``params`` on
    the device array V; the result's W and H are device
    arrays. V may be a NumPy array: the same code then runs on the CPU (the
    tests do this). ``stacklevel`` points a ConvergenceWarning at the caller
    of the public solver (Run.run, this function, the backend's entry,
    ``run_steps``, the solver, its settings decorator)."""
    make_steps = partial(steps, **params)
    try:
        return DeviceRun(make_steps, V, n_components, params, settings).run(stacklevel=stacklevel)
    finally:
        release_fused_workspaces()  # kept between the run's projections only


class DeviceRun(Run):
    """A :class:`~nmfsc.solvers.framework.Run` whose V, W and H are device arrays.

    A start given on the device (``W_init``, ``H_init`` as CuPy arrays) is
    copied to the host, where the loop checks and scales it as any start,
    and back to the device by the steps' ``initialize``: W and H, never V.
    """

    def __init__(self, make_steps, V, n_components, solver_params, settings):
        starts = {
            name: to_host(start)
            for name in ("W_init", "H_init")
            if (start := getattr(settings, name)) is not None and namespace(start) is not np
        }
        settings = dataclasses.replace(settings, **starts)
        super().__init__(make_steps, V, n_components, solver_params, settings)

    def open_data(self, V):
        self.xp = namespace(V)
        self.V, self.scale = check_device_data(self.xp, V)
        self.data = DeviceData(self.xp, self.V, self.scale)

    def check_settings(self):
        if self.settings.init not in ("random", "custom"):
            raise ValueError(
                f"init={self.settings.init!r} is not computed on a GPU; use init='random' "
                "or pass W_init and H_init"
            )

    def fingerprint(self):
        """``"gpu2:NxT:sha256"`` of V's row and column sums (float64) and of its
        products with two fixed random vectors (``V u`` and ``v^T V``, in V's
        dtype: no float64 copy of V), computed on the device. The sums alone
        cannot tell apart two V with the same margins (count tables with the
        same totals); the random weights can, but for differences below the
        sums' rounding."""
        xp = self.xp
        N, T = self.V.shape
        weights = np.random.default_rng(FINGERPRINT_SEED)
        u, v = (xp.asarray(weights.random(n).astype(self.V.dtype)) for n in (T, N))
        digest = hashlib.sha256(b"gpu2")
        for vector in (
            xp.sum(self.V, axis=1, dtype=xp.float64),
            xp.sum(self.V, axis=0, dtype=xp.float64),
            self.V @ u,
            v @ self.V,
        ):
            digest.update(np.ascontiguousarray(to_host(vector), dtype=np.float64).data)
        return f"gpu2:{N}x{T}:{digest.hexdigest()}"

    def load(self, path):
        state, iteration, history, times = super().load(path)
        state = {
            key: self.xp.asarray(value) if key in ("W", "H") else value
            for key, value in state.items()
        }
        return state, iteration, history, times

    def write_checkpoint(self, path, *, state, **rest):
        """:func:`save_checkpoint` of the state with W and H copied to the host."""
        host = {key: to_host(v) if key in ("W", "H") else v for key, v in state.items()}
        save_checkpoint(path, state=host, **rest)

    def callback_factors(self, state):
        """W (in V's units) and H as device arrays (new W, the state's H)."""
        return state["W"] * self.scale, state["H"]

    def final_factors(self, state):
        xp = self.xp
        H = state["H"].copy()
        relative_error = self.data.relative_error(state["W"], H)
        W = state["W"] * self.scale
        if not bool(xp.isfinite(W).all()):
            raise FloatingPointError(
                f"W in V's units overflows float64 (max(V) = {self.scale:.3g}): divide V by a "
                "power of ten (e.g. 1e10) and multiply W by it afterwards"
            )
        return {
            "W": W,
            "H": H,
            "sparseness_W": _sparseness(xp, W, 0),
            "sparseness_H": _sparseness(xp, H, 1),
            "relative_error": relative_error,
        }


def _sparseness(xp, X, axis):
    """Hoyer's sparseness of X's columns (rows), NaN for a zero vector, as a
    host array (:func:`nmfsc.sparseness.sparseness_or_nan`'s values)."""
    n = X.shape[axis]
    if n < 2:
        return np.full(X.shape[1 - axis], np.nan)
    l1 = xp.sum(xp.abs(X), axis=axis, dtype=xp.float64)
    l2 = xp.sqrt(xp.sum(X * X, axis=axis, dtype=xp.float64))
    root = np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (root - l1 / l2) / (root - 1.0)
    return to_host(xp.where(l2 > 0, s, xp.nan))
