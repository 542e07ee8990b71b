"""Which entries of a data matrix are observed: one type for masks, missing
values and held-out entries.

An :class:`Observed` says which entries of V a fit reads (and a held-out
comparison scores): those where a dense boolean mask is True, the stored
entries of a scipy.sparse V, or every entry but a sparse set of unobserved
ones (a sparse V whose zeros are data, with some entries held out). It is
made once, where the entries are known
(a solver's ``mask=`` argument, NaN in the estimator's X or the command
line's data with ``missing_values``, the training entries of
:func:`nmfsc.compare`'s ``holdout``), and the masked solvers
(:mod:`nmfsc.solvers.masked`) read it; nobody else rebuilds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Observed"]


@dataclass(frozen=True, eq=False)
class Observed:
    """The observed entries of a data matrix V.

    Attributes
    ----------
    mask : bool ndarray of V's shape, or None
        True where V is observed (a dense V); None with :attr:`stored`.
    stored : bool
        The stored entries of a scipy.sparse V (explicit zeros included) are
        the observed ones, and nothing is made dense.
    unobserved : scipy.sparse.csr_array or None
        A pattern of V's shape whose stored entries are the entries *not*
        observed; every other entry of V, zero or not, is observed. Made by
        :meth:`all_but`. For a scipy.sparse V whose zeros are data (counts,
        TF-IDF) with a few entries held out: nothing is made dense, the
        memory is O(nnz(V) + nnz(unobserved)).

    See Also
    --------
    nmfsc.nmf_sc : Its ``mask`` parameter takes one (the other solvers' too).
    nmfsc.SparseNMF : Its ``missing_values=np.nan`` fits the observed entries.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.observed import Observed
    >>> V = np.array([[1.0, np.nan], [0.0, 2.0]])
    >>> filled, observed = Observed.from_nan(V, "V")
    >>> filled, observed.mask, observed.count()
    (array([[1., 0.],
           [0., 2.]]), array([[ True, False],
           [ True,  True]]), 3)
    >>> Observed.of("stored").stored
    True
    >>> held_out = Observed.all_but([0], [1], (2, 2))  # every entry but V[0, 1]
    >>> held_out.count(), held_out.to_mask()
    (3, array([[ True, False],
           [ True,  True]]))
    """

    mask: NDArray[np.bool_] | None = None
    stored: bool = False
    unobserved: Any = None

    def __post_init__(self) -> None:
        kinds = (self.mask is not None) + bool(self.stored) + (self.unobserved is not None)
        if kinds != 1:
            raise ValueError(
                "Observed takes one of a dense mask, stored=True or an unobserved pattern"
            )
        if self.unobserved is not None:  # the kernels read canonical CSR
            pattern = self.unobserved
            if not hasattr(pattern, "tocsr"):
                raise TypeError(
                    "unobserved must be a scipy.sparse pattern of V's shape (its stored "
                    "entries the unobserved ones); make it with Observed.all_but(rows, cols, shape)"
                )
            if pattern.format != "csr" or not pattern.has_canonical_format:
                from scipy import sparse

                pattern = sparse.csr_array(pattern, dtype=np.bool_)
                pattern.sum_duplicates()
                object.__setattr__(self, "unobserved", pattern)

    @classmethod
    def all_but(cls, rows: Any, cols: Any, shape: tuple[int, int]) -> Observed:
        """Every entry of a matrix of ``shape`` but those at ``(rows[i],
        cols[i])`` (duplicates count once): the held-out entries of a sparse
        V whose zeros are observed. One ValueError line for an index out of
        range or a pattern that leaves nothing observed."""
        from scipy import sparse

        N, T = (int(n) for n in shape)
        rows, cols = np.asarray(rows).ravel(), np.asarray(cols).ravel()
        for name, index in (("rows", rows), ("cols", cols)):
            if index.size and (index.dtype == np.bool_ or index.dtype.kind not in "iu"):
                raise TypeError(f"{name} must hold integer indices, got dtype {index.dtype}")
        rows, cols = rows.astype(np.int64), cols.astype(np.int64)
        if rows.shape != cols.shape:
            raise ValueError(f"rows and cols differ in length: {rows.size} and {cols.size}")
        if rows.size and not (
            0 <= rows.min() and rows.max() < N and 0 <= cols.min() and cols.max() < T
        ):
            raise ValueError(f"an unobserved entry lies outside the {N} x {T} matrix")
        ones = np.ones(rows.size, dtype=np.bool_)
        pattern = sparse.csr_array((ones, (rows, cols)), shape=(N, T))
        pattern.sum_duplicates()  # sorted indices; a duplicate's True + True stays True
        if pattern.nnz == N * T:
            raise ValueError("every entry is unobserved: there is nothing to fit")
        return cls(unobserved=pattern)

    @classmethod
    def of(cls, mask: Any) -> Observed | None:
        """The public ``mask=`` argument of a solver as an :class:`Observed`
        (None: every entry): a boolean array of V's shape, ``"stored"`` (a
        scipy.sparse V's stored entries) or an :class:`Observed`. A
        TypeError or ValueError in one line for anything else; V's shape is
        checked where V is (:func:`nmfsc.solvers._masked_data.open_masked`)."""
        if mask is None or isinstance(mask, Observed):
            return mask
        if isinstance(mask, str):
            if mask != "stored":
                raise ValueError(f"mask must be a boolean array or 'stored', got {mask!r}")
            return cls(stored=True)
        if hasattr(mask, "nnz"):
            raise TypeError("mask must be a dense boolean array (or 'stored' for a sparse V)")
        array = np.asarray(mask)
        if array.dtype != np.bool_:
            raise TypeError(
                f"mask must be a boolean array (True where V was observed), got dtype {array.dtype}"
            )
        return cls(mask=array)

    @classmethod
    def from_nan(cls, X: Any, name: str) -> tuple[Any, Observed | None]:
        """``(X with zeros where NaN, its observed entries or None)`` of an X
        checked but for its NaN (NaN marks a missing entry): None when
        nothing is missing, so that such X runs the unmasked solver and gives
        its iterates bit for bit. A scipy.sparse X stays sparse: its stored
        NaN are the missing entries and every other entry, an unstored zero
        included, is observed (:meth:`all_but`); the NaN are no longer
        stored in the X returned (CSR). A negative entry, or an X with no
        observed entry, is refused in one line naming ``name``."""
        if hasattr(X, "nnz"):
            return cls._sparse_from_nan(X, name)
        missing = np.isnan(X)
        if not missing.any():
            return X, None
        if missing.all():
            raise ValueError(f"{name}: every entry of X is NaN (missing): there is nothing to fit")
        filled = np.where(missing, X.dtype.type(0), X)
        if np.any(filled < 0):
            raise ValueError(f"Negative values in data passed to {name} (input X)")
        return filled, cls(mask=~missing)

    @classmethod
    def _sparse_from_nan(cls, X: Any, name: str) -> tuple[Any, Observed | None]:
        """:meth:`from_nan` of a scipy.sparse X."""
        from nmfsc._entries import keep_entries

        if not np.isnan(X.data).any():
            return X, None
        X = X.tocsr(copy=True)
        X.sum_duplicates()
        missing = np.isnan(X.data)
        N, T = X.shape
        if int(missing.sum()) == N * T:
            raise ValueError(f"{name}: every entry of X is NaN (missing): there is nothing to fit")
        if np.any(X.data[~missing] < 0):
            raise ValueError(f"Negative values in data passed to {name} (input X)")
        rows = np.repeat(np.arange(N, dtype=np.int64), np.diff(X.indptr))
        observed = cls.all_but(rows[missing], X.indices[missing], X.shape)
        return keep_entries(X, ~missing), observed

    @property
    def T(self) -> Observed:
        """The observed entries of V's transpose."""
        if self.mask is not None:
            return Observed(mask=self.mask.T)
        if self.unobserved is not None:
            pattern = self.unobserved.T.tocsr()
            pattern.sort_indices()
            return Observed(unobserved=pattern)
        return self

    def count(self, V: Any = None) -> int:
        """How many entries are observed (the stored entries of ``V`` with
        :attr:`stored`)."""
        if self.mask is not None:
            return int(np.count_nonzero(self.mask))
        if self.unobserved is not None:
            N, T = self.unobserved.shape
            return N * T - int(self.unobserved.nnz)
        if V is None:
            raise ValueError("the count of a sparse V's stored entries needs V")
        return int(V.nnz)

    def largest(self, V: Any) -> float:
        """The largest observed entry of V (dense, or scipy.sparse whose
        unstored entries are zeros), for a V that is checked non-negative
        elsewhere."""
        if self.mask is not None or (self.unobserved is not None and not hasattr(V, "nnz")):
            return float(np.max(np.asarray(V)[self.to_mask()]))
        if self.stored:
            return float(V.max())
        from nmfsc._entries import in_pattern

        V = V.tocsr(copy=True)
        V.sum_duplicates()
        unobserved = in_pattern(V, self.unobserved)
        return float(V.data[~unobserved].max(initial=0.0))  # V >= 0: 0 if none stored

    def to_mask(self) -> NDArray[np.bool_]:
        """The dense boolean mask (True where observed) of a :attr:`mask` or an
        :attr:`unobserved` pattern: N x T booleans, for small matrices and
        tests; :attr:`stored` has none without V."""
        if self.mask is not None:
            return self.mask
        if self.unobserved is None:
            raise ValueError("stored=True has no mask without V: its stored pattern is V's")
        mask = np.ones(self.unobserved.shape, dtype=np.bool_)
        pattern = self.unobserved.tocoo()
        mask[pattern.row, pattern.col] = False
        return mask
