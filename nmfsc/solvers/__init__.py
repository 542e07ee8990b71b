"""The NMF solvers: nmf_sc (Hoyer 2004) and the baselines it was compared with.

Every solver takes V (N x T, non-negative, one sample per column) and the
number of components M, works on ``V / max(V)``, and returns an
:class:`NMFResult` whose W is back in the units of V (``W @ H ~ V``).

Modules: ``registry`` (the table of every solver and ``solver=`` variant),
``dispatch`` (how a call finds what runs it; where backends register),
``framework`` (the parts below, for backends, compare and the estimator),
``hoyer`` (nmf_sc, Hoyer's sparseness-constrained solver),
``standard`` (Lee & Seung's Euclidean and divergence NMF), ``penalized``
(local and sparse NMF), ``_loop`` (the shared outer loop and stopping rule),
``_settings`` (the loop keywords, :class:`LoopSettings`), ``_start`` (the
random and NNDSVD starts), ``_data`` (the products of dense, sparse or
memory-mapped V that the updates use), ``_objective`` (the Euclidean
objective and Gram products),
``checkpoint`` (saving and resuming), ``_docs`` (the shared docstring
sections), ``_result`` (the result and warning). The input checks are in
:mod:`nmfsc._validation`.
"""

from nmfsc.solvers import registry  # noqa: F401  (importing it installs the solvers' table)
from nmfsc.solvers._result import (
    ConvergenceWarning,
    DegenerateFitWarning,
    IterationState,
    NMFResult,
)
from nmfsc.solvers.checkpoint import CheckpointMismatchError
from nmfsc.solvers.hoyer import nmf_sc
from nmfsc.solvers.penalized import local_nmf, sparse_nmf
from nmfsc.solvers.standard import nmf_divergence, nmf_euclidean

__all__ = [
    "CheckpointMismatchError",
    "ConvergenceWarning",
    "DegenerateFitWarning",
    "IterationState",
    "NMFResult",
    "local_nmf",
    "nmf_divergence",
    "nmf_euclidean",
    "nmf_sc",
    "sparse_nmf",
]
