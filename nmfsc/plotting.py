"""Drawing basis images and the paper's other figures with matplotlib.

Drawn as in Hoyer (2004): the columns of W are tiles in a grid with one-pixel
borders between them; zero weight is white and larger positive weights are
darker (the ``"gray"`` colormap applied to ``-W``); for signed images (ON minus
OFF) zero is mid grey, positive black, negative white, with symmetric limits.

Nothing touches pyplot's global state: functions draw on the axes they are given
or on a new matplotlib ``Figure`` (saved with :func:`save_figure`).
"""

import io
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from nmfsc._parameters import check
from nmfsc._validation import (
    as_float_array,
    check_image_shape,
)
from nmfsc.atomic import write_atomic
from nmfsc.sparseness import sparseness

__all__ = [
    "BORDER_COLOR",
    "grid_shape",
    "plot_basis",
    "plot_on_off",
    "plot_passes",
    "plot_sparseness_bars",
    "save_figure",
    "tile_images",
]

#: Colour of the borders between tiles (and of empty grid slots): a muted blue
#: that reads as neither zero (white, or grey when signed) nor a strong weight.
BORDER_COLOR = "#8fa9c4"

_NORMALIZE = ("l2", "max", None)

#: Inches of figure per mosaic pixel when a function makes its own figure.
_INCHES_PER_PIXEL = 0.035


# --- mosaics -----------------------------------------------------------------------


