"""SparseNMF as a scikit-learn estimator: scikit-learn's own checks in the
default configuration (no expected failures), n_components=None, solver, the
custom start, float32 and sparse input, feature names and pandas output, score,
and model selection with GridSearchCV over a Pipeline."""

import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")

from scipy import sparse  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import MinMaxScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import nmfsc  # noqa: E402
from nmfsc import SparseNMF  # noqa: E402
from nmfsc._estimator_base import InitialObjectiveStop  # noqa: E402
from nmfsc.solvers.registry import variants  # noqa: E402


@pytest.fixture
def X():
    """40 samples x 30 features, non-negative."""
    return 5.0 * np.abs(np.random.default_rng(0).standard_normal((40, 30))) + 0.01


# scikit-learn's checks fit its own toy data (3 features, 40 samples, 60 % zeros)
# from unseeded starts. About one fit in 200 there leaves a sample's coefficients
# at the multiplicative update's fixed point 0, and nmfsc says so with a
# DegenerateFitWarning, which `filterwarnings = error` would turn into a failure
# of an API check that is not about fit quality (the warning's own tests are in
# test_degenerate_fits.py).
api_checks_ignore_degenerate = pytest.mark.filterwarnings("ignore::nmfsc.DegenerateFitWarning")


# The default configuration, and a sparse basis: every check, no expected failures.
@api_checks_ignore_degenerate
@parametrize_with_checks([SparseNMF(), SparseNMF(sparseness_components=0.5)])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# With sparseness_coefficients set, each column of transform's output is
# constrained across the samples passed together (the paper's s_H): a sample's
# coefficients depend on the others, one sample alone is refused, and the
# non-convex H step need not find the fit's own coefficients again. These
# checks test exactly those properties, so they fail by design in this
# (non-default) configuration.
COEFFICIENT_SPARSENESS_XFAIL = {
    "check_transformer_general": "transform(X) need not equal fit_transform(X) under s_H",
    "check_transformer_data_not_an_array": "transform(X) need not equal fit_transform(X)",
    "check_methods_sample_order_invariance": "coefficients depend on the other samples",
    "check_methods_subset_invariance": "one sample alone has no sparseness across samples",
}


@api_checks_ignore_degenerate
@parametrize_with_checks(
    [SparseNMF(sparseness_coefficients=0.5)],
    expected_failed_checks=lambda estimator: COEFFICIENT_SPARSENESS_XFAIL,
)
def test_sklearn_checks_with_coefficient_sparseness(estimator, check):
    check(estimator)


def test_n_components_none_is_all_features(X):
    model = SparseNMF(random_state=0).fit(X)
    assert model.n_components_ == X.shape[1] == model.components_.shape[0]
    assert model.result_.converged


def test_exact_factorization_converges(X):
    """n_components = n_features: E tends to 0, so the solver's relative test
    cannot fire; scikit-learn's test (relative to E_1) does, with no warning."""
    data = X[:, :4]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = SparseNMF(random_state=0).fit(data)
    assert model.result_.stop_reason == "tol" and model.n_iter_ < 10000
    assert model.reconstruction_err_ < 0.05 * np.linalg.norm(data)


def test_fit_is_nmf_sc_with_the_initial_objective_stop(X):
    model = SparseNMF(4, sparseness_components=0.6, random_state=3, tol=1e-4).fit(X)
    stop = InitialObjectiveStop(1e-4, 10)
    res = stop.relabel(
        nmfsc.nmf_sc(X.T, 4, sparseness_w=0.6, random_state=3, tol=1e-4, callback=stop)
    )
    np.testing.assert_array_equal(model.components_, res.W.T)
    np.testing.assert_array_equal(model.result_.objective, res.objective)
    assert model.result_.stop_reason == res.stop_reason
    # the test: |E[k-10] - E[k]| < tol * E[1] at the last iteration, not before
    E = res.objective
    k = res.n_iter
    assert abs(E[k - 10] - E[k]) < 1e-4 * E[1]
    assert all(abs(E[j - 10] - E[j]) >= 1e-4 * E[1] for j in range(11, k))


@pytest.mark.parametrize("solver", variants(nmfsc.nmf_sc))
def test_every_solver_is_accepted(X, solver):
    model = SparseNMF(3, solver=solver, random_state=0, tol=1e-4).fit(X)
    assert model.components_.shape == (3, X.shape[1])


@pytest.mark.parametrize("solver", ["fast", None, 3])
def test_unknown_solver_is_named(X, solver):
    with pytest.raises(ValueError, match=f"solver must be one of .*'hoyer'.*got {solver!r}"):
        SparseNMF(3, solver=solver).fit(X)


