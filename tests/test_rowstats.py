"""The distributed projection's per-chunk statistics kernels against NumPy."""

import numpy as np
import pytest

from nmfsc._kernels import rowstats


def reference(y, sel):
    """Count, sum, centred squares, min, max of the selected y, max of the rest (NumPy)."""
    y = y.astype(np.float64)
    count = sel.sum(axis=1).astype(np.float64)
    total = np.where(sel, y, 0.0).sum(axis=1)
    own = np.divide(total, count, out=np.zeros(len(y)), where=count > 0)
    dev = np.where(sel, y - own[:, None], 0.0)
    return {
        rowstats.K: count,
        rowstats.SUM: total,
        rowstats.M2: (dev * dev).sum(axis=1),
        rowstats.LO: np.where(sel, y, np.inf).min(axis=1, initial=np.inf),
        rowstats.HI: np.where(sel, y, -np.inf).max(axis=1, initial=-np.inf),
        rowstats.OUT: np.where(sel, -np.inf, y).max(axis=1, initial=-np.inf),
    }


def check(out, ref):
    for col in (rowstats.K, rowstats.LO, rowstats.HI, rowstats.OUT):
        np.testing.assert_array_equal(out[:, col], ref[col], err_msg=f"column {col}")
    for col in (rowstats.SUM, rowstats.M2):
        np.testing.assert_allclose(out[:, col], ref[col], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_selected_stats_match_numpy(dtype):
    rng = np.random.default_rng(3)
    y = (rng.standard_normal((7, 1001)) + 0.3).astype(dtype)
    y[2] = 0.5  # a constant row: everything or nothing selected
    lo = np.array([-np.inf, 0.0, 0.4, 0.2, 5.0, -1.0, 0.1])  # row 4 selects nothing
    m = rng.random(7)
    t = rng.random(7) * 2
    mean = rng.standard_normal(7) * 0.1
    out = np.zeros((7, rowstats.WIDTH))
    rowstats.selected_stats(y, None, 0.0, lo, m, t, mean, out)
    yy = y.astype(np.float64)
    sel = (yy >= lo[:, None]) & (m[:, None] + t[:, None] * (yy - mean[:, None]) > 0.0)
    check(out, reference(y, sel))
    assert out[4, rowstats.K] == 0 and out[4, rowstats.M2] == 0.0


def test_selected_stats_reads_a_float32_chunk_as_float64():
    """The selection is made on the float32 value converted exactly to float64."""
    y = np.array([[np.float32(0.1), np.float32(0.3)]], dtype=np.float32)
    lo = np.array([float(np.float32(0.1))])
    out = np.zeros((1, rowstats.WIDTH))
    rowstats.selected_stats(y, None, 0.0, lo, np.ones(1), np.zeros(1), np.zeros(1), out)
    assert out[0, rowstats.K] == 2
    assert out[0, rowstats.LO] == float(np.float32(0.1))


def test_first_pass_all_and_positive_entries():
    rng = np.random.default_rng(4)
    y = rng.standard_normal((5, 300))
    y[1, [10, 20]] = 9.0  # a tie for the largest: the earliest index
    y[3, 7] = np.nan
    y[4, 0] = np.inf
    out = np.zeros((5, 2 * rowstats.WIDTH))
    rowstats.all_and_positive_stats(y, 1000, out)
    np.testing.assert_array_equal(out[:, rowstats.BAD], [0, 0, 0, 1, 1])
    good = [0, 1, 2]
    np.testing.assert_array_equal(out[good, rowstats.ARG], 1000 + np.argmax(y[good], axis=1))
    assert out[1, rowstats.ARG] == 1010
    np.testing.assert_array_equal(out[good, rowstats.MAX], y[good].max(axis=1))
    full = reference(y[good], np.ones((3, 300), dtype=bool))
    positive = reference(y[good], y[good] > 0)
    check(out[good, : rowstats.WIDTH], full)
    check(out[good, rowstats.WIDTH :], positive)


def test_empty_chunk():
    out = np.zeros((2, 2 * rowstats.WIDTH))
    rowstats.all_and_positive_stats(np.zeros((2, 0)), 0, out)
    assert np.all(out[:, rowstats.K] == 0) and np.all(out[:, rowstats.LO] == np.inf)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_trial_formed_entry_by_entry_gives_the_same_bits(dtype):
    """The fused pass (H - mu dH never stored) equals the pass on NumPy's trial."""
    pytest.importorskip("dask")  # the Dask backend's trial; README's install has no Dask
    from nmfsc.dask_backend.chunked_projection import trial

    rng = np.random.default_rng(5)
    h = rng.random((6, 777)).astype(dtype)
    dh = rng.standard_normal((6, 777)).astype(dtype)
    mu = 0.37
    params = (np.full(6, -np.inf), np.full(6, 0.002), np.full(6, 0.9), np.full(6, 0.3))
    fused = np.zeros((6, rowstats.WIDTH))
    rowstats.selected_stats(h, dh, dh.dtype.type(mu), *params, fused)
    stored = np.zeros((6, rowstats.WIDTH))
    rowstats.selected_stats(trial(h, dh, mu), None, 0.0, *params, stored)
    np.testing.assert_array_equal(fused, stored)


def test_huge_entries_are_flagged_like_non_finite_ones():
    y = np.ones((2, 9))
    y[1, 3] = -(2.0**1000)
    out = np.zeros((2, 2 * rowstats.WIDTH))
    rowstats.all_and_positive_stats(y, 0, out)
    np.testing.assert_array_equal(out[:, rowstats.BAD], [0, 1])


@pytest.mark.parametrize("empty_first", [True, False])
def test_an_empty_chunk_does_not_take_the_argmax(empty_first):
    # A row whose entries are all negative, beside a zero-width chunk: the
    # merged largest entry is the row's own (an empty chunk's used to be 0 at
    # index 0, which rho = 1 would have written to).
    pytest.importorskip("dask")
    from nmfsc.dask_backend.chunked_projection import chunk_stats, merge_stats

    empty = chunk_stats(np.zeros((1, 0)), 0, None)
    full = chunk_stats(np.array([[-3.0, -2.0, -0.5, -1.0]]), 0, None)
    merged = merge_stats(empty, full) if empty_first else merge_stats(full, empty)
    assert merged[0, rowstats.ARG] == 2 and merged[0, rowstats.MAX] == -0.5
