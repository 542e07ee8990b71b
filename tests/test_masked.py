"""Masked NMF (issue 34): nmf_sc and nmf_euclidean fitted to the observed entries only."""

import numpy as np
import pytest
import scipy.sparse as sp

import nmfsc
from nmfsc import ConvergenceWarning
from nmfsc.observed import Observed
from nmfsc.projection import project
from nmfsc.solvers import CheckpointMismatchError
from nmfsc.sparseness import l1_for_sparseness, sparseness

M = 3
CONSTRAINTS = [
    {"sparseness_w": 0.6},
    {"sparseness_h": 0.6},
    {"sparseness_w": 0.5, "sparseness_h": 0.7},
    {},
]


@pytest.fixture
def V():
    return np.abs(np.random.default_rng(5).standard_normal((24, 18)))


@pytest.fixture
def mask(V):
    return np.random.default_rng(6).random(V.shape) > 0.3


def fit(solver, V, **kw):
    kw = {"random_state": 0, "tol": 0.0, "max_iter": 40, **kw}
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        return solver(V, M, **kw)


# --- the full-mask identity --------------------------------------------------
@pytest.mark.parametrize("params", CONSTRAINTS)
def test_a_full_mask_gives_the_unmasked_histories(V, params):
    full = np.ones(V.shape, dtype=bool)
    masked = fit(nmfsc.nmf_sc, V, mask=full, max_iter=150, **params)
    plain = fit(nmfsc.nmf_sc, V, max_iter=150, **params)
    np.testing.assert_allclose(masked.objective, plain.objective, rtol=1e-12, atol=0)
    # the iterates agree to rounding, amplified over 150 iterations
    np.testing.assert_allclose(masked.W @ masked.H, plain.W @ plain.H, rtol=1e-6)


def test_a_full_mask_gives_the_unmasked_euclidean_history(V):
    full = np.ones(V.shape, dtype=bool)
    masked = fit(nmfsc.nmf_euclidean, V, mask=full, max_iter=150)
    plain = fit(nmfsc.nmf_euclidean, V, max_iter=150)
    np.testing.assert_allclose(masked.objective, plain.objective, rtol=1e-12, atol=0)


# --- monotone, constraints held ---------------------------------------------
@pytest.mark.parametrize("params", CONSTRAINTS)
def test_masked_histories_fall_and_the_constraints_hold(V, mask, params):
    result = fit(nmfsc.nmf_sc, V, mask=mask, max_iter=200, **params)
    steps = np.diff(result.objective)
    assert np.all(steps <= 1e-12 * result.objective[0])
    assert result.objective[-1] < 0.5 * result.objective[0]
    if "sparseness_w" in params:
        np.testing.assert_allclose(sparseness(result.W, axis=0), params["sparseness_w"], atol=1e-9)
    if "sparseness_h" in params:
        np.testing.assert_allclose(sparseness(result.H, axis=1), params["sparseness_h"], atol=1e-9)
        np.testing.assert_allclose(np.linalg.norm(result.H, axis=1), 1.0, atol=1e-9)
    residual = mask * (V - result.W @ result.H)
    assert result.objective[-1] == pytest.approx(0.5 * np.sum(residual**2), rel=1e-9)
    assert result.relative_error == pytest.approx(
        np.linalg.norm(residual) / np.linalg.norm(mask * V), rel=1e-9
    )


def test_masked_euclidean_history_falls(V, mask):
    result = fit(nmfsc.nmf_euclidean, V, mask=mask, max_iter=200)
    assert np.all(np.diff(result.objective) <= 1e-12 * result.objective[0])


# --- a plain NumPy implementation of the algorithm (issue 34, point 2) ---------
def reference(V, mask, seed, iterations, s_w=None, s_h=None):
    """The masked nmf_sc, written out: V / max observed, nmf_sc's start, the masked
    projected gradient steps or weighted multiplicative updates."""
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

    mu_w = mu_h = 1.0
    history = [E(W, H)]
    for _ in range(iterations):
        if s_h is None:
            H = H * (W.T @ (Om * X)) / (W.T @ (Om * (W @ H)) + 1e-9)
            norms = np.linalg.norm(H, axis=1)
            H, W = H / norms[:, None], W * norms
        else:
            grad = W.T @ (Om * (W @ H - X))
            while True:
                trial = H - mu_h * grad
                H_new = np.vstack([project(trial[i], l1_h, 1.0) for i in range(M)])
                if E(W, H_new) <= E(W, H):
                    H, mu_h = H_new, mu_h * 1.2
                    break
                mu_h /= 2
        if s_w is None:
            W = W * ((Om * X) @ H.T) / ((Om * (W @ H)) @ H.T + 1e-9)
        else:
            grad = (Om * (W @ H - X)) @ H.T
            while True:
                trial = W - mu_w * grad
                cols = []
                for i in range(M):
                    norm = np.linalg.norm(trial[:, i])
                    cols.append(project(trial[:, i], l1_w * norm, norm))
                W_new = np.column_stack(cols)
                if E(W_new, H) <= E(W, H):
                    W, mu_w = W_new, mu_w * 1.2
                    break
                mu_w /= 2
        history.append(E(W, H))
    return np.array(history) * V[mask].max() ** 2


