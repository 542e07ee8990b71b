"""Tests of the data loaders, their preprocessing, the registry and the command line.

Tests marked ``realdata`` read the real files from ``$NMFSC_DATA_DIR`` (see
conftest.py) and recompute entries of the data matrices by hand from the raw bytes.
"""

import hashlib
import io
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pooch
import pytest
import scipy.io

from nmfsc import datasets
from nmfsc.datasets import _fetchers, _preprocess, _readers, catalog
from nmfsc.datasets.__main__ import main

ROOT = Path(__file__).resolve().parent.parent
SEED = 20040101

# The registry hashes that issue 3 names; natural images: SOURCES.md of the data.
EXPECTED_HASHES = {
    "att_faces.zip": "1d17e0a17a34a087fd192b962fd5d73c8aaf07b934cd0d8d4453dbd73a0c00be",
    "face.train.tar.gz": "c95748cd26d20068c823ec16f313adf277edba394be91b42dd39aaa84dbd06ff",
    "natural/sparsenet-trainset/image0": "d0cb9e56a94f324db187c6e5ca87e660ee2fd8790c950a3fd6b89860d975d818",  # noqa: E501
    "natural/sparsenet-trainset/image9": "a3d945fcaa66d5bef6e2a0151d3d86818f4f934fec1a576aa20360c3aacbab90",  # noqa: E501
}


# --- registry ---------------------------------------------------------------------


def test_root_registry_is_the_package_registry():
    root = (ROOT / "data_registry.txt").read_bytes()
    package = (ROOT / "nmfsc" / "datasets" / "data_registry.txt").read_bytes()
    assert root == package
    assert _fetchers.registry_text().encode("utf-8") == package


def test_registry_is_valid_for_pooch_and_names_every_file():
    registry = _fetchers.parse_registry(_fetchers.registry_text())
    pup = pooch.create(path="unused", base_url="")
    pup.load_registry(io.StringIO(_fetchers.registry_text()))
    assert pup.registry == {name: e.sha256 for name, e in registry.entries.items()}
    assert pup.urls == {name: e.urls[0] for name, e in registry.entries.items()}
    wanted = {name for d in catalog.DATASETS.values() for name in d.files}
    assert set(registry.entries) == wanted
    assert len(registry.entries) == 12
    for name, digest in EXPECTED_HASHES.items():
        assert registry.entries[name].sha256 == digest
    for entry in registry.entries.values():
        assert len(entry.urls) == 2 and all(u.startswith("https://") for u in entry.urls)
    assert set(registry.origins) == set(catalog.DATASETS)


def test_registry_parser_reads_mirrors_and_rejects_bad_lines():
    a_hash, b_hash = "ab" * 32, "CD" * 32
    text = (
        "# a comment with an apostrophe: don't\n"
        f"a.bin {a_hash} http://x/a.bin\n"
        "#mirror a.bin http://y/a.bin\n"
        f"b.bin {b_hash}\n"
        "#origin set1 http://z/orig.zip\n"
    )
    registry = _fetchers.parse_registry(text, base_url="http://base/")
    assert registry.entries["a.bin"].urls == ("http://x/a.bin", "http://y/a.bin")
    assert registry.entries["b.bin"].urls == ("http://base/b.bin",)
    assert registry.entries["b.bin"].sha256 == "cd" * 32
    assert registry.origins == {"set1": ("http://z/orig.zip",)}
    with pytest.raises(ValueError, match="line 1"):
        _fetchers.parse_registry("a.bin\n")
    with pytest.raises(ValueError, match="line 2: 'md5:abc' is not a sha256"):
        _fetchers.parse_registry(f"a.bin {a_hash}\nb.bin md5:abc\n")
    with pytest.raises(ValueError, match="not in the registry"):
        _fetchers.parse_registry("#mirror c.bin http://y/c.bin\n")


def test_data_dir_follows_the_environment_variable(monkeypatch, tmp_path):
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path))
    assert datasets.data_dir() == tmp_path
    monkeypatch.delenv(datasets.ENV_VAR)
    assert datasets.data_dir() == Path(pooch.os_cache("nmfsc"))


