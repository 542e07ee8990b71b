"""nmf_sc(solver="accelerated", mask=...): block coordinate descent on the
observed entries (issue 34)."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

import nmfsc
from nmfsc import ConvergenceWarning, SparseNMF
from nmfsc.cli import main
from nmfsc.projection import project
from nmfsc.solvers import masked_accelerated as ma
from nmfsc.solvers.accelerated import SWEEP_DELTA, SWEEPS_MAX
from nmfsc.sparseness import l1_for_sparseness, sparseness

M = 3
CONSTRAINTS = [
    {},
    {"sparseness_w": 0.6},
    {"sparseness_h": 0.6},
    {"sparseness_w": 0.5, "sparseness_h": 0.7},
]


@pytest.fixture
def V():
    return np.abs(np.random.default_rng(5).standard_normal((24, 18)))


@pytest.fixture
def mask(V):
    return np.random.default_rng(6).random(V.shape) > 0.3


def fit(V, **kw):
    kw = {"random_state": 0, "tol": 0.0, "max_iter": 30, "solver": "accelerated", **kw}
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        return nmfsc.nmf_sc(V, M, **kw)


# --- the full-mask identity -----------------------------------------------------
@pytest.mark.parametrize("params", CONSTRAINTS)
def test_a_full_mask_gives_the_unmasked_accelerated_histories(V, params):
    full = np.ones(V.shape, dtype=bool)
    masked = fit(V, mask=full, **params)
    plain = fit(V, **params)
    np.testing.assert_allclose(masked.objective, plain.objective, rtol=1e-12, atol=0)
    # the iterates agree to rounding, amplified over 30 iterations
    np.testing.assert_allclose(masked.W @ masked.H, plain.W @ plain.H, rtol=1e-5)


def test_the_identity_check_can_fail(V):
    """A full mask with the paper's solver does not give the accelerated histories."""
    full = np.ones(V.shape, dtype=bool)
    hoyer = fit(V, mask=full, sparseness_w=0.6, solver="hoyer")
    plain = fit(V, sparseness_w=0.6)
    assert not np.allclose(hoyer.objective, plain.objective, rtol=1e-12, atol=0)


# --- monotone, constraints held every iteration -----------------------------------
def constraint_check(params, seen):
    """A callback asserting the constraints of ``params`` at every iterate,
    recording the iterations it saw in ``seen``."""

    def check(state):
        seen.append(state.iteration)
        if "sparseness_w" in params:
            np.testing.assert_allclose(
                sparseness(state.W, axis=0), params["sparseness_w"], atol=1e-9
            )
        if "sparseness_h" in params:
            np.testing.assert_allclose(
                sparseness(state.H, axis=1), params["sparseness_h"], atol=1e-9
            )
            np.testing.assert_allclose(np.linalg.norm(state.H, axis=1), 1.0, atol=1e-9)

    return check


@pytest.mark.parametrize("params", CONSTRAINTS)
def test_masked_histories_fall_and_the_constraints_hold_every_iteration(V, mask, params):
    seen = []
    result = fit(V, mask=mask, max_iter=100, callback=constraint_check(params, seen), **params)
    assert seen == list(range(1, 101))
    steps = np.diff(result.objective)
    assert np.all(steps <= 1e-12 * result.objective[0])
    assert result.objective[-1] < 0.5 * result.objective[0]
    residual = mask * (V - result.W @ result.H)
    assert result.objective[-1] == pytest.approx(0.5 * np.sum(residual**2), rel=1e-9)
    assert result.relative_error == pytest.approx(
        np.linalg.norm(residual) / np.linalg.norm(mask * V), rel=1e-9
    )


