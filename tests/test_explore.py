"""explore_nmf_sc: basin hopping on nmf_sc's problem (nmfsc.solvers.explore)."""

import numpy as np
import pytest
import scipy.sparse as sp

from nmfsc import ConvergenceWarning, nmf_sc
from nmfsc.solvers.explore import PERTURBATIONS, explore_nmf_sc
from nmfsc.sparseness import sparseness

V = np.abs(np.random.default_rng(3).standard_normal((30, 40)))


@pytest.fixture(scope="module")
def explored():
    return explore_nmf_sc(V, 5, sparseness_w=0.7, max_time=120, max_hops=12, random_state=0)


def test_the_first_run_is_the_accelerated_solver(explored):
    first = nmf_sc(V, 5, sparseness_w=0.7, solver="accelerated", random_state=0, max_iter=2**62)
    head = explored.objective[: first.objective.size]  # the best so far: rounding aside, E
    np.testing.assert_allclose(head, first.objective, rtol=1e-12)
    assert explored.objective[-1] <= first.objective[-1]


def test_the_best_so_far_never_rises_and_is_the_kept_fit(explored):
    assert np.all(np.diff(explored.objective) <= 0)
    assert np.all(np.diff(explored.times) >= 0)
    assert explored.objective.size == explored.times.size == explored.n_iter + 1
    E = 0.5 * np.linalg.norm(V - explored.W @ explored.H) ** 2
    assert explored.objective[-1] == pytest.approx(E, rel=1e-9)
    assert explored.params["explore"]["hops"] == 12


def test_the_kept_fit_holds_the_constraint_and_is_a_stop(explored):
    np.testing.assert_allclose(sparseness(explored.W, axis=0), 0.7, atol=1e-9)
    assert explored.stop_reason == "tol" and explored.converged
    assert explored.stationarity is not None


def test_hops_find_a_lower_minimum_here():
    """On this problem the accelerated solver's first stop is not the lowest
    the hops find (the case the explorer exists for)."""
    result = explore_nmf_sc(V, 5, sparseness_w=0.7, max_time=120, max_hops=12, random_state=0)
    first = nmf_sc(V, 5, sparseness_w=0.7, solver="accelerated", random_state=0)
    assert result.params["explore"]["kept"] >= 1
    assert result.relative_error < first.relative_error * (1 - 1e-4)


def test_the_same_seed_gives_the_same_search(explored):
    again = explore_nmf_sc(V, 5, sparseness_w=0.7, max_time=120, max_hops=12, random_state=0)
    np.testing.assert_array_equal(again.W, explored.W)
    np.testing.assert_array_equal(again.objective, explored.objective)


def test_a_sparse_v_and_a_start_of_ones_own():
    S = sp.csr_matrix(np.where(V > 1.0, V, 0.0))
    with pytest.warns(ConvergenceWarning):  # the start alone
        first = nmf_sc(S, 3, sparseness_h=0.6, random_state=1, max_iter=0)
    result = explore_nmf_sc(
        S,
        3,
        sparseness_h=0.6,
        max_time=60,
        max_hops=len(PERTURBATIONS),
        W_init=first.W,
        H_init=first.H,
    )
    np.testing.assert_allclose(sparseness(result.H, axis=1), 0.6, atol=1e-9)
    assert result.params["explore"]["hops"] == len(PERTURBATIONS)


def test_the_budget_is_required_and_checked():
    with pytest.raises(TypeError, match="needs max_time"):
        explore_nmf_sc(V, 3, sparseness_w=0.5, max_time=None)
    with pytest.raises(ValueError, match="max_time must be finite and > 0"):
        explore_nmf_sc(V, 3, sparseness_w=0.5, max_time=0)
    with pytest.raises(ValueError, match="max_hops must be >= 0"):
        explore_nmf_sc(V, 3, sparseness_w=0.5, max_time=10, max_hops=-1)


def test_progress_says_each_kept_hop(capsys):
    result = explore_nmf_sc(
        V, 5, sparseness_w=0.7, max_time=60, max_hops=12, random_state=0, progress=True
    )
    lines = capsys.readouterr().err.strip().splitlines()
    kept = [line for line in lines if "(kept)" in line]
    assert len(kept) == result.params["explore"]["kept"] >= 1
    assert all(line.startswith("explore_nmf_sc: hop") for line in lines)
