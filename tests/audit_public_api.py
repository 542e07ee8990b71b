"""Reliability audit of nmfsc's public API with bad input (issue 13): re-runnable.

Not a pytest module (no ``test_`` prefix): it runs on the order of a thousand cases,
each under a time limit, and counts the outcomes. Run it as::

    NMFSC_DATA_DIR=/work/shared/data python tests/audit_public_api.py --out /tmp/audit.json

The cases are a product of targets (every public function, the solvers, the
estimator's methods, ``compare``, ``read_matrix``, checkpoint resume, the data set
helpers) and bad inputs (data scales, NaN/inf, negative, empty, all-zero, wrong
ndim or dtype, masked arrays, lists, out-of-range or wrong-type parameters, bad
starts). A worker subprocess runs the cases one after the other and is restarted
after a case runs past the time limit. Each outcome is classified by the rules in
``RULES`` (printed with the totals). Nothing is downloaded: the data set helpers get
a gate on a temporary copy of ``$NMFSC_DATA_DIR`` (or nothing, when it is unset:
then the valid data set loads are skipped).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

RULES = {
    "clear error": (
        "an exception of type ValueError, TypeError, FloatingPointError or one of nmfsc's "
        "own error classes (DataError, DataFileError, CheckpointMismatchError; subclasses "
        "count), whose message either names the offending argument (its parameter name as "
        "a word, e.g. 'n_components', 'V', 'X', 'W_init', 'gate') or contains a word "
        "describing the problem (one of PROBLEM_WORDS) and was raised by a `raise` "
        "statement in nmfsc's own code or in scikit-learn's input validation "
        "(sklearn/utils/validation.py, which SparseNMF uses)"
    ),
    "correct": (
        "returned without error and without mutating its inputs, and the result passes the "
        "target's checks: right type and shape, finite (NaN only where documented: the "
        "score of an all-zero vector, summarize_scores of NaN or no values), non-negative "
        "factors and codes, finite relative error and objective, sparseness constraints met "
        "within 1e-3, projections on their norms within 1e-6, no component (column of W, "
        "row of H) left all zero from a given start; "
        "for c*V (c = 1e-320 ... 1e300) the same relative error and H (scale-free outputs "
        "for the others) within rtol 1e-6 as for (c*V)/c, the data as rounded at that "
        "scale (for the subnormal 1e-320 also within 4 subnormal units of the output's "
        "largest entry, about 8e-4 of it: all a subnormal output can hold); a list, "
        "object array, Fortran-order, read-only or unmasked masked array "
        "gives the plain array's result within 1e-6; a masked array with masked entries "
        "gives a result that differs from ignoring the mask. A wrong-type value with one "
        "obvious meaning (numeric text such as '0.5', a text flag) that is accepted and "
        "gives a result passing the checks counts here, flagged 'lenient'"
    ),
    "unclear error": (
        "any other exception: KeyError, IndexError, ZeroDivisionError, AttributeError, "
        "OverflowError, errors raised inside numpy/scipy/numba/scikit-learn's solvers "
        "(not by an explicit `raise` in nmfsc or scikit-learn's validation), or an "
        "accepted type whose message names neither the argument nor the problem; "
        "also a worker that died (crash)"
    ),
    "silent wrong": (
        "returned, but the result fails a check above (NaN/inf, negative factors, "
        "constraints violated, a different answer at another scale, a mask dropped, a "
        "component left all zero), or returned for an input that must be refused (NaN, inf "
        "or negative data, complex, text, wrong ndim, empty, an out-of-range or wrong-type "
        "parameter without one obvious meaning), or mutated an input"
    ),
    "hang": "the case ran past the per-case time limit (the worker is killed and restarted)",
}
PROBLEM_WORDS = (
    "nan",
    "finite",
    "infinite",
    "negative",
    "non-negative",
    "nonnegative",
    "empty",
    "shape",
    "dimension",
    "2-d",
    "1-d",
    "dtype",
    "complex",
    "real",
    "integer",
    "int",
    "float",
    "number",
    "numeric",
    "masked",
    "zero",
    "range",
    "must",
    "positive",
    "between",
    "at least",
    "at most",
    "too large",
    "too small",
    "overflow",
    "underflow",
    "invalid",
    "unknown",
    "expected",
    "got",
    "undefined",
    "callable",
    "required",
    "not supported",
    "cannot",
    "unsupported",
    "no such",
    "not a",
    "no array",
    "holds no",
    "missing",
    "not fitted",
)
#: scikit-learn's input validation (check_array, check_is_fitted), whose own messages
#: are deliberate and describe the problem; SparseNMF relies on it.
SKLEARN_VALIDATION = os.path.join("sklearn", "utils", "validation.py")
CATEGORIES = ("clear error", "correct", "unclear error", "silent wrong", "hang")
RNG = np.random.default_rng(0)
V = np.abs(RNG.standard_normal((12, 15)))  # the issue's reproducer matrix
V_MASK = np.zeros(V.shape, dtype=bool)
V_MASK[2, 3] = V_MASK[7, 9] = True
SCALES = ("1e-320", "1e-300", "1e-200", "1e-100", "1e100", "1e200", "1e300")  # c in c * V
FIT = {"max_iter": 30, "random_state": 0}


# --- inputs -------------------------------------------------------------------------


def _with(a, index, value):
    a = np.array(a, dtype=float)
    a[index] = value
    return a


def array_kinds(base, negative_ok=False, nan_ok=False):
    """Bad and borderline variants of a valid float array ``base``.

    Each maps a kind to ``(make, expect)``; ``expect`` is "error" (must be refused),
    "same" (must give the plain array's result), "scale" (the result at scale c),
    "masked" (refused, or the mask honoured) or "any" (an error or a checked result).
    """
    idx = (0,) * base.ndim
    kinds = {f"scale {c}": (lambda c=float(c): base * c, "scale") for c in SCALES}
    kinds.update(
        {
            "NaN entry": (lambda: _with(base, idx, np.nan), "any" if nan_ok else "error"),
            "inf entry": (lambda: _with(base, idx, np.inf), "error"),
            "-inf entry": (lambda: _with(base, idx, -np.inf), "error"),
            "negative entry": (lambda: _with(base, idx, -0.5), "any" if negative_ok else "error"),
            "empty 0-size": (lambda: np.zeros((0,) * base.ndim), "any" if nan_ok else "error"),
            "all zero": (lambda: np.zeros_like(base), "any"),
            "wrong ndim +1": (lambda: base[..., None], "error"),
            "wrong ndim 0-D": (lambda: np.float64(base.flat[0]), "error"),
            "complex": (lambda: base + 1j, "error"),
            "complex, zero imaginary": (lambda: base.astype(complex), "any"),
            "object floats": (lambda: base.astype(object), "same"),
            "object with None": (lambda: _object_none(base), "error"),
            "bool": (lambda: base > np.median(base), "any"),
            "strings of numbers": (lambda: base.astype(str), "any"),
            "strings of words": (lambda: np.full(base.shape, "abc"), "error"),
            "masked, nothing masked": (
                lambda: np.ma.array(base, mask=np.zeros(base.shape, bool)),
                "same",
            ),
            "masked, entries masked": (lambda: np.ma.array(base, mask=_mask(base)), "masked"),
            "python list": (lambda: base.tolist(), "same"),
            "read-only": (lambda: _read_only(base), "same"),
            "float32": (lambda: base.astype(np.float32), "any"),
            "int": (lambda: np.round(base * 10).astype(int), "any"),
            "None": (lambda: None, "error"),
            "a string": (lambda: "V.npy", "error"),
        }
    )
    if base.ndim == 2:
        kinds.update(
            {
                "no rows": (lambda: base[:0], "error"),
                "no columns": (lambda: base[:, :0], "error"),
                "all-zero row": (lambda: _with(base, (1, slice(None)), 0.0), "any"),
                "all-zero column": (lambda: _with(base, (slice(None), 1), 0.0), "any"),
                "wrong ndim 1-D": (lambda: base.ravel(), "error"),
                "Fortran order": (lambda: np.asfortranarray(base), "same"),
            }
        )
    return kinds


def _object_none(base):
    a = base.astype(object)
    a.flat[0] = None
    return a


def _mask(base):
    return V_MASK if base.shape == V.shape else (np.arange(base.size).reshape(base.shape) % 5 == 1)


def _read_only(base):
    a = base.copy()
    a.flags.writeable = False
    return a


# --- targets ------------------------------------------------------------------------


class Target:
    """One public call with one array argument ``arg`` varied over :func:`array_kinds`.

    ``call(x)`` runs it on ``x``; ``check(out, x)`` lists what is wrong with a result;
    ``key(out)`` is the part compared across scales/conversions (scale-free form).
    """

    def __init__(
        self, name, arg, base, call, check, key, negative_ok=False, scale_key=None, nan_ok=False
    ):
        self.name, self.arg, self.base, self.call = name, arg, base, call
        self.check, self.key, self.negative_ok, self.nan_ok = check, key, negative_ok, nan_ok
        self.scale_key = scale_key or key


def _nan_documented(x):
    """An input with an all-zero vector, or summarize_scores' NaN or empty values."""
    if x is None or isinstance(x, str):
        return False
    a = np.asarray(x.data if np.ma.isMaskedArray(x) else x)
    if a.dtype.kind not in "biuf" or a.size == 0 or a.ndim == 0:
        return a.size == 0
    a = a.astype(float)
    if np.any(np.isnan(a)):
        return True
    return bool(a.ndim == 2 and (np.any(~a.any(axis=0)) or np.any(~a.any(axis=1))) or not a.any())


def _finite(name, a):
    a = np.asarray(a, dtype=float)
    return [] if np.all(np.isfinite(a)) else [f"{name} has NaN/inf"]


def _nonneg(name, a):
    return [] if np.all(np.asarray(a) >= 0) else [f"{name} has negative entries"]


def check_result(res, sw=None, sh=None):
    import nmfsc

    if not isinstance(res, nmfsc.NMFResult):
        return [f"returned {type(res).__name__}, not NMFResult"]
    bad = _finite("W", res.W) + _finite("H", res.H) + _nonneg("W", res.W) + _nonneg("H", res.H)
    bad += _finite("objective", res.objective)
    if not np.isfinite(res.relative_error):
        bad.append(f"relative_error={res.relative_error}")
    for factor, axis, s in ((res.W, 0, sw), (res.H, 1, sh)):
        if s is not None and not bad:
            got = nmfsc.sparseness(factor, axis=axis)
            if np.nanmax(np.abs(got - s)) > 1e-3:
                bad.append(f"sparseness {np.round(got, 4)} != {s}")
    return bad


def _scale_free(a):
    a = np.asarray(a, dtype=float)
    top = np.max(np.abs(a)) if a.size else 0.0
    return a / top if top > 0 and np.isfinite(top) else a


def solver_targets():
    import nmfsc

    configs = {
        "nmf_sc": (nmfsc.nmf_sc, {}),
        "nmf_sc sparseness_w=0.6": (nmfsc.nmf_sc, {"sparseness_w": 0.6}),
        "nmf_sc sparseness_h=0.6": (nmfsc.nmf_sc, {"sparseness_h": 0.6}),
        "nmf_euclidean": (nmfsc.nmf_euclidean, {}),
        "nmf_divergence": (nmfsc.nmf_divergence, {}),
        "local_nmf": (nmfsc.local_nmf, {}),
        "sparse_nmf": (nmfsc.sparse_nmf, {}),
    }
    for name, (fn, kw) in configs.items():
        yield Target(
            name,
            "V",
            V,
            lambda x, fn=fn, kw=kw: fn(x, 3, **FIT, **kw),
            lambda out, x, kw=kw: check_result(out, kw.get("sparseness_w"), kw.get("sparseness_h")),
            lambda out: np.concatenate([[out.relative_error], out.H.ravel()]),
        )


def estimator_targets():
    from nmfsc import SparseNMF

    X = V.T  # scikit-learn's orientation: samples as rows

    def fitted():
        return SparseNMF(3, sparseness_components=0.6, **FIT).fit(X)

    def codes_check(out, x):
        return _finite("output", out) + _nonneg("output", out)

    def fit_check(model, x):
        bad = _finite("components_", model.components_) + _nonneg("components_", model.components_)
        return bad + _finite("reconstruction_err_", model.reconstruction_err_)

    yield Target(
        "SparseNMF.fit",
        "X",
        X,
        lambda x: SparseNMF(3, **FIT).fit(x),
        fit_check,
        lambda m: _scale_free(m.components_),
    )
    yield Target(
        "SparseNMF.fit_transform",
        "X",
        X,
        lambda x: SparseNMF(3, sparseness_coefficients=0.6, **FIT).fit_transform(x),
        codes_check,
        _scale_free,
    )
    yield Target(
        "SparseNMF.transform", "X", X, lambda x: fitted().transform(x), codes_check, _scale_free
    )
    yield Target(
        "SparseNMF.inverse_transform",
        "X",
        V[:3].T,
        lambda x: fitted().inverse_transform(x),
        lambda out, x: _finite("output", out),
        _scale_free,
        negative_ok=True,  # a linear map: negative codes have a meaning
    )


def compare_target():
    import nmfsc

    def call(x):
        return nmfsc.compare(x, 3, sparseness_w=0.6, seeds=(0,), max_iter=10, progress=False)

    def check(out, x):
        if not isinstance(out, nmfsc.Comparison):
            return [f"returned {type(out).__name__}"]
        return sum(
            (
                _finite(f"{r.get('method')} relative_error", r.get("relative_error", np.nan))
                for r in out.rows
            ),
            [],
        )

    def key(out):
        return np.array([r.get("relative_error", np.nan) for r in out.rows], dtype=float)

    yield Target("compare", "V", V, call, check, key)


def projection_targets():
    import nmfsc

    x = np.abs(RNG.standard_normal(16))
    l2 = 1.0
    l1 = 2.0

    def check_vec(out, x_in, axis=None):
        out = np.asarray(out, dtype=float)
        bad = _finite("output", out) + _nonneg("output", out)
        if not bad and out.size:
            n1, n2 = np.abs(out).sum(axis=0), np.sqrt((out**2).sum(axis=0))
            if np.max(np.abs(n1 - l1)) > 1e-6 or np.max(np.abs(n2 - l2)) > 1e-6:
                bad.append(f"norms L1={n1}, L2={n2}, wanted {l1}, {l2}")
        return bad

    def proj_key(out):
        return np.asarray(out, dtype=float)

    # The projection of c*x onto fixed norms is not c times anything: only constraints.
    yield Target(
        "project",
        "x",
        x,
        lambda v: nmfsc.project(v, l1, l2),
        check_vec,
        proj_key,
        negative_ok=True,
        scale_key=lambda out: np.zeros(1),
    )
    yield Target(
        "project_batch",
        "X",
        V,
        lambda v: nmfsc.project_batch(v, l1 * 1.2, l2),
        lambda out, v: _batch_check(out, l1 * 1.2, l2),
        proj_key,
        negative_ok=True,
        scale_key=lambda out: np.zeros(1),
    )


def _batch_check(out, l1, l2):
    out = np.asarray(out, dtype=float)
    bad = _finite("output", out) + _nonneg("output", out)
    if not bad and out.size:
        n1, n2 = out.sum(axis=0), np.sqrt((out**2).sum(axis=0))
        if np.max(np.abs(n1 - l1)) > 1e-6 or np.max(np.abs(n2 - l2)) > 1e-6:
            bad.append(f"column norms off: L1 {n1.min()}..{n1.max()}, L2 {n2.min()}..{n2.max()}")
    return bad


def score_targets():
    import nmfsc
    from nmfsc import datasets

    W = V[:, :3].copy()
    parts = V[:, 3:6].copy()
    patches = np.abs(RNG.standard_normal((288, 4)))

    def number_check(out, x):
        """Finite output; NaN only where documented: for an all-zero vector (scores,
        summaries count it in n_undefined) or for NaN/no values (summarize_scores)."""
        vals = list(out.values()) if isinstance(out, dict) else [out]
        flat = []
        for v in vals:
            flat += list(v.values()) if isinstance(v, dict) else [v]
        flat = np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in flat])
        if np.any(np.isinf(flat)):
            return ["output has inf"]
        if np.any(np.isnan(flat)) and not _nan_documented(x):
            return ["output has NaN"]
        return []

    def key(out):
        if isinstance(out, dict):
            out = [v for d in out.values() for v in (d.values() if isinstance(d, dict) else [d])]
        return np.asarray(out, dtype=float).ravel()

    yield Target(
        "sparseness",
        "x",
        V[:, 0].copy(),
        lambda v: nmfsc.sparseness(v),
        number_check,
        key,
        negative_ok=True,
    )
    yield Target(
        "sparseness axis=0",
        "x",
        V,
        lambda v: nmfsc.sparseness(v, axis=0),
        number_check,
        key,
        negative_ok=True,
    )
    yield Target(
        "sparseness_summary(W)",
        "W",
        W,
        lambda w: nmfsc.sparseness_summary(w, V[:3]),
        number_check,
        key,
        negative_ok=True,
    )
    yield Target(
        "sparseness_summary(H)",
        "H",
        V[:3].copy(),
        lambda h: nmfsc.sparseness_summary(W, h),
        number_check,
        key,
        negative_ok=True,
    )
    yield Target(
        "locality", "W", W, lambda w: nmfsc.locality(w, (3, 4)), number_check, key, negative_ok=True
    )
    yield Target(
        "orientation",
        "W",
        patches,
        lambda w: nmfsc.orientation(w),
        number_check,
        key,
        negative_ok=True,
    )
    yield Target(
        "part_recovery",
        "W",
        W,
        lambda w: datasets.part_recovery(w, parts),
        number_check,
        key,
        negative_ok=True,
    )
    yield Target(
        "summarize_scores",
        "values",
        V[0].copy(),
        lambda v: nmfsc.summarize_scores(v),
        number_check,
        key,
        negative_ok=True,
        nan_ok=True,
        scale_key=lambda out: _scale_free([out[k] for k in ("mean", "median", "min", "max")]),
    )


