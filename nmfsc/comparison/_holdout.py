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

A scipy.sparse V whose zeros are observed (``sparse_zeros="observed"``, the
default of :func:`nmfsc.compare`: counts, TF-IDF) is compared as its dense
copy (:func:`dense_for_holdout`): its zeros are hidden and fitted like any
entry. Fitting only the stored entries of such data leaves the masked
methods free where the zeros are, and their held-out errors unbounded.

The row-mean and zero predictions are scored too (``Holdout.baselines``): a
method is read against them, and a run worse than predicting zero on the
hidden entries is failed (:func:`holdout_rows`).

A scipy.sparse V with ``sparse_zeros="missing"`` (ratings): its stored
entries are the observed ones (as ``mask="stored"``), enumerated in
row-major order (so that a V storing every entry hides what its dense copy
hides), and nothing is made dense.
The masked methods fit ``mask="stored"`` on V without the hidden and
missing entries (:meth:`Holdout.training_data`); the others fit V with those
stored entries filled by their row's mean over the training stored entries,
the unstored ones zeros as in any sparse comparison.
"""

from __future__ import annotations

import numpy as np

from nmfsc._validation import check_data
from nmfsc.comparison._runner import failure_note
from nmfsc.observed import Observed
from nmfsc.solvers.framework import is_sparse
from nmfsc.solvers.registry import masked_solvers

__all__ = [
    "MASKED_METHODS",
    "SPARSE_ZEROS",
    "Holdout",
    "check_sparse_zeros",
    "dense_for_holdout",
    "holdout_rows",
]

#: What the unstored entries of a scipy.sparse V are in a held-out comparison.
SPARSE_ZEROS = ("observed", "missing")

#: The methods of :func:`nmfsc.compare` that fit only the entries a mask marks.
#: The methods that fit through a mask (their registry row has masked steps).
MASKED_METHODS = masked_solvers()


def check_sparse_zeros(sparse_zeros):
    """``sparse_zeros`` checked against :data:`SPARSE_ZEROS`."""
    if sparse_zeros not in SPARSE_ZEROS:
        raise ValueError(
            f"sparse_zeros must be 'observed' (a sparse V's unstored entries are zeros "
            f"that are data: counts, TF-IDF) or 'missing' (they are unobserved: ratings), "
            f"got {sparse_zeros!r}"
        )
    return sparse_zeros


def dense_for_holdout(V):
    """The dense copy of a scipy.sparse V whose zeros are observed, for a held-out
    comparison: its hidden entries are drawn from all N x T entries, zeros
    included, and the masked methods fit every other entry, which is the dense
    masked path. A one-line MemoryError names the size when it does not fit."""
    N, T = V.shape
    dtype = V.dtype if V.dtype.kind == "f" else np.dtype(np.float64)
    try:
        return V.toarray().astype(dtype, copy=False)
    except MemoryError:
        gib = N * T * dtype.itemsize / 2**30
        raise MemoryError(
            f"a held-out comparison on this sparse V ({N} x {T}) whose zeros are observed "
            f"needs its dense copy ({gib:.3g} GiB), which does not fit in memory; use a "
            "smaller matrix, or sparse_zeros='missing' (--sparse-zeros missing) if its "
            "unstored entries are truly unobserved"
        ) from None


class Holdout:
    """The training entries, the hidden ones and the filled V of one comparison.

    ``V``: dense, with NaN where missing when ``missing`` is true (NaN is then
    the only non-finite value allowed; the filled matrix is checked by the
    comparison as any V is); or scipy.sparse, whose stored entries are the
    observed ones (module docstring). Attributes: ``filled`` (the V every
    method without a mask fits), ``masked`` (whether some entry is hidden or
    missing), ``hidden`` (boolean, of V's shape for dense V, of its stored
    entries for sparse V), ``hidden_rows``, ``hidden_cols`` and ``hidden_values`` (the
    hidden entries, in row-major order).
    """

    def __init__(self, V, fraction, seed, missing):
        if is_sparse(V):
            V = _canonical_csr(V)
            shape, values = V.shape, V.data
            rows = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(V.indptr))
            positions = rows * shape[1] + V.indices
        else:
            values = np.asarray(V)
            if not np.issubdtype(values.dtype, np.number) or values.ndim != 2:
                raise TypeError(f"V must be a 2-D real numeric array, got dtype {values.dtype}")
            values = values.astype(np.float64) if values.dtype.kind != "f" else values
            shape, values, positions = values.shape, values.ravel(), None
        observed = ~np.isnan(values) if missing else np.ones(values.shape, dtype=bool)
        if not observed.any():
            raise ValueError("every entry of V is NaN (missing): there is nothing to compare")
        if not np.isfinite(values[observed]).all():  # refused where it is: the fill
            kept = np.where(observed, values, 0.0)  # below would spread it over its row
            if positions is not None:
                kept = type(V)((kept, V.indices, V.indptr), shape=shape)
            check_data(kept.reshape(shape))  # raises, naming the first and what to do
        hidden = np.zeros(values.shape, dtype=bool)
        if fraction is not None:
            index = np.flatnonzero(observed)
            count = int(round(fraction * index.size))
            if not 1 <= count < index.size:
                raise ValueError(
                    f"holdout={fraction} hides {count} of the {index.size} observed entries; "
                    "it must hide at least one and leave at least one"
                )
            hidden[np.random.default_rng(seed).choice(index, size=count, replace=False)] = True
        self.train = observed & ~hidden  # of the entries (dense) or stored entries (sparse)
        self.masked = not self.train.all()
        self.hidden = hidden if positions is not None else hidden.reshape(shape)
        flat = np.flatnonzero(hidden) if positions is None else positions[hidden]
        self.hidden_rows, self.hidden_cols = np.divmod(flat, shape[1])
        self.hidden_values = values[hidden]
        if positions is None:
            rows = np.repeat(np.arange(shape[0]), shape[1])
        filled, means = _fill_with_row_means(values, self.train, rows, shape[0])
        #: Relative held-out errors of the trivial predictions (module docstring).
        self.baselines = _baseline_errors(self.hidden_values, means[self.hidden_rows])
        self._sparse = positions is not None
        if self._sparse:
            self.filled = type(V)((filled, V.indices, V.indptr), shape=shape)
        else:
            self.filled = filled.reshape(shape)
            self._dense_train = self.train.reshape(shape)
        #: The call's holdout settings, for ``Comparison.settings``.
        self.settings = {
            "holdout": fraction,
            "holdout_seed": seed,
            "missing_values": "nan" if missing else None,
            "holdout_baselines": self.baselines,
        }

    @property
    def observed(self):
        """The training entries, which the masked methods fit
        (:class:`~nmfsc.observed.Observed`; None when nothing is hidden or
        missing): a dense V's as a mask, a sparse V's as the stored entries
        of :meth:`training_data`."""
        if not self.masked:
            return None
        return Observed(stored=True) if self._sparse else Observed(mask=self._dense_train)

    def training_data(self, V):
        """The V the masked methods fit (``V`` is the filled matrix as checked
        and normalised): ``V`` itself for dense V (they read it only at
        :attr:`observed`), for sparse V ``V`` with the hidden and missing
        entries no longer stored."""
        if not (self.masked and self._sparse):
            return V
        keep = self.train
        counts = np.concatenate(([0], np.cumsum(keep)))[V.indptr]
        return type(V)((V.data[keep], V.indices[keep], counts), shape=V.shape)


def _canonical_csr(V):
    """A scipy.sparse V as a new CSR matrix of float dtype, duplicates summed
    and indices sorted: its stored entries in row-major order."""
    V = V.tocsr(copy=True)
    V.sum_duplicates()
    return V if V.dtype.kind == "f" else V.astype(np.float64)


def _fill_with_row_means(values, train, rows, n_rows):
    """``values`` (entries in row-major order, ``rows`` their rows) with every
    entry outside ``train`` replaced by its row's training mean (the mean of
    all training entries for a row that has none), and those means."""
    counts = np.bincount(rows, weights=train, minlength=n_rows)
    sums = np.bincount(rows, weights=np.where(train, values, 0.0), minlength=n_rows)
    overall = sums.sum() / max(1, counts.sum())
    means = np.where(counts > 0, sums / np.maximum(counts, 1), overall)
    return np.where(train, values, means[rows]).astype(values.dtype), means


def _baseline_errors(hidden_values, row_means):
    """The relative held-out errors of predicting every hidden entry by zero
    (1 by definition) and by its row's training mean; None when nothing is
    hidden or the hidden entries are all zero (the error has no scale)."""
    norm = float(np.linalg.norm(hidden_values))
    if not hidden_values.size or norm == 0.0:
        return {"zero_fill": None, "row_mean_fill": None}
    return {
        "zero_fill": 1.0,
        "row_mean_fill": float(np.linalg.norm(row_means - hidden_values)) / norm,
    }


def holdout_rows(rows, runs, holdout, scale):
    """Add ``holdout_error`` (with a fraction hidden) and ``holdout_fit`` to each row.

    A run whose held-out error is above 1 (worse than predicting zero on the
    hidden entries) or not finite is failed (``stop_reason`` ``"failed"``,
    a ``note`` saying why), whatever stopped it. ``runs[(method, seed)]``
    hold W in the units of V / ``scale``."""
    target = holdout.hidden_values / scale
    norm = float(np.linalg.norm(target))
    rows_i, cols_i = holdout.hidden_rows, holdout.hidden_cols
    for row in rows:
        if holdout.masked:
            row["holdout_fit"] = "masked" if row["method"] in MASKED_METHODS else "row means"
        if not target.size:
            continue
        run = runs[(row["method"], row["seed"])]
        predicted = np.einsum("ij,ji->i", run.W[rows_i], run.H[:, cols_i])
        error = float(np.linalg.norm(predicted - target))
        row["holdout_error"] = error / norm if norm > 0 else error
        if norm > 0 and row["stop_reason"] != "failed":
            note = failure_note(
                row["method"], row["holdout_error"], "held-out error", row["stop_reason"]
            )
            if note:
                row.update(stop_reason="failed", note=note)
        if row["holdout_error"] is not None and not np.isfinite(row["holdout_error"]):
            row["holdout_error"] = None
    return rows
