"""Scale safety (issue 13, item 1): every solver and the estimator give the
same factors, up to the data's scale, and the same relative error for c V as
for V, for max(c V) from 1e-300 to 1e300 and for subnormal data.

The solvers work on V / max(V), so the normalised problem is the same for
every c up to the rounding of c V / max(c V); over 60 iterations that rounding
stays far below the tolerances below. What used to go wrong (the reproducers of
the audit): the objective history in V's units underflowed to zeros at small c,
so the stopping rule stopped at once with relative error NaN; at large c it
overflowed (a bare OverflowError for the Euclidean solvers, NaN relative errors
for the divergence ones).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nmfsc
import nmfsc.datasets
from nmfsc.solvers._loop import objective_factor

V = np.abs(np.random.default_rng(0).standard_normal((12, 15)))

SOLVERS = {
    "nmf_sc sW": (nmfsc.nmf_sc, {"sparseness_w": 0.6}),
    "nmf_sc sH": (nmfsc.nmf_sc, {"sparseness_h": 0.6}),
    "nmf_sc both": (nmfsc.nmf_sc, {"sparseness_w": 0.5, "sparseness_h": 0.5}),
    "nmf_euclidean": (nmfsc.nmf_euclidean, {}),
    "nmf_divergence": (nmfsc.nmf_divergence, {}),
    "local_nmf": (nmfsc.local_nmf, {}),
    "sparse_nmf": (nmfsc.sparse_nmf, {}),
}

#: max(c V) / max(V) over the whole float64 range, both ends included.
SCALES = [1e-300, 1e-200, 1e-150, 1e-100, 1e-10, 1e10, 1e100, 1e150, 1e200, 1e300]


def run(solver, kwargs, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        return solver(data, 3, random_state=0, max_iter=60, **kwargs)


@pytest.fixture(scope="module")
def unscaled():
    return {name: run(solver, kwargs, V) for name, (solver, kwargs) in SOLVERS.items()}


@pytest.mark.parametrize("c", SCALES)
@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_scaled_data_give_the_same_factors_and_relative_error(unscaled, name, c):
    solver, kwargs = SOLVERS[name]
    ref = unscaled[name]
    res = run(solver, kwargs, V * c)
    assert res.stop_reason == ref.stop_reason and res.n_iter == ref.n_iter
    assert np.isfinite(res.relative_error)
    np.testing.assert_allclose(res.relative_error, ref.relative_error, rtol=1e-9)
    np.testing.assert_allclose(res.H, ref.H, rtol=1e-7, atol=1e-12)
    # W in V's units: c times the unscaled W (entries far below max(c V) may be
    # subnormal at c = 1e-300, so compare them relative to the largest)
    np.testing.assert_allclose(res.W / c, ref.W, rtol=1e-7, atol=1e-9 * ref.W.max())
    assert np.isfinite(res.objective).all() and (res.objective != 0).all()


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_the_objective_is_reported_in_the_units_that_can_hold_it(unscaled, name):
    solver, kwargs = SOLVERS[name]
    ref = unscaled[name]
    assert ref.objective_units == "V"
    power = 2 if ref.solver in ("nmf_sc", "nmf_euclidean") else 1
    for c in (1e-40, 1e40):  # c**power within 1e+-150: V's units, scaled exactly so
        res = run(solver, kwargs, V * c)
        assert res.objective_units == "V"
        np.testing.assert_allclose(res.objective, ref.objective * c**power, rtol=1e-9)
    for c in (1e-300, 1e300):  # otherwise V / max(V)'s: the unscaled one / scale**power
        res = run(solver, kwargs, V * c)
        assert res.objective_units == "V / scale"
        np.testing.assert_allclose(res.objective, ref.objective / ref.scale**power, rtol=1e-9)


def test_subnormal_data_give_the_same_answer_to_their_precision(unscaled):
    # max(c V) ~ 1e-310: the data keep only ~14 significant bits of V
    for name in ("nmf_sc sW", "nmf_euclidean", "nmf_divergence"):
        solver, kwargs = SOLVERS[name]
        res = run(solver, kwargs, V * 1e-310)
        np.testing.assert_allclose(res.relative_error, unscaled[name].relative_error, rtol=1e-3)
        np.testing.assert_allclose(res.H, unscaled[name].H, rtol=1e-2, atol=1e-3)


def test_the_audit_reproducers():
    # nmf_sc(V * 1e-300) stopped at iteration 10 by "tol" on an all-zero history
    res = nmfsc.nmf_sc(V * 1e-300, 3, sparseness_w=0.6, random_state=0)
    ref = nmfsc.nmf_sc(V, 3, sparseness_w=0.6, random_state=0)
    assert res.n_iter == ref.n_iter > 10 and res.stop_reason == "tol"
    assert np.isfinite(res.relative_error)
    # nmf_sc(V * 1e300) raised a bare OverflowError
    res = nmfsc.nmf_sc(V * 1e300, 3, random_state=0)
    assert np.isfinite(res.relative_error) and np.isfinite(res.W).all()


def fit_estimator(X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        est = nmfsc.SparseNMF(3, sparseness_components=0.6, random_state=0, max_iter=60)
        return est, est.fit_transform(X), est.transform(X)


@pytest.mark.parametrize("c", [1e-300, 1e-100, 1e100, 1e300])
def test_the_estimator_is_scale_safe(c):
    ref, ref_Z, ref_codes = fit_estimator(V.T)
    est, Z, codes = fit_estimator((V * c).T)
    np.testing.assert_allclose(Z, ref_Z, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(codes, ref_codes, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(est.components_ / c, ref.components_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(est.reconstruction_err_ / c, ref.reconstruction_err_, rtol=1e-9)


def test_factors_that_overflow_in_the_data_units_raise_clearly():
    with pytest.raises(FloatingPointError, match="overflows float64"):
        nmfsc.nmf_sc(V / V.max() * 1.7e308, 3, sparseness_h=0.6, random_state=0, max_iter=5)


def test_the_float32_overflow_message_names_float32():
    """Issue 30, point 8: the message said "float64" for float32 data."""
    big = (V / V.max() * 3.4e38).astype(np.float32)
    with pytest.raises(FloatingPointError, match="overflows float32"):
        nmfsc.nmf_sc(big, 3, sparseness_h=0.6, random_state=0, max_iter=5)


def test_objective_factor_keeps_the_usual_scales_in_the_data_units():
    assert objective_factor(0.6, 2) == (0.36, "V")
    assert objective_factor(1e75, 2) == (1e75**2, "V")
    assert objective_factor(1e76, 2) == (1.0, "V / scale")
    assert objective_factor(1e-151, 1) == (1.0, "V / scale")


@pytest.mark.parametrize("c", [1e-300, 1e-200, 1e100, 1e200, 1e300])
def test_transform_of_scaled_data_gives_scaled_codes(c):
    """The audit: transform(X * 1e-300) gave all-NaN codes, X * 1e100 all zeros."""
    est, _, codes = fit_estimator(V.T)
    np.testing.assert_allclose(est.transform(V.T * c) / c, codes, rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("c", [1e-300, 1e-200, 1e200, 1e300])
def test_part_recovery_is_scale_free(c):
    W, parts = V[:, :3], V[:, 3:6]
    ref = nmfsc.datasets.part_recovery(W, parts)
    assert nmfsc.datasets.part_recovery(W * c, parts) == pytest.approx(ref, rel=1e-12)
    assert nmfsc.datasets.part_recovery(W, parts * c) == pytest.approx(ref, rel=1e-12)


# --- issue 30, points 1 and 2: sparse, memory-mapped and Dask V at every scale ---------
#: The out-of-core paths squared V (or multiplied it by the factors) before dividing
#: by the scale: at 1e160 ||V||^2 overflowed (a "perfect fit", relative error 0), at
#: 1e-170 it underflowed (a ZeroDivisionError), at 1e300 W^T V overflowed.
KIND_SCALES = [1e-300, 1e-170, 1e-162, 1e160, 1e300]
KIND_SOLVERS = {
    "nmf_sc sH": (nmfsc.nmf_sc, {"sparseness_h": 0.6}),
    "nmf_sc sW": (nmfsc.nmf_sc, {"sparseness_w": 0.6}),
    "nmf_sc accelerated": (nmfsc.nmf_sc, {"sparseness_h": 0.6, "solver": "accelerated"}),
    "nmf_euclidean": (nmfsc.nmf_euclidean, {}),
}


def as_kind(data, kind, tmp_path):
    import scipy.sparse as sp

    if kind == "csr":
        return sp.csr_matrix(data)
    if kind == "csc":
        return sp.csc_matrix(data)
    if kind == "memmap":
        path = tmp_path / f"V{data.dtype}.npy"
        np.save(path, data)
        return np.load(path, mmap_mode="r")
    da = pytest.importorskip("dask.array")
    return da.from_array(data, chunks=(data.shape[0], 5))


def run_plain(solver, kwargs, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        return solver(data, 3, random_state=0, max_iter=40, **kwargs)


@pytest.mark.parametrize("c", KIND_SCALES)
@pytest.mark.parametrize("kind", ["csr", "csc", "memmap", "dask"])
@pytest.mark.parametrize("name", sorted(KIND_SOLVERS))
def test_every_kind_of_data_gives_the_dense_answer_at_every_scale(name, kind, c, tmp_path):
    solver, kwargs = KIND_SOLVERS[name]
    if kind == "dask" and kwargs.get("solver") == "accelerated":
        pytest.skip("the accelerated solver does not run on Dask arrays")
    data = V + 0.05
    dense = run_plain(solver, kwargs, data * c)
    res = run_plain(solver, kwargs, as_kind(data * c, kind, tmp_path))
    assert np.isfinite(res.relative_error) and res.relative_error > 0.1
    np.testing.assert_allclose(res.relative_error, dense.relative_error, rtol=1e-6)
    assert res.n_iter == dense.n_iter


@pytest.mark.parametrize("kind", ["csr", "memmap", "dask"])
@pytest.mark.parametrize("name", sorted(KIND_SOLVERS))
def test_float32_data_near_the_float32_maximum(name, kind, tmp_path):
    """Issue 30, point 2: sparse float32 V * 2**125 made 0 iterations and reported
    relative error 1.27 (dense: 0.41); the accelerated solver at 9e37 ended at 0.70."""
    solver, kwargs = KIND_SOLVERS[name]
    if kind == "dask" and kwargs.get("solver") == "accelerated":
        pytest.skip("the accelerated solver does not run on Dask arrays")
    data = V + 0.05
    for big in (data * 2.0**125, data / data.max() * 9e37):
        big = big.astype(np.float32)
        dense = run_plain(solver, kwargs, big)
        res = run_plain(solver, kwargs, as_kind(big, kind, tmp_path))
        # float32 rounding may move the "tol" stop by an iteration
        assert res.n_iter >= dense.n_iter - 2 and res.n_iter > 5
        np.testing.assert_allclose(res.relative_error, dense.relative_error, rtol=1e-3)


@pytest.mark.parametrize("c", [1e-300, 1e-170, 1e160, 1e300])
def test_the_estimator_reconstruction_error_of_sparse_data_is_scale_safe(c):
    import scipy.sparse as sp

    ref, _, _ = fit_estimator((V + 0.05).T)
    est, _, _ = fit_estimator(sp.csr_matrix((V + 0.05).T * c))
    np.testing.assert_allclose(est.reconstruction_err_ / c, ref.reconstruction_err_, rtol=1e-6)


def test_nmfsc_fit_of_a_large_scale_mtx_reports_the_dense_error(tmp_path, capsys):
    """Issue 30, point 1: ``nmfsc fit big.mtx`` exited 0 with "relative error 0"."""
    import json

    import scipy.io
    import scipy.sparse as sp

    from nmfsc.cli import main

    data = V + 0.05
    scipy.io.mmwrite(tmp_path / "big.mtx", sp.coo_matrix(data * 1e160), precision=17)
    argv = [
        "fit",
        str(tmp_path / "big.mtx"),
        "-k",
        "3",
        "--sparseness-h",
        "0.6",
        "--max-iter",
        "40",
        "--no-progress",
        "--out",
        str(tmp_path / "o.npz"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        assert main(argv) == 0
    record = json.loads(str(np.load(tmp_path / "o.npz")["record"]))
    dense = run_plain(nmfsc.nmf_sc, {"sparseness_h": 0.6}, data * 1e160)
    assert record["relative_error"] == pytest.approx(dense.relative_error, rel=1e-6)
