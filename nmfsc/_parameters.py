"""Every public parameter's constraints, declared once (scikit-learn's
``_parameter_constraints`` is the model), and the one check of each.

:data:`PARAMETERS` maps a parameter's public name to its constraint. The
public functions, the estimator and the ``nmfsc`` command line check a
value with :func:`check` (a Python value) or :func:`parse` (a command-line
string) at their boundary, and what they call trusts it. Every refusal is
one line naming the parameter, what it must be and what it got:

- ``TypeError``: ``"tol must be a real number, got 'small'"``;
- ``ValueError``: ``"tol must be finite and >= 0, got -0.001"``;
- from :func:`parse`: ``"must be a finite number >= 0, got 'x'"`` (argparse
  puts the option's name in front).

A parameter held to the same set under several names (nmf_sc's
``sparseness_w``, :class:`nmfsc.SparseNMF`'s ``sparseness_components``)
has one constraint object under each name.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PARAMETERS",
    "Fraction",
    "Integer",
    "MissingValue",
    "Optional",
    "Real",
    "check",
    "parse",
]


@dataclass(frozen=True)
class Integer:
    """An integer (not a bool) of at least ``low``."""

    low: int

    def words(self) -> str:
        """What a value must be, for ``TypeError``."""
        if self.low == 1:
            return "a positive integer"
        if self.low == 0:
            return "a non-negative integer"
        return f"an integer >= {self.low}"

    def check(self, value: Any, name: str) -> int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be {self.words()}, got {value!r}")
        if value < self.low:
            raise ValueError(f"{name} must be >= {self.low}, got {value!r}")
        return int(value)

    def parse(self, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < self.low:
            raise ValueError(f"must be an integer >= {self.low}, got {text!r}")
        return value


class _Number:
    """A real number (not a bool) that :meth:`_ok` takes. A subclass says
    which (:meth:`_ok`) and in what words (:meth:`_words`: what a value must
    be, for the TypeError; what it must do, for the ValueError; what a
    command-line string must be)."""

    def _ok(self, value: float) -> bool:
        raise NotImplementedError

    def _words(self) -> tuple[str, str, str]:
        raise NotImplementedError

    def check(self, value: Any, name: str) -> float:
        type_words, range_words, _ = self._words()
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be {type_words}, got {value!r}")
        value = float(value)
        if not self._ok(value):
            raise ValueError(f"{name} must {range_words}, got {value!r}")
        return value

    def parse(self, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not self._ok(value):
            raise ValueError(f"must be {self._words()[2]}, got {text!r}")
        return value


@dataclass(frozen=True)
class Real(_Number):
    """A finite real number (not a bool) of at least 0, or above 0 (``positive``)."""

    positive: bool = False

    def _ok(self, value: float) -> bool:
        return math.isfinite(value) and (value > 0 if self.positive else value >= 0)

    def _words(self) -> tuple[str, str, str]:
        bound = "> 0" if self.positive else ">= 0"
        return "a real number", f"be finite and {bound}", f"a finite number {bound}"


@dataclass(frozen=True)
class Fraction(_Number):
    """A real number in [0, 1] (a sparseness), or in (0, 1) with ``open``."""

    open: bool = False

    def _ok(self, value: float) -> bool:
        return 0.0 < value < 1.0 if self.open else 0.0 <= value <= 1.0

    def _words(self) -> tuple[str, str, str]:
        if self.open:
            where = "strictly between 0 and 1"
            return "a fraction in (0, 1)", f"lie {where}", f"a number {where}"
        return "a real number in [0, 1]", "lie in [0, 1]", "a number in [0, 1]"


@dataclass(frozen=True)
class Optional:
    """None (the parameter unset), or a value that ``constraint`` takes."""

    constraint: Integer | Real | Fraction

    def check(self, value: Any, name: str) -> Any:
        return None if value is None else self.constraint.check(value, name)

    def parse(self, text: str) -> Any:
        return self.constraint.parse(text)


@dataclass(frozen=True)
class MissingValue:
    """What marks a missing entry: None (nothing is missing; NaN is an error)
    or NaN. :meth:`check` says whether NaN marks missing entries."""

    def check(self, value: Any, name: str) -> bool:
        if value is None:
            return False
        if isinstance(value, numbers.Real) and math.isnan(value):  # np.nan, NumPy's NaNs
            return True
        raise ValueError(f"{name} must be None or np.nan, got {value!r}")

    def parse(self, text: str) -> bool:
        if text.lower() == "nan":
            return True
        raise ValueError(f"must be nan, got {text!r}")


_SPARSENESS = Optional(Fraction())

#: Each public parameter's constraint, by its public name.
PARAMETERS: dict[str, Integer | Real | Fraction | Optional | MissingValue] = {
    # the factorisation
    "n_components": Integer(1),
    "sparseness_w": _SPARSENESS,
    "sparseness_h": _SPARSENESS,
    "sparseness_components": _SPARSENESS,  # SparseNMF's sparseness_w
    "sparseness_coefficients": _SPARSENESS,  # SparseNMF's sparseness_h
    "sparseness": Fraction(),
    "alpha": Real(),
    "beta": Real(),
    "sparse_nmf_alpha": Real(),
    # the loop (LoopSettings)
    "max_iter": Integer(0),
    "tol": Real(),
    "window": Integer(1),
    "stationarity_tol": Optional(Real()),
    "max_time": Optional(Real(positive=True)),
    "checkpoint_every": Integer(1),
    "checkpoint_seconds": Optional(Real(positive=True)),
    "max_hops": Integer(0),
    # compare, the estimator, the readers and the command line
    "missing_values": MissingValue(),
    "seed": Integer(0),
    "holdout": Optional(Fraction(open=True)),
    "holdout_seed": Integer(0),
    "image_shape": Integer(1),  # each side of the (height, width) pair
    # data sets and plots
    "n": Integer(1),
    "n_samples": Integer(1),
    "size": Integer(1),
    "n_patches": Integer(1),
    "patch_size": Integer(1),
    "n_tiles": Integer(1),
    "n_cols": Integer(1),
    "border": Integer(0),
}


def check(name: str, value: Any) -> Any:
    """``value`` of the public parameter ``name`` checked against its constraint
    (:data:`PARAMETERS`) and converted (int, float or None); a TypeError or
    ValueError in one line otherwise.

    Examples
    --------
    >>> from nmfsc._parameters import check
    >>> check("sparseness_w", 1), check("sparseness_w", None)
    (1.0, None)
    >>> check("max_iter", -1)
    Traceback (most recent call last):
    ...
    ValueError: max_iter must be >= 0, got -1
    """
    return PARAMETERS[name].check(value, name)


def parse(name: str, text: str) -> Any:
    """The command-line string ``text`` of the public parameter ``name``, read
    and checked; a ValueError ``"must be ..., got '...'"`` otherwise (the
    command line adds the option's name).

    Examples
    --------
    >>> from nmfsc._parameters import parse
    >>> parse("sparseness_w", "0.8")
    0.8
    >>> parse("holdout", "1")
    Traceback (most recent call last):
    ...
    ValueError: must be a number strictly between 0 and 1, got '1'
    """
    return PARAMETERS[name].parse(text)
