r"""The matched-sparseness baseline: scikit-learn's NMF with an L1 penalty tuned
so that the factor nmf_sc constrains is as sparse, on average, as nmf_sc's.

With ``l1_ratio=1`` scikit-learn minimises (in its orientation, ``X = V.T``)

.. math:: \tfrac12 \lVert X - W_{sk} H_{sk} \rVert_F^2
          + \alpha_W\, n_{features} \lVert W_{sk} \rVert_1
          + \alpha_H\, n_{samples} \lVert H_{sk} \rVert_1 ,

and our W is :math:`H_{sk}^T`, our H is :math:`W_{sk}^T`. The penalty has
one weight :math:`\alpha = \alpha_W = \alpha_H` (scikit-learn's default
``alpha_H="same"``): on one factor alone the objective would have no
minimum (W / c and c H give the same W H and a penalty c times smaller),
and a fit would shrink one factor and grow the other until ``max_iter``.
To match nmf_sc's achieved mean sparseness :math:`s^*` of W's columns (or
of H's rows), :math:`\alpha` is searched
on a log scale: starting from :data:`ALPHA_START`, :math:`\alpha` is
multiplied by 10 until the mean sparseness :math:`\bar s(\alpha)` reaches
:math:`s^*` (a fit with an all-zero component counts as too sparse: its
survivors' mean would flatter a fit with fewer than M parts), then
the bracket :math:`[\alpha_{lo}, \alpha_{hi}]` is halved at
:math:`\sqrt{\alpha_{lo}\alpha_{hi}}` until
:math:`|\bar s(\alpha) - s^*| \le` :data:`TOLERANCE` or :data:`MAX_FITS` fits
were made. Every fit is a full run from the shared start with the same
``max_iter``/``tol``. An L1 penalty only makes a factor sparser, so when the
unpenalised fit is already sparser than :math:`s^* + 0.01` no weight can match
it; the row then says so (``matched`` false and a ``note``) and shows the
closest penalised fit found (with every component alive; the unpenalised fit
only when there is none). When the unpenalised fit already matches, the note says
that the row is that fit (no penalty was needed). Every fit runs to nmfsc's
stopping rule (:func:`nmfsc.comparison._methods.run_sklearn`), so the
sparseness found for a weight is that of a converged fit, not of one stopped
by scikit-learn's own, looser rule after a few iterations.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nmfsc.comparison._methods import run_sklearn
from nmfsc.scores import sparseness_summary

__all__ = ["ALPHA_START", "MAX_FITS", "TOLERANCE", "matched_l1"]

#: Largest accepted gap between the achieved and the target mean sparseness.
TOLERANCE = 0.01
#: First non-zero weight tried.
ALPHA_START = 1e-4
#: Most fits of one search (bracketing and bisection together).
MAX_FITS = 16
_ALPHA_MAX = 1e8


def mean_sparseness(run, factor):
    """Mean sparseness of W's columns (``factor="W"``) or H's rows (``"H"``);
    ``inf`` when any component is all zero: the penalty switched it off, and
    the mean of the survivors would flatter a fit with fewer than M parts."""
    summary = sparseness_summary(run.W, run.H)[factor]
    value = summary["mean"]
    if summary["n_undefined"] > 0 or value is None or not np.isfinite(value):
        return np.inf
    return float(value)


def matched_l1(V, n_components, start, *, factor, target, fit_options, plain=None):
    r"""Search the L1 weight on ``factor`` that gives mean sparseness ``target``.

    Parameters
    ----------
    V : ndarray, shape (N, T)
    n_components : int
    start : (ndarray, ndarray)
        The shared ``(W0, H0)``.
    factor : {"W", "H"}
        The factor (our orientation) nmf_sc constrains.
    target : float
        nmf_sc's achieved mean sparseness of that factor.
    fit_options : dict
        ``max_iter``, ``tol``, ``max_time`` and ``progress`` of every fit.
    plain : MethodRun, optional
        An unpenalised scikit-learn CD fit from the same start, reused as the
        fit at :math:`\alpha = 0`.

    Returns
    -------
    (MethodRun, dict)
        The matching fit (or the closest one) labelled ``sklearn_cd_l1``, and
        the search record: ``alpha``, ``target``, ``achieved``, ``matched``,
        ``fits`` (number of fits), ``path`` (every ``[alpha, sparseness]``
        tried), ``fit_times_s``, ``fit_iterations`` and ``note``.
    """

    def fit(alpha):
        run = run_sklearn(
            V,
            n_components,
            start,
            solver="cd",
            penalty=factor,
            alpha=alpha,
            label="sklearn_cd_l1",
            **fit_options,
        )
        value = mean_sparseness(run, factor)
        tried.append((alpha, value, run))
        return value

    tried = []
    if plain is not None:
        tried.append((0.0, mean_sparseness(plain, factor), plain))
    else:
        fit(0.0)
    note = ""
    if tried[0][1] > target + TOLERANCE:
        note = (
            f"not matched: unpenalised scikit-learn NMF is already sparser "
            f"({tried[0][1]:.3f}) than nmf_sc ({target:.3f}); an L1 penalty cannot lower it"
        )
    else:
        _search(fit, tried, target)
    alpha, value, run = min(_candidates(tried, target), key=lambda t: abs(t[1] - target))
    matched = abs(value - target) <= TOLERANCE
    note = note or _note(matched, alpha, value, target, tried)
    run = _relabel(run, alpha, factor)
    record = {
        "alpha": float(alpha),
        "matched_on": factor,
        "target": float(target),
        "achieved": None if not np.isfinite(value) else float(value),
        "matched": bool(matched),
        "fits": len(tried),
        "path": [[float(a), None if not np.isfinite(v) else float(v)] for a, v, _ in tried],
        "fit_times_s": [float(r.time_s) for _, _, r in tried],
        "fit_iterations": [int(r.n_iter) for _, _, r in tried],
        "note": note,
    }
    return run, record


def _note(matched, alpha, value, target, tried):
    """The row's note when the search ran (see :func:`matched_l1`)."""
    if matched and alpha == 0.0:
        return (
            f"matched without a penalty: unpenalised scikit-learn NMF is already as sparse "
            f"({value:.3f}) as nmf_sc ({target:.3f}); this row is the sklearn_cd fit"
        )
    if matched:
        return ""
    note = (
        f"not matched: closest mean sparseness {value:.3f} (alpha {alpha:.3g}) "
        f"after {len(tried)} fits, target {target:.3f}"
    )
    if any(not np.isfinite(v) for _, v, _ in tried):
        note += "; larger weights switch components off (all-zero columns) before reaching it"
    return note


