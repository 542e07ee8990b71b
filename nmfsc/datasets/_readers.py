"""Readers for the raw file formats: binary PGM (with Pillow), raw float32 images,
IMAGES.mat (with scipy).

Each reader checks the file strictly (header, size) so that a damaged file is
reported, with what to do, instead of being read as wrong pixels.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import PIL.Image

from ._fetchers import DataError


def parse_pgm(data: bytes) -> np.ndarray:
    """Decode a binary (P5) 8-bit PGM image with Pillow, strictly.

    Pillow parses the header (comments included) and decodes the pixels; this adds
    the checks Pillow does not make, so that a damaged file is an error rather than
    wrong pixels: the file must be a P5 image of 8-bit grey levels, and hold exactly
    width * height pixel bytes (Pillow ignores trailing bytes, and only fails on
    missing ones when the pixels are decoded).

    Parameters
    ----------
    data : bytes
        The whole file: ``P5``, width, height, maxval (at most 255), one whitespace
        byte, then exactly width * height bytes, rows from top to bottom. A maxval
        below 255 is scaled to 0..255 (as Pillow does).

    Returns
    -------
    image : ndarray of uint8, shape (height, width)
        The image upright: row 0 is the top row.

    Raises
    ------
    ValueError
        If the header is not that of an 8-bit P5 PGM or the pixel data is not exactly
        width * height bytes long.
    """
    if not data.startswith(b"P5"):
        raise ValueError("not a binary (P5) PGM image")
    try:
        image = PIL.Image.open(io.BytesIO(data), formats=["PPM"])
    except (OSError, SyntaxError, ValueError) as error:  # Pillow's "cannot identify"
        raise ValueError(f"not a binary (P5) PGM image ({error})") from error
    width, height = image.size
    if image.mode != "L":
        raise ValueError(f"PGM maxval above 255 (mode {image.mode}): not 8-bit grey levels")
    found = len(data) - image.tile[0][2]  # the pixels' offset, after the header
    if found != width * height:
        raise ValueError(
            f"PGM of {width} x {height} should hold {width * height} pixel bytes, found {found}"
        )
    return np.asarray(image, dtype=np.uint8)


def read_pgms(paths: list[Path], shape: tuple[int, int], fix: str) -> np.ndarray:
    """Read 8-bit PGM images of one shape.

    Parameters
    ----------
    paths : list of pathlib.Path
        The image files, in the order wanted.
    shape : tuple of int
        Their (height, width).
    fix : str
        What to tell the user to do if a file is missing or damaged.

    Returns
    -------
    images : ndarray of uint8, shape (len(paths), height, width)

    Raises
    ------
    DataError
        Naming the file, if one is missing, damaged or of another shape.
    """
    images = np.empty((len(paths), *shape), dtype=np.uint8)
    for k, path in enumerate(paths):
        try:
            image = parse_pgm(path.read_bytes())
        except (OSError, ValueError) as error:
            raise DataError(f"Cannot read the image {path}: {error}. {fix}") from error
        if image.shape != shape:
            raise DataError(
                f"The image {path} is {image.shape[1]} x {image.shape[0]}, "
                f"expected {shape[1]} x {shape[0]}. {fix}"
            )
        images[k] = image
    return images


def read_unpacked_pgms(
    data_folder: Path, archive, names: list[str], shape: tuple[int, int]
) -> np.ndarray:
    """Read 8-bit PGM images from the folder that an archive was unpacked into.

    Parameters
    ----------
    data_folder : pathlib.Path
        The data folder.
    archive : nmfsc.datasets._archives.Archive
        The (verified) archive; its images are under ``data_folder / archive.extract_dir``.
    names : list of str
        The images' paths in that folder, in the order wanted.
    shape : tuple of int
        Their (height, width).

    Returns
    -------
    images : ndarray of uint8, shape (len(names), height, width)

    Raises
    ------
    DataError
        Naming the file, if one is missing, damaged or of another shape, and saying to
        delete the folder so that it is unpacked anew from the archive.
    """
    folder = data_folder / archive.extract_dir
    fix = (
        f"It was unpacked from {archive.name}: delete the folder {folder} and load "
        f"again to unpack it anew from the hash-checked archive."
    )
    return read_pgms([folder / name for name in names], shape, fix)


def read_float32_image(path: Path, shape: tuple[int, int]) -> np.ndarray:
    """Read a headerless big-endian float32 image (sparsenet's trainset format).

    Parameters
    ----------
    path : pathlib.Path
        The file: height * width big-endian IEEE float32 values, row-major.
    shape : tuple of int
        Its (height, width).

    Returns
    -------
    image : ndarray of float64, shape (height, width)

    Raises
    ------
    DataError
        If the file does not hold exactly height * width values.
    """
    data = np.fromfile(path, dtype=">f4")
    if data.size != shape[0] * shape[1]:
        raise DataError(
            f"{path} holds {data.size} float32 values, expected "
            f"{shape[0]} x {shape[1]} = {shape[0] * shape[1]}"
        )
    return data.reshape(shape).astype(np.float64)


def read_images_mat(path: str | Path) -> np.ndarray:
    """Read the whitened images of a sparsenet ``IMAGES.mat``.

    Parameters
    ----------
    path : str or path-like
        A MATLAB file (v4 to v7; not v7.3) with a variable ``IMAGES`` that is either
        height x width x n_images (Olshausen's current file: ``IMAGES(:,:,k)`` is image
        k) or n_pixels x n_images with square images (the older layout Hoyer used:
        image k is ``reshape(IMAGES(:,k), N, N)'``, i.e. each column is a row-major image).

    Returns
    -------
    images : ndarray of float64, shape (n_images, height, width)
        Upright images.

    Raises
    ------
    DataError
        If the file cannot be read or ``IMAGES`` has another layout.
    """
    import scipy.io

    try:
        contents = scipy.io.loadmat(path, variable_names=["IMAGES"])
    except NotImplementedError as error:  # MATLAB v7.3 files are HDF5
        raise DataError(
            f"{path} is a MATLAB v7.3 file, which scipy cannot read; "
            f"save it again in MATLAB with save(..., '-v7')"
        ) from error
    except Exception as error:  # scipy raises many kinds (MatReadError, IndexError, ...)
        raise DataError(
            f"Cannot read {path} as a MATLAB file ({type(error).__name__}: {error}); "
            "path must be a sparsenet IMAGES.mat (MATLAB v4 to v7)"
        ) from error
    if "IMAGES" not in contents:
        raise DataError(f"{path} has no variable named IMAGES")
    images = np.asarray(contents["IMAGES"], dtype=np.float64)
    if images.ndim == 3:
        return np.ascontiguousarray(np.moveaxis(images, 2, 0))
    side = int(round(np.sqrt(images.shape[0]))) if images.ndim == 2 else -1
    if side < 1 or side * side != images.shape[0]:
        raise DataError(
            f"IMAGES in {path} has shape {images.shape}; expected "
            f"height x width x n_images or (N*N) x n_images"
        )
    return np.ascontiguousarray(images.T.reshape(-1, side, side))