def file_targets(tmp):
    import nmfsc

    def read(x):
        path = Path(tempfile.mkdtemp(dir=tmp)) / "V.npy"
        np.save(path, np.asarray(x) if not np.ma.isMaskedArray(x) else x.data)
        return nmfsc.read_matrix(path)

    def read_check(out, x):
        Vr = out[0]
        bad = _finite("V", Vr) + _nonneg("V", Vr)
        return bad + ([] if np.any(Vr) else ["all-zero V accepted (documented as refused)"])

    yield Target(
        "read_matrix .npy",
        "path",
        V,
        read,
        read_check,
        lambda out: out[0],
        scale_key=lambda out: _scale_free(out[0]),
    )

    def resume(x):
        path = Path(tempfile.mkdtemp(dir=tmp)) / "run.ckpt"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nmfsc.nmf_sc(
                V,
                3,
                sparseness_w=0.6,
                max_iter=20,
                random_state=0,
                checkpoint=path,
                checkpoint_every=5,
            )
        return nmfsc.nmf_sc(
            x,
            3,
            sparseness_w=0.6,
            max_iter=40,
            random_state=0,
            checkpoint=path,
            checkpoint_every=5,
            resume=True,
        )

    yield Target(
        "nmf_sc resume from checkpoint",
        "V",
        V,
        resume,
        lambda out, x: check_result(out, 0.6),
        lambda out: np.concatenate([[out.relative_error], out.H.ravel()]),
    )


