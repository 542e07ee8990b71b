"""Checkpoints of a Dask run: H saved chunk-wise beside the usual ``.npz``.

A checkpoint at ``run.npz`` is

- ``run.npz``: the in-memory solvers' checkpoint
  (:mod:`nmfsc.solvers.checkpoint`: W, the step sizes, the histories, the
  metadata and the digest) without H; its metadata also names H's folder,
  the chunk widths and every chunk file's SHA-256;
- ``run.npz.H-<id>/``: one ``<i>.npy`` per chunk of H, written by the task
  that holds the chunk (a worker, on a cluster: the folder must then be on a
  file system every worker and the client share).

A save writes a new folder, then replaces ``run.npz`` atomically, then
removes the older folders: a run killed while saving leaves the previous
checkpoint whole. Resuming checks ``run.npz`` as the in-memory solvers do
(metadata of this call, digest, shapes, finite non-negative W, step sizes),
then every chunk file against its SHA-256 as it is loaded (on the workers),
so a resumed run continues from the same bits: the same iterates as a run
that was not stopped.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from pathlib import Path

import numpy as np

from nmfsc.dask_backend.chunked import ChunkedRows, compute, persist, task
from nmfsc.solvers.checkpoint import load_checkpoint, save_checkpoint

__all__ = ["load_stack_checkpoint", "save_stack_checkpoint"]


def _save_chunk(h, path):
    np.save(path, np.ascontiguousarray(h), allow_pickle=False)
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _load_chunk(path, digest, shape, dtype):
    raw = Path(path).read_bytes()
    if hashlib.sha256(raw).hexdigest() != digest:
        raise ValueError(
            f"checkpoint chunk {str(path)!r} failed its integrity check (its SHA-256 is not "
            "the one saved with the checkpoint); delete the checkpoint, or pass resume=False"
        )
    h = np.load(path, allow_pickle=False)
    if h.shape != shape or h.dtype != dtype or not np.all(np.isfinite(h)) or np.any(h < 0):
        raise ValueError(
            f"checkpoint chunk {str(path)!r} is damaged: it must be finite, non-negative "
            f"{dtype} of shape {shape}, got {h.dtype} of shape {h.shape}"
        )
    return h


def save_stack_checkpoint(path, *, state, meta, iteration, objective, times):
    """Write H's chunks to a new folder, then the ``.npz`` (atomically), then prune."""
    path = Path(path)
    H = state["H"]
    folder = path.parent / f"{path.name}.H-{uuid.uuid4().hex[:12]}"
    folder.mkdir()
    files = [str(folder / f"{i}.npy") for i in range(len(H.parts))]
    digests = compute(*[task(_save_chunk, h, f) for h, f in zip(H.parts, files, strict=True)])
    stack = {"folder": folder.name, "widths": list(H.widths), "digests": list(digests)}
    rest = {key: value for key, value in state.items() if key != "H"}
    save_checkpoint(
        path,
        state=rest,
        meta={**meta, "H_stack": stack},
        iteration=iteration,
        objective=objective,
        times=times,
    )
    for old in path.parent.glob(f"{path.name}.H-*"):
        if old.name != folder.name and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)


def _saved_stack(path):
    """The ``H_stack`` entry of the saved metadata (None if it has none or is unreadable:
    :func:`~nmfsc.solvers.checkpoint.load_checkpoint` then says what is wrong)."""
    try:
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as saved:
            return json.loads(str(saved["meta"])).get("H_stack")
    except Exception:  # any damage: the full check below reports it
        return None


def load_stack_checkpoint(path, meta, steps, data, shape):
    """``(state, iteration, objective, times)`` of a Dask run's checkpoint (module docstring)."""
    path = Path(path)
    N, M, T = shape
    stack = _saved_stack(path)
    layout = {"W": (N, M), **dict.fromkeys(steps.state_scalars, ())}
    state, iteration, objective, times = load_checkpoint(
        path, {**meta, "H_stack": stack}, layout, dtype=data.dtype
    )
    if stack is None or tuple(stack["widths"]) != tuple(data.widths):
        raise ValueError(
            f"checkpoint {str(path)!r} has no H chunks laid out as V's columns "
            f"{tuple(data.widths)}; rechunk V as it was, delete it, or pass resume=False"
        )
    folder = path.parent / stack["folder"]
    missing = [i for i in range(len(data.widths)) if not (folder / f"{i}.npy").is_file()]
    if missing:  # a bare FileNotFoundError on a worker before
        where = (
            f"the folder {folder.name!r} that holds H's chunks is missing"
            if not folder.is_dir()
            else f"H's chunk file {folder.name}/{missing[0]}.npy is missing "
            f"({len(missing)} of {len(data.widths)})"
        )
        raise ValueError(
            f"checkpoint {str(path)!r}: {where}; restore it, delete the checkpoint, "
            "or pass resume=False"
        )
    parts = [
        task(_load_chunk, str(folder / f"{i}.npy"), d, (M, w), data.dtype)
        for i, (d, w) in enumerate(zip(stack["digests"], data.widths, strict=True))
    ]
    state["H"] = ChunkedRows(persist(*parts), data.widths, data.dtype, M)
    return state, iteration, objective, times