def test_unknown_file_is_a_clear_error(tmp_path):
    gate = _fetchers.make_gate(tmp_path)
    with pytest.raises(datasets.DataError, match="'nope.zip' is not in the nmfsc data registry"):
        gate.fetch("nope.zip")


# --- readers ------------------------------------------------------------------------


def _pgm(width, height, pixels, header=None):
    header = header or f"P5\n{width} {height}\n255\n".encode()
    return header + bytes(pixels)


def test_parse_pgm_is_row_major_and_upright():
    image = _readers.parse_pgm(_pgm(3, 2, [1, 2, 3, 4, 5, 6]))
    assert image.dtype == np.uint8
    np.testing.assert_array_equal(image, [[1, 2, 3], [4, 5, 6]])
    commented = _readers.parse_pgm(b"P5\n# made by hand\n2 1\n255\n\x07\x08")
    np.testing.assert_array_equal(commented, [[7, 8]])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"P2\n2 1\n255\n1 2", "not a binary"),
        (_pgm(3, 2, range(5)), "should hold 6 pixel bytes, found 5"),
        # a line-ending conversion (LF -> CR LF) lengthens the file
        (_pgm(3, 2, [10, 2, 3, 4, 5, 6]).replace(b"\n", b"\r\n"), "found 8"),
        (b"P5\n1 1\n65535\n\x00\x00", "maxval"),
    ],
)
def test_parse_pgm_rejects_damaged_files(data, message):
    with pytest.raises(ValueError, match=message):
        _readers.parse_pgm(data)


def test_read_pgms_names_the_damaged_file(tmp_path):
    good, bad = tmp_path / "good.pgm", tmp_path / "bad.pgm"
    good.write_bytes(_pgm(2, 2, [1, 2, 3, 4]))
    bad.write_bytes(_pgm(2, 2, [1, 2, 3]))
    with pytest.raises(datasets.DataError, match=r"bad\.pgm.*found 3.*delete it"):
        _readers.read_pgms([good, bad], (2, 2), "delete it")
    with pytest.raises(datasets.DataError, match=r"good\.pgm is 2 x 2, expected 3 x 2"):
        _readers.read_pgms([good], (2, 3), "")
    with pytest.raises(datasets.DataError, match="missing.pgm"):
        _readers.read_pgms([tmp_path / "missing.pgm"], (2, 2), "")


def test_read_float32_image_is_big_endian_row_major(tmp_path):
    path = tmp_path / "image0"
    path.write_bytes(struct.pack(">6f", 0.5, -1.0, 2.0, 3.0, 4.0, -0.25))
    image = _readers.read_float32_image(path, (2, 3))
    assert image.dtype == np.float64
    np.testing.assert_array_equal(image, [[0.5, -1.0, 2.0], [3.0, 4.0, -0.25]])
    with pytest.raises(datasets.DataError, match="holds 6 float32 values, expected 2 x 2"):
        _readers.read_float32_image(path, (2, 2))


def _small_images(n=3, side=24):
    return np.random.default_rng(0).standard_normal((n, side, side))


def test_images_mat_layouts_give_the_same_images(tmp_path):
    images = _small_images()
    three_d = tmp_path / "images3d.mat"
    two_d = tmp_path / "images2d.mat"
    # Olshausen's current file: IMAGES(:,:,k) is image k
    scipy.io.savemat(three_d, {"IMAGES": np.moveaxis(images, 0, 2)})
    # Hoyer's older layout: image k is reshape(IMAGES(:,k), N, N)', a row-major column
    scipy.io.savemat(two_d, {"IMAGES": images.reshape(len(images), -1).T})
    np.testing.assert_array_equal(_readers.read_images_mat(three_d), images)
    np.testing.assert_array_equal(_readers.read_images_mat(two_d), images)
    V3 = datasets.load_natural(n_patches=30, patch_size=4, random_state=1, path=three_d)
    V2 = datasets.load_natural(n_patches=30, patch_size=4, random_state=1, path=str(two_d))
    assert V3.shape == (32, 30)
    np.testing.assert_array_equal(V3, V2)


