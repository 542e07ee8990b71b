"""Issue 42, points 3 and 7: no output overwrites the data, and the memory checks
obey the process's own limits (RLIMIT_AS, RLIMIT_DATA, the control group).

Point 3: ``nmfsc fit data.npz --out data.npz`` replaced the data (exit 0), and
``nmfsc compare imgs/ --out imgs/`` wrote its PNGs among the images. Point 7:
under ``prlimit --as=4294967296`` a declared 10^9 x 10^9 ``.mtx`` was read until
"out of memory" (exit 1), as the check used MemAvailable alone; with
``--samples-as-rows`` a ``.mtx`` declaring 10^12 columns allocated its row
pointers before any check.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import nmfsc
from nmfsc import _commands, readers
from nmfsc.cli import main
from nmfsc.readers import DataFileError, memory_limit, read_matrix

ROOT = Path(__file__).parents[1]
GiB = 2**30


def _no_reading(monkeypatch):
    """Make reading the data fail the test: the refusal must come before it."""

    def read(*args, **kwargs):
        raise AssertionError("the data was read")

    monkeypatch.setattr(_commands, "read_matrix", read)


def _one_line(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, V=np.random.default_rng(0).random((10, 8)) + 0.1)
    return path


@pytest.fixture
def images(tmp_path):
    folder = tmp_path / "imgs"
    folder.mkdir()
    for k in range(4):
        pixels = (np.random.default_rng(k).random((4, 5)) * 200 + 20).astype(np.uint8)
        Image.fromarray(pixels).save(folder / f"{k}.png")
    return folder


def _tree(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_size) for p in folder.rglob("*"))


# --- point 3: an output that is, or is inside, the data -----------------------------


@pytest.mark.parametrize("spelling", ["same", "symlink", "hardlink", "dotdot"])
def test_fit_refuses_an_out_that_is_the_data_file(data, tmp_path, spelling, monkeypatch, capsys):
    """Exit 0 and the data replaced by the fit before."""
    (tmp_path / "sub").mkdir()
    out = {
        "same": data,
        "symlink": tmp_path / "link.npz",
        "hardlink": tmp_path / "hard.npz",
        "dotdot": tmp_path / "sub" / ".." / "data.npz",
    }[spelling]
    if spelling == "symlink":
        out.symlink_to(data)
    if spelling == "hardlink":
        os.link(data, out)
    before = data.read_bytes()
    _no_reading(monkeypatch)
    assert main(["fit", str(data), "-k", "2", "--out", str(out), "--no-progress"]) == 2
    err = _one_line(capsys)
    assert f"--out {out} is the data file {data}" in err
    assert "nmfsc writes nothing into the data it reads: choose another --out" in err
    assert ("under another name" in err) == (spelling == "hardlink")
    assert data.read_bytes() == before


def test_fit_refuses_a_checkpoint_that_is_the_data_file(tmp_path, monkeypatch, capsys):
    """The finished fit removed its checkpoint: the data file, here."""
    data = tmp_path / "o.checkpoint.npz"
    np.savez(data, V=np.random.default_rng(0).random((10, 8)) + 0.1)
    _no_reading(monkeypatch)
    out = tmp_path / "o.npz"
    assert main(["fit", str(data), "-k", "2", "--out", str(out), "--no-progress"]) == 2
    assert f"the checkpoint of --out {out}, {data}, is the data file" in _one_line(capsys)
    assert data.exists() and not out.exists()


def test_fit_refuses_an_out_inside_the_image_folder(images, monkeypatch, capsys):
    before = _tree(images)
    _no_reading(monkeypatch)
    out = images / "w.npz"
    assert main(["fit", str(images), "-k", "2", "--out", str(out), "--no-progress"]) == 2
    assert f"--out {out} is inside the data folder {images}" in _one_line(capsys)
    assert _tree(images) == before


@pytest.mark.parametrize("where", ["itself", "link", "subfolder"])
def test_compare_refuses_an_out_that_is_or_is_inside_the_image_folder(
    images, tmp_path, where, monkeypatch, capsys
):
    """``compare imgs/ --out imgs/`` wrote its figures among the images before."""
    out = {"itself": images, "link": tmp_path / "alias", "subfolder": images / "results"}[where]
    if where == "link":
        out.symlink_to(images, target_is_directory=True)
    before = _tree(images)
    _no_reading(monkeypatch)
    argv = ["compare", str(images), "-k", "2", "--sparseness-w", "0.5", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 2
    err = _one_line(capsys)
    if where == "subfolder":
        assert f"--out {out} is inside the data folder {images}" in err
    else:
        assert f"--out {out} is the data folder {images}" in err
    assert _tree(images) == before


def test_compare_refuses_its_default_out_inside_the_image_folder(images, monkeypatch, capsys):
    """Run from inside the image folder, the default --out lies in it: refused
    before fitting (the default is known once the data is read)."""

    def compare(*args, **kwargs):
        raise AssertionError("compare ran")

    monkeypatch.setattr(nmfsc, "compare", compare)
    monkeypatch.chdir(images)
    before = _tree(images)
    assert main(["compare", ".", "-k", "2", "--sparseness-w", "0.5", "--no-progress"]) == 2
    assert "the default --out nmfsc-compare/imgs is inside the data folder ." in _one_line(capsys)
    assert _tree(images) == before


def test_compare_refuses_a_data_file_its_reports_would_replace(tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    results.mkdir()
    data = results / "report.csv"
    np.savetxt(data, np.random.default_rng(0).random((6, 5)) + 0.1, delimiter=",")
    _no_reading(monkeypatch)
    argv = ["compare", str(data), "-k", "2", "--sparseness-w", "0.5", "--out", str(results)]
    assert main([*argv, "--no-progress"]) == 2
    err = _one_line(capsys)
    assert f"--out {results} holds the data file {data}, and compare writes its report.csv" in err
    # another file in the folder is no concern of compare's (nor a data folder beside it)
    _commands.check_not_input(results, results / "V.csv", folder=True)
    _commands.check_not_input(tmp_path, results, folder=True)


def test_compare_files_names_every_file_compare_writes(tmp_path):
    """check_not_input knows compare's file names from COMPARE_FILES: keep it whole."""
    V = np.random.default_rng(0).random((6, 5)) + 0.1
    comparison = nmfsc.compare(
        V,
        2,
        methods=["nmf_sc"],
        sparseness_w=0.5,
        seeds=(0,),
        max_iter=3,
        image_shape=(2, 3),
        progress=False,
    )
    written = {Path(p).name for p in comparison.save(tmp_path)}
    assert written <= _commands.COMPARE_FILES
    assert {"report.md", "bases.png"} <= written


