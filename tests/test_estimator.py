"""SparseNMF, the scikit-learn style estimator: same factors as nmf_sc, transform,
inverse_transform, input errors, and the estimator without scikit-learn
(scikit-learn's checks, model selection and the other scikit-learn parts:
test_estimator_sklearn.py)."""

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import nmfsc
from nmfsc import ConvergenceWarning, SparseNMF
from nmfsc._estimator_base import InitialObjectiveStop
from nmfsc.solvers.coefficients import fit_coefficients

M = 4


@pytest.fixture
def X():
    """40 samples x 30 features, non-negative."""
    return 5.0 * np.abs(np.random.default_rng(0).standard_normal((40, 30))) + 0.01


def quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return func(*args, **kwargs)


SETTINGS = [
    {},
    {"sparseness_components": 0.6},
    {"sparseness_coefficients": 0.5},
    {"sparseness_components": 0.5, "sparseness_coefficients": 0.4},
]


@pytest.mark.parametrize("settings", SETTINGS)
def test_fit_is_nmf_sc_on_the_transpose(X, settings):
    """The same iterates as nmf_sc, stopped by scikit-learn's test (the callback)."""
    options = {"random_state": 3, "max_iter": 60, "tol": 1e-4}
    model = quiet(SparseNMF(M, **settings, **options).fit, X)
    stop = InitialObjectiveStop(options["tol"], 10)
    res = quiet(
        nmfsc.nmf_sc,
        X.T,
        M,
        sparseness_w=settings.get("sparseness_components"),
        sparseness_h=settings.get("sparseness_coefficients"),
        callback=stop,
        **options,
    )
    res = stop.relabel(res)
    assert model.result_.stop_reason == res.stop_reason
    np.testing.assert_array_equal(model.components_, res.W.T)
    np.testing.assert_array_equal(model.result_.H, res.H)
    np.testing.assert_array_equal(model.result_.objective, res.objective)
    assert model.n_iter_ == res.n_iter
    assert model.n_components_ == M
    assert model.n_features_in_ == X.shape[1]
    assert model.components_.shape == (M, X.shape[1])
    # fit_transform returns the fit's own H.T (no second solve)
    Z = quiet(SparseNMF(M, **settings, **options).fit_transform, X)
    np.testing.assert_array_equal(Z, res.H.T)


def test_reconstruction_err_is_the_frobenius_norm(X):
    model = SparseNMF(M, sparseness_components=0.6, random_state=0, tol=1e-4)
    Z = model.fit_transform(X)
    expected = np.linalg.norm(X - Z @ model.components_)
    assert model.reconstruction_err_ == pytest.approx(expected, rel=1e-12)
    assert model.reconstruction_err_ == pytest.approx(
        np.sqrt(2 * model.result_.objective[-1]), rel=1e-8
    )
    assert model.result_.converged


@pytest.mark.parametrize("settings", SETTINGS)
def test_transform_of_training_data_reconstructs_as_well(X, settings):
    model = SparseNMF(M, **settings, random_state=0, tol=1e-6, max_iter=3000)
    Z_fit = model.fit_transform(X)
    Z = model.transform(X)
    assert Z.shape == Z_fit.shape and np.all(Z >= 0)
    err_fit = np.linalg.norm(X - model.inverse_transform(Z_fit))
    err = np.linalg.norm(X - model.inverse_transform(Z))
    assert err <= 1.02 * err_fit
    s_h = settings.get("sparseness_coefficients")
    if s_h is None:  # a convex problem: the fit's coefficients are found again
        np.testing.assert_allclose(Z, Z_fit, atol=0.02 * np.abs(Z_fit).max())
    else:  # each column of the output: unit L2 norm, the target sparseness
        np.testing.assert_allclose(np.linalg.norm(Z, axis=0), 1.0, rtol=1e-9)
        np.testing.assert_allclose(nmfsc.sparseness(Z, axis=0), s_h, atol=1e-9)


def test_transform_of_new_data(X):
    model = SparseNMF(M, sparseness_components=0.5, random_state=0, tol=1e-4).fit(X[:30])
    Z = model.transform(X[30:])
    assert Z.shape == (10, M) and np.all(Z >= 0)
    # one sample alone is fine without a coefficient constraint
    assert model.transform(X[:1]).shape == (1, M)


def test_fit_coefficients_keeps_w_fixed(X):
    res = nmfsc.nmf_sc(X.T, M, random_state=0, tol=1e-4)
    coef = fit_coefficients(X.T, res.W, random_state=1, tol=1e-4)
    np.testing.assert_allclose(coef.W, res.W, rtol=1e-14)
    assert coef.solver.startswith("nmf_sc") and coef.converged
    assert np.all(np.diff(coef.objective) <= 1e-12 * coef.objective[0])


