"""project_average: the exact projection onto a *mean* sparseness over a group of
vectors (Ohib, Gillis et al. 2022), each vector at its own norm.

Checked against a brute force that does not assume the shared-threshold
structure (it searches the split of the L1 budget between the vectors, scoring
each split with the exact single-vector :func:`nmfsc.project`), by randomised
properties (constraints, r = 1, invariances, one multiplier), against the
independent projection of every vector at the target, and on bad input.
"""

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import minimize_scalar

from nmfsc import l1_for_sparseness, project, project_average, project_batch, sparseness


def norms_of(A):
    """The L2 norm of every column of A, without overflow or underflow."""
    peak = np.max(np.abs(A), axis=0)
    safe = np.where(peak > 0, peak, 1.0)
    return np.linalg.norm(A / safe, axis=0) * peak


def objective(X, Y):
    """sum_i <x_i, y_i>: with the norms fixed, the larger the closer Y is to X."""
    return float(np.sum(X * Y))


def targets_of(X, norms):
    return norms_of(X) if norms is None else np.broadcast_to(np.asarray(norms, float), X.shape[1])


def assert_feasible(Y, X, s, norms=None, norm_rtol=1e-12, sparseness_tol=1e-10):
    """Y >= 0, every column at its norm (zero where the norm is zero), mean
    sparseness of the others equal to s."""
    lengths = targets_of(X, norms)
    assert Y.shape == X.shape and Y.dtype == np.float64
    assert np.all(Y >= 0)
    active = lengths > 0
    assert np.all(Y[:, ~active] == 0)
    if active.any():
        got = norms_of(Y[:, active])
        np.testing.assert_allclose(got, lengths[active], rtol=norm_rtol, atol=0)
        mean = float(np.mean(sparseness(Y[:, active], axis=0)))
        assert abs(mean - s) <= sparseness_tol, (mean, s)


# --------------------------------------------------------------------------
# Brute force: the best split of the L1 budget, scored by the exact `project`.


def _value(x, ratio, length):
    """<x, y> for the closest y >= 0 to x with ||y||_1 / ||y||_2 = ratio, ||y|| = length."""
    ratio = min(max(ratio, 1.0), np.sqrt(x.size))
    return float(x @ project(x, ratio * length, length))


