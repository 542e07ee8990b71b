"""Loaders of the three real data sets: raw images and preprocessed data matrices.

Each is a named, documented wrapper of an entry of the table in
:mod:`nmfsc.datasets.catalog`, which says how the data set is fetched, read and
preprocessed.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from nmfsc._parameters import check
from nmfsc._validation import check_random_state

from ._fetchers import Gate, check_flag, resolve_gate
from ._preprocess import imresize_bilinear
from ._readers import read_images_mat
from .catalog import DATASETS

_CBCL, _ORL, _NATURAL = DATASETS["cbcl"], DATASETS["orl"], DATASETS["natural"]

CBCL_SHAPE = _CBCL.tile_shape
"""(height, width) of a CBCL face; ``load_cbcl()[:, j].reshape(CBCL_SHAPE)`` is upright."""
ORL_FULL_SHAPE = _ORL.image_shape
"""(height, width) of an ORL face as stored."""
ORL_SHAPE = _ORL.tile_shape
"""(height, width) of a halved ORL face; ``load_orl()[:, j].reshape(ORL_SHAPE)`` is upright."""
NATURAL_SHAPE = _NATURAL.image_shape
"""(height, width) of one of Olshausen's natural images."""


def cbcl_images(*, gate: Gate | None = None) -> np.ndarray:
    """The 2429 training faces of the MIT CBCL Face Database #1, as stored.

    Parameters
    ----------
    gate : Gate or None
        Where to fetch them from; nmfsc's data folder when None.

    Returns
    -------
    images : ndarray of uint8, shape (2429, 19, 19)
        Grey levels 0..255, upright; image j is ``train/face/face{j+1:05d}.pgm``.

    See Also
    --------
    load_cbcl : The images as a preprocessed data matrix.

    Examples
    --------
    >>> from nmfsc.datasets import cbcl_images
    >>> images = cbcl_images()  # downloaded on first use, or read from NMFSC_DATA_DIR
    >>> images.shape, images.dtype
    ((2429, 19, 19), dtype('uint8'))
    """
    return _CBCL.images(gate)


def load_cbcl(*, gate: Gate | None = None) -> np.ndarray:
    """The CBCL faces as a data matrix, with Lee & Seung's preprocessing.

    Each face is flattened row-major into a column, then the whole matrix is
    preprocessed as ``cbcldata.m`` does: subtract the global mean, divide by the global
    root mean square, add 0.25, multiply by 0.25, clip to [0, 1], floor at 1e-4.

    Parameters
    ----------
    gate : Gate or None
        Where to fetch and unpack ``face.train.tar.gz``; nmfsc's data folder when None.

    Returns
    -------
    V : ndarray of float64, shape (361, 2429)
        Values in [1e-4, 1]; ``V[:, j].reshape(CBCL_SHAPE)`` is face j upright.

    See Also
    --------
    cbcl_images : The images as stored, without preprocessing.
    load_orl, load_natural : The paper's other data sets.
    data_dir : Where the data is read from.

    References
    ----------
    D. D. Lee and H. S. Seung, "Learning the parts of objects by
    non-negative matrix factorization", Nature 401:788-791, 1999.

    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    >>> from nmfsc.datasets import CBCL_SHAPE, load_cbcl
    >>> V = load_cbcl()  # downloaded on first use, or read from NMFSC_DATA_DIR
    >>> V.shape, CBCL_SHAPE
    ((361, 2429), (19, 19))
    >>> face = V[:, 0].reshape(CBCL_SHAPE)  # the first face
    """
    return _CBCL.load(gate)


def orl_images(halved: bool = False, *, gate: Gate | None = None) -> np.ndarray:
    """The 400 ORL faces, in the order s1/1 ... s1/10, s2/1 ... s40/10.

    Parameters
    ----------
    halved : bool, default False
        If True, halve each image as MATLAB's ``imresize(I, 0.5, 'bilinear')`` does
        (bilinear interpolation with MATLAB's antialiasing).
    gate : Gate or None
        Where to fetch them from; nmfsc's data folder when None.

    Returns
    -------
    images : ndarray, shape (400, 112, 92) of uint8, or (400, 56, 46) of float64
        Upright grey levels 0..255; image ``10 * (s - 1) + (i - 1)`` is ``s{s}/{i}.pgm``.

    See Also
    --------
    load_orl : The images as a preprocessed data matrix.

    Examples
    --------
    >>> from nmfsc.datasets import orl_images
    >>> orl_images().shape  # downloaded on first use, or read from NMFSC_DATA_DIR
    (400, 112, 92)
    >>> orl_images(halved=True).shape
    (400, 56, 46)
    """
    halved = check_flag(halved, "halved")
    images = _ORL.images(gate)
    return imresize_bilinear(images, 0.5) if halved else images


