"""nmf_sc(solver="accelerated"): the same constraints as the paper's algorithm at
every iteration, a non-increasing objective, the same start, determinism,
bit-identical checkpoint resume, float32 and sparse data, and a final objective
no worse than the paper's algorithm from the same start."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import nmfsc
from nmfsc import ConvergenceWarning, l1_for_sparseness, nmf_sc, project
from nmfsc._kernels import rowblocks
from nmfsc.solvers import accelerated
from nmfsc.solvers.accelerated import sweep
from nmfsc.sparseness import sparseness

M = 4
#: Constraints held at every iteration (float64).
CONSTRAINT_ATOL = 1e-9
#: A recorded objective may exceed the previous one by rounding of the expansion.
RISE_RTOL = 1e-12
CASES = {
    "w": {"sparseness_w": 0.6},
    "h": {"sparseness_h": 0.7},
    "both": {"sparseness_w": 0.6, "sparseness_h": 0.5},
    "none": {},
}


@pytest.fixture(scope="module")
def V():
    return 3.0 * np.abs(np.random.default_rng(1).standard_normal((30, 40))) + 0.01


def run(V, solver="accelerated", **kwargs):
    kwargs = {"random_state": 4, "tol": 0.0, "max_iter": 30, **kwargs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return nmf_sc(V, M, solver=solver, **kwargs)


def check_constraints(W, H, params, atol):
    if params.get("sparseness_w") is not None:
        assert np.max(np.abs(sparseness(W, axis=0) - params["sparseness_w"])) <= atol
    if params.get("sparseness_h") is not None:
        assert np.max(np.abs(sparseness(H, axis=1) - params["sparseness_h"])) <= atol
    if params:  # nmf_sc's convention: rows of H at unit L2 norm
        norms = np.linalg.norm(H.astype(np.float64), axis=1)
        assert np.max(np.abs(norms - 1.0)) <= atol
    assert W.min() >= 0 and H.min() >= 0


@pytest.mark.parametrize("case", list(CASES))
def test_constraints_hold_and_objective_never_rises(V, case):
    params = CASES[case]
    seen = []

    def callback(state):
        check_constraints(state.W, state.H, params, CONSTRAINT_ATOL)
        seen.append(state.iteration)

    result = run(V, callback=callback, **params)
    assert seen == list(range(1, 31))
    assert result.solver == "nmf_sc (accelerated)"
    rises = np.diff(result.objective)
    assert np.all(rises <= RISE_RTOL * result.objective[:-1]), rises.max()
    exact = 0.5 * np.linalg.norm(V - result.W @ result.H) ** 2
    assert result.objective[-1] == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize("case", ["w", "both"])
def test_same_start_and_lower_than_hoyer_after_as_many_iterations(V, case):
    # Both stop in local minima, not always the same ones: run to convergence on
    # small random problems, the accelerated solver often ends 1-5 % higher, and
    # with s_H alone it can stop higher within a few iterations (docs/solvers.md).
    params = CASES[case]
    hoyer = run(V, solver="hoyer", max_iter=10, **params)
    fast = run(V, max_iter=10, **params)
    assert fast.objective[0] == hoyer.objective[0]  # the same W0, H0
    assert np.all(fast.objective[1:] <= hoyer.objective[1:])


def test_no_step_sizes_and_constants(V):
    # Block coordinate descent takes exact minimisers: there is no step size.
    result = run(V, sparseness_w=0.6, sparseness_h=0.5, max_iter=5)
    assert result.step_sizes is None
    assert 0 < accelerated.SWEEP_DELTA < 1 and accelerated.SWEEPS_MAX >= 1


@pytest.mark.parametrize("case", ["w", "h"])
def test_same_call_gives_the_same_bits(V, case):
    a, b = run(V, **CASES[case]), run(V, **CASES[case])
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.H, b.H)
    np.testing.assert_array_equal(a.objective, b.objective)


@pytest.mark.parametrize("case", ["w", "h", "both"])
def test_checkpoint_resume_is_bit_identical(V, tmp_path, case):
    params = CASES[case]
    path = tmp_path / "run.npz"
    whole = run(V, **params)
    first = run(V, max_iter=13, checkpoint=path, checkpoint_every=5, **params)
    assert first.n_iter == 13
    resumed = run(V, checkpoint=path, resume=True, **params)
    np.testing.assert_array_equal(resumed.W, whole.W)
    np.testing.assert_array_equal(resumed.H, whole.H)
    np.testing.assert_array_equal(resumed.objective, whole.objective)


def test_checkpoint_of_the_other_solver_is_refused(V, tmp_path):
    path = tmp_path / "run.npz"
    run(V, solver="hoyer", max_iter=3, checkpoint=path, sparseness_w=0.6)
    with pytest.raises(nmfsc.solvers.CheckpointMismatchError, match="different solver"):
        run(V, checkpoint=path, resume=True, sparseness_w=0.6)


@pytest.mark.parametrize("case", ["w", "h"])
def test_float32_keeps_float32_and_the_constraints(V, case, monkeypatch):
    params = CASES[case]
    r32 = run(V.astype(np.float32), **params)
    assert r32.W.dtype == r32.H.dtype == np.float32
    check_constraints(r32.W, r32.H, params, 1e-5)
    # The sweeps' accept and stop decisions compare values of f: float32
    # rounding can change one and the two runs part. With one sweep per
    # update the decisions agree here, and the trajectories with them.
    monkeypatch.setattr(accelerated, "SWEEPS_MAX", 1)
    r32 = run(V.astype(np.float32), max_iter=5, **params)
    r64 = run(V, max_iter=5, **params)
    np.testing.assert_allclose(r32.objective, r64.objective, rtol=1e-5)


@pytest.mark.parametrize("fmt", [sp.csr_matrix, sp.csc_array])
@pytest.mark.parametrize("case", ["w", "h"])
def test_sparse_data_follows_dense(V, fmt, case):
    params = CASES[case]
    Vs = V * (np.random.default_rng(2).random(V.shape) < 0.4)
    dense = run(Vs, max_iter=20, **params)
    sparse = run(fmt(Vs), max_iter=20, **params)
    np.testing.assert_allclose(sparse.objective, dense.objective, rtol=1e-8)
    check_constraints(sparse.W, sparse.H, params, CONSTRAINT_ATOL)


@pytest.mark.parametrize("bad", ["Accelerated", "fast", None, 3])
def test_bad_solver_is_refused(V, bad):
    with pytest.raises(ValueError, match=r"solver must be one of 'hoyer', 'accelerated'; got"):
        nmf_sc(V, M, solver=bad)


def test_hals_sweep_minimises_each_row_exactly():
    rng = np.random.default_rng(0)
    W = np.abs(rng.standard_normal((12, 3)))
    V = np.abs(rng.standard_normal((12, 8)))
    H = np.abs(rng.standard_normal((3, 8)))
    G, A = W.T @ W, W.T @ V
    H1 = sweep(H, G, A, rowblocks.RULE_NONNEG)
    assert H1 is not H and H1.min() >= 0
    # one sweep, row by row, by a bounded least-squares solve of each row
    from scipy.optimize import nnls

    expected = H.copy()
    for k in range(3):
        residual = V - np.delete(W, k, axis=1) @ np.delete(expected, k, axis=0)
        for j in range(8):
            expected[k, j] = nnls(W[:, [k]], residual[:, j])[0][0]
    np.testing.assert_allclose(H1, expected, rtol=1e-10, atol=1e-12)


def _reference_sweep(X, G, A, rule, l1):
    """One Gauss-Seidel sweep written plainly: b_k from the current rows, then
    the row's exact minimiser by the public projection (module docstring of
    nmfsc.solvers.accelerated); a row is kept when its value would rise."""
    X = X.copy()
    for k in range(X.shape[0]):
        g = G[k, k]
        b = A[k] - G[k] @ X + g * X[k]
        u = project(b, l1, 1.0)
        if rule == rowblocks.RULE_SCALED:
            p = b @ u
            if not p > 0:
                continue
            u = (p / g) * u
        if 0.5 * g * (u @ u) - b @ u <= 0.5 * g * (X[k] @ X[k]) - b @ X[k]:
            X[k] = u
    return X


@pytest.mark.parametrize("rule", [rowblocks.RULE_UNIT, rowblocks.RULE_SCALED])
@pytest.mark.parametrize("M", [3, 8, 19])  # one block, exactly one, several and a part
def test_sparse_sweep_is_the_row_by_row_projection(rule, M):
    # The kernel's blocked bookkeeping (R = G X kept up to date, the block's
    # changes combined) gives the rows a plain Gauss-Seidel sweep gives.
    rng = np.random.default_rng(M)
    n = 50
    B = np.abs(rng.standard_normal((40, M)))
    G, A = B.T @ B, B.T @ np.abs(rng.standard_normal((40, n)))
    l1 = l1_for_sparseness(0.6, n)
    X = np.vstack([project(np.abs(rng.standard_normal(n)), l1, 1.0) for _ in range(M)])
    got = sweep(X, G, A, rule, l1)
    np.testing.assert_allclose(got, _reference_sweep(X, G, A, rule, l1), rtol=0, atol=1e-12)
    np.testing.assert_allclose(sparseness(got, axis=1), 0.6, atol=1e-12)
    if rule == rowblocks.RULE_UNIT:
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize(
    "rule", [rowblocks.RULE_NONNEG, rowblocks.RULE_UNIT, rowblocks.RULE_SCALED]
)
def test_sweeps_never_raise_f_and_keep_r_equal_to_g_x(rule):
    rng = np.random.default_rng(5)
    M, n = 11, 300
    B = np.abs(rng.standard_normal((60, M)))
    G, A = B.T @ B, B.T @ np.abs(rng.standard_normal((60, n)))
    l1 = l1_for_sparseness(0.7, n)
    X = np.vstack([project(np.abs(rng.standard_normal(n)), l1, 1.0) for _ in range(M)])

    def f(X):
        return 0.5 * np.sum(G * (X @ X.T)) - np.sum(A * X)

    R = G @ X
    b, new, D = np.empty(n), np.empty(n), np.empty((rowblocks.BLOCK, n))
    values = [f(X)]
    for _ in range(6):
        decrease, unchanged = 0.0, 0
        for start in range(0, M, rowblocks.BLOCK):
            stop = min(M, start + rowblocks.BLOCK)
            decrease, kept = rowblocks.sweep_block(
                X, R, G, A, rule, np.full(M, l1), 50, b, new, D, start, stop, decrease
            )
            unchanged += kept
            rowblocks.update_r(R, G, D, start, stop, 0, n)
        values.append(f(X))
        assert decrease >= 0 and 0 <= unchanged <= M
        assert values[-2] - values[-1] == pytest.approx(decrease, rel=1e-6, abs=1e-9)
        np.testing.assert_allclose(R, G @ X, rtol=0, atol=1e-10 * np.abs(G @ X).max())
    assert np.all(np.diff(values) <= 1e-12 * abs(values[0]))


def test_update_r_is_numpys_and_the_same_on_any_split_of_the_columns():
    rng = np.random.default_rng(6)
    M, n, start, stop = 11, 1000, 8, 11
    G = rng.standard_normal((M, M))
    D = rng.standard_normal((rowblocks.BLOCK, n))
    D[stop - start :] = 0.0  # rows past the block's end hold no change
    R = rng.standard_normal((M, n))
    expected = R + G[:, start:stop] @ D[: stop - start]
    whole = R.copy()
    rowblocks.update_r(whole, G, D, start, stop, 0, n)
    np.testing.assert_allclose(whole, expected, rtol=1e-13, atol=1e-13)
    parts = R.copy()
    for lo, hi in [(0, 1), (1, 333), (333, 1000)]:
        rowblocks.update_r(parts, G, D, start, stop, lo, hi)
    np.testing.assert_array_equal(parts, whole)


def test_degenerate_rows_are_left_as_they_are():
    # g_kk = 0 (a zero row of the other factor) and, for rows at any norm,
    # <b_k, P(b_k)> <= 0: no row value can be lowered, the row stays.
    n, l1 = 20, l1_for_sparseness(0.5, 20)
    X = np.vstack([project(np.arange(1.0, n + 1), l1, 1.0)] * 2)
    G = np.array([[0.0, 0.0], [0.0, 1.0]])
    A = np.vstack([np.ones(n), -np.ones(n)])
    np.testing.assert_array_equal(sweep(X, G, A, rowblocks.RULE_SCALED, l1, sweeps=3), X)
    hals = sweep(X, G, A, rowblocks.RULE_NONNEG, sweeps=3)
    np.testing.assert_array_equal(hals[0], X[0])  # g_kk = 0
    np.testing.assert_array_equal(hals[1], 0.0)  # HALS's minimiser of <b, x> + |x|^2 / 2 for b < 0


def test_sweep_is_deterministic_and_does_not_modify_its_input():
    rng = np.random.default_rng(9)
    M, n = 13, 5000  # rows long enough for the bracketing projection
    B = np.abs(rng.standard_normal((30, M)))
    G, A = B.T @ B, B.T @ np.abs(rng.standard_normal((30, n)))
    l1 = l1_for_sparseness(0.85, n)
    X = np.vstack([project(np.abs(rng.standard_normal(n)), l1, 1.0) for _ in range(M)])
    keep = X.copy()
    first = sweep(X, G, A, rowblocks.RULE_UNIT, l1, sweeps=3)
    np.testing.assert_array_equal(X, keep)
    np.testing.assert_array_equal(sweep(X, G, A, rowblocks.RULE_UNIT, l1, sweeps=3), first)


def test_the_estimator_takes_the_accelerated_solver(V):
    # SparseNMF(solver="accelerated") runs it in scikit-learn's orientation:
    # the components (W's columns) keep their sparseness.
    model = nmfsc.SparseNMF(
        n_components=M, sparseness_components=0.6, solver="accelerated", random_state=0
    )
    codes = model.fit_transform(V.T)
    assert codes.shape == (V.shape[1], M)
    np.testing.assert_allclose(sparseness(model.components_, axis=1), 0.6, atol=CONSTRAINT_ATOL)
    assert model.n_iter_ >= 1


@pytest.mark.parametrize(
    "rule", [rowblocks.RULE_NONNEG, rowblocks.RULE_UNIT, rowblocks.RULE_SCALED]
)
@pytest.mark.parametrize("M", [9, 20, 24])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_overlapped_sweeps_give_one_threads_bits(monkeypatch, rule, M, dtype):
    """On several threads each block's sweep runs beside the update of R by
    the block before it (``accelerated._Rows.sweep_overlapped``, two buffers
    of changes); the result is bit for bit one thread's, whatever the
    threads, and the rows of R are brought up to date in any pieces
    (``rowblocks.update_r_rows``)."""
    from nmfsc._blocked import PARALLEL_ENTRIES

    rng = np.random.default_rng(8)
    n = PARALLEL_ENTRIES // M + 3000  # over the threshold: the overlapped path
    B = np.abs(rng.standard_normal((40, M)))
    G, A = B.T @ B, B.T @ np.abs(rng.standard_normal((40, n)))
    l1 = l1_for_sparseness(0.7, n)
    X = np.vstack([project(np.abs(rng.standard_normal(n)), l1, 1.0) for _ in range(M)])
    X = X.astype(dtype)
    results = []
    for count in (1, 2, 3, 5):
        monkeypatch.setattr(accelerated, "threads", lambda count=count: count)
        results.append(sweep(X, G, A, rule, l1, sweeps=3))
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])
    assert not np.array_equal(results[0], X)


def test_update_r_rows_is_update_r_on_those_rows():
    rng = np.random.default_rng(9)
    M, n, start, stop = 13, 500, 0, 8
    G = rng.standard_normal((M, M))
    D = rng.standard_normal((rowblocks.BLOCK, n))
    R = rng.standard_normal((M, n))
    whole = R.copy()
    rowblocks.update_r(whole, G, D, start, stop, 0, n)
    parts = R.copy()
    for r0, r1, lo, hi in [(8, 13, 0, n), (0, 8, 250, n), (0, 8, 0, 250)]:
        rowblocks.update_r_rows(parts, G, D, start, stop, r0, r1, lo, hi)
    np.testing.assert_array_equal(parts, whole)