def _best_split(xs, lengths, budget, grid=201):
    """max of sum_i _value(x_i, k_i, l_i) over k_1 + ... + k_m = budget, every
    k_i in [1, sqrt(n)]: a grid on k_1, refined by bounded scalar minimisation
    around its best point; the rest split the same way, recursively."""
    m = len(xs)
    if m == 1:
        return _value(xs[0], budget, lengths[0])
    root_n = np.sqrt(xs[0].size)
    lo = max(1.0, budget - (m - 1) * root_n)
    hi = min(root_n, budget - (m - 1))
    inner = max(grid // 4, 21)

    def loss(k):
        return -(_value(xs[0], k, lengths[0]) + _best_split(xs[1:], lengths[1:], budget - k, inner))

    if hi <= lo:
        return -loss(lo)
    ks = np.linspace(lo, hi, grid)
    losses = [loss(k) for k in ks]
    j = int(np.argmin(losses))
    bounds = (ks[max(j - 1, 0)], ks[min(j + 1, grid - 1)])
    res = minimize_scalar(loss, bounds=bounds, method="bounded", options={"xatol": 1e-12})
    return -min(float(res.fun), losses[j])


def _case(r, seed):
    """Small adversarial groups: signs, zeros, ties, constant and non-positive
    vectors, own or given norms, targets at and between the ends."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    kind = seed % 6
    X = rng.normal(size=(n, r))
    if kind == 1:
        X = np.round(2 * X) / 2  # ties and zeros
    elif kind == 2:
        X[:, 0] = 0.7  # a constant vector: its ratio jumps at its threshold
    elif kind == 3:
        X[:, -1] = -np.abs(X[:, -1])  # nothing positive
    elif kind == 4:
        X[: max(n // 2, 1), 0] = X[:, 0].max() + 1.0  # tied largest entries
    elif kind == 5:
        X[rng.random((n, r)) < 0.4] = 0.0
    norms = [None, 1.0, rng.uniform(0.2, 5.0, size=r)][seed % 3]
    s = float([0.0, 1.0, 0.3, 0.8, rng.uniform(), rng.uniform()][(seed // 3) % 6])
    return X, s, norms


@pytest.mark.parametrize(("r", "seed"), [(2, k) for k in range(36)] + [(3, k) for k in range(12)])
def test_no_split_of_the_budget_does_better(r, seed):
    X, s, norms = _case(r, seed)
    n = X.shape[0]
    Y = project_average(X, s, norms=norms)
    assert_feasible(Y, X, s, norms)
    lengths = targets_of(X, norms)
    active = np.flatnonzero(lengths > 0)
    root_n = np.sqrt(n)
    budget = active.size * (root_n - s * (root_n - 1.0))
    best = _best_split([X[:, i] for i in active], lengths[active], budget)
    scale = float(np.sum(lengths * norms_of(X))) or 1.0
    assert objective(X, Y) >= best - 1e-9 * scale


# --------------------------------------------------------------------------
# Properties.

# Subnormal entries are left out: within a vector, entries below 2^-1022 of its
# largest magnitude keep only a few bits (test_subnormal_entries).
_entries = st.one_of(
    st.floats(-1.0, 1.0, allow_nan=False, allow_subnormal=False),
    st.sampled_from([0.0, 1.0, 0.5, -0.5, 0.1, 1e-300, 1.0 - 2.0**-52, 1e-8]),
)
_targets = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0))


def powers_of_ten(exponent):
    return st.one_of(st.just(1.0), st.floats(-exponent, exponent).map(lambda e: 10.0**e))


@st.composite
def groups(draw, max_r=6, max_n=30, exponent=30):
    """(X, s, norms): r vectors of length n as columns, each scaled by its own
    power of ten; norms None (their own), 1.0 or one per vector (some zero)."""
    r = draw(st.integers(1, max_r))
    n = draw(st.integers(2, max_n))
    X = draw(hnp.arrays(np.float64, (n, r), elements=_entries))
    X = X * np.array(draw(st.lists(powers_of_ten(exponent), min_size=r, max_size=r)))
    norms = draw(
        st.one_of(
            st.none(),
            st.just(1.0),
            hnp.arrays(np.float64, r, elements=st.one_of(st.just(0.0), st.floats(1e-3, 1e3))),
        )
    )
    # A norm in the subnormal range has too few bits to hold a chosen sparseness.
    lengths = targets_of(X, norms)
    assume(not np.any((lengths > 0) & (lengths < 1e-290)))
    return X, draw(_targets), norms


@st.composite
def separated_groups(draw, max_r=5, max_n=20, min_n=3):
    """Distinct entries (gaps of 1e-3 of the range) in every vector, moderate
    scales, all norms positive, targets away from 0 and 1: a well-conditioned
    solution, whose thresholds can be read back from it."""
    r = draw(st.integers(1, max_r))
    n = draw(st.integers(min_n, max_n))
    ints = [
        draw(hnp.arrays(np.int64, n, elements=st.integers(-1000, 1000), unique=True))
        for _ in range(r)
    ]
    X = np.column_stack(ints) / 1000.0
    X = X * np.array(draw(st.lists(powers_of_ten(3), min_size=r, max_size=r)))
    norms = draw(
        st.one_of(st.none(), st.just(1.0), hnp.arrays(np.float64, r, elements=st.floats(0.1, 10.0)))
    )
    return X, draw(st.floats(0.05, 0.95)), norms


@given(problem=groups())
@example(problem=(np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 0.5, 0.2, 0.0]]).T, 0.6, None))
@example(problem=(np.zeros((4, 3)), 0.5, 1.0))
@example(problem=(np.array([[0.0, 1e-8], [-0.8, 1.0], [0.7, 0.5]]).T, 0.75, None))
# The second vector's support lies 1e-300 below its scale, and its weight is
# 1e-15 of the first's: the multiplier is of order 1e-315 relative to theirs.
@example(problem=(np.array([[1.0, 0.0, 0.0, 0.0], [-5e-8, 1e-307, 0.0, 0.0]]).T, 0.75, None))
def test_constraints_met(problem):
    X, s, norms = problem
    Y = project_average(X, s, norms=norms)
    assert_feasible(Y, X, s, norms)


@given(problem=groups(max_r=1, max_n=40))
# The support's spread (1e-229) is far below the vector's scale: its squares
# would underflow, and the multiplier lies 1e-229 from a breakpoint of order 1e-230.
@example(problem=(np.array([[0.0, -1.0] + [-1.5851465542686083e-229] * 10]).T, 0.5, None))
def test_one_vector_is_project(problem):
    X, s, norms = problem
    x = X[:, 0]
    length = float(targets_of(X, norms)[0])
    # Within 1e-4 of sparseness 0 the answer bends by sqrt(1 - rho^2 / n) per
    # change of rho: one ulp in the ratio is then far more than 1e-12 of it.
    assume(length > 0 and (s == 0.0 or s >= 1e-4))
    y = project_average(X, s, norms=norms)[:, 0]
    expected = project(x, l1_for_sparseness(s, x.size, length), length)
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-12 * length)


@given(problem=groups(), data=st.data())
def test_permuting_vectors_permutes_the_result(problem, data):
    X, s, norms = problem
    # Summed in another order, the ratios differ by an ulp; within 1e-4 of
    # sparseness 0 or 1 the answer bends by far more than 1e-10 per ulp.
    assume(s in (0.0, 1.0) or 1e-4 <= s <= 1.0 - 1e-4)
    r = X.shape[1]
    perm = np.array(data.draw(st.permutations(range(r))))
    Y = project_average(X, s, norms=norms)
    permuted_norms = norms if norms is None or np.ndim(norms) == 0 else norms[perm]
    Z = project_average(X[:, perm], s, norms=permuted_norms)
    lengths = targets_of(X, norms)[perm]
    np.testing.assert_allclose(Z, Y[:, perm], rtol=0, atol=1e-10 * max(lengths.max(), 1e-300))


@given(problem=groups(), k=st.integers(-60, 60))
def test_scaling_by_a_power_of_two_is_exact(problem, k):
    X, s, _ = problem
    c = 2.0**k
    # Exact as long as scaling neither under- nor overflows.
    nonzero = np.abs(X[X != 0])
    assume(nonzero.size == 0 or (nonzero.min() * min(c, 1.0) >= 2.0**-1000))
    Y = project_average(X, s)
    np.testing.assert_array_equal(project_average(c * X, s), c * Y)


@given(problem=separated_groups(), c=st.floats(1e-3, 1e3))
def test_scaling_scales_the_result(problem, c):
    X, s, _ = problem
    Y = project_average(X, s)
    np.testing.assert_allclose(project_average(c * X, s), c * Y, rtol=0, atol=1e-10 * c * Y.max())


@given(problem=groups())
def test_rows_are_the_transposed_columns(problem):
    X, s, norms = problem
    np.testing.assert_array_equal(
        project_average(np.ascontiguousarray(X.T), s, axis=1, norms=norms),
        project_average(X, s, axis=0, norms=norms).T,
    )


def _threshold_read_back(x, y):
    """tau with y = c (x - tau)_+ on y's support, by least squares, or None
    where it is ill-determined (a single entry, or a nearly flat support)."""
    on = y > 0
    if on.sum() < 2 or np.ptp(y[on]) < 1e-3 * y[on].max():
        return None
    A = np.column_stack([np.ones(on.sum()), y[on]])
    return float(np.linalg.lstsq(A, x[on], rcond=None)[0][0])


@given(problem=separated_groups(min_n=3))
@example(
    problem=(
        np.array(
            [
                [0.0, 1e-3, -1e-3, 2e-3, -2e-3, 3e-3, -3e-3, 4e-3, -4e-3, 5e-3, -5e-3],
                [0.0, 1e-3, -1e-3, 2e-3, -2e-3, 3e-3, 4e-3, 5e-3, 8e-3, 0.994, 0.995],
                [0.0, 1.0, -1.0, 2.0, -3.0, 74.0, 77.0, 103.0, 107.0, 184.0, -231.0],
            ]
        ).T,
        0.87890625,
        None,
    )
)
def test_one_shared_multiplier(problem):
    """KKT: y_i = l_i (x_i - tau_i)_+ / ||.|| with tau_i * l_i = mu, one mu for all i."""
    X, s, norms = problem
    Y = project_average(X, s, norms=norms)
    lengths = targets_of(X, norms)
    scale = float(np.max(lengths * np.max(np.abs(X), axis=0)))
    multipliers = []
    for i in range(X.shape[1]):
        x, y, length = X[:, i], Y[:, i], lengths[i]
        tau = _threshold_read_back(x, y)
        if tau is not None:
            expected = np.maximum(x - tau, 0.0)
            expected *= length / np.linalg.norm(expected)
            np.testing.assert_allclose(y, expected, rtol=0, atol=1e-9 * length)
            multipliers.append(tau * length)
    if not multipliers:
        return
    mu = float(np.median(multipliers))
    tol = 1e-9 * max(scale, abs(mu))
    assert np.ptp(multipliers) <= tol
    # Every support is where x_i > mu / l_i (a single entry: the largest, at or
    # past the threshold).
    for i in range(X.shape[1]):
        k = np.count_nonzero(Y[:, i])
        ranked = np.sort(X[:, i])[::-1] * lengths[i]
        if k < X.shape[0]:
            assert ranked[k] <= mu + tol
        if k > 1:
            assert ranked[k - 1] >= mu - tol
        else:
            np.testing.assert_allclose(Y[np.argmax(X[:, i]), i], lengths[i], rtol=1e-14)


@given(problem=separated_groups())
def test_at_least_as_close_as_every_vector_at_the_target(problem):
    X, s, norms = problem
    n = X.shape[0]
    lengths = targets_of(X, norms).copy()
    Y = project_average(X, s, norms=norms)
    S = project_batch(X, l1_for_sparseness(s, n, lengths), lengths)
    scale = float(np.sum(lengths * norms_of(X)))
    assert objective(X, Y) >= objective(X, S) - 1e-12 * scale


def test_vectors_of_different_natural_sparseness_share_the_budget():
    # A flat-ish column and a spiky one: holding both at 0.5 wastes the budget.
    rng = np.random.default_rng(3)
    flat = 1.0 + 0.05 * rng.random(50)
    spiky = np.zeros(50)
    spiky[[3, 17, 40]] = [5.0, 3.0, 1.0]
    spiky += 0.01 * rng.random(50)
    X = np.column_stack([flat, spiky])
    lengths = norms_of(X)
    Y = project_average(X, 0.5)
    S = project_batch(X, l1_for_sparseness(0.5, 50, lengths), lengths)
    assert_feasible(Y, X, 0.5)
    s_flat, s_spiky = sparseness(Y, axis=0)
    assert s_flat < 0.5 < s_spiky
    gain = objective(X, Y) - objective(X, S)
    assert gain > 0.1 * objective(X, S) / 100  # far above rounding
    assert np.linalg.norm(X - Y) < np.linalg.norm(X - S)


# --------------------------------------------------------------------------
# Special cases.


def test_sparseness_zero_is_flat_and_one_is_the_largest_entry():
    X = np.array([[0.2, -1.0, 0.7, 0.7], [0.0, 0.0, 3.0, 1.0]]).T
    lengths = norms_of(X)
    np.testing.assert_allclose(project_average(X, 0.0), np.ones((4, 1)) * lengths / 2.0)
    Y = project_average(X, 1.0)
    expected = np.zeros((4, 2))
    expected[2, 0] = lengths[0]  # the earlier of the two tied largest entries
    expected[2, 1] = lengths[1]
    np.testing.assert_array_equal(Y, expected)


def test_tied_largest_entries_are_broken_as_project_does():
    # The constant column's ratio jumps from 2 to 1 at its threshold; the root
    # sits there, and the column takes the ratio that the other leaves it.
    X = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 0.5, 0.2, 0.0]]).T
    Y = project_average(X, 0.6, norms=[2.0, 1.0])
    assert_feasible(Y, X, 0.6, [2.0, 1.0])
    np.testing.assert_array_equal(Y[:, 1], [1.0, 0.0, 0.0, 0.0])
    ratio = Y[:, 0].sum() / np.linalg.norm(Y[:, 0])
    np.testing.assert_allclose(ratio, 2 * (2.0 - 0.6) - 1.0, rtol=1e-12)
    np.testing.assert_allclose(Y[:, 0], project(X[:, 0], ratio * 2.0, 2.0), rtol=0, atol=1e-12)
    assert Y[0, 0] > Y[1, 0] > Y[2, 0]  # earlier entries first


@pytest.mark.parametrize("tiny", [1e-320, 2.2250738585e-313, 1e-310])
def test_subnormal_entries(tiny):
    # The support [tiny, 0] lies 1e-310 below the vector's scale (the -1):
    # it keeps a few bits there, and nothing turns into NaN.
    X = np.array([[tiny, -1.0, 0.0]]).T
    Y = project_average(X, 0.5)
    assert np.all(np.isfinite(Y))
    assert_feasible(Y, X, 0.5, sparseness_tol=1e-3)
    np.testing.assert_allclose(Y[:, 0], [np.sqrt(0.75), 0.0, 0.5], atol=1e-3)


def test_zero_vectors_stay_zero_and_are_left_out_of_the_mean():
    rng = np.random.default_rng(0)
    X = rng.random((6, 4))
    X[:, 1] = 0.0
    Y = project_average(X, 0.4)
    assert np.all(Y[:, 1] == 0)
    assert_feasible(Y, X, 0.4)
    np.testing.assert_array_equal(Y[:, [0, 2, 3]], project_average(X[:, [0, 2, 3]], 0.4))
    # A zero norm leaves a vector out the same way.
    Z = project_average(X, 0.4, norms=[1.0, 1.0, 0.0, 1.0])
    assert np.all(Z[:, 2] == 0)
    assert_feasible(Z, X, 0.4, [1.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(project_average(np.zeros((5, 3)), 0.7), np.zeros((5, 3)))


def test_float32_input_and_determinism():
    X = np.random.default_rng(1).normal(size=(30, 7))
    Y = project_average(X.astype(np.float32), 0.6, axis=1, norms=1.0)
    assert Y.dtype == np.float64
    np.testing.assert_array_equal(
        Y, project_average(X.astype(np.float32).astype(np.float64), 0.6, axis=1, norms=1.0)
    )
    np.testing.assert_array_equal(project_average(X, 0.6), project_average(X, 0.6))
    np.testing.assert_array_equal(project_average(X, 0.6), project_average(X.tolist(), 0.6))


# --------------------------------------------------------------------------
# Errors: each names the argument.

_X = np.random.default_rng(2).random((5, 3))


@pytest.mark.parametrize(
    ("args", "kwargs", "pattern"),
    [
        ((np.array([[np.nan, 1.0], [1.0, 0.0]]), 0.5), {}, "X contains NaN or infinity"),
        ((np.array([[np.inf, 1.0], [1.0, 0.0]]), 0.5), {}, "X contains NaN or infinity"),
        ((np.ones(4), 0.5), {}, "X must be 2-D"),
        ((np.ones((2, 2, 2)), 0.5), {}, "X must be 2-D"),
        ((np.ones((0, 3)), 0.5), {}, "X is empty"),
        ((np.ones((1, 3)), 0.5), {}, r"X's columns have length 1.*sparseness"),
        ((np.ones((3, 1)), 0.5), {"axis": 1}, r"X's rows have length 1.*sparseness"),
        ((_X, 1.5), {}, r"sparseness must lie in \[0, 1\]"),
        ((_X, -0.1), {}, r"sparseness must lie in \[0, 1\]"),
        ((_X, float("nan")), {}, r"sparseness must lie in \[0, 1\]"),
        ((_X, 0.5), {"axis": 2}, r"axis must be 0 \(columns\) or 1 \(rows\)"),
        ((_X, 0.5), {"axis": -1}, r"axis must be 0 \(columns\) or 1 \(rows\)"),
        ((_X, 0.5), {"axis": "0"}, r"axis must be 0 \(columns\) or 1 \(rows\)"),
        ((_X, 0.5), {"axis": True}, r"axis must be 0 \(columns\) or 1 \(rows\)"),
        ((_X, 0.5), {"norms": np.nan}, "norms must be finite and >= 0"),
        ((_X, 0.5), {"norms": [1.0, np.inf, 1.0]}, r"norms must be finite and >= 0.*column 1"),
        ((_X, 0.5), {"norms": -1.0}, "norms must be finite and >= 0"),
        ((_X, 0.5), {"norms": [1.0, 2.0]}, r"norms must be a scalar or have one value per column"),
        ((_X, 0.5), {"norms": np.ones((3, 3))}, "norms must be a scalar or have one value per"),
        ((np.full((2, 2), 1.5e308), 0.5), {}, r"L2 norm of X's column 0 overflows.*norms="),
    ],
)
def test_bad_values_raise_value_error(args, kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        project_average(*args, **kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "pattern"),
    [
        ((_X, "0.5"), {}, "sparseness must be a real number"),
        ((_X, None), {}, "sparseness must be a real number"),
        ((_X, 0.5), {"norms": "one"}, "norms must be None, a real number"),
        ((np.array([["a", "b"]]), 0.5), {}, "X must be a real numeric array"),
        ((np.ma.masked_array(_X), 0.5), {}, "X is a numpy masked array"),
        ((_X, 0.5), {"norms": np.ma.masked_array(np.ones(3))}, "norms is a numpy masked array"),
    ],
)
def test_bad_types_raise_type_error(args, kwargs, pattern):
    with pytest.raises(TypeError, match=pattern):
        project_average(*args, **kwargs)
