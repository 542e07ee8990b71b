"""The :class:`Comparison` that :func:`nmfsc.compare` returns."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nmfsc.atomic import write_atomic
from nmfsc.comparison import _report
from nmfsc.comparison._plots import plot_all

__all__ = ["Comparison"]


class Comparison:
    """The outcome of :func:`nmfsc.compare`: a tidy table, summaries, factors, curves.

    Attributes
    ----------
    rows : list of dict
        One row per method and seed, in method then seed order: ``method``,
        ``seed``, ``relative_error`` (:math:`\\lVert V - WH\\rVert_F / \\lVert V\\rVert_F`),
        ``rescaled_relative_error`` (:math:`\\min_c \\lVert V - cWH\\rVert_F / \\lVert V\\rVert_F`)
        and ``rescale_c`` (the minimising c), ``sparseness_W`` (mean over W's
        columns), ``sparseness_H`` (mean over H's rows), ``zero_components``,
        ``locality`` or ``orientation`` (with ``image_shape``), ``part_recovery``
        (with ``parts``), ``n_iter``, ``stop_reason``, ``time_s`` (the solver's
        seconds), and for ``sklearn_cd_l1`` also ``alpha``, ``matched`` and ``note``.
        A value that does not apply is None. A run that raised, or whose
        relative (or held-out) error is above 1, i.e. worse than predicting
        zero, has ``stop_reason`` ``"failed"`` and a ``note`` saying why; the
        summaries leave it out.
    summary : list of dict
        One entry per method: ``n_seeds``, ``<key>_median``, ``<key>_min`` and
        ``<key>_max`` for every numeric key of the rows over its runs that did
        not fail, ``n_converged``, ``n_failed``, ``stop_reasons`` and
        (for ``sklearn_cd_l1``) ``matched`` (e.g. ``"3/3"``).
    runs : dict
        ``(method, seed) -> MethodRun`` with the factors ``W``, ``H`` and the curve.
    curves : list of dict
        One per run: ``method``, ``seed``, ``iteration``, ``time_s`` and
        ``relative_error`` (lists of equal length, starting at the shared start).
    matched : list of dict
        The matched-sparseness search of every seed (the L1 weight of
        ``sklearn_cd_l1``, see :doc:`/compare`): ``alpha``, ``target``,
        ``achieved``, ``matched``, ``fits``, ``path``, ``note``.
    settings : dict
        The arguments of the call (``name``, ``shape``, ``n_components``,
        ``methods``, ``seeds``, budgets, ...).
    versions : dict
        Versions of Python, NumPy, nmfsc and (when used) scikit-learn.

    See Also
    --------
    compare : The function that returns one.
    NMFResult : The result of each single run.
    locality, orientation : Two of the scores in its table.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc import compare
    >>> rng = np.random.default_rng(0)
    >>> V = rng.random((20, 3)) @ rng.random((3, 24))
    >>> result = compare(V, 3, methods=["nmf_euclidean"], seeds=(0, 1), max_iter=100,
    ...                  progress=False)
    >>> result
    Comparison(name='data', V 20x24, M=3, methods=1, seeds=[0, 1])
    >>> [(row["method"], row["seed"]) for row in result.rows]
    [('nmf_euclidean', 0), ('nmf_euclidean', 1)]
    >>> result.summary[0]["method"], result.summary[0]["n_seeds"]  # one entry per method
    ('nmf_euclidean', 2)
    >>> W, H = result.factors("nmf_euclidean", seed=1)
    >>> W.shape, H.shape
    ((20, 3), (3, 24))
    >>> print(result.to_csv().splitlines()[0])
    method,seed,relative_error,...
    """

    def __init__(self, *, rows, runs, matched, settings, versions):
        self.rows = rows
        self.runs = runs
        self.matched = matched
        self.settings = settings
        self.versions = versions
        self.summary = _report.summarize(rows)
        self.curves = [
            {
                "method": m,
                "seed": s,
                "iteration": [int(i) for i in run.iterations],
                "time_s": [float(t) for t in run.times],
                "relative_error": [float(e) for e in run.errors],
            }
            for (m, s), run in runs.items()
        ]

    def __repr__(self):
        s = self.settings
        return (
            f"Comparison(name={s['name']!r}, V {s['shape'][0]}x{s['shape'][1]}, "
            f"M={s['n_components']}, methods={len(self.summary)}, seeds={list(s['seeds'])})"
        )

    def factors(self, method: str, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(W, H)`` of ``method`` from ``seed`` (the first seed by default)."""
        seed = self.settings["seeds"][0] if seed is None else seed
        run = self.runs[(method, seed)]
        return run.W, run.H

    def to_markdown(self, quick: bool = False) -> str:
        """The report: settings, seeds, budgets, the summary and every run."""
        return _report.markdown(self, quick)

    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """The per-run table as CSV; also written (atomically) to ``path`` if given."""
        text = _report.csv_text(self.rows)
        if path is not None:
            write_atomic(path, text)
        return text

    def to_json(self, path: str | os.PathLike[str] | None = None, quick: bool = False) -> str:
        """Everything but the factors as JSON; also written to ``path`` if given."""
        text = _report.json_text(self, quick)
        if path is not None:
            write_atomic(path, text)
        return text

    def to_frame(self) -> Any:
        """The per-run table as a pandas ``DataFrame`` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "Comparison.to_frame() needs pandas (pip install pandas); or use .rows, .to_csv()"
            ) from None
        return pd.DataFrame(self.rows)

    def plot(
        self,
        directory: str | os.PathLike[str],
        formats: str | Sequence[str] = ("png", "pdf"),
        quick: bool = False,
    ) -> list:
        """Write the figures into ``directory``: ``bases`` (with ``image_shape``),
        ``error_vs_time``, ``error_vs_iteration`` and ``sparseness``, one file per
        format. Returns the paths."""
        if isinstance(formats, str):
            formats = (formats,)
        return plot_all(self, directory, formats, quick)

    def save(self, directory: str | os.PathLike[str], *, quick: bool = False) -> list:
        """Write ``report.md``, ``report.json``, ``report.csv`` and the figures into
        ``directory``, each atomically; with ``quick=True`` every output is
        marked QUICK (Markdown heading, JSON field ``"quick"``, figure titles)."""
        directory = Path(directory)
        paths = [
            write_atomic(directory / "report.md", self.to_markdown(quick)),
            write_atomic(directory / "report.json", self.to_json(quick=quick)),
            write_atomic(directory / "report.csv", self.to_csv()),
        ]
        return paths + self.plot(directory, quick=quick)
