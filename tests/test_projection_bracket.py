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
from nmfsc._kernels import sparse_projection as kernels

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


@pytest.mark.parametrize("n", [1024, 2576, 4096, 5000, 30011])
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


def test_fooled_sample_still_gives_the_projection():
    # The strided sample sees only the planted entries, which sit far above the
    # rest: its threshold lands above every unsampled entry. The level passes'
    # Newton steps (exact sums over the whole vector) recover, and the answer
    # never depends on the sample.
    n = 20000
    rng = np.random.default_rng(2)
    x = rng.random(n)
    stride = n // bracket.sample_size(n)
    x[::stride] = 100.0 + rng.random(x[::stride].size)
    l1 = l1_for_sparseness(0.3, n)
    np.testing.assert_allclose(
        project(x, l1, 1.0), project(x, l1, 1.0, method="hoyer"), rtol=0, atol=ATOL
    )


@pytest.mark.parametrize("n", [5000, 20011])
def test_forced_miss_falls_back_to_the_exact_path(n):
    # With one pass allowed (a level pass, no band pass) the path gives up;
    # project_vector then runs the exact kernel, whose answer is the same.
    rng = np.random.default_rng(n)
    x = np.abs(rng.standard_normal(n))
    l1 = l1_for_sparseness(0.7, n)
    out = np.full(n, np.nan)
    assert bracket.shape_into(x, True, l1, l1, 1.0, out, 0, 1) == -1
    assert bracket.shape_into(x, True, l1, l1, 1.0, out, 0, 2) > 0
    np.testing.assert_allclose(out, project(x, l1, 1.0, method="hoyer"), rtol=0, atol=ATOL)


def test_tied_top_falls_back_to_the_index_tie_break():
    # Twenty entries tied at the top and a target sparser than the tie: the
    # projection is not unique, and only the exact kernel breaks the tie (by
    # index). The bracket path must give way to it.
    n = 20000
    rng = np.random.default_rng(8)
    x = 1e-3 * rng.random(n)
    x[rng.choice(n, 20, replace=False)] = 1.0
    l1 = l1_for_sparseness(0.99, n)
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


def _long_case(kind, n, rng):
    """(x, l1) for the determinism and agreement tests: the benchmark's two
    inputs, a heavy-tailed row and a solver's trial row near its target."""
    if kind == "normal":
        return np.abs(rng.standard_normal(n)), l1_for_sparseness(0.7, n)
    if kind == "worst":
        dense = project(np.abs(rng.standard_normal(n)), l1_for_sparseness(0.1, n), 1.0)
        return dense, l1_for_sparseness(0.9, n)
    if kind == "heavy":
        x = rng.lognormal(-8.0, 1.9, n) - 3e-4 * rng.random(n)
        return x, l1_for_sparseness(0.85, n)
    s = project(np.abs(rng.standard_normal(n)), l1_for_sparseness(0.85, n), 1.0)
    return s + 1e-2 * s.max() * rng.standard_normal(n), l1_for_sparseness(0.85, n)