def test_an_out_elsewhere_is_accepted(data, images, tmp_path):
    """No refusal for outputs beside the data, or a data folder that does not exist."""
    _commands.check_not_input(tmp_path / "fit.npz", data)
    _commands.check_not_input(tmp_path / "data.checkpoint.npz", data)
    _commands.check_not_input(tmp_path / "imgs-results", images, folder=True)
    _commands.check_not_input(tmp_path, data, folder=True)  # data.npz is no compare file
    _commands.check_not_input(tmp_path / "o.npz", tmp_path / "missing.npz")


# --- point 7: the process's memory limits -------------------------------------------


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A fake /proc and /sys/fs/cgroup: 64 GiB MemAvailable, no limits yet."""
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "meminfo").write_text(f"MemTotal: {128 * 2**20} kB\nMemAvailable: {64 * 2**20} kB\n")
    (proc / "status").write_text(f"Name:\tpython\nVmSize:\t{2**20} kB\nVmData:\t{2**19} kB\n")
    (proc / "cgroup").write_text("0::/\n")
    mount = tmp_path / "cgroup"
    mount.mkdir()
    monkeypatch.setattr(readers, "_MEMINFO", str(proc / "meminfo"))
    monkeypatch.setattr(readers, "_PROC_STATUS", str(proc / "status"))
    monkeypatch.setattr(readers, "_PROC_CGROUP", str(proc / "cgroup"))
    monkeypatch.setattr(readers, "_CGROUP_MOUNT", str(mount))
    resource = pytest.importorskip("resource")
    limits = {}

    def getrlimit(which):
        for name, value in limits.items():
            if which == getattr(resource, name):
                return value, resource.RLIM_INFINITY
        return resource.RLIM_INFINITY, resource.RLIM_INFINITY

    monkeypatch.setattr(resource, "getrlimit", getrlimit)
    return proc, mount, limits


def _write_group(folder, **files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".", 1)).write_text(f"{text}\n")


def test_memory_limit_is_memavailable_without_limits(machine):
    assert memory_limit() == (64 * GiB, "MemAvailable")


def test_memory_limit_counts_the_address_space_limit_less_vmsize(machine):
    """``prlimit --as=4294967296``: 4 GiB less the 1 GiB VmSize already used."""
    _, _, limits = machine
    limits["RLIMIT_AS"] = 4 * GiB
    assert memory_limit() == (3 * GiB, "RLIMIT_AS")
    limits["RLIMIT_DATA"] = 2 * GiB  # less VmData, 0.5 GiB
    assert memory_limit() == (int(1.5 * GiB), "RLIMIT_DATA")
    assert readers.available_memory() == int(1.5 * GiB)


def test_memory_limit_without_vmsize_is_the_whole_soft_limit(machine):
    proc, _, limits = machine
    (proc / "status").unlink()
    limits["RLIMIT_AS"] = 4 * GiB
    assert memory_limit() == (4 * GiB, "RLIMIT_AS")


def test_memory_limit_counts_the_cgroup_v2_limit_and_those_above(machine):
    proc, mount, _ = machine
    (mount / "cgroup.controllers").write_text("cpu memory\n")
    (proc / "cgroup").write_text("0::/jobs/job7\n")
    # the group: 8 GiB, 5 GiB used of which 1 GiB inactive file cache: 4 GiB left
    _write_group(
        mount / "jobs" / "job7",
        memory_max=8 * GiB,
        memory_current=5 * GiB,
        memory_stat=f"anon 1\ninactive_file {GiB}\nactive_file 2",
    )
    _write_group(mount / "jobs", memory_max="max", memory_current=9 * GiB)
    assert memory_limit() == (4 * GiB, "cgroup")
    _write_group(mount / "jobs", memory_max=12 * GiB, memory_current=10 * GiB)  # 2 GiB left
    assert memory_limit() == (2 * GiB, "cgroup")


def test_memory_limit_counts_the_cgroup_v1_limit(machine):
    proc, mount, _ = machine
    (proc / "cgroup").write_text("5:cpu,cpuacct:/x\n4:memory:/docker/abc\n0::/\n")
    group = mount / "memory" / "docker" / "abc"
    _write_group(
        group,
        memory_limit_in_bytes=6 * GiB,
        memory_usage_in_bytes=3 * GiB,
        memory_stat=f"inactive_file 7\ntotal_inactive_file {GiB}",
    )
    _write_group(mount / "memory", memory_limit_in_bytes=9223372036854771712)  # no limit
    assert memory_limit() == (4 * GiB, "cgroup")
    # a container that mounts its own group as the root: its folder is not there
    (proc / "cgroup").write_text("4:memory:/docker/other\n")
    _write_group(mount / "memory", memory_limit_in_bytes=5 * GiB, memory_usage_in_bytes=GiB)
    assert memory_limit() == (4 * GiB, "cgroup")


def test_memory_limit_survives_unreadable_cgroup_files(machine):
    proc, mount, _ = machine
    (proc / "cgroup").write_text("garbage\n4:memory:/../../etc\n0::/a\n")
    _write_group(mount / "memory", memory_limit_in_bytes="nonsense", memory_usage_in_bytes=1)
    assert memory_limit() == (64 * GiB, "MemAvailable")


def _tall_mtx(path, rows, cols):
    entries = "1 1 1.0\n2 2 1.0\n3 3 2.0\n"
    path.write_text(f"%%MatrixMarket matrix coordinate real general\n{rows} {cols} 3\n{entries}")
    return path


def test_declared_sizes_are_checked_against_the_process_limit(tmp_path, monkeypatch, capsys):
    """The messages name the limit that binds."""
    monkeypatch.setattr(readers, "memory_limit", lambda: (GiB, "cgroup"))
    tall = _tall_mtx(tmp_path / "tall.mtx", 10**9, 10**9)
    with pytest.raises(DataFileError, match="1 GiB is available under its control group's"):
        read_matrix(tall)
    monkeypatch.setattr(_commands, "memory_limit", lambda: (10**5, "RLIMIT_AS"))
    small = _tall_mtx(tmp_path / "small.mtx", 3, 10**4)
    assert main(["fit", str(small), "-k", "2", "--out", str(tmp_path / "o.npz")]) == 2
    err = _one_line(capsys)
    assert "W and H of 2 components need about" in err
    assert "available under the process's address-space limit (RLIMIT_AS, ulimit -v)" in err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS as Linux counts it")
def test_the_cli_under_prlimit_as_refuses_a_huge_mtx_before_reading(tmp_path):
    """``prlimit --as=...``: exit 1 "out of memory" before (MemAvailable alone)."""
    import resource

    # 6 GB of row pointers against a 3 GiB address space
    tall = _tall_mtx(tmp_path / "tall.mtx", 750_000_000, 750_000_000)

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 * GiB, resource.getrlimit(resource.RLIMIT_AS)[1]))

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    argv = ["fit", str(tall), "-k", "2", "--out", str(tmp_path / "o.npz"), "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-m", "nmfsc", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "tall.mtx declares a 750000000 x 750000000 sparse matrix with 3 entries" in done.stderr
    if readers._meminfo_available() > 6 * 10**9:  # else MemAvailable refuses it first
        assert "under the process's address-space limit (RLIMIT_AS, ulimit -v)" in done.stderr
    assert not (tmp_path / "o.npz").exists()


def test_samples_as_rows_checks_the_declared_columns_before_allocating(tmp_path, capsys):
    """A 3 x 10^12 .mtx (or COO save_npz file) read with samples as rows: V's
    10^12 row pointers were allocated (MemoryError) before any check."""
    wide = _tall_mtx(tmp_path / "wide.mtx", 3, 10**12)
    assert read_matrix(wide)[0].shape == (3, 10**12)  # as it is: 4 row pointers
    with pytest.raises(DataFileError, match="wide.mtx declares a 3 x 1000000000000 sparse matrix"):
        read_matrix(wide, samples_as_rows=True)
    np.savez(
        tmp_path / "coo.npz",
        format=np.array("coo"),
        shape=np.array([3, 10**12]),
        row=np.array([0, 1, 2]),
        col=np.array([0, 1, 2]),
        data=np.array([1.0, 1.0, 2.0]),
    )
    with pytest.raises(DataFileError, match="coo.npz declares a sparse matrix with 3 entries"):
        read_matrix(tmp_path / "coo.npz", samples_as_rows=True)
    argv = ["fit", str(wide), "-k", "2", "--samples-as-rows", "--out", str(tmp_path / "o.npz")]
    assert main(argv) == 2
    assert "reading it needs about" in _one_line(capsys)