# --- scalar parameters and other arguments ------------------------------------------

INT_BAD = {"0": 0, "-1": -1, "2.5": 2.5, "True": True, "'3'": "3", "None": None, "NaN": np.nan}
S_BAD = {"-0.1": -0.1, "1.1": 1.1, "NaN": np.nan, "inf": np.inf, "'0.5'": "0.5", "True": True}
TOL_BAD = {"-1": -1.0, "NaN": np.nan, "inf": np.inf, "'1e-4'": "1e-4", "None": None}
TIME_BAD = {"-1": -1.0, "0": 0.0, "NaN": np.nan, "'1'": "1", "-inf": -np.inf}
SEED_BAD = {"'x'": "x", "-1": -1, "2**70": 2**70, "2.5": 2.5, "[1, 'a']": [1, "a"]}
SOLVER_PARAMS = {
    "n_components": {**INT_BAD, "100 (> min(V.shape))": 100},
    "max_iter": {k: v for k, v in INT_BAD.items()},
    "tol": TOL_BAD,
    "window": {k: v for k, v in INT_BAD.items() if k != "None"},
    "max_time": TIME_BAD,
    "random_state": SEED_BAD,
    "init": {"'bogus'": "bogus", "None": None, "3": 3},
    "checkpoint_every": {"0": 0, "-1": -1, "2.5": 2.5},
    "checkpoint_seconds": {"-1": -1.0, "NaN": np.nan},
    "callback": {"'not callable'": "not callable"},
    "checkpoint": {"123": 123, "missing folder": "/nonexistent-folder/run.ckpt"},
}
ANY = "any"
#: Values above that are documented as valid: their results are checked, not refused.
VALID_EDGES = {
    "n_components=100 (> min(V.shape))",
    "max_iter=0",
    "random_state=2**70",
    "p=None",
    "patch_size=100",
}


