"""Unpacking a zip or tar archive safely into a new folder, and moving it into place.

Every member that is unpacked is checked first, on every Python version (pooch
applies tarfile's ``data`` filter only on Python 3.12 and later): its name must be
relative and stay inside the folder (no absolute path, drive, or ``..`` part, with
``/`` or ``\\`` separators), and it must be a regular file or a folder (symbolic
and hard links, devices and FIFOs are refused). Files are written by nmfsc itself,
never through an existing link, into a folder that nmfsc has just created.

The folder is unpacked under a unique temporary name beside its target and renamed
into place only when complete, so that another process never sees a half-unpacked
folder; when two processes unpack at once, the first rename wins and the other
process uses the winner's folder (see :func:`install_folder`).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ._fetchers import DataError

__all__ = ["install_folder", "iter_members", "new_sibling_folder", "unpack_members"]

_DRIVE = re.compile(r"^[A-Za-z]:")
_CHUNK = 1 << 20


def member_parts(name: str, archive: Path) -> tuple[str, ...]:
    """The path components of a member's name; DataError if it could leave the folder.

    The folder itself (``"."``, ``"./"``) has no components: ``()``.
    """
    parts = tuple(part for part in re.split(r"[/\\]", name) if part not in ("", "."))
    if name.startswith(("/", "\\")) or _DRIVE.match(name) or ".." in parts:
        raise DataError(
            f"The archive {archive} has a member named {name!r}, which would be unpacked "
            f"outside its folder; nmfsc refused to unpack it. The archive is not the one "
            f"nmfsc expects: check the registry and delete {archive.name}."
        )
    return parts


def _wanted(parts: tuple[str, ...], members: Sequence[str] | None) -> bool:
    """Whether a member is one of ``members`` or lies under one of them (by components)."""
    if members is None:
        return True
    for member in members:
        prefix = tuple(p for p in member.split("/") if p not in ("", "."))
        if parts[: len(prefix)] == prefix:
            return True
    return False


def _refuse_kind(archive: Path, name: str, kind: str):
    raise DataError(
        f"The archive {archive} has a member {name!r} that is a {kind}; nmfsc unpacks only "
        f"regular files and folders, and refused to unpack it. The archive is not the one "
        f"nmfsc expects: check the registry and delete {archive.name}."
    )


def _tar_kind(info: tarfile.TarInfo) -> str:
    if info.issym():
        return "symbolic link"
    if info.islnk():
        return "hard link"
    if info.ischr() or info.isblk():
        return "device"
    if info.isfifo():
        return "FIFO"
    return f"member of tar type {info.type!r}"


def _zip_kind(info: zipfile.ZipInfo) -> str | None:
    """None for a regular file or folder, else what the member is."""
    mode = info.external_attr >> 16
    if stat.S_IFMT(mode) in (0, stat.S_IFREG, stat.S_IFDIR):  # 0: no Unix type recorded
        return None
    return "symbolic link" if stat.S_ISLNK(mode) else f"special file (mode {oct(mode)})"


def iter_members(
    path: Path, members: Sequence[str] | None
) -> Iterator[tuple[tuple[str, ...], Callable | None]]:
    """Yield ``(parts, open)`` for each wanted member of a zip or tar archive.

    ``open()`` returns a binary file object with the member's bytes; it is None for
    a folder. Unsafe names and member kinds raise :class:`DataError`.
    """
    info: Any  # a ZipInfo in the first loop, a TarInfo in the second
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                parts = member_parts(info.filename, path)
                if not parts or not _wanted(parts, members):
                    continue
                kind = _zip_kind(info)
                if kind is not None:
                    _refuse_kind(path, info.filename, kind)
                yield parts, (None if info.is_dir() else (lambda i=info: archive.open(i)))
    else:
        with tarfile.open(path) as archive:
            for info in archive:
                parts = member_parts(info.name, path)
                if not parts or not _wanted(parts, members):
                    continue
                if not (info.isfile() or info.isdir()):
                    _refuse_kind(path, info.name, _tar_kind(info))
                opener = (lambda i=info: archive.extractfile(i)) if info.isfile() else None
                yield parts, opener


def _write_new(path: Path, source) -> str:
    """Write ``source``'s bytes to ``path`` (never through a link); return their sha256."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_BINARY", 0)
    hasher = hashlib.sha256()
    with source, os.fdopen(os.open(path, flags, 0o666), "wb") as out:
        while chunk := source.read(_CHUNK):
            hasher.update(chunk)
            out.write(chunk)
    return hasher.hexdigest()


def unpack_members(path: Path, members: Sequence[str] | None, folder: Path) -> dict[str, str]:
    """Unpack the wanted members of an archive into the new, empty ``folder``.

    Returns ``{relative name with "/": sha256}`` of every file unpacked.
    """
    hashes = {}
    for parts, opener in iter_members(path, members):
        target = folder.joinpath(*parts)
        if opener is None:
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        hashes["/".join(parts)] = _write_new(target, opener())
    return hashes


def new_sibling_folder(target: Path, tag: str) -> Path:
    """Create a new folder with a unique hidden name beside ``target`` and return it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        folder = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(6)}.{tag}"
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise DataError(f"Cannot find a free temporary name beside {target}")


def install_folder(new: Path, target: Path, keep_existing: Callable[[], bool]) -> None:
    """Rename the complete folder ``new`` to ``target``.

    If ``target`` exists (another process was faster, or it is a damaged copy),
    ``keep_existing()`` decides: True keeps it (and ``new`` is deleted), False
    moves it aside, renames ``new`` into place and deletes the old copy.
    """
    for _ in range(10):
        try:
            os.rename(new, target)
            return
        except OSError:
            if not target.exists():
                raise
        if keep_existing():
            shutil.rmtree(new, ignore_errors=True)
            return
        old = new_sibling_folder(target, "old")
        try:
            os.rename(target, old / target.name)
        except FileNotFoundError:
            pass  # another process moved it first: try the rename again
        finally:
            shutil.rmtree(old, ignore_errors=True)
    raise DataError(f"Cannot move the unpacked folder into place at {target}: it keeps changing")