@pytest.mark.parametrize("params", CONSTRAINTS)
def test_masked_nmf_sc_is_the_written_out_algorithm(V, mask, params):
    result = fit(nmfsc.nmf_sc, V, mask=mask, max_iter=30, **params)
    s_w, s_h = params.get("sparseness_w"), params.get("sparseness_h")
    expected = reference(V, mask, 0, 30, s_w, s_h)
    np.testing.assert_allclose(result.objective, expected, rtol=1e-9)


def test_a_wrong_algorithm_fails_the_reference_check(V, mask):
    """The check can fail: the unmasked algorithm does not match the masked reference."""
    result = fit(nmfsc.nmf_sc, V, max_iter=30, sparseness_w=0.6)
    expected = reference(V, mask, 0, 30, 0.6, None)
    assert not np.allclose(result.objective, expected, rtol=1e-9)


# --- the unobserved entries are never read --------------------------------------
def test_unobserved_entries_are_not_read(V, mask):
    holes = V.copy()
    holes[~mask] = np.nan
    noisy = V.copy()
    noisy[~mask] = 1e6
    a = fit(nmfsc.nmf_sc, holes, mask=mask, sparseness_w=0.6)
    b = fit(nmfsc.nmf_sc, noisy, mask=mask, sparseness_w=0.6)
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.objective, b.objective)
    assert np.all(np.isfinite(a.W))


# --- sparse V with mask="stored" ------------------------------------------------
@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("params", CONSTRAINTS)
def test_stored_mask_equals_the_dense_mask_of_its_pattern(fmt, params):
    S = sp.random(30, 22, density=0.3, random_state=3, format="csr")
    S.data[::7] = 0.0  # stored zeros are observed zeros
    S = S.asformat(fmt)
    pattern = np.zeros(S.shape, dtype=bool)
    coo = S.tocoo()
    pattern[coo.row, coo.col] = True
    stored = fit(nmfsc.nmf_sc, S, mask="stored", **params)
    dense = fit(nmfsc.nmf_sc, S.toarray(), mask=pattern, **params)
    np.testing.assert_allclose(stored.objective, dense.objective, rtol=1e-12)
    np.testing.assert_allclose(stored.W, dense.W, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(stored.H, dense.H, rtol=1e-9, atol=1e-12)
    assert stored.relative_error == pytest.approx(dense.relative_error, rel=1e-12)


def test_stored_mask_euclidean_equals_the_dense_mask():
    S = sp.random(30, 22, density=0.3, random_state=4, format="csr")
    stored = fit(nmfsc.nmf_euclidean, S, mask="stored")
    dense = fit(nmfsc.nmf_euclidean, S.toarray(), mask=S.toarray() != 0)
    np.testing.assert_allclose(stored.objective, dense.objective, rtol=1e-12)


# --- bad masks: one clear error --------------------------------------------------
@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda V: np.ones((3, 3), dtype=bool), ValueError, r"mask must have V's shape"),
        (lambda V: np.zeros(V.shape, dtype=bool), ValueError, "no observed entry"),
        (lambda V: np.ones(V.shape, dtype=int), TypeError, "mask must be a boolean array"),
        (lambda V: "all", ValueError, "mask must be a boolean array or 'stored'"),
        (lambda V: "stored", ValueError, "mask='stored' needs a scipy.sparse V"),
    ],
)
def test_bad_masks_are_refused(V, make, error, match):
    with pytest.raises(error, match=match):
        nmfsc.nmf_sc(V, M, mask=make(V))
    with pytest.raises(error, match=match):
        nmfsc.nmf_euclidean(V, M, mask=make(V))


def test_nan_where_observed_is_refused(V, mask):
    bad = V.copy()
    i, j = np.argwhere(mask)[0]
    bad[i, j] = np.nan
    with pytest.raises(ValueError, match=r"NaN.*observed entries only"):
        nmfsc.nmf_sc(bad, M, mask=mask)


def test_all_zero_observed_entries_are_refused(V, mask):
    zeros = np.where(mask, 0.0, V)
    with pytest.raises(ValueError, match="all zeros"):
        nmfsc.nmf_sc(zeros, M, mask=mask)


