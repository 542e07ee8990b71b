"""read_matrix reads every format into features x samples and rejects bad data in one line."""

import os
import stat

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from PIL import Image

import nmfsc
from nmfsc.atomic import atomic_writer
from nmfsc.readers import DataFileError, check_n_components, read_matrix

X = np.array([[1.0, 2.0, 0.0], [4.0, 0.5, 6.0]])  # 2 x 3


def _error(path, **kwargs):
    """The message of the DataFileError that read_matrix raises: one line."""
    with pytest.raises(DataFileError) as caught:
        read_matrix(path, **kwargs)
    message = str(caught.value)
    assert "\n" not in message and message
    return message


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def _save_image(path, pixels, mode=None):
    image = Image.fromarray(pixels)
    (image.convert(mode) if mode else image).save(path)


# --- the formats -------------------------------------------------------------


def test_exported_from_the_package():
    assert nmfsc.read_matrix is read_matrix and nmfsc.DataFileError is DataFileError
    assert issubclass(DataFileError, ValueError)


def test_npy(tmp_path):
    np.save(tmp_path / "x.npy", X.astype(np.float32))
    V, image_shape, name = read_matrix(tmp_path / "x.npy")
    assert V.dtype == np.float32 and V.flags.c_contiguous  # float32 stays float32
    np.testing.assert_array_equal(V, X.astype(np.float32))
    np.save(tmp_path / "x.npy", X.astype(np.float16))
    assert read_matrix(tmp_path / "x.npy")[0].dtype == np.float64  # any other type: float64
    assert image_shape is None and name == "x"


def test_npy_integers_and_samples_as_rows(tmp_path):
    counts = np.array([[1, 2, 0], [4, 1, 6]], dtype=np.int64)
    np.save(tmp_path / "counts.npy", counts)
    V, _, name = read_matrix(str(tmp_path / "counts.npy"), samples_as_rows=True)
    np.testing.assert_array_equal(V, counts.T)
    assert V.flags.c_contiguous and name == "counts"


def test_npz_with_one_array_needs_no_key(tmp_path):
    np.savez(tmp_path / "one.npz", data=X)
    V, _, name = read_matrix(tmp_path / "one.npz")
    np.testing.assert_array_equal(V, X)
    assert name == "one"


def test_npz_with_key(tmp_path):
    np.savez(tmp_path / "two.npz", a=X, b=2 * X)
    V, _, name = read_matrix(tmp_path / "two.npz", key="b")
    np.testing.assert_array_equal(V, 2 * X)
    assert name == "two-b"


def test_npz_without_key_or_with_a_wrong_one_lists_the_keys(tmp_path):
    np.savez(tmp_path / "two.npz", a=X, b=2 * X)
    message = _error(tmp_path / "two.npz")
    assert "holds 2 arrays (a, b)" in message and "--key" in message
    message = _error(tmp_path / "two.npz", key="c")
    assert "no array 'c'" in message and "its arrays: a, b" in message


@pytest.mark.parametrize(
    "text",
    [
        "1,2,0\n4,0.5,6\n",
        "x,y,z\n1,2,0\n4,0.5,6\n",
        '"x","y","z"\r\n1, 2 ,0\r\n\r\n4,5e-1,6\r\n\r\n',  # quotes, CRLF, spaces, blank lines
        "\ufeffx,y,z\n1,2,0\n4,0.5,6\n",  # a byte-order mark, as Excel writes
    ],
    ids=["plain", "header", "quoted-crlf-blank", "bom"],
)
def test_csv_with_or_without_header(tmp_path, text):
    V, image_shape, name = read_matrix(_write(tmp_path / "data.csv", text))
    np.testing.assert_array_equal(V, X)
    assert image_shape is None and name == "data"


def test_tsv(tmp_path):
    V, _, _ = read_matrix(_write(tmp_path / "data.tsv", "a\tb\tc\n1\t2\t0\n4\t0.5\t6\n"))
    np.testing.assert_array_equal(V, X)


