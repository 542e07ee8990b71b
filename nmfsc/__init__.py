"""nmfsc: non-negative matrix factorization with sparseness constraints.

A Python implementation of Hoyer (2004), "Non-negative matrix factorization with
sparseness constraints", Journal of Machine Learning Research 5:1457-1469.
"""

__version__ = "0.1.0.dev0"