def _starts():
    W0 = np.abs(RNG.standard_normal((12, 3))) + 0.1
    H0 = np.abs(RNG.standard_normal((3, 15))) + 0.1
    bad = {
        "W_init zeros": ({"W_init": np.zeros((12, 3)), "H_init": H0}, ANY),
        "H_init zeros": ({"W_init": W0, "H_init": np.zeros((3, 15))}, ANY),
        "W_init all-zero column": ({"W_init": _with(W0, (slice(None), 1), 0), "H_init": H0}, ANY),
        "H_init all-zero row": ({"W_init": W0, "H_init": _with(H0, (1, slice(None)), 0)}, ANY),
        "W_init wrong shape": ({"W_init": np.ones((12, 4)), "H_init": H0}, "error"),
        "H_init wrong shape": ({"W_init": W0, "H_init": np.ones((3, 14))}, "error"),
        "W_init transposed": ({"W_init": W0.T.copy(), "H_init": H0}, "error"),
        "W_init NaN": ({"W_init": _with(W0, (0, 0), np.nan), "H_init": H0}, "error"),
        "H_init inf": ({"W_init": W0, "H_init": _with(H0, (0, 0), np.inf)}, "error"),
        "W_init negative": ({"W_init": _with(W0, (0, 0), -1), "H_init": H0}, "error"),
        "W_init complex": ({"W_init": W0 + 1j, "H_init": H0}, "error"),
        "W_init list": ({"W_init": W0.tolist(), "H_init": H0}, ANY),
        "W_init masked": ({"W_init": np.ma.array(W0, mask=W0 > 1), "H_init": H0}, "masked"),
        "W_init only": ({"W_init": W0}, ANY),
        "init='custom' without starts": ({"init": "custom"}, "error"),
        "W_init 1e-300": ({"W_init": W0 * 1e-300, "H_init": H0}, ANY),
        "W_init 1e300": ({"W_init": W0 * 1e300, "H_init": H0}, ANY),
    }
    return bad


def solver_param_cases():
    import nmfsc

    fns = {
        "nmf_sc": nmfsc.nmf_sc,
        "nmf_euclidean": nmfsc.nmf_euclidean,
        "nmf_divergence": nmfsc.nmf_divergence,
        "local_nmf": nmfsc.local_nmf,
        "sparse_nmf": nmfsc.sparse_nmf,
    }
    extra = {
        "nmf_sc": {"sparseness_w": S_BAD, "sparseness_h": S_BAD, "solver": {"'bogus'": "bogus"}},
        "local_nmf": {
            "alpha": {"-1": -1.0, "NaN": np.nan, "'1'": "1"},
            "beta": {"-1": -1.0, "NaN": np.nan, "'1'": "1"},
        },
        "sparse_nmf": {"alpha": {"-1": -1.0, "NaN": np.nan, "'1'": "1", "inf": np.inf}},
    }
    for name, fn in fns.items():
        base = {"sparseness_w": 0.6} if name == "nmf_sc" else {}
        params = {**SOLVER_PARAMS, **extra.get(name, {})}
        for param, values in params.items():
            for label, value in values.items():
                kw = {**FIT, **base, param: value}
                n = kw.pop("n_components", 3)
                expect = ANY if f"{param}={label}" in VALID_EDGES else "error"
                yield (
                    name,
                    param,
                    f"{param}={label}",
                    lambda fn=fn, n=n, kw=kw: fn(V, n, **kw),
                    expect,
                    lambda out, kw=kw: check_result(
                        out, kw.get("sparseness_w"), kw.get("sparseness_h")
                    ),
                )
        for label, (kw, expect) in _starts().items():
            arg = "H_init" if label.startswith("H_init") else "W_init"
            yield (
                name,
                arg,
                label,
                lambda fn=fn, kw=kw, base=base: fn(V, 3, **FIT, **base, **kw),
                expect,
                lambda out, base=base: check_start(out, base.get("sparseness_w")),
            )


def check_start(res, sw):
    """A result from a given start: checked, and no component stuck at zero.

    The data are positive, so a component (a column of W or a row of H) left all zero
    is a start the updates cannot leave (multiplicative updates keep zeros), not an
    answer.
    """
    bad = check_result(res, sw)
    if not bad:
        for name, F, axis in (("W", res.W, 0), ("H", res.H, 1)):
            dead = np.flatnonzero(~F.any(axis=axis))
            if not F.any():
                bad.append(f"{name} is all zero")
            elif dead.size:
                bad.append(f"component(s) {dead.tolist()} of {name} all zero")
    return bad


def estimator_param_cases():
    from nmfsc import SparseNMF

    params = {
        # n_components=None is valid for the estimator: all features, as scikit-learn's NMF
        "n_components": {k: v for k, v in INT_BAD.items() if k != "None"},
        "sparseness_components": S_BAD,
        "sparseness_coefficients": S_BAD,
        "max_iter": INT_BAD,
        "tol": TOL_BAD,
        "window": INT_BAD,
        "max_time": TIME_BAD,
        "random_state": SEED_BAD,
        "init": {"'bogus'": "bogus", "3": 3},
    }
    for param, values in params.items():
        for label, value in values.items():
            kw = {"n_components": 3, **FIT, param: value}
            expect = ANY if f"{param}={label}" in VALID_EDGES else "error"
            yield (
                "SparseNMF.fit",
                param,
                f"{param}={label}",
                lambda kw=kw: SparseNMF(**kw).fit(V.T),
                expect,
                lambda m: _finite("components_", m.components_),
            )
    fitted = {"n_components": 3, **FIT}
    for label, x in {
        "transform X with 14 features": np.ones((4, 14)),
        "transform before fit": None,
    }.items():

        def call(x=x):
            m = SparseNMF(**fitted)
            return m.transform(np.ones((4, 12))) if x is None else m.fit(V.T).transform(x)

        yield ("SparseNMF.transform", "X", label, call, "error", lambda out: [])
    yield (
        "SparseNMF.inverse_transform",
        "X",
        "codes with 4 columns",
        lambda: SparseNMF(**fitted).fit(V.T).inverse_transform(np.ones((2, 4))),
        "error",
        lambda out: [],
    )