def grid_shape(n_tiles, n_cols=None):
    """Rows and columns of the grid that holds ``n_tiles`` tiles.

    Parameters
    ----------
    n_tiles : int
        Number of tiles, >= 1.
    n_cols : int, optional
        Tiles per row; default ``ceil(sqrt(n_tiles))`` (7 x 7 for 49, 5 x 5 for
        25, 8 rows of 9 for 72).

    Returns
    -------
    (int, int)
        ``(n_rows, n_cols)`` with ``n_rows = ceil(n_tiles / n_cols)``.

    See Also
    --------
    tile_images : Arranges tiles in this grid.

    Examples
    --------
    >>> from nmfsc.plotting import grid_shape
    >>> grid_shape(49), grid_shape(10), grid_shape(72, n_cols=9)
    ((7, 7), (3, 4), (8, 9))
    """
    n_tiles = check("n_tiles", n_tiles)
    if n_cols is None:
        n_cols = int(np.ceil(np.sqrt(n_tiles)))
    n_cols = check("n_cols", n_cols)
    return -(-n_tiles // n_cols), n_cols


def _normalize_columns(W, normalize):
    """Each column divided by its L2 norm or largest magnitude; zero columns kept."""
    if normalize not in _NORMALIZE:
        raise ValueError(f"normalize must be 'l2', 'max' or None, got {normalize!r}")
    if normalize is None:
        return W
    peak = np.max(np.abs(W), axis=0)
    scale = peak.copy()
    if normalize == "l2":
        ratio = W / np.where(peak == 0, 1.0, peak)  # no overflow in the squares
        scale = peak * np.sqrt(np.sum(ratio * ratio, axis=0))
    return W / np.where(scale == 0, 1.0, scale)


def tile_images(W, image_shape, n_cols=None, normalize="l2", border=1, signed=False, fill=np.nan):
    """Arrange the columns of W as image tiles in one 2-D mosaic.

    Parameters
    ----------
    W : array_like, shape (N, M)
        Basis vectors in columns, ``N = height * width``.
    image_shape : (int, int)
        ``(height, width)`` of a tile; a column reshaped in C order to this
        shape is the upright image (CBCL ``(19, 19)``, ORL ``(56, 46)``,
        natural patches ``(12, 12)``).
    n_cols : int, optional
        Tiles per row of the grid, default ``ceil(sqrt(M))``; tiles fill the
        grid row by row.
    normalize : {"l2", "max", None}, default "l2"
        Scale each column to unit L2 norm (as the paper's CBCL figures), to a
        largest magnitude of 1, or not at all.
    border : int, default 1
        Pixels between neighbouring tiles (none around the outside).
    signed : bool, default False
        If False, W must be non-negative (basis images of NMF); if True, any
        sign is allowed (e.g. ON minus OFF filters).
    fill : float, default NaN
        Value of the border pixels and of grid slots after the last tile. NaN
        lets :func:`plot_basis` draw them in a colour of their own.

    Returns
    -------
    ndarray, shape (n_rows * (height + border) - border, n_cols * (width + border) - border)
        Tile ``j`` (0-based) occupies rows ``r * (height + border)`` onwards and
        columns ``c * (width + border)`` onwards, with ``r, c = divmod(j, n_cols)``.

    Raises
    ------
    ValueError
        If W is not 2-D, has the wrong number of rows, has negative entries
        while ``signed`` is False, or an argument is out of range.

    See Also
    --------
    plot_basis : Draws the mosaic.
    grid_shape : The grid it uses.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.plotting import tile_images
    >>> W = np.random.default_rng(0).random((6, 5))  # five 2 x 3 images
    >>> mosaic = tile_images(W, (2, 3))  # a grid of 2 rows of 3 tiles
    >>> mosaic.shape
    (5, 11)
    >>> round(float(np.linalg.norm(mosaic[:2, :3])), 12)  # tile 0, at unit L2 norm
    1.0
    >>> int(np.isnan(mosaic).sum())  # the borders and the empty sixth slot
    25
    """
    height, width = check_image_shape(image_shape, "image_shape")
    W = as_float_array(W, "W", ndim=2)
    if W.shape[0] != height * width:
        raise ValueError(
            f"W has {W.shape[0]} rows but image_shape {(height, width)!r} has "
            f"{height * width} pixels; W must be N x M with one image per column"
        )
    if not signed and np.any(W < 0):
        raise ValueError(
            "W has negative entries; pass signed=True to tile signed images "
            "(e.g. ON minus OFF filters)"
        )
    border = check("border", border)
    n_rows, n_cols = grid_shape(W.shape[1], n_cols)
    W = _normalize_columns(W, normalize)
    mosaic = np.full(
        (n_rows * (height + border) - border, n_cols * (width + border) - border),
        fill,
        dtype=np.float64,
    )
    for j, column in enumerate(W.T):
        row, col = divmod(j, n_cols)
        top, left = row * (height + border), col * (width + border)
        mosaic[top : top + height, left : left + width] = column.reshape(height, width)
    return mosaic


def _colour_limits(mosaic, signed, vmax):
    """(vmin, vmax) for ``imshow`` of ``-mosaic`` so that 0 is white (or grey)."""
    if vmax is None:
        finite = mosaic[np.isfinite(mosaic)]
        peak = np.max(np.abs(finite)) if signed else np.max(finite, initial=0.0)
        vmax = float(peak) if finite.size and peak > 0 else 1.0
    elif not (np.isfinite(vmax) and vmax > 0):
        raise ValueError(f"vmax must be a finite number > 0, got {vmax!r}")
    return (-vmax, vmax) if signed else (-vmax, 0.0)


def _new_axes(shape_px, n_panels=1, title_space=0.0):
    """A new Figure sized to a mosaic of ``shape_px`` pixels, one axes per panel."""
    height_in = shape_px[0] * _INCHES_PER_PIXEL + title_space
    width_in = shape_px[1] * _INCHES_PER_PIXEL
    scale = min(1.0, 9.0 / max(width_in, n_panels * height_in))
    fig = Figure(figsize=(max(width_in * scale, 1.0), max(n_panels * height_in * scale, 1.0)))
    axes = fig.subplots(n_panels, 1, squeeze=False)[:, 0]
    fig.set_layout_engine("constrained")
    return list(axes)


def _show_mosaic(ax, mosaic, signed, vmax, border_color, title):
    vmin, vmax = _colour_limits(mosaic, signed, vmax)
    cmap = matplotlib.colormaps["gray"].with_extremes(bad=border_color)
    ax.imshow(
        np.ma.masked_invalid(-mosaic), cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest"
    )
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_color(border_color)
    if title is not None:
        ax.set_title(title)
    return ax


def plot_basis(
    W,
    image_shape,
    ax=None,
    *,
    n_cols=None,
    normalize="l2",
    signed=False,
    border=1,
    border_color=BORDER_COLOR,
    vmax=None,
    title=None,
):
    """Draw the columns of W as a grid of basis images.

    Zero weight is white and larger positive weights are darker: the ``"gray"``
    colormap is applied to ``-W`` with limits ``[-vmax, 0]``. With
    ``signed=True`` the limits are ``[-vmax, vmax]``: zero is mid grey,
    positive weights black and negative ones white. Borders between tiles and
    empty grid slots are drawn in ``border_color``.

    Parameters
    ----------
    W : array_like, shape (N, M)
        Basis vectors in columns, ``N = height * width``.
    image_shape : (int, int)
        ``(height, width)`` of one image (C order).
    ax : matplotlib.axes.Axes, optional
        Where to draw; by default a new matplotlib ``Figure`` is
        made (reach it as ``ax.figure``).
    n_cols, normalize, border, signed
        As in :func:`tile_images` (default: unit-L2 columns, as the CBCL figures).
    border_color : color, default :data:`BORDER_COLOR`
    vmax : float, optional
        The weight drawn black; default the largest (absolute, if signed)
        weight of the normalised mosaic. Pass one value to several panels to
        make them comparable.
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes, holding one image (``ax.images[0]``).

    See Also
    --------
    tile_images : The mosaic it draws.
    plot_on_off : The three panels of a natural-image basis.
    save_figure : Writes the figure as PNG and PDF.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.plotting import plot_basis
    >>> W = np.random.default_rng(0).random((6, 5))  # five 2 x 3 images
    >>> ax = plot_basis(W, (2, 3), title="basis")
    >>> type(ax.figure).__name__, ax.get_title()  # a Figure of its own, not pyplot's
    ('Figure', 'basis')
    >>> ax.images[0].get_array().shape  # the mosaic of tile_images
    (5, 11)
    """
    mosaic = tile_images(W, image_shape, n_cols, normalize, border, signed)
    if ax is None:
        ax = _new_axes(mosaic.shape, title_space=0.3 if title else 0.0)[0]
    return _show_mosaic(ax, mosaic, signed, vmax, border_color, title)


def _stacked_panel_cols(n_tiles):
    """Tiles per row for three stacked panels: ~sqrt(3 M), a divisor of M if near."""
    target = min(int(np.ceil(np.sqrt(3 * n_tiles))), n_tiles)
    divisors = [d for d in range(target, 2 * target + 1) if n_tiles % d == 0]
    return divisors[0] if divisors else target


def plot_on_off(
    W,
    patch_shape=(12, 12),
    axes=None,
    *,
    n_cols=None,
    normalize="l2",
    border=1,
    border_color=BORDER_COLOR,
):
    """Three panels for a natural-image basis: ON weights, OFF weights, ON minus OFF.

    As Figure 1c and Figure 5 of the paper: each column of W is
    ``[ON; OFF]``, two ``patch_shape`` images stacked (``W[:P]`` and
    ``W[P:]``, ``P = height * width``). Columns are first normalised as a whole
    (``normalize``), the ON and OFF panels share one colour scale (white zero,
    dark positive), and the ON-minus-OFF panel is signed (grey zero).

    Parameters
    ----------
    W : array_like, shape (2 * height * width, M)
        Non-negative basis, ON rows then OFF rows.
    patch_shape : (int, int), default (12, 12)
    axes : sequence of three matplotlib.axes.Axes, optional
        Default: a new Figure with the panels stacked top to bottom.
    n_cols : int, optional
        Tiles per row in each panel. Default: about ``sqrt(3 * M)``, so that the
        three stacked panels make a roughly square figure, rounded up to a
        divisor of M when one is near (18, i.e. 4 full rows, for M = 72).
    normalize, border, border_color
        As in :func:`plot_basis`.

    Returns
    -------
    list of matplotlib.axes.Axes
        The ON, OFF and ON-minus-OFF axes.

    See Also
    --------
    plot_basis : One grid of basis images.
    nmfsc.datasets.load_natural : The data such a basis is learned from.
    nmfsc.orientation : The score of these filters.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.plotting import plot_on_off
    >>> W = np.random.default_rng(0).random((8, 4))  # ON then OFF rows of 2 x 2 patches
    >>> axes = plot_on_off(W, patch_shape=(2, 2))
    >>> [ax.get_title() for ax in axes]
    ['ON', 'OFF', 'ON minus OFF']
    """
    height, width = check_image_shape(patch_shape, "patch_shape")
    n_pixels = height * width
    W = as_float_array(W, "W", ndim=2)
    if W.shape[0] != 2 * n_pixels:
        raise ValueError(
            f"W has {W.shape[0]} rows but patch_shape {(height, width)!r} with ON and "
            f"OFF channels needs 2 * {n_pixels} = {2 * n_pixels}"
        )
    if np.any(W < 0):
        raise ValueError("W has negative entries; ON and OFF weights must be non-negative")
    if n_cols is None:
        n_cols = _stacked_panel_cols(W.shape[1])
    W = _normalize_columns(W, normalize)
    on, off = W[:n_pixels], W[n_pixels:]
    panels = [(on, False, "ON"), (off, False, "OFF"), (on - off, True, "ON minus OFF")]
    mosaics = [tile_images(p, patch_shape, n_cols, None, border, signed) for p, signed, _ in panels]
    if axes is None:
        axes = _new_axes(mosaics[0].shape, n_panels=3, title_space=0.3)
    axes = list(axes)
    if len(axes) != 3:
        raise ValueError(f"axes must hold 3 axes (ON, OFF, ON minus OFF), got {len(axes)}")
    shared = float(max(np.max(on, initial=0.0), np.max(off, initial=0.0))) or None
    for ax, mosaic, (_, signed, title) in zip(axes, mosaics, panels, strict=True):
        _show_mosaic(ax, mosaic, signed, None if signed else shared, border_color, title)
    return axes


# --- Figures 2 and 6 ------------------------------------------------------------------


def plot_sparseness_bars(vectors, sparseness_values=None, axes=None):
    """Figure 2: each vector drawn as bars, titled with its sparseness.

    Parameters
    ----------
    vectors : sequence of array_like, or array_like of shape (K, n)
        K vectors (lengths may differ), one per panel, left to right.
    sparseness_values : sequence of float, optional
        The sparseness written above each panel (the paper: 0.1, 0.4, 0.7,
        0.9); default: computed with :func:`nmfsc.sparseness`.
    axes : sequence of K matplotlib.axes.Axes, optional
        Default: a new Figure with the K panels side by side.

    Returns
    -------
    list of matplotlib.axes.Axes
        One axes per vector; element ``i`` of vector ``k`` is bar ``i``.

    See Also
    --------
    nmfsc.sparseness : The sparseness in each title.

    References
    ----------
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    >>> from nmfsc.plotting import plot_sparseness_bars
    >>> axes = plot_sparseness_bars([[0.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    >>> [ax.get_title() for ax in axes], len(axes[0].patches)
    (['sparseness 1', 'sparseness 0'], 4)
    """
    if isinstance(vectors, np.ndarray) and vectors.ndim == 2:
        vectors = list(vectors)
    vectors = [as_float_array(v, f"vectors[{k}]", ndim=1) for k, v in enumerate(vectors)]
    if not vectors:
        raise ValueError("vectors is empty; it needs at least one vector")
    if sparseness_values is None:
        sparseness_values = [sparseness(v) for v in vectors]
    values = as_float_array(sparseness_values, "sparseness_values", ndim=1)
    if values.size != len(vectors):
        raise ValueError(
            f"sparseness_values has {values.size} entries but there are {len(vectors)} vectors"
        )
    if axes is None:
        fig = Figure(figsize=(2.6 * len(vectors), 2.2), layout="constrained")
        axes = fig.subplots(1, len(vectors), squeeze=False)[0]
    axes = list(axes)
    if len(axes) != len(vectors):
        raise ValueError(f"axes must hold {len(vectors)} axes (one per vector), got {len(axes)}")
    for ax, vector, value in zip(axes, vectors, values, strict=True):
        ax.bar(np.arange(vector.size), vector, width=0.8, color="0.15")
        ax.set_xlim(-0.8, vector.size - 0.2)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"sparseness {value:.2g}")
    return axes