# --- a plain NumPy implementation of the update -------------------------------------
def reference(V, mask, seed, iterations, s_w=None, s_h=None):
    """Masked block coordinate descent, written out: V / max observed, nmf_sc's
    start; per factor two sweeps (the masked rule, K = 1 + 1 * 1) with a hidden
    entry, the unmasked solver's number with none; per row the
    weights d, the vector b from the full residual, masked HALS or majorised
    projected steps (at most INNER_STEPS), a row kept when f_k would rise."""
    N, T = V.shape
    Om = mask.astype(float)
    X = np.where(mask, V, 0.0)
    X = X / X.max()
    rng = np.random.default_rng(seed)
    W = np.abs(rng.standard_normal((N, M)))
    H = np.abs(rng.standard_normal((M, T)))
    H = H / np.linalg.norm(H, axis=1, keepdims=True)
    l1_w = l1_for_sparseness(s_w, N) if s_w is not None else None
    l1_h = l1_for_sparseness(s_h, T) if s_h is not None else None
    if s_w is not None:
        W = np.column_stack([project(W[:, i], l1_w, 1.0) for i in range(M)])
    if s_h is not None:
        H = np.vstack([project(H[i], l1_h, 1.0) for i in range(M)])

    def E(W, H):
        return 0.5 * np.sum((Om * (X - W @ H)) ** 2)

    def row_update(x, d, b, l1, scaled):
        def f(y):
            return 0.5 * np.sum(d * y * y) - b @ y

        if l1 is None:
            return np.where(d > 0, np.maximum(b / np.where(d > 0, d, 1.0), 0.0), x)
        L = d.max()
        first = None
        for _ in range(ma.INNER_STEPS):
            z = x - (d * x - b) / L
            u = project(z, l1, 1.0)
            if scaled:
                r = z @ u
                if r <= 0:
                    break
                u = r * u
            if not f(u) <= f(x):
                break
            decrease = f(x) - f(u)
            x = u
            if first is None:
                first = decrease
            elif not decrease > ma.INNER_DELTA * first:
                break
        return x

    def sweeps(X, Y, Om, R0, l1, scaled, count):
        """Rows of X (H, or W^T), Y the other factor's rows, residual Om * R0."""
        X = X.copy()
        first = None
        for _ in range(count):
            total = 0.0
            for k in range(M):
                y = Y[k]
                d = (Om * y[:, None] ** 2).sum(axis=0)
                R = Om * (R0 - Y.T @ X)
                b = y @ R + d * X[k]
                new = row_update(X[k], d, b, l1, scaled)
                old_f = 0.5 * np.sum(d * X[k] ** 2) - b @ X[k]
                new_f = 0.5 * np.sum(d * new**2) - b @ new
                if new_f <= old_f:
                    total += old_f - new_f
                    X[k] = new
            first = total if first is None else first
            if not total > SWEEP_DELTA * first:
                break
        return X

    def count(n_other):
        return 2 if not mask.all() else int(min(SWEEPS_MAX, 1 + n_other / (M + 1)))

    history = [E(W, H)]
    for _ in range(iterations):
        H = sweeps(H, W.T, Om, X, l1_h, False, count(N))
        if s_h is None and s_w is not None:
            norms = np.linalg.norm(H, axis=1)
            H, W = H / norms[:, None], W * norms
        W = sweeps(W.T, H, Om.T, X.T, l1_w, True, count(T)).T
        history.append(E(W, H))
    return np.array(history) * V[mask].max() ** 2


@pytest.mark.parametrize("params", CONSTRAINTS)
def test_masked_accelerated_is_the_written_out_algorithm(V, mask, params):
    result = fit(V, mask=mask, max_iter=15, **params)
    expected = reference(V, mask, 0, 15, params.get("sparseness_w"), params.get("sparseness_h"))
    np.testing.assert_allclose(result.objective, expected, rtol=1e-9)


def test_the_reference_check_can_fail(V, mask):
    """The masked paper's algorithm does not match the masked accelerated reference."""
    result = fit(V, mask=mask, max_iter=15, sparseness_w=0.6, solver="hoyer")
    expected = reference(V, mask, 0, 15, 0.6, None)
    assert not np.allclose(result.objective, expected, rtol=1e-9)


# --- held-out recovery ---------------------------------------------------------------
def test_masked_accelerated_recovers_hidden_low_rank_entries():
    """Rank-4 data with 30 % hidden: the held-out error is at most half that of
    fitting the matrix whose holes are filled with row means."""
    rng = np.random.default_rng(0)
    truth = rng.random((40, 4)) @ rng.random((4, 30))
    seen = np.random.default_rng(1).random(truth.shape) >= 0.3
    means = np.where(seen, truth, 0.0).sum(axis=1) / seen.sum(axis=1)
    filled = np.where(seen, truth, means[:, None])

    def held_out(result):
        residual = (result.W @ result.H - truth)[~seen]
        return np.linalg.norm(residual) / np.linalg.norm(truth[~seen])

    kw = {"sparseness_w": 0.2, "max_iter": 500, "tol": 1e-9, "solver": "accelerated"}
    with pytest.warns(ConvergenceWarning):
        masked = nmfsc.nmf_sc(np.where(seen, truth, np.nan), 4, mask=seen, random_state=0, **kw)
        plain = nmfsc.nmf_sc(filled, 4, random_state=0, **kw)
    assert held_out(masked) <= 0.5 * held_out(plain)
    assert held_out(masked) < 0.05


