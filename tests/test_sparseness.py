"""Hoyer's sparseness measure and the sparseness <-> L1 conversions."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from nmfsc import l1_for_sparseness, sparseness, sparseness_for_l1


def sparseness_formula(x):
    """The definition, written out (no overflow guard: test inputs are modest)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    return (np.sqrt(n) - np.sum(np.abs(x)) / np.sqrt(np.sum(x * x))) / (np.sqrt(n) - 1)


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        ([0.0, 0.0, 1.0, 0.0], 1.0),
        ([1.0, 1.0, 1.0, 1.0], 0.0),
        ([-2.0, 2.0, 2.0, -2.0], 0.0),
        ([3.0, 0.0], 1.0),
        ([1.0, 1.0], 0.0),
        # sqrt(4) = 2, L1/L2 = 2/sqrt(2): (2 - sqrt 2) / (2 - 1)
        ([1.0, 1.0, 0.0, 0.0], 2.0 - np.sqrt(2.0)),
        ([0.0, -5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], 1.0),
    ],
)
def test_known_values(x, expected):
    assert sparseness(x) == pytest.approx(expected, abs=1e-15)


def test_returns_python_float_for_a_vector():
    assert type(sparseness([1.0, 2.0])) is float


@given(
    hnp.arrays(
        np.float64,
        st.integers(2, 40),
        elements=st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False),
    )
)
def test_matches_formula(x):
    if not np.any(x):
        with pytest.raises(ValueError, match="all-zero"):
            sparseness(x)
        return
    value = sparseness(x)
    assert 0.0 <= value <= 1.0
    expected = np.clip(sparseness_formula(x / np.max(np.abs(x))), 0, 1)
    assert value == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1.0, 1e150, 1e300])
def test_scale_invariant_without_overflow(scale):
    x = np.array([1.0, 0.5, 0.25, 0.0, 3.0])
    assert sparseness(x * scale) == pytest.approx(sparseness_formula(x), abs=1e-14)


def test_axis_0_and_1():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 5))
    cols = sparseness(X, axis=0)
    rows = sparseness(X, axis=1)
    assert cols.shape == (5,) and rows.shape == (7,)
    np.testing.assert_allclose(cols, [sparseness_formula(X[:, j]) for j in range(5)], atol=1e-14)
    np.testing.assert_allclose(rows, [sparseness_formula(X[i]) for i in range(7)], atol=1e-14)
    np.testing.assert_array_equal(sparseness(X.T, axis=1), cols)


def test_length_one_raises():
    with pytest.raises(ValueError, match="length 1.*n >= 2"):
        sparseness([3.0])
    with pytest.raises(ValueError, match="length 1"):
        sparseness(np.ones((1, 4)), axis=0)


def test_zero_vector_raises():
    with pytest.raises(ValueError, match="all-zero vector"):
        sparseness(np.zeros(4))


def test_zero_column_raises_and_says_which():
    X = np.ones((3, 4))
    X[:, 2] = 0.0
    with pytest.raises(ValueError, match=r"all-zero vector \(index 2 along axis 1\)"):
        sparseness(X, axis=0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_raises(bad):
    with pytest.raises(ValueError, match="x contains NaN or infinity"):
        sparseness([1.0, bad, 0.0])


def test_wrong_ndim_and_axis():
    with pytest.raises(ValueError, match="x must be 1-D, got an array with ndim=2"):
        sparseness(np.ones((2, 2)))
    with pytest.raises(ValueError, match="x must be 2-D, got an array with ndim=1"):
        sparseness(np.ones(3), axis=0)
    with pytest.raises(ValueError, match="axis must be None, 0 or 1, got 2"):
        sparseness(np.ones((2, 2)), axis=2)


def test_empty_and_non_numeric_raise():
    with pytest.raises(ValueError, match="x is empty"):
        sparseness([])
    with pytest.raises(TypeError, match="x must be a real numeric array"):
        sparseness(["a", "b"])


def test_sparse_matrix_rejected():
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match=r"x is a scipy.sparse matrix.*toarray"):
        sparseness(sp.csr_matrix(np.eye(3)), axis=0)


# --- l1_for_sparseness / sparseness_for_l1 --------------------------------------


@pytest.mark.parametrize("n", [2, 3, 10, 361, 10_000])
@pytest.mark.parametrize("s", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_l1_for_sparseness_round_trip(n, s):
    l1 = l1_for_sparseness(s, n)
    assert 1.0 - 1e-15 <= l1 <= np.sqrt(n) * (1 + 1e-15)
    assert float(sparseness_for_l1(l1, 1.0, n)) == pytest.approx(s, abs=1e-12)


def test_l1_for_sparseness_endpoints_and_l2():
    assert l1_for_sparseness(0.0, 9) == pytest.approx(3.0, abs=0)
    assert l1_for_sparseness(1.0, 9) == pytest.approx(1.0, abs=0)
    assert l1_for_sparseness(0.5, 9, l2=4.0) == pytest.approx(8.0)
    np.testing.assert_allclose(l1_for_sparseness(1.0, 4, l2=np.array([1.0, 2.0])), [1.0, 2.0])
    assert l1_for_sparseness(0.3, 1) == 1.0


def test_sparseness_for_l1_agrees_with_sparseness():
    x = np.r_[np.ones(4), np.full(12, 0.2)]
    assert sparseness(x) == pytest.approx(
        float(sparseness_for_l1(np.abs(x).sum(), np.linalg.norm(x), x.size)), abs=1e-15
    )


@pytest.mark.parametrize("bad", [-0.1, 1.1, np.nan])
def test_l1_for_sparseness_rejects_out_of_range(bad):
    with pytest.raises(ValueError, match=r"sparseness must lie in \[0, 1\]"):
        l1_for_sparseness(bad, 10)


def test_l1_for_sparseness_rejects_bad_types_and_n_and_l2():
    with pytest.raises(TypeError, match="sparseness must be a real number"):
        l1_for_sparseness("0.5", 10)
    with pytest.raises(TypeError, match="sparseness must be a real number"):
        l1_for_sparseness(True, 10)
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        l1_for_sparseness(0.5, 0)
    with pytest.raises(TypeError, match="n must be a positive integer"):
        l1_for_sparseness(0.5, 2.5)
    with pytest.raises(ValueError, match="l2 must be finite and > 0"):
        l1_for_sparseness(0.5, 10, l2=0.0)
    with pytest.raises(ValueError, match="l2 must be finite and > 0"):
        l1_for_sparseness(0.5, 10, l2=np.inf)


def test_sparseness_for_l1_rejects_n_1():
    with pytest.raises(ValueError, match="n >= 2"):
        sparseness_for_l1(1.0, 1.0, 1)
