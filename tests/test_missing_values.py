"""SparseNMF(missing_values=np.nan): NaN entries of X are missing (issue 34)."""

import numpy as np
import pytest
import scipy.sparse as sp

from nmfsc import SparseNMF
from nmfsc.solvers.coefficients import fit_coefficients

pytestmark = pytest.mark.filterwarnings("ignore::nmfsc.ConvergenceWarning")


@pytest.fixture
def X():
    rng = np.random.default_rng(1)
    return rng.random((30, 4)) @ rng.random((4, 20))


@pytest.fixture
def holes(X):
    out = X.copy()
    out[np.random.default_rng(2).random(X.shape) < 0.2] = np.nan
    return out


def model(**kw):
    kw = {"n_components": 4, "random_state": 0, "tol": 1e-6, "max_iter": 1000, **kw}
    return SparseNMF(**kw)


def test_nan_is_still_an_error_by_default(holes):
    """An error that names the option for missing entries (scikit-learn's own
    message points to other estimators)."""
    with pytest.raises(ValueError, match=r"contains NaN .* missing_values=np.nan"):
        model().fit(holes)


def test_the_solvers_error_for_nan_names_the_mask(holes):
    import nmfsc

    with pytest.raises(ValueError, match=r"NMF needs finite V \(for missing entries, pass mask="):
        nmfsc.nmf_sc(holes, 4, sparseness_w=0.5)


def test_fit_uses_the_observed_entries_only(holes):
    est = model(missing_values=np.nan, sparseness_components=0.3)
    Z = est.fit_transform(holes)
    mask = ~np.isnan(holes)
    assert np.all(np.isfinite(Z)) and np.all(np.isfinite(est.components_))
    residual = np.where(mask, holes - Z @ est.components_, 0.0)
    assert est.reconstruction_err_ == pytest.approx(np.linalg.norm(residual), rel=1e-9)
    assert est.result_.objective[-1] == pytest.approx(0.5 * np.sum(residual**2), rel=1e-9)


def test_the_fit_predicts_the_missing_entries(X, holes):
    """Low-rank X with 20 % missing: the held-out entries are recovered."""
    est = model(missing_values=np.nan)
    Z = est.fit_transform(holes)
    missing = np.isnan(holes)
    guess = (Z @ est.components_)[missing]
    assert np.linalg.norm(guess - X[missing]) < 0.05 * np.linalg.norm(X[missing])


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_without_nan_the_unmasked_fit_is_unchanged(X, sparse):
    X = sp.csr_matrix(X) if sparse else X
    a = model(missing_values=np.nan, sparseness_components=0.4).fit(X)
    b = model(sparseness_components=0.4).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)


def test_transform_and_score_use_the_observed_entries(X, holes):
    est = model(missing_values=np.nan).fit(holes)
    Z = est.transform(holes)
    mask = ~np.isnan(holes)
    expected = fit_coefficients(
        np.where(mask, holes, 0).T,
        est.components_.T,
        mask=mask.T,
        random_state=0,
        tol=0.0,
        max_iter=50,
    )
    assert Z.shape == (30, 4) and np.all(np.isfinite(Z))
    residual = np.where(mask, holes - Z @ est.components_, 0.0)
    assert est.score(holes) == pytest.approx(-np.linalg.norm(residual), rel=1e-6)
    assert np.linalg.norm(residual) < 0.05 * np.linalg.norm(np.where(mask, holes, 0))
    assert np.all(np.isfinite(expected.H))


def test_masked_coefficients_ignore_the_missing_entries(X, holes):
    W = np.random.default_rng(3).random((20, 4))
    mask = ~np.isnan(holes).T
    a = fit_coefficients(holes.T, W, mask=mask, random_state=0, tol=0.0, max_iter=30)
    noisy = np.where(mask, holes.T, 1e3)
    b = fit_coefficients(noisy, W, mask=mask, random_state=0, tol=0.0, max_iter=30)
    np.testing.assert_array_equal(a.H, b.H)
    assert np.all(np.diff(a.objective) <= 1e-12 * a.objective[0])


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda X: np.full_like(X, np.nan), ValueError, "every entry of X is NaN"),
        (lambda X: np.where(np.isnan(X), np.nan, -X), ValueError, "Negative values"),
        (lambda X: sp.csr_matrix(X), TypeError, "need dense data"),  # it stores the NaN
    ],
)
def test_bad_input_with_missing_values(holes, make, error, match):
    with pytest.raises(error, match=match):
        model(missing_values=np.nan).fit(make(holes))


def test_missing_values_takes_only_nan(X):
    with pytest.raises(ValueError, match="missing_values must be None or np.nan"):
        model(missing_values=0).fit(X)