def plot_passes(dims, mean, lo, hi, ax=None):
    """Figure 6: passes of the projection against dimension, on a log x axis.

    Parameters
    ----------
    dims : array_like, shape (D,)
        Dimensions n (> 0), e.g. 2, 3, 5, ..., 10000.
    mean, lo, hi : array_like, shape (D,)
        Mean, minimum and maximum number of passes over the trials at each
        dimension; ``mean`` is drawn solid, ``lo`` and ``hi`` dashed.
    ax : matplotlib.axes.Axes, optional
        Default: a new Figure.

    Returns
    -------
    matplotlib.axes.Axes
        With three lines: mean, min, max (in that order).

    See Also
    --------
    nmfsc.project : The projection whose passes are counted.

    References
    ----------
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    >>> from nmfsc.plotting import plot_passes
    >>> dims = [2, 10, 100, 1000]
    >>> ax = plot_passes(dims, mean=[1.5, 2.5, 3.0, 3.5], lo=[1, 2, 2, 3], hi=[2, 3, 4, 4])
    >>> ax.get_xscale(), len(ax.lines), ax.get_ylim()
    ('log', 3, (0.0, 5.0))
    """
    dims = as_float_array(dims, "dims", ndim=1)
    if np.any(dims <= 0):
        raise ValueError("dims must be > 0 (they are drawn on a log axis)")
    curves = {}
    for name, values in (("mean", mean), ("lo", lo), ("hi", hi)):
        curves[name] = as_float_array(values, name, ndim=1)
        if curves[name].size != dims.size:
            raise ValueError(
                f"{name} has {curves[name].size} entries but dims has {dims.size}; they must match"
            )
    if ax is None:
        ax = Figure(figsize=(4.0, 3.0), layout="constrained").subplots()
    ax.plot(dims, curves["mean"], "k-", label="mean")
    ax.plot(dims, curves["lo"], "k--", label="min / max")
    ax.plot(dims, curves["hi"], "k--")
    ax.set_xscale("log")
    ax.set_xlabel("dimension")
    ax.set_ylabel("iterations")
    ax.set_ylim(0, np.max(curves["hi"]) + 1)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(frameon=False)
    return ax


