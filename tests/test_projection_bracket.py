"""The fast method's bracketing path for long vectors (nmfsc/_kernels/bracket.py).

Its result is checked against the paper's kernel ("hoyer", every pass over all
entries, with its own accurate moments): both are exact algorithms computed in
different orders, so they agree to a few hundred roundings of l2, the tolerance
the fast and hoyer methods already share (tests/test_projection.py).
"""

import numpy as np
import pytest

from nmfsc import l1_for_sparseness, project, project_batch
from nmfsc._kernels import bracket
from nmfsc._kernels import projection as kernels

ATOL = 1e-13  # relative to l2, as test_fast_and_hoyer_count_the_same_passes

KINDS = ["normal", "exponential", "cauchy", "near_constant", "ties", "tiny", "huge", "signed"]


def _vector(kind, n, rng):
    x = np.abs(rng.standard_normal(n))
    if kind == "exponential":
        x = rng.exponential(size=n)
    elif kind == "cauchy":
        x = np.abs(rng.standard_cauchy(n))
    elif kind == "near_constant":
        x = 3.0 + 1e-9 * rng.random(n)
    elif kind == "ties":
        x = np.round(x * 4.0) / 4.0
    elif kind == "tiny":
        x *= 1e-300
    elif kind == "huge":
        x *= 1e300
    elif kind == "signed":
        x = rng.standard_normal(n)
    return x


def _taken(x, l1, l2, nonneg):
    """Whether the bracket path itself answers (no fallback)."""
    return bracket.bracket_shape_into(x, nonneg, l1 / l2, l1, l2, np.empty(x.size), 0) >= 0


@pytest.mark.parametrize("n", [4096, 5000, 30011])
@pytest.mark.parametrize("kind", KINDS)
def test_bracket_path_matches_the_paper_kernel(n, kind):
    rng = np.random.default_rng(n + len(kind))
    taken = 0
    for target in [0.1, 0.4, 0.7, 0.9, 0.99]:
        x = _vector(kind, n, rng)
        l2 = 2.5
        l1 = l1_for_sparseness(target, n) * l2
        nonneg = kind != "signed"
        s_fast = project(x, l1, l2, nonneg=nonneg)
        s_hoyer = project(x, l1, l2, nonneg=nonneg, method="hoyer")
        np.testing.assert_allclose(s_fast, s_hoyer, rtol=0, atol=ATOL * l2)
        taken += _taken(x, l1, l2, nonneg)
    # The guards may send a few inputs to the exact path, but not every one.
    assert taken >= 3


def test_bracket_path_is_taken_on_the_benchmark_inputs():
    rng = np.random.default_rng(1)
    for n in [10**4, 10**5]:
        x = np.abs(rng.standard_normal(n))
        assert _taken(x, l1_for_sparseness(0.7, n), 1.0, True)
        worst = project(x, l1_for_sparseness(0.1, n), 1.0)
        assert _taken(worst, l1_for_sparseness(0.9, n), 1.0, True)


def test_missed_bracket_falls_back_to_the_exact_path():
    # The strided sample sees only the planted entries, which sit far above the
    # rest: its threshold lands above every unsampled entry, the bracket misses.
    n = 20000
    rng = np.random.default_rng(2)
    x = rng.random(n)
    stride = n // bracket.sample_size(n)
    x[::stride] = 100.0 + rng.random(x[::stride].size)
    l1 = l1_for_sparseness(0.3, n)
    assert not _taken(x, l1, 1.0, True)
    np.testing.assert_allclose(
        project(x, l1, 1.0), project(x, l1, 1.0, method="hoyer"), rtol=0, atol=ATOL
    )


def test_bracket_path_is_deterministic_and_batch_agrees():
    rng = np.random.default_rng(3)
    n = 20000
    X = np.abs(rng.standard_normal((3, n)))
    l1 = l1_for_sparseness(0.8, n)
    first = project(X[1], l1, 1.0)
    for _ in range(3):
        np.testing.assert_array_equal(project(X[1], l1, 1.0), first)
    rows = project_batch(X, l1, 1.0, axis=1)
    par = project_batch(X, l1, 1.0, axis=1, parallel=True)
    cols = project_batch(np.asfortranarray(X.T), l1, 1.0, axis=0)
    ulp4 = 4 * np.spacing(np.abs(first).max())
    for other in (rows[1], par[1], cols[:, 1], project(X.T[:, 1], l1, 1.0)):
        np.testing.assert_allclose(other, first, rtol=0, atol=ulp4)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [0, 7, 19999])
def test_long_nonfinite_input_is_refused(bad, where):
    x = np.abs(np.random.default_rng(4).standard_normal(20000))
    x[where] = bad
    l1 = l1_for_sparseness(0.7, x.size)
    assert not _taken(x, l1, 1.0, True)
    with pytest.raises(ValueError, match="NaN or infinity"):
        project(x, l1, 1.0)


def test_return_passes_keeps_the_papers_count():
    rng = np.random.default_rng(5)
    x = np.abs(rng.standard_normal(20000))
    l1 = l1_for_sparseness(0.7, x.size)
    _, ph = project(x, l1, 1.0, method="hoyer", return_passes=True)
    _, pf = project(x, l1, 1.0, return_passes=True)
    _, pb = project_batch(x[None, :], l1, 1.0, axis=1, return_passes=True)
    assert ph == pf == pb[0]


def test_feasible_long_input_is_returned_unchanged():
    x = np.abs(np.random.default_rng(6).standard_normal(10000))
    s = project(x, np.abs(x).sum(), np.linalg.norm(x))
    np.testing.assert_array_equal(s, x)


def test_short_vectors_keep_the_old_kernel():
    assert kernels.BRACKET_MIN_N == bracket.BRACKET_MIN_N == 4096


@pytest.mark.parametrize("noise", [1e-3, 1e-2, 1e-1])
def test_rows_near_their_targets_take_the_bracket(noise):
    # A solver's trial row: a projection at the target plus a small step. The
    # first band can miss such a row's support; the widened one must not.
    rng = np.random.default_rng(7)
    for n in [10**4, 10**5]:
        l1 = l1_for_sparseness(0.85, n)
        s = project(np.abs(rng.standard_normal(n)), l1, 1.0)
        x = s + noise * s.max() * rng.standard_normal(n)
        assert _taken(x, l1, 1.0, True)
        np.testing.assert_allclose(
            project(x, l1, 1.0), project(x, l1, 1.0, method="hoyer"), rtol=0, atol=ATOL
        )
