"""Tests of the synthetic data sets and of the part-recovery score."""

import itertools

import numpy as np
import pytest

from nmfsc.datasets import SWIMMER_SHAPE, bars, part_recovery, swimmer


def test_swimmer_is_every_pose_of_disjoint_parts():
    V, parts = swimmer()
    assert V.shape == (1024, 256) and parts.shape == (1024, 17)
    assert V.dtype == np.float64 and set(np.unique(V)) == {0.0, 1.0}
    assert parts[:, 0].sum() == 14 and np.all(parts[:, 1:].sum(axis=0) == 6)
    assert parts.sum(axis=1).max() == 1  # no pixel in two parts
    poses = list(itertools.product(range(4), repeat=4))
    for j in [0, 1, 37, 255]:
        chosen = [0] + [1 + 4 * limb + p for limb, p in enumerate(poses[j])]
        np.testing.assert_array_equal(V[:, j], parts[:, chosen].sum(axis=1))
    assert len({V[:, j].tobytes() for j in range(256)}) == 256


def test_swimmer_is_upright_with_arms_above_legs():
    V, parts = swimmer()
    torso = parts[:, 0].reshape(SWIMMER_SHAPE)
    rows = np.flatnonzero(torso.any(axis=1))
    assert torso[:, 15].sum() == 14 and np.all(np.diff(rows) == 1)
    for limb in range(4):
        for p in range(4):
            image = parts[:, 1 + 4 * limb + p].reshape(SWIMMER_SHAPE)
            limb_rows = np.flatnonzero(image.any(axis=1))
            if limb < 2:  # arms: at or above the top of the torso, up to 6 rows below
                assert limb_rows.min() < rows.min() or limb_rows.max() <= rows.min() + 6
            else:
                assert limb_rows.max() > rows.max() or limb_rows.min() >= rows.max() - 6


def test_bars_are_sums_of_bars():
    V, parts = bars(n_samples=200, size=6, p=0.3, random_state=0)
    assert V.shape == (36, 200) and parts.shape == (36, 12)
    np.testing.assert_array_equal(parts[:, 2].reshape(6, 6)[2], np.ones(6))  # row 2
    np.testing.assert_array_equal(parts[:, 6 + 4].reshape(6, 6)[:, 4], np.ones(6))  # col 4
    assert parts.sum() == 12 * 6
    # each image is row_bar[i] + column_bar[j] with 0/1 bars: additive in rows and columns
    images = V.T.reshape(200, 6, 6)
    additive = images[:, :1, :1] + images - images[:, :1, :] - images[:, :, :1]
    np.testing.assert_array_equal(additive, 0)
    assert set(np.unique(V)) <= {0.0, 1.0, 2.0}
    assert V.mean() == pytest.approx(2 * 0.3, abs=0.05)  # each pixel: two bars, each p


def test_bars_are_reproducible_and_checked():
    a, _ = bars(random_state=4)
    b, _ = bars(random_state=np.random.default_rng(4))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (64, 1000)
    assert bars(n_samples=2000, random_state=1)[0].sum() / 8 / 2000 == pytest.approx(2, rel=0.1)
    with pytest.raises(ValueError, match="probability"):
        bars(p=1.5)


def test_part_recovery_is_one_for_the_parts_in_any_order_and_scale():
    _, parts = swimmer()
    W = parts[:, ::-1] * np.linspace(0.5, 3.0, 17)
    assert part_recovery(W, parts) == pytest.approx(1.0)
    extra = np.column_stack([W, np.random.default_rng(0).random((1024, 5))])
    assert part_recovery(extra, parts) == pytest.approx(1.0)


def test_part_recovery_by_hand():
    T = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    W = np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    # best one-to-one match: part 0 <-> w1 (1/sqrt 2), part 1 <-> w0 (1)
    assert part_recovery(W, T) == pytest.approx((1 + 1 / np.sqrt(2)) / 2)
    # fewer components than parts: the unmatched part counts as 0
    assert part_recovery(W[:, :1], T) == pytest.approx(0.5)
    # zero columns match nothing
    assert part_recovery(np.zeros((3, 2)), T) == 0.0


def test_part_recovery_drops_for_mixed_parts():
    _, parts = bars(size=5, random_state=0)
    mixed = parts @ np.random.default_rng(0).random((10, 10))
    assert part_recovery(mixed, parts) < 0.8


def test_part_recovery_checks_shapes():
    with pytest.raises(ValueError, match="same number of rows"):
        part_recovery(np.ones((4, 2)), np.ones((5, 2)))
