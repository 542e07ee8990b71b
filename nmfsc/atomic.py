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
import errno
import json
import os
import re
import secrets
import shutil
import stat
import tempfile
from pathlib import Path

__all__ = [
    "SetJournalError",
    "atomic_writer",
    "check_set",
    "replaced_set",
    "sync_folder",
    "write_atomic",
]


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


def _default_mode(folder=False):
    """The permissions ``open(path, "w")`` (or ``os.mkdir`` with ``folder=True``)
    would give a new file: 0666 (0777) less the umask."""
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if folder else 0o666) & ~umask


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
        with os.scandir(folder) as scan:
            entries = list(scan)
        for entry in entries:
            found = pattern.match(entry.name)
            if found and int(found.group(1)) != os.getpid() and not _alive(int(found.group(1))):
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path)
                    else:
                        os.unlink(entry.path)


# --- a set of files -------------------------------------------------------------------

#: In a folder written by :func:`replaced_set`: the link that names the current
#: set's folder, the prefix of those folders, the lock, the prefixes of staging
#: folders and of temporary links, and, where a set is moved in file by file
#: (no symbolic links), the manifest of the current set and the journal of a
#: replacement under way.
SET_CURRENT = ".nmfsc-set.current"
SET_PREVIOUS = ".nmfsc-set.previous"
VERSION_PREFIX = ".nmfsc-set.v."
SET_LOCK = ".nmfsc-set.lock"
STAGING_PREFIX = ".nmfsc-set.new."
LINK_PREFIX = ".nmfsc-set.link."
SET_MANIFEST = ".nmfsc-set.json"
SET_JOURNAL = ".nmfsc-set.swap.json"

_STATE_PREFIX = ".nmfsc-set."


class SetJournalError(OSError):
    """A journal of a set replacement that cannot be completed (damaged, or not
    one that :func:`replaced_set` writes).

    The message is one line: the journal, why it cannot be used, and what to do.

    Attributes
    ----------
    journal : pathlib.Path
        The journal, ``<folder>/.nmfsc-set.swap.json``.
    reason : str
        Why it cannot be used, e.g. ``"not JSON"``.
    """

    def __init__(self, journal, reason, message=None):
        journal = Path(journal)
        super().__init__(
            message
            or f"{journal} is damaged ({reason}), so the interrupted replacement it records "
            f"cannot be completed and the files of the set in {journal.parent} may mix two "
            f"writes; delete {journal.name} and those files, or write to another folder"
        )
        self.journal = journal
        self.reason = reason


def check_set(folder):
    """Make ``folder`` ready for :func:`replaced_set`, before any work goes into a new set.

    A replacement that a writer killed outright left cut short in ``folder``
    (its journal, ``.nmfsc-set.swap.json``, is still there) is completed now,
    under the folder's lock; a journal that cannot be completed is refused.
    Nothing is written when ``folder`` holds no journal (or does not exist).
    :func:`replaced_set` calls this before it yields; call it yourself to
    refuse a folder before the work that makes the set.

    Parameters
    ----------
    folder : str or os.PathLike

    Raises
    ------
    SetJournalError
        The journal is damaged (not JSON, not readable, or not one that
        :func:`replaced_set` writes), or ``.nmfsc-set.current`` is not a link
        (a copy that followed the links); nothing in ``folder`` is changed.
    OSError
        Completing the replacement failed (a full disk, a missing permission).
    """
    folder = Path(folder)
    current = folder / SET_CURRENT
    if os.path.lexists(current) and not current.is_symlink():
        raise SetJournalError(
            current,
            "a folder, not a link",
            f"{current} is a folder, not nmfsc's link to the current set (a copy of an "
            "output folder made with its links followed, e.g. cp -rL or shutil.copytree); "
            f"delete {SET_CURRENT} and the reports and figures in {folder}, or write to "
            "another folder",
        )
    if not os.path.lexists(folder / SET_JOURNAL):
        return
    _read_journal(folder)  # refuse a damaged journal without touching the folder
    with _locked(folder):
        _finish_journal(folder)