def compare_param_cases():
    import nmfsc

    good = {"sparseness_w": 0.6, "seeds": (0,), "max_iter": 10, "progress": False}
    params = {
        "n_components": INT_BAD,
        "sparseness_w": S_BAD,
        "sparseness_h": S_BAD,
        "seeds": {"()": (), "(-1,)": (-1,), "'x'": "x", "(2.5,)": (2.5,)},
        "max_iter": INT_BAD,
        "tol": TOL_BAD,
        "max_time": TIME_BAD,
        "methods": {"['bogus']": ["bogus"], "[]": [], "'nmf_sc'": "nmf_sc", "[1]": [1]},
        "image_shape": {"(5, 5)": (5, 5), "(0, 0)": (0, 0), "'34'": "34", "(3.5, 4)": (3.5, 4)},
        "parts": {"wrong shape": np.ones((5, 2)), "NaN": _with(V[:, :3], (0, 0), np.nan)},
        "sparse_nmf_alpha": {"-1": -1.0, "NaN": np.nan, "'1'": "1"},
        "name": {"123": 123},
    }
    for param, values in params.items():
        for label, value in values.items():
            kw = {**good, param: value}
            n = kw.pop("n_components", 3)
            expect = ANY if f"{param}={label}" in VALID_EDGES else "error"
            expect = ANY if f"{param}={label}" == "methods='nmf_sc'" else expect  # documented
            yield (
                "compare",
                param,
                f"{param}={label}",
                lambda n=n, kw=kw: nmfsc.compare(V, n, **kw),
                expect,
                lambda out: [],
            )


def function_param_cases():
    import nmfsc

    x = np.abs(RNG.standard_normal(16))
    cases = {
        ("project", "l1"): (
            lambda v: nmfsc.project(x, v, 1.0),
            {
                "NaN": np.nan,
                "-1": -1.0,
                "inf": np.inf,
                "'2'": "2",
                "> sqrt(n)*l2": 5.0,
                "< l2": 0.5,
            },
        ),
        ("project", "l2"): (
            lambda v: nmfsc.project(x, 2.0, v),
            {"0": 0.0, "-1": -1.0, "NaN": np.nan, "'1'": "1"},
        ),
        ("project", "method"): (
            lambda v: nmfsc.project(x, 2.0, 1.0, method=v),
            {"'bogus'": "bogus"},
        ),
        ("project", "nonneg"): (lambda v: nmfsc.project(x, 2.0, 1.0, nonneg=v), {"'yes'": "yes"}),
        ("project_batch", "axis"): (
            lambda v: nmfsc.project_batch(V, 2.0, 1.0, axis=v),
            {"2": 2, "-3": -3, "1.5": 1.5, "'0'": "0"},
        ),
        ("project_batch", "l1"): (
            lambda v: nmfsc.project_batch(V, v, 1.0),
            {"NaN": np.nan, "-1": -1.0, "wrong length": np.ones(3)},
        ),
        ("sparseness", "axis"): (
            lambda v: nmfsc.sparseness(V, axis=v),
            {"2": 2, "1.5": 1.5, "'0'": "0"},
        ),
        ("l1_for_sparseness", "sparseness"): (lambda v: nmfsc.l1_for_sparseness(v, 16), S_BAD),
        ("l1_for_sparseness", "n"): (lambda v: nmfsc.l1_for_sparseness(0.5, v), INT_BAD),
        ("l1_for_sparseness", "l2"): (
            lambda v: nmfsc.l1_for_sparseness(0.5, 16, v),
            {"0": 0.0, "-1": -1.0, "NaN": np.nan, "1e308": 1e308, "inf": np.inf, "'1'": "1"},
        ),
        ("sparseness_for_l1", "l1"): (
            lambda v: nmfsc.sparseness_for_l1(v, 1, 4),
            {"5": 5.0, "0.5": 0.5, "NaN": np.nan, "'2'": "2", "-1": -1.0},
        ),
        ("sparseness_for_l1", "l2"): (
            lambda v: nmfsc.sparseness_for_l1(1.5, v, 4),
            {"0": 0.0, "-1": -1.0, "NaN": np.nan, "inf": np.inf},
        ),
        ("sparseness_for_l1", "n"): (lambda v: nmfsc.sparseness_for_l1(1.5, 1, v), INT_BAD),
        ("locality", "image_shape"): (
            lambda v: nmfsc.locality(V[:, :3], v),
            {
                "(5, 5)": (5, 5),
                "(0, 0)": (0, 0),
                "(-3, -4)": (-3, -4),
                "'34'": "34",
                "(3.5, 4)": (3.5, 4),
                "None": None,
            },
        ),
        ("orientation", "patch_shape"): (
            lambda v: nmfsc.orientation(np.ones((288, 2)), v),
            {"(5, 5)": (5, 5), "(0, 0)": (0, 0), "'12'": "12"},
        ),
        ("orientation", "on_off"): (
            lambda v: nmfsc.orientation(np.ones((144, 2)), on_off=v),
            {"'x'": "x", "True with 144 rows": True},
        ),
        ("uniform_spread", "image_shape"): (
            lambda v: _scores().uniform_spread(v),
            {"(0, 0)": (0, 0), "(-1, 2)": (-1, 2), "'x'": "x", "(2.5, 2)": (2.5, 2)},
        ),
        ("part_recovery", "true_parts"): (
            lambda v: _datasets().part_recovery(V[:, :3], v),
            {
                "wrong rows": np.ones((5, 3)),
                "NaN": _with(V[:, :3], (0, 0), np.nan),
                "all zero": np.zeros((12, 3)),
            },
        ),
    }
    for (fn, param), (call, values) in cases.items():
        for label, value in values.items():
            yield (
                fn,
                param,
                f"{param}={label}",
                lambda call=call, value=value: call(value),
                "error",
                lambda out: [],
            )


def _scores():
    from nmfsc import scores

    return scores


def _datasets():
    from nmfsc import datasets

    return datasets


# --- data set helpers and files -------------------------------------------------------

_GATE = {}


def data_gate(tmp):
    """A gate on a temporary copy of $NMFSC_DATA_DIR (nothing is downloaded), or None."""
    if "gate" not in _GATE:
        from nmfsc.datasets._fetchers import make_gate

        source = os.environ.get("NMFSC_DATA_DIR")
        if not source or not Path(source).is_dir():
            _GATE["gate"] = None
        else:
            copy = Path(tmp) / "data"
            if not copy.exists():
                shutil.copytree(source, copy, symlinks=True)
            _GATE["gate"] = make_gate(copy)
    return _GATE["gate"]


