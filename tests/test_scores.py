"""Locality, orientation and sparseness scores on synthetic bases."""

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from nmfsc import sparseness
from nmfsc.scores import (
    locality,
    orientation,
    sparseness_summary,
    summarize_scores,
    uniform_spread,
)

CBCL = (19, 19)
ORL = (56, 46)
PATCH = (12, 12)


# --- synthetic images --------------------------------------------------------


def centred_grid(shape, centre=None):
    """Row and column offsets from ``centre`` (default: the middle of the frame)."""
    rows, cols = np.mgrid[: shape[0], : shape[1]].astype(float)
    if centre is None:
        centre = ((shape[0] - 1) / 2, (shape[1] - 1) / 2)
    return rows - centre[0], cols - centre[1]


def gaussian(shape, sd, centre=None):
    rows, cols = centred_grid(shape, centre)
    return np.exp(-(rows**2 + cols**2) / (2 * sd**2))


def gabor(shape, sd=2.0, freq=0.2, angle=0.0, phase=0.0, centre=None):
    rows, cols = centred_grid(shape, centre)
    along = cols * np.cos(angle) + rows * np.sin(angle)
    return gaussian(shape, sd, centre) * np.cos(2 * np.pi * freq * along + phase)


def edge(shape, sd=2.5, centre=None):
    rows, cols = centred_grid(shape, centre)
    return np.sign(cols + 1e-9) * gaussian(shape, sd, centre)


def dog(shape, sd=1.5, ratio=2.0):
    return gaussian(shape, sd) - gaussian(shape, sd * ratio) / ratio**2


def face_like(shape, extent=0.45):
    """A smooth full-frame oval, like NMF's global 'ghost faces' on ORL."""
    rows, cols = centred_grid(shape)
    r2 = (rows / (extent * shape[0])) ** 2 + (cols / (extent * shape[1])) ** 2
    return np.exp(-(r2**2))


def grating(shape, freq=0.2, angle=0.3):
    rows, cols = centred_grid(shape)
    return 1.0 + np.cos(2 * np.pi * freq * (cols * np.cos(angle) + rows * np.sin(angle)))


def embed(small, shape, offset):
    """``small`` placed at ``offset`` (top-left corner) in a zero image of ``shape``."""
    image = np.zeros(shape)
    image[offset[0] : offset[0] + small.shape[0], offset[1] : offset[1] + small.shape[1]] = small
    return image


def as_basis(*images):
    return np.column_stack([np.ravel(image) for image in images])


def on_off(*filters):
    """Columns [ON; OFF] = [max(f, 0); max(-f, 0)] of the given filters."""
    return np.vstack([as_basis(*filters).clip(min=0), (-as_basis(*filters)).clip(min=0)])


# --- locality ------------------------------------------------------------------


def test_locality_point_is_one_and_uniform_is_zero():
    point = np.zeros(CBCL)
    point[4, 15] = 3.0
    scores = locality(as_basis(point, np.ones(CBCL)), CBCL)
    np.testing.assert_allclose(scores, [1.0, 0.0], atol=1e-12)


def test_locality_separates_blobs_from_global_patterns():
    rng = np.random.default_rng(0)
    blobs = [gaussian(CBCL, sd) for sd in (1.0, 2.0, 3.0)]
    global_ = [
        np.abs(rng.standard_normal(CBCL)),
        rng.uniform(size=CBCL),
        grating(CBCL),
        face_like(CBCL),
    ]
    local_scores = locality(as_basis(*blobs), CBCL)
    global_scores = locality(as_basis(*global_), CBCL)
    assert local_scores.min() > 0.6
    assert global_scores.max() < 0.35
    assert np.abs(global_scores[:3]).max() < 0.1  # noise and grating: about 0


def test_locality_face_like_is_low_on_orl_frame_and_a_part_is_high():
    eye = gaussian(ORL, 3.0, centre=(20, 14))
    scores = locality(as_basis(face_like(ORL), eye), ORL)
    assert scores[0] < 0.35
    assert scores[1] > 0.8


