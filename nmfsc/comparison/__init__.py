"""Compare nmf_sc with standard NMF methods on your own data: :func:`nmfsc.compare`.

Modules, one job each: ``_methods`` (the method table, the shared start and
how each method runs), ``_matched`` (the matched-sparseness L1 baseline),
``_runner`` (checks, the loop over seeds and methods, the scores of a run),
``_result`` (the :class:`Comparison`), ``_report`` (Markdown, CSV and JSON),
and ``_plots`` (the figures, written atomically by
:func:`nmfsc.plotting.save_figure`).
"""

from nmfsc.comparison._api import compare
from nmfsc.comparison._methods import METHODS, starting_point
from nmfsc.comparison._result import Comparison

__all__ = ["METHODS", "Comparison", "compare", "starting_point"]
