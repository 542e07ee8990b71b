"""What :class:`nmfsc.SparseNMF` takes from scikit-learn, installed or not.

scikit-learn is optional. With it, the bases are scikit-learn's own
``BaseEstimator``, ``TransformerMixin`` and ``ClassNamePrefixFeaturesOutMixin``
(clone, pipelines, grid search, ``set_output``, ``get_feature_names_out``), and
:func:`check_input` is scikit-learn's ``validate_data``. Without it, small
stand-ins give the same public methods (``get_params`` / ``set_params``,
``fit_transform``, ``get_feature_names_out``) and the input is checked by
nmfsc's own validation. A CuPy array (:func:`on_device`) is checked on its GPU
instead, with scikit-learn's messages. :class:`InitialObjectiveStop` is
scikit-learn's stopping test, given to the solvers as their ``callback``.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import numpy as np

from nmfsc._array_api import namespace
from nmfsc._validation import as_float_array, check_data, reject_masked
from nmfsc.backends import Backend, backend_for
from nmfsc.solvers.framework import NMFResult

__all__ = [
    "HAVE_SKLEARN",
    "BaseEstimator",
    "ClassNamePrefixFeaturesOutMixin",
    "InitialObjectiveStop",
    "TransformerMixin",
    "check_fitted",
    "check_input",
    "on_device",
]

try:  # scikit-learn is optional
    from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
    from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

    HAVE_SKLEARN = True
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    HAVE_SKLEARN = False

    class BaseEstimator:  # type: ignore[no-redef]
        """Minimal stand-in for scikit-learn's BaseEstimator: get/set_params."""

        @classmethod
        def _get_param_names(cls) -> list[str]:
            sig = inspect.signature(cls.__init__)
            return sorted(
                p.name
                for p in sig.parameters.values()
                if p.name != "self" and p.kind != p.VAR_KEYWORD
            )

        def get_params(self, deep: bool = True) -> dict[str, Any]:
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params: Any) -> Any:
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(
                        f"Invalid parameter {key!r} for estimator {type(self).__name__}; "
                        f"valid parameters are {valid}"
                    )
                setattr(self, key, value)
            return self

        def __repr__(self) -> str:
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class TransformerMixin:  # type: ignore[no-redef]
        """Minimal stand-in for scikit-learn's TransformerMixin."""

    class ClassNamePrefixFeaturesOutMixin:  # type: ignore[no-redef]
        """Minimal stand-in: output feature names ``<class name lowercased><i>``."""

        def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
            check_fitted(self, "components_")
            prefix = type(self).__name__.lower()
            count = self._n_features_out  # type: ignore[attr-defined]
            return np.asarray([f"{prefix}{i}" for i in range(count)], dtype=object)


def check_fitted(estimator: Any, attribute: str) -> None:
    """Raise scikit-learn's NotFittedError (an AttributeError without it) if
    ``estimator`` has no ``attribute`` yet."""
    if HAVE_SKLEARN:
        check_is_fitted(estimator, attribute)
    elif not hasattr(estimator, attribute):
        raise AttributeError(
            f"This {type(estimator).__name__} instance is not fitted yet; call 'fit' first"
        )


def on_device(X: Any) -> bool:
    """Whether X is the array of a backend that NumPy's functions run on
    through its module (:attr:`nmfsc.backends.Backend.array_api`: a CuPy
    array, recognised without importing CuPy): :class:`nmfsc.SparseNMF`
    checks, fits and transforms it where it is."""
    backend = backend_for(X)
    return backend is not None and backend.array_api


def _is_text(X: Any) -> bool:
    """Whether X is a string or an array of strings (not sparse, not objects)."""
    if isinstance(X, (str, bytes)):
        return True
    if hasattr(X, "nnz") or not isinstance(X, (list, tuple, np.ndarray)):
        return False
    return np.asarray(X).dtype.kind in "SU"


