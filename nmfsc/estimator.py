"""A scikit-learn estimator around :func:`nmfsc.nmf_sc`.

scikit-learn is optional (see :mod:`nmfsc._estimator_base`): with it,
:class:`SparseNMF` is a full scikit-learn estimator (clone, pipelines, grid
search, ``set_output``, ``get_feature_names_out``) and passes scikit-learn's
``check_estimator``; without it, the same methods work on NumPy and SciPy input.
Either way the factorization is the one :func:`nmfsc.nmf_sc` computes: ``fit``
calls it on ``X.T``, and ``transform`` calls
:func:`nmfsc.solvers.coefficients.fit_coefficients`; both run on the GPU
backend for a CuPy X. This module validates the estimator's parameters and
maps them onto those two calls; it holds no solver.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nmfsc._array_api import as_float_array_in, namespace, to_host
from nmfsc._estimator_base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    InitialObjectiveStop,
    TransformerMixin,
    check_fitted,
    check_input,
    on_device,
)
from nmfsc._parameters import check
from nmfsc._validation import as_float_array
from nmfsc.backends import backend_for
from nmfsc.observed import Observed
from nmfsc.solvers.coefficients import fit_coefficients
from nmfsc.solvers.framework import NMFResult, frobenius_norm
from nmfsc.solvers.hoyer import nmf_sc
from nmfsc.solvers.registry import variants

__all__ = ["SparseNMF"]


class SparseNMF(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    r"""Non-negative matrix factorization with sparseness constraints, as an estimator.

    ``X ~ Z @ components_`` with ``Z = fit_transform(X)`` (n_samples x
    n_components) and ``components_`` (n_components x n_features), both
    non-negative; the sparseness of the basis vectors and/or of the
    coefficients is fixed (Hoyer 2004). This is :func:`nmfsc.nmf_sc` in
    scikit-learn's orientation: ``fit(X)`` calls ``nmf_sc(X.T, ...)`` and
    stores the result, so the iterates are bit-identical to the function's;
    only the stopping test is scikit-learn's (see ``tol``).

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
    n_components : int or None, default None
        M, the number of components; None means all features
        (``n_components_ = n_features``), as in scikit-learn's NMF.
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
        Stop when, over the last ``window`` iterations, the objective changed
        by less than ``tol`` times its value after the first iteration:
        :math:`|E_{k-w} - E_k| < \mathrm{tol}\, E_1`, scikit-learn's test.
        It fires no later than
        :func:`nmfsc.nmf_sc`'s own test (which divides by :math:`E_{k-w}`),
        and unlike that one it also fires when the objective tends to zero, as
        it does for an exact factorization (e.g. ``n_components`` equal to
        the number of features, the default). ``result_.stop_reason`` is then
        ``"tol"``.
    window : int, default 10
        Iterations over which the relative change is measured.
    stationarity_tol : float or None, default None
        With a value, ``fit`` is converged only where the fit is stationary to
        it (:attr:`nmfsc.NMFResult.stationarity`, checked every ``window``
        iterations; see :func:`nmfsc.nmf_sc`): ``tol`` then stops nothing in
        ``fit``, and a fit that never gets there stops by ``max_iter`` or
        ``max_time``. With ``missing_values``, of the observed entries'
        objective; not for data on a GPU (a ValueError). ``transform`` keeps
        the rule of ``tol``.
    max_time : float or None, default None
        Wall-clock limit in seconds of each solve.
    random_state : None, int or numpy.random.Generator, default None
        Seed of the random start (an int makes fit and transform
        reproducible; a Generator is advanced).
    init : {"random", "nndsvd", "nndsvda", "nndsvdar", "custom"}, default "random"
        The start of ``fit`` (see :func:`nmfsc.nmf_sc`); with "custom", the
        ``W`` and ``H`` passed to ``fit`` (scikit-learn's names and shapes).
        ``transform`` always starts its coefficients from the random draw.
    solver : str, default "hoyer"
        The algorithm, :func:`nmfsc.nmf_sc`'s ``solver``: "hoyer", the
        paper's, or "accelerated", the same problem from the same start
        solved by block coordinate descent.
    average_sparseness : bool, default False
        Hold ``sparseness_components`` (``sparseness_coefficients``) on
        average over the components only, each free to differ
        (:func:`nmfsc.nmf_sc`'s ``average_sparseness``; ``transform`` too).
        In memory, without ``missing_values``.
    progress : bool, default False
        Show a tqdm progress bar.
    missing_values : None or np.nan, default None
        np.nan: NaN entries of X are missing, and ``fit``, ``transform``,
        ``fit_transform`` and ``score`` use the observed entries only (the
        masked objective, :func:`nmfsc.nmf_sc`'s ``mask``). A scipy.sparse X
        stays sparse: its stored NaN are the missing entries, every other
        entry (unstored zeros included) is observed
        (:meth:`nmfsc.observed.Observed.all_but`). None: NaN is an error.

    Attributes
    ----------
    components_ : ndarray or cupy.ndarray, shape (n_components, n_features)
        The basis vectors, ``result_.W.T``, in the units of X; a CuPy array
        when X was one.
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

    See Also
    --------
    nmf_sc : The function it calls: the paper's orientation, V ~ W H.
    NMFResult : The full record of the fit (``result_``).
    compare : SparseNMF's solver and standard NMF side by side.
    sklearn.decomposition.NMF : scikit-learn's NMF, with L1/L2 penalties instead of constraints.

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

    With scikit-learn installed, SparseNMF passes scikit-learn's
    ``check_estimator`` in its default configuration. float32 input gives
    float32 factors and coefficients; scipy.sparse CSR / CSC input is never
    made dense. ``get_feature_names_out`` names the outputs ``sparsenmf0``,
    ``sparsenmf1``, ... (so ``set_output(transform="pandas")`` works), and
    :meth:`score` is minus the reconstruction error of ``transform``, so that
    ``GridSearchCV(SparseNMF(...), {"sparseness_components": [...]})`` selects
    by reconstruction without a scorer.

    A CuPy array X (dense, 2-D) is checked, fitted and transformed on its
    GPU, by the GPU backend (:mod:`nmfsc.gpu_backend`): ``fit`` is
    ``nmf_sc(X.T, ...)`` there and ``transform`` its H step there, with the
    CPU's iterates up to rounding. ``components_`` and the coefficients
    are then CuPy arrays, ``reconstruction_err_`` and :meth:`score` Python
    floats computed on the GPU; X is never copied to the host. A model
    fitted on the host transforms CuPy data on the GPU, while one fitted on
    a GPU needs CuPy data. ``missing_values`` and the NNDSVD starts do not
    run there (a one-line error says what to do); ``init="custom"`` takes
    ``W`` and ``H`` as NumPy or CuPy arrays.

    References
    ----------
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

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
        n_components: int | None = None,
        *,
        sparseness_components: float | None = None,
        sparseness_coefficients: float | None = None,
        max_iter: int = 10000,
        tol: float = 1e-5,
        window: int = 10,
        stationarity_tol: float | None = None,
        max_time: float | None = None,
        random_state: Any = None,
        progress: bool = False,
        init: str = "random",
        solver: str = "hoyer",
        average_sparseness: bool = False,
        missing_values: float | None = None,
    ) -> None:
        self.n_components = n_components
        self.sparseness_components = sparseness_components
        self.sparseness_coefficients = sparseness_coefficients
        self.max_iter = max_iter
        self.tol = tol
        self.window = window
        self.stationarity_tol = stationarity_tol
        self.max_time = max_time
        self.random_state = random_state
        self.progress = progress
        self.init = init
        self.solver = solver
        self.average_sparseness = average_sparseness
        self.missing_values = missing_values

    # --- tags (scikit-learn) -------------------------------------------------
    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True  # NMF: X must be >= 0
        tags.input_tags.sparse = True  # CSR and CSC, never made dense
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.allow_nan = self.missing_values is not None
        return tags

    def _more_tags(self) -> dict[str, Any]:  # scikit-learn < 1.6
        return {"requires_positive_X": True, "preserves_dtype": [np.float64, np.float32]}

    @property
    def _n_features_out(self) -> int:
        """The number of output features, for get_feature_names_out."""
        return self.components_.shape[0]

    # --- parameters -------------------------------------------------------------
    def _n_components_for(self, X: Any) -> int:
        """n_components, or all features (scikit-learn's NMF default) when None."""
        if self.n_components is None:
            return int(X.shape[1])
        return check("n_components", self.n_components)

    def _check_solver(self) -> str:
        if not isinstance(self.solver, str) or self.solver not in variants(nmf_sc):
            allowed = ", ".join(map(repr, variants(nmf_sc)))
            raise ValueError(f"solver must be one of {allowed}; got {self.solver!r}")
        return self.solver

    def _check_component_features(self, X: Any, s_w: float | None) -> None:
        if s_w is not None and X.shape[1] < 2:
            raise ValueError(
                f"sparseness_components={s_w!r} constrains each component across features, "
                f"which needs at least 2 features; got n_features = {X.shape[1]}. Use "
                "sparseness_components=None"
            )

    def _check_coefficient_samples(self, X: Any, s_h: float | None) -> None:
        if s_h is not None and X.shape[0] < 2:
            raise ValueError(
                f"sparseness_coefficients={s_h!r} constrains each component's coefficients "
                f"across samples, which needs at least 2 samples; got n_samples = "
                f"{X.shape[0]}. Transform the sample together with others, or use "
                "sparseness_coefficients=None"
            )

    def _loop_options(self, stop: InitialObjectiveStop, fitting: bool = False) -> dict[str, Any]:
        """The solver loop's settings, the same for fit and transform but for
        ``stationarity_tol``, which decides ``fit``'s convergence instead of
        ``stop`` (scikit-learn's rule of ``tol``)."""
        options = {
            "random_state": self.random_state,
            "max_iter": self.max_iter,
            "tol": self.tol,
            "window": self.window,
            "max_time": self.max_time,
            "progress": self.progress,
            "callback": stop,
        }
        if fitting and self.stationarity_tol is not None:
            options.update(stationarity_tol=self.stationarity_tol, callback=None)
        return options

    def _custom_start(self, X: Any, W: ArrayLike | None, H: ArrayLike | None) -> dict[str, Any]:
        """nmf_sc's W_init / H_init from scikit-learn's W (samples x components)
        and H (components x features) for X, only with init="custom"."""
        if self.init != "custom":
            if W is not None or H is not None:
                raise ValueError(
                    f"W and H are the start of init='custom'; got init={self.init!r}. "
                    "Set init='custom' to use them, or leave them out"
                )
            return {}
        if W is None or H is None:
            raise ValueError("init='custom' needs both W and H: fit(X, W=..., H=...)")
        # CuPy starts are checked on the host (M-sized; nmf_sc copies them back)
        W_arr = as_float_array(to_host(W) if on_device(W) else W, "W", ndim=2)
        H_arr = as_float_array(to_host(H) if on_device(H) else H, "H", ndim=2)
        M = self._n_components_for(X)
        for name, arr, shape in (("W", W_arr, (X.shape[0], M)), ("H", H_arr, (M, X.shape[1]))):
            if arr.shape != shape:
                raise ValueError(
                    f"{name} has shape {arr.shape}; for X of shape {X.shape} and "
                    f"n_components={M} it must be {shape}"
                )
        return {"W_init": H_arr.T, "H_init": W_arr.T}

    def _checked(self, X: Any, reset: bool) -> tuple[Any, Any]:
        """X checked, with zeros where missing, and its observed entries
        (:class:`~nmfsc.observed.Observed`; None when none is missing)."""
        if not reset:
            self._refuse_host_data(X)
        if not check("missing_values", self.missing_values):
            return check_input(self, X, reset=reset), None
        X = check_input(self, X, reset=reset, allow_nan=True)
        return Observed.from_nan(X, type(self).__name__)

    # --- fitting ----------------------------------------------------------------
    def fit_transform(
        self,
        X: ArrayLike,
        y: Any = None,
        W: ArrayLike | None = None,
        H: ArrayLike | None = None,
    ) -> NDArray[np.floating]:
        """Fit to X and return its coefficients ``H.T``, shape (n_samples, n_components).

        The coefficients are those of the fit itself (no second solve).

        Parameters
        ----------
        X : array-like, scipy.sparse CSR / CSC, dask or CuPy array, shape (n_samples, n_features)
            Non-negative data. A Dask array (chunked along its samples only)
            is fitted by the Dask backend on ``X.T`` without gathering X
            (``solver="hoyer"``; see the distributed page of the docs); the
            coefficients are then a Dask array chunked as X, and
            ``transform`` / ``score`` need X in memory. A CuPy array is
            fitted on its GPU (class Notes); the coefficients are then a
            CuPy array.
        y : ignored
        W : array-like, shape (n_samples, n_components), optional
            With ``init="custom"``, the start of the coefficients (nmf_sc's
            ``H_init.T``), as in scikit-learn's NMF.
        H : array-like, shape (n_components, n_features), optional
            With ``init="custom"``, the start of ``components_`` (nmf_sc's
            ``W_init.T``).
        """
        data, observed = self._checked(X, reset=True)
        s_w = check("sparseness_components", self.sparseness_components)
        s_h = check("sparseness_coefficients", self.sparseness_coefficients)
        self._check_component_features(data, s_w)
        self._check_coefficient_samples(data, s_h)
        if self.average_sparseness is True and s_w is None and s_h is None:
            raise ValueError(
                "average_sparseness=True holds sparseness_components or "
                "sparseness_coefficients on average, but neither is set; set one, or leave "
                "average_sparseness=False"
            )
        stop = InitialObjectiveStop(self.tol, self.window)
        result = nmf_sc(
            data.T,
            self._n_components_for(data),
            sparseness_w=s_w,
            sparseness_h=s_h,
            solver=self._check_solver(),
            average_sparseness=self.average_sparseness,
            init=self.init,
            mask=None if observed is None else observed.T,
            **self._custom_start(data, W, H),
            **self._loop_options(stop, fitting=True),
        )
        result = stop.relabel(result)
        Z = result.H.T
        self.result_ = result
        self.components_ = result.W.T
        self.n_components_ = result.W.shape[1]
        self.n_iter_ = result.n_iter
        self.reconstruction_err_ = _frobenius_error(data, result)
        return Z

    def fit(
        self,
        X: ArrayLike,
        y: Any = None,
        W: ArrayLike | None = None,
        H: ArrayLike | None = None,
    ) -> SparseNMF:
        """Fit the model to X (n_samples, n_features), non-negative. Returns self.

        ``W`` and ``H`` are the start with ``init="custom"`` (see
        :meth:`fit_transform`).
        """
        self.fit_transform(X, y, W=W, H=H)
        return self

    def _coefficients(
        self, X: Any, observed: Observed | None = None
    ) -> tuple[NDArray[np.floating], NMFResult | None]:
        """transform's coefficients of checked X (its ``observed`` entries), and
        the solver's result (None for all-zero X, whose coefficients are zero)."""
        s_h = check("sparseness_coefficients", self.sparseness_coefficients)
        self._check_coefficient_samples(X, s_h)
        xp = namespace(X)  # numpy, or cupy for X on a GPU
        values = X.data if hasattr(X, "nnz") else X
        if not bool(xp.any(values > 0)):  # all zeros: the coefficients are zero
            return xp.zeros((X.shape[0], self.n_components_), dtype=X.dtype), None
        stop = InitialObjectiveStop(self.tol, self.window)
        result = fit_coefficients(
            X.T,
            self.components_.T,
            sparseness_h=s_h,
            average_sparseness=bool(self.average_sparseness) and s_h is not None,
            mask=None if observed is None else observed.T,
            **self._loop_options(stop),
        )
        return result.H.T, stop.relabel(result)

    def transform(self, X: ArrayLike) -> NDArray[np.floating]:
        """Coefficients of X for the fitted ``components_``, shape (n_samples, n_components).

        nmf_sc's H step with the basis fixed, run to the stopping rule (see the
        class Notes for what ``sparseness_coefficients`` means here); on its
        GPU for a CuPy X, which gives a CuPy array.
        """
        check_fitted(self, "components_")
        return self._coefficients(*self._checked(X, reset=False))[0]

    def inverse_transform(self, X: ArrayLike) -> NDArray[np.floating]:
        """Data from coefficients: ``X @ components_``, shape (n_samples, n_features).

        float32 coefficients give float32 data (with float32 ``components_``).
        CuPy coefficients give CuPy data, computed on their GPU.
        """
        check_fitted(self, "components_")
        if on_device(X) or on_device(self.components_):
            return self._inverse_transform_on_device(X)
        X_arr = as_float_array(X, "X", ndim=2)
        if X_arr.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {X_arr.shape[1]} columns, but {type(self).__name__} has "
                f"{self.n_components_} components"
            )
        if getattr(X, "dtype", None) == np.float32:  # float32 in, float32 out
            X_arr = X_arr.astype(np.float32)
        return X_arr @ self.components_

    def _refuse_host_data(self, X: Any) -> None:
        """A model fitted on a GPU takes CuPy data only (its ``components_``
        stay on the GPU)."""
        if on_device(self.components_) and not on_device(X):
            raise TypeError(
                f"{type(self).__name__} was fitted on a GPU (components_ is a CuPy array) "
                "and X is not a CuPy array: pass cupy.asarray(X), or fit on host data"
            )

    def _inverse_transform_on_device(self, X: Any) -> Any:
        """inverse_transform of a CuPy X, on its GPU (``components_`` copied
        there if fitted on the host), with the host path's checks."""
        name = type(self).__name__
        self._refuse_host_data(X)
        xp = namespace(X)
        X = as_float_array_in(xp, X, "X", 2)  # float32 in, float32 out
        if X.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {X.shape[1]} columns, but {name} has {self.n_components_} components"
            )
        return X @ xp.asarray(self.components_)

    def score(self, X: ArrayLike, y: Any = None) -> float:
        r"""Minus the reconstruction error of X: :math:`-\lVert X - Z C \rVert_F`.

        ``Z = transform(X)`` and ``C = components_``; higher is better, so
        scikit-learn's ``GridSearchCV`` and ``cross_val_score``
        can select parameters with it out of the box. It is the Frobenius
        norm, in the units of X, like ``reconstruction_err_`` (not averaged
        over samples: compare scores of data sets of equal size, as the
        folds of a cross-validation are). For a CuPy X, computed on its GPU.
        """
        check_fitted(self, "components_")
        X, observed = self._checked(X, reset=False)
        return -_frobenius_error(X, self._coefficients(X, observed)[1])


def _frobenius_error(X: Any, result: NMFResult | None) -> float:
    """``||X - Z @ components||_F`` of a run on X: its relative error times
    ``||X||_F``, both computed on X / max(X), so finite at any scale of X and with
    no dense X - Z @ components for sparse X. ``result`` None: Z is zero, the
    error is ``||X||_F``."""
    if result is None:
        scale = float(X.max())
        return 0.0 if scale == 0.0 else _norm(X, scale)
    return float(result.relative_error * _norm(X, result.scale))


def _norm(X: Any, scale: float) -> float:
    """``||X||_F`` from ``scale`` = max(X) > 0, where X is: by its backend's
    :attr:`~nmfsc.backends.Backend.frobenius_norm` (a Dask or CuPy X), else
    in memory."""
    backend = backend_for(X)
    if backend is not None and backend.frobenius_norm is not None:
        return float(backend.frobenius_norm(X, scale))
    return frobenius_norm(X, scale)