def test_locality_of_gaussian_blob_matches_formula():
    sd = 2.0
    score = locality(as_basis(gaussian(CBCL, sd)), CBCL)[0]
    assert score == pytest.approx(1 - sd / uniform_spread(CBCL), abs=1e-3)


def test_locality_falls_strictly_as_blob_widens():
    widths = [0.3, 0.5, 0.8, 1.2, 2.0, 3.0, 4.5, 6.0, 8.0, 12.0]
    scores = locality(as_basis(*[gaussian(CBCL, sd) for sd in widths]), CBCL)
    assert np.all(np.diff(scores) < 0)
    assert scores[0] > 0.95 and scores[-1] < 0.15


def test_locality_ignores_sign_and_scale():
    rng = np.random.default_rng(1)
    image = rng.standard_normal(CBCL) * gaussian(CBCL, 3.0)
    scaled = [image, -image, 1e-200 * image, 1e200 * image, 7.0 * image]
    scores = locality(as_basis(*scaled), CBCL)
    np.testing.assert_allclose(scores, scores[0], rtol=0, atol=1e-12)


def test_locality_ignores_translation_flips_and_transposition():
    rng = np.random.default_rng(4)
    small = rng.uniform(size=(7, 7)) * gaussian((7, 7), 2.0)
    placed = [embed(small, CBCL, offset) for offset in [(6, 6), (0, 12), (12, 0), (3, 9)]]
    flipped = [placed[0][::-1], placed[0][:, ::-1], placed[0].T]
    scores = locality(as_basis(*placed, *flipped), CBCL)
    np.testing.assert_allclose(scores, scores[0], rtol=0, atol=1e-12)


def test_locality_reads_columns_in_row_major_order():
    line = np.zeros(ORL)
    line[10, :] = 1.0  # one full row: spread only along the width
    expected = 1 - np.sqrt((ORL[1] ** 2 - 1) / 12) / uniform_spread(ORL)
    assert locality(as_basis(line), ORL)[0] == pytest.approx(expected, rel=1e-12)


def test_locality_is_negative_when_energy_sits_in_opposite_corners():
    corners = np.zeros(CBCL)
    corners[0, 0] = corners[-1, -1] = 1.0
    assert locality(as_basis(corners), CBCL)[0] < -0.5


def test_locality_zero_column_is_nan_without_warning():
    scores = locality(np.column_stack([np.zeros(361), np.ones(361)]), CBCL)
    assert np.isnan(scores[0]) and scores[1] == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, (20, 3), elements=st.floats(-1e6, 1e6)))
def test_locality_is_bounded(W):
    scores = locality(W, (4, 5))
    finite = scores[~np.isnan(scores)]
    assert np.all(finite <= 1 + 1e-12)
    assert np.all(finite >= 1 - np.sqrt(3) - 1e-12)
    assert np.array_equal(np.isnan(scores), ~np.any(W != 0, axis=0))


@pytest.mark.parametrize(
    ("W", "shape", "error", "match"),
    [
        (np.ones(361), CBCL, ValueError, "W must be 2-D"),
        (np.ones((360, 2)), CBCL, ValueError, "W has 360 rows but image_shape"),
        (np.ones((361, 2)), (19, 19, 1), ValueError, "image_shape must be a .height, width. pair"),
        (np.ones((361, 2)), 361, TypeError, "image_shape must be a .height, width. pair"),
        (np.ones((361, 2)), (19.0, 19), TypeError, "image_shape must hold two positive"),
        (np.ones((1, 2)), (1, 1), ValueError, "at least 2 pixels"),
        (np.ones((0, 2)), (0, 19), ValueError, "image_shape\\[0\\] \\(height\\) must be >= 1"),
        (np.full((361, 1), np.nan), CBCL, ValueError, "W contains NaN"),
    ],
)
def test_locality_rejects_bad_input(W, shape, error, match):
    with pytest.raises(error, match=match):
        locality(W, shape)


# --- orientation ---------------------------------------------------------------


