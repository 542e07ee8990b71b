r"""Held-out entries and missing values for :func:`nmfsc.compare`.

``holdout=f`` hides a fraction f of the observed entries of V, drawn without
replacement by ``numpy.random.default_rng(holdout_seed)``: the same entries
for every method and every seed. Each method is fitted to the rest, and its
error on the hidden entries,

.. math:: e_{\mathrm{held\ out}} = \lVert (V - W H)_{\mathcal H} \rVert_2
          / \lVert V_{\mathcal H} \rVert_2,

is reported in the column ``holdout_error`` (:math:`\mathcal H` the hidden
entries). Entries that are NaN with ``missing_values=np.nan`` are neither
fitted nor scored.

The fair rule for methods that cannot take a mask. ``nmf_sc`` (with either
solver: ``nmf_sc_accelerated`` too) and ``nmf_euclidean`` fit the training
entries only (their ``mask``, :mod:`nmfsc.solvers.masked`); every other method (the divergence and
penalised solvers, scikit-learn's NMF) is fitted to V with each hidden or
missing entry replaced by the mean of its row's training entries (the mean
of all training entries for a row that has none), the usual imputation
before a method that needs a complete matrix. The column ``holdout_fit``
says which: ``"masked"`` or ``"row means"``. The usual columns (relative
error, ...) are then measured on that filled matrix.
"""

from __future__ import annotations

import numbers

import numpy as np

from nmfsc.solvers.registry import masked_solvers

__all__ = ["MASKED_METHODS", "Holdout", "check_holdout", "holdout_rows"]

#: The methods of :func:`nmfsc.compare` that fit only the entries a mask marks.
#: The methods that fit through a mask (their registry row has masked steps).
MASKED_METHODS = masked_solvers()


def check_holdout(holdout):
    """``holdout`` as a float in (0, 1), or None."""
    if holdout is None:
        return None
    if isinstance(holdout, bool) or not isinstance(holdout, numbers.Real):
        raise TypeError(f"holdout must be a fraction in (0, 1) or None, got {holdout!r}")
    if not 0.0 < float(holdout) < 1.0:
        raise ValueError(f"holdout must lie strictly between 0 and 1, got {holdout!r}")
    return float(holdout)


class Holdout:
    """The training entries, the hidden ones and the filled V of one comparison.

    ``V``: dense, with NaN where missing when ``missing`` is true (NaN is then
    the only non-finite value allowed; the filled matrix is checked by the
    comparison as any V is).
    """

    def __init__(self, V, fraction, seed, missing):
        values = np.asarray(V)
        if hasattr(V, "nnz"):
            raise TypeError(
                "holdout and missing_values need a dense V; for scipy.sparse V use "
                "nmfsc.nmf_sc(V, k, mask='stored')"
            )
        if not np.issubdtype(values.dtype, np.number) or values.ndim != 2:
            raise TypeError(f"V must be a 2-D real numeric array, got dtype {values.dtype}")
        values = values.astype(np.float64) if values.dtype.kind != "f" else values
        observed = ~np.isnan(values) if missing else np.ones(values.shape, dtype=bool)
        if not observed.any():
            raise ValueError("every entry of V is NaN (missing): there is nothing to compare")
        self.hidden = np.zeros(values.shape, dtype=bool)
        if fraction is not None:
            index = np.flatnonzero(observed)
            count = int(round(fraction * index.size))
            if not 1 <= count < index.size:
                raise ValueError(
                    f"holdout={fraction} hides {count} of the {index.size} observed entries; "
                    "it must hide at least one and leave at least one"
                )
            chosen = np.random.default_rng(seed).choice(index, size=count, replace=False)
            self.hidden.flat[chosen] = True
        self.train = observed & ~self.hidden
        self.values = np.where(observed, values, 0.0)  # NaN-free: for the held-out error
        self.filled = _fill_with_row_means(values, self.train)
        self.masked = not self.train.all()
        #: The call's holdout settings, for ``Comparison.settings``.
        self.settings = {
            "holdout": fraction,
            "holdout_seed": seed,
            "missing_values": "nan" if missing else None,
        }

    def method_params(self):
        """The mask keyword of each method that takes one (none when nothing is hidden)."""
        if not self.masked:
            return {}
        return {method: {"mask": self.train} for method in MASKED_METHODS}


def _fill_with_row_means(values, train):
    """V with every entry outside ``train`` replaced by its row's training mean."""
    counts = train.sum(axis=1)
    sums = np.where(train, values, 0.0).sum(axis=1)
    overall = sums.sum() / max(1, counts.sum())
    means = np.where(counts > 0, sums / np.maximum(counts, 1), overall)
    return np.where(train, values, means[:, None]).astype(values.dtype)


def holdout_rows(rows, runs, holdout, scale):
    """Add ``holdout_error`` (with a fraction hidden) and ``holdout_fit`` to each row.

    ``runs[(method, seed)]`` hold W in the units of V / ``scale``."""
    hidden = holdout.hidden
    target = holdout.values[hidden] / scale
    norm = float(np.linalg.norm(target))
    for row in rows:
        if holdout.masked:
            row["holdout_fit"] = "masked" if row["method"] in MASKED_METHODS else "row means"
        if not hidden.any():
            continue
        run = runs[(row["method"], row["seed"])]
        rows_i, cols_i = np.nonzero(hidden)
        predicted = np.einsum("ij,ji->i", run.W[rows_i], run.H[:, cols_i])
        error = float(np.linalg.norm(predicted - target))
        row["holdout_error"] = error / norm if norm > 0 else error
    return rows