@contextlib.contextmanager
def replaced_set(folder):
    """Write a set of files into a staging folder; on success, make them ``folder``'s set.

    The files written into the yielded staging folder (a hidden folder inside
    ``folder``) replace, when the ``with`` block ends normally, the set the last
    such write left in ``folder``: files of the old set that the new one lacks
    are removed, other files of the folder are left alone.

    Where the file system has symbolic links (POSIX systems: Linux, macOS), the
    swap is one atomic step, so a reader sees the whole old set or the whole
    new one at every instant, a kill at any point included. Each file of the
    set is a link ``NAME -> .nmfsc-set.current/NAME``, and
    ``.nmfsc-set.current`` a link to a hidden folder that holds the set's
    files:

    1. the new files are complete in the staging folder (written there
       atomically by the caller) before anything in ``folder`` changes;
    2. a link is made for each name of the new set (one the old set lacks
       dangles, as for a missing file, until step 3); a file of the set that
       is not yet a link (written by an nmfsc that moved files in one by
       one) is first linked, unchanged, into the current set's folder;
    3. the staging folder becomes a set folder, and ``.nmfsc-set.current`` is
       replaced by a link to it in one rename: the switch;
    4. links of names that only the old set had are removed, and set folders
       other than the current and the previous one (kept for readers that are
       opening a file at the switch).

    A kill before step 3 leaves the old set, after it the new one; leftovers
    (a staging folder, an unused set folder, a dangling link) are removed by
    the next write in ``folder``. Where there are no symbolic links (Windows,
    FAT and exFAT drives), the files are moved in one by one after a journal
    (``.nmfsc-set.swap.json``) records the move: a reader during the move, or
    after a kill in the middle of it, sees files of both sets until the next
    write in ``folder`` completes the journal (:func:`check_set`).

    Concurrent writers each stage their own files and replace the set one at
    a time (an exclusive lock on ``.nmfsc-set.lock`` where the OS has
    ``fcntl``): the last one's set wins, whole. When the block raises, the
    staging folder is removed and ``folder`` is unchanged.

    Parameters
    ----------
    folder : str or os.PathLike
        The folder of the set; made, with its parents, if missing.

    Yields
    ------
    staging : pathlib.Path
        The folder to write the new set into (flat: files only; no name may
        start with ``.nmfsc-set.``).

    Raises
    ------
    SetJournalError
        ``folder`` holds a damaged journal (:func:`check_set`), raised before
        the block runs.
    """
    folder = Path(folder)
    check_set(folder)
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder, prefix=f"{STAGING_PREFIX}{os.getpid()}."))
    handed_over = []  # set once the staging folder belongs to the swap
    try:
        yield staging
        names = sorted(p.name for p in staging.iterdir())
        for name in names:
            if name.startswith(_STATE_PREFIX):
                raise ValueError(f"{staging / name}: a set's file name starts with {_STATE_PREFIX}")
        with _locked(folder):
            if _links_work(folder):
                _swap_by_link(folder, staging, names, handed_over)
            else:
                _swap_by_journal(folder, staging, names, handed_over)
    finally:
        if not handed_over:
            with contextlib.suppress(OSError):
                shutil.rmtree(staging)


# --- the atomic swap: one link names the current set ------------------------------------


def _swap_by_link(folder, staging, names, handed_over):
    """Make ``staging``'s files ``folder``'s set by switching ``.nmfsc-set.current``."""
    _finish_journal(folder)
    with contextlib.suppress(OSError):  # leftovers of earlier writes; in nobody's way
        _tidy(folder)
    current = _target(folder, SET_CURRENT)
    legacy = _manifest(folder)
    for name in sorted(set(names) | set(legacy)):
        current = _adopt(folder, current, name, make_link=name in names)
    if current is not None:
        sync_folder(current)
    (folder / SET_MANIFEST).unlink(missing_ok=True)
    sync_folder(staging)
    version = folder / f"{VERSION_PREFIX}{os.getpid()}.{secrets.token_hex(6)}"
    os.rename(staging, version)
    handed_over.append(True)
    try:
        os.chmod(version, _default_mode(folder=True))  # mkdtemp makes it private (0700)
        sync_folder(folder)
        if current is not None:
            _link(current.name, folder / SET_PREVIOUS)
        _link(version.name, folder / SET_CURRENT)  # the switch
    except BaseException:
        if _target(folder, SET_CURRENT) != version:
            with contextlib.suppress(OSError):
                shutil.rmtree(version)
        raise
    sync_folder(folder)
    with contextlib.suppress(OSError):  # leftovers only: the next write removes them too
        _tidy(folder)