def test_single_column_csv_with_header(tmp_path):
    V, _, _ = read_matrix(_write(tmp_path / "col.csv", "value\n1\n2\n"))
    np.testing.assert_array_equal(V, [[1.0], [2.0]])


def test_mtx_is_read_sparse_and_stays_sparse(tmp_path):
    scipy.io.mmwrite(tmp_path / "m.mtx", sp.coo_matrix(X))
    assert sp.issparse(scipy.io.mmread(tmp_path / "m.mtx"))  # what the reader gets
    V, _, name = read_matrix(tmp_path / "m.mtx")
    assert sp.issparse(V) and V.format == "csr" and V.dtype == np.float64
    np.testing.assert_array_equal(V.toarray(), X)
    assert name == "m"
    V, _, _ = read_matrix(tmp_path / "m.mtx", samples_as_rows=True)
    assert sp.issparse(V) and V.format == "csr"
    np.testing.assert_array_equal(V.toarray(), X.T)


def test_mtx_duplicates_are_summed_and_integers_become_float(tmp_path):
    coo = sp.coo_matrix(([1, 2, 5], ([0, 0, 1], [1, 1, 2])), shape=(2, 3), dtype=np.int64)
    scipy.io.mmwrite(tmp_path / "d.mtx", coo)
    V, _, _ = read_matrix(tmp_path / "d.mtx")
    assert V.dtype == np.float64 and V.nnz == 2
    np.testing.assert_array_equal(V.toarray(), [[0, 3, 0], [0, 0, 5]])


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_npz_from_save_npz_stays_sparse(tmp_path, fmt):
    sp.save_npz(tmp_path / "s.npz", sp.csr_matrix(X).asformat(fmt))
    V, _, name = read_matrix(tmp_path / "s.npz")
    assert sp.issparse(V) and V.format == fmt and name == "s"
    np.testing.assert_array_equal(V.toarray(), X)
    V, _, _ = read_matrix(tmp_path / "s.npz", samples_as_rows=True)
    assert V.format == {"csr": "csc", "csc": "csr"}[fmt]  # a transpose, not a conversion
    np.testing.assert_array_equal(V.toarray(), X.T)


def test_sparse_npz_bad_value_is_located(tmp_path):
    sp.save_npz(tmp_path / "s.npz", sp.csr_matrix(np.array([[1.0, 0, 0], [0, 0, -2.0]])))
    assert "1 entry is negative; the first is -2 at index [1, 2]" in _error(tmp_path / "s.npz")


def test_mtx_in_array_format(tmp_path):
    scipy.io.mmwrite(tmp_path / "dense.mtx", X)
    np.testing.assert_array_equal(read_matrix(tmp_path / "dense.mtx")[0], X)


def test_image_folder_png_pgm_jpeg(tmp_path):
    folder = tmp_path / "faces"
    folder.mkdir()
    a = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    b = 255 - a
    _save_image(folder / "b.png", b)
    _save_image(folder / "a.pgm", a)
    _save_image(folder / "c.jpg", np.full((3, 4), 128, np.uint8), mode="RGB")
    _write(folder / "notes.txt", "not an image")  # ignored
    _save_image(folder / ".hidden.png", a)  # ignored
    V, image_shape, name = read_matrix(folder)
    assert image_shape == (3, 4) and name == "faces" and V.shape == (12, 3)
    np.testing.assert_allclose(V[:, 0], a.ravel() / 255)  # sorted names: a.pgm first
    np.testing.assert_allclose(V[:, 1], b.ravel() / 255)
    np.testing.assert_allclose(V[:, 2], 128 / 255, atol=3 / 255)  # JPEG is lossy
    np.testing.assert_allclose(V[:, 0].reshape(image_shape), a / 255)


def test_sixteen_bit_png_is_scaled_to_one(tmp_path):
    _save_image(tmp_path / "deep.png", np.array([[0, 65535], [1000, 30000]], np.uint16))
    V, image_shape, _ = read_matrix(tmp_path)
    assert image_shape == (2, 2)
    np.testing.assert_allclose(V[:, 0], [0, 1, 1000 / 65535, 30000 / 65535])


