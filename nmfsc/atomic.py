"""Write a file atomically: into a temporary file beside it, then ``os.replace``;
and a set of files together (:func:`replaced_set`).

A reader of the path sees either the old file or the complete new one, never a
half-written file, and an interrupted write leaves no partial file behind: the
temporary file is removed when the write raises (KeyboardInterrupt included),
and one left by a process that was killed outright (SIGKILL, a power cut) is
removed by the next write of that path (its name holds the writer's process
id).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

__all__ = ["atomic_writer", "replaced_set", "sync_folder", "write_atomic"]


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
    prefix = f".{path.name}."
    _remove_orphans(path.parent, prefix, ".tmp")
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f"{prefix}{os.getpid()}.", suffix=".tmp")
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


def _alive(pid):
    """Whether a process with this id is alive (signal 0: process ids are local)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _remove_orphans(folder, prefix, suffix):
    """Remove ``<prefix><pid>.*<suffix>`` files and folders in ``folder`` whose
    process is gone (left by a killed writer)."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)\..*" + re.escape(suffix) + "$")
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            found = pattern.match(entry.name)
            if found and int(found.group(1)) != os.getpid() and not _alive(int(found.group(1))):
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path)
                    else:
                        os.unlink(entry.path)


#: In a folder written by :func:`replaced_set`: the names of its current set,
#: the journal of a replacement under way, the lock, and the staging prefix.
SET_MANIFEST = ".nmfsc-set.json"
SET_JOURNAL = ".nmfsc-set.swap.json"
SET_LOCK = ".nmfsc-set.lock"
STAGING_PREFIX = ".nmfsc-set.new."


@contextlib.contextmanager
def replaced_set(folder):
    """Write a set of files into a staging folder; on success, make them ``folder``'s set.

    The files written into the yielded staging folder (a hidden folder inside
    ``folder``) replace, when the ``with`` block ends normally, the set the last
    such write left in ``folder`` (named in ``.nmfsc-set.json``): files of the
    old set that the new one lacks are removed, other files of the folder are
    left alone. A reader sees the old set or the new one:

    1. the new files are complete in the staging folder (written there
       atomically by the caller) before anything in ``folder`` changes;
    2. a journal naming the renames and the removals is written atomically:
       from here on the new set is committed;
    3. the renames and removals run, the folder is synced, the journal removed.

    A kill before step 2 leaves the old set (and a staging folder that the
    next write removes); a kill during step 3 leaves the journal, which the
    next write in ``folder`` completes first. Concurrent writers each stage
    their own files and replace the set one at a time (an exclusive lock on
    ``.nmfsc-set.lock`` where the OS has ``fcntl``): the last one's set wins,
    whole. When the block raises, the staging folder is removed and ``folder``
    is unchanged.

    Yields
    ------
    staging : pathlib.Path
        The folder to write the new set into (flat: files only).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder, prefix=f"{STAGING_PREFIX}{os.getpid()}."))
    committed = False
    try:
        yield staging
        names = sorted(p.name for p in staging.iterdir())
        with _locked(folder):
            _finish_set(folder)
            old = _manifest(folder)
            journal = {
                "staging": staging.name,
                "files": names,
                "remove": [name for name in old if name not in names],
            }
            write_atomic(folder / SET_JOURNAL, json.dumps(journal))
            committed = True
            try:
                _finish_set(folder)
            except BaseException:
                # Interrupted between two renames: finish them before giving up;
                # if even that fails, the journal stays for the next write.
                with contextlib.suppress(Exception):
                    _finish_set(folder)
                raise
    finally:
        if not committed:
            with contextlib.suppress(OSError):
                shutil.rmtree(staging)


def _manifest(folder):
    """The names of ``folder``'s current set (empty when none is recorded or readable)."""
    try:
        names = json.loads((folder / SET_MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [n for n in names if isinstance(n, str) and _plain_name(n)]


def _plain_name(name):
    """Whether ``name`` is a file name of its folder (no path, not ``.`` or ``..``)."""
    return name not in ("", ".", "..") and Path(name).name == name


def _finish_set(folder):
    """Complete the replacement a journal in ``folder`` records; remove orphaned staging folders."""
    journal = folder / SET_JOURNAL
    if not journal.exists():
        _remove_orphans(folder, STAGING_PREFIX, "")
        return
    entry = json.loads(journal.read_text(encoding="utf-8"))
    staging = folder / entry["staging"]
    for name in entry["files"]:
        if not (_plain_name(name) and _plain_name(entry["staging"])):
            raise ValueError(f"{journal}: {name!r} is not a file of its folder")
        if (staging / name).exists():
            os.replace(staging / name, folder / name)
    for name in entry["remove"]:
        if _plain_name(name):
            (folder / name).unlink(missing_ok=True)
    write_atomic(folder / SET_MANIFEST, json.dumps({"files": entry["files"]}))
    sync_folder(folder)
    journal.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        shutil.rmtree(staging)
    _remove_orphans(folder, STAGING_PREFIX, "")


@contextlib.contextmanager
def _locked(folder):
    """An exclusive lock on ``folder/.nmfsc-set.lock`` (none where there is no fcntl)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(folder / SET_LOCK, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def sync_folder(folder):
    """Flush the folder's entries (the renames) to disk, where the OS allows it."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