def _candidates(tried, target):
    """The fits the row may show: every fit when the unpenalised one matches;
    else the penalised fits with every component alive (a row with a penalty
    that does something), or every fit when there is none."""
    if abs(tried[0][1] - target) <= TOLERANCE:
        return tried
    penalised = [t for t in tried if t[0] > 0 and np.isfinite(t[1])]
    return penalised or tried


def _search(fit, tried, target):
    """Bracket on a log scale, then bisect; stops at a match or :data:`MAX_FITS`."""

    def close(value):
        return abs(value - target) <= TOLERANCE

    if close(tried[-1][1]):
        return
    lo, hi = 0.0, ALPHA_START
    value = fit(hi)
    while value < target and not close(value) and hi < _ALPHA_MAX and len(tried) < MAX_FITS:
        lo, hi = hi, hi * 10.0
        value = fit(hi)
    while not close(value) and len(tried) < MAX_FITS:
        mid = np.sqrt(lo * hi) if lo > 0 else hi / 10.0
        value = fit(mid)
        if value < target:
            lo = mid
        else:
            hi = mid


def _relabel(run, alpha, factor):
    # A copy: the alpha = 0 fit may be the sklearn_cd row's own run.
    params = {"alpha": float(alpha), "matched_on": factor}
    return dataclasses.replace(run, method="sklearn_cd_l1", params=params)