def load_orl(*, gate: Gate | None = None) -> np.ndarray:
    """The ORL faces as a data matrix, halved, with Li et al.'s preprocessing.

    Each face is halved to 46 wide x 56 high by MATLAB's bilinear ``imresize`` with
    antialiasing (each output pixel a [1, 3, 3, 1] / 8 weighted average of 4 x 4
    input pixels, edges repeated), flattened row-major into a column, then, as
    ``orldata.m`` does, per column: minimum subtracted and maximum scaled to 255; the
    matrix floored at 1e-4 and divided by 10000.

    Parameters
    ----------
    gate : Gate or None
        Where to fetch and unpack ``att_faces.zip``; nmfsc's data folder when None.

    Returns
    -------
    V : ndarray of float64, shape (2576, 400)
        Values in [1e-8, 0.0255]; ``V[:, j].reshape(ORL_SHAPE)`` is face j upright.

    See Also
    --------
    orl_images : The images as stored, without preprocessing.
    load_cbcl, load_natural : The paper's other data sets.
    data_dir : Where the data is read from.

    Notes
    -----
    nmfpack ran in 2004 on a MATLAB whose ``imresize`` antialiased differently (old
    releases documented an 11 x 11 lowpass filter applied before bilinear
    interpolation), so its pixel values cannot be reproduced exactly; this follows the
    current MATLAB algorithm.

    References
    ----------
    F. Samaria and A. Harter, "Parameterisation of a stochastic model for
    human face identification", IEEE Workshop on Applications of Computer
    Vision, 1994.

    S. Z. Li, X. W. Hou, H. J. Zhang and Q. S. Cheng, "Learning spatially
    localized, parts-based representation", CVPR 2001.

    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    >>> from nmfsc.datasets import ORL_SHAPE, load_orl
    >>> V = load_orl()  # downloaded on first use, or read from NMFSC_DATA_DIR
    >>> V.shape, ORL_SHAPE
    ((2576, 400), (56, 46))
    >>> face = V[:, 0].reshape(ORL_SHAPE)  # the first face, upright
    """
    return _ORL.load(gate)


def natural_images(path: str | Path | None = None, *, gate: Gate | None = None) -> np.ndarray:
    """Olshausen's ten whitened natural images.

    Parameters
    ----------
    path : str, path-like or None
        A sparsenet ``IMAGES.mat`` to read instead (variable ``IMAGES``, 512 x 512 x 10
        or 262144 x 10, a MATLAB file of version 4 to 7, not 7.3). When
        None, the sparsenet trainset files of the registry are used.
    gate : Gate or None
        Where to fetch the trainset from; nmfsc's data folder when None.

    Returns
    -------
    images : ndarray of float64, shape (10, 512, 512)
        Upright, whitened, zero-mean images (values within about [-2, 3] for the
        trainset).

    See Also
    --------
    load_natural : ON/OFF patches of these images.
    whiten_images : Whitens images of your own the same way.

    References
    ----------
    B. A. Olshausen and D. J. Field, "Sparse coding with an overcomplete basis
    set: a strategy employed by V1?", Vision Research 37:3311-3325, 1997.

    Examples
    --------
    >>> from nmfsc.datasets import natural_images
    >>> natural_images().shape  # downloaded on first use, or read from NMFSC_DATA_DIR
    (10, 512, 512)
    """
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file path (str or path-like) or None, got {path!r}")
        if gate is not None:
            resolve_gate(gate)  # unused with a path, but a wrong one is still an error
        return read_images_mat(path)
    return _NATURAL.images(gate)


def load_natural(
    n_patches: int = 10000,
    patch_size: int = 12,
    random_state: int | np.random.Generator | None = None,
    path: str | Path | None = None,
    *,
    gate: Gate | None = None,
) -> np.ndarray:
    """Natural image patches as ON/OFF channels, as ``natdata.m`` makes them.

    Patches are cut at uniformly random positions of the whitened images (see
    :func:`~nmfsc.datasets.on_off_patches`: ``n_patches // 10`` from each of
    the first nine images, the rest from the last; 1000 from each for 10000 patches;
    at least 4 pixels from the border), flattened row-major, split into
    ON = max(x, 0) and OFF = max(-x, 0), stacked, floored at 1e-4, and each row divided
    by its root mean square over the patches.

    Parameters
    ----------
    n_patches : int, default 10000
        Number of patches (columns).
    patch_size : int, default 12
        Side of the square patches.
    random_state : int, numpy.random.Generator or None
        Seed or generator for the patch positions (``np.random.default_rng``); the same
        int always gives the same matrix.
    path : str, path-like or None
        A sparsenet ``IMAGES.mat`` to use instead of the trainset (see
        :func:`natural_images`).
    gate : Gate or None
        Where to fetch the trainset from; nmfsc's data folder when None.

    Returns
    -------
    V : ndarray of float64, shape (2 * patch_size ** 2, n_patches)
        (288, 10000) by default. Rows ``0 .. patch_size**2 - 1`` are the ON channel,
        the rest the OFF channel; ``V[:p*p, j].reshape(p, p)`` is patch j's ON
        channel upright. Every row has unit root mean square.

    See Also
    --------
    natural_images : The whitened images the patches are cut from.
    on_off_patches : The same patches from your own images.
    nmfsc.plotting.plot_on_off : Draws a basis learned from them.

    References
    ----------
    B. A. Olshausen and D. J. Field, "Sparse coding with an overcomplete basis
    set: a strategy employed by V1?", Vision Research 37:3311-3325, 1997.

    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    >>> from nmfsc.datasets import load_natural
    >>> V = load_natural(n_patches=100, random_state=0)  # the paper uses 10000
    >>> V.shape  # 12 x 12 patches: 144 ON and 144 OFF channels per column
    (288, 100)
    """
    n_patches = check("n_patches", n_patches)
    patch_size = check("patch_size", patch_size)
    check_random_state(random_state)
    images = natural_images(path, gate=gate)
    return _NATURAL.preprocess(images, n_patches, patch_size, random_state)
