"""The L1/L2 projection: against references, edge cases, errors, batches, Figure 6.

Randomised properties (hypothesis, many-thousand-case sweeps) are in
test_projection_properties.py.
"""

import numpy as np
import pytest
from projection_reference import (
    assert_feasible,
    ramp_tie_break,
    reference_enumerate,
    reference_sorted,
    slsqp_distances,
)

from nmfsc import l1_for_sparseness, project, project_batch, sparseness
from nmfsc._kernels import sparse_projection as kernels

METHODS = ["fast", "hoyer"]


# --- against the references ------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [2, 3, 5, 10, 50, 200, 1000])
@pytest.mark.parametrize("kind", ["abs", "signed"])
def test_matches_sorted_reference(method, n, kind):
    rng = np.random.default_rng(n)
    for _trial in range(5):
        x = rng.standard_normal(n)
        if kind == "abs":
            x = np.abs(x)
        x *= 10.0 ** rng.uniform(-3, 3)
        for target in [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1.0]:
            l2 = 10.0 ** rng.uniform(-2, 2)
            l1 = l1_for_sparseness(target, n, l2)
            s = project(x, l1, l2, method=method)
            assert_feasible(s, l1, l2)
            np.testing.assert_allclose(s, reference_sorted(x, l1, l2), rtol=0, atol=1e-10 * l2)


@pytest.mark.parametrize("method", METHODS)
def test_closest_point_by_enumerating_supports(method):
    """No feasible point is closer: exact enumeration of all supports, n <= 8."""
    rng = np.random.default_rng(1)
    for case in range(300):
        n = int(rng.integers(1, 9))
        draw = case % 3
        if draw == 0:
            x = rng.standard_normal(n)
        elif draw == 1:
            x = np.abs(rng.standard_normal(n))
        else:  # small integers: plenty of ties
            x = rng.integers(-1, 3, n).astype(float)
        l2 = float(rng.uniform(0.5, 2.0))
        l1 = l1_for_sparseness(float(rng.uniform()), n, l2)
        s = project(x, l1, l2, method=method)
        assert_feasible(s, l1, l2)
        dist = np.linalg.norm(s - x)
        best, argbest = reference_enumerate(x, l1, l2)
        assert dist <= best + 1e-9 * max(1.0, best), (x, l1, l2, dist, best)
        assert dist >= best - 1e-9 * max(1.0, best)
        if argbest is not None and len(np.unique(x)) == n:
            np.testing.assert_allclose(s, argbest, atol=1e-9)


def test_closest_point_against_slsqp():
    """A third, independent opinion: SLSQP from several starts finds nothing closer."""
    rng = np.random.default_rng(2)
    for _ in range(12):
        n = int(rng.integers(2, 9))
        x = rng.standard_normal(n)
        l1 = l1_for_sparseness(float(rng.uniform(0.05, 0.95)), n)
        s = project(x, l1, 1.0)
        dist = np.linalg.norm(s - x)
        starts = [np.abs(rng.standard_normal(n)) for _ in range(4)] + [s]
        for found in slsqp_distances(x, l1, 1.0, starts):
            assert dist <= found + 1e-9


# --- edge cases ----------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [2, 3, 7, 100, 1000])
@pytest.mark.parametrize("target", [0.0, 0.3, 0.9, 1.0])
@pytest.mark.parametrize("value", [0.0, 0.1, 1.0, -0.3, 1e-300, 7e300])
def test_constant_vectors(method, n, target, value):
    """All-tied input: the flat vector at sparseness 0, else the ramp tie-break.

    (0.1 and -0.3 do not sum exactly in floating point; that used to make the
    kernels divide by zero or return zeros.)
    """
    x = np.full(n, value)
    l1 = l1_for_sparseness(target, n)
    s = project(x, l1, 1.0, method=method)
    assert_feasible(s, l1, 1.0)
    if target == 0.0:
        np.testing.assert_allclose(s, np.full(n, 1 / np.sqrt(n)), rtol=1e-14)
    else:
        np.testing.assert_allclose(s, ramp_tie_break(x, l1, 1.0, np.arange(n)), atol=1e-12)
    assert s[0] == s.max()  # ties go to the earliest index


