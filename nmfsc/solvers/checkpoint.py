"""Saving and restoring a solver's state, so that a stopped run can continue.

A checkpoint is one ``.npz`` file (no pickles) holding

- ``W``, ``H``: the factors in the solvers' internal units (``V / max(V)``);
- the solver's scalar state (nmf_sc's step sizes ``mu_W``, ``mu_H``);
- ``iteration`` and the ``objective`` and ``times`` histories;
- ``meta``: a JSON text with the solver's name, its parameters (those that
  change the iterates: ``n_components``, sparseness targets, alpha, beta), a
  description of the start (seed or hash of ``W_init``/``H_init``) and a
  fingerprint of V (shape and SHA-256 of its float64 bytes);
- ``digest``: the SHA-256 of every other entry (name, dtype, shape, bytes).

Resuming compares ``meta`` with the new call and refuses a checkpoint written
for other data or settings (:class:`CheckpointMismatchError`). Stopping
options (max_iter, tol, max_time, ...) may differ: raising max_iter and
resuming is the intended use. The loaded state is validated before it is used
-- shapes, dtypes, finite values, non-negative factors, step sizes > 0,
``iteration >= 0``, histories of ``iteration + 1`` values, and the digest, so
that a file edited or damaged after it was written is refused (a guard
against corruption and accidents: the digest needs no key, so a deliberate
edit with the digest recomputed is not detected) -- and every
refusal is a ValueError naming the file and what is wrong.

Writes are atomic: the file is written to a temporary file with a unique name
in the same folder (created exclusively: an existing file or link there is
never written through) and then renamed over ``path`` with :func:`os.replace`.
A run killed while saving leaves the previous checkpoint intact (and at worst
a stale ``.<name>.<pid>.*.tmp``, which is ignored and removed by the next
save once its process is gone); processes saving to one path at
once do not disturb each other: the last rename wins.

The random generator is not saved: it is used only for the start, which a
resumed run takes from the checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import numpy as np

from nmfsc.atomic import atomic_writer

__all__ = [
    "CheckpointMismatchError",
    "CheckpointReadError",
    "check_checkpoint_path",
    "fingerprint",
    "load_checkpoint",
    "save_checkpoint",
]

#: 2: adds ``digest``. Version 1 files (no digest) cannot be verified and are refused.
FORMAT_VERSION = 2

_HEADER = ("format_version", "meta", "iteration", "objective", "times", "digest")
_AFRESH = "delete it, or pass resume=False to start afresh"


class CheckpointMismatchError(ValueError):
    """The checkpoint was written for different data or solver settings.

    See Also
    --------
    nmf_sc : Its ``checkpoint`` and ``resume`` parameters (the other solvers' too).
    NMFResult : What a resumed run returns.

    Examples
    --------
    A checkpoint of a fit with 3 components does not resume one with 4:

    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from nmfsc import CheckpointMismatchError, nmf_euclidean
    >>> V = np.random.default_rng(0).random((20, 30))
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "run.npz"
    ...     res = nmf_euclidean(V, 3, random_state=0, tol=1e-3, checkpoint=path)
    ...     try:
    ...         nmf_euclidean(V, 4, random_state=0, tol=1e-3, checkpoint=path, resume=True)
    ...     except CheckpointMismatchError as error:
    ...         print(error)
    checkpoint '...run.npz' was written for different params:
    {'n_components': 3} there, {'n_components': 4} here. ...
    """


class CheckpointReadError(ValueError):
    """The checkpoint cannot be resumed from: unreadable, of another format
    version, damaged or inconsistent.

    Its message (``checkpoint '<path>' <problem>; <advice>``) advises the
    Python caller (``resume=False``); ``path`` and ``problem`` let another
    caller, such as the command line, give its own advice.

    Attributes
    ----------
    path : pathlib.Path
        The checkpoint file.
    problem : str
        What is wrong, e.g. ``"is damaged: it has no 'iteration' entry"``.
    """

    def __init__(self, path, problem, advice=None):
        super().__init__(f"checkpoint {str(path)!r} {problem}; {advice or _AFRESH}")
        self.path = Path(path)
        self.problem = problem


def fingerprint(V):
    """``"NxT:sha256"`` of a float64 array's bytes (C order); for scipy.sparse
    V, of its canonical CSR form (values as float64, column indices and row
    pointers as int64), so that CSR and CSC of the same matrix agree."""
    if hasattr(V, "nnz") and hasattr(V, "tocsr"):
        csr = V.tocsr()
        digest = hashlib.sha256(b"csr")
        parts = ((csr.data, np.float64), (csr.indices, np.int64), (csr.indptr, np.int64))
        for part, dtype in parts:
            digest.update(np.ascontiguousarray(part, dtype=dtype).data)
        return f"{V.shape[0]}x{V.shape[1]}:{digest.hexdigest()}"
    V = np.ascontiguousarray(V, dtype=np.float64)
    digest = hashlib.sha256(V.data).hexdigest()
    return f"{V.shape[0]}x{V.shape[1]}:{digest}"


def array_digest(X):
    """A short hash of an array (for W_init / H_init in the metadata)."""
    if X is None:
        return None
    X = np.ascontiguousarray(X, dtype=np.float64)
    return hashlib.sha256(X.data).hexdigest()[:16]


def content_digest(arrays):
    """SHA-256 (hex) of every entry of ``arrays`` but ``digest``: name, dtype, shape, bytes."""
    hasher = hashlib.sha256()
    for key in sorted(arrays):
        if key == "digest":
            continue
        value = np.ascontiguousarray(arrays[key])
        hasher.update(f"{key}|{value.dtype.str}|{value.shape}|".encode())
        hasher.update(value.tobytes())
    return hasher.hexdigest()


def check_checkpoint_path(path):
    """Check, before a run starts, that a checkpoint can be written to ``path``.

    Raises ValueError naming the path when it is a folder, when its folder does
    not exist, or when no file can be created in that folder (a temporary file
    is created and removed to find out).
    """
    path = Path(path)
    folder = path.parent
    if path.is_dir():
        raise ValueError(
            f"checkpoint {str(path)!r} is a folder; pass a file path such as "
            f"{str(path / 'run.npz')!r}"
        )
    if not folder.is_dir():
        raise ValueError(
            f"checkpoint {str(path)!r}: its folder {str(folder)!r} does not exist; "
            "create it first, or pass another checkpoint path"
        )
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise ValueError(
            f"checkpoint {str(path)!r}: cannot write in its folder {str(folder)!r} "
            f"({err.strerror or err}); pass a checkpoint path in a writable folder"
        ) from None


def save_checkpoint(path, *, state, meta, iteration, objective, times):
    """Write the run's state to ``path`` atomically (a unique temporary file, then rename)."""
    path = Path(path)
    arrays = {
        "format_version": np.array(FORMAT_VERSION),
        "meta": np.array(json.dumps(meta, sort_keys=True)),
        "iteration": np.array(int(iteration)),
        "objective": np.asarray(objective, dtype=np.float64),
        "times": np.asarray(times, dtype=np.float64),
    }
    for key, value in state.items():
        arrays[f"state_{key}"] = np.asarray(value)
    arrays["digest"] = np.array(content_digest(arrays))
    with atomic_writer(path) as handle:
        np.savez(handle, **arrays)


def load_checkpoint(path, meta, layout, dtype=np.float64):
    """Read a checkpoint, check it against ``meta`` (the current call's) and validate it.

    ``layout`` maps each state entry the solver needs to its shape: ``(N, M)``
    for ``"W"``, ``(M, T)`` for ``"H"``, ``()`` for a step size; ``dtype`` is the
    run's factor dtype (float64, or float32 for float32 data).

    Returns ``(state, iteration, objective, times)``. Raises CheckpointReadError
    (a ValueError) naming the file and the problem when it cannot be read, has
    another format version, is inconsistent or fails its digest, and CheckpointMismatchError
    (a ValueError) when it belongs to other data or settings.
    """
    path = Path(path)
    arrays = _read(path)
    _check_header(path, arrays)
    try:
        saved_meta = json.loads(str(arrays["meta"]))
    except ValueError as err:
        _refuse(path, f"is damaged: its metadata is not valid JSON ({err})")
    if not isinstance(saved_meta, dict):
        _refuse(path, "is damaged: its metadata is not a JSON object")
    _check_meta(path, saved_meta, meta)
    _check_state_entries(path, arrays, layout)
    iteration = _check_histories(path, arrays)
    for key, shape in layout.items():
        _check_state_entry(path, key, arrays[f"state_{key}"], shape, dtype)
    if str(arrays["digest"]) != content_digest(arrays):
        _refuse(
            path,
            "failed its integrity check: its contents do not match the digest saved "
            "with them (the file was edited or damaged after it was written)",
        )
    state = {
        key: (np.array(arrays[f"state_{key}"]) if shape else float(arrays[f"state_{key}"]))
        for key, shape in layout.items()
    }
    objective = [float(x) for x in arrays["objective"]]
    times = [float(x) for x in arrays["times"]]
    return state, iteration, objective, times


def _refuse(path, problem):
    raise CheckpointReadError(path, problem)


def _read(path):
    """Every entry of the file, read (and CRC-checked) now; CheckpointReadError if unreadable."""
    try:
        # The file is opened here, not by np.load, which leaks its own handle when
        # a file that starts like a zip archive is not one.
        with open(path, "rb") as handle:
            if not handle.read(6).startswith((b"PK", b"\x93NUMPY")):
                # else np.load takes it for a pickle, and its message advises loading it
                raise ValueError("it is not an .npz archive")
            handle.seek(0)
            saved = np.load(handle, allow_pickle=False)
            if not isinstance(saved, np.lib.npyio.NpzFile):
                raise ValueError("it holds a single .npy array, not an .npz archive")
            with saved:
                return {key: saved[key] for key in saved.files}
    except Exception as err:  # zip, npy header, CRC or OS errors: all mean "unreadable"
        raise CheckpointReadError(path, f"cannot be read ({type(err).__name__}: {err})") from err


def _check_header(path, arrays):
    """Format version first (an old file is refused as such), then the entries present."""
    if "format_version" not in arrays:
        _refuse(path, "is not an nmfsc checkpoint (it has no 'format_version' entry)")
    try:
        version = int(arrays["format_version"])
    except (TypeError, ValueError):
        _refuse(path, "is damaged: its 'format_version' is not a number")
    if version != FORMAT_VERSION:
        old = " (an older nmfsc's, without an integrity digest)" if version == 1 else ""
        raise CheckpointReadError(
            path,
            f"has format version {version}{old}, this nmfsc writes {FORMAT_VERSION}",
            "pass resume=False to start afresh",
        )
    _check_entries(path, arrays, _HEADER, "")


def _check_state_entries(path, arrays, layout):
    """The solver's state entries: exactly those of ``layout``."""
    wanted = [f"state_{key}" for key in layout]
    _check_entries(path, arrays, wanted, "state_")


def _check_entries(path, arrays, wanted, prefix):
    """Every name of ``wanted`` present; among the names that start with ``prefix``
    (all, for an empty prefix, besides the state), no others."""
    missing = [key for key in wanted if key not in arrays]
    if missing:
        _refuse(path, f"is damaged: it has no {', '.join(map(repr, missing))} entry")
    if prefix:
        extra = sorted(key for key in arrays if key.startswith(prefix) and key not in wanted)
    else:
        extra = sorted(key for key in arrays if not key.startswith("state_") and key not in wanted)
    if extra:
        _refuse(path, f"is damaged: it has unexpected entries {extra}")


def _check_histories(path, arrays):
    """``iteration`` >= 0 and the two histories of iteration + 1 finite values."""
    iteration = arrays["iteration"]
    if iteration.shape != () or not np.issubdtype(iteration.dtype, np.integer):
        _refuse(path, f"is damaged: 'iteration' must be one integer, got {iteration!r}")
    iteration = int(iteration)
    if iteration < 0:
        _refuse(path, f"is damaged: 'iteration' is {iteration}, it must be >= 0")
    for key in ("objective", "times"):
        history = arrays[key]
        if history.dtype != np.float64 or history.ndim != 1:
            _refuse(path, f"is damaged: {key!r} must be a 1-D float64 array")
        if history.size != iteration + 1:
            _refuse(
                path,
                f"is inconsistent: iteration {iteration} but {history.size} {key} values "
                f"(it needs {iteration + 1})",
            )
        if not np.all(np.isfinite(history)):
            _refuse(path, f"is damaged: {key!r} contains NaN or infinity")
    if np.any(arrays["times"] < 0):
        _refuse(path, "is damaged: 'times' contains negative times")
    return iteration


def _check_state_entry(path, key, value, shape, dtype):
    """A factor: ``dtype`` (the run's) of ``shape``, finite, >= 0. A step size:
    one finite float64 > 0."""
    dtype = np.dtype(np.float64 if shape == () else dtype)
    if value.dtype != dtype or value.shape != shape:
        _refuse(
            path,
            f"is damaged: {key} must be {dtype} of shape {shape}, got {value.dtype} of "
            f"shape {value.shape}",
        )
    if not np.all(np.isfinite(value)):
        _refuse(path, f"is damaged: {key} contains NaN or infinity")
    if shape == ():
        if not value > 0:
            _refuse(path, f"is damaged: the step size {key} is {float(value)!r}, it must be > 0")
    elif np.any(value < 0):
        _refuse(path, f"is damaged: {key} has negative entries (min {float(value.min())!r})")


def _check_meta(path, saved, current):
    current = json.loads(json.dumps(current, sort_keys=True))  # as it would be saved
    order = ["solver", "data", "params", "start"]
    for key in order + sorted((set(saved) | set(current)) - set(order)):
        old, new = saved.get(key), current.get(key)
        if key == "start" and (old is None or new is None):
            continue  # an unseeded start cannot be compared
        if old != new:
            what = "data V" if key == "data" else key
            raise CheckpointMismatchError(
                f"checkpoint {str(path)!r} was written for different {what}: "
                f"{old!r} there, {new!r} here. Delete it, use another checkpoint path, "
                "or pass resume=False to start afresh"
            )
