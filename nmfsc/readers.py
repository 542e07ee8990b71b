"""Read a data matrix V for nmfsc from a file or a folder of images.

:func:`read_matrix` reads ``.npy``, ``.npz``, ``.csv``, ``.tsv``, Matrix Market
``.mtx`` files and folders of PNG, PGM and JPEG images, checks that the values
are usable by NMF (finite, non-negative, not all zero) and returns V in the
paper's orientation: features x samples, one sample per column. Every problem
raises a :class:`DataFileError` whose message is one line naming the file and,
for a bad value, how many there are and where the first one is.

The text and image formats are parsed in :mod:`nmfsc._parsers`, which also
defines :class:`DataFileError` and :data:`IMAGE_SUFFIXES` (this module imports
them from there: the parsers raise the error and never import this module).
"""

from __future__ import annotations

import math
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import scipy.io
import scipy.sparse

from nmfsc._parameters import check
from nmfsc._parsers import IMAGE_SUFFIXES, DataFileError

__all__ = ["DataFileError", "FORMATS", "IMAGE_SUFFIXES", "check_n_components", "read_matrix"]

#: File name suffixes read by :func:`read_matrix`, with what each holds.
FORMATS = {
    ".npy": "a NumPy array",
    ".npz": "a NumPy archive (one array, or pick one with key), or a scipy.sparse.save_npz file",
    ".csv": "comma-separated numbers, header row optional",
    ".tsv": "tab-separated numbers, header row optional",
    ".mtx": "a Matrix Market file",
}


def read_matrix(
    path: str | os.PathLike[str],
    *,
    key: str | None = None,
    samples_as_rows: bool = False,
    missing_values: float | None = None,
) -> tuple[Any, tuple[int, int] | None, str]:
    """Read and check the data matrix V stored at ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy`` file (a 2-D numeric array); a ``.npz`` archive (its only
        array, or the one named ``key``, or a sparse matrix saved by
        :func:`scipy.sparse.save_npz`); a ``.csv`` or ``.tsv`` file of numbers
        (a first row whose cells are all non-numeric is taken as a header and
        skipped); a Matrix Market ``.mtx`` file; or a folder of PNG, PGM or JPEG
        images of one size (each image, converted to greyscale floats in [0, 1],
        becomes one column of V, in sorted file-name order; other files are
        ignored).
    key : str or None
        The array to read from a ``.npz`` archive; needed when it holds more
        than one array. Given for any other format, it is an error.
    samples_as_rows : bool, default False
        The file holds one sample per row (scikit-learn's orientation): V is
        its transpose. Not allowed for an image folder (an image is a column).
    missing_values : None or np.nan, default None
        np.nan: NaN entries, and empty cells of a .csv or .tsv file (a row of
        them included), are missing values, returned as NaN (for
        ``mask=~np.isnan(V)``, ``SparseNMF(missing_values=np.nan)`` or
        ``compare(missing_values=np.nan)``); infinity is not, and is an error.
        None: they are errors.

    Returns
    -------
    V : ndarray or scipy.sparse matrix of float64 or float32, shape (N, T)
        The data, features x samples: float32 when the file holds float32
        (the solvers then compute and return W and H in float32), else
        float64. A Matrix Market file (and a
        :func:`scipy.sparse.save_npz` archive) stays sparse: a CSR matrix (CSC
        with ``samples_as_rows``), never made dense; every solver,
        :func:`nmfsc.compare` and the command line take it as it is.
    image_shape : tuple of int or None
        ``(height, width)`` of the images for an image folder, else None.
    name : str
        A short name for the data: the file's stem (with ``-key`` when a key
        was given) or the folder's name.

    Raises
    ------
    DataFileError
        With a one-line message: a missing or unreadable file, an unsupported
        suffix, an unknown ``key``, a non-numeric cell (row and column counted
        from 1, header included), an empty cell or a row of empty cells
        (unless ``missing_values``), images of different sizes, an array that is
        not 2-D or not real, NaN or infinite entries, negative entries (how
        many and where the first is) or an all-zero matrix.

    See Also
    --------
    compare : Compare methods on the matrix read.
    DataFileError : The error for a file it cannot use.

    Examples
    --------
    >>> V, image_shape, name = read_matrix("faces/")  # doctest: +SKIP
    >>> V, _, name = read_matrix("counts.csv", samples_as_rows=True)  # doctest: +SKIP
    """
    from nmfsc._parsers import read_image_folder  # imports Pillow only when needed

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file or folder name (str or os.PathLike), got {path!r}")
    path = Path(path)
    if path.is_dir():
        if key is not None:
            raise DataFileError(f"{path} is a folder of images; a key selects an array in .npz")
        if samples_as_rows:
            raise DataFileError(
                f"{path} is a folder of images: each image is one column of V, "
                "so samples as rows does not apply"
            )
        V, image_shape, where = read_image_folder(path)
        _check_values(V, path, where)
        return V, image_shape, path.resolve().name
    missing = check("missing_values", missing_values)
    V, where = _read_file(path, key, empty_as_nan=missing, samples_as_rows=samples_as_rows)
    _check_values(V, path, where, allow_nan=missing)
    if samples_as_rows:
        V = V.T
    V = _as_solver_input(V)
    name = path.stem if key is None else f"{path.stem}-{key}"
    return V, None, name


