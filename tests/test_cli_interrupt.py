"""``nmfsc fit`` and ``nmfsc compare`` under Ctrl-C, kill and unwritable output
(issue 30, points 4-6), with real signals sent to a separate process.

Each process runs a small script that slows nmf_sc down (a callback that
sleeps, and touches a flag file once iterating) and then calls
:func:`nmfsc.cli.main`, so that a signal arrives while the solver iterates.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import nmfsc
from nmfsc import atomic
from nmfsc.cli import main

REPO = Path(__file__).resolve().parent.parent

SLOW = """
import functools, sys, time
from dataclasses import replace
from pathlib import Path
import nmfsc
from nmfsc.cli import main
from nmfsc.solvers import dispatch, registry

FLAG = Path(sys.argv[1])
real = nmfsc.nmf_sc

@functools.wraps(real)  # the parser reads nmf_sc's defaults
def slow(*args, callback=None, **kwargs):
    def watched(state):
        if state.iteration >= 3:
            FLAG.touch()
        time.sleep(0.02)
        return callback(state) if callback is not None else None
    return real(*args, callback=watched, **kwargs)

# the command line finds nmf_sc in the solvers' table: its row runs the slow one
dispatch.install(replace(s, function=slow) if s.function is real else s for s in registry.SOLVERS)
nmfsc.nmf_sc = slow
sys.exit(main(sys.argv[2:]))
"""


@pytest.fixture(autouse=True)
def _default_sigint_handler():
    """Python's own SIGINT handler, inherited by the processes started here
    (see tests/test_reproduce_interrupt.py)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def data(tmp_path):
    V = np.abs(np.random.default_rng(3).standard_normal((20, 30))) + 0.01
    np.save(tmp_path / "v.npy", V)
    return tmp_path / "v.npy"