# --- bad files ---------------------------------------------------------------


def test_missing_file(tmp_path):
    assert (
        _error(tmp_path / "nope.csv")
        == f"cannot read {tmp_path / 'nope.csv'}: no such file or folder"
    )


def test_unsupported_extension(tmp_path):
    message = _error(_write(tmp_path / "table.xlsx", "x"))
    assert "unsupported file type ('.xlsx')" in message and ".npy" in message


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".mtx"])
def test_corrupt_binary_files(tmp_path, suffix):
    message = _error(_write(tmp_path / f"bad{suffix}", "garbage\n"))
    assert message.startswith(f"cannot read {tmp_path / ('bad' + suffix)}")


def test_pickled_npy_is_refused(tmp_path):
    np.save(tmp_path / "obj.npy", np.array([[1, None]], dtype=object), allow_pickle=True)
    # refused from the header's dtype, before numpy could try to unpickle it
    assert "holds values of type object; nmfsc needs real numbers" in _error(tmp_path / "obj.npy")


@pytest.mark.parametrize(
    "array, fragment",
    [
        (np.ones(3), "1-D array of shape (3,)"),
        (np.ones((2, 2, 2)), "3-D array"),
        (np.array([["a", "b"]]), "values of type <U1"),
        (np.ones((2, 2), complex), "values of type complex128"),
        (np.ones((0, 3)), "empty"),
        (np.zeros((2, 3)), "every entry is 0"),
    ],
)
def test_arrays_that_are_no_data_matrix(tmp_path, array, fragment):
    np.save(tmp_path / "x.npy", array)
    assert fragment in _error(tmp_path / "x.npy")


def test_key_for_a_file_that_is_not_npz(tmp_path):
    np.save(tmp_path / "x.npy", X)
    assert "not an .npz archive" in _error(tmp_path / "x.npy", key="a")


def test_non_utf8_csv(tmp_path):
    (tmp_path / "latin.csv").write_bytes(b"1,2\n\xe9,3\n")
    assert "not UTF-8 text" in _error(tmp_path / "latin.csv")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("x,y\n1,2\n3,abc\n", ": non-numeric cell 'abc' at row 3, column 2"),  # header counts
        ("1,2\n\n3,abc\n", ": non-numeric cell 'abc' at row 3, column 2"),  # a blank line too
        ("1,2\n3,\n", ": empty cell at row 2, column 2"),
        ("1,x\n3,4\n", ": non-numeric cell 'x' at row 1, column 2; a first row is taken"),
        ("1,2\n3\n", ": row 2 has 1 cell but row 1 has 2 cells"),
        ("", " holds no numbers"),
        ("a,b\n", " holds a header row and no numbers"),
    ],
)
def test_bad_csv_cells_by_spreadsheet_row_and_column(tmp_path, text, expected):
    path = _write(tmp_path / "data.csv", text)
    assert _error(path).startswith(f"{path}{expected}")


def test_negative_entries_count_and_first_position(tmp_path):
    path = _write(tmp_path / "neg.csv", "a,b,c\n1,2,3\n4,-5,6\n-7,8,-9\n")
    assert _error(path) == (
        f"{path}: 3 entries are negative; the first is -5 at row 3, column 2 (NMF needs V >= 0)"
    )
    np.save(tmp_path / "neg.npy", np.array([[1.0, 2.0], [3.0, -0.25]]))
    assert "1 entry is negative; the first is -0.25 at index [1, 1]" in _error(tmp_path / "neg.npy")


def test_nan_and_infinity_count_and_first_position(tmp_path):
    path = _write(tmp_path / "nan.tsv", "1\t2\n3\tnan\ninf\t-1\n")
    assert _error(path) == (
        f"{path}: 2 entries are NaN or infinity; the first is nan at row 2, column 2 "
        "(V must be finite)"
    )