def check_n_components(V: Any, n_components: int, *, source: str = "V") -> None:
    """Check that V is large enough for ``n_components`` (K) components.

    nmfsc needs at least 2 features and 2 samples (Hoyer's sparseness is
    defined only for vectors of length 2 or more) and ``K <= min(N, T)``: more
    components than features or samples is no longer a factorization that
    compresses V (with ``K = min(N, T)`` it can already be exact).

    Parameters
    ----------
    V : array_like, shape (N, T)
        The data, features x samples.
    n_components : int
        K, the number of components asked for.
    source : str or os.PathLike
        What to name in the message (the data file).

    Raises
    ------
    DataFileError
        If V is smaller than 2 x 2 or K exceeds ``min(N, T)``.
    """
    N, T = np.shape(V)
    size = f"{source}: V is {N} x {T} (features x samples)"
    if N < 2 or T < 2:
        raise DataFileError(
            f"{size}; nmfsc needs at least 2 features and 2 samples "
            "(sparseness is defined for vectors of length 2 or more)"
        )
    if n_components > min(N, T):
        raise DataFileError(
            f"{size}, too small for {n_components} components: "
            f"the number of components must be at most min(N, T) = {min(N, T)}"
        )


def _read_file(path, key, empty_as_nan=False, samples_as_rows=False):
    """The matrix in a file (dense, or sparse as mmread gives it) and its position namer."""
    if not path.exists():
        raise DataFileError(f"cannot read {path}: no such file or folder")
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        kinds = ", ".join(FORMATS)
        shown = f"'{path.suffix}'" if path.suffix else "no suffix"
        raise DataFileError(
            f"{path}: unsupported file type ({shown}); nmfsc reads {kinds} "
            f"or a folder of images ({', '.join(IMAGE_SUFFIXES)})"
        )
    if key is not None and suffix != ".npz":
        raise DataFileError(f"{path} is not an .npz archive; a key selects an array only in .npz")
    try:
        _check_signature(path, suffix)
        _check_declared_size(path, suffix, key, samples_as_rows)
        if suffix == ".npy":
            return _as_matrix(np.load(path, allow_pickle=False), path), _index
        if suffix == ".npz":
            return _read_npz(path, key), _index
        if suffix == ".mtx":
            return _as_matrix(scipy.io.mmread(path), path), _cell
        from nmfsc._parsers import read_delimited

        return read_delimited(path, "," if suffix == ".csv" else "\t", empty_as_nan)
    except DataFileError:
        raise
    except OSError as error:
        raise DataFileError(f"cannot read {path}: {_one_line(error.strerror or error)}") from error
    except OverflowError as error:  # e.g. an .mtx integer beyond int64
        raise DataFileError(
            f"cannot read {path} as {suffix}: a value is too large for a 64-bit number "
            f"({_one_line(error)})"
        ) from error
    except MemoryError as error:
        raise DataFileError(
            f"cannot read {path}: not enough memory ({_gib(available_memory())} available)"
        ) from error
    except (ValueError, EOFError, zipfile.BadZipFile) as error:
        raise DataFileError(f"cannot read {path} as {suffix}: {_one_line(error)}") from error


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation of this process.

    The least of the limits :func:`memory_limit` reads: the machine's free
    memory, the process's address-space and data limits and its control
    group's memory limit, each less what is already in use.

    Returns
    -------
    available : int or None
        None when no limit can be read.
    """
    return memory_limit()[0]


def memory_limit() -> tuple[int | None, str]:
    """The memory available to a new allocation of this process, and what limits it.

    Each limit that can be read counts, less what the process (or its group)
    already uses; the least one wins:

    - ``"MemAvailable"``: Linux's MemAvailable (free memory plus what the OS
      can reclaim), else the physical memory;
    - ``"RLIMIT_AS"`` and ``"RLIMIT_DATA"``: the soft address-space and data
      limits (``ulimit -v``, ``prlimit --as``; ``ulimit -d``) less the
      process's ``VmSize`` and ``VmData`` (``/proc/self/status``; where that
      cannot be read, the whole limit);
    - ``"cgroup"``: the memory limit of the process's control group and of
      each group above it (cgroup v2 ``memory.max`` less ``memory.current``;
      v1 ``memory.limit_in_bytes`` less ``memory.usage_in_bytes``), the
      inactive file cache counted as free, as the kernel reclaims it first.

    Returns
    -------
    available : int or None
        Bytes; None when no limit can be read.
    source : str
        The limit that gives ``available`` (one of the names above), or ""
        when none can be read.
    """
    limits = {
        "MemAvailable": _meminfo_available(),
        **_rlimits_available(),
        "cgroup": _cgroup_available(),
    }
    known = {source: max(value, 0) for source, value in limits.items() if value is not None}
    if not known:
        return None, ""
    source = min(known, key=lambda name: known[name])
    return known[source], source


def describe_available(available: int, source: str) -> str:
    """``"3.5 GiB is available"``, naming the limit when it is the process's own.

    Parameters
    ----------
    available : int
        Bytes, from :func:`memory_limit`.
    source : str
        The limit that gives them, from :func:`memory_limit`.

    Returns
    -------
    text : str
        For example ``"3.5 GiB is available under the process's address-space
        limit (RLIMIT_AS, ulimit -v)"``; no limit is named for MemAvailable.
    """
    return f"{_gib(available)} is available{_LIMIT_NAMES.get(source, '')}"


#: How a message names the limit that :func:`memory_limit` found the least.
_LIMIT_NAMES = {
    "RLIMIT_AS": " under the process's address-space limit (RLIMIT_AS, ulimit -v)",
    "RLIMIT_DATA": " under the process's data limit (RLIMIT_DATA, ulimit -d)",
    "cgroup": " under its control group's memory limit",
}

#: What :func:`memory_limit` reads (paths that the tests point elsewhere).
_MEMINFO = "/proc/meminfo"
_PROC_STATUS = "/proc/self/status"
_PROC_CGROUP = "/proc/self/cgroup"
_CGROUP_MOUNT = "/sys/fs/cgroup"
#: A limit at or above this (cgroup v1's "no limit" is 2^63 less a page) is none.
_NO_LIMIT = 2**62


def _meminfo_available():
    """Linux's MemAvailable, else the physical memory, else None."""
    try:
        with open(_MEMINFO, encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _rlimits_available():
    """{"RLIMIT_AS": bytes, "RLIMIT_DATA": bytes} left under the soft limits that are set."""
    try:
        import resource
    except ImportError:  # not on Windows
        return {}
    used = _proc_status_bytes(("VmSize:", "VmData:"))
    left = {}
    for name, usage in (("RLIMIT_AS", "VmSize:"), ("RLIMIT_DATA", "VmData:")):
        try:
            soft, _ = resource.getrlimit(getattr(resource, name))
        except (AttributeError, ValueError, OSError):
            continue
        if soft != resource.RLIM_INFINITY and 0 <= soft < _NO_LIMIT:
            left[name] = soft - used.get(usage, 0)
    return left


def _proc_status_bytes(fields):
    """{field: bytes} of the ``kB`` fields of /proc/self/status that can be read."""
    found = {}
    try:
        with open(_PROC_STATUS, encoding="ascii", errors="replace") as status:
            for line in status:
                words = line.split()
                if words and words[0] in fields:
                    found[words[0]] = int(words[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return found


def _cgroup_available():
    """Bytes the process's memory control groups (v2 or v1) leave; None without a limit."""
    try:
        with open(_PROC_CGROUP, encoding="utf-8", errors="replace") as cgroup:
            lines = cgroup.read().splitlines()
    except OSError:
        return None
    mount = Path(_CGROUP_MOUNT)
    rooms = []
    for line in lines:
        _, _, rest = line.partition(":")
        controllers, _, group = rest.partition(":")
        if controllers == "":  # cgroup v2: "0::/path"
            root = mount if (mount / "cgroup.controllers").exists() else mount / "unified"
            files = ("memory.max", "memory.current", "inactive_file")
        elif "memory" in controllers.split(","):  # cgroup v1: "4:memory:/path"
            root = mount / "memory"
            files = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
        else:
            continue
        for folder in _cgroup_folders(root, group):
            room = _cgroup_room(folder, *files)
            if room is not None:
                rooms.append(room)
    return min(rooms) if rooms else None


def _cgroup_folders(root, group):
    """The folders of a control group and of the groups above it, up to ``root``.

    Where the group's own folder is not there (a container that mounts its
    group as the root), the root alone.
    """
    folder = root.joinpath(*[part for part in group.split("/") if part not in ("", ".", "..")])
    if not folder.is_dir():
        return [root]
    return [folder, *[parent for parent in folder.parents if parent.is_relative_to(root)]]


def _cgroup_room(folder, limit_file, usage_file, inactive_field):
    """``limit - (usage - inactive file cache)`` of one control group; None without a limit."""
    try:
        limit_text = (folder / limit_file).read_text().strip()
        if limit_text == "max" or int(limit_text) >= _NO_LIMIT:
            return None
        usage = int((folder / usage_file).read_text().strip())
    except (OSError, ValueError):
        return None
    inactive = 0
    try:
        for line in (folder / "memory.stat").read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == inactive_field:
                inactive = int(value)
                break
    except (OSError, ValueError):
        pass
    return int(limit_text) - max(usage - inactive, 0)


def _gib(n_bytes):
    return f"{n_bytes / 2**30:.3g} GiB" if n_bytes is not None else "unknown"


def _npy_header(handle):
    """(shape, dtype) from an open .npy stream's header, without reading the data."""
    fmt = np.lib.format
    version = fmt.read_magic(handle)
    read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, _, dtype = read(handle)
    return shape, dtype


def _declared_bytes(path, suffix, key, samples_as_rows=False):
    """(bytes that reading the file allocates at its peak, what it declares), from
    the headers only (.npy shape and dtype, .npz members' ones, .mtx size line):
    the array itself, its float64 copy and, for sparse data, the index arrays
    and the compressed row pointers of V (one per row of V: per column of the
    file with ``samples_as_rows``, whose CSR conversion of the transpose
    allocates them)."""
    if suffix == ".npy":
        with open(path, "rb") as handle:
            shape, dtype = _npy_header(handle)
        _check_dtype(dtype, path)
        n = math.prod(shape)
        return n * (dtype.itemsize + 8), f"a {' x '.join(map(str, shape))} array of {dtype}"
    if suffix == ".npz":
        with zipfile.ZipFile(path) as archive:
            members = {}
            for info in archive.infolist():
                if info.filename.endswith(".npy"):
                    with archive.open(info) as handle:
                        members[info.filename[:-4]] = _npy_header(handle)
        if key is None and _SPARSE_NPZ_KEYS <= set(members):
            stored = sum(math.prod(sh) * dt.itemsize for sh, dt in members.values())
            nnz = math.prod(members["data"][0])
            rows = _sparse_npz_rows(path, samples_as_rows)
            return 3 * stored + nnz * 24 + (rows + 1) * 8, f"a sparse matrix with {nnz} entries"
        if key is None and len(members) == 1:
            key = next(iter(members))
        if key not in members:
            return 0, ""  # the reader names the problem
        shape, dtype = members[key]
        _check_dtype(dtype, f"{path}[{key}]")
        n = math.prod(shape)
        return n * (dtype.itemsize + 8), f"a {' x '.join(map(str, shape))} array of {dtype}"
    if suffix == ".mtx":
        rows, cols, entries, layout, field, _ = scipy.io.mminfo(path)
        if layout == "array":
            return 2 * rows * cols * 8, f"a {rows} x {cols} dense matrix"
        pointers = (cols if samples_as_rows else rows) + 1
        return entries * 24 * 3 + pointers * 8, (
            f"a {rows} x {cols} sparse matrix with {entries} entries"
        )
    return 0, ""


def _sparse_npz_rows(path, samples_as_rows=False):
    """The row count of V from a scipy.sparse.save_npz file (its small ``shape``
    member): the file's rows, or its columns with ``samples_as_rows``."""
    with np.load(path, allow_pickle=False) as archive:
        shape = archive["shape"]
    axis = 1 if samples_as_rows else 0
    return int(shape[axis]) if shape.size > axis else 0


def _check_dtype(dtype, source):
    if dtype.kind not in "biuf":
        raise DataFileError(f"{source} holds values of type {dtype}; nmfsc needs real numbers")


def _check_declared_size(path, suffix, key, samples_as_rows=False):
    """Refuse, before anything is allocated, a file whose declared size cannot fit
    in the memory available (:func:`memory_limit`; one line naming both)."""
    needed, what = _declared_bytes(path, suffix, key, samples_as_rows)
    available, source = memory_limit()
    if available is not None and needed > available:
        raise DataFileError(
            f"{path} declares {what}: reading it needs about {_gib(needed)} of memory, "
            f"and {describe_available(available, source)}"
        )


def _check_signature(path, suffix):
    """Refuse a .npy or .npz file that does not start as one (numpy would try pickle)."""
    signature = {".npy": (b"\x93NUMPY", "a NumPy .npy file"), ".npz": (b"PK", "an .npz archive")}
    if suffix in signature:
        magic, kind = signature[suffix]
        with open(path, "rb") as handle:
            if handle.read(len(magic)) != magic:
                raise DataFileError(f"cannot read {path}: it is not {kind}")


#: The arrays every file written by ``scipy.sparse.save_npz`` holds.
_SPARSE_NPZ_KEYS = {"format", "shape", "data"}


def _read_npz(path, key):
    with np.load(path, allow_pickle=False) as archive:
        keys = list(archive.files)
        if key is None and _SPARSE_NPZ_KEYS <= set(keys):  # scipy.sparse.save_npz's layout
            return _as_matrix(scipy.sparse.load_npz(path), path)
        if key is None:
            if len(keys) != 1:
                listed = ", ".join(keys) if keys else "none"
                raise DataFileError(
                    f"{path} holds {len(keys)} arrays ({listed}); choose one with --key"
                )
            key = keys[0]
        elif key not in keys:
            raise DataFileError(f"{path} has no array {key!r}; its arrays: {', '.join(keys)}")
        return _as_matrix(archive[key], f"{path}[{key}]")


def _as_matrix(array, source):
    """``array`` as a 2-D real matrix (a scipy.sparse one stays sparse)."""
    if hasattr(array, "tocoo"):  # scipy.sparse, from mmread
        dtype = array.dtype
    else:
        array = np.asarray(array)
        dtype = array.dtype
        if array.ndim != 2:
            raise DataFileError(
                f"{source} holds a {array.ndim}-D array of shape {array.shape}; "
                "nmfsc needs a 2-D matrix (features x samples)"
            )
    _check_dtype(np.dtype(dtype), source)  # not complex, timedelta64, strings, objects
    dtype = np.float32 if dtype == np.float32 else np.float64  # float32 stays float32
    if hasattr(array, "tocoo"):
        return array.astype(dtype, copy=False)
    return np.asarray(array, dtype)


def _check_values(V, source, where, allow_nan=False):
    """Reject an empty V, NaN (unless ``allow_nan``), infinities, negatives and all zeros.

    ``where(i, j)`` names entry (i, j) of V as the file counts it; a message
    gives how many entries are bad and the position of the first, row by row.
    """
    if 0 in V.shape:
        raise DataFileError(f"{source}: the matrix is empty (shape {V.shape})")
    if hasattr(V, "tocoo"):  # scipy.sparse: only the stored entries can be bad
        coo = V.tocoo(copy=True)
        coo.sum_duplicates()  # also sorts the entries row by row
        rows, cols, values = coo.row, coo.col, coo.data
    else:
        values = V.ravel()
        rows = cols = None
    if allow_nan:
        if np.isnan(values).all():
            raise DataFileError(f"{source}: every entry is missing (NaN or empty)")
        values = np.where(np.isnan(values), 0.0, values)
    non_finite = (
        ("infinite", "infinity is not a missing value: replace or drop the infinite entries")
        if allow_nan  # NaN is missing there: only infinity is wrong
        else ("NaN or infinity", "V must be finite")
    )
    for bad, what, rule in (
        (~np.isfinite(values), *non_finite),
        (values < 0, "negative", "NMF needs V >= 0"),
    ):
        count = int(np.count_nonzero(bad))
        if count:
            first = int(np.argmax(bad))
            i, j = divmod(first, V.shape[1]) if rows is None else (rows[first], cols[first])
            raise DataFileError(
                f"{source}: {count} {'entry is' if count == 1 else 'entries are'} {what}; "
                f"the first is {values[first]:g} at {where(int(i), int(j))} ({rule})"
            )
    if not np.any(values):
        raise DataFileError(
            f"{source}: every {'observed ' if allow_nan else ''}entry is 0 (shape {V.shape}); "
            "there is nothing to factorize"
        )


def _as_solver_input(V):
    """V as the solvers take it: a C-contiguous float64 (float32 kept) array, or a scipy.sparse
    CSR / CSC matrix kept sparse (a COO matrix from mmread becomes CSR; the
    transpose of CSR, with ``samples_as_rows``, is CSC and stays so)."""
    if hasattr(V, "tocsr"):
        if V.format not in ("csr", "csc"):
            V = V.tocsr()
        V.sum_duplicates()
        return V
    return np.ascontiguousarray(V, dtype=np.float32 if V.dtype == np.float32 else np.float64)


def _index(i, j):
    return f"index [{i}, {j}]"


def _cell(i, j):
    return f"row {i + 1}, column {j + 1}"


def _one_line(error):
    return " ".join(str(error).split()) or type(error).__name__