def dataset_cases(tmp):
    from nmfsc import datasets

    text = Path(tmp) / "not-a-mat.mat"
    missing = Path(tmp) / "missing.mat"
    folder = Path(tmp) / "a-folder"

    def nat(**kw):
        text.write_text("this is not a MATLAB file\n")
        folder.mkdir(exist_ok=True)
        return datasets.load_natural(**{"n_patches": 20, "gate": data_gate(tmp), **kw})

    def nat_check(out, size=12):
        want = (2 * size**2, 20)
        bad = _finite("V", out) + _nonneg("V", out)
        return bad + ([] if out.shape == want else [f"shape {out.shape}, wanted {want}"])

    def shape_check(out):
        arrays = out if isinstance(out, tuple) else (out,)
        return sum((_finite("output", a) for a in arrays), []) + (
            [] if all(np.asarray(a).size for a in arrays) else ["empty output"]
        )

    bars = {
        "n_samples": {**INT_BAD, "0": 0},
        "size": INT_BAD,
        "p": {**S_BAD, "None": None},
        "random_state": SEED_BAD,
    }
    for param, values in bars.items():
        for label, value in values.items():
            expect = ANY if f"{param}={label}" in VALID_EDGES else "error"
            yield (
                "bars",
                param,
                f"{param}={label}",
                lambda kw={param: value}: datasets.bars(**kw),
                expect,
                shape_check,
            )
    natural = {
        "n_patches": {**INT_BAD, "'20'": "20"},
        "patch_size": {**INT_BAD, "100": 100},
        "random_state": SEED_BAD,
        "path": {"a text file": text, "a missing file": missing, "123": 123, "a folder": folder},
        "gate": {"'a-folder'": "a-folder", "123": 123},
    }
    for param, values in natural.items():
        for label, value in values.items():
            expect = ANY if f"{param}={label}" in VALID_EDGES else "error"
            size = value if param == "patch_size" and expect == ANY else 12
            yield (
                "load_natural",
                param,
                f"{param}={label}",
                lambda kw={param: value}: nat(**kw),
                expect,
                lambda out, size=size: nat_check(out, size),
            )
    for fn in (
        "load_cbcl",
        "cbcl_images",
        "load_orl",
        "orl_images",
        "natural_images",
        "download_all",
    ):
        for label, value in {"'a-folder'": "a-folder", "123": 123, "a Path": Path(tmp)}.items():
            yield (
                fn,
                "gate",
                f"gate={label}",
                lambda fn=fn, value=value: getattr(datasets, fn)(gate=value),
                "error",
                shape_check,
            )
    for label, value in {"'yes'": "yes", "2": 2, "None": None}.items():
        yield (
            "orl_images",
            "halved",
            f"halved={label}",
            lambda value=value: datasets.orl_images(value, gate=data_gate(tmp)),
            "error",
            shape_check,
        )
    valid = {
        "load_natural": lambda: nat(),
        "load_cbcl": lambda: datasets.load_cbcl(gate=data_gate(tmp)),
        "load_orl": lambda: datasets.load_orl(gate=data_gate(tmp)),
        "swimmer": datasets.swimmer,
        "bars": lambda: datasets.bars(50, random_state=0),
    }
    for fn, call in valid.items():
        yield (
            fn,
            "-",
            "valid call (control)",
            call,
            ANY,
            nat_check if fn == "load_natural" else shape_check,
        )


def read_matrix_cases(tmp):
    import nmfsc

    files = {
        "csv with a word": ("V.csv", "1,2\nx,3\n"),
        "ragged csv": ("V.csv", "1,2,3\n4,5\n"),
        "empty csv": ("V.csv", ""),
        "header only csv": ("V.csv", "a,b,c\n"),
        "csv with nan": ("V.csv", "1,2\nnan,3\n"),
        "csv with inf": ("V.csv", "1,2\ninf,3\n"),
        "csv negative": ("V.csv", "1,2\n-1,3\n"),
        "csv all zero": ("V.csv", "0,0\n0,0\n"),
        "text file named .npy": ("V.npy", "not numpy\n"),
        "text file named .npz": ("V.npz", "not numpy\n"),
        "garbage .mtx": ("V.mtx", "%%MatrixMarket garbage\n1 2\n"),
        "unsupported suffix .txt": ("V.txt", "1,2\n3,4\n"),
    }
    for label, (name, content) in files.items():

        def call(name=name, content=content):
            path = Path(tempfile.mkdtemp(dir=tmp)) / name
            path.write_text(content)
            return nmfsc.read_matrix(path)

        yield ("read_matrix", "path", label, call, "error", lambda out: [])

    def npz(key=None, arrays=None):
        path = Path(tempfile.mkdtemp(dir=tmp)) / "V.npz"
        np.savez(path, **(arrays or {"a": V, "b": V}))
        return nmfsc.read_matrix(path, key=key)

    def npy(**kw):
        path = Path(tempfile.mkdtemp(dir=tmp)) / "V.npy"
        np.save(path, V)
        return nmfsc.read_matrix(path, **kw)

    others = {
        ("path", "missing file"): lambda: nmfsc.read_matrix(Path(tmp) / "nope.npy"),
        ("path", "empty folder"): lambda: nmfsc.read_matrix(tempfile.mkdtemp(dir=tmp)),
        ("path", "123"): lambda: nmfsc.read_matrix(123),
        ("path", "None"): lambda: nmfsc.read_matrix(None),
        ("key", "key on .npy"): lambda: npy(key="a"),
        ("key", ".npz with two arrays, no key"): lambda: npz(),
        ("key", "unknown key"): lambda: npz(key="zz"),
        ("key", "key=3"): lambda: npz(key=3),
        ("samples_as_rows", "'yes'"): lambda: npy(samples_as_rows="yes"),
        ("path", "object array .npy"): lambda: _save_read(tmp, np.array([[1, None]], object)),
    }
    for (param, label), call in others.items():
        yield ("read_matrix", param, label, call, "error", lambda out: [])


def _save_read(tmp, a):
    import nmfsc

    path = Path(tempfile.mkdtemp(dir=tmp)) / "V.npy"
    np.save(path, a, allow_pickle=True)
    return nmfsc.read_matrix(path)


# --- the cases ------------------------------------------------------------------------


class Case:
    """One call: ``target(arg=label)``, its thunk and how to judge a returned result."""

    def __init__(self, target, arg, label, thunk, expect, judge, inputs=()):
        self.target, self.arg, self.label, self.thunk = target, arg, label, thunk
        self.expect, self.judge, self.inputs = expect, judge, inputs

    def describe(self):
        return {"target": self.target, "arg": self.arg, "input": self.label, "expect": self.expect}


def array_cases(targets):
    """The product of the array targets and :func:`array_kinds`."""
    for t in targets:
        kinds = {"valid (control)": (lambda t=t: t.base.copy(), ANY)}
        kinds.update(array_kinds(t.base, t.negative_ok, t.nan_ok))
        if t.name.startswith("read_matrix"):  # np.save itself drops a mask: not nmfsc's doing
            kinds = {k: v for k, v in kinds.items() if not k.startswith("masked")}
        for label, (make, expect) in kinds.items():
            yield Case(t.name, t.arg, label, make, expect, t)


def all_cases(tmp):
    targets = [
        *solver_targets(),
        *estimator_targets(),
        *compare_target(),
        *projection_targets(),
        *score_targets(),
        *file_targets(tmp),
    ]
    cases = list(array_cases(targets))
    for source in (
        solver_param_cases(),
        estimator_param_cases(),
        compare_param_cases(),
        function_param_cases(),
        dataset_cases(tmp),
        read_matrix_cases(tmp),
    ):
        for target, arg, label, thunk, expect, check in source:
            if expect == "error" and is_lenient(label):
                expect = "lenient"
            cases.append(Case(target, arg, label, thunk, expect, check))
    return cases