@pytest.mark.parametrize("n_tied", [2, 3, 5, 40])
@pytest.mark.parametrize("top", [1.0, 0.1, 0.7])
def test_ties_at_the_top_sparser_than_the_tie(n_tied, top):
    """Target needs fewer than the tied entries: deterministic index tie-break."""
    rng = np.random.default_rng(n_tied)
    n = n_tied + 30
    x = rng.uniform(0, 0.5 * top, n)
    tied = np.sort(rng.choice(n, n_tied, replace=False))
    x[tied] = top
    target = 0.95  # rho^2 well below n_tied for all sizes here
    l1 = l1_for_sparseness(target, n)
    assert (l1**2) < n_tied
    expected = ramp_tie_break(x, l1, 1.0, tied)
    results = [project(x, l1, 1.0, method=m) for m in METHODS]
    for s in results:
        assert_feasible(s, l1, 1.0)
        np.testing.assert_allclose(s, expected, atol=1e-12)
        assert np.all(s[np.setdiff1d(np.arange(n), tied)] == 0)
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("method", METHODS)
def test_zero_vector(method):
    for n in [1, 2, 5, 100]:
        for target in [0.0, 0.5, 1.0]:
            l1 = l1_for_sparseness(target, n)
            s = project(np.zeros(n), l1, 1.0, method=method)
            assert_feasible(s, l1, 1.0)


@pytest.mark.parametrize("method", METHODS)
def test_sparseness_one_keeps_the_largest_entry(method):
    x = np.array([0.2, -1.0, 0.9, 0.3, 0.89])
    s = project(x, 3.0, 3.0, method=method)
    np.testing.assert_array_equal(s, [0, 0, 3.0, 0, 0])
    s = project(x, l1_for_sparseness(1.0, 5, 3.0), 3.0, method=method)
    np.testing.assert_allclose(s, [0, 0, 3.0, 0, 0], atol=1e-14)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("nonneg", [True, False])
def test_sparseness_one_has_exactly_one_nonzero(method, nonneg):
    """L1 = L2: one non-zero, at the largest entry (earliest on ties), exactly.

    [0.1, 0, 0, 0] used to leave its zeros at 2.8e-17 (the passes' rounding).
    """
    rng = np.random.default_rng(12)
    cases = [np.array([0.1, 0.0, 0.0, 0.0]), np.array([0.0, 0.3, -0.3, 0.3])]
    for n in [2, 3, 4, 5, 10, 361, 5000]:
        cases += [rng.standard_normal(n), np.round(rng.standard_normal(n), 1), np.zeros(n)]
    for x in cases:
        n = x.size
        for l2 in [1.0, 0.37, 1e-300, 1e300]:
            l1 = l1_for_sparseness(1.0, n, l2)
            s, passes = project(x, l1, l2, method=method, nonneg=nonneg, return_passes=True)
            y = x if nonneg else np.abs(x)
            j = int(np.argmax(y))  # the first of the largest
            expected = np.zeros(n)
            expected[j] = l2 if nonneg or x[j] >= 0 else -l2
            np.testing.assert_array_equal(s, expected)
            assert passes == 1


@pytest.mark.parametrize("method", METHODS)
def test_sparseness_zero_gives_the_flat_vector(method):
    x = np.array([0.2, -1.0, 0.9, 0.3])
    s = project(x, l1_for_sparseness(0.0, 4, 2.0), 2.0, method=method)
    np.testing.assert_allclose(s, np.ones(4), rtol=1e-15)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("x", [[5.0], [-5.0], [0.0], [1e-300]])
def test_length_one(method, x):
    s, passes = project(x, 2.0, 2.0, method=method, return_passes=True)
    np.testing.assert_array_equal(s, [2.0])
    assert passes == 1


