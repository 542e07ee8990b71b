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
        (lambda X: sp.csr_matrix(np.where(np.isnan(X), np.nan, -X)), ValueError, "Negative"),
        (lambda X: sp.csr_matrix(np.full_like(X, np.nan)), ValueError, "every entry of X is NaN"),
    ],
)
def test_bad_input_with_missing_values(holes, make, error, match):
    with pytest.raises(error, match=match):
        model(missing_values=np.nan).fit(make(holes))


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_a_sparse_x_with_nan_is_fitted_as_its_dense_copy(holes, fmt):
    """Its stored NaN are missing, every other entry (unstored zeros included)
    observed, as in the dense X with the same NaN; X stays sparse."""
    dense = np.where(np.random.default_rng(4).random(holes.shape) < 0.4, 0.0, holes)
    sparse = sp.csr_matrix(dense).asformat(fmt)  # stores the NaN and the nonzeros
    a = model(missing_values=np.nan, sparseness_components=0.4).fit(sparse)
    b = model(missing_values=np.nan, sparseness_components=0.4).fit(dense)
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.transform(sparse), b.transform(dense), rtol=1e-8, atol=1e-12)


def test_the_command_line_fits_a_sparse_file_with_nan_as_its_dense_copy(holes, tmp_path, capsys):
    import json

    import scipy.io

    from nmfsc.cli import main

    dense = np.where(np.random.default_rng(5).random(holes.shape) < 0.4, 0.0, holes)
    scipy.io.mmwrite(tmp_path / "holes.mtx", sp.coo_matrix(dense))
    np.save(tmp_path / "holes.npy", dense)
    records = []
    for name in ("holes.mtx", "holes.npy"):
        out = tmp_path / f"{name}.npz"
        argv = ["fit", str(tmp_path / name), "-k", "3", "--sparseness-w", "0.5"]
        assert main([*argv, "--missing-values", "nan", "--no-progress", "--out", str(out)]) == 0
        with np.load(out) as saved:
            records.append(json.loads(str(saved["record"])))
    assert records[0]["n_iter"] == records[1]["n_iter"]
    assert records[0]["relative_error"] == pytest.approx(records[1]["relative_error"], rel=1e-9)


def test_missing_values_takes_only_nan(X):
    with pytest.raises(ValueError, match="missing_values must be None or np.nan"):
        model(missing_values=0).fit(X)


# --- issue 42, item 8b: infinity is not a missing value --------------------------


@pytest.mark.parametrize("call", ["compare", "nmf_sc", "nmf_euclidean", "SparseNMF", "no-option"])
def test_infinity_is_no_missing_value_and_the_option_given_is_not_advised(holes, call):
    """On 0.x, compare(missing_values=np.nan) and nmf_sc(mask=...) on data with an
    inf advised that very option (missing_values=np.nan, mask=)."""
    import nmfsc

    V = holes.T.copy()  # features x samples
    V[3, 5] = np.inf
    mask = ~np.isnan(V)
    given = {
        "compare": "missing_values=np.nan",
        "nmf_sc": "mask=",
        "nmf_euclidean": "mask=",
        "SparseNMF": "missing_values=np.nan",
        "no-option": "mask=",
    }[call]
    with pytest.raises(ValueError) as caught:
        if call == "compare":
            nmfsc.compare(V, 2, sparseness_w=0.5, seeds=(0,), progress=False, missing_values=np.nan)
        elif call in ("nmf_sc", "nmf_euclidean"):
            getattr(nmfsc, call)(V, 2, mask=mask, max_iter=2)
        elif call == "SparseNMF":
            model(missing_values=np.nan).fit(V.T)
        else:  # infinity alone, no option: nothing is missing, so nothing to advise for it
            nmfsc.nmf_sc(np.where(mask, V, 1.0), 2, max_iter=2)
    message = str(caught.value)
    assert "infinity is not a missing value" in message, message
    assert "replace or drop the infinite entries" in message and given not in message
    if call != "SparseNMF":  # the one inf, where it is (compare: not spread by its fill)
        assert "(1 non-finite entries, the first at row 3, column 5)" in message, message


def test_nan_at_an_observed_entry_of_the_mask_is_named_so(holes):
    """With mask= given, a NaN it marks observed needs the mask fixed, not 'pass mask='."""
    import nmfsc

    V = holes.T.copy()
    with pytest.raises(ValueError) as caught:
        nmfsc.nmf_sc(V, 2, mask=np.ones(V.shape, dtype=bool), max_iter=2)
    message = str(caught.value)
    assert "pass mask=" not in message and "NaN where mask is True" in message, message
