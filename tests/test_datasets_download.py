"""Downloads through the pooch gate, from a real HTTP server on 127.0.0.1.

The server (Python's http.server in a thread) serves small fixture files made here,
and can misbehave on purpose: send other bytes, or drop the connection half-way.
pooch does real downloads; nothing of pooch is mocked.
"""

import hashlib
import io
import socket
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pooch
import pytest

from nmfsc import datasets
from nmfsc.datasets import DataError, DataWarning, _fetchers
from nmfsc.datasets.__main__ import main


class _Server:
    """Serve files from memory or a folder; ``modes[path]`` can be "wrong" or "drop"."""

    def __init__(self, root=None):
        self.files, self.modes, self.hits, self.root = {}, {}, [], root
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                path = self.path.lstrip("/")
                server.hits.append(path)
                data = server.files.get(path)
                if data is None and server.root is not None and (server.root / path).is_file():
                    data = (server.root / path).read_bytes()
                if data is None:
                    self.send_error(404)
                    return
                mode = server.modes.get(path, "ok")
                if mode == "wrong":
                    data = bytes(255 - b for b in data)
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2] if mode == "drop" else data)
                if mode == "drop":
                    self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def _closed_port_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def _zip_bytes(members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _tar_bytes(members):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


FIXTURES = {
    "faces.zip": _zip_bytes({"s1/1.pgm": b"P5\n2 1\n255\n\x01\x02", "README": b"hello"}),
    "faces.tar.gz": _tar_bytes({"train/face/f1.pgm": b"face", "train/non-face/n1.pgm": b"no"}),
    "raw/image0": np.arange(16, dtype=">f4").tobytes(),
}


def _registry(files, urls=None):
    """Registry text for ``files``: "name sha256 [url]" lines."""
    urls = urls or {}
    return "\n".join(
        f"{name} {hashlib.sha256(data).hexdigest()} {urls.get(name, '')}".rstrip()
        for name, data in files.items()
    )


@pytest.fixture
def server():
    with _Server() as running:
        running.files.update(FIXTURES)
        yield running


def _gate(tmp_path, base_url, registry=None, **kwargs):
    return _fetchers.make_gate(
        tmp_path / "data", base_url, registry or _registry(FIXTURES), **kwargs
    )


def _files_under(folder):
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if p.is_file())


def test_download_verifies_and_unpacks(tmp_path, server):
    gate = _gate(tmp_path, server.url)
    unzipped = gate.fetch("faces.zip", processor=pooch.Unzip(extract_dir="faces"))
    assert sorted(Path(p).name for p in unzipped) == ["1.pgm", "README"]
    untarred = gate.fetch(
        "faces.tar.gz", processor=pooch.Untar(members=["train/face"], extract_dir="tt")
    )
    assert [Path(p).name for p in untarred] == ["f1.pgm"]  # non-faces stay packed
    raw = gate.fetch("raw/image0")
    assert Path(raw).read_bytes() == FIXTURES["raw/image0"]
    assert all(gate.status(name) == "ok" for name in FIXTURES)
    assert sorted(server.hits) == sorted(FIXTURES)


def test_nothing_is_fetched_or_written_when_everything_is_there(tmp_path, server):
    gate = _gate(tmp_path, server.url)
    gate.fetch("faces.zip", processor=pooch.Unzip(extract_dir="faces"))
    gate.fetch("raw/image0")
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "data").rglob("*")}
    offline = _gate(tmp_path, _closed_port_url())
    offline.fetch("faces.zip", processor=pooch.Unzip(extract_dir="faces"))
    offline.fetch("raw/image0")
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "data").rglob("*")} == before
    assert len(server.hits) == 2


def test_corrupt_cached_file_is_reported_and_fetched_again(tmp_path, server):
    gate = _gate(tmp_path, server.url)
    path = Path(gate.fetch("raw/image0"))
    path.write_bytes(b"garbage")
    with pytest.warns(
        DataWarning,
        match=rf"{path}.* is corrupt.*fetched again from "
        rf"{server.url}raw/image0",
    ):
        again = gate.fetch("raw/image0")
    assert Path(again).read_bytes() == FIXTURES["raw/image0"]
    assert server.hits == ["raw/image0", "raw/image0"]


def test_corrupt_archive_is_unpacked_again_after_the_new_download(tmp_path, server):
    gate = _gate(tmp_path, server.url)
    gate.fetch("faces.zip", processor=pooch.Unzip(extract_dir="faces"))
    (tmp_path / "data" / "faces" / "README").write_bytes(b"tampered")
    (tmp_path / "data" / "faces.zip").write_bytes(b"garbage")
    with pytest.warns(DataWarning, match="corrupt"):
        gate.fetch("faces.zip", processor=pooch.Unzip(extract_dir="faces"))
    assert (tmp_path / "data" / "faces" / "README").read_bytes() == b"hello"


def test_corrupt_cached_file_offline_is_not_used(tmp_path, server):
    gate = _gate(tmp_path, server.url)
    path = Path(gate.fetch("raw/image0"))
    path.write_bytes(b"garbage")
    offline = _gate(tmp_path, _closed_port_url())
    with pytest.warns(DataWarning), pytest.raises(DataError) as error:
        offline.fetch("raw/image0")
    message = str(error.value)
    assert f"{path} is corrupt" in message and "could not be fetched again" in message
    assert "It was not used" in message
    assert offline.status("raw/image0") == "corrupt"