@pytest.mark.parametrize("kind", ["normal", "worst", "heavy", "trial"])
@pytest.mark.parametrize("n", [10**4, 100003])
def test_every_long_path_is_deterministic_and_agrees(kind, n):
    """The same call gives the same bits every time (checkpoint resume relies
    on it), guided or not; project, project_batch's rows and columns and the
    parallel build agree to 4 ulp (all sums run in a fixed order, so they
    agree exactly); each is the paper's projection to ATOL."""
    rng = np.random.default_rng(n + len(kind))
    x, l1 = _long_case(kind, n, rng)
    assert _taken(x, l1, 1.0, True)
    first = project(x, l1, 1.0)
    np.testing.assert_allclose(first, project(x, l1, 1.0, method="hoyer"), rtol=0, atol=ATOL)
    X = np.stack([x[::-1], x, np.roll(x, 5)])
    guide = np.array([np.count_nonzero(first)] * 3)
    M = X.shape[0]
    maxp = kernels.max_filter_passes(n)
    runs = []
    for _ in range(2):
        rows = project_batch(X, l1, 1.0, axis=1)
        par = project_batch(X, l1, 1.0, axis=1, parallel=True)
        cols = project_batch(np.asfortranarray(X.T), l1, 1.0, axis=0)
        out = np.empty_like(X)
        status, passes = np.zeros(M, np.int64), np.zeros(M, np.int64)
        args = (X, np.full(M, l1), np.ones(M), True, kernels.METHOD_FAST, out, status, passes)
        kernels.project_rows_guided(*args, maxp, guide)
        runs.append((project(x, l1, 1.0), rows, par, cols, out.copy()))
    for a, b in zip(runs[0], runs[1], strict=True):
        np.testing.assert_array_equal(a, b)
    ulp4 = 4 * np.spacing(np.abs(first).max())
    single, rows, par, cols, guided = runs[0]
    np.testing.assert_array_equal(single, first)
    for other in (rows[1], par[1], cols[:, 1], guided[1]):
        np.testing.assert_allclose(other, first, rtol=0, atol=ulp4)


@pytest.mark.parametrize("nonneg", [True, False])
@pytest.mark.parametrize("n", [5000, 20011])
def test_long_strided_input_is_bit_identical_to_contiguous(nonneg, n):
    # A column view and its contiguous copy take differently compiled
    # specializations of the bracket path; its sums run in an order written in
    # the source (no fastmath), so the bits are the same.
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 3))
    if nonneg:
        X = np.abs(X)
    for target in [0.3, 0.7, 0.9]:
        l1 = l1_for_sparseness(target, n)
        column = X[:, 1]
        assert not column.flags.c_contiguous
        want = project(column.copy(), l1, 1.0, nonneg=nonneg)
        np.testing.assert_array_equal(project(column, l1, 1.0, nonneg=nonneg), want)
        batch = project_batch(X, l1, 1.0, axis=0, nonneg=nonneg)
        np.testing.assert_array_equal(batch[:, 1], want)


@pytest.mark.parametrize("kind", ["normal", "exponential", "cauchy", "near_constant", "signed"])
def test_bracket_path_matches_the_paper_kernel_at_length_100000(kind):
    rng = np.random.default_rng(len(kind))
    n = 100000
    for target in [0.4, 0.7, 0.9]:
        x = _vector(kind, n, rng)
        l1 = l1_for_sparseness(target, n) * 2.5
        nonneg = kind != "signed"
        assert _taken(x, l1, 2.5, nonneg)
        np.testing.assert_allclose(
            project(x, l1, 2.5, nonneg=nonneg),
            project(x, l1, 2.5, nonneg=nonneg, method="hoyer"),
            rtol=0,
            atol=ATOL * 2.5,
        )


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [0, 7, -1])
@pytest.mark.parametrize("n", [20000, 20011])
@pytest.mark.parametrize("nonneg", [True, False])
def test_long_nonfinite_input_is_refused(bad, where, n, nonneg):
    # In the sample (0), in a lane block (7), in the last block or the tail
    # (n - 1; 20011 is not a multiple of 16), unguided and guided.
    x = np.abs(np.random.default_rng(4).standard_normal(n))
    x[where] = bad
    l1 = l1_for_sparseness(0.7, x.size)
    assert not _taken(x, l1, 1.0, nonneg)
    for guide in (0, 3000):
        out = np.empty(n)
        assert bracket.bracket_shape_into(x, nonneg, l1, l1, 1.0, out, guide) == -1
    with pytest.raises(ValueError, match="NaN or infinity"):
        project(x, l1, 1.0, nonneg=nonneg)