def oriented_filters():
    return [
        *(gabor(PATCH, angle=a) for a in np.linspace(0, np.pi, 7, endpoint=False)),
        gabor(PATCH, phase=np.pi / 2, angle=1.0),
        gabor(PATCH, sd=1.5, freq=0.3, angle=2.0),
        edge(PATCH),
        edge(PATCH).T,
    ]


def isotropic_filters():
    return [gaussian(PATCH, 2.0), gaussian(PATCH, 1.0), dog(PATCH), -dog(PATCH, 1.0, 3.0)]


def test_orientation_separates_gabors_and_edges_from_blobs():
    oriented = orientation(as_basis(*oriented_filters()), PATCH, on_off=False)
    isotropic = orientation(as_basis(*isotropic_filters()), PATCH, on_off=False)
    assert oriented.min() > 0.6
    np.testing.assert_allclose(isotropic, 0.0, atol=1e-10)


def test_orientation_of_off_centre_blob_is_low():
    blob = gaussian(PATCH, 2.0, centre=(3.0, 4.0))
    assert orientation(as_basis(blob), PATCH, on_off=False)[0] < 0.05


def test_orientation_is_nearly_independent_of_angle():
    angles = np.linspace(0, np.pi, 13)
    scores = orientation(as_basis(*[gabor(PATCH, angle=a) for a in angles]), PATCH, False)
    assert np.ptp(scores) < 0.01


def test_orientation_uses_on_minus_off():
    filters = oriented_filters() + isotropic_filters()
    split = orientation(on_off(*filters), PATCH, on_off=True)
    direct = orientation(as_basis(*filters), PATCH, on_off=False)
    np.testing.assert_allclose(split, direct, rtol=1e-12, atol=1e-14)


def test_orientation_on_off_with_shared_offset_is_unchanged():
    W = on_off(gabor(PATCH)) + 0.3  # the same amount added to ON and OFF cancels
    expected = orientation(as_basis(gabor(PATCH)), PATCH, on_off=False)
    np.testing.assert_allclose(orientation(W, PATCH), expected, rtol=1e-10)


def test_orientation_ignores_sign_and_scale():
    f = gabor(PATCH, angle=0.7)
    scores = orientation(as_basis(f, -f, 1e-150 * f, 1e150 * f, 3.0 * f), PATCH, on_off=False)
    np.testing.assert_allclose(scores, scores[0], rtol=1e-12)


def test_orientation_ignores_translation_inside_the_patch():
    small = gabor((7, 7), sd=1.5, angle=0.4)
    placed = [embed(small, PATCH, offset) for offset in [(2, 2), (0, 0), (5, 5), (0, 5), (4, 1)]]
    scores = orientation(as_basis(*placed), PATCH, on_off=False)
    np.testing.assert_allclose(scores, scores[0], rtol=1e-10)


def test_orientation_is_exactly_invariant_to_quarter_turns_and_flips():
    f = gabor(PATCH, angle=0.4, phase=0.3)
    variants = [np.rot90(f), np.rot90(f, 2), f.T, f[::-1], f[:, ::-1]]
    scores = orientation(as_basis(f, *variants), PATCH, on_off=False)
    np.testing.assert_allclose(scores, scores[0], rtol=1e-12)


def test_orientation_of_white_noise_is_low_on_average():
    rng = np.random.default_rng(2)
    scores = orientation(rng.standard_normal((144, 200)), PATCH, on_off=False)
    assert 0.02 < scores.mean() < 0.2


def test_orientation_of_a_zero_filter_is_nan():
    W = np.column_stack([np.ones(288), on_off(gabor(PATCH))[:, 0]])  # ON == OFF
    scores = orientation(W, PATCH)
    assert np.isnan(scores[0]) and scores[1] > 0.6


def test_orientation_works_on_non_square_patches():
    shape = (8, 14)
    f = gabor(shape, sd=2.0, angle=0.2)
    scores = orientation(as_basis(f, gaussian(shape, 1.0)), shape, on_off=False)
    assert scores[0] > 0.6 and scores[1] < 0.01