def test_wrong_bytes_from_the_server_are_discarded(tmp_path, server):
    server.modes["raw/image0"] = "wrong"
    gate = _gate(tmp_path, server.url)
    with pytest.raises(DataError, match="do not match the registry sha256"):
        gate.fetch("raw/image0")
    assert _files_under(tmp_path / "data") == []
    assert gate.status("raw/image0") == "missing"


def test_interrupted_download_leaves_no_file(tmp_path, server):
    server.modes["faces.tar.gz"] = "drop"
    gate = _gate(tmp_path, server.url)
    with pytest.raises(DataError, match="faces.tar.gz"):
        gate.fetch("faces.tar.gz", processor=pooch.Untar(extract_dir="tt"))
    assert _files_under(tmp_path / "data") == []
    server.modes.clear()  # the next attempt completes
    gate.fetch("faces.tar.gz", processor=pooch.Untar(extract_dir="tt"))
    assert gate.status("faces.tar.gz") == "ok"


def test_server_down_and_not_cached_says_what_to_do(tmp_path):
    down, mirror = _closed_port_url(), _closed_port_url()
    registry = _registry(FIXTURES, {"faces.zip": down + "faces.zip"})
    registry += f"\n#mirror faces.zip {mirror}faces.zip\n"
    gate = _gate(tmp_path, down, registry, env="NMFSC_TEST_UNSET_DIR")
    with pytest.raises(DataError) as error:
        gate.fetch("faces.zip")
    message = str(error.value)
    digest = hashlib.sha256(FIXTURES["faces.zip"]).hexdigest()
    for part in [
        "'faces.zip' is not in",
        down + "faces.zip",
        mirror + "faces.zip",
        "ConnectionError",
        "download it from one of the URLs above and save it as",
        str(tmp_path / "data" / "faces.zip"),
        digest,
        "NMFSC_TEST_UNSET_DIR",
    ]:
        assert part in message
    assert not (tmp_path / "data" / "faces.zip").exists()


def test_a_mirror_is_used_when_the_main_url_fails(tmp_path, server):
    registry = _registry(FIXTURES, {"raw/image0": _closed_port_url() + "raw/image0"})
    registry += f"\n#mirror raw/image0 {server.url}raw/image0\n"
    gate = _gate(tmp_path, server.url, registry)
    assert Path(gate.fetch("raw/image0")).read_bytes() == FIXTURES["raw/image0"]


def test_missing_file_on_the_server_is_reported(tmp_path, server):
    del server.files["raw/image0"]
    gate = _gate(tmp_path, server.url)
    with pytest.raises(DataError, match="HTTPError: 404"):
        gate.fetch("raw/image0")


# --- the real data sets, served locally -----------------------------------------------


@pytest.fixture
def local_copy(require_real_data, tmp_path):
    """A gate on an empty folder whose registry points at a local server of the data."""
    registry = _fetchers.parse_registry(_fetchers.registry_text())
    text = "\n".join(f"{name} {entry.sha256}" for name, entry in registry.entries.items())
    with _Server(root=require_real_data) as running:
        yield _fetchers.make_gate(tmp_path / "data", running.url, text), running


@pytest.mark.realdata
def test_cli_downloads_everything_into_the_data_folder(local_copy, capsys):
    gate, running = local_copy
    assert main(["download"], gate=gate) == 0
    out = capsys.readouterr().out
    assert f"All data sets are in {gate.path}" in out
    assert f"orl: ready in {gate.path / 'orl-faces'}" in out
    assert len(running.hits) == 12
    assert len(list((gate.path / "cbcl" / "train" / "face").iterdir())) == 2429
    assert not (gate.path / "cbcl" / "train" / "non-face").exists()
    assert len(list((gate.path / "orl-faces").rglob("*.pgm"))) == 400
    np.testing.assert_array_equal(datasets.load_orl(gate=gate), datasets.load_orl())
    # A second run downloads nothing.
    assert main(["download"], gate=gate) == 0
    assert len(running.hits) == 12
    assert main(["--check"], gate=gate) == 0


@pytest.mark.realdata
def test_check_and_loaders_catch_damaged_files(local_copy, capsys):
    gate, _ = local_copy
    datasets.download_all(gate=gate)
    image = gate.path / "natural" / "sparsenet-trainset" / "image4"
    image.write_bytes(b"\0" * image.stat().st_size)
    face = gate.path / "cbcl" / "train" / "face" / "face00007.pgm"
    face.write_bytes(face.read_bytes()[:-1])
    assert main(["--check"], gate=gate) == 1
    out = capsys.readouterr().out
    assert "corrupt  natural/sparsenet-trainset/image4" in out
    assert "damaged  cbcl/" in out and f"{face}: differs" in out
    # the manifest written at unpack time finds it; it is unpacked again from the archive
    with pytest.warns(DataWarning, match=rf"damaged: {face} has changed since it was unpacked"):
        datasets.load_cbcl(gate=gate)
    assert face.stat().st_size == 361 + len(b"P5\n19 19\n255\n")
    with pytest.warns(DataWarning, match="image4 is corrupt"):
        datasets.natural_images(gate=gate)  # fetched again from the local server
    assert gate.status("natural/sparsenet-trainset/image4") == "ok"
