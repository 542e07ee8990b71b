"""A scikit-learn style estimator around :func:`nmfsc.nmf_sc`.

scikit-learn is optional: with it installed, :class:`SparseNMF` is a
``BaseEstimator`` and ``TransformerMixin`` (clone, pipelines, grid search,
``set_output``) and validates its input with scikit-learn's own checks;
without it, a small base class gives ``get_params`` / ``set_params`` and the
input is checked by nmfsc's own validation. Either way the factorization is
the one :func:`nmfsc.nmf_sc` computes: ``fit`` calls it on ``X.T``.
"""

from __future__ import annotations

import inspect

import numpy as np

from nmfsc._validation import (
    as_float_array,
    check_data,
    check_optional_sparseness,
    reject_masked,
)
from nmfsc.solvers._data import frobenius_norm
from nmfsc.solvers.hoyer import fit_coefficients, nmf_sc

__all__ = ["SparseNMF"]

try:  # scikit-learn is optional
    from sklearn.base import BaseEstimator, TransformerMixin
    from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

    _HAVE_SKLEARN = True
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    _HAVE_SKLEARN = False

    class BaseEstimator:
        """Minimal stand-in for scikit-learn's BaseEstimator: get/set_params."""

        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(
                p.name
                for p in sig.parameters.values()
                if p.name != "self" and p.kind != p.VAR_KEYWORD
            )

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(
                        f"Invalid parameter {key!r} for estimator {type(self).__name__}; "
                        f"valid parameters are {valid}"
                    )
                setattr(self, key, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class TransformerMixin:
        """Minimal stand-in for scikit-learn's TransformerMixin."""


class SparseNMF(TransformerMixin, BaseEstimator):
    r"""Non-negative matrix factorization with sparseness constraints, as an estimator.

    ``X ~ Z @ components_`` with ``Z = fit_transform(X)`` (n_samples x
    n_components) and ``components_`` (n_components x n_features), both
    non-negative; the sparseness of the basis vectors and/or of the
    coefficients is fixed (Hoyer 2004). This is :func:`nmfsc.nmf_sc` in
    scikit-learn's orientation: ``fit(X)`` calls ``nmf_sc(X.T, ...)`` and
    stores the result, so the factors are bit-identical to the function's.

    Correspondence with the paper (``V ~ W H``, V is N x T, one sample per
    column) and with :func:`nmfsc.nmf_sc`:

    ===========================  ==========================  ===================
    SparseNMF                    paper (V ~ W H)             nmf_sc
    ===========================  ==========================  ===================
    X, (n_samples, n_features)   V.T: N = n_features,        ``V = X.T``
                                 T = n_samples
    ``components_``, (M, F)      W.T (a row = a basis        ``result.W.T``
                                 vector)
    fit_transform(X), (S, M)     H.T                         ``result.H.T``
    sparseness_components        s_W, of each basis vector   ``sparseness_w``
                                 (a row of ``components_``)
    sparseness_coefficients      s_H, of each row of H: one  ``sparseness_h``
                                 component's activations
                                 across samples (a column
                                 of the transform output)
    ===========================  ==========================  ===================

    Parameters
    ----------
    n_components : int
        M, the number of components.
    sparseness_components : float in [0, 1] or None, default None
        Hoyer sparseness of every row of ``components_`` (the paper's s_W);
        None leaves the basis unconstrained.
    sparseness_coefficients : float in [0, 1] or None, default None
        Hoyer sparseness of every *column* of the transformed data, i.e. of
        each component's coefficients across the samples (the paper's s_H).
        As in the paper, these columns are then also held at unit L2 norm
        (the scale lives in ``components_``). None leaves them unconstrained.
    max_iter : int, default 10000
        Iteration limit of ``fit`` and of ``transform``.
    tol : float, default 1e-5
        Stop when the objective changed by less than ``tol`` (relative) over
        ``window`` iterations (see :func:`nmfsc.nmf_sc`).
    window : int, default 10
        Iterations over which the relative change is measured.
    max_time : float or None, default None
        Wall-clock limit in seconds of each solve.
    random_state : None, int or numpy.random.Generator, default None
        Seed of the random start (an int makes fit and transform
        reproducible; a Generator is advanced).
    init : {"random", "nndsvd", "nndsvda", "nndsvdar"}, default "random"
        The start of ``fit`` (see :func:`nmfsc.nmf_sc`); ``transform``
        always starts its coefficients from the random draw.
    progress : bool, default False
        Show a tqdm progress bar.

    Attributes
    ----------
    components_ : ndarray, shape (n_components, n_features)
        The basis vectors, ``result_.W.T``, in the units of X.
    n_components_ : int
        The number of components.
    n_iter_ : int
        Iterations of the fit.
    reconstruction_err_ : float
        ``||X - fit_transform(X) @ components_||_F`` (Frobenius norm, as in
        scikit-learn's NMF; ``sqrt(2 * result_.objective[-1])`` up to rounding).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str
        Only with scikit-learn, when X had string column names.
    result_ : NMFResult
        The full result of :func:`nmfsc.nmf_sc` (objective history, times,
        achieved sparseness, stop reason, ...).

    Notes
    -----
    ``transform(X)`` finds coefficients for new data with ``components_``
    fixed: nmf_sc's H step alone, run to the same stopping rule from a random
    start. Without ``sparseness_coefficients`` this is non-negative least
    squares by multiplicative updates, one sample at a time in effect. With
    it, the constraint is on each component's coefficients *across the
    samples passed to transform*: every column of the output is projected to
    that sparseness at unit L2 norm, as in the paper. Consequences: the
    coefficients of a sample depend on the other samples transformed with it,
    their scale depends on how many there are, and a single sample cannot be
    transformed (a ValueError). The objective being non-convex in that case,
    ``transform(X_train)`` reconstructs about as well as ``fit_transform`` but
    need not return the same coefficients.

    A run that stops at ``max_iter`` or ``max_time`` gives
    :class:`nmfsc.ConvergenceWarning`.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc import SparseNMF
    >>> X = np.abs(np.random.default_rng(0).standard_normal((40, 30)))
    >>> model = SparseNMF(4, sparseness_components=0.6, random_state=0, tol=1e-4)
    >>> Z = model.fit_transform(X)
    >>> Z.shape, model.components_.shape
    ((40, 4), (4, 30))
    >>> bool(np.allclose(model.result_.sparseness_W, 0.6))
    True
    """

    def __init__(
        self,
        n_components,
        *,
        sparseness_components=None,
        sparseness_coefficients=None,
        max_iter=10000,
        tol=1e-5,
        window=10,
        max_time=None,
        random_state=None,
        progress=False,
        init="random",
    ):
        self.n_components = n_components
        self.sparseness_components = sparseness_components
        self.sparseness_coefficients = sparseness_coefficients
        self.max_iter = max_iter
        self.tol = tol
        self.window = window
        self.max_time = max_time
        self.random_state = random_state
        self.progress = progress
        self.init = init

    # --- tags (scikit-learn) -------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True  # NMF: X must be >= 0
        tags.input_tags.sparse = True  # CSR and CSC, never made dense
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"requires_positive_X": True}

    # --- input ----------------------------------------------------------------
    def _check_X(self, X, reset):
        """X as a float array (n_samples, n_features), non-negative: float64 or
        float32 (kept), dense or scipy.sparse CSR / CSC (kept sparse)."""
        reject_masked(X, "X")  # scikit-learn's validate_data would drop the mask silently
        if _HAVE_SKLEARN:
            X = validate_data(
                self, X, reset=reset, dtype=[np.float64, np.float32], accept_sparse=("csr", "csc")
            )
            check_non_negative(X, f"{type(self).__name__} (input X)")
            return X
        if hasattr(X, "nnz") and hasattr(X, "tocsr"):
            X, _ = check_data(X) if X.nnz else (X, None)
        else:
            X = as_float_array(X, "X", ndim=2)
        if reset:
            self.n_features_in_ = X.shape[1]
        elif X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        if np.any(X < 0):
            raise ValueError(f"Negative values in data passed to {type(self).__name__} (input X)")
        return X

    def _check_coefficient_samples(self, X, s_h):
        if s_h is not None and X.shape[0] < 2:
            raise ValueError(
                f"sparseness_coefficients={s_h!r} constrains each component's coefficients "
                f"across samples, which needs at least 2 samples; got n_samples = "
                f"{X.shape[0]}. Transform the sample together with others, or use "
                "sparseness_coefficients=None"
            )

    def _loop_options(self):
        """The solver loop's settings, the same for fit and transform."""
        return {
            "random_state": self.random_state,
            "max_iter": self.max_iter,
            "tol": self.tol,
            "window": self.window,
            "max_time": self.max_time,
            "progress": self.progress,
        }

    def _check_fitted(self):
        if _HAVE_SKLEARN:
            check_is_fitted(self, "components_")
        elif not hasattr(self, "components_"):
            raise AttributeError(
                f"This {type(self).__name__} instance is not fitted yet; call 'fit' first"
            )

    # --- fitting ----------------------------------------------------------------
    def fit_transform(self, X, y=None):
        """Fit to X and return its coefficients ``H.T``, shape (n_samples, n_components).

        The coefficients are those of the fit itself (no second solve).
        """
        X = self._check_X(X, reset=True)
        s_w = check_optional_sparseness(self.sparseness_components, "sparseness_components")
        s_h = check_optional_sparseness(self.sparseness_coefficients, "sparseness_coefficients")
        self._check_coefficient_samples(X, s_h)
        result = nmf_sc(
            X.T,
            self.n_components,
            sparseness_w=s_w,
            sparseness_h=s_h,
            init=self.init,
            **self._loop_options(),
        )
        Z = result.H.T
        self.result_ = result
        self.components_ = result.W.T
        self.n_components_ = result.W.shape[1]
        self.n_iter_ = result.n_iter
        # ||X|| times the relative error: finite at any scale of X, and no dense
        # X - Z C (for sparse X it would be dense)
        norm_x = frobenius_norm(X, result.scale)
        self.reconstruction_err_ = float(result.relative_error * norm_x)
        return Z

    def fit(self, X, y=None):
        """Fit the model to X (n_samples, n_features), non-negative. Returns self."""
        self.fit_transform(X, y)
        return self

    def transform(self, X):
        """Coefficients of X for the fitted ``components_``, shape (n_samples, n_components).

        nmf_sc's H step with the basis fixed, run to the stopping rule (see the
        class Notes for what ``sparseness_coefficients`` means here).
        """
        self._check_fitted()
        X = self._check_X(X, reset=False)
        s_h = check_optional_sparseness(self.sparseness_coefficients, "sparseness_coefficients")
        self._check_coefficient_samples(X, s_h)
        values = X.data if hasattr(X, "nnz") else X
        if not np.any(values > 0):  # all zeros: the coefficients are zero
            return np.zeros((X.shape[0], self.n_components_), dtype=X.dtype)
        result = fit_coefficients(
            X.T,
            self.components_.T,
            sparseness_h=s_h,
            **self._loop_options(),
        )
        return result.H.T

    def inverse_transform(self, X):
        """Data from coefficients: ``X @ components_``, shape (n_samples, n_features)."""
        self._check_fitted()
        X = as_float_array(X, "X", ndim=2)
        if X.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {X.shape[1]} columns, but {type(self).__name__} has "
                f"{self.n_components_} components"
            )
        return X @ self.components_