def test_sparse_v_with_an_array_mask_is_refused():
    S = sp.random(10, 8, density=0.5, random_state=0, format="csr")
    with pytest.raises(ValueError, match="takes mask='stored'"):
        nmfsc.nmf_sc(S, 2, mask=np.ones(S.shape, dtype=bool))


def test_dask_with_a_mask_is_refused(V, mask):
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="masks are not supported there"):
        nmfsc.nmf_sc(da.from_array(V, chunks=(12, 18)), M, mask=mask)


# --- checkpoints -------------------------------------------------------------------
def test_masked_stop_then_resume_is_bit_identical(V, mask, tmp_path):
    path = tmp_path / "run.ckpt"
    whole = fit(nmfsc.nmf_sc, V, mask=mask, sparseness_w=0.6, max_iter=30)
    fit(nmfsc.nmf_sc, V, mask=mask, sparseness_w=0.6, max_iter=13, checkpoint=path)
    resumed = fit(
        nmfsc.nmf_sc, V, mask=mask, sparseness_w=0.6, max_iter=30, checkpoint=path, resume=True
    )
    np.testing.assert_array_equal(resumed.W, whole.W)
    np.testing.assert_array_equal(resumed.H, whole.H)
    np.testing.assert_array_equal(resumed.objective, whole.objective)


@pytest.mark.parametrize("other", ["flipped", "none"])
def test_a_checkpoint_is_refused_for_another_mask(V, mask, tmp_path, other):
    path = tmp_path / "run.ckpt"
    fit(nmfsc.nmf_sc, V, mask=mask, sparseness_w=0.6, max_iter=5, checkpoint=path)
    changed = mask.copy()
    changed[0, 0] = not changed[0, 0]
    new_mask = changed if other == "flipped" else None
    with pytest.raises(CheckpointMismatchError):
        nmfsc.nmf_sc(
            V, M, mask=new_mask, sparseness_w=0.6, max_iter=10, checkpoint=path, resume=True
        )


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_stored_mask_on_threads_equals_the_dense_mask(fmt):
    """Large enough that the stored-entry kernels run in groups on threads
    (nnz M >= 2^16), whose scattered sums are added up after."""
    S = sp.random(400, 300, density=0.2, random_state=5, format=fmt)
    assert S.nnz * M >= 1 << 16
    dense_mask = S.toarray() != 0
    for solver, params in ((nmfsc.nmf_euclidean, {}), (nmfsc.nmf_sc, {"sparseness_h": 0.5})):
        stored = fit(solver, S, mask="stored", max_iter=15, **params)
        dense = fit(solver, S.toarray(), mask=dense_mask, max_iter=15, **params)
        np.testing.assert_allclose(stored.objective, dense.objective, rtol=1e-12)
        np.testing.assert_allclose(stored.W, dense.W, rtol=1e-9, atol=1e-12)


def test_masked_nmf_sc_recovers_hidden_low_rank_entries():
    """Issue 34's target: rank-4 data with 30 % of the entries hidden; masked
    nmf_sc's error on them is at most half that of fitting the matrix whose
    holes are filled with row means."""
    rng = np.random.default_rng(0)
    truth = rng.random((40, 4)) @ rng.random((4, 30))
    seen = np.random.default_rng(1).random(truth.shape) >= 0.3
    counts = seen.sum(axis=1)
    means = np.where(seen, truth, 0.0).sum(axis=1) / counts
    filled = np.where(seen, truth, means[:, None])

    def held_out(result):
        residual = (result.W @ result.H - truth)[~seen]
        return np.linalg.norm(residual) / np.linalg.norm(truth[~seen])

    kw = {"sparseness_w": 0.2, "max_iter": 2000, "tol": 1e-7}
    masked = fit(nmfsc.nmf_sc, np.where(seen, truth, np.nan), mask=seen, **kw)
    plain = fit(nmfsc.nmf_sc, filled, **kw)
    assert held_out(masked) <= 0.5 * held_out(plain)


