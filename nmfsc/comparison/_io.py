"""Atomic file writing: a temporary file in the target's folder, then ``os.replace``.

A reader never sees a half-written file, and an exception while writing leaves
the previous file (if any) as it was and no temporary file behind.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic", "write_figure"]


def write_atomic(path, data) -> Path:
    """Write ``data`` (str or bytes) to ``path`` atomically, creating its folder.

    Parameters
    ----------
    path : str or os.PathLike
    data : str or bytes
        Text is written as UTF-8.

    Returns
    -------
    pathlib.Path
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_figure(fig, base, formats=("png", "pdf"), dpi=150) -> list:
    """Render ``fig`` in memory for each format and write ``base.<format>`` atomically.

    The PDF carries no creation date, so the same figure gives the same bytes.
    """
    paths = []
    for fmt in formats:
        buffer = io.BytesIO()
        metadata = {"CreationDate": None} if fmt == "pdf" else None
        fig.savefig(
            buffer, format=fmt, dpi=dpi, bbox_inches="tight", pad_inches=0.05, metadata=metadata
        )
        paths.append(write_atomic(Path(f"{base}.{fmt}"), buffer.getvalue()))
    return paths
