"""Every solver against the plain NumPy transcription of SPEC (solver_reference.py),
iterate by iterate; nmf_sc's monotone objective and its constraints at every iterate;
Euclidean MU against scikit-learn."""

import warnings

import numpy as np
import pytest
import solver_reference as ref

import nmfsc
from nmfsc import sparseness

N, T, M = 30, 40, 4
N_STEPS = 20
CONSTRAINTS = [(None, None), (0.6, None), (None, 0.7), (0.5, 0.75)]


def data(seed=0, shape=(N, T)):
    # Not max 1, so that the rescaling to max(V) = 1 and back is exercised.
    return 7.0 * np.abs(np.random.default_rng(100 + seed).standard_normal(shape)) + 0.01


def run_recording(solver, V, n_iter, **kwargs):
    """Run ``n_iter`` iterations, recording every iterate through the callback."""
    iterates = []

    def record(state):
        assert not state.W.flags.writeable and not state.H.flags.writeable
        iterates.append((state.W.copy(), state.H.copy(), state.objective))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        result = solver(V, M, max_iter=n_iter, tol=0.0, callback=record, **kwargs)
    return result, iterates


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def assert_matches_reference(result, iterates, ref_iterates, ref_history):
    assert result.n_iter == len(ref_iterates) - 1 == len(iterates)
    np.testing.assert_allclose(result.objective, ref_history, rtol=1e-10)
    for k, ((W, H, objective), (Wr, Hr)) in enumerate(
        zip(iterates, ref_iterates[1:], strict=True), 1
    ):
        assert rel(W, Wr) < 1e-10, f"W differs at iteration {k}: {rel(W, Wr):.3g}"
        assert rel(H, Hr) < 1e-10, f"H differs at iteration {k}: {rel(H, Hr):.3g}"
        assert objective == result.objective[k]
    np.testing.assert_array_equal(result.W, iterates[-1][0])
    np.testing.assert_array_equal(result.H, iterates[-1][1])


@pytest.mark.parametrize(("s_w", "s_h"), CONSTRAINTS)
def test_nmf_sc_matches_reference(s_w, s_h):
    V = data(1)
    result, iterates = run_recording(
        nmfsc.nmf_sc, V, N_STEPS, sparseness_w=s_w, sparseness_h=s_h, random_state=3
    )
    W0, H0 = ref.random_start(3, N, M, T)
    ref_iterates, ref_history = ref.nmf_sc(V, W0, H0, N_STEPS, s_w, s_h)
    assert_matches_reference(result, iterates, ref_iterates, ref_history)


@pytest.mark.parametrize(
    ("solver", "reference", "params"),
    [
        (nmfsc.nmf_euclidean, ref.nmf_euclidean, {}),
        (nmfsc.nmf_divergence, ref.nmf_divergence, {}),
        (nmfsc.local_nmf, ref.local_nmf, {}),
        (nmfsc.local_nmf, ref.local_nmf, {"alpha": 0.5, "beta": 3.0}),
        (nmfsc.sparse_nmf, ref.sparse_nmf, {}),
        (nmfsc.sparse_nmf, ref.sparse_nmf, {"alpha": 100.0}),
    ],
    ids=["euclidean", "divergence", "lnmf", "lnmf-ab", "snmf", "snmf-100"],
)
def test_baselines_match_reference(solver, reference, params):
    V = data(2)
    result, iterates = run_recording(solver, V, N_STEPS, random_state=5, **params)
    W0, H0 = ref.random_start(5, N, M, T)
    ref_iterates, ref_history = reference(V, W0, H0, N_STEPS, **params)
    assert_matches_reference(result, iterates, ref_iterates, ref_history)


def test_w_init_h_init_match_reference():
    """Given starts (in V's units) replace the random draws exactly."""
    V = data(3)
    W0, H0 = ref.random_start(11, N, M, T)
    W0 *= 3.0
    result, iterates = run_recording(
        nmfsc.nmf_sc, V, 8, sparseness_w=0.5, W_init=W0, H_init=H0, random_state=999
    )
    ref_iterates, ref_history = ref.nmf_sc(V, W0 / V.max(), H0, 8, 0.5, None)
    assert_matches_reference(result, iterates, ref_iterates, ref_history)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("s_w", "s_h"), CONSTRAINTS)