@settings(max_examples=50, deadline=None)
@given(
    arrays(np.float64, (72, 2), elements=st.just(0.0) | st.floats(1e-6, 1e6)),
    st.floats(1e-100, 1e100),
)
def test_orientation_is_bounded_and_scale_free(W, scale):
    scores = orientation(W, (6, 6))
    assert np.all((scores[~np.isnan(scores)] >= 0) & (scores[~np.isnan(scores)] <= 1))
    np.testing.assert_allclose(orientation(scale * W, (6, 6)), scores, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    ("W", "kwargs", "error", "match"),
    [
        (
            np.ones((144, 2)),
            {},
            ValueError,
            "W has 144 rows but patch_shape .* on_off=True needs 288",
        ),
        (np.ones((288, 2)), {"on_off": False}, ValueError, "on_off=False needs 144"),
        (np.ones((288, 2)), {"patch_shape": (12, 12, 2)}, ValueError, "patch_shape must be"),
        (np.ones((288, 2)), {"on_off": 1}, TypeError, "on_off must be True or False"),
        (np.ones(288), {}, ValueError, "W must be 2-D"),
    ],
)
def test_orientation_rejects_bad_input(W, kwargs, error, match):
    with pytest.raises(error, match=match):
        orientation(W, **kwargs)


# --- summaries -------------------------------------------------------------------


def test_summarize_scores_ignores_nan():
    stats = summarize_scores([0.2, np.nan, 0.4, 0.9])
    assert stats == {
        "mean": pytest.approx(0.5),
        "median": pytest.approx(0.4),
        "min": 0.2,
        "max": 0.9,
        "count": 3,
        "n_undefined": 1,
    }


def test_summarize_scores_of_only_nan_is_nan_without_warning():
    stats = summarize_scores([np.nan, np.nan])
    assert np.isnan(stats["mean"]) and np.isnan(stats["median"])
    assert stats["count"] == 0 and stats["n_undefined"] == 2


def test_summarize_scores_rejects_bad_input():
    with pytest.raises(ValueError, match="values must be 1-D"):
        summarize_scores(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="values contains infinity"):
        summarize_scores([1.0, np.inf])


def test_sparseness_summary_matches_sparseness():
    rng = np.random.default_rng(3)
    W = np.abs(rng.standard_normal((30, 4)))
    H = np.abs(rng.standard_normal((4, 50))) ** 3
    summary = sparseness_summary(W, H)
    for key, values in (("W", sparseness(W, axis=0)), ("H", sparseness(H, axis=1))):
        assert summary[key]["mean"] == pytest.approx(values.mean(), rel=1e-12)
        assert summary[key]["min"] == pytest.approx(values.min(), rel=1e-12)
        assert summary[key]["max"] == pytest.approx(values.max(), rel=1e-12)
        assert summary[key]["count"] == 4 and summary[key]["n_undefined"] == 0


def test_sparseness_summary_of_extreme_vectors():
    W = np.column_stack([np.eye(9)[:, 2], np.ones(9)])  # sparseness 1 and 0
    H = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 0.0, 0.0]])
    summary = sparseness_summary(W, H)
    assert (summary["W"]["min"], summary["W"]["max"]) == (0.0, 1.0)
    assert summary["W"]["mean"] == pytest.approx(0.5)
    assert summary["H"]["count"] == 1 and summary["H"]["n_undefined"] == 1
    assert summary["H"]["mean"] == pytest.approx(sparseness([1.0, 2.0, 0.0, 0.0]))


def test_sparseness_summary_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="W has 3 columns but H has 2 rows"):
        sparseness_summary(np.ones((5, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="H must be 2-D"):
        sparseness_summary(np.ones((5, 3)), np.ones(3))


# --- docs/scores.md ----------------------------------------------------------------


def test_code_blocks_of_docs_scores_run():
    text = (Path(__file__).parents[1] / "docs" / "scores.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    assert len(blocks) >= 5
    namespace = {}
    for k, block in enumerate(blocks):
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block, f"docs/scores.md, python block {k}", "exec"), namespace)
