"""The ``nmfsc`` command line, run as a separate process.

A few tests start a fresh interpreter (``python -m nmfsc``, and the installed
``nmfsc`` script when there is one). The many bad-input cases run in processes
forked from one server that has imported :mod:`nmfsc.cli` once: each case is
still its own process, with its own exit status and stderr, and an exception
escaping ``main`` prints its traceback there as the interpreter would; only the
three seconds of importing nmfsc (and scikit-learn) per case are saved.

The tests of ``nmfsc compare`` that run :func:`nmfsc.compare` are skipped until
this nmfsc has it (branch ``cmplib``); the thin layer around it is tested now
with a stand-in.
"""

import functools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from PIL import Image

import nmfsc
from nmfsc.cli import main, version

ROOT = Path(__file__).parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
needs_compare = pytest.mark.skipif(
    not hasattr(nmfsc, "compare"), reason="nmfsc.compare is not in this nmfsc yet (branch cmplib)"
)

SERVER = textwrap.dedent(
    """
    import json, os, sys
    from nmfsc.cli import main

    def child(job):
        os.chdir(job["cwd"])
        for fd, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(job[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        try:
            code = main(job["argv"])
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (done.code is not None)
        except BaseException:
            sys.excepthook(*sys.exc_info())  # what the interpreter prints
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        return code

    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = child(json.loads(line))
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)
    """
)


@pytest.fixture(scope="module")
def forked(tmp_path_factory):
    """``run(argv, cwd)``: nmfsc's main in a process forked from a warm server."""
    if not hasattr(os, "fork"):
        pytest.skip("needs os.fork")
    logs = tmp_path_factory.mktemp("forked")
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=logs,
    )
    count = 0

    def run(argv, cwd):
        nonlocal count
        count += 1
        out, err = logs / f"{count}.out", logs / f"{count}.err"
        job = {"argv": [str(a) for a in argv], "cwd": str(cwd), "stdout": str(out)}
        server.stdin.write(json.dumps({**job, "stderr": str(err)}) + "\n")
        server.stdin.flush()
        status = int(server.stdout.readline())
        return SimpleNamespace(returncode=status, stdout=out.read_text(), stderr=err.read_text())

    yield run
    server.stdin.close()
    server.wait(timeout=60)
    server.stdout.close()


def cold(argv, cwd, command=(sys.executable, "-m", "nmfsc")):
    """Run the command line in a fresh interpreter."""
    return subprocess.run(
        [*command, *map(str, argv)], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=600
    )