def test_bad_values_in_mtx_are_located_one_based(tmp_path):
    scipy.io.mmwrite(tmp_path / "m.mtx", sp.coo_matrix(np.array([[1.0, 0, 0], [0, 0, -3.0]])))
    assert "1 entry is negative; the first is -3 at row 2, column 3" in _error(tmp_path / "m.mtx")


def test_images_of_different_sizes_names_two_files(tmp_path):
    _save_image(tmp_path / "a.png", np.zeros((3, 4), np.uint8) + 9)
    _save_image(tmp_path / "b.png", np.zeros((3, 4), np.uint8) + 9)
    _save_image(tmp_path / "c.png", np.zeros((5, 2), np.uint8) + 9)
    assert _error(tmp_path) == (
        f"images of different sizes in {tmp_path}: a.png is 3 x 4 pixels but c.png is "
        "5 x 2 pixels (height x width); every image must have the same size"
    )


def test_unreadable_image_and_empty_folder(tmp_path):
    assert "holds no images" in _error(tmp_path)
    _write(tmp_path / "broken.png", "not a png")
    assert _error(tmp_path).startswith(f"cannot read image {tmp_path / 'broken.png'}: ")


def test_image_folder_with_key_or_samples_as_rows(tmp_path):
    _save_image(tmp_path / "a.png", np.ones((2, 2), np.uint8))
    assert "a key selects an array in .npz" in _error(tmp_path, key="x")
    assert "samples as rows does not apply" in _error(tmp_path, samples_as_rows=True)


def test_check_n_components():
    check_n_components(np.ones((3, 5)), 3)
    with pytest.raises(DataFileError, match=r"^d.csv: V is 3 x 5 .* at most min\(N, T\) = 3$"):
        check_n_components(np.ones((3, 5)), 4, source="d.csv")
    with pytest.raises(DataFileError, match="at least 2 features and 2 samples"):
        check_n_components(np.ones((1, 5)), 1, source="d.csv")


# --- atomic writes -----------------------------------------------------------


