r"""Held-out entries and missing values for :func:`nmfsc.compare`.

``holdout=f`` hides a fraction f of the observed entries of V, drawn without
replacement by ``numpy.random.default_rng(holdout_seed)``: the same entries
for every method and every seed. Each method is fitted to the rest, and its
error on the hidden entries,

.. math:: e_{\mathrm{held\ out}} = \lVert (V - W H)_{\mathcal H} \rVert_2
          / \lVert V_{\mathcal H} \rVert_2,

is reported in the column ``holdout_error`` (:math:`\mathcal H` the hidden
entries), beside the same relative error on the training entries, the ones
the masked methods fit (``fitted_error``): as a model grows the second
always falls, the first need not. Entries that are NaN with
``missing_values=np.nan`` are neither fitted nor scored.

The hidden entries are drawn by :func:`draw_positions` as ranks among the
observed entries in row-major order (of a sparse V whose stored entries are
the observed ones, among those): so a dense V, a sparse V storing every
entry, the same V with its zeros observed, and a dense V with NaN where a
sparse one stores nothing hide the same entries.

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
default of :func:`nmfsc.compare`: counts, TF-IDF): its zeros are hidden and
fitted like any entry, and nothing is made dense. The hidden entries are
drawn from all N x T entries (but the stored NaN, when they are missing),
in memory proportional to their number; the masked
methods fit every other entry (:meth:`Observed.all_but
<nmfsc.observed.Observed.all_but>`, :mod:`nmfsc.solvers._masked_all_but`),
the others V with the hidden and missing entries filled by their row's
training mean (zeros counted), a sparse matrix with those entries stored.
Fitting only the stored entries of such data would leave the masked methods
free where the zeros are, and their held-out errors unbounded.

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

from nmfsc import _entries
from nmfsc._validation import check_data
from nmfsc.comparison._errors import frobenius_norm, relative_error
from nmfsc.comparison._runner import failure_note
from nmfsc.observed import Observed
from nmfsc.solvers.framework import is_sparse
from nmfsc.solvers.registry import masked_solvers

__all__ = [
    "MASKED_METHODS",
    "SPARSE_ZEROS",
    "Holdout",
    "check_sparse_zeros",
    "draw_positions",
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


def draw_positions(size, count, rng):
    """``count`` distinct positions of ``range(size)``, drawn uniformly without
    replacement by ``rng``, in increasing order (int64); memory O(count)
    while ``count`` is at most half of ``size``.

    Positions are drawn with replacement and merged until at least ``count``
    distinct ones are held; then a random few of them are dropped, down to
    ``count``. The set held after each round is unchanged in law by any
    permutation of ``range(size)``, so, given its size, it is a uniform
    subset; so is what is left of it. Above half of ``size``, ``count``
    positions are chosen from the whole range (the draw holds that many
    anyway)."""
    if 2 * count > size:
        return np.sort(rng.choice(size, size=count, replace=False))
    chosen = np.empty(0, np.int64)
    while chosen.size < count:
        draw = rng.integers(0, size, size=count - chosen.size + 16, dtype=np.int64)
        draw = np.concatenate((chosen, draw))
        del chosen
        draw.sort()
        chosen = draw[np.concatenate(([True], draw[1:] != draw[:-1]))]
        del draw
    if chosen.size > count:
        chosen = np.delete(chosen, rng.choice(chosen.size, size=chosen.size - count, replace=False))
    return chosen


def _ranks_to_positions(ranks, excluded):
    """The positions of the entries of rank ``ranks`` (sorted) among those not
    in ``excluded`` (sorted, distinct), in row-major order: the k-th allowed
    position is k plus the number of excluded positions before it."""
    if not excluded.size:
        return ranks
    shifted = excluded - np.arange(excluded.size)  # allowed entries before each
    return ranks + np.searchsorted(shifted, ranks, side="right")


class Holdout:
    """The training entries, the hidden ones and the filled V of one comparison.

    ``V``: dense, with NaN where missing when ``missing`` is true (NaN is then
    the only non-finite value allowed; the filled matrix is checked by the
    comparison as any V is); or scipy.sparse, whose stored entries are the
    observed ones, or with ``zeros_observed`` whose every entry is (module
    docstring). Attributes: ``filled`` (the V every method without a mask
    fits), ``masked`` (whether some entry is hidden or missing),
    ``hidden_pattern`` (the hidden entries, a CSR pattern of V's shape),
    ``hidden_values`` (V's values there, in row-major order),
    ``hidden_rows`` and ``hidden_cols``; and, without ``zeros_observed``,
    ``hidden`` and ``train`` (boolean, of V's shape for dense V, of its
    stored entries for sparse V).
    """

    def __init__(self, V, fraction, seed, missing, zeros_observed=False):
        #: The call's holdout settings, for ``Comparison.settings``.
        self.settings = {
            "holdout": fraction,
            "holdout_seed": seed,
            "missing_values": "nan" if missing else None,
        }
        self._all_but = None
        if zeros_observed and is_sparse(V):
            self._split_all_entries(_canonical_csr(V), fraction, seed, missing)
        else:
            self._split_entries(V, fraction, seed, missing)
        self.settings["holdout_baselines"] = self.baselines

    def _split_entries(self, V, fraction, seed, missing):
        """The entries of a dense V, or the stored entries of a sparse one."""
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
            count = _hidden_count(fraction, index.size)
            hidden[index[draw_positions(index.size, count, np.random.default_rng(seed))]] = True
        self.train = observed & ~hidden  # of the entries (dense) or stored entries (sparse)
        self.masked = not self.train.all()
        self.hidden = hidden if positions is not None else hidden.reshape(shape)
        flat = np.flatnonzero(hidden) if positions is None else positions[hidden]
        self.hidden_pattern = _entries.pattern_of_positions(flat, shape)
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

    def _split_all_entries(self, V, fraction, seed, missing):
        """Every entry of a sparse V, zeros included (module docstring): the
        hidden entries drawn by :func:`draw_positions` and held as a CSR
        pattern, the filled V sparse with the hidden and missing entries
        stored; nothing dense, no int64 array per hidden entry kept."""
        N, T = V.shape
        nan = np.isnan(V.data) if missing else np.zeros(V.nnz, dtype=bool)
        if nan.sum() == N * T:
            raise ValueError("every entry of V is NaN (missing): there is nothing to compare")
        if not np.isfinite(V.data[~nan]).all():  # refused where it is, as for dense V
            check_data(type(V)((np.where(nan, 0.0, V.data), V.indices, V.indptr), shape=V.shape))
        rows = np.repeat(np.arange(N, dtype=np.int64), np.diff(V.indptr))
        missing_positions = rows[nan] * T + V.indices[nan]
        missing_pattern = _entries.pattern_of_positions(missing_positions, V.shape)
        hidden = np.empty(0, np.int64)
        if fraction is not None:
            allowed = N * T - missing_positions.size
            count = _hidden_count(fraction, allowed)
            ranks = draw_positions(allowed, count, np.random.default_rng(seed))
            hidden = _ranks_to_positions(ranks, missing_positions)
            del ranks
        self.hidden_pattern = _entries.pattern_of_positions(hidden, V.shape)
        del hidden
        unobserved = self.hidden_pattern
        if missing_pattern.nnz:  # the union of two disjoint patterns
            everything = np.ones(unobserved.nnz, dtype=bool)
            unobserved = _entries.merge_rows(unobserved, everything, missing_pattern, np.ones(N))
        self.masked = unobserved.nnz > 0
        self._sparse = True
        self.hidden_values = _entries.values_at(V, self.hidden_pattern)
        kept = ~_entries.in_pattern(V, unobserved)
        sums = np.bincount(rows, weights=np.where(kept, V.data, 0.0), minlength=N)
        means = _row_means(sums, T - np.diff(unobserved.indptr))
        hidden_means = np.repeat(means, np.diff(self.hidden_pattern.indptr))
        #: Relative held-out errors of the trivial predictions (module docstring).
        self.baselines = _baseline_errors(self.hidden_values, hidden_means)
        del hidden_means
        self.filled = _entries.merge_rows(V, kept, unobserved, means)
        if self.masked:
            self._all_but = Observed(unobserved=unobserved)

    @property
    def hidden_rows(self):
        """The rows of the hidden entries, in row-major order."""
        pattern = self.hidden_pattern
        return np.repeat(np.arange(pattern.shape[0], dtype=np.int64), np.diff(pattern.indptr))

    @property
    def hidden_cols(self):
        """The columns of the hidden entries, in row-major order."""
        return self.hidden_pattern.indices

    @property
    def observed(self):
        """The training entries, which the masked methods fit
        (:class:`~nmfsc.observed.Observed`; None when nothing is hidden or
        missing): a dense V's as a mask, a sparse V's as the stored entries
        of :meth:`training_data`, or, when its zeros are observed, as every
        entry but the hidden and missing ones."""
        if not self.masked:
            return None
        if self._all_but is not None:
            return self._all_but
        return Observed(stored=True) if self._sparse else Observed(mask=self._dense_train)

    def fitted_error(self, W, H, scale):
        r"""The relative error of W H on the training entries (the observed ones
        not hidden), :math:`\lVert (V - W H)_{\mathrm{train}} \rVert /
        \lVert V_{\mathrm{train}} \rVert`, W in the units of V / ``scale``: the
        error on what the masked methods fit, the same entries for every
        method. None when nothing is hidden or missing.

        Dense V: from W H on the mask. A sparse V whose stored entries are the
        observed ones: W H at the training stored entries. A sparse V whose
        zeros are observed: the error on the whole filled V (exact by blocks
        where small, :func:`~nmfsc.comparison._errors.relative_error`) less
        its part on the unobserved entries, W H never formed."""
        if not self.masked:
            return None
        F = self.filled
        if not self._sparse:
            train = self._dense_train
            residual = (W @ H)[train] - F[train] / scale
            norm = np.linalg.norm(F[train]) / scale
            return float(np.linalg.norm(residual) / norm) if norm > 0 else None
        if self._all_but is None:
            kept = self.training_data(F)
            residual = _entries.product_at(kept, W, H) - kept.data / scale
            norm = np.linalg.norm(kept.data) / scale
            return float(np.linalg.norm(residual) / norm) if norm > 0 else None
        U = self._all_but.unobserved
        at_unobserved = _entries.values_at(F, U) / scale
        outside = _entries.product_at(U, W, H) - at_unobserved
        scaled = F / scale
        whole_norm = frobenius_norm(scaled)
        whole = relative_error(scaled, W, H, whole_norm) * whole_norm
        squared = whole**2 - float(outside @ outside)
        norm_squared = whole_norm**2 - float(at_unobserved @ at_unobserved)
        if not norm_squared > 0:
            return None
        return float(np.sqrt(max(squared, 0.0) / norm_squared))

    def training_data(self, V):
        """The V the masked methods fit (``V`` is the filled matrix as checked
        and normalised): ``V`` itself for dense V (they read it only at
        :attr:`observed`) and for a sparse V whose zeros are observed (they
        drop the unobserved entries themselves), for a sparse V whose
        stored entries are the observed ones ``V`` with the hidden and
        missing entries no longer stored."""
        if not (self.masked and self._sparse) or self._all_but is not None:
            return V
        return _entries.keep_entries(V, self.train)


def _hidden_count(fraction, observed):
    """How many of ``observed`` entries ``holdout=fraction`` hides, or a
    ValueError when none or all."""
    count = int(round(fraction * observed))
    if not 1 <= count < observed:
        raise ValueError(
            f"holdout={fraction} hides {count} of the {observed} observed entries; "
            "it must hide at least one and leave at least one"
        )
    return count


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
    means = _row_means(sums, counts)
    return np.where(train, values, means[rows]).astype(values.dtype), means


def _row_means(sums, counts):
    """Each row's training mean, ``sums / counts``, and the mean of all
    training entries for a row that has none."""
    overall = sums.sum() / max(1, counts.sum())
    return np.where(counts > 0, sums / np.maximum(counts, 1), overall)


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
    """Add ``holdout_error`` (with a fraction hidden), ``holdout_fit`` and
    ``fitted_error`` (:meth:`Holdout.fitted_error`) to each row.

    A run whose held-out error is above 1 (worse than predicting zero on the
    hidden entries) or not finite is failed (``stop_reason`` ``"failed"``,
    a ``note`` saying why), whatever stopped it. ``runs[(method, seed)]``
    hold W in the units of V / ``scale``."""
    target = holdout.hidden_values / scale
    norm = float(np.linalg.norm(target))
    for row in rows:
        run = runs[(row["method"], row["seed"])]
        if holdout.masked:
            row["holdout_fit"] = "masked" if row["method"] in MASKED_METHODS else "row means"
            if run.failure is None:  # a run that raised has no factors to measure
                fitted = holdout.fitted_error(run.W, run.H, scale)
                row["fitted_error"] = fitted if fitted is None or np.isfinite(fitted) else None
        if not target.size:
            continue
        predicted = _entries.product_at(holdout.hidden_pattern, run.W, run.H)
        predicted -= target
        error = float(np.linalg.norm(predicted))
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
