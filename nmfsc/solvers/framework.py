"""The parts the solvers are built from, for the code that builds on them.

A backend (:mod:`nmfsc.solvers.dispatch`), :func:`nmfsc.compare` and
:class:`nmfsc.SparseNMF` reuse the solvers' loop, data and start rather than
copying them. This module is where they take them from; each part is
defined and documented in the solvers' own modules:

- the loop: :class:`Steps` (one iteration's rules, the interface a solver
  implements), :func:`solve` and :class:`Run` (the outer loop; a backend
  subclasses :class:`Run` and overrides its hooks ``open_data``,
  ``check_settings``, ``fingerprint``, ``load``, ``write_checkpoint``,
  ``callback_factors`` and ``final_factors``), :func:`progress_bar` (with
  :class:`PlainProgress`, its plain lines where :func:`is_terminal` says the
  output is not a terminal), :func:`tol_reached` (the stopping rule on the
  objective);
- the loop keywords: :class:`LoopSettings`;
- the data: :class:`ScaledData` (V / max(V) and its products, dense or
  sparse), :func:`frobenius_norm`, :func:`inner`, :func:`is_sparse`,
  :func:`divides_first` (whether V is divided by its scale before a product) and
  :data:`EXACT_BELOW` (where the expanded objective is recomputed exactly);
- the squared error: :class:`SquaredErrorSteps`, the Gram caches
  :class:`ColumnGram` and :class:`RowGram`, :func:`multiplicative_w_update`;
- the start: :func:`random_start` (SPEC's random start);
- the result: :class:`NMFResult`, :func:`degenerate_counts` (dead samples and
  unused components of a fit).
"""

from nmfsc.solvers._data import (
    EXACT_BELOW,
    ScaledData,
    divides_first,
    frobenius_norm,
    inner,
    is_sparse,
)
from nmfsc.solvers._loop import Run, Steps, solve, tol_reached
from nmfsc.solvers._objective import (
    ColumnGram,
    RowGram,
    SquaredErrorSteps,
    multiplicative_w_update,
)
from nmfsc.solvers._progress import PlainProgress, is_terminal, progress_bar
from nmfsc.solvers._result import NMFResult, degenerate_counts
from nmfsc.solvers._settings import LoopSettings
from nmfsc.solvers._start import random_start

__all__ = [
    "EXACT_BELOW",
    "ColumnGram",
    "LoopSettings",
    "NMFResult",
    "PlainProgress",
    "RowGram",
    "Run",
    "ScaledData",
    "SquaredErrorSteps",
    "Steps",
    "degenerate_counts",
    "divides_first",
    "frobenius_norm",
    "inner",
    "is_terminal",
    "is_sparse",
    "multiplicative_w_update",
    "progress_bar",
    "random_start",
    "solve",
    "tol_reached",
]
