"""nmf_sc and nmf_euclidean on a Dask array V, on whatever Dask scheduler is active.

The design (see ``docs/distributed.md``): V (N x T) is chunked along its
samples only; W (N x M, small) lives on the client; H (M x T) is a list of
chunks, one per chunk of V's columns, persisted where the scheduler keeps
data (on the workers of a ``dask.distributed`` cluster). Per iteration the
client sends W and receives tree reductions of M x M, N x M or M x 8
per-chunk results; V is never gathered on one process, nor is a row of H.

- :mod:`~nmfsc.dask_backend.chunked`: the chunk lists, the tree reductions and
  the data object (max(V), ||V||^2 and the products of V / max(V)).
- :mod:`~nmfsc.dask_backend.projection`: Hoyer's projection of H's rows, each
  pass one reduction of per-chunk statistics.
- :mod:`~nmfsc.dask_backend.steps`: the iterations of nmf_sc and nmf_euclidean
  on chunked H.
- :mod:`~nmfsc.dask_backend.stack_checkpoint`: checkpoints with H saved chunk-wise.
- :mod:`~nmfsc.dask_backend.run`: the loop, the start and the result.

Nothing here is imported by ``import nmfsc``: the solvers recognise a Dask
array with :func:`is_dask_array` (which imports nothing) and import this
package's modules, and with them Dask, only then.
"""

from __future__ import annotations

import numpy as np

__all__ = ["dask_frobenius_norm", "is_dask_array", "solve_on_dask"]


def is_dask_array(V):
    """Whether V is a ``dask.array.Array``, decided without importing Dask."""
    cls = type(V)
    return cls.__name__ == "Array" and cls.__module__.startswith("dask.array")


def solve_on_dask(solver, V, n_components, settings, *params):
    """Run ``solver`` ("nmf_sc" with its sparseness_w, sparseness_h, or
    "nmf_euclidean") on the Dask array V; Dask is imported only now."""
    from nmfsc.dask_backend import run

    if solver == "nmf_sc":
        return run.dask_nmf_sc(V, n_components, *params, settings)
    return run.dask_nmf_euclidean(V, n_components, settings)


def dask_frobenius_norm(V, scale):
    """``||V||_F`` of the Dask array V as ``scale * ||V / scale||_F`` (one
    reduction of per-chunk sums of squares; V is not gathered)."""
    from nmfsc.dask_backend.chunked import compute, reduce_tree, squares_chunk, task

    parts = [task(squares_chunk, part, scale) for part in V.to_delayed().ravel()]
    return scale * float(np.sqrt(compute(reduce_tree(parts))[0]))
