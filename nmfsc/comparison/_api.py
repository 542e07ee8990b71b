"""The function :func:`nmfsc.compare`."""

from __future__ import annotations

import platform
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from nmfsc._parameters import check
from nmfsc._version import __version__
from nmfsc.comparison._holdout import (
    Holdout,
    check_sparse_zeros,
    holdout_rows,
)
from nmfsc.comparison._methods import sklearn_available
from nmfsc.comparison._result import Comparison
from nmfsc.comparison._runner import check_settings, run_all
from nmfsc.solvers.framework import is_sparse

__all__ = ["compare"]


def compare(
    V: ArrayLike,
    n_components: int,
    *,
    methods: Sequence[str] | None = None,
    sparseness_w: float | None = None,
    sparseness_h: float | None = None,
    seeds: Sequence[int] | int = (0, 1, 2),
    max_iter: int = 2000,
    tol: float = 1e-4,
    max_time: float | None = None,
    image_shape: tuple[int, int] | None = None,
    on_off: bool = False,
    parts: ArrayLike | None = None,
    sparse_nmf_alpha: float = 100.0,
    progress: bool = True,
    name: str | None = None,
    holdout: float | None = None,
    holdout_seed: int = 0,
    missing_values: float | None = None,
    sparse_zeros: str = "observed",
) -> Comparison:
    r"""Run nmf_sc and standard NMF methods side by side on ``V``, from the same starts.

    Every method runs on ``V / max(V)`` (so every number reported is the same at
    any scale of V; the runs' W are returned in V's units), for each seed from
    :math:`W_0 = |R_W|`, :math:`H_0 = |R_H|` (standard normal,
    ``numpy.random.default_rng(seed)``), until the relative decrease of its
    objective over 10 iterations falls below ``tol``, or ``max_iter``: never by
    wall time unless ``max_time`` is given, so equal calls give equal numbers.

    Parameters
    ----------
    V : array_like or scipy.sparse matrix, shape (N, T)
        Non-negative data, one sample per column; scipy.sparse stays sparse.
    n_components : int
        M, the number of basis vectors.
    methods : sequence of str, optional
        Names of methods (None: every one that can run here): ``nmf_sc``,
        ``nmf_sc_accelerated``, ``nmf_euclidean``, ``nmf_divergence``, ``local_nmf``,
        ``sparse_nmf``; with scikit-learn also ``sklearn_mu``, ``sklearn_cd``
        and ``sklearn_cd_l1``, CD with an L1 penalty of one weight on both
        factors, tuned until the mean sparseness of the factor nmf_sc
        constrains is within 0.01 of nmf_sc's (W when ``sparseness_w`` is
        given, else H).
    sparseness_w, sparseness_h : float in [0, 1], optional
        nmf_sc's targets; one is required when ``nmf_sc`` or ``sklearn_cd_l1``
        runs (no default: the level is the point of the comparison).
    seeds : sequence of int, default (0, 1, 2)
    max_iter, tol : int, default 2000; float, default 1e-4
        Budgets of every run, and of every fit of the L1 search.
    max_time : float, optional
        Seconds per run (makes the numbers machine-dependent).
    image_shape : (int, int), optional
        Image of a column of V (of each ON/OFF half with ``on_off``): adds mean
        :func:`~nmfsc.locality` (``on_off``: orientation) and the bases figure.
    on_off : bool, default False
    parts : array_like, shape (N, P), optional
        True parts: adds :func:`nmfsc.datasets.part_recovery`.
    sparse_nmf_alpha : float, default 100.0
    progress : bool, default True
        A tqdm bar on stderr per run (plain lines when it is not a terminal).
    name : str, optional
        Name of the data in reports (default ``"data"``).
    holdout : float in (0, 1), optional
        Hide this fraction of the observed entries (drawn by
        ``numpy.random.default_rng(holdout_seed)``, the same for every method
        and seed), fit every method to the rest, and report each run's
        relative error on the hidden entries (``holdout_error``). ``nmf_sc``
        and ``nmf_euclidean`` fit the training entries only (their ``mask``);
        the other methods are fitted to V with the hidden entries filled by
        their row's training mean (``holdout_fit``). For scipy.sparse V,
        ``sparse_zeros`` says which entries are observed (docs/compare.md).
    holdout_seed : int, default 0
    missing_values : None or np.nan, default None
        np.nan: NaN entries of V (a sparse V's stored NaN entries) are
        missing, handled as hidden entries that are never scored. None: NaN
        is an error.
    sparse_zeros : {"observed", "missing"}, default "observed"
        With ``holdout`` or ``missing_values`` on a scipy.sparse V: what its
        unstored entries are. ``"observed"``: zeros that are data (counts,
        TF-IDF), drawn into the hidden entries like any other and fitted by
        the masked methods at every other entry (:meth:`Observed.all_but
        <nmfsc.observed.Observed.all_but>`). ``"missing"``: unobserved
        (ratings): only the stored entries are fitted and hidden. Either
        way V stays sparse: the memory grows with its stored entries and the
        hidden ones, not with N x T. A held-out comparison reports the relative
        held-out errors of predicting zero (1) and each row's training mean
        (``settings["holdout_baselines"]``), and ranks the methods against
        them; a run worse than predicting zero on the hidden entries is
        failed.

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError
        Unknown method names, no sparseness level, bad V or shapes.
    ImportError
        A scikit-learn method without scikit-learn (docs/compare.md: an example).

    See Also
    --------
    Comparison : What it returns.
    read_matrix : Read V from a file, as the command line does.
    nmf_sc : The constrained solver it compares.
    nmfsc.solvers.registry.compared_solvers : The names of the methods it runs.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc import compare
    >>> rng = np.random.default_rng(0)
    >>> V = rng.random((30, 4)) @ rng.random((4, 24))
    >>> result = compare(V, 4, sparseness_w=0.5, methods=["nmf_sc", "nmf_euclidean"],
    ...                  seeds=(0,), progress=False)
    >>> [(row["method"], round(row["sparseness_W"], 3)) for row in result.rows]
    [('nmf_sc', 0.5), ('nmf_euclidean', 0.14)]
    >>> W, H = result.factors("nmf_sc", seed=0)
    >>> W.shape, H.shape
    ((30, 4), (4, 24))
    """
    split = _split(V, holdout, holdout_seed, missing_values, sparse_zeros)
    V = V if split is None else split.filled
    V, M, methods, sw, sh, seeds, image_shape, parts, scale = check_settings(
        V, n_components, methods, sparseness_w, sparseness_h, seeds, image_shape, on_off, parts
    )
    fit_options = {
        "max_iter": check("max_iter", max_iter),
        "tol": check("tol", tol),
        "max_time": check("max_time", max_time),
        "progress": bool(progress),
    }
    alpha = check("sparse_nmf_alpha", sparse_nmf_alpha)
    nmf_sc_params = {k: v for k, v in (("sparseness_w", sw), ("sparseness_h", sh)) if v is not None}
    settings = _settings(
        name, V, M, methods, sw, sh, seeds, fit_options, image_shape, on_off, parts, alpha
    )
    scoring = {"image_shape": image_shape, "on_off": bool(on_off), "parts": parts}
    rows, runs, matched = run_all(
        V,
        M,
        methods,
        seeds,
        nmf_sc_params=nmf_sc_params,
        sparse_nmf_alpha=alpha,
        fit_options=fit_options,
        scoring=scoring,
        observed=None if split is None else split.observed,
        training=None if split is None else split.training_data(V),
    )
    if split is not None:
        rows = holdout_rows(rows, runs, split, scale)
        settings.update(split.settings)
    return Comparison(
        rows=rows,
        runs=_in_data_units(runs, scale),
        matched=matched,
        settings=settings,
        versions=_versions(methods),
    )


