"""The NMF solvers: nmf_sc (Hoyer 2004) and the baselines it was compared with.

Every solver takes V (N x T, non-negative, one sample per column) and the
number of components M, works on ``V / max(V)``, and returns an
:class:`NMFResult` whose W is back in the units of V (``W @ H ~ V``).

Modules: ``nmfsc`` (the sparseness-constrained solver), ``baselines``
(Euclidean, divergence, local and sparse NMF), ``_loop`` (the shared outer
loop and stopping rule), ``checkpoint`` (saving and resuming), ``_common``
(input checks and the random start), ``_result`` (the result and warning).
"""

from nmfsc.solvers._result import ConvergenceWarning, IterationState, NMFResult
from nmfsc.solvers.baselines import local_nmf, nmf_divergence, nmf_euclidean, sparse_nmf
from nmfsc.solvers.checkpoint import CheckpointMismatchError
from nmfsc.solvers.nmfsc import nmf_sc

__all__ = [
    "CheckpointMismatchError",
    "ConvergenceWarning",
    "IterationState",
    "NMFResult",
    "local_nmf",
    "nmf_divergence",
    "nmf_euclidean",
    "nmf_sc",
    "sparse_nmf",
]
