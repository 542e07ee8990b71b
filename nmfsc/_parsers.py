"""Parse the text and image inputs of :func:`nmfsc.readers.read_matrix`.

Delimited text (``.csv``, ``.tsv``): numbers only, with an optional header row;
a bad cell is reported by its row and column as a spreadsheet numbers them.
Image folders: PNG, PGM and JPEG files of one size, read with Pillow and
converted to greyscale floats, one image per column of V.
"""

from __future__ import annotations

import csv

import numpy as np

__all__ = ["DataFileError", "IMAGE_SUFFIXES", "read_delimited", "read_image_folder"]

#: Suffixes of the image files read from a folder (case does not matter).
IMAGE_SUFFIXES = (".png", ".pgm", ".jpg", ".jpeg")


class DataFileError(ValueError):
    """A data file nmfsc cannot use: missing, unreadable, malformed or with bad values.

    The message is a single line that names the file and, for a bad value, its
    position; the command line prints it and exits with status 2.

    See Also
    --------
    read_matrix : Reads the data file and raises this error.
    compare : Compares methods on the data read.
    nmfsc.datasets.DataError : The error of the paper's data sets.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from nmfsc import DataFileError, read_matrix
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "V.csv"
    ...     _ = path.write_text("1,2\\n3,-4\\n")
    ...     try:
    ...         read_matrix(path)
    ...     except DataFileError as error:
    ...         print(str(error).split(": ", 1)[1])  # after the file's path
    1 entry is negative; the first is -4 at row 2, column 2 (NMF needs V >= 0)
    """


def read_delimited(path, delimiter, empty_as_nan=False):
    """Read a delimited text file of numbers, skipping a header row if there is one.

    Parameters
    ----------
    path : pathlib.Path
        The file, UTF-8 text (a byte-order mark is allowed).
    delimiter : str
        ``","`` or ``"\\t"``.
    empty_as_nan : bool, default False
        Read an empty cell as NaN (a missing value) instead of refusing it.

    Returns
    -------
    V : ndarray of float64, shape (rows, columns)
        The numbers, as laid out in the file.
    where : callable
        ``where(i, j)`` names entry (i, j) as "row r, column c", counted from 1
        over the file's lines (the header and blank lines included).

    Raises
    ------
    DataFileError
        For a file that is not UTF-8, holds no numbers, has rows of different
        lengths or a non-numeric cell, and, without ``empty_as_nan``, for an
        empty cell or a row of empty cells.

    Notes
    -----
    The first non-blank row is a header when none of its cells is a number
    (and some cell is not empty). Blank lines -- nothing but whitespace, no
    delimiter -- are skipped; a row of empty cells (``,,``) is data: a row of
    NaN with ``empty_as_nan``, else refused.
    """
    rows, lines = _rows(path, delimiter)
    header = _is_header(rows[0])
    if header:
        rows, lines = rows[1:], lines[1:]
        if not rows:
            raise DataFileError(f"{path} holds a header row and no numbers")
    width = len(rows[0])
    V = np.empty((len(rows), width))
    for i, row in enumerate(rows):
        if not empty_as_nan and not any(cell.strip() for cell in row):
            raise DataFileError(
                f"{path}: row {lines[i]} holds only empty cells; delete the line if it is "
                "not data, or read empty cells as missing values (--missing-values nan; "
                "missing_values=np.nan in Python)"
            )
        if len(row) != width:
            raise DataFileError(
                f"{path}: row {lines[i]} has {_cells(len(row))} but row {lines[0]} has "
                f"{_cells(width)}; every row must have the same number of cells"
            )
        try:
            V[i] = [_number(cell) if cell.strip() or not empty_as_nan else np.nan for cell in row]
        except ValueError:
            _raise_bad_cell(
                path,
                row,
                lines[i],
                first_row=i == 0 and not header,
                delimiter=delimiter,
                empty_as_nan=empty_as_nan,
            )
    line_of = np.asarray(lines)
    return V, lambda i, j: f"row {line_of[i]}, column {j + 1}"


def _cells(n):
    return f"{n} cell" if n == 1 else f"{n} cells"


def _rows(path, delimiter):
    """The non-blank rows of the file and their line numbers (from 1).

    A blank line holds nothing but whitespace and no delimiter; a row of empty
    cells (``,,`` in a .csv, tabs alone in a .tsv) is not blank: it is kept.
    """
    last = [""]  # the last physical line the reader took: where its row ended

    def physical_lines(handle):
        for line in handle:
            last[0] = line
            yield line

    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(physical_lines(handle), delimiter=delimiter)
            rows, lines = [], []
            for row in reader:
                # A row that ends on a blank line is that line alone (a quoted
                # cell ends on the line with its closing quote).
                if last[0].strip() or delimiter in last[0]:
                    rows.append(row)
                    lines.append(reader.line_num)
    except UnicodeDecodeError as error:
        raise DataFileError(
            f"cannot read {path}: not UTF-8 text (byte {error.object[error.start]:#04x} "
            f"at offset {error.start})"
        ) from error
    except csv.Error as error:
        raise DataFileError(f"cannot read {path}: {error}") from error
    if not rows:
        raise DataFileError(f"{path} holds no numbers (the file is empty)")
    return rows, lines


