"""Saving and restoring a solver's state, so that a stopped run can continue.

A checkpoint is one ``.npz`` file (no pickles) holding

- ``W``, ``H``: the factors in the solvers' internal units (``V / max(V)``);
- the solver's scalar state (nmf_sc's step sizes ``mu_W``, ``mu_H``);
- ``iteration`` and the ``objective`` and ``times`` histories;
- ``meta``: a JSON text with the solver's name, its parameters (those that
  change the iterates: ``n_components``, sparseness targets, alpha, beta), a
  description of the start (seed or hash of ``W_init``/``H_init``) and a
  fingerprint of V (shape and SHA-256 of its float64 bytes).

Resuming compares ``meta`` with the new call and refuses a checkpoint written
for other data or settings. Stopping options (max_iter, tol, max_time, ...)
may differ: raising max_iter and resuming is the intended use.

Writes are atomic: the file is written to ``path + ".tmp"`` and then renamed
over ``path`` with :func:`os.replace`, so a run killed while saving leaves the
previous checkpoint intact (and at worst a stale ``.tmp``, which is ignored
and overwritten by the next save).

The random generator is not saved: it is used only for the start, which a
resumed run takes from the checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

__all__ = ["CheckpointMismatchError", "fingerprint", "load_checkpoint", "save_checkpoint"]

FORMAT_VERSION = 1


class CheckpointMismatchError(ValueError):
    """The checkpoint was written for different data or solver settings."""


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


def save_checkpoint(path, *, state, meta, iteration, objective, times):
    """Write the run's state to ``path`` atomically (``path.tmp`` then rename)."""
    path = Path(path)
    tmp = Path(str(path) + ".tmp")
    arrays = {
        "format_version": np.array(FORMAT_VERSION),
        "meta": np.array(json.dumps(meta, sort_keys=True)),
        "iteration": np.array(int(iteration)),
        "objective": np.asarray(objective, dtype=np.float64),
        "times": np.asarray(times, dtype=np.float64),
    }
    for key, value in state.items():
        arrays[f"state_{key}"] = np.asarray(value)
    with open(tmp, "wb") as handle:
        np.savez(handle, **arrays)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def load_checkpoint(path, meta):
    """Read a checkpoint and check it against ``meta`` (the current call's).

    Returns ``(state, iteration, objective, times)``. Raises ValueError when
    the file cannot be read and CheckpointMismatchError (a ValueError) when it
    belongs to other data or settings.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as saved:
            version = int(saved["format_version"])
            saved_meta = json.loads(str(saved["meta"]))
            iteration = int(saved["iteration"])
            objective = [float(x) for x in saved["objective"]]
            times = [float(x) for x in saved["times"]]
            state = {
                key[len("state_") :]: saved[key] for key in saved.files if key.startswith("state_")
            }
    except Exception as err:  # zip, key or JSON errors: all mean "unreadable"
        raise ValueError(
            f"checkpoint {str(path)!r} cannot be read ({type(err).__name__}: {err}); "
            "delete it, or pass resume=False to start afresh"
        ) from err
    if version != FORMAT_VERSION:
        raise ValueError(
            f"checkpoint {str(path)!r} has format version {version}, this nmfsc writes "
            f"{FORMAT_VERSION}; pass resume=False to start afresh"
        )
    _check_meta(path, saved_meta, meta)
    if len(objective) != iteration + 1 or len(times) != iteration + 1:
        raise ValueError(
            f"checkpoint {str(path)!r} is inconsistent: iteration {iteration} but "
            f"{len(objective)} objective values; delete it or pass resume=False"
        )
    state = {
        key: (np.array(value, dtype=np.float64) if value.ndim else float(value))
        for key, value in state.items()
    }
    return state, iteration, objective, times


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
