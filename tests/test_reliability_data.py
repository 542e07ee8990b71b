"""Reliability of the data folder (issue 13): archives are unpacked safely (no member
leaves the folder, on any Python), atomically (processes loading at once never read
a half-unpacked folder) and verifiably (a changed unpacked file is found by the
manifest and unpacked again). Small archives are built here; nothing is downloaded.
"""

import hashlib
import io
import os
import re
import stat
import subprocess
import sys
import tarfile
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

import nmfsc
from nmfsc.datasets import DataError, DataWarning
from nmfsc.datasets._archives import MANIFEST, Archive
from nmfsc.datasets._fetchers import make_gate

REPO = Path(nmfsc.__file__).resolve().parent.parent
FILES = {f"faces/f{k:03d}.pgm": hashlib.sha256(str(k).encode()).digest() * 64 for k in range(300)}


def _tar(members, path):
    """A tar.gz of ``members``: name -> bytes (a regular file) or a TarInfo."""
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            if isinstance(data, tarfile.TarInfo):
                archive.addfile(data)
                continue
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def _zip(members, path):
    """A zip of ``members``: name -> bytes, or (bytes, unix mode)."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            if isinstance(data, tuple):
                data, mode = data
                info.external_attr = mode << 16
            archive.writestr(info, data)
    return path


def _gate(folder, archive_path):
    digest = hashlib.sha256(archive_path.read_bytes()).hexdigest()
    return make_gate(folder, registry=f"{archive_path.name} {digest} http://127.0.0.1:9/x")


def _fetch(gate, name, extract_dir="out"):
    return Path(gate.fetch(name, processor=Archive(name, extract_dir).processor()))


def _link(name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def _device(name):
    info = tarfile.TarInfo(name)
    info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
    return info


MALICIOUS = {
    "tar ..": ("t.tar.gz", {"ok.txt": b"x", "../evil.txt": b"evil"}),
    "tar deep ..": ("t.tar.gz", {"a/../../evil.txt": b"evil"}),
    "tar absolute": ("t.tar.gz", {"/tmp/nmfsc-evil-abs.txt": b"evil"}),
    "tar backslash ..": ("t.tar.gz", {"..\\evil.txt": b"evil"}),
    "tar symlink out": ("t.tar.gz", {"link": _link("link", "/"), "link/evil.txt": b"evil"}),
    "tar symlink": ("t.tar.gz", {"link": _link("link", "../evil.txt")}),
    "tar hardlink": ("t.tar.gz", {"hard": _link("hard", "/etc/passwd", tarfile.LNKTYPE)}),
    "tar device": ("t.tar.gz", {"dev": _device("dev")}),
    "zip ..": ("z.zip", {"ok.txt": b"x", "../evil.txt": b"evil"}),
    "zip absolute": ("z.zip", {"/tmp/nmfsc-evil-abs.txt": b"evil"}),
    "zip drive": ("z.zip", {"C:/evil.txt": b"evil"}),
    "zip backslash ..": ("z.zip", {"..\\..\\evil.txt": b"evil"}),
    "zip symlink": ("z.zip", {"link": (b"../evil.txt", stat.S_IFLNK | 0o777)}),
}


@pytest.mark.parametrize("case", sorted(MALICIOUS))
def test_malicious_archives_are_refused_and_write_nothing_outside(tmp_path, case):
    name, members = MALICIOUS[case]
    folder = tmp_path / "data"
    folder.mkdir()
    make = _zip if name.endswith(".zip") else _tar
    archive = make(members, folder / name)
    gate = _gate(folder, archive)
    with pytest.raises(DataError, match=r"refused to unpack it") as caught:
        _fetch(gate, name)
    assert "\n" not in str(caught.value)
    assert sorted(p.name for p in folder.iterdir()) == [name]  # no folder, no leftovers
    assert not (tmp_path / "evil.txt").exists()
    assert not Path("/tmp/nmfsc-evil-abs.txt").exists()


def test_safe_members_are_unpacked_with_a_manifest(tmp_path):
    archive = _tar({"./": _dir("./"), **FILES, "faces/./x/y.txt": b"y"}, tmp_path / "a.tar.gz")
    target = _fetch(_gate(tmp_path, archive), archive.name)
    assert (target / "faces" / "f007.pgm").read_bytes() == FILES["faces/f007.pgm"]
    assert (target / "faces/x/y.txt").read_bytes() == b"y"
    assert (target / MANIFEST).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tar.gz", "out"]


def _dir(name):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    return info


@pytest.mark.parametrize("kind", ["same-size edit", "deleted", "manifest damaged", "no manifest"])
def test_changed_unpacked_file_is_found_and_unpacked_again(tmp_path, kind):
    archive = _zip(FILES, tmp_path / "a.zip")
    gate = _gate(tmp_path, archive)
    target = _fetch(gate, archive.name)
    face = target / "faces" / "f042.pgm"
    if kind == "same-size edit":
        face.write_bytes(bytes(255 - b for b in face.read_bytes()))
        match = "f042.pgm has changed since it was unpacked"
    elif kind == "deleted":
        face.unlink()
        match = "f042.pgm is missing"
    elif kind == "manifest damaged":
        (target / MANIFEST).write_text("{")
        match = "manifest .* is damaged"
    else:  # unpacked by an older nmfsc: compared with the archive byte for byte
        (target / MANIFEST).unlink()
        face.write_bytes(b"\0" * len(FILES["faces/f042.pgm"]))
        match = "f042.pgm: differs from a.zip"
    with pytest.warns(
        DataWarning, match=rf"{re.escape(str(target))} unpacked from a.zip is damaged: .*{match}"
    ):
        _fetch(gate, archive.name)
    assert face.read_bytes() == FILES["faces/f042.pgm"]
    assert (target / MANIFEST).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zip", "out"]


def test_intact_folder_is_used_as_it_is(tmp_path):
    archive = _zip(FILES, tmp_path / "a.zip")
    gate = _gate(tmp_path, archive)
    target = _fetch(gate, archive.name)
    before = {p: p.stat().st_mtime_ns for p in target.rglob("*")}
    _fetch(gate, archive.name)
    assert {p: p.stat().st_mtime_ns for p in target.rglob("*")} == before
    (target / MANIFEST).unlink()  # an older nmfsc's folder: checked, and nothing written
    _fetch(gate, archive.name)
    assert not (target / MANIFEST).exists()


def test_a_new_archive_version_is_unpacked_again(tmp_path):
    archive = _zip(FILES, tmp_path / "a.zip")
    target = _fetch(_gate(tmp_path, archive), archive.name)
    _zip({**FILES, "faces/f000.pgm": b"new"}, archive)
    with pytest.warns(DataWarning, match="unpacked from another version of the archive"):
        _fetch(_gate(tmp_path, archive), archive.name)
    assert (target / "faces/f000.pgm").read_bytes() == b"new"


_LOADER = textwrap.dedent(
    """
    import hashlib, sys, time
    from pathlib import Path
    from nmfsc.datasets._archives import Archive
    from nmfsc.datasets._fetchers import make_gate

    folder, name, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    gate = make_gate(folder, registry=f"{name} {digest} http://127.0.0.1:9/x")
    while not go.exists():
        time.sleep(0.001)
    target = Path(gate.fetch(name, processor=Archive(name, "out").processor()))
    files = sorted((target / "faces").iterdir())
    assert len(files) == 300, len(files)
    for k, path in enumerate(files):
        assert path.read_bytes() == hashlib.sha256(str(k).encode()).digest() * 64, path
    """
)


@pytest.mark.parametrize("kind", ["tar.gz"])  # zip: the same unpacking; each run costs ~10 s
def test_three_processes_loading_into_a_fresh_folder_all_succeed(tmp_path, kind):
    folder = tmp_path / "data"
    folder.mkdir()
    name = f"a.{kind}"
    (_zip if kind == "zip" else _tar)(FILES, folder / name)
    go = tmp_path / "go"
    paths = [str(REPO), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _LOADER, str(folder), name, str(go)],
            env=env,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    time.sleep(0.5)  # let them start and wait together
    go.touch()
    errors = []
    for child in children:
        try:
            _, err = child.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()
            _, err = child.communicate()
        if child.returncode != 0:
            errors.append(err.decode()[-1500:])
    assert errors == []
    assert sorted(p.name for p in folder.iterdir()) == [name, "out"]  # no temporary folders
