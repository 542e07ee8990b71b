"""Preprocessing of the three data sets, as pure functions of numpy arrays.

These follow SPEC.md ("Data sets and their preprocessing") and the original MATLAB
code of nmfpack 1.1 (``cbcldata.m``, ``orldata.m``, ``natdata.m``,
``sampleimages.m``). Data matrices hold one sample per column; images are flattened
row-major (C order), so ``V[:, j].reshape(height, width)`` is the upright image
(MATLAB's ``reshape`` flattened them column-major instead: the same numbers, with the
pixels of each column in another order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

FLOOR = 1e-4
"""The smallest value of every preprocessed matrix (the divergence objective needs no zeros)."""


def images_to_columns(images: np.ndarray) -> np.ndarray:
    """Stack images as the columns of a matrix, each flattened row-major.

    Parameters
    ----------
    images : ndarray, shape (n_images, height, width)

    Returns
    -------
    X : ndarray of float64, shape (height * width, n_images)
        ``X[:, j].reshape(height, width)`` is ``images[j]``.
    """
    images = np.asarray(images)
    return images.reshape(images.shape[0], -1).T.astype(np.float64)


def cbcl_preprocess(X: np.ndarray) -> np.ndarray:
    """Lee & Seung's preprocessing of the CBCL faces (``cbcldata.m``).

    Subtract the global mean; divide by the global root mean square of the result;
    add 0.25; multiply by 0.25; clip to [0, 1]; floor at 1e-4.

    Parameters
    ----------
    X : ndarray, shape (n_pixels, n_images)
        Grey levels, one image per column.

    Returns
    -------
    V : ndarray of float64, shape (n_pixels, n_images)
        Values in [1e-4, 1].
    """
    V = np.asarray(X, dtype=np.float64)
    V = V - V.mean()
    V = V / np.sqrt(np.mean(V**2))
    V = (V + 0.25) * 0.25
    return np.maximum(np.clip(V, 0.0, 1.0), FLOOR)


def orl_preprocess(X: np.ndarray) -> np.ndarray:
    """Li et al.'s per-image preprocessing of the ORL faces (``orldata.m``).

    Per column: subtract its minimum and scale its maximum to 255; then floor the whole
    matrix at 1e-4 and divide it by 10000.

    Parameters
    ----------
    X : ndarray, shape (n_pixels, n_images)
        Grey levels (after any resizing), one image per column.

    Returns
    -------
    V : ndarray of float64, shape (n_pixels, n_images)
        Values in [1e-8, 0.0255]; each column's maximum is 0.0255.

    Raises
    ------
    ValueError
        If a column is constant (its range cannot be scaled to 255).
    """
    V = np.asarray(X, dtype=np.float64)
    V = V - V.min(axis=0)
    top = V.max(axis=0)
    if np.any(top == 0):
        raise ValueError(f"images {np.flatnonzero(top == 0).tolist()} are constant")
    V = V * 255.0 / top
    return np.maximum(V, FLOOR) / 10000.0


def _triangle(x: np.ndarray) -> np.ndarray:
    """MATLAB's bilinear (triangle) kernel: 1 - |x| on [-1, 1], 0 elsewhere."""
    return np.clip(1.0 - np.abs(x), 0.0, None)


def resize_matrix(n_in: int, scale: float) -> np.ndarray:
    """The linear map of MATLAB's ``imresize(..., scale, 'bilinear')`` along one axis.

    MATLAB (R2007a and later, antialiasing on, the default) maps output pixel u
    (1-based) to the input coordinate ``x = u / scale + (1 - 1 / scale) / 2`` and weights
    input pixel j by ``k(x - j)``, where k is the triangle kernel, widened by 1 / scale
    when shrinking (``k(t) = scale * triangle(scale * t)``). The weights of each output
    pixel are normalised to sum 1, and input indices beyond the edges are mirrored
    (``1, 2, ..., n, n, n-1, ...``), which repeats the edge pixel.

    For ``scale = 0.5`` and even ``n_in`` this gives, in 0-based indices,
    ``out[k] = (in[2k-1] + 3 in[2k] + 3 in[2k+1] + in[2k+2]) / 8``, with ``in[-1]`` read
    as ``in[0]`` and ``in[n_in]`` as ``in[n_in - 1]``.

    Parameters
    ----------
    n_in : int
        Input length along the axis.
    scale : float
        Scale factor (> 0). The output length is ``ceil(scale * n_in)``.

    Returns
    -------
    R : ndarray of float64, shape (n_out, n_in)
        ``R @ x`` resizes a signal x of length n_in.
    """
    n_out = int(np.ceil(scale * n_in))
    kernel_scale = min(scale, 1.0)
    width = 2.0 / kernel_scale
    x = np.arange(1, n_out + 1) / scale + 0.5 * (1.0 - 1.0 / scale)
    left = np.floor(x - width / 2.0)
    taps = int(np.ceil(width)) + 2
    index = left[:, None] + np.arange(taps)[None, :]
    weights = kernel_scale * _triangle(kernel_scale * (x[:, None] - index))
    weights /= weights.sum(axis=1, keepdims=True)
    mirror = np.concatenate([np.arange(n_in), np.arange(n_in)[::-1]])
    index = mirror[(index.astype(np.int64) - 1) % (2 * n_in)]
    R = np.zeros((n_out, n_in))
    np.add.at(R, (np.repeat(np.arange(n_out), taps), index.ravel()), weights.ravel())
    return R