@pytest.mark.parametrize("method", METHODS)
def test_length_two(method):
    # rho in (1, sqrt 2): the circle meets the quadrant in two points; the one
    # ordered like x is closer.
    for x in ([3.0, 1.0], [1.0, 3.0], [-1.0, 2.0], [0.5, 0.5]):
        x = np.array(x)
        s = project(x, 1.2, 1.0, method=method)
        assert_feasible(s, 1.2, 1.0)
        a = (1.2 + np.sqrt(2 - 1.2**2)) / 2
        b = 1.2 - a
        expected = [a, b] if x[0] >= x[1] else [b, a]
        np.testing.assert_allclose(s, expected, atol=1e-15)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("nonneg", [True, False])
def test_feasible_input_is_returned_unchanged(method, nonneg):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(50)
    if nonneg:
        x = np.abs(x)
    l1, l2 = float(np.abs(x).sum()), float(np.linalg.norm(x))
    s, passes = project(x, l1, l2, method=method, nonneg=nonneg, return_passes=True)
    np.testing.assert_array_equal(s, x)
    assert passes == 1
    assert s is not x


def test_feasibility_shortcut_does_not_overflow():
    """Tiny x with huge targets used to pass the 'already feasible' test (inf <= inf)."""
    x = np.array([1e-300, 2e-300, 3e-300])
    for method in METHODS:
        s = project(x, 1.5e300, 1e300, method=method)
        assert_feasible(s, 1.5e300, 1e300)
        np.testing.assert_allclose(s, reference_sorted(x, 1.5e300, 1e300), rtol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_float32_and_integer_input_accepted(method):
    x32 = np.array([0.1, 0.7, 0.3, 0.05], dtype=np.float32)
    s = project(x32, 1.3, 1.0, method=method)
    assert s.dtype == np.float64
    np.testing.assert_array_equal(s, project(x32.astype(np.float64), 1.3, 1.0, method=method))
    s = project([1, 5, 2, 0], 1.3, 1.0, method=method)
    assert_feasible(s, 1.3, 1.0)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("nonneg", [True, False])
@pytest.mark.parametrize("exponent", [-308, -300, -200, -75, 0, 75, 200, 300, 307])
def test_any_finite_scale(method, nonneg, exponent):
    """Beyond about 1e75 the original MATLAB code over- or underflowed."""
    rng = np.random.default_rng(exponent + 400)
    x = rng.standard_normal(200) * 10.0**exponent
    for target in [0.0, 0.5, 0.9, 1.0]:
        for l2 in [1e-300, 1.0, 1e300]:
            l1 = l1_for_sparseness(target, 200, l2)
            s = project(x, l1, l2, method=method, nonneg=nonneg)
            assert_feasible(s, l1, l2, nonneg=nonneg)


def test_mixed_magnitudes_and_subnormals():
    cases = [
        [-1.0, 1e-300, 1e-300 * (1 + 2**-52), 1e-300 * (1 + 2**-51)],
        [5e-324, 1e-323, 0.0],
        [1e300, -1e300, 1e-300, 5e-324],
        [1.7e308, 1.7e308, -1.7e308, 1.0],
    ]
    for x in cases:
        n = len(x)
        for target in [0.2, 0.6, 0.95]:
            l1 = l1_for_sparseness(target, n)
            results = [project(x, l1, 1.0, method=m) for m in METHODS]
            for s in results:
                assert_feasible(s, l1, 1.0)
            np.testing.assert_allclose(results[0], results[1], atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_shifted_near_constant_input(method):
    """c + tiny noise: the centred step must not lose the sum (was off by 1e-8)."""
    rng = np.random.default_rng(4)
    for noise in [1e-4, 1e-8, 1e-12, 1e-15]:
        x = 1.0 + noise * rng.standard_normal(1000)
        for target in [0.3, 0.9]:
            l1 = l1_for_sparseness(target, 1000)
            assert_feasible(project(x, l1, 1.0, method=method), l1, 1.0)


# --- the signed variant ----------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_signed_variant_keeps_signs_and_projects_magnitudes(method):
    rng = np.random.default_rng(5)
    for n in [2, 5, 50, 1000]:
        x = rng.standard_normal(n)
        for target in [0.1, 0.5, 0.9]:
            l1 = l1_for_sparseness(target, n)
            s = project(x, l1, 1.0, nonneg=False, method=method)
            assert_feasible(s, l1, 1.0, nonneg=False)
            np.testing.assert_array_equal(np.abs(s), project(np.abs(x), l1, 1.0, method=method))
            assert np.all(np.sign(s) * np.sign(x) >= 0)
            assert sparseness(s) == pytest.approx(target, abs=1e-10)


def test_signed_variant_is_closer_than_flipping_signs():
    x = np.array([-3.0, 1.0, -0.5, 2.0])
    l1 = l1_for_sparseness(0.5, 4)
    s = project(x, l1, 1.0, nonneg=False)
    flipped = s * np.array([-1, 1, 1, 1])
    assert np.linalg.norm(s - x) < np.linalg.norm(flipped - x)


# --- passes and the sort fallback -----------------------------------------------


@pytest.mark.parametrize("n", [10, 100, 1000, 20000])
def test_fast_and_hoyer_count_the_same_passes(n):
    rng = np.random.default_rng(n)
    for target in [0.1, 0.5, 0.9, 0.99]:
        x = np.abs(rng.standard_normal(n))
        l1 = l1_for_sparseness(target, n)
        sh, ph = project(x, l1, 1.0, method="hoyer", return_passes=True)
        sf, pf = project(x, l1, 1.0, method="fast", return_passes=True)
        assert ph == pf
        np.testing.assert_allclose(sf, sh, atol=1e-13)


@pytest.mark.parametrize("max_passes", [0, 1, 2])
@pytest.mark.parametrize("nonneg", [True, False])
def test_sort_fallback_agrees_with_normal_path(max_passes, nonneg):
    rng = np.random.default_rng(6)
    for n in [2, 3, 10, 100, 5000]:
        for target in [0.05, 0.4, 0.8, 0.97, 1.0]:
            for draw in range(3):
                x = rng.standard_normal(n)
                if draw == 1:
                    x = np.exp(3 * x)  # heavy tail
                elif draw == 2:
                    x = np.round(x, 1)  # ties
                l1 = l1_for_sparseness(target, n)
                normal = np.empty(n)
                forced = np.empty(n)
                st1, p1 = kernels.project_vector(x, l1, 1.0, nonneg, 1, normal, 100)
                st2, p2 = kernels.project_vector(x, l1, 1.0, nonneg, 1, forced, max_passes)
                assert st1 == st2 == kernels.STATUS_OK
                assert_feasible(forced, l1, 1.0, nonneg=nonneg)
                np.testing.assert_allclose(forced, normal, atol=1e-12)
                if draw != 2:
                    assert p1 == p2


# --- batches -------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("nonneg", [True, False])
def test_batch_equals_one_by_one(method, axis, nonneg):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((37, 23))
    count = X.shape[1 - axis]
    n = X.shape[axis]
    l2 = rng.uniform(0.5, 2.0, count)
    l1 = l1_for_sparseness(0.6, n, l2)
    S, passes = project_batch(
        X, l1, l2, axis=axis, nonneg=nonneg, method=method, return_passes=True
    )
    assert S.shape == X.shape and S.dtype == np.float64 and S.flags.c_contiguous
    for j in range(count):
        v = X[:, j] if axis == 0 else X[j]
        s, p = project(v, l1[j], l2[j], nonneg=nonneg, method=method, return_passes=True)
        got = S[:, j] if axis == 0 else S[j]
        np.testing.assert_array_equal(got, s)
        assert passes[j] == p


@pytest.mark.parametrize("method", METHODS)
def test_parallel_is_bit_identical_to_serial(method):
    rng = np.random.default_rng(8)
    X = np.abs(rng.standard_normal((361, 49)))
    X[:, 3] = 0.25  # a tied column
    for target in [0.1, 0.8]:
        l1 = l1_for_sparseness(target, 361)
        serial = project_batch(X, l1, 1.0, method=method)
        parallel = project_batch(X, l1, 1.0, method=method, parallel=True)
        np.testing.assert_array_equal(parallel, serial)


def test_batch_scalar_and_per_vector_targets():
    X = np.abs(np.random.default_rng(9).standard_normal((4, 10)))
    a = project_batch(X, 1.5, 1.0, axis=1)
    b = project_batch(X, np.full(4, 1.5), np.ones(4), axis=1)
    np.testing.assert_array_equal(a, b)


def test_batch_accepts_non_contiguous_and_float32():
    X = np.abs(np.random.default_rng(10).standard_normal((20, 30)))
    ref = project_batch(X, 2.0, 1.0, axis=0)
    np.testing.assert_array_equal(project_batch(np.asfortranarray(X), 2.0, 1.0, axis=0), ref)
    np.testing.assert_array_equal(project_batch(X[:, ::1].T.copy().T, 2.0, 1.0, axis=0), ref)
    S32 = project_batch(X.astype(np.float32), 2.0, 1.0, axis=0)
    assert S32.dtype == np.float64


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("nonneg", [True, False])
def test_strided_input_is_bit_identical_to_contiguous(method, nonneg):
    """A column view (strided) and its contiguous copy take differently compiled
    specializations of the kernel; the results must not depend on it."""
    rng = np.random.default_rng(11)
    cases = [np.array([[0.1, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])]
    for n in [3, 4, 5, 7, 8, 33, 361]:
        cases.append(rng.standard_normal((n, 3)))
        cases.append(np.round(rng.standard_normal((n, 3)), 1))
    for X in cases:
        n = X.shape[0]
        for target in [0.0, 0.3, 0.8, 1.0]:
            l1 = l1_for_sparseness(target, n)
            column = X[:, 0]
            assert not column.flags.c_contiguous
            got = project(column, l1, 1.0, method=method, nonneg=nonneg)
            want = project(column.copy(), l1, 1.0, method=method, nonneg=nonneg)
            np.testing.assert_array_equal(got, want)
            batch = project_batch(X, l1, 1.0, axis=0, method=method, nonneg=nonneg)
            np.testing.assert_array_equal(batch[:, 0], want)


# --- errors --------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_input(bad):
    with pytest.raises(ValueError, match="x contains NaN or infinity"):
        project([1.0, bad, 0.5], 1.2, 1.0)
    X = np.ones((4, 5))
    X[2, 3] = bad
    for axis in (0, 1):
        with pytest.raises(ValueError, match=r"X contains NaN or infinity"):
            project_batch(X, 1.2, 1.0, axis=axis)


@pytest.mark.parametrize("l2", [0.0, -1.0, np.nan, np.inf])
def test_l2_must_be_positive_and_finite(l2):
    with pytest.raises(ValueError, match="l2 must be finite and > 0"):
        project([1.0, 2.0], 1.2, l2)
    with pytest.raises(ValueError, match="l2 must be finite and > 0"):
        project_batch(np.ones((2, 3)), 1.2, [1.0, l2, 1.0])


@pytest.mark.parametrize("l1", [0.0, -1.0, np.nan, np.inf])
def test_l1_must_be_positive_and_finite(l1):
    with pytest.raises(ValueError, match="l1 must be finite and > 0"):
        project([1.0, 2.0], l1, 1.0)


@pytest.mark.parametrize("l1", [0.99, 1.0 * np.sqrt(3) * 1.0001, 10.0])
def test_l1_must_be_reachable(l1):
    pattern = r"l1=.* is unreachable .* length 3 .*l2 <= l1 <= sqrt\(n\)"
    with pytest.raises(ValueError, match=pattern):
        project([1.0, 2.0, 3.0], l1, 1.0)


def test_l1_unreachable_in_a_batch_names_the_vector():
    with pytest.raises(ValueError, match=r"unreachable \(vector 1\)"):
        project_batch(np.ones((4, 3)), [1.5, 3.0, 1.5], 1.0, axis=0)


def test_targets_from_sparseness_0_and_1_are_reachable():
    for n in [2, 3, 7, 361, 10**5]:
        for s in [0.0, 1.0]:
            for l2 in [1e-300, 0.3, 1.0, 7.0, 1e300]:
                project(np.arange(n, dtype=float), l1_for_sparseness(s, n, l2), l2)


def test_target_shape_mismatch_in_a_batch():
    pattern = r"l1 and l2 must be scalars or have one value per vector \(3\)"
    with pytest.raises(ValueError, match=pattern):
        project_batch(np.ones((4, 3)), [1.5, 1.5], 1.0, axis=0)


def test_wrong_ndim():
    with pytest.raises(ValueError, match="x must be 1-D, got an array with ndim=2"):
        project(np.ones((2, 2)), 1.2, 1.0)
    with pytest.raises(ValueError, match="x must be 1-D, got an array with ndim=0"):
        project(3.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="X must be 2-D, got an array with ndim=1"):
        project_batch(np.ones(3), 1.2, 1.0)


def test_empty_input():
    with pytest.raises(ValueError, match=r"x is empty \(shape \(0,\)\)"):
        project([], 1.0, 1.0)
    with pytest.raises(ValueError, match="X is empty"):
        project_batch(np.ones((0, 3)), 1.0, 1.0)
    with pytest.raises(ValueError, match="X is empty"):
        project_batch(np.ones((3, 0)), 1.0, 1.0)


def test_non_numeric_input():
    with pytest.raises(TypeError, match="x must be a real numeric array, got dtype"):
        project(["a", "b"], 1.0, 1.0)
    with pytest.raises(TypeError, match="x must be a real numeric array"):
        project(np.array([1 + 1j, 2.0]), 1.0, 1.0)


@pytest.mark.parametrize("method", ["Hoyer", "sort", None, 0])
def test_unknown_method(method):
    with pytest.raises(ValueError, match=r"method must be one of \['fast', 'hoyer'\]"):
        project([1.0, 2.0], 1.2, 1.0, method=method)
    with pytest.raises(ValueError, match=r"method must be one of"):
        project_batch(np.ones((2, 2)), 1.2, 1.0, method=method)


@pytest.mark.parametrize("axis", [2, -1, None, "rows"])
def test_bad_axis(axis):
    with pytest.raises(ValueError, match=r"axis must be 0 \(columns\) or 1 \(rows\)"):
        project_batch(np.ones((2, 2)), 1.2, 1.0, axis=axis)


def test_scipy_sparse_rejected():
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match=r"X is a scipy.sparse matrix.*X.toarray\(\)"):
        project_batch(sp.csr_matrix(np.eye(3)), 1.2, 1.0)
    with pytest.raises(TypeError, match=r"x is a scipy.sparse matrix"):
        project(sp.csr_array(np.ones((1, 3))), 1.2, 1.0)


# --- Figure 6 --------------------------------------------------------------------

FIG6_DIMS = [2, 3, 5, 10, 50, 100, 500, 1000, 3000, 5000, 10000]
FIG6_LEVELS = [0.1, 0.3, 0.5, 0.7, 0.9]


def test_figure6_passes_never_exceed_ten():
    """The paper's grid with 5 trials instead of 50: the "hoyer" passes of the
    second projection never exceed 10, and every result meets L1 and L2 to 1e-8."""
    rng = np.random.default_rng(2004)
    worst = {}
    for n in FIG6_DIMS:
        for desired in FIG6_LEVELS:
            for initial in FIG6_LEVELS:
                for _ in range(5):
                    x = rng.standard_normal(n)
                    x /= np.linalg.norm(x)
                    x0 = project(x, l1_for_sparseness(initial, n), 1.0, method="hoyer")
                    l1 = l1_for_sparseness(desired, n)
                    s, passes = project(x0, l1, 1.0, method="hoyer", return_passes=True)
                    assert_feasible(s, l1, 1.0, rtol=1e-8)
                    assert 1 <= passes <= 10, (n, desired, initial, passes)
                    key = (desired, initial)
                    worst[key] = max(worst.get(key, 0), passes)
    # The paper's worst case (0.9 from 0.1) is the one needing the most passes.
    assert worst[(0.9, 0.1)] == max(worst.values())


# --- the fast path (plain float64 arrays, scalar targets) --------------------------
#
# project() and project_batch() skip the array checks for a C-contiguous float64
# ndarray with scalar targets in range. A 0-d array target takes the full path,
# so comparing the two calls compares the paths.


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("nonneg", [True, False])
@pytest.mark.parametrize("n", [1, 2, 10, 361, 5000])
def test_fast_path_gives_the_full_path_bits(method, nonneg, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n) if not nonneg else np.abs(rng.standard_normal(n))
    l1 = float(l1_for_sparseness(0.7, n, 1.3))
    fast, p_fast = project(x, l1, 1.3, method=method, nonneg=nonneg, return_passes=True)
    full, p_full = project(
        x, np.array(l1), np.array(1.3), method=method, nonneg=nonneg, return_passes=True
    )
    np.testing.assert_array_equal(fast, full)
    assert p_fast == p_full
    X = np.abs(rng.standard_normal((n, 3)))
    for axis in (0, 1):
        m = X.shape[axis]
        l1 = float(l1_for_sparseness(0.6, m))
        got = project_batch(X, l1, 1.0, axis=axis, method=method, nonneg=nonneg)
        want = project_batch(
            X,
            np.full(X.shape[1 - axis], l1),
            [1.0] * X.shape[1 - axis],
            axis=axis,
            method=method,
            nonneg=nonneg,
        )
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_fast_path_refuses_nonfinite_input_with_the_same_error(bad):
    x = np.array([1.0, 2.0, bad, 0.5])
    with pytest.raises(ValueError, match="^x contains NaN or infinity$"):
        project(x, 1.2, 1.0)
    X = np.ones((4, 5))
    X[2, 3] = bad
    for axis in (0, 1):
        with pytest.raises(ValueError, match="^X contains NaN or infinity$"):
            project_batch(X, 1.2, 1.0, axis=axis)


@pytest.mark.parametrize(
    "l1, l2, pattern",
    [
        (1.2, 0.0, "l2 must be finite and > 0"),
        (1.2, np.nan, "l2 must be finite and > 0"),
        (np.inf, 1.0, "l1 must be finite and > 0"),
        (np.nan, 1.0, "l1 must be finite and > 0"),
        (0.5, 1.0, r"l1=.*0\.5.* is unreachable.*length 3"),
        (2.0, 1.0, r"l1=.*2\.0.* is unreachable.*length 3"),
    ],
)
def test_fast_path_bad_targets_give_the_same_errors(l1, l2, pattern):
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=pattern):
        project(x, l1, l2)
    with pytest.raises(ValueError, match=pattern):
        project_batch(np.ones((3, 2)), l1, l2, axis=0)


def test_fast_path_bad_method_and_axis_give_the_same_errors():
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="method must be one of"):
        project(x, 1.2, 1.0, method="Fast")
    with pytest.raises(ValueError, match="axis must be 0"):
        project_batch(np.ones((3, 2)), 1.2, 1.0, axis=2)


