r"""The runner behind :func:`nmfsc.compare`: checks, the loop over seeds and
methods, and the numbers of every row.

Scores of one run (V is N x T, W is N x M, H is M x T):

- relative error :math:`e = \lVert V - WH \rVert_F / \lVert V \rVert_F`;
- rescaled relative error :math:`\min_c \lVert V - c\,WH \rVert_F / \lVert V \rVert_F`,
  reached at :math:`c^* = \langle V, WH \rangle / \lVert WH \rVert_F^2` (the
  least-squares fit of one scalar; :math:`c^* = 0` and error 1 when
  :math:`WH = 0`). A method whose penalty shrinks a factor (Sparse NMF's L1
  term on H) has a large :math:`e` although :math:`c^* WH` fits well;
- mean Hoyer sparseness of W's columns and of H's rows (all-zero components
  left out and counted in ``zero_components``);
- ``dead_samples``: samples whose column of H is all zero although the fit
  would gain by giving them coefficients (see
  :func:`nmfsc.solvers.framework.degenerate_counts` and
  :class:`nmfsc.DegenerateFitWarning`);
- with ``image_shape``: mean :func:`nmfsc.locality` of the basis images, or
  with ``on_off=True`` the mean :func:`nmfsc.orientation` of the ON-minus-OFF
  filters;
- with ``parts``: :func:`nmfsc.datasets.part_recovery` of W against them.

V may be a scipy.sparse matrix: the methods take it as it is and the errors
come from sparse products (:mod:`nmfsc.comparison._errors`); it is never made
dense.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from nmfsc._parameters import check
from nmfsc._validation import (
    as_float_array,
    check_data,
    check_image_shape,
)
from nmfsc.comparison._errors import relative_error, rescaled_error
from nmfsc.comparison._matched import matched_l1
from nmfsc.comparison._methods import (
    METHODS,
    SKLEARN_METHODS,
    available_methods,
    failed_run,
    run_method,
    run_sklearn,
    sklearn_available,
    starting_point,
)
from nmfsc.comparison._report import CONVERGED
from nmfsc.scores import locality, orientation, sparseness_summary
from nmfsc.solvers import ConvergenceWarning, DegenerateFitWarning
from nmfsc.solvers.framework import degenerate_counts, is_sparse
from nmfsc.solvers.registry import SPARSENESS, solver

__all__ = ["check_methods", "run_all", "score_run"]


def check_methods(methods):
    """The tuple of method names to run (``None``: every available one)."""
    if methods is None:
        return available_methods()
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(dict.fromkeys(methods))
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(
            f"unknown method(s) {', '.join(map(repr, unknown))}; choose from {', '.join(METHODS)}"
        )
    if not methods:
        raise ValueError(f"methods is empty; choose from {', '.join(METHODS)}")
    wanted_sklearn = [m for m in methods if m in SKLEARN_METHODS]
    if wanted_sklearn and not sklearn_available():
        raise ImportError(
            f"{', '.join(wanted_sklearn)} need scikit-learn (pip install scikit-learn)"
        )
    return tuple(m for m in METHODS if m in methods)


def check_settings(
    V, n_components, methods, sparseness_w, sparseness_h, seeds, image_shape, on_off, parts
):
    """Validate the arguments of :func:`nmfsc.compare`; returns the cleaned values,
    V divided by its maximum (see :func:`normalised`) and that maximum last."""
    V, scale = check_data(V)
    V = normalised(V, scale)
    M = check("n_components", n_components)
    methods = check_methods(methods)
    sw = check("sparseness_w", sparseness_w)
    sh = check("sparseness_h", sparseness_h)
    constrained = any(m == "sklearn_cd_l1" or _constrained(m) for m in methods)
    if sw is None and sh is None and constrained:
        raise ValueError(
            "give sparseness_w or sparseness_h (the level nmf_sc is held to, e.g. "
            "sparseness_w=0.8); there is no default, the level is the point of the comparison"
        )
    if isinstance(seeds, numbers.Integral):
        seeds = (seeds,)
    seeds = tuple(seeds)
    if not seeds or not all(
        isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in seeds
    ):
        raise TypeError(f"seeds must be a non-empty sequence of integers, got {seeds!r}")
    seeds = tuple(int(s) for s in seeds)
    if min(seeds) < 0:
        raise ValueError(f"seeds must be integers >= 0, got {min(seeds)}")
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise ValueError(
            f"seeds must differ: {repeated} repeated in {list(seeds)}; a repeated seed "
            "repeats the same runs and would be counted as another"
        )
    if image_shape is not None:
        image_shape = _check_image_shape(image_shape, V.shape[0], on_off)
    if parts is not None:
        parts = as_float_array(parts, "parts", ndim=2)
        if parts.shape[0] != V.shape[0]:
            raise ValueError(
                f"parts must be N x P with N = {V.shape[0]} (rows of V), got shape {parts.shape}"
            )
    return V, M, methods, sw, sh, seeds, image_shape, parts, scale


def _constrained(method):
    """Whether ``method`` is one of nmfsc's solvers held to a sparseness level (nmf_sc)."""
    return method not in SKLEARN_METHODS and set(SPARSENESS) <= set(solver(method).keywords)