def test_custom_start_is_scikit_learns_w_and_h(X):
    rng = np.random.default_rng(1)
    W0 = rng.uniform(0.1, 1.0, (X.shape[0], 3))  # samples x components
    H0 = rng.uniform(0.1, 1.0, (3, X.shape[1]))  # components x features
    model = SparseNMF(3, init="custom", tol=1e-4).fit(X, W=W0, H=H0)
    stop = InitialObjectiveStop(1e-4, 10)
    res = nmfsc.nmf_sc(X.T, 3, init="custom", W_init=H0.T, H_init=W0.T, tol=1e-4, callback=stop)
    np.testing.assert_array_equal(model.components_, res.W.T)
    with pytest.raises(ValueError, match="init='custom' needs both W and H"):
        SparseNMF(3, init="custom").fit(X, W=W0)
    with pytest.raises(ValueError, match=r"H has shape \(2, 30\); .* must be \(3, 30\)"):
        SparseNMF(3, init="custom").fit(X, W=W0, H=H0[:2])
    with pytest.raises(ValueError, match="got init='random'. Set init='custom'"):
        SparseNMF(3).fit(X, W=W0, H=H0)


def test_float32_is_kept(X):
    X32 = X.astype(np.float32)
    model = SparseNMF(4, sparseness_components=0.5, random_state=0, tol=1e-4)
    Z = model.fit_transform(X32)
    assert Z.dtype == model.components_.dtype == np.float32
    assert model.transform(X32).dtype == np.float32
    assert model.inverse_transform(Z).dtype == np.float32


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_input_gives_the_dense_result(X, fmt):
    X = np.where(X > 3.0, X, 0.0)
    options = {"random_state": 0, "tol": 1e-4}
    dense = SparseNMF(4, **options).fit(X)
    model = SparseNMF(4, **options).fit(sparse.csr_matrix(X).asformat(fmt))
    np.testing.assert_allclose(model.components_, dense.components_, rtol=1e-9, atol=1e-12)
    assert model.reconstruction_err_ == pytest.approx(dense.reconstruction_err_, rel=1e-9)
    assert model.score(sparse.csr_matrix(X)) == pytest.approx(dense.score(X), rel=1e-9)


def test_feature_names_and_pandas_output(X):
    pd = pytest.importorskip("pandas")
    model = SparseNMF(3, random_state=0, tol=1e-4).fit(X)
    names = model.get_feature_names_out()
    assert list(names) == ["sparsenmf0", "sparsenmf1", "sparsenmf2"]
    frame = pd.DataFrame(X, columns=[f"pixel{i}" for i in range(X.shape[1])])
    out = SparseNMF(3, random_state=0, tol=1e-4).set_output(transform="pandas").fit(frame)
    Z = out.transform(frame)
    assert isinstance(Z, pd.DataFrame) and list(Z.columns) == list(names)
    assert list(out.feature_names_in_) == list(frame.columns)


def test_score_is_minus_the_reconstruction_error(X):
    model = SparseNMF(4, random_state=0, tol=1e-4).fit(X[:30])
    Z = model.transform(X[30:])
    expected = np.linalg.norm(X[30:] - Z @ model.components_)
    assert model.score(X[30:]) == pytest.approx(-expected, rel=1e-12)
    assert model.score(np.zeros((3, X.shape[1]))) == 0.0


def test_grid_search_over_sparseness_in_a_pipeline(X):
    """GridSearchCV with the default scorer (Pipeline.score is SparseNMF.score):
    the less constrained basis reconstructs held-out data better, and wins."""
    pipe = Pipeline(
        [("scale", MinMaxScaler(clip=True)), ("nmf", SparseNMF(4, random_state=0, tol=1e-4))]
    )
    grid = {"nmf__sparseness_components": [0.2, 0.9]}
    search = GridSearchCV(pipe, grid, cv=3).fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert [p["nmf__sparseness_components"] for p in search.cv_results_["params"]] == [0.2, 0.9]
    assert np.all(np.isfinite(scores)) and np.all(scores < 0)
    assert scores[0] > scores[1]
    assert search.best_params_ == {"nmf__sparseness_components": 0.2}
    assert search.best_estimator_.named_steps["nmf"].sparseness_components == 0.2
    best = search.best_estimator_.named_steps["nmf"]
    np.testing.assert_allclose(best.result_.sparseness_W, 0.2, atol=1e-9)


def test_grid_search_with_a_classifier_after_it():
    """Two classes made of different parts: the grid picks the setting with the
    best cross-validated accuracy, and cv_results_ records every candidate."""
    rng = np.random.default_rng(0)
    parts = np.zeros((4, 16))
    for i in range(4):
        parts[i, 4 * i : 4 * i + 4] = 1.0
    y = np.repeat([0, 1], 30)
    coef = rng.uniform(0.0, 1.0, (60, 4))
    coef[y == 0, 0] += 2.0  # class 0 uses part 0 more, class 1 part 3
    coef[y == 1, 3] += 2.0
    X = coef @ parts + 0.05 * rng.uniform(size=(60, 16))
    pipe = Pipeline(
        [("nmf", SparseNMF(4, random_state=0, tol=1e-4)), ("clf", LogisticRegression())]
    )
    grid = {"nmf__sparseness_components": [0.3, 0.7]}
    search = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    results = search.cv_results_
    assert len(results["params"]) == 2 and "mean_test_score" in results
    best = int(np.argmax(results["mean_test_score"]))
    assert search.best_params_ == results["params"][best]
    assert search.best_score_ == results["mean_test_score"][best] >= 0.9
