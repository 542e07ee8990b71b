"""Missing entries of an estimator's X: ``SparseNMF(missing_values=np.nan)``.

:func:`observed_entries` turns X with NaN holes into what the masked solvers
take (:mod:`nmfsc.solvers.masked`): X with zeros in the holes, and the mask
of the observed entries (None when nothing is missing, so that such X runs
the unmasked solver and gives its iterates bit for bit).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_missing_values", "observed_entries"]


def check_missing_values(value: Any) -> bool:
    """Whether NaN marks missing entries: ``missing_values`` is None (no: NaN
    is an error) or NaN (yes); anything else is refused."""
    if value is None:
        return False
    if isinstance(value, (float, np.floating)) and np.isnan(value):
        return True
    raise ValueError(f"missing_values must be None or np.nan, got {value!r}")


def observed_entries(X: Any, name: str) -> tuple[Any, np.ndarray | None]:
    """``(X with zeros where NaN, mask of the observed entries or None)`` of
    dense X (n_samples, n_features) checked but for its NaN; a scipy.sparse
    X without NaN as it is (nothing is missing); a clear error for a
    scipy.sparse X that stores NaN, negative entries, or X with no observed
    entry."""
    if hasattr(X, "nnz"):
        if not np.isnan(X.data).any():
            return X, None
        raise TypeError(
            f"{name}: missing values (NaN) need dense data; for scipy.sparse data whose "
            "stored entries are the observed ones, use nmfsc.nmf_sc(V, k, mask='stored')"
        )
    missing = np.isnan(X)
    if not missing.any():
        return X, None
    if missing.all():
        raise ValueError(f"{name}: every entry of X is NaN (missing): there is nothing to fit")
    filled = np.where(missing, X.dtype.type(0), X)
    if np.any(filled < 0):
        raise ValueError(f"Negative values in data passed to {name} (input X)")
    return filled, ~missing
