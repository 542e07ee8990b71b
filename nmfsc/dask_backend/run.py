"""The run of a Dask solver: :class:`nmfsc.solvers.framework.Run` with H chunked.

The loop (stopping rule, stop reasons, warnings, callback, checkpoint
schedule) is :class:`~nmfsc.solvers.framework.Run`'s; :class:`DaskRun` overrides
only its hooks, for H a :class:`~nmfsc.dask_backend.chunked.ChunkedRows`:
the data (:class:`~nmfsc.dask_backend.chunked.DaskData`), the checkpoint
format (a Zarr stack), the callback's view of H and the result. The start is
the in-memory solver's, formed on the client (W and H drawn from
``random_state`` or given as W_init / H_init, as NumPy arrays), then H is
split into V's column chunks; the result's H is a ``dask.array.Array`` of the
persisted chunks.
"""

from __future__ import annotations

import contextlib
import os
from functools import partial

import numpy as np

from nmfsc.dask_backend.chunked import DaskData, compute, reduce_tree, task
from nmfsc.dask_backend.stack_checkpoint import load_stack_checkpoint, save_stack_checkpoint
from nmfsc.solvers.framework import Run
from nmfsc.sparseness import sparseness_or_nan

__all__ = ["DaskRun", "run_on_dask"]


def run_on_dask(steps, V, n_components, params, settings):
    """Run the chunked steps class ``steps`` (what
    :data:`~nmfsc.dask_backend.DASK_BACKEND` declares for an in-memory one)
    on the Dask array V (its keywords ``params`` already checked): the
    backend's ``run`` (:class:`nmfsc.backends.Backend`)."""
    make_steps = partial(steps, **params)
    with blas_threads_shared(V):
        return DaskRun(make_steps, V, n_components, params, settings).run(stacklevel=6)


@contextlib.contextmanager
def blas_threads_shared(V):
    """Under Dask's threaded scheduler, BLAS threads per task = cores // tasks at once.

    The threaded scheduler (and the in-process passes of
    :func:`~nmfsc.dask_backend.chunked.map_local`) run one task per core, each
    task's products (W^T V_c, V_c H_c^T) calling BLAS, whose own pool has a
    thread per core: on 2 cores, 4 threads then fight for 2 and the run is
    slower than when each task's BLAS keeps to one thread
    (``benchmarks/bench_dask.py``'s overhead part; benchmarks/README.md). With fewer column chunks
    than cores, each task gets cores // chunks BLAS threads. The limit
    (``threadpoolctl``) holds for the run only; other schedulers (synchronous:
    one task at a time; ``dask.distributed``: its workers already start with
    one BLAS thread) are left as they are.
    """
    import dask
    import dask.threaded
    from dask.base import get_scheduler
    from threadpoolctl import threadpool_limits

    if get_scheduler(collections=[V]) is not dask.threaded.get:
        yield
        return
    cores = dask.config.get("num_workers", None) or os.cpu_count() or 1
    at_once = max(1, min(len(V.chunks[1]), cores))
    with threadpool_limits(limits=max(1, cores // at_once), user_api="blas"):
        yield


class DaskRun(Run):
    """One run on a Dask array V: :class:`~nmfsc.solvers.framework.Run`'s loop,
    with the hooks for chunked H (module docstring)."""

    def open_data(self, V):
        self.data = DaskData(V)
        self.scale = self.data.scale

    def check_settings(self):
        if self.settings.init not in ("random", "custom"):
            raise ValueError(
                f"init={self.settings.init!r} is not available for a Dask array V; pass "
                "init='random' (the default) or W_init and H_init"
            )

    def fingerprint(self):
        return self.data.fingerprint()

    def load(self, path):
        return load_stack_checkpoint(path, self.meta, self.steps, self.data, self.shape)

    write_checkpoint = staticmethod(save_stack_checkpoint)

    def callback_factors(self, state):
        W = state["W"] * self.scale
        W.flags.writeable = False
        return W, state["H"].to_dask_array()

    def final_factors(self, state):
        H = state["H"]
        W = state["W"] * self.scale
        return {
            "W": W,
            "H": H.to_dask_array(),
            "sparseness_W": sparseness_or_nan(W, 0),
            "sparseness_H": row_sparseness(H),
            "relative_error": self.data.relative_error(W, H, state["W"]),
        }


def _row_norms(h):
    h = np.asarray(h, dtype=np.float64)
    return np.stack([np.abs(h).sum(axis=1), np.einsum("ij,ij->i", h, h), np.abs(h).max(axis=1)])


def _merge_norms(*parts):
    return np.stack(
        [sum(p[0] for p in parts), sum(p[1] for p in parts), np.max([p[2] for p in parts], axis=0)]
    )


def row_sparseness(H):
    """Hoyer's sparseness of every row of chunked H (NaN for a zero row): one reduction."""
    l1, ss, peak = compute(reduce_tree([task(_row_norms, h) for h in H.parts], _merge_norms))[0]
    T = H.shape[1]
    out = np.full(H.shape[0], np.nan)
    ok = peak > 0
    if T >= 2:
        root = np.sqrt(T)
        out[ok] = (root - l1[ok] / np.sqrt(ss[ok])) / (root - 1.0)
    return out