def check_input(estimator: Any, X: Any, *, reset: bool, allow_nan: bool = False) -> Any:
    """X as a non-negative float array (n_samples, n_features) for ``estimator``.

    float64 or float32 (kept), dense or scipy.sparse CSR / CSC (kept sparse).
    ``reset=True`` (fit) records ``n_features_in_`` (and, with scikit-learn,
    ``feature_names_in_``); ``reset=False`` checks X against them.
    ``allow_nan``: NaN entries pass (missing values; the caller checks the rest).
    A CuPy array is checked on its GPU and stays there (:func:`on_device`);
    a Dask array is taken by ``fit`` as it is (its solver checks it).
    """
    name = type(estimator).__name__
    backend = backend_for(X)
    if backend is not None and not backend.array_api:
        return _check_lazy_input(estimator, X, backend, reset=reset)
    if backend is not None:
        return _check_gpu_input(estimator, X, reset=reset, allow_nan=allow_nan)
    reject_masked(X, "X")  # scikit-learn's validate_data would drop the mask silently
    if _is_text(X):  # numpy's own "could not convert string to float" names nothing
        raise TypeError(
            f"{name}: X must be a numeric array (n_samples, n_features), got text; "
            "read a file with nmfsc.read_matrix first"
        )
    if HAVE_SKLEARN:
        finite: Any = "allow-nan" if allow_nan else True
        try:
            X = validate_data(
                estimator,
                X,
                reset=reset,
                dtype=[np.float64, np.float32],
                accept_sparse=("csr", "csc"),
                ensure_all_finite=finite,
            )
        except ValueError as error:
            _name_missing_values(name, X, error)
            if allow_nan:
                _name_infinity(name, X, error)
            raise
        check_non_negative(X, f"{name} (input X)")
        return X
    if hasattr(X, "nnz") and hasattr(X, "tocsr"):
        X, _ = check_data(X) if X.nnz else (X, None)
    elif allow_nan and np.issubdtype(np.asarray(X).dtype, np.floating):
        X = np.asarray(X, dtype=np.float64)
        as_float_array(np.where(np.isnan(X), 0.0, X), "X", ndim=2)  # the other checks
    else:
        X = as_float_array(X, "X", ndim=2)
    if reset:
        estimator.n_features_in_ = X.shape[1]
    elif X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {name} is expecting "
            f"{estimator.n_features_in_} features as input."
        )
    if np.any(X < 0):
        raise ValueError(f"Negative values in data passed to {name} (input X)")
    return X


def _check_lazy_input(estimator: Any, X: Any, backend: Backend, *, reset: bool) -> Any:
    """The array X of a backend that computes it lazily (a Dask array), for
    fit (checked by the backend's solver as it reads X); transform and score
    need X in memory."""
    name = type(estimator).__name__
    if not reset:
        raise TypeError(
            f"{name}.transform and score need X in memory, got {backend.arrays()} of shape "
            f"{X.shape}: pass {backend.to_memory} (in batches of rows for a large X); fit "
            f"and fit_transform take {backend.arrays()}"
        )
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got ndim={X.ndim}")
    estimator.n_features_in_ = X.shape[1]
    if hasattr(estimator, "feature_names_in_"):  # such an array has no column names
        del estimator.feature_names_in_
    return X


def _name_missing_values(name: str, X: Any, error: ValueError) -> None:
    """Where scikit-learn refused a dense X for its NaN (its message suggests
    other estimators), a ValueError naming ``missing_values=np.nan`` instead;
    any other refusal is left as it is. Runs on the refused input only."""
    if "contains NaN" not in str(error) or hasattr(X, "nnz"):
        return
    count = int(np.isnan(np.asarray(X, dtype=np.float64)).sum())
    raise ValueError(
        f"Input X contains NaN ({count} entries); {name} fits missing entries with "
        f"missing_values=np.nan: {name}(..., missing_values=np.nan)"
    ) from error


def _name_infinity(name: str, X: Any, error: ValueError) -> None:
    """Where scikit-learn refused X for its infinity with NaN allowed
    (``missing_values=np.nan``), a ValueError saying that infinity is not a
    missing value; any other refusal is left as it is."""
    if "contains infinity" not in str(error):
        return
    values = X.data if hasattr(X, "nnz") else np.asarray(X, dtype=np.float64)
    count = int(np.isinf(values).sum())
    raise ValueError(
        f"Input X contains infinity ({count} {'entry' if count == 1 else 'entries'}); "
        f"{name} takes NaN as missing here, but infinity is not a missing value: replace "
        "or drop the infinite entries"
    ) from error