def _split(V, holdout, holdout_seed, missing_values, sparse_zeros):
    """The :class:`~nmfsc.comparison._holdout.Holdout` of the call, or None
    when nothing is hidden and NaN is not a missing value."""
    missing = check("missing_values", missing_values)
    zeros = check_sparse_zeros(sparse_zeros)
    if holdout is None and not missing:
        return None
    fraction = check("holdout", holdout)
    seed = check("holdout_seed", holdout_seed)
    sparse = is_sparse(V)
    split = Holdout(V, fraction, seed, missing, zeros_observed=zeros == "observed")
    split.settings["sparse_zeros"] = zeros if sparse else None
    return split


def _in_data_units(runs, scale):
    """The runs, each W multiplied back by max(V) (they ran on V / max(V))."""
    for run in runs.values():
        run.W = run.W * scale
    return runs


def _settings(name, V, M, methods, sw, sh, seeds, fit_options, image_shape, on_off, parts, alpha):
    """The arguments of the call, JSON-ready (``Comparison.settings``)."""
    return {
        "name": "data" if name is None else str(name),
        "shape": list(V.shape),
        "n_components": M,
        "methods": list(methods),
        "sparseness_w": sw,
        "sparseness_h": sh,
        "seeds": list(seeds),
        **{k: v for k, v in fit_options.items() if k != "progress"},
        "image_shape": None if image_shape is None else list(image_shape),
        "on_off": bool(on_off),
        "parts": None if parts is None else list(parts.shape),
        "sparse_nmf_alpha": alpha,
    }


def _versions(methods):
    out = {"python": platform.python_version(), "numpy": np.__version__, "nmfsc": __version__}
    if any(m.startswith("sklearn") for m in methods) and sklearn_available():
        import sklearn

        out["scikit-learn"] = sklearn.__version__
    return out
