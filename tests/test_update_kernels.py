"""The elementwise update kernels (nmfsc/_kernels/updates.py) against NumPy,
including their edge cases (zero rows and columns, V = 0, W H = 0)."""

import numpy as np
import pytest

from nmfsc._kernels import updates as k


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def positive(rng, shape):
    return np.abs(rng.standard_normal(shape)) + 0.05


def test_outer_sum_update(rng):
    X, num = positive(rng, (5, 7)), positive(rng, (5, 7))
    r, c = positive(rng, 5), positive(rng, 7)
    expected = X * (num / (r[:, None] + c[None, :]))
    k.outer_sum_update(X, num, r, c)
    np.testing.assert_array_equal(X, expected)


def test_sqrt_update(rng):
    X, num = positive(rng, (4, 6)), positive(rng, (4, 6))
    expected = np.sqrt(X * num)
    k.sqrt_update(X, num)
    np.testing.assert_array_equal(X, expected)


def test_normalize_rows_to_unit_l2_keeps_wh(rng):
    W, H = positive(rng, (6, 3)), positive(rng, (3, 8))
    H[1] = 0.0
    WH = W @ H
    k.normalize_rows_to_unit_l2(H, W)
    np.testing.assert_allclose(np.linalg.norm(H, axis=1), [1.0, 0.0, 1.0], rtol=1e-15)
    np.testing.assert_allclose(W @ H, WH, rtol=1e-14)


def test_normalize_columns_to_unit_sum(rng):
    W = positive(rng, (6, 3))
    W[:, 2] = 0.0
    k.normalize_columns_to_unit_sum(W)
    np.testing.assert_allclose(W.sum(axis=0), [1.0, 1.0, 0.0], rtol=1e-15)


def test_half_squared_residual(rng):
    V, WH = positive(rng, (9, 11)), positive(rng, (9, 11))
    assert k.half_squared_residual(V, WH) == pytest.approx(0.5 * np.sum((V - WH) ** 2), rel=1e-14)


def test_divergence_and_quotient(rng):
    V, WH = positive(rng, (6, 5)), positive(rng, (6, 5))
    V[0, 0] = 0.0  # contributes WH to D and 0 to C
    C = np.empty_like(V)
    D = k.divergence_and_quotient(V, WH, 1e-9, C)
    safe = np.where(V > 0, V, 1.0)
    expected = np.sum(np.where(V > 0, V * np.log(safe / WH), 0.0) - V + WH)
    assert D == pytest.approx(expected, rel=1e-13)
    np.testing.assert_array_equal(C, np.where(V > 0, V / (WH + 1e-9), 0.0))
    Q = np.empty_like(V)
    k.quotient(V, WH, 1e-9, Q)
    np.testing.assert_array_equal(Q, C)


def test_divergence_is_infinite_where_wh_vanishes_under_data():
    V = np.array([[1.0, 0.0]])
    WH = np.array([[0.0, 0.0]])
    C = np.empty_like(V)
    assert k.divergence_and_quotient(V, WH, 0.0, C) == np.inf
    assert C[0, 1] == 0.0


def test_multiplicative_update_into_and_scale_rows_match_numpy_and_the_in_place_kernel(rng):
    X, num, den = positive(rng, (5, 11)), positive(rng, (5, 11)), positive(rng, (5, 11))
    X[2] = 0.0  # a zero row stays zero, W's column unscaled
    W = positive(rng, (4, 5))
    out, row_ss = np.empty_like(X), np.empty(5)
    k.multiplicative_update_into(X, num, den, 1e-9, out, row_ss)
    expected, W_expected = X * (num / (den + 1e-9)), W.copy()
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_allclose(row_ss, np.sum(expected**2, axis=1), rtol=1e-14)
    k.scale_rows_to_unit_l2(out, W, row_ss)
    k.normalize_rows_to_unit_l2(expected, W_expected)
    np.testing.assert_allclose(out, expected, rtol=1e-14)  # sums of squares in another order
    np.testing.assert_allclose(W, W_expected, rtol=1e-14)
    np.testing.assert_array_equal(W[:, 2], W_expected[:, 2])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_updates_write_subnormal_results_as_zero_and_keep_nan(dtype):
    # Subnormal operands cost Intel CPUs a microcode assist in every product
    # (37-43x slower BLAS on CBCL's H): the update kernels write them as zero.
    tiny = np.finfo(dtype).tiny
    X = np.array([[tiny, 1.0, np.nan, 4.0]], dtype=dtype)
    num = np.array([[0.25, 0.5, 1.0, 1.0]], dtype=dtype)
    den = np.ones_like(X)
    out, row_ss = np.empty_like(X), np.empty(1)
    k.multiplicative_update_into(X, num, den, 0.0, out, row_ss)
    assert out[0, 0] == 0.0 and out[0, 1] == 0.5 and np.isnan(out[0, 2])
    assert out[0, 3] == 4.0
    Y = X.copy()
    k.outer_sum_update(Y, num, np.ones(1), np.zeros(4))
    assert Y[0, 0] == 0.0 and Y[0, 1] == 0.5 and np.isnan(Y[0, 2])
    H = np.array([[tiny * 4, 3.0, 4.0]], dtype=dtype)
    W = np.ones((2, 1), dtype=dtype)
    k.normalize_rows_to_unit_l2(H, W)  # divides by 5: the first entry is subnormal
    assert H[0, 0] == 0.0 and H[0, 1] == pytest.approx(0.6) and W[0, 0] == pytest.approx(5.0)
    C = np.array([[tiny * 2], [3.0]], dtype=dtype)
    k.normalize_columns_to_unit_sum(C)
    assert C[0, 0] == 0.0 and C[1, 0] == pytest.approx(1.0)