def _adopt(folder, current, name, make_link):
    """Make ``folder/name`` the link ``.nmfsc-set.current/name``; a regular file
    there is first hard-linked (or copied) into the current set's folder, so
    that a reader sees the same file before and after.

    Parameters
    ----------
    folder : pathlib.Path
    current : pathlib.Path or None
        The current set's folder; None when there is none yet (one is made,
        and linked as ``.nmfsc-set.current``, when a file is to go into it).
    name : str
    make_link : bool
        Whether to make the link where ``folder/name`` does not exist (a name
        of the new set) or is not a regular file.

    Returns
    -------
    current : pathlib.Path or None
        The current set's folder.
    """
    path = folder / name
    if _is_set_link(path, name):
        return current
    try:
        regular = stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        regular = False
    if not (regular or make_link):
        return current  # not a file of the old set, and not in the way of the new one
    if regular:
        if current is None:
            current = _new_set_folder(folder)
            _link(current.name, folder / SET_CURRENT)
        if not os.path.lexists(current / name):
            try:
                os.link(path, current / name)
            except OSError:  # no hard links here: a copy
                temp = current / f"{LINK_PREFIX}{os.getpid()}.{secrets.token_hex(6)}.tmp"
                shutil.copy2(path, temp)
                os.replace(temp, current / name)
    _link(f"{SET_CURRENT}/{name}", path)
    return current


def _tidy(folder):
    """Remove what a swap no longer needs (call under the lock): set folders other
    than the current and the previous one, links of names the current set
    lacks, temporary links, and the staging folders of writers that are gone."""
    keep = {_target(folder, SET_CURRENT), _target(folder, SET_PREVIOUS)}
    current = _target(folder, SET_CURRENT)
    with os.scandir(folder) as scan:
        entries = list(scan)
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith(VERSION_PREFIX) and path not in keep:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
        elif entry.name.startswith(LINK_PREFIX):  # made under the lock: none is in use
            path.unlink(missing_ok=True)
        elif _is_set_link(path, entry.name) and (
            current is None or not os.path.lexists(current / entry.name)
        ):
            path.unlink(missing_ok=True)
    _remove_orphans(folder, STAGING_PREFIX, "")


def _new_set_folder(folder):
    """An empty set folder in ``folder``, readable as a new folder is."""
    path = Path(tempfile.mkdtemp(dir=folder, prefix=f"{VERSION_PREFIX}{os.getpid()}."))
    os.chmod(path, _default_mode(folder=True))
    return path


def _link(target, path):
    """Make ``path`` a symbolic link to ``target`` in one rename (replacing what is there)."""
    temp = path.parent / f"{LINK_PREFIX}{os.getpid()}.{secrets.token_hex(6)}.tmp"
    os.symlink(target, temp)
    try:
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _target(folder, name):
    """The set folder that the link ``folder/name`` names, or None (no such link,
    or not one to a set folder)."""
    try:
        target = os.readlink(folder / name)
    except OSError:
        return None
    if not (target.startswith(VERSION_PREFIX) and _plain_name(target)):
        return None
    return folder / target


def _is_set_link(path, name):
    """Whether ``path`` is the link ``.nmfsc-set.current/<name>`` of a set."""
    try:
        return os.readlink(path) == f"{SET_CURRENT}/{name}"
    except OSError:
        return False