# --- the unobserved entries are never read ---------------------------------------------
def test_unobserved_entries_are_not_read(V, mask):
    holes = np.where(mask, V, np.nan)
    noisy = np.where(mask, V, 1e6)
    a = fit(holes, mask=mask, sparseness_h=0.6)
    b = fit(noisy, mask=mask, sparseness_h=0.6)
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.objective, b.objective)
    assert np.all(np.isfinite(a.W)) and np.all(np.isfinite(a.H))


def test_an_unobserved_column_keeps_its_start(V, mask):
    """A column of V with no observed entry: f_k does not depend on H there,
    whose entries keep their start values (d_t = 0), and nothing is NaN."""
    hidden = mask.copy()
    hidden[:, 4] = False
    start = fit(V, mask=hidden, max_iter=1)
    later = fit(V, mask=hidden, max_iter=20)
    np.testing.assert_array_equal(later.H[:, 4], start.H[:, 4])
    assert np.all(np.isfinite(later.objective))


# --- checkpoints -------------------------------------------------------------------------
def test_masked_accelerated_resume_is_bit_identical(V, mask, tmp_path):
    path = tmp_path / "run.ckpt"
    kw = {"mask": mask, "sparseness_w": 0.6, "sparseness_h": 0.5}
    whole = fit(V, max_iter=20, **kw)
    fit(V, max_iter=9, checkpoint=path, **kw)
    resumed = fit(V, max_iter=20, checkpoint=path, resume=True, **kw)
    np.testing.assert_array_equal(resumed.W, whole.W)
    np.testing.assert_array_equal(resumed.H, whole.H)
    np.testing.assert_array_equal(resumed.objective, whole.objective)


def test_float32_data_keeps_float32_factors(V, mask):
    result = fit(V.astype(np.float32), mask=mask, sparseness_w=0.6, max_iter=10)
    assert result.W.dtype == np.float32 and result.H.dtype == np.float32
    assert np.all(np.diff(result.objective) <= 1e-6 * result.objective[0])


