"""Sparse, float32 and memory-mapped data, the NNDSVD starts, and bad input
(issue 12). Sparse runs must follow the dense run on the same matrix to
rounding; float32 runs keep float32 factors with the constraints at float32
precision; a memory map and a sparse V are never copied or made dense."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import nmfsc
from nmfsc._validation import check_data

SOLVERS = {
    "nmf_sc_w": (nmfsc.nmf_sc, {"sparseness_w": 0.6}),
    "nmf_sc_h": (nmfsc.nmf_sc, {"sparseness_h": 0.6}),
    "nmf_sc_wh": (nmfsc.nmf_sc, {"sparseness_w": 0.4, "sparseness_h": 0.5}),
    "nmf_sc_none": (nmfsc.nmf_sc, {}),
    "nmf_euclidean": (nmfsc.nmf_euclidean, {}),
    "nmf_divergence": (nmfsc.nmf_divergence, {}),
    "local_nmf": (nmfsc.local_nmf, {}),
    "sparse_nmf": (nmfsc.sparse_nmf, {"alpha": 1.0}),
}
FORMATS = [sp.csr_matrix, sp.csc_matrix, sp.csr_array, sp.csc_array]
#: Objective histories of sparse and dense runs of the same matrix (100 iterations).
SPARSE_RTOL = 1e-10
#: float32 constraints: sparseness and unit norms of H's rows.
FLOAT32_ATOL = 1e-5


def quiet(solver, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        return solver(*args, **kwargs)


@pytest.fixture(scope="module")
def V():
    """30 x 40, about 35 % stored, with an all-zero row and column."""
    rng = np.random.default_rng(7)
    V = 2.5 * np.abs(rng.standard_normal((30, 40))) * (rng.random((30, 40)) < 0.35)
    V[4] = 0.0
    V[:, 9] = 0.0
    return V


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", list(SOLVERS))
def test_sparse_follows_dense(V, name, fmt):
    solver, kwargs = SOLVERS[name]
    dense = quiet(solver, V, 4, random_state=3, max_iter=100, tol=0, **kwargs)
    sparse = quiet(solver, fmt(V), 4, random_state=3, max_iter=100, tol=0, **kwargs)
    assert sparse.n_iter == dense.n_iter == 100
    assert np.all(np.isfinite(sparse.objective))
    np.testing.assert_allclose(sparse.objective, dense.objective, rtol=SPARSE_RTOL, atol=0)
    np.testing.assert_allclose(sparse.W, dense.W, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(sparse.H, dense.H, rtol=1e-7, atol=1e-12)
    assert sparse.relative_error == pytest.approx(dense.relative_error, rel=1e-10)
    assert sparse.scale == dense.scale


def test_sparse_input_is_not_modified_nor_copied_densely(V):
    S = sp.csr_array(V)
    data, indices = S.data.copy(), S.indices.copy()
    quiet(nmfsc.nmf_divergence, S, 3, random_state=0, max_iter=3)
    np.testing.assert_array_equal(S.data, data)
    np.testing.assert_array_equal(S.indices, indices)
    checked, _ = check_data(S)
    assert checked is S  # canonical CSR: used as it is


@pytest.mark.parametrize("name", ["nmf_sc_h", "nmf_euclidean", "nmf_divergence", "sparse_nmf"])
def test_sparse_run_forms_no_dense_matrix(name):
    """A 1500 x 2000 matrix (24 MB dense) with 0.5 % stored: the run's peak
    allocation stays far below one dense copy."""
    solver, kwargs = SOLVERS[name]
    S = sp.random(1500, 2000, density=0.005, format="csr", random_state=1) + 0.0
    quiet(solver, S, 5, random_state=0, max_iter=2, tol=0, **kwargs)  # compile first
    tracemalloc.start()
    try:
        result = quiet(solver, S, 5, random_state=0, max_iter=5, tol=0, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    dense_bytes = 1500 * 2000 * 8
    assert peak < 0.15 * dense_bytes, (peak, dense_bytes)
    assert np.isfinite(result.relative_error)


def test_sparse_estimator_follows_dense(V):
    X = V.T
    dense = nmfsc.SparseNMF(4, sparseness_coefficients=0.5, random_state=0, max_iter=60, tol=0)
    sparse = nmfsc.SparseNMF(4, sparseness_coefficients=0.5, random_state=0, max_iter=60, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        Zd = dense.fit_transform(X)
        Zs = sparse.fit_transform(sp.csr_matrix(X))
        Td = dense.transform(X[:12])
        Ts = sparse.transform(sp.csc_array(X[:12]))
    np.testing.assert_allclose(sparse.result_.objective, dense.result_.objective, rtol=SPARSE_RTOL)
    np.testing.assert_allclose(Zs, Zd, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(Ts, Td, rtol=1e-5, atol=1e-9)
    assert sparse.reconstruction_err_ == pytest.approx(dense.reconstruction_err_, rel=1e-9)


def test_sparse_checkpoint_resume_is_bit_identical(V, tmp_path):
    S = sp.csc_matrix(V)
    path = tmp_path / "run.npz"
    options = {"sparseness_w": 0.5, "random_state": 0, "tol": 0}
    quiet(nmfsc.nmf_sc, S, 3, max_iter=20, checkpoint=path, **options)
    more = quiet(nmfsc.nmf_sc, S, 3, max_iter=40, checkpoint=path, resume=True, **options)
    straight = quiet(nmfsc.nmf_sc, S, 3, max_iter=40, **options)
    np.testing.assert_array_equal(more.W, straight.W)
    np.testing.assert_array_equal(more.objective, straight.objective)
    with pytest.raises(nmfsc.CheckpointMismatchError, match="data V"):
        quiet(nmfsc.nmf_sc, S * 2.0, 3, max_iter=40, checkpoint=path, resume=True, **options)


# --- float32 -------------------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", list(SOLVERS))
def test_float32_keeps_float32_and_follows_float64(V, name, sparse):
    solver, kwargs = SOLVERS[name]
    V32 = (V + 0.01 * (name in ("nmf_divergence",))).astype(np.float32)
    data = sp.csr_matrix(V32) if sparse else V32
    r32 = quiet(solver, data, 4, random_state=1, max_iter=40, tol=0, **kwargs)
    r64 = quiet(solver, V32.astype(np.float64), 4, random_state=1, max_iter=40, tol=0, **kwargs)
    assert r32.W.dtype == r32.H.dtype == np.float32
    assert r32.objective.dtype == np.float64
    np.testing.assert_allclose(r32.objective, r64.objective, rtol=2e-4)
    if "sparseness_w" in kwargs:
        np.testing.assert_allclose(r32.sparseness_W, kwargs["sparseness_w"], atol=FLOAT32_ATOL)
    if "sparseness_h" in kwargs:
        np.testing.assert_allclose(r32.sparseness_H, kwargs["sparseness_h"], atol=FLOAT32_ATOL)
        norms = np.linalg.norm(r32.H.astype(np.float64), axis=1)
        np.testing.assert_allclose(norms, 1.0, atol=FLOAT32_ATOL)


def test_float32_estimator(V):
    model = nmfsc.SparseNMF(3, sparseness_components=0.5, random_state=0, max_iter=30, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        Z = model.fit_transform(V.T.astype(np.float32))
        Z_new = model.transform(V.T[:5].astype(np.float32))
    assert Z.dtype == model.components_.dtype == Z_new.dtype == np.float32
    np.testing.assert_allclose(model.result_.sparseness_W, 0.5, atol=FLOAT32_ATOL)


# --- init ------------------------------------------------------------------------


@pytest.mark.parametrize("init", ["nndsvd", "nndsvda", "nndsvdar"])
@pytest.mark.parametrize("name", list(SOLVERS))
def test_every_init_on_every_solver(V, name, init):
    solver, kwargs = SOLVERS[name]
    data = V + 0.01  # positive: nndsvd's zeros would make the divergence infinite
    result = quiet(solver, data, 4, init=init, random_state=0, max_iter=20, tol=0, **kwargs)
    assert np.all(np.isfinite(result.objective)) or init == "nndsvd"
    assert np.all(result.W >= 0) and np.all(result.H >= 0)
    if "sparseness_w" in kwargs:  # the start is projected, as the random one
        np.testing.assert_allclose(result.sparseness_W, kwargs["sparseness_w"], atol=1e-9)
    if "sparseness_h" in kwargs:
        np.testing.assert_allclose(result.sparseness_H, kwargs["sparseness_h"], atol=1e-9)


def test_nndsvd_matches_scikit_learn_transposed():
    """On an exactly rank-4 V (max 1, so no rescaling) both SVDs are exact."""
    nmf_module = pytest.importorskip("sklearn.decomposition._nmf")
    rng = np.random.default_rng(0)
    V = np.abs(rng.standard_normal((25, 4))) @ np.abs(rng.standard_normal((4, 35)))
    V /= V.max()
    for init in ["nndsvd", "nndsvda"]:
        start = quiet(nmfsc.nmf_euclidean, V, 4, init=init, max_iter=0)
        W_sk, H_sk = nmf_module._initialize_nmf(V.T, 4, init=init, random_state=0)
        np.testing.assert_allclose(start.W, H_sk.T, atol=1e-8)
        np.testing.assert_allclose(start.H, W_sk.T, atol=1e-8)


def test_nndsvd_of_sparse_data_uses_the_randomized_svd(V):
    exact = quiet(nmfsc.nmf_euclidean, V, 3, init="nndsvda", max_iter=0)
    S = sp.csr_matrix(V)
    randomized = quiet(nmfsc.nmf_euclidean, S, 3, init="nndsvda", random_state=0, max_iter=0)
    # the leading triplets of this small matrix are found to a few digits
    assert randomized.objective[0] == pytest.approx(exact.objective[0], rel=1e-3)


def test_init_custom_and_bad_init(V):
    W0, H0 = np.full((30, 3), 0.5), np.full((3, 40), 0.5)
    custom = quiet(nmfsc.nmf_euclidean, V, 3, init="custom", W_init=W0, H_init=H0, max_iter=2)
    plain = quiet(nmfsc.nmf_euclidean, V, 3, W_init=W0, H_init=H0, max_iter=2)
    np.testing.assert_array_equal(custom.W, plain.W)
    with pytest.raises(ValueError, match="init='custom' needs both W_init and H_init"):
        nmfsc.nmf_sc(V, 3, init="custom", W_init=W0)
    with pytest.raises(ValueError, match="init must be one of 'random', 'nndsvd'"):
        nmfsc.nmf_sc(V, 3, init="svd")
    with pytest.raises(ValueError, match=r"init='nndsvd' needs n_components <= min\(N, T\) = 30"):
        nmfsc.nmf_sc(V, 31, init="nndsvd")
    model = nmfsc.SparseNMF(3, init="nndsvda", random_state=0, max_iter=5, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        model.fit(V.T)
    assert model.result_.n_iter == 5


# --- memory maps -------------------------------------------------------------------


def test_memmap_is_used_without_a_copy(tmp_path):
    rng = np.random.default_rng(2)
    V = np.abs(rng.standard_normal((400, 3000)))  # 9.6 MB
    np.save(tmp_path / "V.npy", V)
    mapped = np.load(tmp_path / "V.npy", mmap_mode="r")
    checked, scale = check_data(mapped)
    assert checked is mapped and scale == V.max()
    dense = quiet(nmfsc.nmf_sc, V, 3, sparseness_w=0.5, random_state=0, max_iter=5, tol=0)
    quiet(nmfsc.nmf_sc, mapped, 3, sparseness_w=0.5, random_state=0, max_iter=1, tol=0)
    tracemalloc.start()
    try:
        result = quiet(nmfsc.nmf_sc, mapped, 3, sparseness_w=0.5, random_state=0, max_iter=5, tol=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.25 * V.nbytes, (peak, V.nbytes)
    np.testing.assert_allclose(result.objective, dense.objective, rtol=1e-10)
    for solver in (nmfsc.nmf_euclidean, nmfsc.nmf_divergence):
        a = quiet(solver, mapped, 3, random_state=0, max_iter=5, tol=0)
        b = quiet(solver, V, 3, random_state=0, max_iter=5, tol=0)
        np.testing.assert_allclose(a.objective, b.objective, rtol=1e-10)


# --- bad input -----------------------------------------------------------------------


def _with_stored(values):
    S = sp.csr_matrix(np.ones((4, 5)))
    S.data[:] = values
    return S


BAD_SPARSE = [
    (
        _with_stored([1.0] * 7 + [-1.0, 2.0, -3.0] + [1.0] * 10),
        r"V has negative entries; NMF needs V >= 0 \(2 negative stored values, the first at "
        r"row 1, column 2; min\(V\) = -3.0\)",
    ),
    (
        _with_stored([1.0] * 11 + [np.nan] + [1.0] * 8),
        r"V contains NaN or infinity \(1 non-finite stored values, the first at row 2, column 1\)",
    ),
    (
        _with_stored([1.0] * 3 + [np.inf] * 2 + [1.0] * 15),
        r"V contains NaN or infinity \(2 non-finite stored values, the first at row 0, column 3\)",
    ),
    (sp.csr_matrix((0, 5)), r"V is empty \(shape \(0, 5\)\)"),
    (sp.csc_array((3, 4)), r"V is all zeros \(shape \(3, 4\)\)"),
    (_with_stored(0.0), r"V is all zeros"),
]


@pytest.mark.parametrize(("bad", "match"), BAD_SPARSE)
@pytest.mark.parametrize("name", ["nmf_sc_w", "nmf_euclidean", "nmf_divergence", "local_nmf"])
def test_bad_sparse_data(name, bad, match):
    solver, kwargs = SOLVERS[name]
    with pytest.raises(ValueError, match=match):
        solver(bad, 2, **kwargs)


def test_bad_sparse_csc_names_the_position():
    S = sp.csc_matrix(np.ones((4, 5)))
    S.data[6] = -2.0  # column 1, row 2
    with pytest.raises(ValueError, match="the first at row 2, column 1"):
        nmfsc.nmf_sc(S, 2)


def test_bad_dense_data_names_the_position():
    V = np.ones((4, 5))
    V[2, 3] = -1.0
    V[3, 0] = -1.0
    with pytest.raises(ValueError, match=r"2 negative entries, the first at row 2, column 3"):
        nmfsc.nmf_sc(V, 2)
    V[1, 1] = np.nan
    with pytest.raises(ValueError, match=r"1 non-finite entries, the first at row 1, column 1"):
        nmfsc.nmf_euclidean(V, 2)


def test_other_sparse_formats_and_dtypes_are_converted(V):
    reference = quiet(nmfsc.nmf_euclidean, V, 3, random_state=0, max_iter=10)
    for data in (sp.coo_matrix(V), sp.lil_array(V), sp.csr_matrix(V).astype(np.int64)):
        expected = reference
        if data.dtype == np.int64:
            V_int = V.astype(np.int64)
            expected = quiet(nmfsc.nmf_euclidean, V_int, 3, random_state=0, max_iter=10)
        result = quiet(nmfsc.nmf_euclidean, data, 3, random_state=0, max_iter=10)
        assert result.W.dtype == np.float64
        np.testing.assert_allclose(result.objective, expected.objective, rtol=1e-10)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_zero_rows_and_columns_give_no_nan(V, name):
    solver, kwargs = SOLVERS[name]
    for data in (V, sp.csr_matrix(V)):
        result = quiet(solver, data, 3, random_state=0, max_iter=30, tol=0, **kwargs)
        assert np.all(np.isfinite(result.W)) and np.all(np.isfinite(result.H))
        assert np.all(np.isfinite(result.objective))
        assert np.isfinite(result.relative_error)


@pytest.mark.parametrize("kind", ["csr", "csc", "memmap"])
def test_blocked_products_follow_dense(V, kind, monkeypatch, tmp_path):
    """Tiny blocks, so that the blocked V H^T of the W update and the blocked
    exact objective (taken on an exactly rank-2 V, whose objective falls below
    1e-4 ||V||^2) run over many blocks."""
    from nmfsc.solvers import _data

    monkeypatch.setattr(_data, "BLOCK_ENTRIES", 64)
    rng = np.random.default_rng(5)
    low_rank = np.abs(rng.standard_normal((30, 2))) @ np.abs(rng.standard_normal((2, 40)))
    for data in (V, low_rank):
        if kind == "memmap":
            np.save(tmp_path / "V.npy", data)
            given = np.load(tmp_path / "V.npy", mmap_mode="r")
        else:
            given = sp.csr_matrix(data) if kind == "csr" else sp.csc_matrix(data)
        for solver, kwargs in [
            (nmfsc.nmf_euclidean, {}),
            (nmfsc.nmf_sc, {"sparseness_h": 0.3}),
            (nmfsc.nmf_sc, {"sparseness_w": 0.3}),  # H V^T of the projected W step
        ]:
            # nmf_sc on the exact fit reaches its step-size floor (stop "step_size")
            # at an iteration that rounding decides: compare before it
            iters = 60 if kwargs and data is low_rank else 200
            a = quiet(solver, given, 2, random_state=0, max_iter=iters, tol=0, **kwargs)
            b = quiet(solver, data, 2, random_state=0, max_iter=iters, tol=0, **kwargs)
            assert a.n_iter == b.n_iter == iters
            np.testing.assert_allclose(
                a.objective, b.objective, rtol=1e-8, atol=1e-14 * b.objective[0]
            )
            assert a.relative_error == pytest.approx(b.relative_error, rel=1e-6, abs=1e-9)
