"""Data sets of Hoyer (2004): loaders, downloads and synthetic data with known parts.

Real data (downloaded once, hash-checked, never redistributed by nmfsc):

- :func:`load_cbcl` -- MIT CBCL faces, V of shape (361, 2429), Lee & Seung's preprocessing.
- :func:`load_orl` -- ORL faces halved to 56 x 46, V of shape (2576, 400), Li et al.'s
  preprocessing.
- :func:`load_natural` -- Olshausen's whitened natural images as 12 x 12 ON/OFF patches,
  V of shape (288, 10000).
- :func:`cbcl_images`, :func:`orl_images`, :func:`natural_images` -- the raw images.

Every data matrix has one sample per column, each image flattened row-major, so
``V[:, j].reshape(height, width)`` is upright (heights and widths: :data:`CBCL_SHAPE`,
:data:`ORL_SHAPE`).

Files live in :func:`data_dir`: ``$NMFSC_DATA_DIR`` when set, else the OS cache.
:func:`download_all` (or ``python -m nmfsc.datasets download``) fetches them all.

Synthetic data: :func:`swimmer`, :func:`bars`, scored by :func:`part_recovery`.

Natural images of one's own: :func:`whiten_images` (Olshausen & Field's whitening
filter) and :func:`on_off_patches` (random patches as ON/OFF channels, the
preprocessing of :func:`load_natural`).

What each real data set is (files, reader, preprocessing, shapes, credit) is written
once, on the data sets page of the documentation (:doc:`/datasets`).
"""

from ._fetchers import ENV_VAR, DataError, DataWarning, data_dir
from ._loaders import (
    CBCL_SHAPE,
    NATURAL_SHAPE,
    ORL_FULL_SHAPE,
    ORL_SHAPE,
    cbcl_images,
    load_cbcl,
    load_natural,
    load_orl,
    natural_images,
    orl_images,
)
from ._preprocess import on_off_patches, whiten_images
from .catalog import download_all
from .synthetic import SWIMMER_SHAPE, bars, part_recovery, swimmer

__all__ = [
    "CBCL_SHAPE",
    "ENV_VAR",
    "NATURAL_SHAPE",
    "ORL_FULL_SHAPE",
    "ORL_SHAPE",
    "SWIMMER_SHAPE",
    "DataError",
    "DataWarning",
    "bars",
    "cbcl_images",
    "data_dir",
    "download_all",
    "load_cbcl",
    "load_natural",
    "load_orl",
    "natural_images",
    "on_off_patches",
    "orl_images",
    "part_recovery",
    "swimmer",
    "whiten_images",
]
