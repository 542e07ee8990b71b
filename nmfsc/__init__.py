"""nmfsc: non-negative matrix factorization with sparseness constraints.

A Python implementation of Hoyer (2004), "Non-negative matrix factorization with
sparseness constraints", Journal of Machine Learning Research 5:1457-1469.
"""

from nmfsc import (
    dask_backend,  # noqa: F401  (registers the Dask backend; imports no Dask)
    gpu_backend,  # noqa: F401  (registers the GPU backend; imports no CuPy)
)
from nmfsc._version import __version__ as __version__
from nmfsc.comparison import Comparison, compare
from nmfsc.estimator import SparseNMF
from nmfsc.projection import project, project_average, project_batch
from nmfsc.readers import DataFileError, read_matrix
from nmfsc.scores import locality, orientation, sparseness_summary, summarize_scores
from nmfsc.solvers import (
    CheckpointMismatchError,
    ConvergenceWarning,
    DegenerateFitWarning,
    NMFResult,
    local_nmf,
    nmf_divergence,
    nmf_euclidean,
    nmf_sc,
    sparse_nmf,
)
from nmfsc.sparseness import l1_for_sparseness, sparseness, sparseness_for_l1

__all__ = [
    "CheckpointMismatchError",
    "Comparison",
    "ConvergenceWarning",
    "DataFileError",
    "DegenerateFitWarning",
    "NMFResult",
    "SparseNMF",
    "compare",
    "l1_for_sparseness",
    "local_nmf",
    "locality",
    "nmf_divergence",
    "nmf_euclidean",
    "nmf_sc",
    "orientation",
    "project",
    "project_average",
    "project_batch",
    "read_matrix",
    "sparse_nmf",
    "sparseness",
    "sparseness_for_l1",
    "sparseness_summary",
    "summarize_scores",
]