def _links_work(folder):
    """Whether symbolic links can be made in ``folder`` (POSIX systems and file
    systems that have them); other errors of the probe are raised."""
    if os.name != "posix":
        return False
    probe = folder / f"{LINK_PREFIX}{os.getpid()}.{secrets.token_hex(6)}.tmp"
    try:
        os.symlink(SET_CURRENT, probe)
    except NotImplementedError:
        return False
    except OSError as error:
        unsupported = {errno.EPERM, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP}
        if error.errno in unsupported:
            return False
        raise
    os.unlink(probe)
    return True


# --- the fallback: a journal, then the files moved in one by one ------------------------


def _swap_by_journal(folder, staging, names, handed_over):
    """Make ``staging``'s files ``folder``'s set by renaming them in, after a journal."""
    _finish_journal(folder)
    old = set(_manifest(folder))
    current = _target(folder, SET_CURRENT)
    if current is not None:  # a set written with links, on a system that had them
        old |= {p.name for p in current.iterdir() if _is_set_link(folder / p.name, p.name)}
    journal = {"staging": staging.name, "files": names, "remove": sorted(old - set(names))}
    write_atomic(folder / SET_JOURNAL, json.dumps(journal))
    handed_over.append(True)
    try:
        _finish_journal(folder)
    except BaseException:
        # Interrupted between two renames: finish them before giving up;
        # if even that fails, the journal stays for the next write.
        with contextlib.suppress(Exception):
            _finish_journal(folder)
        raise


def _read_journal(folder):
    """The journal in ``folder`` as a dict, or None when there is none.

    Raises
    ------
    SetJournalError
        It cannot be read, is not JSON, or is not one that :func:`replaced_set` writes.
    """
    journal = folder / SET_JOURNAL
    try:
        text = journal.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise SetJournalError(journal, f"unreadable: {reason}") from error
    try:
        entry = json.loads(text)
    except ValueError as error:
        raise SetJournalError(journal, "not JSON") from error
    if not (
        isinstance(entry, dict)
        and set(entry) == {"staging", "files", "remove"}
        and isinstance(entry["staging"], str)
        and entry["staging"].startswith(STAGING_PREFIX)
        and _plain_name(entry["staging"])
        and all(
            isinstance(names, list)
            and all(
                isinstance(n, str) and _plain_name(n) and not n.startswith(_STATE_PREFIX)
                for n in names
            )
            for names in (entry["files"], entry["remove"])
        )
    ):
        raise SetJournalError(journal, "not a journal of nmfsc's")
    return entry


def _finish_journal(folder):
    """Complete the replacement a journal in ``folder`` records (call under the lock)."""
    entry = _read_journal(folder)
    if entry is None:
        return
    staging = folder / entry["staging"]
    for name in entry["files"]:
        if os.path.lexists(staging / name):
            os.replace(staging / name, folder / name)
    for name in entry["remove"]:
        if name not in entry["files"]:
            (folder / name).unlink(missing_ok=True)
    if os.path.lexists(folder / SET_CURRENT):  # links made by a write that had them: gone
        for path in folder.iterdir():
            if path.name not in entry["files"] and _is_set_link(path, path.name):
                path.unlink(missing_ok=True)
        for name in (SET_CURRENT, SET_PREVIOUS):
            (folder / name).unlink(missing_ok=True)
        for path in folder.glob(f"{VERSION_PREFIX}*"):
            shutil.rmtree(path, ignore_errors=True)
    write_atomic(folder / SET_MANIFEST, json.dumps({"files": entry["files"]}))
    sync_folder(folder)
    (folder / SET_JOURNAL).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        shutil.rmtree(staging)
    _remove_orphans(folder, STAGING_PREFIX, "")


def _manifest(folder):
    """The names of ``folder``'s set written file by file (empty when none is
    recorded or readable)."""
    try:
        names = json.loads((folder / SET_MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [
        n
        for n in names
        if isinstance(n, str) and _plain_name(n) and not n.startswith(_STATE_PREFIX)
    ]


def _plain_name(name):
    """Whether ``name`` is a file name of its folder (no path, not ``.`` or ``..``)."""
    return name not in ("", ".", "..") and Path(name).name == name


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
