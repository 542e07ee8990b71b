"""Mosaic geometry, colour mapping and files of the plotting helpers (headless)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from nmfsc import sparseness
from nmfsc.plotting import (
    BORDER_COLOR,
    grid_shape,
    plot_basis,
    plot_on_off,
    plot_passes,
    plot_sparseness_bars,
    save_figure,
    tile_images,
)

WHITE = (1.0, 1.0, 1.0, 1.0)
BLACK = (0.0, 0.0, 0.0, 1.0)


def mapped_colours(ax):
    """RGBA of every pixel of the axes' image, as the colormap and norm give it."""
    image = ax.images[0]
    return image.to_rgba(image.get_array())  # masked pixels get the 'bad' colour


def render(fig):
    """The figure drawn by Agg, as an (H, W, 4) uint8 array."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())


def full_frame_axes(size_px=(100, 100)):
    """An axes covering a whole figure of ``size_px`` pixels (height, width)."""
    fig = Figure(figsize=(size_px[1] / 50, size_px[0] / 50), dpi=50)
    return fig.add_axes((0, 0, 1, 1))


# --- grid and mosaic ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_tiles", "n_cols", "expected"),
    [
        (49, None, (7, 7)),
        (25, None, (5, 5)),
        (72, None, (8, 9)),
        (1, None, (1, 1)),
        (25, 10, (3, 10)),
        (72, 18, (4, 18)),
    ],
)
def test_grid_shape(n_tiles, n_cols, expected):
    assert grid_shape(n_tiles, n_cols) == expected


def test_mosaic_geometry_tiles_and_borders():
    height, width, m = 2, 3, 5
    W = np.arange(1, height * width * m + 1, dtype=float).reshape(m, -1).T  # (6, 5)
    mosaic = tile_images(W, (height, width), n_cols=3, normalize=None)
    assert mosaic.shape == (2 * height + 1, 3 * width + 2)
    for j in range(m):
        r, c = divmod(j, 3)
        tile = mosaic[
            r * (height + 1) : r * (height + 1) + height, c * (width + 1) : c * (width + 1) + width
        ]
        np.testing.assert_array_equal(tile, W[:, j].reshape(height, width))
    assert np.all(np.isnan(mosaic[height, :]))  # border row
    assert np.all(np.isnan(mosaic[:, [width, 2 * width + 1]]))  # border columns
    assert np.all(np.isnan(mosaic[height + 1 :, 2 * (width + 1) :]))  # empty 6th slot
    assert np.count_nonzero(~np.isnan(mosaic)) == height * width * m


@pytest.mark.parametrize("border", [0, 2])
def test_mosaic_border_width(border):
    W = np.ones((4, 4))
    mosaic = tile_images(W, (2, 2), n_cols=2, normalize=None, border=border, fill=-1.0)
    assert mosaic.shape == (4 + border, 4 + border)
    assert np.count_nonzero(mosaic == -1.0) == mosaic.size - 16


def test_mosaic_reads_columns_in_row_major_order():
    image = np.zeros((56, 46))
    image[0, 45] = 1.0  # top right corner
    mosaic = tile_images(image.reshape(-1, 1), (56, 46), normalize=None)
    assert mosaic.shape == (56, 46) and mosaic[0, 45] == 1.0


def test_mosaic_normalisation():
    rng = np.random.default_rng(0)
    W = np.abs(rng.standard_normal((9, 4))) * [1e-3, 1.0, 1e3, 0.0]
    l2 = tile_images(W, (3, 3), n_cols=4, normalize="l2", border=0)
    peak = tile_images(W, (3, 3), n_cols=4, normalize="max", border=0)
    raw = tile_images(W, (3, 3), n_cols=4, normalize=None, border=0)
    tiles = [slice(3 * j, 3 * j + 3) for j in range(4)]
    np.testing.assert_allclose([np.linalg.norm(l2[:, t]) for t in tiles[:3]], 1.0)
    np.testing.assert_allclose([np.abs(peak[:, t]).max() for t in tiles[:3]], 1.0)
    assert np.all(l2[:, tiles[3]] == 0) and np.all(peak[:, tiles[3]] == 0)  # zero column kept
    np.testing.assert_array_equal(raw[:, tiles[2]], W[:, 2].reshape(3, 3))


def test_mosaic_signed_allows_negative_weights_only_when_asked():
    W = np.array([[1.0], [-1.0], [0.0], [0.5]])
    with pytest.raises(ValueError, match="W has negative entries; pass signed=True"):
        tile_images(W, (2, 2))
    assert tile_images(W, (2, 2), normalize=None, signed=True)[0, 1] == -1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"W": np.ones((10, 2))}, "W has 10 rows but image_shape \\(3, 3\\) has 9 pixels"),
        ({"normalize": "l1"}, "normalize must be 'l2', 'max' or None, got 'l1'"),
        ({"border": -1}, "border must be >= 0, got -1"),
        ({"n_cols": 0}, "n_cols must be >= 1"),
        ({"image_shape": (9,)}, "image_shape must be a .height, width. pair"),
        ({"W": np.ones(9)}, "W must be 2-D"),
    ],
)
def test_tile_images_rejects_bad_input(kwargs, match):
    args = {"W": np.ones((9, 2)), "image_shape": (3, 3)} | kwargs
    with pytest.raises(ValueError, match=match):
        tile_images(**args)


# --- colours -----------------------------------------------------------------------


def test_plot_basis_maps_zero_to_white_and_the_largest_weight_to_black():
    W = np.zeros((9, 2))
    W[4, 0] = 2.0
    W[0, 1] = 0.5
    ax = plot_basis(W, (3, 3), n_cols=2, normalize=None)
    colours = mapped_colours(ax)
    np.testing.assert_allclose(colours[1, 1], BLACK)  # the largest weight
    np.testing.assert_allclose(colours[0, 0], WHITE)  # zero
    assert 0.7 < colours[0, 4][0] < 0.8  # 0.5 of 2.0: light grey (gray(0.75))
    np.testing.assert_allclose(colours[0, 3], to_rgba(BORDER_COLOR))  # border pixel


def test_rendered_zero_is_white_and_positive_dark():
    image = np.zeros((10, 10))
    image[:, 5:] = 1.0  # right half positive
    ax = full_frame_axes()
    plot_basis(image.reshape(-1, 1), (10, 10), ax=ax)
    pixels = render(ax.figure)
    np.testing.assert_array_equal(pixels[50, 25], [255, 255, 255, 255])
    np.testing.assert_array_equal(pixels[50, 75], [0, 0, 0, 255])


def test_rendered_signed_zero_is_grey_and_signs_black_and_white():
    image = np.zeros((10, 10))
    image[:, :3] = 1.0
    image[:, 7:] = -1.0
    ax = full_frame_axes()
    plot_basis(image.reshape(-1, 1), (10, 10), ax=ax, signed=True)
    pixels = render(ax.figure).astype(int)
    assert np.all(np.abs(pixels[50, 50, :3] - 128) <= 1)  # zero: mid grey
    np.testing.assert_array_equal(pixels[50, 15, :3], [0, 0, 0])  # positive: black
    np.testing.assert_array_equal(pixels[50, 85, :3], [255, 255, 255])  # negative: white


def test_plot_basis_vmax_is_shared_and_checked():
    W = np.array([[0.0], [1.0]])
    colours = mapped_colours(plot_basis(W, (1, 2), normalize=None, vmax=2.0))
    assert 0.45 < colours[0, 1][0] < 0.55  # 1 of 2: mid grey
    with pytest.raises(ValueError, match="vmax must be a finite number > 0"):
        plot_basis(W, (1, 2), vmax=0.0)


def test_plot_basis_of_all_zero_basis_is_white():
    colours = mapped_colours(plot_basis(np.zeros((4, 1)), (2, 2)))
    np.testing.assert_allclose(colours.reshape(-1, 4), np.tile(WHITE, (4, 1)))


def test_plot_basis_makes_its_own_figure_with_a_title():
    ax = plot_basis(np.ones((361, 49)), (19, 19), title="Figure 3a")
    assert isinstance(ax.figure, Figure)
    assert ax.get_title() == "Figure 3a"
    assert ax.images[0].get_array().shape == (7 * 20 - 1, 7 * 20 - 1)


def test_plot_on_off_panels():
    patch = (4, 4)
    on = np.zeros((16, 2))
    off = np.zeros((16, 2))
    on[5, 0] = 1.0  # column 0: ON only
    off[10, 1] = 2.0  # column 1: OFF only
    axes = plot_on_off(np.vstack([on, off]), patch, n_cols=2)
    assert [ax.get_title() for ax in axes] == ["ON", "OFF", "ON minus OFF"]
    on_c, off_c, diff_c = (mapped_colours(ax) for ax in axes)
    np.testing.assert_allclose(on_c[1, 1], BLACK)  # unit-L2 columns share one scale
    np.testing.assert_allclose(on_c[:4, 5:].reshape(-1, 4), np.tile(WHITE, (16, 1)))
    np.testing.assert_allclose(off_c[2, 5 + 2], BLACK)
    assert np.all(np.abs(diff_c[0, 0, :3] - 0.5) < 0.01)  # zero: grey
    np.testing.assert_allclose(diff_c[1, 1], BLACK)  # ON: black
    np.testing.assert_allclose(diff_c[2, 7], WHITE)  # OFF: white


def test_plot_on_off_default_layout_for_72_filters():
    axes = plot_on_off(np.ones((288, 72)))
    assert len(axes) == 3 and len({id(ax.figure) for ax in axes}) == 1
    assert axes[0].images[0].get_array().shape == (4 * 13 - 1, 18 * 13 - 1)


def test_plot_on_off_rejects_bad_input():
    with pytest.raises(ValueError, match="W has 144 rows but patch_shape .* needs 2 \\* 144"):
        plot_on_off(np.ones((144, 3)))
    with pytest.raises(ValueError, match="W has negative entries"):
        plot_on_off(-np.ones((288, 3)))
    with pytest.raises(ValueError, match="axes must hold 3 axes"):
        plot_on_off(np.ones((8, 1)), (2, 2), axes=[full_frame_axes()])


# --- Figures 2 and 6 -----------------------------------------------------------------


def test_plot_sparseness_bars_draws_one_bar_per_element():
    rng = np.random.default_rng(1)
    vectors = [np.abs(rng.standard_normal(n)) for n in (20, 20, 30, 5)]
    axes = plot_sparseness_bars(vectors, [0.1, 0.4, 0.7, 0.9])
    assert [len(ax.patches) for ax in axes] == [20, 20, 30, 5]
    assert [ax.get_title() for ax in axes] == [f"sparseness {s}" for s in (0.1, 0.4, 0.7, 0.9)]
    heights = [bar.get_height() for bar in axes[2].patches]
    np.testing.assert_allclose(heights, vectors[2])


def test_plot_sparseness_bars_computes_sparseness_when_not_given():
    vectors = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 3.0, 1.0]])
    axes = plot_sparseness_bars(vectors)
    assert axes[0].get_title() == "sparseness 0"
    assert axes[1].get_title() == f"sparseness {sparseness(vectors[1]):.2g}"


def test_plot_sparseness_bars_rejects_mismatched_input():
    with pytest.raises(ValueError, match="sparseness_values has 1 entries but there are 2"):
        plot_sparseness_bars([[1.0, 2.0], [3.0, 4.0]], [0.5])
    with pytest.raises(ValueError, match="vectors is empty"):
        plot_sparseness_bars([])


def test_plot_passes_lines_and_log_axis():
    dims = [2, 3, 5, 10, 50, 100, 500, 1000, 3000, 5000, 10000]
    mean = np.linspace(2, 6, len(dims))
    ax = plot_passes(dims, mean, mean - 1, mean + 2)
    assert ax.get_xscale() == "log"
    assert [line.get_linestyle() for line in ax.lines] == ["-", "--", "--"]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), mean)
    np.testing.assert_allclose(ax.lines[2].get_xdata(), dims)
    assert ax.get_ylim()[0] == 0


def test_plot_passes_rejects_bad_input():
    with pytest.raises(ValueError, match="hi has 2 entries but dims has 3"):
        plot_passes([1, 2, 3], [1, 1, 1], [1, 1, 1], [1, 1])
    with pytest.raises(ValueError, match="dims must be > 0"):
        plot_passes([0, 2], [1, 1], [1, 1], [1, 1])


# --- files and global state ----------------------------------------------------------


def test_save_figure_writes_png_and_pdf(tmp_path):
    ax = plot_basis(np.ones((4, 2)), (2, 2))
    png, pdf = save_figure(ax.figure, tmp_path / "new" / "dir" / "fig1.5a")
    assert (png.name, pdf.name) == ("fig1.5a.png", "fig1.5a.pdf")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    first = pdf.read_bytes()
    save_figure(ax.figure, tmp_path / "new" / "dir" / "fig1.5a")
    assert pdf.read_bytes() == first  # no creation date: reproducible bytes


def test_save_figure_rejects_a_suffix_and_non_figures(tmp_path):
    fig = plot_basis(np.ones((4, 1)), (2, 2)).figure
    with pytest.raises(ValueError, match="must not end in '.png'"):
        save_figure(fig, tmp_path / "fig.png")
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        save_figure(fig.axes[0], tmp_path / "fig")


def test_importing_and_plotting_leave_pyplot_alone():
    code = (
        "import sys, numpy as np; import nmfsc.plotting as p; "
        "p.plot_basis(np.ones((4, 1)), (2, 2)); print('matplotlib.pyplot' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MPLBACKEND": "Agg"},
        cwd=Path(__file__).parents[1],  # the repository root, where nmfsc/ lives
    )
    assert result.stdout.strip() == "False"