def test_images_mat_errors_are_clear(tmp_path):
    other = tmp_path / "other.mat"
    scipy.io.savemat(other, {"X": np.zeros((4, 4))})
    with pytest.raises(datasets.DataError, match="no variable named IMAGES"):
        _readers.read_images_mat(other)
    oblong = tmp_path / "oblong.mat"
    scipy.io.savemat(oblong, {"IMAGES": np.zeros((10, 3))})
    with pytest.raises(datasets.DataError, match=r"shape \(10, 3\)"):
        _readers.read_images_mat(oblong)
    junk = tmp_path / "junk.mat"
    junk.write_bytes(b"not a mat file at all" * 10)
    with pytest.raises(datasets.DataError, match="Cannot read"):
        _readers.read_images_mat(junk)


# --- preprocessing on hand-made inputs ------------------------------------------------


def _halve_by_hand(image):
    """Slow reference: out[k] = (in[2k-1] + 3 in[2k] + 3 in[2k+1] + in[2k+2]) / 8 per
    axis, indices clamped to the image (MATLAB's mirrored edges repeat the edge pixel)."""
    h, w = image.shape
    weights = {-1: 1, 0: 3, 1: 3, 2: 1}
    out = np.zeros((h // 2, w // 2))
    for i in range(h // 2):
        for j in range(w // 2):
            total = 0.0
            for di, wi in weights.items():
                for dj, wj in weights.items():
                    r = min(max(2 * i + di, 0), h - 1)
                    c = min(max(2 * j + dj, 0), w - 1)
                    total += wi * wj * float(image[r, c])
            out[i, j] = total / 64
    return out


def test_resize_matrix_halving_is_1331_with_repeated_edges():
    expected = (
        np.array(
            [
                [4, 3, 1, 0, 0, 0],
                [0, 1, 3, 3, 1, 0],
                [0, 0, 0, 1, 3, 4],
            ]
        )
        / 8
    )
    np.testing.assert_allclose(
        datasets._preprocess.resize_matrix(6, 0.5), expected, rtol=0, atol=1e-15
    )


def test_imresize_halving_matches_a_hand_computation():
    image = np.arange(4 * 6, dtype=float).reshape(4, 6) ** 2
    # top-left: rows (0, 0, 1, 2) x cols (0, 0, 1, 2) weighted [1,3,3,1]/8 each way
    rows = np.array([1, 3, 3, 1]) / 8
    block = image[np.ix_([0, 0, 1, 2], [0, 0, 1, 2])]
    halved = _preprocess.imresize_bilinear(image, 0.5)
    assert halved.shape == (2, 3)
    assert halved[0, 0] == pytest.approx(rows @ block @ rows, rel=1e-14)
    np.testing.assert_allclose(halved, _halve_by_hand(image), rtol=1e-14)
    batch = np.stack([image, 2 * image])
    np.testing.assert_allclose(_preprocess.imresize_bilinear(batch, 0.5)[1], 2 * halved)


@pytest.mark.parametrize(("n_in", "scale"), [(112, 0.5), (92, 0.5), (7, 0.5), (5, 2.0), (10, 0.3)])
def test_resize_matrix_rows_are_averages(n_in, scale):
    R = _preprocess.resize_matrix(n_in, scale)
    assert R.shape == (int(np.ceil(n_in * scale)), n_in)
    assert np.all(R >= 0)
    np.testing.assert_allclose(R.sum(axis=1), 1.0, rtol=1e-14)


def test_imresize_halving_agrees_with_pillow_away_from_the_edges():
    # Pillow's bilinear resize also widens the triangle when shrinking, but renormalises
    # the weights at the edges instead of repeating the edge pixel.
    Image = pytest.importorskip("PIL.Image")
    image = np.random.default_rng(3).uniform(0, 255, size=(112, 92)).astype(np.float32)
    pil = np.asarray(Image.fromarray(image).resize((46, 56), Image.BILINEAR))
    ours = _preprocess.imresize_bilinear(image, 0.5)
    np.testing.assert_allclose(ours[1:-1, 1:-1], pil[1:-1, 1:-1], rtol=1e-5)
    assert not np.allclose(ours[0], pil[0], rtol=1e-5)


def test_cbcl_preprocess_by_hand():
    X = np.array([[0.0, 255.0], [100.0, 50.0]])
    centred = X - 101.25
    rms = np.sqrt(np.mean(centred**2))
    expected = np.maximum(np.clip((centred / rms + 0.25) * 0.25, 0, 1), 1e-4)
    V = _preprocess.cbcl_preprocess(X)
    np.testing.assert_allclose(V, expected, rtol=1e-15)
    assert V[0, 0] == 1e-4  # (0 - 101.25) / rms < -0.25: clipped to 0, floored
    assert V[0, 1] == pytest.approx(((255 - 101.25) / rms + 0.25) * 0.25)


def test_orl_preprocess_by_hand():
    X = np.array([[10.0, 3.0], [20.0, 3.0], [30.0, 5.0]])
    V = _preprocess.orl_preprocess(X)
    expected = np.array([[1e-4, 1e-4], [127.5, 1e-4], [255.0, 255.0]]) / 10000
    np.testing.assert_allclose(V, expected, rtol=1e-15)
    with pytest.raises(ValueError, match=r"images \[1\] are constant"):
        _preprocess.orl_preprocess(np.array([[1.0, 2.0], [3.0, 2.0]]))


def test_on_off_by_hand():
    X = np.array([[1.0, -2.0, 0.0], [0.5, 0.5, -0.5]])
    V = _preprocess.on_off(X)
    raw = np.array(
        [
            [1.0, 1e-4, 1e-4],
            [0.5, 0.5, 1e-4],  # ON
            [1e-4, 2.0, 1e-4],
            [1e-4, 1e-4, 0.5],
        ]
    )  # OFF
    expected = raw / np.sqrt(np.mean(raw**2, axis=1, keepdims=True))
    np.testing.assert_allclose(V, expected, rtol=1e-15)


def test_sample_patches_positions_split_and_pixel_order():
    images = np.arange(10 * 30 * 30, dtype=float).reshape(10, 30, 30)
    X, positions = _preprocess.sample_patches(images, 25, 5, np.random.default_rng(0))
    assert X.shape == (25, 25)
    # floor(25 / 10) = 2 from each of the first nine images, the other 7 from the last
    np.testing.assert_array_equal(np.bincount(positions[:, 0]), [2] * 9 + [7])
    for j, (k, r, c) in enumerate(positions):
        np.testing.assert_array_equal(X[:, j].reshape(5, 5), images[k, r : r + 5, c : c + 5])
    X2, positions2 = _preprocess.sample_patches(images, 25, 5, np.random.default_rng(0))
    np.testing.assert_array_equal(positions, positions2)
    with pytest.raises(ValueError, match="at least the number of images"):
        _preprocess.sample_patches(images, 9, 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="too large"):
        _preprocess.sample_patches(images, 10, 22, np.random.default_rng(0))


def test_sample_patches_keep_4_pixels_from_top_left_and_5_from_bottom_right():
    images = np.zeros((1, 20, 20))
    _, positions = _preprocess.sample_patches(images, 5000, 6, np.random.default_rng(1))
    # MATLAB: r = BUFF + ceil((20 - 6 - 8) * rand), 1-based, so 0-based 4 .. 9
    assert set(positions[:, 1]) == set(range(4, 10))
    assert set(positions[:, 2]) == set(range(4, 10))


def test_load_natural_accepts_seeds_and_generators(tmp_path):
    mat = tmp_path / "IMAGES.mat"
    scipy.io.savemat(mat, {"IMAGES": np.moveaxis(_small_images(), 0, 2)})

    def load(state):
        return datasets.load_natural(n_patches=12, patch_size=3, random_state=state, path=mat)

    np.testing.assert_array_equal(load(5), load(5))
    np.testing.assert_array_equal(load(5), load(np.random.default_rng(5)))
    assert not np.array_equal(load(5), load(6))


# --- real data --------------------------------------------------------------------------


def _snapshot(folder):
    """Every path under a folder with its size and modification time."""
    return {
        path: (stat.st_size, stat.st_mtime_ns)
        for path in [folder, *sorted(Path(folder).rglob("*"))]
        for stat in [os.stat(path)]
    }


@pytest.fixture(scope="module")
def real(require_real_data):
    """Load everything once; record the data folder before and after."""
    folder = require_real_data
    before = _snapshot(folder)
    loaded = {
        "folder": folder,
        "cbcl": datasets.load_cbcl(),
        "cbcl_images": datasets.cbcl_images(),
        "orl": datasets.load_orl(),
        "natural": datasets.load_natural(random_state=SEED),
        "natural_images": datasets.natural_images(),
    }
    loaded["before"], loaded["after"] = before, _snapshot(folder)
    return loaded


@pytest.mark.realdata
def test_loading_writes_nothing_into_the_data_folder(real):
    assert real["after"] == real["before"]


@pytest.mark.realdata
def test_registry_hashes_match_the_files(real):
    folder = real["folder"]
    registry = _fetchers.parse_registry(_fetchers.registry_text())
    for name, entry in registry.entries.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == entry.sha256, name
    sums = folder / "SHA256SUMS"  # the staged copy's own list, where there is one
    if sums.is_file():
        listed = dict(line.split()[::-1] for line in sums.read_text().splitlines() if line)
        for name, entry in registry.entries.items():
            assert listed[name] == entry.sha256


@pytest.mark.realdata
def test_shapes_types_and_ranges(real):
    cbcl, orl, natural = real["cbcl"], real["orl"], real["natural"]
    assert cbcl.shape == (361, 2429) and cbcl.dtype == np.float64
    assert cbcl.min() == 1e-4 and cbcl.max() <= 1.0
    assert orl.shape == (2576, 400) and orl.dtype == np.float64
    np.testing.assert_allclose(orl.min(axis=0), 1e-8)
    np.testing.assert_allclose(orl.max(axis=0), 0.0255, rtol=1e-15)
    assert natural.shape == (288, 10000) and natural.dtype == np.float64
    assert natural.min() > 0
    np.testing.assert_allclose(np.sqrt(np.mean(natural**2, axis=1)), 1.0, rtol=1e-12)
    images = real["natural_images"]
    assert images.shape == (10, 512, 512)
    # SOURCES.md: every image has zero mean; image 0 has variance 0.0994
    np.testing.assert_allclose(images.mean(axis=(1, 2)), 0, atol=1e-3)
    assert images[0].var() == pytest.approx(0.0994, abs=5e-4)


def _pgm_pixels(path, width, height):
    data = Path(path).read_bytes()
    header = f"P5\n{width} {height}\n255\n".encode()
    assert data.startswith(header) and len(data) == len(header) + width * height
    return data[len(header) :]


@pytest.mark.realdata
def test_cbcl_entries_by_hand_from_the_pgm_bytes(real):
    folder = real["folder"] / "cbcl" / "train" / "face"
    raw = [_pgm_pixels(folder / f"face{j:05d}.pgm", 19, 19) for j in range(1, 2430)]
    values = np.frombuffer(b"".join(raw), dtype=np.uint8).astype(float)
    mean = values.mean()
    rms = np.sqrt(np.mean((values - mean) ** 2))
    V, images = real["cbcl"], real["cbcl_images"]
    # A published check of the first pixels of face00001 (see SOURCES.md).
    assert list(raw[0][:7]) == [104, 122, 142, 159, 162, 158, 167]
    for j, row, col in [(0, 0, 0), (0, 9, 3), (1, 18, 18), (2428, 4, 15), (1000, 12, 0)]:
        grey = raw[j][19 * row + col]
        expected = max(min((grey - mean) / rms * 0.25 + 0.0625, 1.0), 0.0)
        assert V[19 * row + col, j] == pytest.approx(max(expected, 1e-4), rel=1e-12)
        assert images[j, row, col] == grey
        assert V[:, j].reshape(datasets.CBCL_SHAPE)[row, col] == V[19 * row + col, j]


@pytest.mark.realdata
def test_orl_columns_by_hand_from_the_pgm_bytes(real):
    folder = real["folder"] / "orl-faces"
    V = real["orl"]
    for column, (subject, shot) in [(0, (1, 1)), (10, (2, 1)), (137, (14, 8)), (399, (40, 10))]:
        pixels = _pgm_pixels(folder / f"s{subject}" / f"{shot}.pgm", 92, 112)
        image = np.frombuffer(pixels, dtype=np.uint8).reshape(112, 92)  # upright
        halved = _halve_by_hand(image)
        halved = (halved - halved.min()) * 255 / (halved - halved.min()).max()
        expected = np.maximum(halved, 1e-4) / 10000
        np.testing.assert_allclose(
            V[:, column].reshape(datasets.ORL_SHAPE), expected, rtol=1e-12, atol=1e-17
        )


@pytest.mark.realdata
def test_natural_rows_by_hand_from_the_float32_bytes(real):
    folder = real["folder"] / "natural" / "sparsenet-trainset"
    raw = [(folder / f"image{k}").read_bytes() for k in range(10)]
    _, positions = _preprocess.sample_patches(
        real["natural_images"], 10000, 12, np.random.default_rng(SEED)
    )
    np.testing.assert_array_equal(np.bincount(positions[:, 0]), [1000] * 10)
    assert positions[:, 1:].min() >= 4 and positions[:, 1:].max() <= 512 - 12 - 5
    V = real["natural"]
    for channel, (a, b) in [(0, (0, 0)), (0, (5, 7)), (1, (11, 11)), (1, (3, 9))]:
        x = np.array(
            [
                struct.unpack_from(">f", raw[k], 4 * ((r + a) * 512 + (c + b)))[0]
                for k, r, c in positions
            ]
        )
        signed = x if channel == 0 else -x
        value = np.maximum(np.maximum(signed, 0), 1e-4)
        expected = value / np.sqrt(np.mean(value**2))
        row = 144 * channel + 12 * a + b
        np.testing.assert_allclose(V[row], expected, rtol=1e-12)


@pytest.mark.realdata
def test_natural_patches_are_reproducible(real):
    again = datasets.load_natural(random_state=SEED)
    np.testing.assert_array_equal(again, real["natural"])
    other = datasets.load_natural(n_patches=25, random_state=SEED + 1)
    assert other.shape == (288, 25)


@pytest.mark.realdata
def test_orl_images_order_and_halving(real):
    full = datasets.orl_images()
    assert full.shape == (400, 112, 92) and full.dtype == np.uint8
    pixels = _pgm_pixels(real["folder"] / "orl-faces" / "s3" / "4.pgm", 92, 112)
    np.testing.assert_array_equal(full[23].ravel(), np.frombuffer(pixels, np.uint8))
    halved = datasets.orl_images(halved=True)
    assert halved.shape == (400, *datasets.ORL_SHAPE)
    np.testing.assert_allclose(halved[23], _halve_by_hand(full[23]), rtol=1e-13)


# --- command line ---------------------------------------------------------------------


def test_cli_list_shows_sizes_sources_and_credits(tmp_path, capsys):
    assert main(["--list"], gate=_fetchers.make_gate(tmp_path)) == 0
    out = capsys.readouterr().out
    for dataset in catalog.DATASETS.values():
        assert dataset.title in out and dataset.credit in out
    assert "raw.githubusercontent.com/altaiperry" in out
    assert "cbcl.mit.edu" in out and "Samaria" in out and "Olshausen" in out
    assert "2.4 MB" in out and "not downloaded" in out and "(and 9 more like it)" in out
    assert "does not redistribute" in out


def test_cli_list_into_a_closed_pipe_ends_quietly(tmp_path):
    """``--list | head -1``: the reader is gone before the output is written.
    No traceback, no "Exception ignored" at exit, just a failure status."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "nmfsc.datasets", "--list"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env={**os.environ, "NMFSC_DATA_DIR": str(tmp_path)},
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 1
    assert proc.stderr.decode() == ""


def test_cli_check_reports_missing_files(tmp_path, capsys):
    assert main(["download", "--check"], gate=_fetchers.make_gate(tmp_path)) == 1
    out = capsys.readouterr().out
    assert "missing  att_faces.zip" in out and "problem" in out
    assert not any(tmp_path.iterdir())


@pytest.mark.realdata
def test_cli_check_passes_on_the_real_data(capsys):
    folder = datasets.data_dir()
    before = _snapshot(folder)
    assert main(["--check"]) == 0
    assert "Every file matches the registry." in capsys.readouterr().out
    assert _snapshot(folder) == before


def test_cli_rejects_both_modes(capsys):
    with pytest.raises(SystemExit):
        main(["--check", "--list"])
    assert "not allowed with" in capsys.readouterr().err


# --- natural images of one's own: whiten_images and on_off_patches (public) -------


def _pink_noise(rng, n=64, count=3):
    """Images with a 1/f amplitude spectrum, as natural images roughly have."""
    f = np.hypot(*np.meshgrid(np.fft.fftfreq(n) * n, np.fft.fftfreq(n) * n, indexing="ij"))
    f[0, 0] = 1.0
    spectrum = (rng.standard_normal((count, n, n)) + 1j * rng.standard_normal((count, n, n))) / f
    return np.real(np.fft.ifft2(spectrum)) + 5.0


def _band_amplitude(images, lo, hi):
    n = images.shape[-1]
    f = np.hypot(*np.meshgrid(np.fft.fftfreq(n) * n, np.fft.fftfreq(n) * n, indexing="ij"))
    amplitude = np.abs(np.fft.fft2(images)).mean(axis=0)
    return amplitude[(f >= lo) & (f < hi)].mean()


def test_whiten_images_flattens_a_one_over_f_spectrum():
    images = _pink_noise(np.random.default_rng(0))
    white = datasets.whiten_images(images)
    assert white.shape == images.shape and white.dtype == np.float64
    assert np.mean(np.var(white.reshape(3, -1), axis=1)) == pytest.approx(0.1)
    assert np.abs(white.mean(axis=(1, 2))).max() < 1e-12  # the mean (f = 0) is removed
    ratio_in = _band_amplitude(images, 2, 4) / _band_amplitude(images, 10, 14)
    ratio_out = _band_amplitude(white, 2, 4) / _band_amplitude(white, 10, 14)
    assert ratio_in > 3 and 0.5 < ratio_out < 2  # 1/f in, about flat out
    assert _band_amplitude(white, 30, 32) < 0.5 * _band_amplitude(white, 10, 14)  # cut off
    single = datasets.whiten_images(images[1])  # one image: the same filter, its own scale
    np.testing.assert_allclose(single / single.std(), white[1] / white[1].std(), atol=1e-10)
    for bad, match in (
        (np.zeros((2, 8, 8)), "constant"),
        (np.ones(5), "at least 2 x 2"),
        (np.full((8, 8), np.nan), "NaN"),
    ):
        with pytest.raises(ValueError, match=match):
            datasets.whiten_images(bad)


def test_on_off_patches_is_load_naturals_preprocessing_to_the_bit():
    images = datasets.whiten_images(_pink_noise(np.random.default_rng(1), n=40, count=4))
    V = datasets.on_off_patches(images, n_patches=50, patch_size=6, random_state=3)
    reference = _preprocess.natural_matrix(images, 50, 6, 3)
    assert V.shape == (72, 50) and np.array_equal(V, reference)
    with pytest.raises(ValueError, match="pass one image as images"):
        datasets.on_off_patches(images[0], n_patches=5, patch_size=6)
    with pytest.raises(ValueError, match="at least the number of images"):
        datasets.on_off_patches(images, n_patches=3, patch_size=6)


@pytest.mark.realdata
def test_on_off_patches_of_the_sparsenet_images_is_load_natural(require_real_data):
    V = datasets.on_off_patches(datasets.natural_images(), 2000, 12, random_state=0)
    assert np.array_equal(V, datasets.load_natural(2000, 12, random_state=0))
