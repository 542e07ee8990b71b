"""Write a file atomically: into a temporary file beside it, then ``os.replace``.

A reader of the path sees either the old file or the complete new one, never a
half-written file, and an interrupted write leaves no partial file behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_writer", "write_atomic"]


@contextlib.contextmanager
def atomic_writer(path, mode="wb"):
    """Open a temporary file in ``path``'s folder; on success, move it to ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        The file to create or replace. Its folder must exist.
    mode : {"wb", "w"}
        Binary or text (UTF-8) mode of the temporary file.

    Yields
    ------
    file : file object
        The open temporary file. It is closed, flushed to disk and renamed to
        ``path`` when the ``with`` block ends normally, and deleted when the
        block raises.

    Examples
    --------
    >>> with atomic_writer("result.npz") as f:  # doctest: +SKIP
    ...     np.savez(f, W=W, H=H)
    """
    path = Path(path)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, _default_mode())  # mkstemp makes it private (0600)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def write_atomic(path, data):
    """Write ``data`` (str or bytes) to ``path`` atomically, creating its folder.

    Parameters
    ----------
    path : str or os.PathLike
    data : str or bytes
        Text is written as UTF-8.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    with atomic_writer(path) as handle:
        handle.write(payload)
    return path


def _default_mode():
    """The permissions ``open(path, "w")`` would give a new file: 0666 less the umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
