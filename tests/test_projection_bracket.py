"""The fast method's bracketing path for long vectors (nmfsc/_kernels/bracket.py).

Its result is checked against the paper's kernel ("hoyer", every pass over all
entries, with its own accurate moments): both are exact algorithms computed in
different orders, so they agree to a few hundred roundings of l2, the tolerance
the fast and hoyer methods already share (tests/test_projection.py).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from nmfsc import l1_for_sparseness, project, project_batch
from nmfsc._kernels import bracket, radix
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


@given(
    hnp.arrays(
        np.float64,
        st.integers(1, 3000),
        elements=st.floats(allow_nan=False, allow_infinity=False, width=64),
    )
)
def test_radix_sort_sorts_as_numpy_does(z):
    # The bracket's sample sort: the same values as np.sort, descending, for
    # any finite doubles (negatives, subnormals, ties, +-0 included).
    out = radix.sort_descending(np.ascontiguousarray(z))
    expected = np.sort(z)[::-1]
    np.testing.assert_array_equal(out, expected)
    # -0.0 and +0.0 compare equal; the sort puts +0.0 first.
    zero = out == 0.0
    assert not np.any(np.signbit(out[zero])[:-1] > np.signbit(out[zero])[1:])


def test_guide_rescues_heavy_tailed_rows_and_moves_only_the_band():
    # Rows spread over orders of magnitude, as a solver's trial rows are (on
    # natural images the top 1 % holds 85 % of the squares): the projected
    # sample misjudges the support, the band misses, and the exact kernel has
    # to run. Guided by the support size (a solver passes that of the factor
    # the trial steps from), the band holds, with the same projection.
    n = 10000
    l1 = l1_for_sparseness(0.85, n)
    unguided_misses = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        x = rng.lognormal(-8.0, 1.9, n) - 3e-4 * rng.random(n)
        exact = project(x, l1, 1.0, method="hoyer")
        support = int(np.count_nonzero(exact))
        unguided_misses += not _taken(x, l1, 1.0, True)
        assert bracket.bracket_shape_into(x, True, l1, l1, 1.0, np.empty(n), support) >= 0
        for guide in [0, support, int(support * 0.95) + 1, min(n, int(support * 1.05))]:
            out = np.full(n, np.nan)
            status, _ = kernels.project_vector_guided(
                x, l1, 1.0, True, kernels.METHOD_FAST, out, kernels.max_filter_passes(n), guide
            )
            assert status == kernels.STATUS_OK
            np.testing.assert_allclose(out, exact, rtol=0, atol=ATOL)
    assert unguided_misses >= 3


@pytest.mark.parametrize("guide", [-5, 1, 10**6])
def test_any_guide_gives_the_projection(guide):
    # A wrong guide costs time (a missed band falls back), never the answer.
    rng = np.random.default_rng(6)
    x = np.abs(rng.standard_normal(5000))
    l1 = l1_for_sparseness(0.6, 5000)
    out = np.empty(5000)
    kernels.project_vector_guided(x, l1, 1.0, True, kernels.METHOD_FAST, out, 100, guide)
    np.testing.assert_allclose(out, project(x, l1, 1.0, method="hoyer"), rtol=0, atol=ATOL)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_support_counts_are_count_nonzero(dtype):
    rng = np.random.default_rng(7)
    X = rng.random((9, 301)).astype(dtype)
    X[X < 0.6] = 0
    X[0] = 0
    X[1, 5] = -0.0
    X[2, 7] = np.float32(1e-45) if dtype == np.float32 else 5e-324
    np.testing.assert_array_equal(bracket.row_supports(X), np.count_nonzero(X, axis=1))
    np.testing.assert_array_equal(bracket.column_supports(X), np.count_nonzero(X, axis=0))
