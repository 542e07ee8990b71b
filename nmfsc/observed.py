"""Which entries of a data matrix are observed: one type for masks, missing
values and held-out entries.

An :class:`Observed` says which entries of V a fit reads (and a held-out
comparison scores): those where a dense boolean mask is True, or the stored
entries of a scipy.sparse V. It is made once, where the entries are known
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
    """

    mask: NDArray[np.bool_] | None = None
    stored: bool = False

    def __post_init__(self) -> None:
        if (self.mask is None) != self.stored:
            raise ValueError("Observed takes a dense mask or stored=True, not both or neither")

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
        """``(X with zeros where NaN, its observed entries or None)`` of a
        dense X checked but for its NaN (NaN marks a missing entry): None
        when nothing is missing, so that such X runs the unmasked solver and
        gives its iterates bit for bit. A scipy.sparse X without NaN is
        returned as it is; one that stores NaN, a negative entry, or an X with
        no observed entry is refused in one line naming ``name``."""
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
        return filled, cls(mask=~missing)

    @property
    def T(self) -> Observed:
        """The observed entries of V's transpose."""
        return self if self.mask is None else Observed(mask=self.mask.T)

    def count(self, V: Any = None) -> int:
        """How many entries are observed (the stored entries of ``V`` with
        :attr:`stored`)."""
        if self.mask is not None:
            return int(np.count_nonzero(self.mask))
        if V is None:
            raise ValueError("the count of a sparse V's stored entries needs V")
        return int(V.nnz)
