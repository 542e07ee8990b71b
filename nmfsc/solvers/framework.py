"""The parts the solvers are built from, for the code that builds on them.

A backend (``nmfsc.solvers.dispatch``), :func:`nmfsc.compare` and
:class:`nmfsc.SparseNMF` reuse the solvers' loop, data and start rather than
copying them. This module is where they take them from; each part is
defined and documented in the solvers' own modules:

- the loop: ``Steps`` (one iteration's rules, the interface a solver
  implements), ``solve`` and ``Run`` (the outer loop; a backend
  subclasses ``Run`` and overrides its hooks ``open_data``,
  ``check_settings``, ``fingerprint``, ``load``, ``write_checkpoint``,
  ``callback_factors`` and ``final_factors``), ``progress_bar`` (with
  ``PlainProgress``, its plain lines where ``is_terminal`` says the
  output is not a terminal), ``tol_reached`` (the stopping rule on the
  objective);
- the loop keywords: ``LoopSettings``;
- the data: ``ScaledData`` (V / max(V) and its products, dense or
  sparse), ``frobenius_norm``, ``inner``, ``is_sparse``,
  ``divides_first`` (whether V is divided by its scale before a product) and
  ``EXACT_BELOW`` (where the expanded objective is recomputed exactly);
- the squared error: ``SquaredErrorSteps``, the Gram caches
  ``ColumnGram`` and ``RowGram``, ``multiplicative_w_update``;
- the start: ``random_start`` (the paper's random start);
- the result: ``NMFResult``, ``degenerate_counts`` (dead samples and
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