# --- the kernels against numpy ----------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_masked_residual_is_numpys_three_passes(dtype):
    from nmfsc._kernels.masked import masked_residual

    rng = np.random.default_rng(7)
    Y = rng.random((13, 37)).astype(dtype)
    V = rng.random((13, 37)).astype(dtype)
    keep = rng.random((13, 37)) > 0.4
    expected = Y * keep - V
    halves = masked_residual(Y, V, keep, 0, 6) + masked_residual(Y, V, keep, 6, 13)
    rtol = 1e-6 if dtype == np.float32 else 1e-15
    np.testing.assert_allclose(Y, expected, rtol=rtol)
    assert halves == pytest.approx(0.5 * np.sum(expected.astype(np.float64) ** 2), rel=rtol)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_stored_kernels_are_the_dense_formulas(fmt):
    """stored_residual, stored_sums and the fused W update against the dense
    masked formulas, through the data object the solvers use."""
    from nmfsc.solvers._masked_data import open_masked

    S = sp.random(40, 30, density=0.25, random_state=8, format=fmt)
    data, scale = open_masked(S, Observed.of("stored"))
    keep = S.toarray() != 0
    Vs = S.toarray() / scale
    rng = np.random.default_rng(9)
    W, H = rng.random((40, M)), rng.random((M, 30))
    R, energy = data.residual_energy(W, H)
    dense_R = keep * (W @ H) - Vs
    np.testing.assert_allclose(R.toarray(), dense_R, atol=1e-14)
    assert energy == pytest.approx(0.5 * np.sum(dense_R**2), rel=1e-13)
    for (num, den), (a, b) in (
        (data.h_terms(W, R), (W.T @ Vs, W.T @ (keep * (W @ H)))),
        (data.w_terms(H, R), (Vs @ H.T, (keep * (W @ H)) @ H.T)),
    ):
        np.testing.assert_allclose(num, a, rtol=1e-13)
        np.testing.assert_allclose(den, b, rtol=1e-13)
    W_new, R_new, energy_new = data.w_update_residual(W, H, 1e-9)
    expected = W * (Vs @ H.T) / ((keep * (W @ H)) @ H.T + 1e-9)
    np.testing.assert_allclose(W_new, expected, rtol=1e-13)
    np.testing.assert_allclose(R_new.toarray(), keep * (W_new @ H) - Vs, atol=1e-14)
    assert energy_new == pytest.approx(data.residual_energy(W_new, H)[1], rel=1e-13)


def test_a_kept_residual_survives_the_trials_after_it(V, mask):
    """The kept R and a trial's R are two buffers: a trial (even the first
    call's next) never overwrites the R of the pair kept."""
    from nmfsc.solvers._masked_data import open_masked
    from nmfsc.solvers.masked import ObservedResiduals

    data, _ = open_masked(V, Observed.of(mask))
    rng = np.random.default_rng(10)
    W, H = rng.random((V.shape[0], M)), rng.random((M, V.shape[1]))
    observed = ObservedResiduals(data)
    R, energy = observed(W, H)
    expected = R.copy()
    for _ in range(3):
        trial, _ = observed.trial(rng.random(W.shape), H)
        assert trial is not R
    again, energy_again = observed(W, H)
    assert again is R and energy_again == energy
    np.testing.assert_array_equal(again, expected)
    observed.keep(W, H, trial, 0.0)  # a kept trial: the old R becomes the spare
    assert observed.trial(W, H)[0] is R


def test_the_multiplicative_update_never_turns_a_factor_negative():
    # W^T (mask * W H) arrives as W^T V~ + W^T R; where the true value is 0 the
    # sum's rounding can leave it slightly negative. The update must not
    # divide by (negative + 1e-9) and flip the sign of X.
    from nmfsc.solvers.masked import multiplicative

    X = np.ones((2, 3))
    numerator = np.full((2, 3), 1e-12)
    denominator = np.array([[-4e-9, 0.0, 1.0], [1e-3, -1e-15, 2.0]])
    out, row_ss = multiplicative(X, numerator, denominator)
    assert (out >= 0).all()
    np.testing.assert_allclose(out[0, 0], 1e-12 / 1e-9)
    np.testing.assert_allclose(row_ss, (out**2).sum(axis=1))


@pytest.mark.realdata
def test_masked_nmf_sc_predicts_hidden_cbcl_pixels_better_than_a_filled_fit():
    """Issue 34's target on CBCL faces: 30 % of the pixels hidden, masked
    nmf_sc (sW = 0.8, the paper's setting) errs less on them than nmf_sc fitted
    to the matrix whose holes are filled with their row's observed mean
    (benchmarks/README.md has the numbers)."""
    from nmfsc.datasets import load_cbcl

    V = load_cbcl()
    seen = np.random.default_rng(0).random(V.shape) >= 0.3
    hidden = ~seen
    means = np.where(seen, V, 0.0).sum(axis=1) / seen.sum(axis=1)
    filled = np.where(seen, V, means[:, None])

    def held_out(result):
        return np.linalg.norm((result.W @ result.H - V)[hidden]) / np.linalg.norm(V[hidden])

    kw = {"sparseness_w": 0.8, "random_state": 0, "max_iter": 200}
    with pytest.warns(ConvergenceWarning):
        masked = nmfsc.nmf_sc(np.where(seen, V, np.nan), 49, mask=seen, **kw)
    with pytest.warns(ConvergenceWarning):
        plain = nmfsc.nmf_sc(filled, 49, **kw)
    assert held_out(masked) < held_out(plain) < 0.7