def _data(folder):
    """A small positive 12 x 9 matrix as data.csv (with a header row) in ``folder``."""
    V = np.random.default_rng(0).random((12, 9)) + 0.1
    header = ",".join(f"s{j}" for j in range(V.shape[1]))
    np.savetxt(folder / "data.csv", V, delimiter=",", header=header, comments="")
    return folder / "data.csv", V


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _untracked_or_changed():
    """What git sees changed in the source tree (not ignored files); None outside git."""
    git = ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"]
    try:
        done = subprocess.run(git, capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


# --- fit, end to end -----------------------------------------------------------


def test_fit_end_to_end_writes_only_the_npz(tmp_path):
    data_dir, cwd = tmp_path / "in", tmp_path / "cwd"
    data_dir.mkdir()
    cwd.mkdir()
    data, V = _data(data_dir)
    before = _untracked_or_changed()
    argv = ["fit", data, "-k", 3, "--sparseness-w", 0.6, "--max-iter", 5, "--out", "res/f.npz"]
    done = cold(argv, cwd)
    assert done.returncode == 0, done.stderr
    assert _files(cwd) == ["res", "res/f.npz"] and _files(data_dir) == ["data.csv"]
    assert _untracked_or_changed() == before
    assert "Traceback" not in done.stderr and "wrote res/f.npz" in done.stderr
    assert done.stdout.startswith("nmf_sc on data (12 x 9), 3 components: 5 iterations")

    with np.load(cwd / "res/f.npz", allow_pickle=False) as z:
        assert set(z.files) == {
            "W",
            "H",
            "objective",
            "times",
            "sparseness_W",
            "sparseness_H",
            "record",
        }
        W, H, objective, times = z["W"], z["H"], z["objective"], z["times"]
        record = json.loads(str(z["record"]))
        np.testing.assert_allclose(z["sparseness_W"], 0.6, atol=1e-6)
    assert W.shape == (12, 3) and H.shape == (3, 9)
    assert objective.shape == times.shape == (6,) and np.all(np.diff(times) >= 0)
    relative_error = np.linalg.norm(V - W @ H) / np.linalg.norm(V)
    assert record["relative_error"] == pytest.approx(relative_error, rel=1e-9)
    assert record["n_iter"] == 5 and record["stop_reason"] == "max_iter"
    assert record["converged"] is False and record["solver"] == "nmf_sc"
    assert record["nmfsc_version"] == version()
    assert record["params"]["n_components"] == 3 and record["params"]["sparseness_w"] == 0.6
    assert record["params"]["max_iter"] == 5 and record["params"]["random_state"] == 0
    assert record["data"]["shape"] == [12, 9] and record["data"]["samples_as_rows"] is False
    assert record["sparseness_W_mean"] == pytest.approx(0.6, abs=1e-6)


def test_fit_reads_each_format(tmp_path, forked):
    np.save(tmp_path / "x.npy", np.ones((4, 6)) + np.eye(4, 6))
    np.savez(tmp_path / "x.npz", a=np.ones((5, 5)) + np.eye(5), b=np.ones(2))
    (tmp_path / "x.tsv").write_text("1\t2\t3\n4\t5\t6\n7\t8\t10\n")
    scipy.io.mmwrite(tmp_path / "x.mtx", sp.coo_matrix(np.eye(4) + 0.5))
    images = tmp_path / "images"
    images.mkdir()
    for k, suffix in enumerate([".png", ".pgm", ".jpg"]):
        pixels = np.random.default_rng(k).integers(0, 256, (4, 3)).astype(np.uint8)
        Image.fromarray(pixels).save(images / f"im{k}{suffix}")
    cases = [
        (["x.npy"], (4, 6), None),
        (["x.npy", "--samples-as-rows"], (6, 4), None),
        (["x.npz", "--key", "a"], (5, 5), None),
        (["x.tsv"], (3, 3), None),
        (["x.mtx"], (4, 4), None),
        (["images"], (12, 3), [4, 3]),
    ]
    for args, shape, image_shape in cases:
        out = tmp_path / "fit.npz"
        done = forked(
            ["fit", *args, "-k", 2, "--max-iter", 3, "--no-progress", "--out", out], tmp_path
        )
        assert done.returncode == 0, (args, done.stderr)
        with np.load(out, allow_pickle=False) as z:
            record = json.loads(str(z["record"]))
            assert z["W"].shape == (shape[0], 2) and z["H"].shape == (2, shape[1]), args
        assert record["data"]["image_shape"] == image_shape


def test_fit_explore_writes_the_best_fit_it_found(tmp_path, forked):
    """--explore SECONDS runs explore_nmf_sc: its record counts the hops, the fit
    holds the constraint and is no worse than the accelerated solver's alone;
    the options it does not take are refused in one line."""
    data, V = _data(tmp_path)
    out = tmp_path / "explored.npz"
    argv = ["fit", data, "-k", 3, "--sparseness-w", 0.6, "--explore", 2, "--no-progress"]
    done = forked([*argv, "--out", out], tmp_path)
    assert done.returncode == 0, done.stderr
    with np.load(out, allow_pickle=False) as z:
        record = json.loads(str(z["record"]))
        np.testing.assert_allclose(z["sparseness_W"], 0.6, atol=1e-9)
    assert record["params"]["explore"]["hops"] >= 1
    alone = nmfsc.nmf_sc(V, 3, sparseness_w=0.6, solver="accelerated", random_state=0)
    assert record["relative_error"] <= alone.relative_error + 1e-12
    refused = forked([*argv, "--max-time", 5, "--out", tmp_path / "x.npz"], tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith("drop --max-time")
    assert len(refused.stderr.strip().splitlines()) == 1


@pytest.mark.filterwarnings("ignore::nmfsc.ConvergenceWarning")  # the library calls: 20 iterations
def test_fit_solver_option_runs_that_algorithm_from_the_same_start(tmp_path, forked):
    """--solver accelerated runs nmf_sc(solver="accelerated") and says so in the
    record; the default is the paper's algorithm; both from --seed's start, with
    the same constraint and the factors the library call gives."""
    data, V = _data(tmp_path)
    records, factors = {}, {}
    for solver in (None, "hoyer", "accelerated"):
        out = tmp_path / f"{solver}.npz"
        option = [] if solver is None else ["--solver", solver]
        argv = [
            "fit",
            data,
            "-k",
            3,
            "--sparseness-h",
            0.5,
            *option,
            "--max-iter",
            20,
            "--no-progress",
            "--out",
            out,
        ]
        done = forked(argv, tmp_path)
        assert done.returncode == 0, done.stderr
        with np.load(out, allow_pickle=False) as z:
            records[solver] = json.loads(str(z["record"]))
            factors[solver] = z["W"], z["H"]
            np.testing.assert_allclose(z["sparseness_H"], 0.5, atol=1e-9)
    assert records[None]["solver"] == records["hoyer"]["solver"] == "nmf_sc"
    assert records["accelerated"]["solver"] == "nmf_sc (accelerated)"
    assert records["accelerated"]["step_sizes"] is None  # it has none; hoyer's are recorded
    for solver, (W, H) in factors.items():
        expected = nmfsc.nmf_sc(
            V, 3, sparseness_h=0.5, solver=solver or "hoyer", random_state=0, max_iter=20
        )
        np.testing.assert_array_equal(W, expected.W)
        np.testing.assert_array_equal(H, expected.H)
    assert not np.array_equal(factors["hoyer"][1], factors["accelerated"][1])


# --- bad input: exit 2, one line ---------------------------------------------


def _bad_inputs(folder):
    """Bad-input cases: (arguments, the expected stderr line)."""
    _data(folder)
    (folder / "text.csv").write_text("a,b,c\n1,2,3\n4,x,6\n")
    (folder / "neg.csv").write_text("1,2,3\n4,-5,6\n-7,8,9\n")
    (folder / "nan.csv").write_text("1,2,3\n4,nan,6\n7,inf,9\n")
    (folder / "bad.npy").write_text("not numpy")
    (folder / "data.xlsx").write_text("x")
    np.savez(folder / "two.npz", a=np.ones((3, 3)), b=np.ones((3, 3)))
    images = folder / "images"
    images.mkdir()
    Image.fromarray(np.ones((4, 3), np.uint8)).save(images / "a.png")
    Image.fromarray(np.ones((5, 3), np.uint8)).save(images / "b.pgm")
    neg = "neg.csv: 2 entries are negative; the first is -5 at row 2, column 2 (NMF needs V >= 0)"
    return {
        "missing": (["nope.csv"], "cannot read nope.csv: no such file or folder"),
        "unreadable": (["bad.npy"], "cannot read bad.npy: it is not a NumPy .npy file"),
        "non-numeric": (["text.csv"], "text.csv: non-numeric cell 'x' at row 3, column 2"),
        "negative": (["neg.csv"], neg),
        "nan": (
            ["nan.csv"],
            "nan.csv: 2 entries are NaN or infinity; the first is nan at row 2, column 2 "
            "(V must be finite)",
        ),
        "too-small": (
            ["data.csv", "-k", "10"],
            "data.csv: V is 12 x 9 (features x samples), too small for 10 components: "
            "the number of components must be at most min(N, T) = 9",
        ),
        "image-sizes": (
            ["images"],
            "images of different sizes in images: a.png is 4 x 3 pixels but b.pgm is "
            "5 x 3 pixels (height x width); every image must have the same size",
        ),
        "extension": (["data.xlsx"], "data.xlsx: unsupported file type ('.xlsx'); nmfsc reads"),
        "npz-key": (["two.npz", "--key", "c"], "two.npz has no array 'c'; its arrays: a, b"),
        "npz-no-key": (["two.npz"], "two.npz holds 2 arrays (a, b); choose one with --key"),
    }


@pytest.fixture(scope="module")
def bad_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    return folder, _bad_inputs(folder)


def _one_line(done, prog, expected):
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{prog}: error: {expected}"), lines[0]


BAD_INPUTS = [
    "missing",
    "unreadable",
    "non-numeric",
    "negative",
    "nan",
    "too-small",
    "image-sizes",
    "extension",
    "npz-key",
    "npz-no-key",
]


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_fit_bad_input_is_one_line_and_status_2(bad_folder, forked, case):
    folder, cases = bad_folder
    args, expected = cases[case]
    k = [] if "-k" in args else ["-k", "2"]
    done = forked(["fit", *args, *k, "--out", "never.npz"], folder)
    _one_line(done, "nmfsc fit", expected)
    assert not (folder / "never.npz").exists()


def test_bad_input_in_a_fresh_interpreter(bad_folder):
    folder, cases = bad_folder
    args, expected = cases["negative"]
    _one_line(cold(["fit", *args, "-k", 2, "--out", "x.npz"], folder), "nmfsc fit", expected)


def test_debug_shows_the_traceback(bad_folder, forked):
    folder, _ = bad_folder
    done = forked(["fit", "neg.csv", "-k", 2, "--out", "x.npz", "--debug"], folder)
    assert done.returncode == 1 and "Traceback" in done.stderr
    assert "DataFileError: neg.csv: 2 entries are negative" in done.stderr


def test_fit_out_must_be_npz(bad_folder, forked):
    folder, _ = bad_folder
    done = forked(["fit", "data.csv", "-k", 2, "--out", "result.txt"], folder)
    _one_line(done, "nmfsc fit", "--out must name an .npz file, got 'result.txt'")


def test_unwritable_out_is_status_1(bad_folder, forked):
    folder, _ = bad_folder
    (folder / "a-file").write_text("")
    done = forked(
        ["fit", "data.csv", "-k", 2, "--max-iter", 1, "--no-progress", "--out", "a-file/x.npz"],
        folder,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("nmfsc fit: error: cannot write a-file")


@pytest.mark.parametrize(
    "args",
    [
        ["fit", "data.csv", "--out", "x.npz"],  # no -k
        ["fit", "data.csv", "-k", "0", "--out", "x.npz"],
        ["fit", "data.csv", "-k", "2", "--sparseness-w", "1.5", "--out", "x.npz"],
        ["fit", "data.csv", "-k", "2", "--solver", "fast", "--out", "x.npz"],
        ["compare", "data.csv", "--tol", "-1"],
        ["compare", "data.csv", "--image-shape", "3"],
        ["frobnicate"],
        [],
    ],
)
def test_usage_errors_are_status_2(bad_folder, forked, args):
    done = forked(args, bad_folder[0])
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("usage: nmfsc") and "error:" in done.stderr


# --- version and help ----------------------------------------------------------


def test_version(tmp_path):
    done = cold(["--version"], tmp_path)
    assert done.returncode == 0 and done.stdout == f"nmfsc {version()}\n"
    assert _files(tmp_path) == []


def test_installed_console_script(tmp_path):
    script = Path(sys.executable).parent / "nmfsc"
    if not script.exists():
        pytest.skip("the nmfsc console script is not installed in this environment")
    done = cold(["--version"], tmp_path, command=[str(script)])
    assert done.returncode == 0 and done.stdout.startswith("nmfsc ")


@pytest.mark.parametrize("command", ["compare", "fit"])
def test_help_shows_an_example(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "example" in out and f"\n  nmfsc {command} " in out
    assert "--samples-as-rows" in out and "--out" in out


def test_top_level_help_names_the_subcommands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "compare" in out and "fit" in out and "--version" in out


# --- compare: the thin layer, with a stand-in for nmfsc.compare --------------


class _FakeComparison:
    def __init__(self, calls):
        self.calls = calls
        self.rows = [{"method": "nmf_sc", "stop_reason": "tol"}]

    def to_markdown(self):
        return "| method | error |\n|---|---|\n| nmf_sc | 0.1 |"

    def save(self, directory, *, quick=False):
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.calls.append(("save", directory))
        (directory / "report.md").write_text(self.to_markdown())
        return [directory / "report.md"]


@pytest.fixture
def fake_compare(monkeypatch):
    calls = []

    def compare(V, n_components, **kwargs):
        calls.append(("compare", V, n_components, kwargs))
        if kwargs.get("max_iter") == 13:
            raise ValueError("the library says no")
        return _FakeComparison(calls)

    monkeypatch.setattr(nmfsc, "compare", compare, raising=False)
    return calls


def test_compare_passes_only_the_given_options(tmp_path, monkeypatch, capsys, fake_compare):
    data, V = _data(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = [
        "compare",
        "data.csv",
        "-k",
        4,
        "--sparseness-h",
        0.7,
        "--seeds",
        3,
        4,
        "--max-iter",
        5,
        "--samples-as-rows",
        "--no-progress",
    ]
    assert main([str(a) for a in argv]) == 0
    (_, V_passed, K, kwargs), (_, out) = fake_compare
    np.testing.assert_allclose(V_passed, V.T)
    # saved into a staging folder, then made the folder's set (issue 30, point 6)
    assert K == 4 and out.parent == Path("nmfsc-compare/data")
    assert out.name.startswith(".nmfsc-set.new.")
    assert kwargs == {
        "sparseness_h": 0.7,
        "seeds": (3, 4),
        "max_iter": 5,
        "progress": False,
        "name": "data",
    }
    captured = capsys.readouterr()
    assert captured.out.startswith("| method | error |")
    assert captured.err == (
        "data.csv (9 x 12, features x samples), 4 components: wrote 1 file to nmfsc-compare/data\n"
    )
    # the set's folder, named by one link that is switched (issue 42, point 5)
    out = tmp_path / "nmfsc-compare" / "data"
    current = os.readlink(out / ".nmfsc-set.current")
    assert os.readlink(out / "report.md") == ".nmfsc-set.current/report.md"
    assert (out / "report.md").read_text().startswith("| method | error |")
    assert _files(tmp_path) == sorted(
        [
            "data.csv",
            "nmfsc-compare",
            "nmfsc-compare/data",
            "nmfsc-compare/data/.nmfsc-set.current",
            "nmfsc-compare/data/.nmfsc-set.lock",
            f"nmfsc-compare/data/{current}",
            f"nmfsc-compare/data/{current}/report.md",
            "nmfsc-compare/data/report.md",
        ]
    )


def test_compare_image_shape_and_default_components(tmp_path, capsys, fake_compare):
    images = tmp_path / "images"  # --out may not lie inside it (issue 42, point 3)
    images.mkdir()
    for k in range(3):
        Image.fromarray(np.full((2, 3), 10 * k + 5, np.uint8)).save(images / f"{k}.png")
    assert (
        main(
            [
                "compare",
                str(images),
                "--out",
                str(tmp_path / "o"),
                "--methods",
                "nmf_sc,local_nmf",
                "nmf_euclidean",
            ]
        )
        == 0
    )
    (_, V, K, kwargs), _ = fake_compare
    assert V.shape == (6, 3) and K == 3  # min(10, N, T)
    assert kwargs["image_shape"] == (2, 3)
    assert kwargs["methods"] == ("nmf_sc", "local_nmf", "nmf_euclidean")
    assert "3 components (the default; choose with --n-components)" in capsys.readouterr().err


def test_compare_turns_the_library_error_into_one_line(tmp_path, capsys, fake_compare):
    _data(tmp_path)
    status = main(
        [
            "compare",
            str(tmp_path / "data.csv"),
            "-k",
            "2",
            "--max-iter",
            "13",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    err = capsys.readouterr().err.splitlines()
    assert status == 2 and len(err) == 1
    assert err[0] == f"nmfsc compare: error: {tmp_path / 'data.csv'}: the library says no"
    assert not (tmp_path / "o").exists()


# --- compare with the real nmfsc.compare (after the cmplib merge) ------------


@needs_compare
def test_compare_end_to_end_writes_only_under_out(tmp_path):
    data_dir, cwd = tmp_path / "in", tmp_path / "cwd"
    data_dir.mkdir()
    cwd.mkdir()
    data, _ = _data(data_dir)
    before = _untracked_or_changed()
    argv = [
        "compare",
        data,
        "-k",
        2,
        "--sparseness-w",
        0.5,
        "--methods",
        "nmf_sc,nmf_euclidean",
        "--seeds",
        0,
        "--max-iter",
        5,
        "--no-progress",
    ]
    done = cold(argv, cwd)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "| nmf_sc (not converged) |" in done.stdout  # 5 iterations
    out = cwd / "nmfsc-compare" / "data"
    names = {p.name for p in out.iterdir()}
    assert {"report.md", "report.json", "report.csv"} <= names
    assert any(n.endswith(".png") for n in names) and any(n.endswith(".pdf") for n in names)
    assert {p.parts[0] for p in map(Path, _files(cwd))} == {"nmfsc-compare"}
    assert _files(data_dir) == ["data.csv"] and _untracked_or_changed() == before


@needs_compare
def test_compare_unknown_method_is_one_line(bad_folder, forked):
    folder, _ = bad_folder
    done = forked(["compare", "data.csv", "--methods", "nmf_sc", "magic"], folder)
    _one_line(done, "nmfsc compare", "unknown method 'magic'; known methods: ")


@needs_compare
def test_compare_bad_input_is_one_line(bad_folder, forked):
    folder, cases = bad_folder
    args, expected = cases["negative"]
    _one_line(forked(["compare", *args], folder), "nmfsc compare", expected)


def test_compare_gets_an_mtx_file_as_sparse(tmp_path, capsys, fake_compare):
    V = sp.random(30, 20, density=0.1, format="coo", random_state=np.random.default_rng(0))
    scipy.io.mmwrite(tmp_path / "counts.mtx", V)
    assert (
        main(["compare", str(tmp_path / "counts.mtx"), "-k", "2", "--out", str(tmp_path / "o")])
        == 0
    )
    (_, V_passed, K, _), _ = fake_compare
    assert sp.issparse(V_passed) and V_passed.shape == (30, 20) and K == 2
    np.testing.assert_array_equal(V_passed.toarray(), V.toarray())
    assert "counts.mtx (30 x 20, features x samples)" in capsys.readouterr().err


@needs_compare
def test_compare_on_an_mtx_file_end_to_end(tmp_path, forked):
    V = sp.random(40, 30, density=0.2, format="coo", random_state=np.random.default_rng(1))
    scipy.io.mmwrite(tmp_path / "counts.mtx", V)
    argv = [
        "compare",
        "counts.mtx",
        "-k",
        3,
        "--sparseness-h",
        0.6,
        "--methods",
        "nmf_sc,nmf_divergence",
        "--seeds",
        0,
        "--max-iter",
        5,
        "--no-progress",
    ]
    done = forked(argv, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "| nmf_sc (not converged) |" in done.stdout  # 5 iterations
    assert "| nmf_divergence (not converged) |" in done.stdout
    report = json.loads((tmp_path / "nmfsc-compare" / "counts" / "report.json").read_text())
    assert report["settings"]["shape"] == [40, 30]
    dense = nmfsc.compare(
        V.toarray(),
        3,
        sparseness_h=0.6,
        seeds=(0,),
        max_iter=5,
        methods=("nmf_sc", "nmf_divergence"),
        progress=False,
    )
    for row, expected in zip(report["rows"], dense.rows, strict=True):
        assert row["relative_error"] == pytest.approx(expected["relative_error"], rel=1e-9)


# --- issue 42: rows of empty cells, messages that mislead --------------------------


def test_fit_keeps_a_row_of_empty_cells_as_missing_data(tmp_path, forked):
    """Item 2: on 0.x the ``,,`` row was dropped (V 3 x 3 from 4 data rows), and
    without --missing-values skipped with exit 0."""
    (tmp_path / "r.csv").write_text("a,b,c\n1,2,3\n,,\n4,,6\n7,8,9\n")
    argv = ["fit", "r.csv", "-k", 2, "--max-iter", 3, "--no-progress", "--out", "o.npz"]
    done = forked([*argv, "--missing-values", "nan"], tmp_path)
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "o.npz", allow_pickle=False) as z:
        assert z["W"].shape == (4, 2)
        record = json.loads(str(z["record"]))
    assert record["data"]["shape"] == [4, 3] and record["data"]["observed_entries"] == 8
    (tmp_path / "o.npz").unlink()
    done = forked(argv, tmp_path)
    _one_line(done, "nmfsc fit", "r.csv: row 3 holds only empty cells; ")
    assert "--missing-values nan" in done.stderr and not (tmp_path / "o.npz").exists()


def test_fit_with_missing_values_calls_infinity_no_missing_value(tmp_path, forked):
    """Item 8b: with --missing-values nan, NaN is allowed; an inf is the problem."""
    (tmp_path / "inf.csv").write_text("1,2,3\n4,inf,6\n7,,9\n")
    argv = ["fit", "inf.csv", "-k", 2, "--missing-values", "nan", "--out", "o.npz"]
    done = forked(argv, tmp_path)
    expected = "inf.csv: 1 entry is infinite; the first is inf at row 2, column 2"
    _one_line(done, "nmfsc fit", expected)
    assert "infinity is not a missing value" in done.stderr and "NaN" not in done.stderr


@pytest.mark.parametrize(
    "command, out",
    [("fit", "o.npz"), ("fit", "gone/o.npz"), ("compare", "reports"), ("compare", "gone/sub")],
)
def test_a_broken_link_at_out_is_named_before_any_work(
    tmp_path, monkeypatch, capsys, fake_compare, command, out
):
    """Item 8c: on 0.x, compare ran every fit, then failed with "File exists"
    (status 1); fit replaced the link with a file, or failed with "File exists"
    when the link was a folder on the way."""
    data, _ = _data(tmp_path)
    link = tmp_path / Path(out).parts[0]
    link.symlink_to(tmp_path / "nowhere" / "target")
    calls = []
    real = nmfsc.nmf_sc
    monkeypatch.setattr(nmfsc, "nmf_sc", functools.wraps(real)(lambda *a, **k: calls.append(1)))
    argv = [command, str(data), "-k", "2", "--no-progress", "--out", str(tmp_path / out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    expected = (
        f"{link} is a broken symbolic link (to {tmp_path / 'nowhere' / 'target'}); "
        "remove the link or choose another --out\n"
    )
    assert err.startswith(f"nmfsc {command}: error: --out {tmp_path / out}")
    assert err.endswith(expected)
    assert calls == [] and fake_compare == [] and link.is_symlink()
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("damage", ["garbage", "format-version"])
def test_a_damaged_checkpoint_gets_the_command_lines_advice(tmp_path, capsys, damage):
    """Item 8d: on 0.x the message advised resume=False, which nmfsc fit does not
    have, after the data file's name, as if the data were at fault."""
    data, V = _data(tmp_path)
    checkpoint = tmp_path / "o.checkpoint.npz"
    if damage == "garbage":
        checkpoint.write_bytes(b"not an npz archive\n")
    else:
        with pytest.warns(nmfsc.ConvergenceWarning):
            nmfsc.nmf_sc(V, 2, max_iter=2, checkpoint=checkpoint)
        with np.load(checkpoint) as saved:
            arrays = {key: saved[key] for key in saved.files}
        np.savez(checkpoint, **{**arrays, "format_version": np.array(99)})
    argv = ["fit", str(data), "-k", "2", "--max-iter", "3", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "o.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "resume=False" not in err and "pickle" not in err
    assert err.startswith(f"nmfsc fit: error: checkpoint {checkpoint} ")
    assert err.endswith("; delete it (or move it away) and run the command again to start afresh\n")
    assert checkpoint.exists() and not (tmp_path / "o.npz").exists()