def test_max_filter_passes_formula():
    for n in list(range(1, 3000)) + [2**k + d for k in range(12, 40) for d in (-1, 0, 1)]:
        want = 2 * int(np.ceil(np.log2(max(n, 2)))) + 8
        assert kernels.max_filter_passes(n) == want
        assert kernels.max_filter_passes(np.int64(n)) == want


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [5, 361, 20000])
def test_every_path_is_deterministic(method, n):
    """The same input through the same call gives the same bits every time
    (checkpoint resume relies on it): project, project_batch, parallel."""
    rng = np.random.default_rng(n + 1)
    x = np.abs(rng.standard_normal(n))
    dense = project(x, l1_for_sparseness(0.1, n), 1.0)
    for v, s in ((x, 0.7), (dense, 0.9)):
        l1 = float(l1_for_sparseness(s, n))
        first = project(v, l1, 1.0, method=method)
        for _ in range(3):
            np.testing.assert_array_equal(project(v, l1, 1.0, method=method), first)
        X = np.stack([v, v[::-1]])
        for parallel in (False, True):
            once = project_batch(X, l1, 1.0, axis=1, method=method, parallel=parallel)
            again = project_batch(X, l1, 1.0, axis=1, method=method, parallel=parallel)
            np.testing.assert_array_equal(once, again)
            np.testing.assert_array_equal(once[0], first)


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("n", [1023, 1024, 16384, 16385, 32768, 32769])
@pytest.mark.parametrize("flat", [None, 9])
def test_batch_columns_are_the_bits_of_the_transposed_rows(n, flat, parallel):
    """On both sides of every length where project_batch(axis=0) changes
    path (the bracketing path from 1,024, the old in-place limit 16,384, the
    passes' chunks above 32,768), the columns are the bits of axis=1 on the
    transpose: with every block of columns written from its map at the end,
    and with a block (a flat column, which the exact kernel decides) written
    at once between two that are not."""
    rng = np.random.default_rng(n)
    X = np.abs(rng.standard_normal((n, 17)))
    if flat is not None:
        X[:, flat] = 0.5
    l1 = l1_for_sparseness(0.7, n)
    rows = project_batch(np.ascontiguousarray(X.T), l1, 1.0, axis=1)
    want = np.ascontiguousarray(rows.T).tobytes()
    assert project_batch(X, l1, 1.0, axis=0, parallel=parallel).tobytes() == want
    # The checked path (per-column targets) takes the same kernel.
    targets = np.full(17, l1)
    assert project_batch(X, targets, 1.0, axis=0, parallel=parallel).tobytes() == want