def start(tmp_path, *argv):
    script = tmp_path / "slow.py"
    script.write_text(SLOW)
    flag = tmp_path / "iterating"
    flag.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, str(script), str(flag), *map(str, argv)]
    process = subprocess.Popen(
        command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return process, flag


def signal_when_iterating(process, flag, signum):
    deadline = time.monotonic() + 120
    while not flag.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


def leftovers(folder):
    """Hidden temporaries and staging folders in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp") or ".new." in p.name)


# --- point 4: --out is checked before any work --------------------------------------


def test_fit_refuses_an_unwritable_out_before_fitting(data, tmp_path, monkeypatch, capsys):
    (tmp_path / "afile").write_text("")
    calls = []
    real = nmfsc.nmf_sc
    monkeypatch.setattr(nmfsc, "nmf_sc", functools.wraps(real)(lambda *a, **k: calls.append(1)))
    argv = ["fit", str(data), "-k", "2", "--out", str(tmp_path / "afile" / "o.npz")]
    assert main([*argv, "--no-progress"]) == 1
    assert calls == []  # on 0669ffc every iteration ran first
    err = capsys.readouterr().err.strip()
    assert err.endswith("afile/o.npz: " + str(tmp_path / "afile") + " is not a folder")
    assert "\n" not in err


def test_compare_refuses_an_unwritable_out_before_comparing(data, tmp_path, monkeypatch, capsys):
    (tmp_path / "afile").write_text("")
    calls = []
    monkeypatch.setattr(nmfsc, "compare", lambda *a, **k: calls.append(1), raising=False)
    for out in (tmp_path / "afile", tmp_path / "afile" / "sub"):
        assert main(["compare", str(data), "-k", "2", "--out", str(out), "--no-progress"]) == 1
        assert "cannot write" in capsys.readouterr().err
    assert calls == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_fit_refuses_a_read_only_folder(data, tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert main(["fit", str(data), "-k", "2", "--out", str(folder / "o.npz")]) == 1
    finally:
        folder.chmod(0o700)
    assert "is not writable" in capsys.readouterr().err


# --- point 5: Ctrl-C stops, exits 130, keeps what can be resumed ----------------------


def test_ctrl_c_stops_fit_with_130_keeps_the_checkpoint_and_the_same_command_resumes(
    data, tmp_path
):
    out = tmp_path / "o.npz"
    out.write_bytes(b"the old result")
    argv = [
        "fit",
        data,
        "-k",
        3,
        "--sparseness-h",
        0.6,
        "--max-iter",
        400,
        "--tol",
        0,
        "--no-progress",
        "--out",
        out,
    ]
    process, flag = start(tmp_path, *argv)
    status, _, err = signal_when_iterating(process, flag, signal.SIGINT)
    assert status == 130, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("nmfsc fit: error: interrupted at iteration ")
    assert "resume=True" not in err  # the library's advice for Python, not the command's
    assert out.read_bytes() == b"the old result"  # not replaced by a partial run
    checkpoint = tmp_path / "o.checkpoint.npz"
    assert checkpoint.exists() and leftovers(tmp_path) == []
    stopped_at = int(last.split("iteration ")[1].split(";")[0])
    assert 3 <= stopped_at < 400

    # the same command resumes, and ends where an uninterrupted run ends
    assert main([str(a) for a in argv]) == 0
    assert not checkpoint.exists()
    resumed = np.load(out)
    whole = nmfsc.nmf_sc(np.load(data), 3, sparseness_h=0.6, max_iter=400, tol=0, random_state=0)
    np.testing.assert_array_equal(resumed["W"], whole.W)
    np.testing.assert_array_equal(resumed["objective"], whole.objective)
    assert json.loads(str(resumed["record"]))["n_iter"] == whole.n_iter > stopped_at


def test_ctrl_c_stops_compare_with_130_and_writes_no_report(data, tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").write_text("the old report")
    argv = [
        "compare",
        data,
        "-k",
        3,
        "--methods",
        "nmf_sc",
        "nmf_euclidean",
        "--seeds",
        0,
        1,
        "--sparseness-h",
        0.6,
        "--max-iter",
        2000,
        "--tol",
        0,
        "--no-progress",
        "--out",
        out,
    ]
    process, flag = start(tmp_path, *argv)
    status, stdout, err = signal_when_iterating(process, flag, signal.SIGINT)
    # on 0669ffc: the cut-short run was counted, the rest ran, exit 0
    assert status == 130, err
    assert err.strip().splitlines()[-1] == "nmfsc compare: error: interrupted"
    assert stdout == ""  # no table
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]
    assert (out / "report.md").read_text() == "the old report"


# --- point 6: kill, temporaries, sets -------------------------------------------------


def test_kill_stops_fit_with_143_keeps_the_checkpoint_and_leaves_no_temporary(data, tmp_path):
    out = tmp_path / "o.npz"
    argv = [
        "fit",
        data,
        "-k",
        3,
        "--sparseness-w",
        0.6,
        "--max-iter",
        10**6,
        "--tol",
        0,
        "--no-progress",
        "--out",
        out,
    ]
    process, flag = start(tmp_path, *argv)
    status, _, err = signal_when_iterating(process, flag, signal.SIGTERM)
    assert status == 143, err
    assert "KeyboardInterrupt" not in err
    assert not out.exists() and (tmp_path / "o.checkpoint.npz").exists()
    assert leftovers(tmp_path) == []


def test_a_temporary_of_a_killed_writer_is_removed_by_the_next_write(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    orphan = tmp_path / f".o.npz.{int(dead.stdout)}.abc123.tmp"
    orphan.write_bytes(b"half")
    mine = tmp_path / f".o.npz.{os.getpid()}.def456.tmp"  # a live writer's: kept
    mine.write_bytes(b"half")
    atomic.write_atomic(tmp_path / "o.npz", b"new")
    assert not orphan.exists() and mine.exists()
    assert (tmp_path / "o.npz").read_bytes() == b"new"


class _Tagged:
    """A stand-in comparison whose save writes ``n`` files holding ``tag``."""

    def __init__(self, tag, n=12):
        self.tag, self.n = tag, n

    def save(self, folder):
        paths = []
        for i in range(self.n):
            paths.append(atomic.write_atomic(Path(folder) / f"f{i:02d}.txt", self.tag))
        return paths


WRITER = """
import sys
from nmfsc._commands import save_compare
sys.path.insert(0, sys.argv[3])
from test_cli_interrupt import _Tagged
for k in range(10**6):
    save_compare(_Tagged(f"{sys.argv[2]}-{k}", n=int(sys.argv[4])), sys.argv[1])
"""


def _tags(out):
    """The set a reader sees: the names that open (a name of the other set can be a
    dangling link for a moment, or after a kill), and what they hold."""
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith(".") and p.exists())
    return names, {(out / n).read_text() for n in names}


def test_compare_outputs_are_replaced_as_a_set_under_kill_and_concurrency(tmp_path):
    from nmfsc._commands import save_compare

    out = tmp_path / "out"
    save_compare(_Tagged("old", n=20), out)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    here = str(Path(__file__).parent)
    for trial in range(4):
        # two concurrent writers on one folder, fewer files than the old set: both killed
        writers = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(out), f"w{w}t{trial}", here, str(8 + w)], env=env
            )
            for w in range(2)
        ]
        time.sleep(1.5 + 0.37 * trial)
        for process in writers:
            process.send_signal(signal.SIGKILL)
            process.wait()
        # a kill at any step leaves one whole set (issue 42, point 5: a kill between
        # two renames left a mix, and the journal, until the next write)
        names, tags = _tags(out)
        assert len(tags) == 1
        (tag,) = tags
        sizes = {"o": 20, "c": 5, "w": 8 + int(tag[1]) if tag[0] == "w" else None}
        assert len(names) == sizes[tag[0]]  # old, the last check, or writer 0 or 1
        assert not (out / atomic.SET_JOURNAL).exists()
        save_compare(_Tagged(f"check{trial}", n=5), out)  # tidies, then replaces
        names, tags = _tags(out)
        assert names == [f"f{i:02d}.txt" for i in range(5)] and tags == {f"check{trial}"}
        assert [p.name for p in out.iterdir() if ".new." in p.name or p.suffix == ".tmp"] == []
        assert [p.name for p in out.iterdir() if p.is_symlink() and not p.exists()] == []


# --- a full disk ---------------------------------------------------------------------


def _full_disk(path, mode="wb"):
    import errno

    raise OSError(errno.ENOSPC, "No space left on device", str(path))


@pytest.mark.parametrize("where", ["out", "checkpoint"])
def test_a_full_disk_is_one_line_with_status_1_and_the_old_file_intact(
    data, tmp_path, monkeypatch, capsys, where
):
    import nmfsc._commands
    import nmfsc.solvers.checkpoint

    out = tmp_path / "o.npz"
    out.write_bytes(b"the old result")
    module = nmfsc._commands if where == "out" else nmfsc.solvers.checkpoint
    monkeypatch.setattr(module, "atomic_writer", _full_disk)
    argv = ["fit", str(data), "-k", "2", "--max-iter", "5", "--no-progress", "--out", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()  # after main's ConvergenceWarning line
    assert err[-1].startswith("nmfsc fit: error: cannot write ") and "Traceback" not in err
    assert err[-1].endswith("No space left on device")
    assert out.read_bytes() == b"the old result"


def test_fit_starts_afresh_from_a_checkpoint_of_other_options(data, tmp_path, capsys):
    checkpoint = tmp_path / "o.checkpoint.npz"
    with pytest.warns(nmfsc.ConvergenceWarning):
        nmfsc.nmf_sc(np.load(data), 2, sparseness_h=0.3, max_iter=3, checkpoint=checkpoint)
    argv = [
        "fit",
        str(data),
        "-k",
        "2",
        "--sparseness-h",
        "0.6",
        "--max-iter",
        "3",
        "--no-progress",
        "--out",
        str(tmp_path / "o.npz"),
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"{checkpoint} holds a run with other options or data: starting afresh" in err
    assert not checkpoint.exists() and (tmp_path / "o.npz").exists()