def test_nmf_sc_objective_never_increases_and_constraints_hold(seed, s_w, s_h):
    """The exact 0.5 ||V - W H||^2, computed here from every iterate, never
    increases by more than 1e-12 ||V||^2 (rounding), and every iterate meets
    the sparseness constraints to 1e-9 (H rows also at unit norm)."""
    V = data(seed)
    result, iterates = run_recording(
        nmfsc.nmf_sc, V, 150, sparseness_w=s_w, sparseness_h=s_h, random_state=seed
    )
    slack = 1e-12 * np.sum(V**2)
    previous = result.objective[0]  # the start (its exactness: test_baselines_match_reference)
    for W, H, objective in iterates:
        exact = 0.5 * np.sum((V - W @ H) ** 2)
        assert exact <= previous + slack
        assert abs(exact - objective) <= 1e-12 * np.sum(V**2)
        previous = exact
        assert np.all(W >= 0) and np.all(H >= 0)
        if s_w is not None:
            np.testing.assert_allclose(sparseness(W, axis=0), s_w, rtol=0, atol=1e-9)
        if s_h is not None:
            np.testing.assert_allclose(sparseness(H, axis=1), s_h, rtol=0, atol=1e-9)
            np.testing.assert_allclose(np.linalg.norm(H, axis=1), 1.0, rtol=0, atol=1e-9)
    assert np.all(np.diff(result.objective) <= slack)


def test_euclidean_matches_scikit_learn():
    """nmf_euclidean against scikit-learn's multiplicative-update NMF.

    Exact agreement is impossible: SPEC's update adds 1e-9 to every
    denominator (scikit-learn only replaces exact zeros), and nmf_euclidean
    rescales the rows of H to unit norm each iteration (WH unchanged; without
    the 1e-9 the update is invariant to that rescaling, with it the two differ
    by about 1e-9 relative). So the products W H are compared, to 1e-6.
    Orientation: scikit-learn factors X = V^T ~ W_sk H_sk, so W_sk = H^T and
    H_sk = W^T; it updates W_sk then H_sk, i.e. H then W, as SPEC does.
    """
    sklearn_nmf = pytest.importorskip("sklearn.decomposition")
    from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning

    V = data(4)
    W0, H0 = ref.random_start(4, N, M, T)
    for n_iter in (1, 5, 30):
        model = sklearn_nmf.NMF(
            n_components=M,
            init="custom",
            solver="mu",
            beta_loss="frobenius",
            max_iter=n_iter,
            tol=0.0,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkConvergenceWarning)
            W_sk = model.fit_transform(V.T, W=H0.T.copy(), H=W0.T.copy())
        WH_sk = (W_sk @ model.components_).T
        with pytest.warns(nmfsc.ConvergenceWarning):
            result = nmfsc.nmf_euclidean(V, M, W_init=W0, H_init=H0, max_iter=n_iter, tol=0.0)
        assert model.n_iter_ == result.n_iter == n_iter
        assert rel(result.W @ result.H, WH_sk) < 1e-6


def test_sparse_nmf_recomputes_the_quotient_for_the_w_update():
    """One sparse_nmf iteration follows nmfpack's snmf.m: the W update uses
    C' = V / (W H') with the *new* H, not the quotient of the H update (the
    two orders give different iterates, so this pins the order)."""
    V = data(4)
    W0, H0 = ref.random_start(7, N, M, T)
    result, iterates = run_recording(nmfsc.sparse_nmf, V, 1, random_state=7)
    Vn = V / V.max()
    W = W0 / W0.sum(axis=0)
    C = Vn / (W @ H0)
    H = H0 * (W.T @ C) / 2.0  # alpha = 1
    recomputed = W * ((Vn / (W @ H)) @ H.T) / H.sum(axis=1)
    reused = W * (C @ H.T) / H.sum(axis=1)
    W_new, H_new = iterates[-1][0] / V.max(), iterates[-1][1]
    np.testing.assert_allclose(H_new, H, rtol=1e-12)
    np.testing.assert_allclose(W_new, recomputed / recomputed.sum(axis=0), rtol=1e-12)
    assert not np.allclose(W_new, reused / reused.sum(axis=0), rtol=1e-6)