def test_return_passes_keeps_the_papers_count():
    rng = np.random.default_rng(5)
    x = np.abs(rng.standard_normal(20000))
    l1 = l1_for_sparseness(0.7, x.size)
    _, ph = project(x, l1, 1.0, method="hoyer", return_passes=True)
    _, pf = project(x, l1, 1.0, return_passes=True)
    _, pb = project_batch(x[None, :], l1, 1.0, axis=1, return_passes=True)
    assert ph == pf == pb[0]


def test_feasible_long_input_is_returned_unchanged():
    rng = np.random.default_rng(6)
    x = np.abs(rng.standard_normal(10000))
    s = project(x, np.abs(x).sum(), np.linalg.norm(x))
    np.testing.assert_array_equal(s, x)
    # Nearly constant (the affine map of the projection is then far from the
    # identity while the result is x), and a projection projected again.
    near = 3.0 + 1e-9 * rng.random(10000)
    np.testing.assert_array_equal(project(near, near.sum(), np.linalg.norm(near)), near)
    once = project(x, l1_for_sparseness(0.8, x.size), 1.0)
    again = project(once, once.sum(), np.linalg.norm(once))
    np.testing.assert_array_equal(again, once)


def test_sample_selection_counts_to_half_the_binomial_error():
    rng = np.random.default_rng(9)
    signed = rng.standard_normal(700) * 10.0 ** rng.uniform(-300, 300, 700)
    for z in (
        rng.random(625),
        rng.lognormal(-8.0, 1.9, 2048),
        np.round(rng.random(999), 2),
        signed,  # keys of both signs whose span overflows an int64
        np.concatenate([-rng.random(300) * 1e300, rng.random(300) * 1e300]),
    ):
        lo, hi = z.min(), z.max()
        for rank in [1, 7, 100, z.size // 2, z.size - 3]:
            t = bracket._select(z, lo, hi, rank)
            assert lo <= t <= hi
            count = np.count_nonzero(z > t)
            ties = np.count_nonzero(z == t)
            assert abs(count - rank) <= max(1.0, 0.5 * np.sqrt(rank)) + ties


def test_short_vectors_keep_the_old_kernel():
    # CBCL's columns (361) keep the exact kernel; ORL's (2576) take the bracket.
    assert kernels.BRACKET_MIN_N == bracket.BRACKET_MIN_N == 1024


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


def test_guide_saves_passes_on_heavy_tailed_rows_and_moves_only_the_band():
    # Rows spread over orders of magnitude, as a solver's trial rows are (on
    # natural images the top 1 % holds 85 % of the squares): the projected
    # sample misjudges the support, and the level passes need more Newton
    # steps. Guided by the support size (a solver passes that of the factor
    # the trial steps from), one level pass suffices, with the same projection.
    n = 10000
    l1 = l1_for_sparseness(0.85, n)
    guided = unguided = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        x = rng.lognormal(-8.0, 1.9, n) - 3e-4 * rng.random(n)
        exact = project(x, l1, 1.0, method="hoyer")
        support = int(np.count_nonzero(exact))
        unguided += bracket.bracket_shape_into(x, True, l1, l1, 1.0, np.empty(n), 0)
        passes = bracket.bracket_shape_into(x, True, l1, l1, 1.0, np.empty(n), support)
        assert passes > 0
        guided += passes
        for guide in [0, support, int(support * 0.95) + 1, min(n, int(support * 1.05))]:
            out = np.full(n, np.nan)
            status, _ = kernels.project_vector_guided(
                x, l1, 1.0, True, kernels.METHOD_FAST, out, kernels.max_filter_passes(n), guide
            )
            assert status == kernels.STATUS_OK
            np.testing.assert_allclose(out, exact, rtol=0, atol=ATOL)
    assert guided < unguided


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


def _guided_rows(X, l1_unit, guide):
    """projection.project_rows_guided of X's rows at unit L2 norm, into a fresh
    array of X's dtype."""
    M = X.shape[0]
    out = np.empty_like(X)
    status, passes = np.zeros(M, np.int64), np.zeros(M, np.int64)
    args = (np.full(M, l1_unit), np.ones(M), True, kernels.METHOD_FAST, out, status, passes)
    kernels.project_rows_guided(X, *args, kernels.max_filter_passes(X.shape[1]), guide)
    assert not status.any()
    return out


def _step_rows(X, G, mu, l1_unit, own_norm, guide, dtype=np.float64):
    """projection.project_step_rows on fresh buffers: (out, status, passes)."""
    rows = X.shape[0]
    out = np.empty(X.shape, dtype)
    status, passes = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
    maxp = kernels.max_filter_passes(X.shape[1])
    row = np.empty(X.shape[1], dtype)
    kernels.project_step_rows(
        X, G, mu, l1_unit, own_norm, kernels.METHOD_FAST, out, status, passes, maxp, guide, row
    )
    return out, status, passes


@pytest.mark.parametrize("shape", [(1, 5), (3, 7), (25, 361), (6, 2576), (4, 10000)])
def test_step_rows_is_the_numpy_trial_projected(shape):
    # nmf_sc's fused step: the trial X - mu G formed row by row inside the
    # kernel gives the same bits as numpy's trial (multiply, then subtract)
    # projected by project_rows_guided; at each row's own norm (W's columns)
    # the same projection to rounding of that norm's sum of squares.
    rng = np.random.default_rng(sum(shape))
    X, G = rng.random(shape), 0.3 * rng.standard_normal(shape)
    mu = 0.37
    n = shape[1]
    l1_unit = l1_for_sparseness(0.6, n) if n > 1 else 1.0
    guide = np.count_nonzero(X, axis=1).astype(np.int64)
    trial = X - mu * G
    M = shape[0]
    out, st, _ = _step_rows(X, G, mu, l1_unit, False, guide)
    assert not st.any()
    np.testing.assert_array_equal(out, _guided_rows(trial, l1_unit, guide))
    # At each row's own norm.
    norms = np.linalg.norm(trial, axis=1)
    out, st, _ = _step_rows(X, G, mu, l1_unit, True, guide)
    assert not st.any()
    for r in range(M):
        want = project(trial[r], l1_unit * norms[r], norms[r])
        np.testing.assert_allclose(out[r], want, rtol=1e-13, atol=1e-13 * norms[r])
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), norms, rtol=1e-12)
    # float32: the trial rounded once from float64, the same projection.
    X32, G32 = X.astype(np.float32), G.astype(np.float32)
    trial32 = (X32.astype(np.float64) - mu * G32.astype(np.float64)).astype(np.float32)
    out32, st, _ = _step_rows(X32, G32, mu, l1_unit, False, guide, np.float32)
    assert not st.any() and out32.dtype == np.float32
    np.testing.assert_array_equal(out32, _guided_rows(trial32, l1_unit, guide))


def test_step_rows_flags_rows_without_a_norm_or_not_finite():
    # A trial row that is zero or overflows has no norm to be projected at,
    # and a NaN row cannot be projected: each gets a non-OK status (nmf_sc
    # then retries with a smaller step), the other rows are projected.
    X = np.ones((4, 6))
    G = np.zeros((4, 6))
    G[0] = 1.0  # row 0 of the trial is zero
    G[1, 2] = -1e308  # row 1 overflows at mu = 10
    G[2, 3] = np.nan
    guide = np.zeros(4, np.int64)
    l1_unit = l1_for_sparseness(0.5, 6)
    out, status, _ = _step_rows(X, G, 1.0, l1_unit, True, guide)
    assert status[0] != kernels.STATUS_OK and status[3] == kernels.STATUS_OK
    _, status, _ = _step_rows(X, G, 10.0, l1_unit, True, guide)
    assert status[1] != kernels.STATUS_OK and status[2] != kernels.STATUS_OK
    _, status, _ = _step_rows(X, G, 1.0, l1_unit, False, guide)
    assert status[2] != kernels.STATUS_OK and status[3] == kernels.STATUS_OK
