"""The function :func:`nmfsc.compare`."""

from __future__ import annotations

import platform

import numpy as np

import nmfsc
from nmfsc.comparison._methods import sklearn_available
from nmfsc.comparison._result import Comparison
from nmfsc.comparison._runner import check_settings, run_all
from nmfsc.solvers._common import check_nonneg_real

__all__ = ["compare"]


def compare(
    V,
    n_components,
    *,
    methods=None,
    sparseness_w=None,
    sparseness_h=None,
    seeds=(0, 1, 2),
    max_iter=2000,
    tol=1e-4,
    max_time=None,
    image_shape=None,
    on_off=False,
    parts=None,
    sparse_nmf_alpha=100.0,
    progress=True,
    name=None,
):
    r"""Run nmf_sc and standard NMF methods side by side on ``V``, from the same starts.

    For every seed every method starts from the same
    :math:`W_0 = \max(V)\,|R_W|`, :math:`H_0 = |R_H|` (standard normal
    :math:`R` from ``numpy.random.default_rng(seed)``) and runs until its
    stopping rule (relative decrease of its objective over 10 iterations below
    ``tol``) or ``max_iter`` iterations; never by wall time unless ``max_time``
    is given, so two calls with the same arguments give the same numbers
    (only the times differ).

    Parameters
    ----------
    V : array_like, shape (N, T)
        Non-negative data, one sample per column (features x samples, the
        paper's orientation); checked as the solvers check it.
    n_components : int
        M, the number of basis vectors.
    methods : sequence of str, optional
        Names from :data:`nmfsc.comparison.METHODS`; ``None`` runs every
        available one (scikit-learn's only when it is installed):

        - ``nmf_sc``: :func:`nmfsc.nmf_sc` at ``sparseness_w`` / ``sparseness_h``;
        - ``nmf_euclidean``, ``nmf_divergence``, ``local_nmf``, ``sparse_nmf``
          (at ``alpha = sparse_nmf_alpha``): nmfsc's baselines;
        - ``sklearn_mu``, ``sklearn_cd``: ``sklearn.decomposition.NMF`` with
          ``solver="mu"`` / ``"cd"``, Frobenius loss, no penalty;
        - ``sklearn_cd_l1``: scikit-learn's CD with an L1 penalty on the factor
          nmf_sc constrains (W when ``sparseness_w`` is given, else H), its
          weight searched until that factor's mean sparseness is within 0.01
          of nmf_sc's (see :mod:`nmfsc.comparison._matched`).
    sparseness_w, sparseness_h : float in [0, 1], optional
        nmf_sc's targets. At least one is required when ``nmf_sc`` or
        ``sklearn_cd_l1`` runs: there is no default level.
    seeds : sequence of int, default (0, 1, 2)
        One start per seed; the summaries give median and range over seeds.
    max_iter : int, default 2000
    tol : float, default 1e-4
        The budgets of every run (also of every fit of the L1 search).
    max_time : float, optional
        Seconds per run; makes the numbers depend on the machine.
    image_shape : (int, int), optional
        ``(height, width)`` of a column of V (or of each of its ON and OFF
        halves with ``on_off=True``): adds the mean locality (or orientation)
        of the basis images and the bases figure.
    on_off : bool, default False
        V's columns are ON/OFF patches (rows ``[:P]`` ON, ``[P:]`` OFF).
    parts : array_like, shape (N, P), optional
        Ground-truth parts: adds :func:`nmfsc.datasets.part_recovery`.
    sparse_nmf_alpha : float, default 100.0
        Sparse NMF's penalty weight.
    progress : bool, default True
        A tqdm bar on stderr for every run, its ETA from the iteration rate.
    name : str, optional
        The data set's name in reports and figure titles (default ``"data"``).

    Returns
    -------
    Comparison
        The table (``rows``), per-method ``summary``, the factors and curves of
        every run, and the writers ``to_markdown``, ``to_csv``, ``to_json``,
        ``to_frame``, ``plot`` and ``save``.

    Raises
    ------
    ValueError
        Unknown method names (the message lists the allowed ones), no
        sparseness for nmf_sc, bad V, shapes that do not fit.
    ImportError
        A scikit-learn method was asked for and scikit-learn is missing.

    Examples
    --------
    >>> import numpy as np, nmfsc
    >>> V = np.abs(np.random.default_rng(0).standard_normal((16, 30)))
    >>> result = nmfsc.compare(V, 3, sparseness_w=0.6, methods=["nmf_sc", "nmf_euclidean"],
    ...                        seeds=(0,), max_iter=20, progress=False)
    >>> [row["method"] for row in result.rows]
    ['nmf_sc', 'nmf_euclidean']
    """
    V, M, methods, sw, sh, seeds, image_shape, parts = check_settings(
        V, n_components, methods, sparseness_w, sparseness_h, seeds, image_shape, on_off, parts
    )
    max_time = check_nonneg_real(max_time, "max_time", positive=True, allow_none=True)
    alpha = check_nonneg_real(sparse_nmf_alpha, "sparse_nmf_alpha")
    nmf_sc_params = {k: v for k, v in (("sparseness_w", sw), ("sparseness_h", sh)) if v is not None}
    settings = {
        "name": "data" if name is None else str(name),
        "shape": list(V.shape),
        "n_components": M,
        "methods": list(methods),
        "sparseness_w": sw,
        "sparseness_h": sh,
        "seeds": list(seeds),
        "max_iter": int(max_iter),
        "tol": float(tol),
        "max_time": max_time,
        "image_shape": None if image_shape is None else list(image_shape),
        "on_off": bool(on_off),
        "parts": None if parts is None else list(parts.shape),
        "sparse_nmf_alpha": alpha,
    }
    fit_options = {
        "max_iter": int(max_iter),
        "tol": float(tol),
        "max_time": max_time,
        "progress": bool(progress),
    }
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
    )
    return Comparison(
        rows=rows, runs=runs, matched=matched, settings=settings, versions=_versions(methods)
    )


def _versions(methods):
    out = {"python": platform.python_version(), "numpy": np.__version__, "nmfsc": nmfsc.__version__}
    if any(m.startswith("sklearn") for m in methods) and sklearn_available():
        import sklearn

        out["scikit-learn"] = sklearn.__version__
    return out