def _params(method, nmf_sc_params, sparse_nmf_alpha):
    """The own keywords of nmfsc's solver ``method``: the sparseness levels for
    the constrained one; compare's L1 weight (``sparse_nmf_alpha``) for the
    solver whose only keyword is an L1 weight ``alpha``; none for the others,
    which keep their defaults."""
    keywords = solver(method).keywords
    if _constrained(method):
        return nmf_sc_params
    return {"alpha": sparse_nmf_alpha} if keywords == ("alpha",) else {}


def normalised(V, scale):
    """V / max(V): compare runs every method on it, so that every number it
    reports (relative errors, sparseness, scores, the L1 weight matched on the
    normalised data) is the same at any scale of V, and scikit-learn, which does
    not rescale, neither underflows nor overflows. A new array (or sparse
    matrix) of V's dtype; V itself when its maximum is already 1."""
    if scale == 1.0:
        return V
    return V / scale if is_sparse(V) else np.divide(V, scale, dtype=V.dtype)


def _check_image_shape(image_shape, n_rows, on_off):
    h, w = check_image_shape(image_shape, "image_shape")
    pixels = h * w * (2 if on_off else 1)
    if pixels != n_rows:
        what = "2 * height * width (ON and OFF channels)" if on_off else "height * width"
        raise ValueError(f"image_shape {(h, w)} gives {what} = {pixels}, but V has {n_rows} rows")
    return (h, w)


def _finite(value):
    return None if value is None or not np.isfinite(value) else float(value)