@pytest.mark.parametrize("flat", [None, 9])
def test_columns_kernel_same_bits_in_any_number_of_groups(flat):
    """project_columns splits the blocks, and the final write the rows, into
    ``groups`` runs (one per thread of the parallel build): the serial build
    run with 1 to 5 groups gives the same bytes."""
    rng = np.random.default_rng(7)
    n = 3001
    X = np.abs(rng.standard_normal((n, 17)))
    if flat is not None:
        X[:, flat] = 0.5
    l1 = np.full(17, l1_for_sparseness(0.7, n))
    l2 = np.ones(17)
    results = []
    for groups in range(1, 6):
        out = np.empty_like(X)
        status = np.zeros(17, np.int64)
        passes = np.zeros(17, np.int64)
        maxp = kernels.max_filter_passes(n)
        kernels.project_columns(
            X, l1, l2, True, kernels.METHOD_FAST, out, status, passes, maxp, groups
        )
        assert not status.any()
        results.append(out.tobytes())
    assert all(r == results[0] for r in results)
    assert results[0] == project_batch(X, l1[0], 1.0, axis=0).tobytes()


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("shape", [(5, 1), (361, 7), (361, 8), (1500, 17), (17000, 3)])
def test_batch_columns_are_the_bits_of_each_column_alone(shape, parallel):
    """project_batch(axis=0) gathers a few columns at a time (or, for fewer
    long ones than threads, transposes X whole); each column's result is the
    bits of projecting its contiguous copy, whatever X's order and the
    targets."""
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    X = rng.standard_normal(shape)
    X[:, 0] = np.round(X[:, 0], 1)  # ties
    n, count = shape
    l2 = rng.uniform(0.5, 2.0, count)
    l1 = np.array([l1_for_sparseness(rng.uniform(0.0, 1.0), n, t) for t in l2])
    for nonneg in (True, False):
        want = np.column_stack(
            [project(X[:, j].copy(), l1[j], l2[j], nonneg=nonneg) for j in range(count)]
        )
        for data in (X, np.asfortranarray(X)):
            got = project_batch(data, l1, l2, axis=0, nonneg=nonneg, parallel=parallel)
            assert got.flags.c_contiguous
            assert got.tobytes() == want.tobytes()
        same = project_batch(X, l1[0], l2[0], axis=0, nonneg=nonneg, parallel=parallel)
        assert same[:, 0].tobytes() == want[:, 0].tobytes()