#: Wrong-type values with one obvious meaning (text flags, a name that is not text).
LENIENT_FLAGS = {"nonneg='yes'", "'yes'", "on_off='x'", "halved='yes'", "name=123"}


def is_lenient(label):
    """A wrong-type value that converts unambiguously: numeric text, or a truthy flag.

    Accepting one is lenient, not wrong: such a case is judged by its result.
    """
    value = label.split("=", 1)[-1]
    return label in LENIENT_FLAGS or bool(re.fullmatch(r"'[-+0-9.e]+'", value))


# --- running and judging one case -----------------------------------------------------


def error_verdict(exc, tb, arg):
    """Classify an exception by the rule in RULES['clear error']."""
    import nmfsc
    from nmfsc.datasets import DataError

    own = (nmfsc.CheckpointMismatchError, nmfsc.DataFileError, DataError)
    accepted = isinstance(exc, (ValueError, TypeError, FloatingPointError, *own))
    message = " ".join(str(exc).split())
    frames = traceback.extract_tb(tb)
    package = str(Path(nmfsc.__file__).resolve().parent)
    last = frames[-1] if frames else None
    where = str(Path(last.filename).resolve()) if last else ""
    raised_by_nmfsc = bool(
        last
        and (where.startswith(package) or where.endswith(SKLEARN_VALIDATION))
        and (last.line or "").lstrip().startswith("raise")
    )
    names_arg = arg not in ("-", "") and re.search(rf"(?<![\w]){re.escape(arg)}(?![\w])", message)
    lowered = message.lower()
    names_problem = raised_by_nmfsc and any(w in lowered for w in PROBLEM_WORDS)
    clear = accepted and bool(names_arg or names_problem)
    origin = f"{Path(last.filename).name}:{last.lineno}" if last else "?"
    why = (
        "names the argument"
        if names_arg
        else "names the problem"
        if names_problem
        else "names neither argument nor problem"
        if accepted
        else "type not accepted"
    )
    return ("clear error" if clear else "unclear error"), {
        "exception": type(exc).__name__,
        "message": message[:400],
        "origin": origin,
        "why": why,
    }


def close(a, b, rtol, atol=None):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    atol = rtol * 1e-3 if atol is None else atol
    return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def subnormal_atol(c, base):
    """What an output in the data's units can hold at scale c, relative to its largest
    entry: 4 units of the smallest subnormal (4.9e-324) where c * max|base| is subnormal
    (about 8e-4 for c = 1e-320), else 1e-9."""
    top = c * float(np.max(np.abs(base)))
    return max(1e-9, 4 * 5e-324 / top) if top < np.finfo(float).tiny else 1e-9


class Judge:
    """Runs cases in this process and judges them; keeps each target's reference result."""

    def __init__(self, cases):
        self.cases, self.refs = cases, {}

    def reference(self, t, c=None):
        """The target's result on its base data (also what ignoring a mask gives); for
        a scale c, on (c * base) / c: the data as rounded at that scale (subnormals)."""
        key = (t.name, c)
        if key not in self.refs:
            x = t.base.copy() if c is None else (t.base * c) / c
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = t.call(x)
                self.refs[key] = (t.key(out), t.scale_key(out))
            except Exception as exc:  # noqa: BLE001 - a reference that fails is reported
                self.refs[key] = exc
        return self.refs[key]

    def run(self, index):
        case = self.cases[index]
        start = time.perf_counter()
        try:
            verdict, detail = self._run(case)
        except Exception as exc:  # noqa: BLE001 - the judge must never stop the audit
            verdict, detail = "audit error", {"message": f"{type(exc).__name__}: {exc}"}
        return {
            "id": index,
            **case.describe(),
            "verdict": verdict,
            "seconds": round(time.perf_counter() - start, 3),
            **detail,
        }

    def _run(self, case):
        target = case.judge if isinstance(case.judge, Target) else None
        if target is not None:
            x = case.thunk()
            before = _snapshot(x)
            thunk = lambda: target.call(x)  # noqa: E731
        else:
            x, before, thunk = None, None, case.thunk
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = thunk()
            except Exception as exc:  # noqa: BLE001 - every exception is classified
                verdict, detail = error_verdict(exc, exc.__traceback__, case.arg)
                return verdict, {**detail, "warnings": _warning_names(caught)}
        problems = [] if before is None or _same_snapshot(before, x) else ["mutated its input"]
        problems += self._problems(case, target, out, x)
        detail = {
            "warnings": _warning_names(caught),
            "problems": problems,
            "lenient": case.expect == "lenient" and not problems,
        }
        return ("silent wrong" if problems else "correct"), detail

    def _problems(self, case, target, out, x):
        if case.expect == "error":
            found = target.check(out, x) if target else case.judge(out)
            return ["returned for an input that must be refused", *found]
        found = list(target.check(out, x) if target else case.judge(out))
        if target is None or found:
            return found
        if case.expect == "lenient":
            return []
        if case.expect in ("same", "scale", "masked"):
            c = float(case.label.split()[1]) if case.expect == "scale" else None
            ref = self.reference(target, c)
            if isinstance(ref, Exception):
                return [f"reference run failed: {type(ref).__name__}: {ref}"]
            if case.expect == "masked":
                if close(target.key(out), ref[0], 1e-12):
                    return ["mask dropped: same result as the unmasked data"]
            elif case.expect == "same" and not close(target.key(out), ref[0], 1e-6):
                return ["differs from the plain array's result"]
            elif case.expect == "scale":
                got = target.scale_key(out)
                if not close(got, ref[1], 1e-6, subnormal_atol(c, target.base)):
                    return [f"differs from the unscaled result: {_worst(got, ref[1])}"]
        return []


def _worst(got, ref):
    got, ref = np.ravel(np.asarray(got, float)), np.ravel(np.asarray(ref, float))
    if got.shape != ref.shape:
        return f"shape {got.shape} vs {ref.shape}"
    i = int(np.nanargmax(np.abs(got - ref) / (np.abs(ref) + 1e-300)))
    return f"element {i}: {got[i]:.9g} vs {ref[i]:.9g}"


def _snapshot(x):
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, list):
        return json.dumps(x, default=str)
    return None


def _same_snapshot(before, x):
    if isinstance(before, str):
        return before == json.dumps(x, default=str)
    if isinstance(before, np.ndarray) and before.dtype.kind in "fc":
        return np.array_equal(before, x, equal_nan=True) and (
            not np.ma.isMaskedArray(before) or np.array_equal(before.mask, x.mask)
        )
    return np.array_equal(before, x)


def _warning_names(caught):
    return sorted({w.category.__name__ for w in caught})


# --- the worker and the driver ----------------------------------------------------------


