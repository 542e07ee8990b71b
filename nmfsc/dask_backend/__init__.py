"""nmf_sc and nmf_euclidean on a Dask array V, on whatever Dask scheduler is active.

The design (see ``docs/distributed.md``): V (N x T) is chunked along its
samples only; W (N x M, small) lives on the client; H (M x T) is a list of
chunks, one per chunk of V's columns, persisted where the scheduler keeps
data (on the workers of a ``dask.distributed`` cluster). Per iteration the
client sends W and receives tree reductions of M x M, N x M or M x 8
per-chunk results; V is never gathered on one process, nor is a row of H.

- :mod:`~nmfsc.dask_backend.chunked`: the chunk lists, the tree reductions and
  the data object (max(V), ||V||^2 and the products of V / max(V)).
- :mod:`~nmfsc.dask_backend.chunked_projection`: Hoyer's projection of H's rows, each
  pass one reduction of per-chunk statistics.
- :mod:`~nmfsc.dask_backend.steps`: the iterations of nmf_sc and nmf_euclidean
  on chunked H.
- :mod:`~nmfsc.dask_backend.stack_checkpoint`: checkpoints with H saved chunk-wise.
- :mod:`~nmfsc.dask_backend.run`: the loop, the start and the result.

The package plugs into nmfsc through :mod:`nmfsc.backends`: importing it
(``import nmfsc`` does) registers :data:`DASK_BACKEND`, which accepts a Dask
array (:func:`is_dask_array`, which imports nothing) and declares what it
runs: the steps of nmf_sc (``solver="hoyer"``) and nmf_euclidean, and its
norm. Its modules, and with them Dask, are imported only when such a run
starts.
"""

from __future__ import annotations

import numpy as np

from nmfsc.backends import Backend, register_backend
from nmfsc.solvers.hoyer import HoyerSteps
from nmfsc.solvers.standard import EuclideanSteps

__all__ = ["DASK_BACKEND", "dask_frobenius_norm", "is_dask_array", "solve_on_dask"]


def is_dask_array(V):
    """Whether V is a ``dask.array.Array``, decided without importing Dask."""
    cls = type(V)
    return cls.__name__ == "Array" and cls.__module__.startswith("dask.array")


def solve_on_dask(steps, V, n_components, params, settings):
    """Run the backend's steps class ``steps`` (chunked H) on the Dask array V
    (:func:`nmfsc.dask_backend.run.run_on_dask`); Dask is imported only now."""
    from nmfsc.dask_backend.run import run_on_dask

    return run_on_dask(steps, V, n_components, params, settings)


def dask_frobenius_norm(V, scale):
    """``||V||_F`` of the Dask array V as ``scale * ||V / scale||_F`` (one
    reduction of per-chunk sums of squares; V is not gathered)."""
    from nmfsc.dask_backend.chunked import compute, reduce_tree, squares_chunk, task

    parts = [task(squares_chunk, part, scale) for part in V.to_delayed().ravel()]
    return scale * float(np.sqrt(compute(reduce_tree(parts))[0]))


_STEPS = "nmfsc.dask_backend.steps."
#: The Dask backend: what it runs and how (:class:`nmfsc.backends.Backend`).
DASK_BACKEND = Backend(
    "dask",
    is_dask_array,
    solve_on_dask,
    steps={HoyerSteps: _STEPS + "DaskHoyerSteps", EuclideanSteps: _STEPS + "DaskEuclideanSteps"},
    frobenius_norm=dask_frobenius_norm,
    to_memory="X.compute()",
)
register_backend(DASK_BACKEND)