def _check_gpu_input(estimator: Any, X: Any, *, reset: bool, allow_nan: bool) -> Any:
    """A CuPy array X checked on its GPU as :func:`check_input` checks X on the
    host, with scikit-learn's messages (2-D, non-empty, real, finite,
    non-negative, n_features_in_); float32 and float64 kept, other dtypes
    made float64 there. Nothing of X is copied to the host but counts."""
    name = type(estimator).__name__
    if allow_nan:
        raise TypeError(
            f"{name}(missing_values=np.nan) does not run on a GPU: pass cupy.asnumpy(X) to "
            "fit on the CPU, or fill the missing entries and set missing_values=None"
        )
    if X.ndim != 2:
        raise ValueError(
            f"Expected 2D array, got {X.ndim}D array instead: {name} takes X of shape "
            "(n_samples, n_features)"
        )
    if X.dtype.kind not in "fiub":
        raise TypeError(f"{name}: X must be a real numeric array, got dtype {X.dtype}")
    for axis, what in ((0, "sample"), (1, "feature")):
        if X.shape[axis] == 0:
            raise ValueError(
                f"Found array with 0 {what}(s) (shape={X.shape}) while a minimum of 1 is "
                f"required by {name}."
            )
    xp = namespace(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(xp.float64)
    bad = int(xp.count_nonzero(~xp.isfinite(X)))
    if bad:
        raise ValueError(
            f"Input X contains NaN or infinity ({bad} entries); {name} takes missing "
            "values on the CPU only: pass cupy.asnumpy(X) with missing_values=np.nan, or "
            "fill them"
        )
    if float(X.min()) < 0:
        raise ValueError(f"Negative values in data passed to {name} (input X)")
    if reset:
        estimator.n_features_in_ = X.shape[1]
        if hasattr(estimator, "feature_names_in_"):  # a CuPy array has no column names
            del estimator.feature_names_in_
    elif X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {name} is expecting "
            f"{estimator.n_features_in_} features as input."
        )
    return X


class InitialObjectiveStop:
    r"""SparseNMF's stopping rule, scikit-learn's: a ``callback`` for the solvers.

    After iteration k (k > ``window``) it stops the run when the objective fell
    by less than ``tol`` times the objective after the first iteration over
    the last ``window`` iterations,

    .. math:: |E_{k - \text{window}} - E_k| < \text{tol} \, E_1,

    the test of scikit-learn's NMF (relative to the error at the start; the
    absolute value, as in the solvers' test, so that a rise is not taken for
    convergence). The
    solvers' own test divides by :math:`E_{k - \text{window}}` instead, which
    cannot fire when the objective tends to zero (an exact factorization,
    e.g. ``n_components`` equal to the number of features): there every
    relative change stays large while the absolute ones vanish. As
    :math:`E_{k - \text{window}} \le E_1` for the monotone nmf_sc, this test
    fires no later than the solver's.
    """

    #: It reads the objective alone and keeps no array, so the run may reuse
    #: its buffers as without a callback (``nmfsc.solvers._loop.keeps_iterates``).
    keeps_iterates = False

    def __init__(self, tol: float, window: int) -> None:
        self.tol = tol
        self.window = window
        self.history: list[float] = []
        self.fired = False

    def __call__(self, state: Any) -> bool:
        self.history.append(float(state.objective))
        k = len(self.history) - 1
        if k < self.window:
            return False
        change = abs(self.history[k - self.window] - self.history[k])
        self.fired = change < self.tol * abs(self.history[0])
        return self.fired

    def relabel(self, result: NMFResult) -> NMFResult:
        """The result with stop reason ``"tol"`` and converged when this rule stopped it."""
        if self.fired and result.stop_reason == "callback":
            return dataclasses.replace(result, stop_reason="tol", converged=True)
        return result