def imresize_bilinear(images: np.ndarray, scale: float) -> np.ndarray:
    """Resize images as MATLAB's ``imresize(I, scale, 'bilinear')`` does for double input.

    Parameters
    ----------
    images : ndarray, shape (..., height, width)
    scale : float
        Scale factor; the output is ``ceil(scale * height) x ceil(scale * width)``.
        Shrinking antialiases (see :func:`resize_matrix`).

    Returns
    -------
    resized : ndarray of float64, shape (..., ceil(scale * height), ceil(scale * width))
        Not rounded (nmfpack read the PGMs as double, so MATLAB did not round either).
    """
    images = np.asarray(images, dtype=np.float64)
    rows = resize_matrix(images.shape[-2], scale)
    cols = resize_matrix(images.shape[-1], scale)
    return rows @ images @ cols.T


def sample_patches(
    images: np.ndarray,
    n_patches: int,
    patch_size: int,
    rng: np.random.Generator,
    border: int = 4,
) -> tuple[np.ndarray, np.ndarray]:
    """Cut square patches at uniformly random positions, as ``sampleimages.m`` does.

    Image k gives ``n_patches // n_images`` patches, and the last image gives what is
    left (``n_patches - (n_images - 1) * (n_patches // n_images)``), in image order.
    For each image, the top rows of its patches are drawn first, then their left
    columns, each uniform on ``border, ..., size - patch_size - border - 1`` (0-based):
    MATLAB's ``BUFF + ceil((size - winsize - 2 * BUFF) * rand)`` with BUFF = 4. Patches
    thus keep 4 pixels from the top and left edges and 5 from the bottom and right.

    Parameters
    ----------
    images : ndarray, shape (n_images, height, width)
    n_patches : int
        Number of patches (>= n_images).
    patch_size : int
        Side of the square patches.
    rng : numpy.random.Generator
    border : int, default 4
        MATLAB's BUFF.

    Returns
    -------
    X : ndarray of float64, shape (patch_size ** 2, n_patches)
        One patch per column, flattened row-major.
    positions : ndarray of int64, shape (n_patches, 3)
        (image, top row, left column) of each patch.
    """
    n_images, height, width = images.shape
    if n_patches < n_images:
        raise ValueError(
            f"n_patches={n_patches} must be at least the number of images ({n_images})"
        )
    span = (height - patch_size - 2 * border, width - patch_size - 2 * border)
    if min(span) < 1:
        raise ValueError(
            f"patch_size={patch_size} is too large for {height} x {width} "
            f"images with a border of {border}"
        )
    counts = np.full(n_images, n_patches // n_images)
    counts[-1] = n_patches - counts[:-1].sum()
    positions: Any = []  # a list of arrays, then their concatenation
    for k, count in enumerate(counts):
        rows = border + rng.integers(0, span[0], size=count)
        cols = border + rng.integers(0, span[1], size=count)
        positions.append(np.column_stack([np.full(count, k), rows, cols]))
    positions = np.concatenate(positions).astype(np.int64)
    offsets = np.arange(patch_size)
    r = positions[:, 1, None, None] + offsets[None, :, None]
    c = positions[:, 2, None, None] + offsets[None, None, :]
    patches = images[positions[:, 0, None, None], r, c]
    return patches.reshape(n_patches, -1).T.astype(np.float64), positions


def on_off(X: np.ndarray) -> np.ndarray:
    """Split signed data into ON and OFF channels and normalise them (``natdata.m``).

    ``V = [max(X, 0); max(-X, 0)]``, floored at 1e-4, then each row divided by its root
    mean square over the samples (columns).

    Parameters
    ----------
    X : ndarray, shape (n_features, n_samples)

    Returns
    -------
    V : ndarray of float64, shape (2 * n_features, n_samples)
        Rows ``0 .. n_features - 1`` are the ON channel, the rest the OFF channel, in
        the same feature order. Every row has unit root mean square.
    """
    X = np.asarray(X, dtype=np.float64)
    V = np.maximum(np.vstack([np.maximum(X, 0.0), np.maximum(-X, 0.0)]), FLOOR)
    return V / np.sqrt(np.mean(V**2, axis=1, keepdims=True))


# --- Natural images of one's own: whitening and ON/OFF patches (public) -------------


def whiten_images(images: np.ndarray, cutoff: float = 0.4) -> np.ndarray:
    r"""Whiten natural images with Olshausen & Field's filter, as sparsenet's images are.

    Natural images have an amplitude spectrum falling as about :math:`1/f`; the
    filter flattens it and damps the highest frequencies (where noise and
    aliasing dominate). Each image's Fourier transform is multiplied by

    .. math:: R(f) = f \, e^{-(f / f_0)^4}, \qquad f_0 = \text{cutoff} \cdot \min(h, w),

    where :math:`f = \sqrt{f_x^2 + f_y^2}` is the frequency in cycles per image
    (:math:`f_x \in \{-w/2, \dots, w/2 - 1\}`, :math:`f_y` likewise; the mean,
    :math:`f = 0`, is removed), and the real part of the inverse transform is
    kept. The whole stack is then scaled so that the mean over images of each
    image's pixel variance is 0.1, as in sparsenet's ``IMAGES.mat``
    (Olshausen's ``make-your-own-images``: the same filter with
    :math:`f_0 = 0.4 N` for N x N images). The result is the input that
    :func:`on_off_patches` expects (and :func:`nmfsc.datasets.natural_images`
    returns).

    Parameters
    ----------
    images : array_like, shape (n_images, height, width) or (height, width)
        Grey levels (any units: the result is rescaled).
    cutoff : float, default 0.4
        :math:`f_0` as a fraction of the smaller side, in cycles per image.

    Returns
    -------
    whitened : ndarray of float64, the shape of ``images``
        Zero-mean images; the mean of their variances is 0.1.

    Raises
    ------
    ValueError
        Not 2-D or 3-D, smaller than 2 x 2, not finite, constant, or
        ``cutoff`` not > 0.

    See Also
    --------
    on_off_patches : ON/OFF patches of the whitened images.
    natural_images : Olshausen's images, whitened this way.

    References
    ----------
    B. A. Olshausen and D. J. Field, "Sparse coding with an overcomplete basis
    set: a strategy employed by V1?", Vision Research 37:3311-3325, 1997.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.datasets import whiten_images
    >>> images = np.random.default_rng(0).random((2, 32, 32)).cumsum(axis=2)  # smooth rows
    >>> white = whiten_images(images)
    >>> white.shape
    (2, 32, 32)
    >>> round(float(white.var(axis=(1, 2)).mean()), 10)  # the mean variance is 0.1
    0.1
    >>> bool(np.allclose(white.mean(axis=(1, 2)), 0.0))  # zero-mean images
    True
    """
    stack = np.asarray(images, dtype=np.float64)
    single = stack.ndim == 2
    if single:
        stack = stack[None]
    if stack.ndim != 3 or min(stack.shape[1:]) < 2 or stack.shape[0] == 0:
        raise ValueError(
            f"images must be one image (height, width) or a stack (n_images, height, width) "
            f"of at least 2 x 2 pixels, got shape {np.shape(images)}"
        )
    if not np.all(np.isfinite(stack)):
        raise ValueError("images hold NaN or infinite values")
    if not (np.isfinite(cutoff) and cutoff > 0):
        raise ValueError(f"cutoff must be a number > 0, got {cutoff!r}")
    height, width = stack.shape[1:]
    fy = np.fft.fftfreq(height) * height  # cycles per image, in FFT order
    fx = np.fft.fftfreq(width) * width
    rho = np.hypot(fy[:, None], fx[None, :])
    f0 = cutoff * min(height, width)
    response = rho * np.exp(-((rho / f0) ** 4))
    whitened = np.real(np.fft.ifft2(np.fft.fft2(stack) * response))
    spread = np.mean(np.var(whitened.reshape(len(whitened), -1), axis=1))
    if spread == 0:
        raise ValueError("the images are constant: whitening leaves nothing")
    whitened *= np.sqrt(0.1 / spread)
    return whitened[0] if single else whitened


def on_off_patches(
    images: np.ndarray,
    n_patches: int = 10000,
    patch_size: int = 12,
    random_state: int | np.random.Generator | None = None,
) -> np.ndarray:
    """ON/OFF patches of one's own whitened images, as the paper's natural data set.

    The preprocessing of :func:`nmfsc.datasets.load_natural`, on any stack of
    whitened images (for example :func:`whiten_images` of one's own
    photographs): square patches are cut at uniformly random positions
    (``n_patches // n_images`` from each image, the
    rest from the last one, at least 4 pixels from the top and left edges and
    5 from the bottom and right), flattened row-major and split into
    ON = max(x, 0) and OFF = max(-x, 0) channels (stacked,
    floored at 1e-4, each row divided by its root mean square). On the
    sparsenet images it gives ``load_natural``'s matrix to the last bit.

    Parameters
    ----------
    images : array_like, shape (n_images, height, width)
        Whitened, zero-mean images.
    n_patches : int, default 10000
        Number of patches (columns of V); at least the number of images.
    patch_size : int, default 12
        Side of the square patches.
    random_state : int, numpy.random.Generator or None
        Seed or generator of the positions (``np.random.default_rng``).

    Returns
    -------
    V : ndarray of float64, shape (2 * patch_size ** 2, n_patches)
        Rows ``0 .. patch_size**2 - 1`` the ON channel, the rest the OFF channel;
        ``V[:p*p, j].reshape(p, p)`` is patch j's ON channel. Pass
        ``image_shape=(p, p), on_off=True`` to :func:`nmfsc.compare` and
        :func:`nmfsc.orientation`.

    Raises
    ------
    ValueError
        Not a 3-D stack, fewer patches than images, or patches too large for
        the images with their border.

    See Also
    --------
    whiten_images : Whitens the images first.
    load_natural : The paper's natural-image data set.

    References
    ----------
    B. A. Olshausen and D. J. Field, "Sparse coding with an overcomplete basis
    set: a strategy employed by V1?", Vision Research 37:3311-3325, 1997.

    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.datasets import on_off_patches, whiten_images
    >>> images = np.random.default_rng(0).random((2, 32, 32)).cumsum(axis=2)
    >>> V = on_off_patches(whiten_images(images), n_patches=100, patch_size=8, random_state=0)
    >>> V.shape  # ON rows, then OFF rows, of 8 x 8 patches
    (128, 100)
    >>> bool(np.allclose(np.sqrt(np.mean(V**2, axis=1)), 1.0)), bool(V.min() >= 1e-4)
    (True, True)
    """
    from nmfsc._parameters import check
    from nmfsc._validation import check_random_state

    stack = np.asarray(images, dtype=np.float64)
    if stack.ndim != 3:
        raise ValueError(
            f"images must be a stack (n_images, height, width), got shape {stack.shape}; "
            "pass one image as images[None]"
        )
    n_patches = check("n_patches", n_patches)
    patch_size = check("patch_size", patch_size)
    check_random_state(random_state)
    return natural_matrix(stack, n_patches, patch_size, random_state)


# --- Each data set's whole preprocessing, from its raw images to its data matrix V ----


def cbcl_matrix(images: np.ndarray) -> np.ndarray:
    """CBCL faces (n, 19, 19) to V (361, n): :func:`images_to_columns`, then
    :func:`cbcl_preprocess`."""
    return cbcl_preprocess(images_to_columns(images))


def orl_matrix(images: np.ndarray) -> np.ndarray:
    """ORL faces (n, 112, 92) to V (2576, n): halved by :func:`imresize_bilinear`, then
    :func:`images_to_columns` and :func:`orl_preprocess`."""
    return orl_preprocess(images_to_columns(imresize_bilinear(images, 0.5)))


def natural_matrix(
    images: np.ndarray,
    n_patches: int = 10000,
    patch_size: int = 12,
    random_state: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Whitened images (n, h, w) to ON/OFF patches V (2 * patch_size**2, n_patches):
    :func:`sample_patches` with ``np.random.default_rng(random_state)``, then
    :func:`on_off`."""
    rng = np.random.default_rng(random_state)
    X, _ = sample_patches(images, n_patches, patch_size, rng)
    return on_off(X)