def _number(cell):
    """``float(cell)``, but not for Python's digit grouping (``1_000``): a ValueError."""
    if "_" in cell:
        raise ValueError(cell)
    return float(cell)


def _is_number(cell):
    try:
        _number(cell)
    except ValueError:
        return False
    return True


def _is_header(row):
    """No cell is a number, and some cell is not empty (a row of empty cells is data)."""
    return any(cell.strip() for cell in row) and not any(_is_number(cell) for cell in row)


#: The other delimiter and the file suffix that goes with it, by delimiter.
_OTHER_DELIMITER = {",": ("\t", "tab", ".tsv"), "\t": (",", "comma", ".csv")}
#: Longest cell quoted whole in a message; a longer one is cut.
_QUOTED_CELL = 40


def _raise_bad_cell(path, row, line, first_row, delimiter=",", empty_as_nan=False):
    """Raise the DataFileError for the first cell of ``row`` that is not a number
    (an empty one counts only without ``empty_as_nan``: it is then a missing value)."""
    for j, cell in enumerate(row):
        if not _is_number(cell) and (cell.strip() or not empty_as_nan):
            text = cell.strip()
            if len(text) > _QUOTED_CELL:
                text = f"{text[:_QUOTED_CELL]}... ({len(text)} characters)"
            what = "empty cell" if not cell.strip() else f"non-numeric cell {text!r}"
            hint = (
                "; a first row is taken as a header only when none of its cells is a number"
                if first_row
                else ""
            )
            other, name, suffix = _OTHER_DELIMITER.get(delimiter, (None, "", ""))
            if other is not None and other in cell:
                parsed_as = "comma" if delimiter == "," else "tab"
                hint += (
                    f"; the cell holds {name}s: the file looks {name}-separated, but "
                    f"{path.suffix or 'its suffix'} is read as {parsed_as}-separated "
                    f"(rename it to {suffix})"
                )
            raise DataFileError(f"{path}: {what} at row {line}, column {j + 1}{hint}")


def read_image_folder(folder):
    """Read every PNG, PGM and JPEG image in ``folder`` as one column of V.

    Parameters
    ----------
    folder : pathlib.Path
        The folder. Files with other suffixes, hidden files and subfolders are
        ignored; the images are taken in sorted file-name order.

    Returns
    -------
    V : ndarray of float64, shape (height * width, n_images)
        Column k is image k in greyscale, flattened row by row
        (``V[:, k].reshape(height, width)`` is the image). 8-bit images are
        scaled to [0, 1] (divided by 255), 16-bit ones (PNG, and PGM with a
        maximum value above 255) by 65535.
    image_shape : tuple of int
        ``(height, width)``.
    where : callable
        ``where(i, j)`` names pixel i of image j.

    Raises
    ------
    DataFileError
        For a folder without images, an image Pillow cannot read, a link to an
        image outside the folder, or images of different sizes (naming two of
        them and their sizes).
    """
    files = sorted(
        (
            p
            for p in folder.iterdir()
            if p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".") and p.is_file()
        ),
        key=lambda p: p.name,
    )
    if not files:
        raise DataFileError(
            f"{folder} holds no images ({', '.join(IMAGE_SUFFIXES)}); nmfsc reads a folder "
            "of PNG, PGM or JPEG images of one size"
        )
    inside = folder.resolve()
    for path in files:
        if path.is_symlink() and not path.resolve().is_relative_to(inside):
            raise DataFileError(
                f"{path} is a link to {path.resolve()}, outside {folder}; nmfsc reads only "
                "the images in the folder: copy the image there or remove the link"
            )
    images = [_read_image(files[0])]
    shape = images[0].shape
    for path in files[1:]:
        image = _read_image(path)
        if image.shape != shape:
            raise DataFileError(
                f"images of different sizes in {folder}: {files[0].name} is "
                f"{_size(shape)} but {path.name} is {_size(image.shape)} (height x width); "
                "every image must have the same size"
            )
        images.append(image)
    V = np.stack([image.ravel() for image in images], axis=1)

    def where(i, j):
        r, c = divmod(i, shape[1])
        return f"row {r + 1}, column {c + 1} of {files[j].name}"

    return V, shape, where


def _size(shape):
    return f"{shape[0]} x {shape[1]} pixels"


def _read_image(path):
    """One image as a 2-D float64 greyscale array."""
    from PIL import Image, ImageOps

    try:
        with Image.open(path) as opened:
            sixteen_bit_pgm = opened.format == "PPM" and opened.mode == "I"
            image = ImageOps.exif_transpose(opened)  # upright, as viewers show it
            if sixteen_bit_pgm:  # Pillow scales the file's maxval to 65535, in mode I
                return np.asarray(image, dtype=np.float64) / 65535.0
            return _greyscale(image)
    except (OSError, ValueError, Image.DecompressionBombError) as error:
        message = " ".join(str(error).split()) or type(error).__name__
        raise DataFileError(f"cannot read image {path}: {message}") from error


def _greyscale(image):
    """Pillow image -> float64 greyscale: 8-bit in [0, 1], 16-bit in [0, 1], float as is."""
    if image.mode.startswith("I;16"):
        return np.asarray(image, dtype=np.float64) / 65535.0
    if image.mode in ("I", "F"):
        return np.asarray(image, dtype=np.float64)
    return np.asarray(image.convert("L"), dtype=np.float64) / 255.0