# --- files ---------------------------------------------------------------------------


def save_figure(fig, path_without_suffix, dpi=150, formats=("png", "pdf")):
    """Write ``fig`` as PNG and PDF (or ``formats``), creating the folder.

    Each file is written atomically (rendered in memory, then a temporary file
    renamed over the target): an interrupted run never leaves half a figure.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path_without_suffix : str or os.PathLike
        ``"figures/fig3a"`` writes ``figures/fig3a.png`` and
        ``figures/fig3a.pdf`` (the suffixes are appended, so dots in the name
        are kept).
    dpi : float, default 150
        Resolution of the PNG.
    formats : sequence of str, default ("png", "pdf")

    Returns
    -------
    tuple of pathlib.Path
        One path per format. A PDF has no creation date: the same figure
        gives the same bytes.

    See Also
    --------
    matplotlib.figure.Figure.savefig : What it calls for each format.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from nmfsc.plotting import plot_basis, save_figure
    >>> ax = plot_basis(np.random.default_rng(0).random((6, 5)), (2, 3))
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     paths = save_figure(ax.figure, Path(folder) / "figures" / "basis")
    ...     print([path.name for path in paths], all(path.is_file() for path in paths))
    ['basis.png', 'basis.pdf'] True
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    base = Path(path_without_suffix)
    if base.suffix.lower() in (".png", ".pdf"):
        raise ValueError(
            f"path_without_suffix must not end in {base.suffix!r}; "
            "save_figure appends .png and .pdf itself"
        )
    paths = []
    for fmt in formats:
        buffer = io.BytesIO()
        vector = fmt == "pdf"  # a PDF keeps the figure's own dpi and has no creation date
        fig.savefig(
            buffer,
            format=fmt,
            dpi="figure" if vector else dpi,
            bbox_inches="tight",
            pad_inches=0.05,
            metadata={"CreationDate": None} if vector else None,
        )
        paths.append(write_atomic(base.with_name(f"{base.name}.{fmt}"), buffer.getvalue()))
    return tuple(paths)