def worker(tmp):
    """Read case numbers on stdin, write one JSON record per line on stdout."""
    faulthandler.register(signal.SIGUSR1)  # the driver asks where a hung case is stuck
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not reach the pipe
    judge = Judge(all_cases(tmp))
    warm_up()
    out.write(json.dumps({"ready": len(judge.cases)}) + "\n")
    out.flush()
    for line in sys.stdin:
        record = judge.run(int(line))
        out.write(json.dumps(record, default=str) + "\n")
        out.flush()


def warm_up():
    """Compile (or load from numba's cache) every kernel before the clock starts."""
    import nmfsc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn, kw in [
            (nmfsc.nmf_sc, {"sparseness_w": 0.6, "sparseness_h": 0.6}),
            (nmfsc.nmf_euclidean, {}),
            (nmfsc.nmf_divergence, {}),
            (nmfsc.local_nmf, {}),
            (nmfsc.sparse_nmf, {}),
        ]:
            fn(V, 3, max_iter=3, random_state=0, **kw)
        nmfsc.project(V[:, 0], 2.0, 1.0)
        nmfsc.project(V[:, 0], 2.0, 1.0, method="hoyer")
        nmfsc.project_batch(V, 2.0, 1.0)
        nmfsc.SparseNMF(3, sparseness_components=0.5, max_iter=3).fit(V.T).transform(V.T)
        nmfsc.compare(V, 3, sparseness_w=0.6, seeds=(0,), max_iter=2, progress=False)


class Worker:
    def __init__(self, tmp, log):
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", "--tmp", str(tmp)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            bufsize=1,
        )
        ready = self.read(600)
        if not ready or "ready" not in ready:
            raise RuntimeError(f"the worker did not start: {ready!r}")

    def read(self, timeout):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {}

    def ask(self, index, timeout):
        self.proc.stdin.write(f"{index}\n")
        self.proc.stdin.flush()
        return self.read(timeout)

    def where(self, log):
        """The worker's Python stack, from faulthandler, as the last lines of the log."""
        log.flush()
        size = os.path.getsize(log.name)
        os.kill(self.proc.pid, signal.SIGUSR1)
        time.sleep(2)
        with open(log.name) as f:
            f.seek(size)
            lines = [line.strip() for line in f.read().splitlines() if "File" in line]
        return " <- ".join(lines[:6])

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def drive(cases, limit, tmp, log, only=None, stream=None):
    records, worker_ = [], None
    todo = [i for i, c in enumerate(cases) if only is None or re.search(only, _name(c))]
    started = time.perf_counter()
    for n, index in enumerate(todo):
        if worker_ is None:
            worker_ = Worker(tmp, log)
        record = worker_.ask(index, limit)
        if record is None or record == {}:
            crashed = record == {}
            stack = "" if crashed else worker_.where(log)
            worker_.stop()
            worker_ = None
            record = {
                "id": index,
                **cases[index].describe(),
                "verdict": "unclear error" if crashed else "hang",
                "seconds": limit,
                "message": "the worker process died" if crashed else f"over {limit} s",
                "stack": stack,
            }
        records.append(record)
        if stream is not None:
            stream.write(json.dumps(record, default=str) + "\n")
            stream.flush()
        if (n + 1) % 50 == 0:
            print(
                f"  {n + 1}/{len(todo)} cases, {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    if worker_ is not None:
        worker_.stop()
    return records


def _name(case):
    return f"{case.target} | {case.arg} | {case.label}"


def report(records, limit, elapsed):
    import platform

    import nmfsc

    totals = Counter(r["verdict"] for r in records)
    print(f"nmfsc {nmfsc.__version__} from {Path(nmfsc.__file__).parent}")
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}; {len(records)} cases, "
        f"per-case limit {limit:g} s, total {elapsed:.0f} s"
    )
    print("\n| outcome | cases | rule |\n|---|---:|---|")
    for category in (*CATEGORIES, "audit error"):
        if category in RULES or totals[category]:
            rule = RULES.get(category, "a bug in this script")
            print(f"| {category} | {totals[category]} | {rule} |")
    print(f"\nPROBLEM_WORDS = {', '.join(PROBLEM_WORDS)}")
    by_target = Counter((r["target"], r["verdict"]) for r in records)
    print("\n| target | " + " | ".join(CATEGORIES) + " |\n|---|" + "---:|" * len(CATEGORIES))
    for target in sorted({r["target"] for r in records}):
        print(f"| {target} | " + " | ".join(str(by_target[target, c]) for c in CATEGORIES) + " |")
    lenient = [r for r in records if r.get("lenient")]
    if lenient:
        print(f"\n## correct, but lenient: accepted a wrong-type value ({len(lenient)})")
        for r in lenient:
            print(f"- [{r['id']}] {r['target']} | {r['input']}")
    refused = [
        r
        for r in records
        if r["expect"] == "scale"
        and r["verdict"] == "clear error"
        and r.get("exception") != "CheckpointMismatchError"  # the data did change
    ]
    if refused:
        print(f"\n## clear errors on scaled data, which have an answer: to review ({len(refused)})")
        for r in refused:
            print(f"- [{r['id']}] {r['target']} | {r['input']}: {r['exception']}: {r['message']}")
    for category in ("silent wrong", "unclear error", "hang", "audit error"):
        listed = [r for r in records if r["verdict"] == category]
        if listed:
            print(f"\n## {category} ({len(listed)})")
        for r in listed:
            what = (
                "; ".join(r.get("problems") or [])
                or (f"{r.get('exception', '')}: {r.get('message', '')}"[:200])
            )
            print(f"- [{r['id']}] {r['target']} | {r['arg']} | {r['input']}: {what}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="audit.json", help="JSON file for the per-case records")
    parser.add_argument("--limit", type=float, default=90.0, help="per-case time limit (s)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (only 1 for now)")
    parser.add_argument("--only", help="run only the cases whose 'target | arg | input' matches")
    parser.add_argument("--list", action="store_true", help="list the cases and stop")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tmp", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.tmp)
    if args.jobs != 1:
        parser.error("--jobs: only 1 worker is supported")
    with tempfile.TemporaryDirectory(prefix="nmfsc-audit-") as tmp:
        cases = all_cases(tmp)
        if args.list:
            for i, case in enumerate(cases):
                print(i, _name(case), case.expect)
            return 0
        started = time.perf_counter()
        # Each record is also written as it comes, to <out>.jsonl, to follow a long run.
        with (
            open(Path(tmp) / "worker.log", "w") as log,
            open(Path(args.out).with_suffix(".jsonl"), "w") as stream,
        ):
            records = drive(cases, args.limit, tmp, log, args.only, stream)
        elapsed = time.perf_counter() - started
    Path(args.out).write_text(
        json.dumps(
            {
                "limit_s": args.limit,
                "seconds": round(elapsed, 1),
                "rules": RULES,
                "problem_words": PROBLEM_WORDS,
                "records": records,
            },
            indent=1,
            default=str,
        )
    )
    report(records, args.limit, elapsed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