def test_atomic_writer_replaces_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with atomic_writer(target) as handle:
        handle.write(b"new")
        assert target.read_bytes() == b"old"  # not replaced before the end
    assert target.read_bytes() == b"new" and os.listdir(tmp_path) == ["out.bin"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def test_atomic_writer_keeps_the_old_file_on_error(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_writer(target, "w") as handle:
        handle.write("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.txt"]


# --- issue 30, points 3, 7 and 8 ------------------------------------------------------


def test_sixteen_bit_pgm_is_scaled_as_the_same_png(tmp_path):
    """Point 3: the PGM gave column maxima 61200 where the PNG gave 0.934."""
    pixels = (np.arange(12).reshape(3, 4) * 5000 + 6200).astype(np.uint16)
    png, pgm = tmp_path / "png", tmp_path / "pgm"
    png.mkdir(), pgm.mkdir()
    Image.fromarray(pixels).save(png / "a.png")
    (pgm / "a.pgm").write_bytes(b"P5\n4 3\n65535\n" + pixels.astype(">u2").tobytes())
    V_png, V_pgm = read_matrix(png)[0], read_matrix(pgm)[0]
    np.testing.assert_allclose(V_pgm, V_png, rtol=1e-15)
    assert V_pgm.max() == pytest.approx(61200 / 65535)


def _npy_header_only(path, shape, descr="<f8"):
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(
            handle, {"descr": descr, "fortran_order": False, "shape": shape}
        )


def test_impossible_sizes_are_refused_before_allocating(tmp_path):
    """Point 7: MemoryError tracebacks before."""
    _npy_header_only(tmp_path / "big.npy", (10**6, 10**6))
    expected = (
        r"declares a 1000000 x 1000000 array of float64: "
        r"reading it needs about .* GiB of memory, and .* GiB is available"
    )
    with pytest.raises(DataFileError, match=expected):
        read_matrix(tmp_path / "big.npy")
    # an .npz member of 80 GB: the header alone is read
    import io
    import zipfile

    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        member, {"descr": "<f8", "fortran_order": False, "shape": (10**5, 10**5)}
    )
    with zipfile.ZipFile(tmp_path / "big.npz", "w") as archive:
        archive.writestr("V.npy", member.getvalue())
    with pytest.raises(DataFileError, match=r"big.npz declares a 100000 x 100000 array"):
        read_matrix(tmp_path / "big.npz")
    # sparse: a 10^12 x 10^12 .mtx and save_npz file (their row pointers alone: 8 TB)
    (tmp_path / "big.mtx").write_text(
        "%%MatrixMarket matrix coordinate real general\n1000000000000 1000000000000 1\n1 1 1.0\n"
    )
    with pytest.raises(DataFileError, match=r"big.mtx declares a 1000000000000 x 1000000000000 "):
        read_matrix(tmp_path / "big.mtx")
    np.savez(
        tmp_path / "sp.npz",
        format=np.array("coo"),
        shape=np.array([10**12, 10**12]),
        row=np.array([0]),
        col=np.array([0]),
        data=np.array([1.0]),
    )
    with pytest.raises(DataFileError, match=r"sp.npz declares a sparse matrix with 1 entries"):
        read_matrix(tmp_path / "sp.npz")


def test_the_cli_refuses_an_impossible_size_with_one_line_and_status_2(tmp_path, capsys):
    from nmfsc.cli import main

    _npy_header_only(tmp_path / "big.npy", (10**6, 10**6))
    out = str(tmp_path / "o.npz")
    assert main(["fit", str(tmp_path / "big.npy"), "-k", "2", "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GiB is available" in err


def test_an_mtx_integer_beyond_int64_is_one_line(tmp_path):
    (tmp_path / "ov.mtx").write_text(
        "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 99999999999999999999999\n"
    )
    with pytest.raises(DataFileError, match="too large for a 64-bit number"):
        read_matrix(tmp_path / "ov.mtx")


@pytest.mark.parametrize("dtype", ["timedelta64[s]", "datetime64[s]"])
def test_non_numeric_npy_dtypes_are_refused(tmp_path, dtype):
    np.save(tmp_path / "x.npy", np.ones((2, 3)).astype("int64").astype(dtype))
    with pytest.raises(DataFileError, match=f"values of type {dtype[:4]}.*needs real numbers"):
        read_matrix(tmp_path / "x.npy")


def test_python_digit_grouping_is_not_a_csv_number(tmp_path):
    (tmp_path / "u.csv").write_text("1,2\n1_000,3\n")
    with pytest.raises(DataFileError, match="non-numeric cell '1_000' at row 2, column 1"):
        read_matrix(tmp_path / "u.csv")


def test_a_link_to_an_image_outside_the_folder_is_refused(tmp_path):
    folder, outside = tmp_path / "images", tmp_path / "elsewhere"
    folder.mkdir(), outside.mkdir()
    for k in range(2):
        Image.fromarray(np.full((2, 3), 10 * k + 5, np.uint8)).save(folder / f"{k}.png")
    Image.fromarray(np.full((2, 3), 7, np.uint8)).save(outside / "secret.png")
    (folder / "2.png").symlink_to(folder / "0.png")  # inside: read
    assert read_matrix(folder)[0].shape == (6, 3)
    (folder / "3.png").symlink_to(outside / "secret.png")
    with pytest.raises(DataFileError, match="is a link to .*secret.png, outside"):
        read_matrix(folder)


def test_the_cli_refuses_factors_that_cannot_fit_in_memory(tmp_path, capsys):
    """Point 7: a sparse 10^9 x 10^9 V read, then a MemoryError traceback from W."""
    from nmfsc.cli import main

    n = 10**11
    (tmp_path / "tall.mtx").write_text(
        f"%%MatrixMarket matrix coordinate real general\n3 {n} 3\n1 1 1.0\n2 2 1.0\n3 3 1.0\n"
    )
    assert (
        main(["fit", str(tmp_path / "tall.mtx"), "-k", "2", "--out", str(tmp_path / "o.npz")]) == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"V is 3 x {n}; W and H of 2 components need about" in err


def test_a_comma_separated_tsv_gets_a_delimiter_hint(tmp_path):
    row = ",".join(f"{v:.6f}" for v in np.linspace(0, 1, 200))  # one 1,800-character row
    (tmp_path / "wide.tsv").write_text(f"{row}\n{row}\n")
    with pytest.raises(DataFileError) as error:
        read_matrix(tmp_path / "wide.tsv")
    message = str(error.value)
    assert "the file looks comma-separated, but .tsv is read as tab-separated" in message
    assert "(rename it to .csv)" in message and len(message) < 400  # the cell is cut
    (tmp_path / "tabs.csv").write_text("1\t2\n3\t4\n")
    with pytest.raises(DataFileError, match=r"looks tab-separated.*rename it to \.tsv"):
        read_matrix(tmp_path / "tabs.csv")
    (tmp_path / "word.csv").write_text("1,2\n3,x\n")
    with pytest.raises(DataFileError, match=r"non-numeric cell 'x' at row 2, column 2$"):
        read_matrix(tmp_path / "word.csv")  # no hint when the delimiter is not the cause


# --- issue 42: rows of empty cells, cells that are not numbers -------------------


@pytest.mark.parametrize("suffix, sep", [(".csv", ","), (".tsv", "\t")])
def test_a_row_of_empty_cells_is_missing_data_never_skipped(tmp_path, suffix, sep):
    """Item 2: on 0.x a row of empty cells was dropped silently, so the rows of V
    after it belonged to other lines of the file."""
    lines = ["a,b,c", "1,2,3", ",,", "4,,6", "7,8,9"]
    path = _write(tmp_path / f"r{suffix}", "\n".join(lines).replace(",", sep) + "\n")
    V, _, _ = read_matrix(path, missing_values=np.nan)
    expected = [[1, 2, 3], [np.nan] * 3, [4, np.nan, 6], [7, 8, 9]]
    np.testing.assert_array_equal(V, expected)
    assert _error(path).startswith(f"{path}: row 3 holds only empty cells; ")
    # the first row too: a row of empty cells is no header
    first = _write(tmp_path / f"f{suffix}", sep.join(["", ""]) + "\n1" + sep + "2\n3" + sep + "4\n")
    assert read_matrix(first, missing_values=np.nan)[0].shape == (3, 2)
    assert _error(first).startswith(f"{first}: row 1 holds only empty cells; ")


def test_only_lines_of_nothing_but_whitespace_are_skipped(tmp_path):
    path = _write(tmp_path / "b.csv", "1,2,0\n   \n\t\n\n4,0.5,6\n \r\n")
    np.testing.assert_array_equal(read_matrix(path)[0], X)
    # a blank line's number still counts: the bad cell is on line 5
    bad = _write(tmp_path / "c.csv", "1,2\n \n\t\n\n3,abc\n")
    assert _error(bad) == f"{bad}: non-numeric cell 'abc' at row 5, column 2"


def test_a_non_numeric_cell_is_named_when_empty_cells_are_missing(tmp_path):
    """Item 8a: on 0.x the empty cell before the x was reported instead."""
    path = _write(tmp_path / "x.csv", "a,b\n,x\n1,2\n")
    assert _error(path, missing_values=np.nan) == f"{path}: non-numeric cell 'x' at row 2, column 2"


def test_infinity_with_missing_values_is_not_called_nan(tmp_path):
    """Item 8b: with NaN allowed, infinity is the only non-finite value wrong."""
    path = _write(tmp_path / "inf.csv", "1,2,3\n4,inf,6\n7,,9\n")
    message = _error(path, missing_values=np.nan)
    assert message.startswith(f"{path}: 1 entry is infinite; the first is inf at row 2, column 2")
    assert "NaN" not in message and "infinity is not a missing value" in message
