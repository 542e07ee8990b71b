"""nmfsc: non-negative matrix factorization with sparseness constraints.

A Python implementation of Hoyer (2004), "Non-negative matrix factorization with
sparseness constraints", Journal of Machine Learning Research 5:1457-1469.
"""

from nmfsc.projection import project, project_batch
from nmfsc.scores import locality, orientation, sparseness_summary, summarize_scores
from nmfsc.sparseness import l1_for_sparseness, sparseness, sparseness_for_l1

__version__ = "0.1.0.dev0"

__all__ = [
    "l1_for_sparseness",
    "locality",
    "orientation",
    "project",
    "project_batch",
    "sparseness",
    "sparseness_for_l1",
    "sparseness_summary",
    "summarize_scores",
]