# --- sparse V with mask="stored" ----------------------------------------------------------
def stored_and_pattern(fmt, shape=(30, 22), density=0.3, seed=3):
    """A sparse V with explicit stored zeros (observed zeros), in ``fmt``,
    and the dense boolean mask of its pattern."""
    S = sp.random(*shape, density=density, random_state=seed, format="csr")
    S.data[::7] = 0.0
    S = S.asformat(fmt)
    pattern = np.zeros(S.shape, dtype=bool)
    coo = S.tocoo()
    pattern[coo.row, coo.col] = True
    return S, pattern


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("params", CONSTRAINTS)
def test_stored_mask_equals_the_dense_mask_of_its_pattern(fmt, params):
    S, pattern = stored_and_pattern(fmt)
    assert np.any(S.data == 0.0)
    stored = fit(S, mask="stored", max_iter=20, **params)
    dense = fit(S.toarray(), mask=pattern, max_iter=20, **params)
    np.testing.assert_allclose(stored.objective, dense.objective, rtol=1e-10, atol=0)
    np.testing.assert_allclose(stored.W, dense.W, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(stored.H, dense.H, rtol=1e-8, atol=1e-12)
    assert stored.relative_error == pytest.approx(dense.relative_error, rel=1e-10)


def test_stored_zeros_are_observed():
    """Dropping the explicit zeros of the pattern changes the fit: they are
    entries to fit, not missing ones."""
    S, _ = stored_and_pattern("csr")
    dropped = S.copy()
    dropped.eliminate_zeros()
    assert dropped.nnz < S.nnz
    kept = fit(S, mask="stored", max_iter=20, sparseness_w=0.6)
    without = fit(dropped, mask="stored", max_iter=20, sparseness_w=0.6)
    assert not np.allclose(kept.objective, without.objective, rtol=1e-6)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_stored_mask_on_threads_equals_the_dense_mask(fmt):
    """Large enough that the stored residual is formed in groups on threads."""
    S, pattern = stored_and_pattern(fmt, (400, 300), 0.2, 5)
    assert S.nnz * M >= 1 << 16
    stored = fit(S, mask="stored", max_iter=10, sparseness_h=0.5)
    dense = fit(S.toarray(), mask=pattern, max_iter=10, sparseness_h=0.5)
    np.testing.assert_allclose(stored.objective, dense.objective, rtol=1e-10, atol=0)
    np.testing.assert_allclose(stored.W, dense.W, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("params", CONSTRAINTS)
def test_stored_histories_fall_and_the_constraints_hold_every_iteration(params):
    S, pattern = stored_and_pattern("csc")
    seen = []
    result = fit(S, mask="stored", max_iter=60, callback=constraint_check(params, seen), **params)
    assert seen == list(range(1, 61))
    assert np.all(np.diff(result.objective) <= 1e-12 * result.objective[0])
    assert result.objective[-1] < 0.5 * result.objective[0]
    residual = pattern * (S.toarray() - result.W @ result.H)
    assert result.objective[-1] == pytest.approx(0.5 * np.sum(residual**2), rel=1e-9)


def test_stored_mask_resumes_bit_identically_and_keeps_float32(tmp_path):
    S, _ = stored_and_pattern("csr")
    path = tmp_path / "run.ckpt"
    kw = {"mask": "stored", "sparseness_w": 0.6, "sparseness_h": 0.5}
    whole = fit(S, max_iter=12, **kw)
    fit(S, max_iter=5, checkpoint=path, **kw)
    resumed = fit(S, max_iter=12, checkpoint=path, resume=True, **kw)
    np.testing.assert_array_equal(resumed.W, whole.W)
    np.testing.assert_array_equal(resumed.objective, whole.objective)
    single = fit(S.astype(np.float32), max_iter=10, **kw)
    assert single.W.dtype == np.float32 and single.H.dtype == np.float32
    assert np.all(np.diff(single.objective) <= 1e-6 * single.objective[0])


def test_stored_mask_is_never_made_dense():
    """20,000 x 20,000 with 10^4 stored entries: a dense V, mask or residual
    would take 3.2 GB (float64); the run's numpy allocations stay at the
    factors' and the stored entries' size."""
    import tracemalloc

    rng = np.random.default_rng(0)
    n, nnz = 20_000, 10_000
    S = sp.csr_matrix(
        (rng.random(nnz) + 0.1, (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n)
    )
    fit(S[:50, :50] + sp.eye(50, format="csr"), mask="stored", max_iter=1)  # compile first
    tracemalloc.start()
    try:
        result = fit(S, mask="stored", max_iter=2, sparseness_w=0.6, sparseness_h=0.6)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20  # a dense 20,000 x 20,000 float64 array: 3,200 MB
    assert np.all(np.isfinite(result.objective))
    assert result.objective[-1] <= result.objective[0]


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("rule", ["nonneg", "unit", "scaled"])
def test_the_stored_sweep_is_the_dense_sweep_at_the_pattern(fmt, rule):
    """One sweep of each factor by the stored kernel and by the dense kernel
    on the dense mask of the pattern, from the same residual and weights:
    the same rows and residual, bit for bit (the b's are summed in one order)."""
    from nmfsc._kernels import masked_rows as mr
    from nmfsc._kernels.sparse_projection import max_filter_passes

    S, pattern = stored_and_pattern(fmt)
    N, T = S.shape

    def at_pattern(A):
        """A's (N x T) entries at the stored ones, in S's order (by rows for
        CSR, by columns for CSC)."""
        return A[pattern] if fmt == "csr" else A.T[pattern.T]

    rng = np.random.default_rng(4)
    W, H = rng.random((N, M)), rng.random((M, T))
    R = pattern * (S.toarray() - W @ H)
    code = {"nonneg": mr.RULE_NONNEG, "unit": mr.RULE_UNIT, "scaled": mr.RULE_SCALED}[rule]
    for step in ("h", "w"):
        if step == "h":
            X, Y, E, mask = H.copy(), W.T, R.copy(), pattern
        else:
            X, Y, E, mask = W.T.copy(), H, R.T.copy(), pattern.T
        n = X.shape[1]
        l1 = 1.0 if rule == "nonneg" else 0.6 * np.sqrt(n)
        D = (Y * Y) @ mask
        scatter = (step == "h") == (fmt == "csr")
        X_stored, E_stored = X.copy(), at_pattern(R)
        args = (D, code, l1, max_filter_passes(n), 5, 0.1)
        dense = mr.sweep_masked_rows(X, Y, E, mask, *args, *scratch(n))
        stored = mr.sweep_stored_rows(
            X_stored, Y, S.indptr, S.indices, E_stored, scatter, *args, *scratch(n)
        )
        assert dense == stored
        assert dense[1] < M  # some row changed
        np.testing.assert_array_equal(X_stored, X)
        np.testing.assert_array_equal(E_stored, at_pattern(E if step == "h" else E.T))
        weights = np.empty((n, M))
        mr.stored_weights(S.indptr, S.indices, np.ascontiguousarray(Y.T), scatter, weights)
        np.testing.assert_allclose(weights.T, D, rtol=1e-14)


def scratch(n):
    return np.empty(n), np.empty((4, n))


# --- what is refused ------------------------------------------------------------------------
def test_bad_masks_are_refused(V):
    with pytest.raises(ValueError, match="mask must have V's shape"):
        nmfsc.nmf_sc(V, M, mask=np.ones((3, 3), dtype=bool), solver="accelerated")
    with pytest.raises(TypeError, match="mask must be a boolean array"):
        nmfsc.nmf_sc(V, M, mask=np.ones(V.shape, dtype=int), solver="accelerated")


# --- the estimator, compare and the command line -----------------------------------------------
def test_sparse_nmf_accelerated_with_missing_values():
    rng = np.random.default_rng(1)
    X = rng.random((30, 4)) @ rng.random((4, 20))
    holes = np.where(np.random.default_rng(2).random(X.shape) < 0.2, np.nan, X)
    est = SparseNMF(4, solver="accelerated", missing_values=np.nan, random_state=0, tol=1e-7)
    Z = est.fit_transform(holes)
    missing = np.isnan(holes)
    guess = (Z @ est.components_)[missing]
    assert np.linalg.norm(guess - X[missing]) < 0.05 * np.linalg.norm(X[missing])


def test_compare_fits_the_accelerated_solver_through_the_mask():
    rng = np.random.default_rng(0)
    V = rng.random((30, 4)) @ rng.random((4, 24))
    result = nmfsc.compare(
        V,
        4,
        methods=["nmf_sc_accelerated"],
        holdout=0.2,
        seeds=(0,),
        max_iter=100,
        sparseness_w=0.2,
        progress=False,
    )
    assert [r["holdout_fit"] for r in result.rows] == ["masked"]


def test_compare_holds_out_stored_entries_for_the_accelerated_solver():
    """A sparse V's held-out comparison fits the accelerated solver on the
    training stored entries (mask="stored"), as it does nmf_sc's default."""
    rng = np.random.default_rng(3)
    truth = rng.random((40, 3)) @ rng.random((3, 30))
    S = sp.csr_matrix(np.where(rng.random(truth.shape) < 0.5, truth, 0.0))
    result = nmfsc.compare(
        S,
        3,
        methods=["nmf_sc", "nmf_sc_accelerated"],
        holdout=0.2,
        seeds=(0,),
        max_iter=200,
        sparseness_w=0.2,
        progress=False,
        sparse_zeros="missing",  # the unstored entries are unobserved: mask="stored"
    )
    rows = {r["method"]: r for r in result.rows}
    assert [r["holdout_fit"] for r in rows.values()] == ["masked", "masked"]
    assert rows["nmf_sc_accelerated"]["holdout_error"] < 0.5


def test_cli_fit_accelerated_with_missing_values(tmp_path):
    rng = np.random.default_rng(0)
    V = rng.random((20, 3)) @ rng.random((3, 15))
    lines = []
    for i, row in enumerate(V):
        cells = [f"{v:.6f}" for v in row]
        cells[i % len(cells)] = ""
        lines.append(",".join(cells))
    data = tmp_path / "holes.csv"
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "fit.npz"
    argv = ["fit", str(data), "-k", "3", "--missing-values", "nan", "--solver", "accelerated"]
    assert main([*argv, "--no-progress", "--max-iter", "100", "--out", str(out)]) == 0
    with np.load(out) as saved:
        record = json.loads(str(saved["record"]))
        assert np.all(np.isfinite(saved["W"]))
    assert record["relative_error"] < 0.1
