"""Numerical scores for the paper's qualitative claims about learned bases.

Hoyer (2004) describes the bases in words: CBCL parts are *local* (Figure 1a,
3a), ORL bases switch from *global* to *local* as the sparseness of W rises
(Figure 4), and on natural images only NMF with sparseness constraints gives
*oriented*, edge-like filters while NMF, LNMF and SNMF give circular blobs
(Figures 1c and 5). This module turns those words into numbers:

- :func:`~nmfsc.locality` -- how concentrated in space each basis image's energy is
  (1 for a single pixel, 0 for energy spread like a uniform image);
- :func:`~nmfsc.orientation` -- how much of each filter's spectral power lies at one
  orientation (1 for a single orientation, 0 for an isotropic filter);
- :func:`~nmfsc.sparseness_summary` -- Hoyer's sparseness of W's columns and H's rows;
- :func:`~nmfsc.summarize_scores` -- mean, median, min and max of any of the above,
  ignoring the NaN of undefined (all-zero) vectors.

Conventions: ``W`` is N x M with one basis vector per column; a column reshaped
in C order to ``image_shape = (height, width)`` is the upright image. For the
natural-image data each column stacks an ON and an OFF channel,
``W[:P]`` and ``W[P:]`` with ``P = height * width``.

All scores of an all-zero basis vector are NaN (the energy distribution and
the spectrum are 0 / 0 there); no warning is raised for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from nmfsc._validation import as_float_array, check_image_shape, reject_masked
from nmfsc.sparseness import sparseness, sparseness_or_nan

__all__ = [
    "locality",
    "orientation",
    "sparseness_summary",
    "summarize_scores",
    "uniform_spread",
]

#: Zero padding of the filters before the FFT in :func:`orientation`, as a
#: multiple of the patch side: the spectrum is sampled on a grid this many
#: times finer than the patch's own (the score changes by < 1e-3 beyond 4).
ORIENTATION_PAD_FACTOR = 4


def _check_basis(W, n_rows, what):
    """``W`` as a float (N, M) array whose N equals ``n_rows``."""
    W = as_float_array(W, "W", ndim=2)
    if W.shape[0] != n_rows:
        raise ValueError(
            f"W has {W.shape[0]} rows but {what} needs {n_rows}; "
            "W must be N x M with one basis vector per column"
        )
    return W


def _unit_peak(vectors):
    """Divide each column by its largest magnitude (so squares cannot overflow).

    Returns the scaled (N, M) array, all-zero columns left at zero, and a
    boolean (M,) mask of those all-zero columns.
    """
    peak = np.max(np.abs(vectors), axis=0)
    zero = peak == 0
    return vectors / np.where(zero, 1.0, peak), zero


def _axis_variance(weights, coords):
    """Variance of ``coords`` under each row of ``weights`` (rows sum to 1).

    weights : (M, L), coords : (L,) -> (M,)
    """
    mean = weights @ coords
    return np.sum(weights * (coords[None, :] - mean[:, None]) ** 2, axis=1)


def uniform_spread(image_shape: tuple[int, int]) -> float:
    """Spatial spread of a uniform image: ``sqrt((h^2 - 1)/12 + (w^2 - 1)/12)``.

    The standard deviation of a pixel index drawn uniformly from ``0..n-1`` is
    ``sqrt((n^2 - 1) / 12)``; the spread adds the two axes' variances. It is the
    reference that :func:`~nmfsc.locality` divides by.

    See Also
    --------
    nmfsc.locality : The score that compares a basis image's spread with it.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.scores import locality, uniform_spread
    >>> round(uniform_spread((19, 19)) ** 2, 10)  # (19**2 - 1) / 12 for each axis
    60.0
    >>> flat = np.ones((19 * 19, 1))  # a uniform image has this spread: locality 0
    >>> locality(flat, (19, 19)).round(10)
    array([0.])
    """
    height, width = check_image_shape(image_shape, "image_shape")
    return float(np.sqrt((height**2 - 1) / 12.0 + (width**2 - 1) / 12.0))


def locality(W: ArrayLike, image_shape: tuple[int, int]) -> NDArray[np.float64]:
    r"""How concentrated in space each basis image's energy is.

    Each column ``w`` of ``W`` is read as an image of shape ``image_shape`` and
    its energy distribution over pixels ``p = (row, col)`` is

    .. math:: e_p = w_p^2 / \sum_q w_q^2 .

    The *spatial spread* of the image is the standard deviation of the pixel
    position under ``e``, with the variances of the two axes added:

    .. math:: \sigma(w) = \sqrt{\operatorname{Var}_e[\mathrm{row}]
                               + \operatorname{Var}_e[\mathrm{col}]} ,

    and the score compares it with the spread of a uniform image of the same
    shape, :math:`\sigma_0 = \sqrt{(h^2 - 1)/12 + (w^2 - 1)/12}`:

    .. math:: \mathrm{locality}(w) = 1 - \sigma(w) / \sigma_0 .

    Parameters
    ----------
    W : array_like, shape (N, M)
        Basis vectors in columns; ``N = height * width``. Signs do not matter
        (only ``w**2`` is used).
    image_shape : (int, int)
        ``(height, width)``; a column reshaped in C order to this shape is the
        upright image (CBCL ``(19, 19)``, ORL ``(56, 46)``).

    Returns
    -------
    ndarray, shape (M,)
        1 for a single bright pixel, 0 for energy spread as evenly as a uniform
        image (also about 0 for noise or a full-frame grating), in between for a
        blob: a Gaussian blob of standard deviation ``s`` (in pixels, well
        inside the frame) has spread ``s`` and scores ``1 - s / sigma_0``. The
        score is negative, down to about ``1 - sqrt(3)``, only when the energy
        is more dispersed than uniform, i.e. sits near opposite edges or
        corners. NaN for an all-zero column.

    See Also
    --------
    orientation : The score of the natural-image filters.
    summarize_scores : Mean, median, min and max of the scores.
    nmfsc.scores.uniform_spread : The spread of a uniform image, the reference.
    nmfsc.datasets.part_recovery : How well a basis recovers known parts.

    Notes
    -----
    The score is unchanged by the sign and scale of a column, by shifting an
    image whose energy stays inside the frame, and by flipping or transposing
    it. It depends on the frame: the same blob scores higher in a larger image,
    so compare scores only between bases of one data set.

    Unlike Hoyer's sparseness (which the solver constrains directly), this is a
    *spatial* measure: a basis image whose few non-zero pixels are scattered
    over the frame is sparse but not local, and scores low here. A part made of
    two separate blobs (two eyes) scores lower than either blob alone.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.scores import locality
    >>> rows, cols = np.mgrid[:19, :19]
    >>> point = np.zeros((19, 19)); point[3, 12] = 1.0
    >>> blob = np.exp(-((rows - 6) ** 2 + (cols - 11) ** 2) / 8.0)  # s.d. 2 px
    >>> grating = 1 + np.cos(2 * np.pi * 0.2 * cols)
    >>> W = np.column_stack([point.ravel(), blob.ravel(), grating.ravel()])
    >>> locality(W, (19, 19)).round(2)
    array([1.  , 0.74, 0.01])
    """
    height, width = check_image_shape(image_shape, "image_shape")
    if height * width < 2:
        raise ValueError(f"image_shape must have at least 2 pixels, got {(height, width)!r}")
    W = _check_basis(W, height * width, f"image_shape {(height, width)!r}")
    scaled, zero = _unit_peak(W)
    energy = (scaled * scaled).T.reshape(-1, height, width)  # (M, h, w)
    total = energy.sum(axis=(1, 2))
    energy /= np.where(zero, 1.0, total)[:, None, None]
    var_rows = _axis_variance(energy.sum(axis=2), np.arange(height, dtype=np.float64))
    var_cols = _axis_variance(energy.sum(axis=1), np.arange(width, dtype=np.float64))
    scores = 1.0 - np.sqrt(var_rows + var_cols) / uniform_spread((height, width))
    scores[zero] = np.nan
    return scores


def _filters(W, patch_shape, on_off):
    """The (M, h, w) filters that :func:`orientation` scores."""
    n_pixels = patch_shape[0] * patch_shape[1]
    if on_off:
        W = _check_basis(W, 2 * n_pixels, f"patch_shape {patch_shape!r} with on_off=True")
        W = W[:n_pixels] - W[n_pixels:]
    else:
        W = _check_basis(W, n_pixels, f"patch_shape {patch_shape!r} with on_off=False")
    return W.T.reshape(-1, *patch_shape)


def _doubled_angle_grid(n_fft):
    """cos(2 theta) and sin(2 theta) of each frequency (k_row, k_col) of an FFT grid.

    theta is the angle of the frequency vector; at k = 0 both are set to 0.
    """
    freq = np.fft.fftfreq(n_fft)
    k_row, k_col = np.meshgrid(freq, freq, indexing="ij")
    k2 = k_row**2 + k_col**2
    k2[0, 0] = 1.0
    return (k_col**2 - k_row**2) / k2, 2.0 * k_row * k_col / k2


def orientation(
    W: ArrayLike, patch_shape: tuple[int, int] = (12, 12), on_off: bool = True
) -> NDArray[np.float64]:
    r"""How much of each filter's spectral power lies at a single orientation.

    The filter of a column ``w`` is ``f = w[:P] - w[P:]`` (ON minus OFF,
    ``P = height * width``) when ``on_off`` is true, else ``w`` itself, read as
    a ``patch_shape`` image. Zero-padded to an ``n x n`` grid with
    ``n = 4 * max(height, width) + 1`` (odd, so the frequency grid is symmetric
    under 90-degree rotations and reflections), its power spectrum is
    :math:`P(k) = |\hat f(k)|^2`, and the DC term :math:`P(0)` is dropped.
    With :math:`\theta_k` the angle of the frequency vector
    :math:`k = (k_\mathrm{row}, k_\mathrm{col})`, the score is the mean
    resultant length of the *doubled* angle (orientations are defined modulo
    180 degrees) under the power:

    .. math:: \mathrm{orientation}(w) =
              \frac{\left|\sum_{k \neq 0} P(k)\, e^{2 i \theta_k}\right|}
                   {\sum_{k \neq 0} P(k)} ,

    i.e. one minus the circular variance of the spectral orientation. It equals
    the coherence :math:`(\lambda_1 - \lambda_2) / (\lambda_1 + \lambda_2)` of
    the orientation tensor :math:`T = \sum_{k \neq 0} P(k)\, k k^\top / |k|^2`.

    Parameters
    ----------
    W : array_like, shape (N, M)
        Basis vectors in columns: ``N = 2 * height * width`` (ON rows then OFF
        rows) if ``on_off``, else ``N = height * width``.
    patch_shape : (int, int), default (12, 12)
        ``(height, width)`` of a patch; rows of the filter are in C order.
    on_off : bool, default True
        Score the ON-minus-OFF filter (natural-image data) or the column itself.

    Returns
    -------
    ndarray, shape (M,)
        In [0, 1]: 1 when all power lies on one line through the origin of the
        frequency plane (an infinitely long grating or edge), about 0.84 for a
        Gabor patch (envelope s.d. 2 px, 0.2 cycles/px) and 0.7 for an edge in
        a Gaussian window, 0 for an isotropic filter (a centred Gaussian blob or
        a difference of Gaussians, exactly 0 up to rounding), about 0.1 for white
        noise on a 12 x 12 patch. NaN for an all-zero filter.

    See Also
    --------
    locality : The score of the face bases.
    summarize_scores : Mean, median, min and max of the scores.
    nmfsc.plotting.plot_on_off : Draws the filters it scores.

    Notes
    -----
    Invariant to the filter's sign and scale (the power scales by ``c**2``), to
    shifts that keep it inside the patch (they change only the phase), and,
    up to the sampling of the frequency grid, to rotation; exactly invariant to
    90-degree rotations, flips and transposition. The weighting is by power
    only, not by frequency: the score measures the spread of orientations, not
    of spatial frequency.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.scores import orientation
    >>> rows, cols = np.mgrid[:12, :12] - 5.5
    >>> blob = np.exp(-(rows**2 + cols**2) / 8.0)
    >>> gabor = blob * np.cos(2 * np.pi * 0.2 * cols)
    >>> W = np.column_stack([blob.ravel(), gabor.ravel()])
    >>> orientation(W, (12, 12), on_off=False).round(2)
    array([0.  , 0.84])
    """
    patch_shape = check_image_shape(patch_shape, "patch_shape")
    if not isinstance(on_off, (bool, np.bool_)):
        raise TypeError(f"on_off must be True or False, got {on_off!r}")
    filters = _filters(W, patch_shape, bool(on_off))
    scaled, zero = _unit_peak(filters.reshape(filters.shape[0], -1).T)
    filters = scaled.T.reshape(filters.shape)
    n_fft = ORIENTATION_PAD_FACTOR * max(patch_shape) + 1
    spectrum = np.fft.fft2(filters, s=(n_fft, n_fft), axes=(1, 2))
    power = spectrum.real**2 + spectrum.imag**2
    power[:, 0, 0] = 0.0
    cos2, sin2 = _doubled_angle_grid(n_fft)
    total = power.sum(axis=(1, 2))
    resultant = np.hypot((power * cos2).sum(axis=(1, 2)), (power * sin2).sum(axis=(1, 2)))
    undefined = zero | (total == 0)
    scores = resultant / np.where(undefined, 1.0, total)
    scores[undefined] = np.nan
    return np.clip(scores, 0.0, 1.0)


def summarize_scores(values: ArrayLike) -> dict[str, Any]:
    """Mean, median, min and max of per-vector scores, ignoring NaN.

    Parameters
    ----------
    values : array_like, shape (M,)
        Scores such as the output of :func:`locality` or :func:`orientation`;
        NaN marks an undefined score (an all-zero basis vector).

    Returns
    -------
    dict
        ``mean``, ``median``, ``min``, ``max`` (floats over the finite values;
        NaN if there are none), ``count`` (how many finite values) and
        ``n_undefined`` (how many NaN).

    See Also
    --------
    locality, orientation : Per-vector scores to summarize.
    sparseness_summary : The summaries of both factors' sparseness.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc import summarize_scores
    >>> summarize_scores([0.2, 0.5, np.nan, 0.8])  # NaN: an all-zero basis vector
    {'mean': 0.5, 'median': 0.5, 'min': 0.2, 'max': 0.8, 'count': 3, 'n_undefined': 1}
    """
    reject_masked(values, "values")
    arr = np.asarray(values)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"values must be a real numeric array, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim != 1:
        raise ValueError(f"values must be 1-D, got an array with ndim={arr.ndim}")
    if np.any(np.isinf(arr)):
        raise ValueError("values contains infinity; only NaN may mark an undefined score")
    finite = arr[~np.isnan(arr)]
    if finite.size == 0:
        stats = dict.fromkeys(("mean", "median", "min", "max"), float("nan"))
    else:
        stats = {
            "mean": float(np.mean(finite)),
            "median": float(np.median(finite)),
            "min": float(np.min(finite)),
            "max": float(np.max(finite)),
        }
    stats["count"] = int(finite.size)
    stats["n_undefined"] = int(arr.size - finite.size)
    return stats


def _sparseness_values(X, axis):
    """Hoyer's sparseness along ``axis``, NaN where the vector is all zero; a
    ValueError (from :func:`nmfsc.sparseness`) for non-zero vectors of length 1."""
    if X.shape[axis] < 2 and np.any(X != 0):
        sparseness(X, axis=axis)  # raises: undefined for vectors of length 1
    return sparseness_or_nan(X, axis)


def sparseness_summary(W: ArrayLike, H: ArrayLike) -> dict[str, dict[str, Any]]:
    """Sparseness of the basis vectors (columns of W) and coefficients (rows of H).

    Hoyer's measure ``(sqrt(n) - ||x||_1 / ||x||_2) / (sqrt(n) - 1)`` (see
    :func:`nmfsc.sparseness`) of every column of W (n = N) and every row of H
    (n = T), summarised by :func:`summarize_scores`. It is the number the paper
    fixes with ``sW`` and ``sH`` and compares with standard NMF ("slightly
    higher than the average sparseness produced by standard NMF", Figure 3a).

    Parameters
    ----------
    W : array_like, shape (N, M)
    H : array_like, shape (M, T)

    Returns
    -------
    dict
        ``{"W": stats, "H": stats}``, each ``stats`` as from
        :func:`summarize_scores` (``mean``, ``median``, ``min``, ``max``,
        ``count``, ``n_undefined``). An all-zero column of W or row of H has no
        sparseness: it is counted in ``n_undefined`` and left out of the rest.

    Raises
    ------
    ValueError
        If W or H is not 2-D, their inner sizes differ, or a vector has length 1.

    See Also
    --------
    sparseness : The sparseness of each vector.
    summarize_scores : The summary it uses.
    NMFResult : Also holds the sparseness of its factors.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc import nmf_sc, sparseness_summary
    >>> W = np.array([[1.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])  # sparseness 1 and 0
    >>> H = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])  # sparseness 0 and undefined
    >>> stats = sparseness_summary(W, H)
    >>> stats["W"]["mean"], stats["W"]["min"], stats["W"]["max"]
    (0.5, 0.0, 1.0)
    >>> stats["H"]["count"], stats["H"]["n_undefined"]
    (1, 1)

    On a fit, W's columns have nmf_sc's target:

    >>> V = np.random.default_rng(0).random((20, 30))
    >>> res = nmf_sc(V, 3, sparseness_w=0.6, random_state=0, tol=1e-3)
    >>> round(sparseness_summary(res.W, res.H)["W"]["mean"], 6)
    0.6
    """
    W = as_float_array(W, "W", ndim=2)
    H = as_float_array(H, "H", ndim=2)
    if W.shape[1] != H.shape[0]:
        raise ValueError(
            f"W has {W.shape[1]} columns but H has {H.shape[0]} rows; "
            "they must match (W is N x M, H is M x T)"
        )
    return {
        "W": summarize_scores(_sparseness_values(W, axis=0)),
        "H": summarize_scores(_sparseness_values(H, axis=1)),
    }