def test_fit_coefficients_takes_the_loop_keywords_but_not_w_init(X):
    res = nmfsc.nmf_sc(X.T, M, random_state=0, tol=1e-4)
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_iters'"):
        fit_coefficients(X.T, res.W, max_iters=5)
    with pytest.raises(TypeError, match="W_init is not an option"):
        fit_coefficients(X.T, res.W, W_init=res.W)
    seen = []
    with pytest.warns(ConvergenceWarning, match="max_iter=3 reached"):
        coef = fit_coefficients(X.T, res.W, max_iter=3, tol=0, callback=seen.append)
    assert coef.n_iter == 3 and [s.iteration for s in seen] == [1, 2, 3]


def test_inverse_transform(X):
    model = SparseNMF(M, random_state=0, tol=1e-4).fit(X)
    Z = np.abs(np.random.default_rng(1).standard_normal((5, M)))
    np.testing.assert_allclose(model.inverse_transform(Z), Z @ model.components_)
    with pytest.raises(ValueError, match="X has 3 columns, but SparseNMF has 4 components"):
        model.inverse_transform(Z[:, :3])


def test_single_sample_with_coefficient_sparseness_is_refused(X):
    model = SparseNMF(M, sparseness_coefficients=0.5, random_state=0, tol=1e-3)
    model.fit(X)
    with pytest.raises(ValueError, match="sparseness_coefficients=0.5 .* at least 2 samples"):
        model.transform(X[:1])
    with pytest.raises(ValueError, match="at least 2 samples"):
        SparseNMF(M, sparseness_coefficients=0.5).fit(X[:1])


@pytest.mark.parametrize(
    "bad, error, match",
    [
        (-np.ones((5, 4)), ValueError, "Negative values in data passed to SparseNMF"),
        (np.array([[1.0, np.nan], [1.0, 2.0]]), ValueError, "NaN"),
        (np.zeros((5, 4)), ValueError, "V is all zeros"),
    ],
)
def test_bad_X(bad, error, match):
    with pytest.raises(error, match=match):
        SparseNMF(2).fit(bad)


@pytest.mark.parametrize(
    "param, value, error, match",
    [
        ("sparseness_components", 1.5, ValueError, r"sparseness_components must lie in \[0, 1\]"),
        ("sparseness_coefficients", -0.1, ValueError, "sparseness_coefficients must lie in"),
        ("sparseness_components", "high", TypeError, "sparseness_components must be a real"),
        ("n_components", 0, ValueError, "n_components must be >= 1"),
        ("max_iter", -1, ValueError, "max_iter must be >= 0"),
    ],
)
def test_bad_parameters_are_named(X, param, value, error, match):
    with pytest.raises(error, match=match):
        SparseNMF(**{"n_components": M, param: value}).fit(X)


def test_transform_checks_features(X):
    model = SparseNMF(M, random_state=0, tol=1e-3).fit(X)
    with pytest.raises(ValueError, match="X has 29 features, but SparseNMF is expecting 30"):
        model.transform(X[:, :29])


def test_get_set_params():
    model = SparseNMF(3, sparseness_components=0.7)
    params = model.get_params()
    assert params["n_components"] == 3 and params["sparseness_components"] == 0.7
    assert model.set_params(n_components=5) is model and model.n_components == 5


def test_not_converged_warns(X):
    with pytest.warns(ConvergenceWarning, match="max_iter=3 reached"):
        SparseNMF(M, max_iter=3, random_state=0).fit(X)


# --- without scikit-learn ----------------------------------------------------


def test_works_without_scikit_learn(tmp_path):
    """scikit-learn is optional: with it unimportable, the fallback base works."""

    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "sklearn" or name.startswith("sklearn."):
            raise ImportError("blocked for the test")
sys.meta_path.insert(0, Block())
import numpy as np
import nmfsc
from nmfsc._estimator_base import HAVE_SKLEARN
assert not HAVE_SKLEARN
X = np.abs(np.random.default_rng(0).standard_normal((20, 10)))
model = nmfsc.SparseNMF(3, random_state=0, tol=1e-3)
Z = model.fit_transform(X)
assert model.transform(X).shape == Z.shape == (20, 3)
assert model.set_params(n_components=2).get_params()["n_components"] == 2
model.fit(X)
assert list(model.get_feature_names_out()) == ["sparsenmf0", "sparsenmf1"]
assert model.score(X) < 0
assert nmfsc.SparseNMF(random_state=0).fit(X).n_components_ == 10
for call, msg in [
    (lambda: model.transform(X[:, :5]), "X has 5 features"),
    (lambda: model.fit(-X), "Negative values"),
]:
    try:
        call()
    except ValueError as err:
        assert msg in str(err), err
    else:
        raise AssertionError(msg)
print("ok")
"""
    root = str(Path(__file__).parents[1])
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
