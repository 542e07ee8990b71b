"""Archives of the registry: what is unpacked where, and whether the unpacked copy is intact.

An archive is verified by its sha256 (see :class:`nmfsc.datasets._fetchers.Gate`);
the files unpacked from it are not hashed in the registry, so they are checked against
the verified archive itself, byte for byte.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pooch

from ._fetchers import Gate, default_gate


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
        """Return a new pooch processor that unpacks it (pooch processors keep state)."""
        kind = pooch.Unzip if self.name.endswith(".zip") else pooch.Untar
        members = None if self.members is None else list(self.members)
        return kind(members=members, extract_dir=self.extract_dir)


def unpacked_mismatches(archive: Archive, gate: Gate | None = None) -> list[str]:
    """Compare the unpacked files of an archive with the archive, byte for byte.

    The archive itself must already be verified (see :meth:`Gate.status`).

    Parameters
    ----------
    archive : Archive
    gate : Gate or None
        The gate to use; :func:`default_gate` when None.

    Returns
    -------
    problems : list of str
        One line per unpacked file that is missing or differs; empty when all match.
    """
    gate = default_gate() if gate is None else gate
    folder = gate.path / archive.extract_dir
    problems = []
    for member, data in _archive_members(gate.path / archive.name, archive.members):
        path = folder / member
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif path.read_bytes() != data:
            problems.append(f"{path}: differs from {archive.name}")
    return problems


def _archive_members(path: Path, members: Sequence[str] | None):
    """Yield (name, bytes) of the regular files of a zip or tar archive."""
    import tarfile
    import zipfile

    def wanted(name):
        return members is None or any(
            os.path.normpath(name).startswith(os.path.normpath(m)) for m in members
        )

    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.is_dir() and wanted(info.filename):
                    yield info.filename, archive.read(info)
    else:
        with tarfile.open(path) as archive:
            for info in archive:
                if info.isfile() and wanted(info.name):
                    yield info.name, archive.extractfile(info).read()
