"""Archives of the registry: what is unpacked where, and whether the unpacked copy is intact.

An archive is verified by its sha256 (see :class:`nmfsc.datasets._fetchers.Gate`);
the files unpacked from it are not hashed in the registry. When nmfsc unpacks an
archive (safely, see :mod:`nmfsc.datasets._unpack`) it writes a manifest,
``.nmfsc-unpacked.json`` in the unpacked folder, with the archive's sha256 and the
sha256 of every file unpacked. Every load checks the unpacked files against it
(hashing a few MB) and unpacks the archive again, with a :class:`DataWarning`, when
a file is missing or differs. A folder without a manifest (unpacked by an older
nmfsc, or by hand) is compared with the archive byte for byte instead, once per
process; nothing is written then (delete it to have it unpacked anew, with one).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nmfsc.atomic import write_atomic

from ._fetchers import DataError, DataWarning, Gate, resolve_gate
from ._unpack import install_folder, iter_members, new_sibling_folder, unpack_members

MANIFEST = ".nmfsc-unpacked.json"
"""Name of the manifest written into every folder nmfsc unpacks."""

# Folders without a manifest found intact by a byte-for-byte comparison with their
# archive in this process: (folder, archive sha256).
_VERIFIED: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Archive:
    """An archive of the registry and the folder beside it that it is unpacked into.

    Attributes
    ----------
    name : str
        The archive's registry name.
    extract_dir : str
        Folder, relative to the data folder, that it is unpacked into.
    members : tuple of str or None
        Archive members to unpack (folders unpack everything under them); all if None.
    """

    name: str
    extract_dir: str
    members: tuple[str, ...] | None = None

    def processor(self):
        """Return the pooch processor that unpacks it (see :class:`Unpacker`)."""
        return Unpacker(self)


class Unpacker:
    """A pooch processor that unpacks an :class:`Archive` safely and keeps it intact.

    Called by :meth:`Gate.fetch` with the verified archive's path and pooch's action.
    For ``"fetch"`` (the archive was already there) an unpacked folder that matches
    its manifest is used as it is; otherwise the archive is unpacked into a new
    temporary folder beside the target, which is renamed into place when complete.

    Parameters
    ----------
    archive : Archive
    """

    def __init__(self, archive: Archive):
        self.archive = archive

    def __call__(self, fname: str, action: str, pup) -> str:
        path = Path(fname)
        target = path.parent / self.archive.extract_dir
        sha = pup.registry.get(self.archive.name, "")
        if action == "fetch" and self._intact(path, target, sha):
            return str(target)
        new = None
        try:
            new = new_sibling_folder(target, "unpacking")
            hashes = unpack_members(path, self.archive.members, new)
            write_manifest(new, self.archive.name, sha, hashes)
            # Another process may have installed an intact copy meanwhile: keep it.
            install_folder(new, target, lambda: manifest_problems(target, sha) == [])
        except OSError as error:
            raise DataError(
                f"Cannot unpack {path} into {target} ({type(error).__name__}: {error}); "
                f"make the data folder writable, or set NMFSC_DATA_DIR to a writable folder"
            ) from error
        finally:
            if new is not None:
                shutil.rmtree(new, ignore_errors=True)
        return str(target)

    def _intact(self, path: Path, target: Path, sha: str) -> bool:
        """Whether ``target`` holds the archive's files as unpacked (DataWarning if not)."""
        problems = manifest_problems(target, sha)
        if problems is None:  # no manifest
            if not target.exists():
                return False
            problems = self._adopt(path, target, sha)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            warnings.warn(
                f"The folder {target} unpacked from {self.archive.name} is damaged: "
                f"{problems[0]}{more}. It is unpacked again from the verified archive.",
                DataWarning,
                stacklevel=4,
            )
        return not problems

    def _adopt(self, path: Path, target: Path, sha: str) -> list[str]:
        """Compare a folder without a manifest with the archive, once per process.

        Nothing is written: loading an intact data set leaves the data folder as it is.
        """
        if (str(target), sha) in _VERIFIED:
            return []
        problems = compare_with_archive(path, self.archive.members, target)[0]
        if not problems:
            _VERIFIED.add((str(target), sha))
        return problems


def write_manifest(folder: Path, archive: str, sha: str, hashes: dict[str, str]) -> None:
    """Write ``folder``'s manifest atomically (a temporary file, then rename)."""
    text = json.dumps({"archive": archive, "sha256": sha, "files": hashes}, sort_keys=True)
    write_atomic(folder / MANIFEST, text)


def manifest_problems(folder: Path, sha: str) -> list[str] | None:
    """Check an unpacked folder against its manifest.

    Returns None when there is no manifest, else one line per problem (an
    unreadable manifest, another archive version, a file missing or changed);
    an empty list means every file matches.
    """
    try:
        text = (folder / MANIFEST).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as error:
        return [f"its manifest cannot be read ({error})"]
    try:
        manifest = json.loads(text)
        files = dict(manifest["files"])
        unpacked_from = manifest["sha256"]
    except (ValueError, KeyError, TypeError):
        return [f"its manifest {folder / MANIFEST} is damaged"]
    if unpacked_from != sha:
        return [f"it was unpacked from another version of the archive (sha256 {unpacked_from})"]
    problems = []
    for name, digest in files.items():
        path = folder / name
        try:
            if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                problems.append(f"{path} has changed since it was unpacked")
        except OSError:
            problems.append(f"{path} is missing")
    return problems


def compare_with_archive(path: Path, members: Sequence[str] | None, folder: Path):
    """Compare unpacked files with the archive, byte for byte.

    Returns ``(problems, hashes)``: one line per file that is missing or differs,
    and the sha256 of every member's bytes (for a manifest).
    """
    problems, hashes = [], {}
    for parts, opener in iter_members(path, members):
        if opener is None:
            continue
        with opener() as source:
            data = source.read()
        name = "/".join(parts)
        hashes[name] = hashlib.sha256(data).hexdigest()
        unpacked = folder.joinpath(*parts)
        if not unpacked.is_file():
            problems.append(f"{unpacked}: missing")
        elif unpacked.read_bytes() != data:
            problems.append(f"{unpacked}: differs from {path.name}")
    return problems, hashes


def unpacked_mismatches(archive: Archive, gate: Gate | None = None) -> list[str]:
    """Compare the unpacked files of an archive with the archive, byte for byte.

    The archive itself must already be verified (see :meth:`Gate.status`).

    Parameters
    ----------
    archive : Archive
    gate : Gate or None
        The gate to use; nmfsc's data folder (``$NMFSC_DATA_DIR`` when set, else the OS
        cache folder) when None.

    Returns
    -------
    problems : list of str
        One line per unpacked file that is missing or differs; empty when all match.
    """
    gate = resolve_gate(gate)
    folder = gate.path / archive.extract_dir
    return compare_with_archive(gate.path / archive.name, archive.members, folder)[0]