def score_run(V, run, seed, *, image_shape=None, on_off=False, parts=None):
    """The table row of one run (a dict; see :class:`nmfsc.Comparison`).

    A run that raised (``run.failure``) has no numbers; a run whose relative
    error is not finite or above 1 fits V worse than :math:`WH = 0`. Both
    are rows with ``stop_reason`` ``"failed"`` and a ``note`` saying why
    (:func:`failure_note`), never counted as converged."""
    if run.failure is not None:
        return _failed_row(run, seed)
    summary = sparseness_summary(run.W, run.H)
    c, rescaled = rescaled_error(V, run.W, run.H)
    row = {
        "method": run.method,
        "seed": int(seed),
        "relative_error": relative_error(V, run.W, run.H),
        "rescaled_relative_error": rescaled,
        "rescale_c": c,
        "sparseness_W": _finite(summary["W"]["mean"]),
        "sparseness_H": _finite(summary["H"]["mean"]),
        "zero_components": int(summary["W"]["n_undefined"]),
        "dead_samples": degenerate_counts(run.W, run.H, lambda columns: V[:, columns])[0],
    }
    if image_shape is not None:
        nonzero = bool(np.any(run.W != 0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            if on_off:
                values = orientation(run.W, image_shape, on_off=True)
                row["orientation"] = _finite(np.nanmean(values)) if nonzero else None
            else:
                values = locality(run.W, image_shape)
                row["locality"] = _finite(np.nanmean(values)) if nonzero else None
    if parts is not None:
        from nmfsc.datasets import part_recovery

        row["part_recovery"] = float(part_recovery(run.W, parts))
    row["stationarity"] = _finite(run.stationarity)
    row.update(n_iter=int(run.n_iter), stop_reason=run.stop_reason, time_s=float(run.time_s))
    if run.method == "sklearn_cd_l1":
        row["alpha"] = run.params["alpha"]
    note = failure_note(run.method, row["relative_error"], "relative error", run.stop_reason)
    if note and rescaled is not None and np.isfinite(rescaled) and rescaled < 1.0:
        note += f"; its rescaled error is {rescaled:.3g} at c = {c:.3g}: W H has the wrong scale"
    if note:
        row["stop_reason"] = "failed"
        row["note"] = note
        for key in ("relative_error", "rescaled_relative_error", "rescale_c"):
            row[key] = _finite(row[key])
    return row


def failure_note(method, error, what, stop_reason):
    """Why a run with ``error`` (its relative ``what``: ``"relative error"`` or
    ``"held-out error"``) failed, or ``""`` when the error is finite and at most
    1: at 1 a fit is as good as predicting zero, above it worse."""
    if error is not None and np.isfinite(error) and error <= 1.0:
        return ""
    value = "not finite" if error is None or not np.isfinite(error) else f"{error:.3g} > 1"
    note = f"failed: {what} {value}, worse than predicting zero (W H = 0)"
    if stop_reason in CONVERGED:
        note += f", although its stopping rule ({stop_reason}) was met"
    if method not in SKLEARN_METHODS and not solver(method).squared_error:
        note += (
            f"; {method} minimises another objective than the squared error, "
            "which need not fit this V in the Frobenius norm"
        )
    return note


def _failed_row(run, seed):
    """The row of a run that raised: no numbers, the error in ``note``."""
    return {
        "method": run.method,
        "seed": int(seed),
        "relative_error": None,
        "rescaled_relative_error": None,
        "rescale_c": None,
        "sparseness_W": None,
        "sparseness_H": None,
        "zero_components": None,
        "dead_samples": None,
        "stationarity": None,
        "n_iter": 0,
        "stop_reason": "failed",
        "time_s": 0.0,
        "note": f"failed: {run.failure}",
    }


def warm_up(methods, sparse_nmf_alpha, like=None):
    """Compile (or load from numba's cache) every solver's kernels once, so that
    no method's time includes it; ``like``: the data, whose kind (dense, or
    sparse CSR / CSC with its dtype) the small warm-up matrix takes."""
    V = np.abs(np.random.default_rng(0).standard_normal((6, 5))) + 0.1
    if like is not None and is_sparse(like):
        V = type(like)(V.astype(like.dtype))
        V = V.tocsc() if like.format == "csc" else V.tocsr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DegenerateFitWarning)
        for method in methods:
            if method not in SKLEARN_METHODS:
                params = _params(method, {"sparseness_w": 0.5}, sparse_nmf_alpha)
                solver(method).run(V, 2, random_state=0, max_iter=2, **params)


def run_seed(
    V,
    M,
    seed,
    methods,
    *,
    nmf_sc_params,
    sparse_nmf_alpha,
    fit_options,
    observed=None,
    training=None,
):
    """Every method of ``methods`` from the start of ``seed``. ``observed``:
    the entries the methods that take a mask fit (an
    :class:`~nmfsc.observed.Observed`, the training entries of a held-out
    comparison, :mod:`._holdout`; None: every entry), in ``training`` (the
    V they fit, :meth:`._holdout.Holdout.training_data`).

    Returns
    -------
    (list of MethodRun, dict or None)
        The runs in table order and the matched-L1 search record.
    """
    start = starting_point(V, M, seed)
    runs, by_name, record = [], {}, None
    for method in methods:
        try:
            run, found = _run_one(
                V,
                M,
                start,
                method,
                by_name,
                nmf_sc_params=nmf_sc_params,
                sparse_nmf_alpha=sparse_nmf_alpha,
                fit_options=fit_options,
                observed=observed,
                training=training,
            )
        except Exception as error:  # one method's failure is its row, not the end
            run, found = failed_run(method, V, M, error), None
        if found is not None:
            record = {**found, "seed": seed}
        runs.append(run)
        if run.failure is None:
            by_name[method] = run
    return runs, record


def _run_one(
    V,
    M,
    start,
    method,
    by_name,
    *,
    nmf_sc_params,
    sparse_nmf_alpha,
    fit_options,
    observed,
    training,
):
    """One method's :class:`MethodRun` from ``start`` and, for ``sklearn_cd_l1``, its
    search record (else None); ``by_name``: the runs of this seed so far."""
    record = None
    if method == "sklearn_cd_l1":
        constrained = next((by_name[m] for m in by_name if _constrained(m)), None)
        factor, target = _l1_target(nmf_sc_params, constrained)
        run, record = matched_l1(
            V,
            M,
            start,
            factor=factor,
            target=target,
            fit_options=fit_options,
            plain=by_name.get("sklearn_cd"),
        )
    elif method in SKLEARN_METHODS:
        run = run_sklearn(V, M, start, solver=method.split("_")[1], **fit_options)
    else:
        params = _params(method, nmf_sc_params, sparse_nmf_alpha)
        if observed is not None and solver(method).masked_steps is not None:
            run = run_method(
                method,
                training,
                M,
                start,
                params=params,
                observed=observed,
                scored=V,
                **fit_options,
            )
        else:
            run = run_method(method, V, M, start, params=params, **fit_options)
    return run, record


def _l1_target(nmf_sc_params, nmf_sc_run):
    """(factor, target): W when nmf_sc constrains W (also when it constrains both),
    else H; the target is nmf_sc's achieved mean sparseness when it ran."""
    factor = "W" if "sparseness_w" in nmf_sc_params else "H"
    target = nmf_sc_params["sparseness_" + factor.lower()]
    if nmf_sc_run is not None:
        value = sparseness_summary(nmf_sc_run.W, nmf_sc_run.H)[factor]["mean"]
        if value is not None and np.isfinite(value):
            target = float(value)
    return factor, target


def run_all(
    V,
    M,
    methods,
    seeds,
    *,
    nmf_sc_params,
    sparse_nmf_alpha,
    fit_options,
    scoring,
    observed=None,
    training=None,
):
    """Run every (seed, method); returns ``(rows, runs, records)`` where ``runs``
    maps ``(method, seed)`` to its :class:`MethodRun` (``observed`` and
    ``training``: see :func:`run_seed`)."""
    warm_up(methods, sparse_nmf_alpha, like=V)
    rows, runs, records = [], {}, []
    for seed in seeds:
        seed_runs, record = run_seed(
            V,
            M,
            seed,
            methods,
            nmf_sc_params=nmf_sc_params,
            sparse_nmf_alpha=sparse_nmf_alpha,
            fit_options=fit_options,
            observed=observed,
            training=training,
        )
        for run in seed_runs:
            row = score_run(V, run, seed, **scoring)
            if run.method == "sklearn_cd_l1" and run.failure is None:
                row.update(matched=record["matched"], note=row.get("note") or record["note"])
            rows.append(row)
            runs[(run.method, seed)] = run
        if record is not None:
            records.append(record)
    rows.sort(key=lambda r: (METHODS.index(r["method"]), seeds.index(r["seed"])))
    return rows, runs, records
