"""``python -m reproduce`` under Ctrl-C, kills, damaged caches and missing data.

A tiny experiment (nmf_sc, M = 3, on a random 361 x 30 matrix drawn as the
CBCL data set) stands in for the paper's runs: it is put in place of Figure 5's
experiments, so the real command line, harness and figure writer run it.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import nmfsc
import reproduce._harness as harness
import reproduce.experiments as experiments
import reproduce.fig5 as fig5
from nmfsc.solvers import dispatch, registry
from reproduce.__main__ import main
from reproduce._figure import figure_main
from reproduce._output import finish_pending

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _default_sigint_handler():
    """Run each test with Python's own SIGINT handler, as a user's process has.

    In CI's full run an earlier test left SIGINT ignored in the test process
    (seen after tests/test_dask.py joined the suite; not reproduced in a
    shorter run), and the subprocesses started here inherit the disposition:
    Ctrl-C then could not reach them. These tests are about reproduce's
    handling of Ctrl-C, so they start from the normal handler and restore
    whatever was there."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


PROG = "python -m reproduce: "
MAX_ITER = 60
SET = ("fig5.png", "fig5.pdf", "fig5.json")

# The tiny stand-in, as a script for the tests that need a process of their own.
SETUP = """
import numpy as np
import reproduce._harness as harness
import reproduce.experiments as experiments
import reproduce.fig5 as fig5
from nmfsc.solvers import dispatch, registry
from reproduce._figure import figure_main

V = np.abs(np.random.default_rng(7).standard_normal((361, 30)))
harness.load_dataset = lambda name, seed: V


def use_tiny(max_iter, sparseness_w=0.6):
    params = {"sparseness_w": sparseness_w, "tol": 0.0}
    exp = harness.Experiment("tiny", "cbcl", "nmf_sc", 3, params, 600.0, max_iter)
    experiments.EXPERIMENTS = {"tiny": exp}
    fig5.main = lambda options: figure_main(
        options, "fig5", "tiny", {"tiny": "(a)"}, lambda runs: {"sW": sparseness_w}
    )
"""


@pytest.fixture
def tiny(monkeypatch):
    """Figure 5 runs the tiny experiment; returns a function choosing its settings."""
    V = np.abs(np.random.default_rng(7).standard_normal((361, 30)))
    monkeypatch.setattr(harness, "load_dataset", lambda name, seed: V)

    def use(max_iter=MAX_ITER, sparseness_w=0.6):
        params = {"sparseness_w": sparseness_w, "tol": 0.0}
        exp = harness.Experiment("tiny", "cbcl", "nmf_sc", 3, params, 600.0, max_iter)
        monkeypatch.setattr(experiments, "EXPERIMENTS", {"tiny": exp})
        monkeypatch.setattr(
            fig5,
            "main",
            lambda options: figure_main(
                options, "fig5", "tiny", {"tiny": "(a)"}, lambda runs: {"sW": sparseness_w}
            ),
        )

    use()
    return use


@pytest.fixture
def iterations():
    """Records the iterations nmf_sc runs; ``stop_at`` makes one raise KeyboardInterrupt.

    reproduce finds nmf_sc in the solvers' table, so the table installed in
    :mod:`nmfsc.solvers.dispatch` gets a row whose function is the watched one
    (the registry's own table is put back afterwards)."""
    seen = {"iterations": [], "stop_at": None}
    solver = nmfsc.nmf_sc

    def watched(*args, **kwargs):
        def callback(state):
            seen["iterations"].append(state.iteration)
            if state.iteration == seen["stop_at"]:
                raise KeyboardInterrupt

        return solver(*args, callback=callback, **kwargs)

    rows = registry.SOLVERS
    dispatch.install(replace(s, function=watched) if s.function is solver else s for s in rows)
    yield seen
    dispatch.install(rows)


def run(out, *extra):
    return main(["fig5", "--out", str(out), "--no-progress", *extra])


def cache_files(out, suffix):
    return sorted(p.name for p in (out / ".cache").glob(f"tiny-*{suffix}"))


def entry(out):
    (npz,) = [p for p in (out / ".cache").glob("tiny-*.npz") if "checkpoint" not in p.name]
    with np.load(npz) as saved:
        return saved["W"], saved["H"], json.loads(npz.with_suffix(".json").read_text())


def last_line(err):
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    return lines[-1]


def test_ctrl_c_keeps_the_checkpoint_caches_nothing_and_the_next_run_resumes(
    tmp_path, tiny, iterations, capsys
):
    out = tmp_path / "out"
    iterations["stop_at"] = 25
    assert run(out) == 130
    line = last_line(capsys.readouterr().err)
    assert line.startswith(PROG + "interrupted: tiny stopped at iteration 25; its checkpoint ")
    assert line.endswith("is kept and the same command resumes from it")
    assert len(cache_files(out, ".checkpoint.npz")) == 1
    assert cache_files(out, ".json") == []  # no cache entry
    assert not any((out / name).exists() for name in SET)

    iterations.update(stop_at=None, iterations=[])
    assert run(out) == 0
    assert iterations["iterations"] == list(range(26, MAX_ITER + 1))  # resumed at 25
    assert cache_files(out, ".checkpoint.npz") == []
    W, H, stats = entry(out)
    assert stats["n_iter"] == MAX_ITER and stats["stop_reason"] == "max_iter"

    fresh = tmp_path / "fresh"
    assert run(fresh) == 0
    W0, H0, stats0 = entry(fresh)
    assert np.array_equal(W, W0) and np.array_equal(H, H0)
    assert stats["objective_every_10"] == stats0["objective_every_10"]
    assert stats["final_objective"] == stats0["final_objective"]


@pytest.fixture
def stand_in_for_nmf_sc():
    """Installs a solvers' table whose nmf_sc rows run a stand-in (reproduce
    finds nmf_sc in the table); the registry's own table is put back afterwards."""
    real = nmfsc.nmf_sc

    def install(function):
        rows = registry.SOLVERS
        dispatch.install(replace(s, function=function) if s.function is real else s for s in rows)

    yield install
    dispatch.install(registry.SOLVERS)


def test_a_time_guard_that_fires_is_checkpointed_and_the_next_run_completes_it(
    tmp_path, tiny, stand_in_for_nmf_sc, capsys
):
    """The guard's stop is never a cached result, nor drawn over the figure in
    the output folder (it goes to unfinished/, exit status 3): the next
    invocation continues the checkpoint (with a fresh guard) to the run a guard
    never touched, and writes the figure."""
    tiny(max_iter=300)
    solver, resumed = nmfsc.nmf_sc, []

    def slow(*args, **kwargs):  # 2 ms per iteration: a loaded machine
        resumed.append(kwargs["resume"])
        return solver(*args, callback=lambda state: time.sleep(0.002), **kwargs)

    stand_in_for_nmf_sc(slow)
    out = tmp_path / "out"
    out.mkdir()
    for name in SET:  # the committed figure, which a guarded run must not replace
        (out / name).write_text("committed")
    assert run(out, "--max-time", "0.1") == 3  # unfinished work
    printed = capsys.readouterr().out
    assert "1 run(s) did not stop by their tolerance" in printed
    assert "tiny: stopped by max_time" in printed and "the next run continues it" in printed
    assert "unfinished: 1 figure(s) drew runs stopped by their time guard" in printed
    assert "  fig5: tiny" in printed
    assert cache_files(out, ".json") == []  # not cached as final
    assert len(cache_files(out, ".checkpoint.npz")) == 1
    assert all((out / name).read_text() == "committed" for name in SET)
    scratch = out / "unfinished"
    guarded = json.loads((scratch / "fig5.json").read_text())["experiments"]["tiny"]
    assert guarded["stop_reason"] == "max_time" and 0 < guarded["n_iter"] < 300

    assert run(out) == 0  # the default guard (600 s): completes it
    assert resumed == [False, True]
    assert json.loads((out / "fig5.json").read_text())["experiments"]["tiny"]["n_iter"] == 300
    assert not any((scratch / name).exists() for name in SET)  # its stale copy is gone
    W, H, stats = entry(out)
    assert stats["n_iter"] == 300 and stats["stop_reason"] == "max_iter"
    assert cache_files(out, ".checkpoint.npz") == []
    assert "tiny: stopped by max_iter after 300 iterations" in capsys.readouterr().out

    stand_in_for_nmf_sc(solver)
    fresh = tmp_path / "fresh"
    assert run(fresh) == 0
    W0, H0, _ = entry(fresh)
    assert np.array_equal(W, W0) and np.array_equal(H, H0)


def test_the_convergence_figure_of_an_unfinished_figure_is_unfinished_too(
    tmp_path, tiny, stand_in_for_nmf_sc, capsys
):
    """convergence reads the figures' JSON: one drawn into unfinished/ by this
    invocation is read from there, and the convergence figure goes there too."""
    import shutil

    tiny(max_iter=300)
    solver = nmfsc.nmf_sc
    stand_in_for_nmf_sc(
        lambda *args, **kwargs: solver(*args, callback=lambda s: time.sleep(0.002), **kwargs)
    )
    out = tmp_path / "out"
    out.mkdir()
    for source in ("fig1", "fig3", "fig4", "sec5"):  # the committed figures' numbers
        shutil.copy(REPO / "figures" / f"{source}.json", out)
    argv = ["fig5", "convergence", "--out", str(out), "--no-progress", "--max-time", "0.1"]
    assert main(argv) == 3
    printed = capsys.readouterr().out
    assert "  fig5: tiny" in printed and "  convergence: tiny" in printed
    assert not (out / "convergence.json").exists() and not (out / "fig5.json").exists()
    drawn = json.loads((out / "unfinished" / "convergence.json").read_text())
    assert drawn["runs"]["tiny"]["stop_reason"] == "max_time"


def test_force_runs_an_experiment_once_per_invocation(tmp_path, tiny, iterations, monkeypatch):
    """Two figures that share an experiment, with --force: one run, not two."""
    import reproduce.fig4 as fig4

    monkeypatch.setattr(fig4, "main", fig5.main)  # Figure 4 draws the tiny experiment too
    out = tmp_path / "out"
    argv = ["fig4", "fig5", "--out", str(out), "--no-progress", "--force"]
    assert main(argv) == 0
    assert iterations["iterations"] == list(range(1, MAX_ITER + 1))
    iterations["iterations"] = []
    assert main(argv) == 0  # a new invocation: --force runs it again, once
    assert iterations["iterations"] == list(range(1, MAX_ITER + 1))


@pytest.mark.parametrize("damage", ["truncate npz", "truncate json", "garbage npz"])
def test_a_damaged_cache_entry_is_recomputed_with_a_warning(tmp_path, tiny, capsys, damage):
    out = tmp_path / "out"
    tiny(max_iter=20)
    assert run(out) == 0
    W, H, _ = entry(out)
    (name,) = cache_files(out, ".json")
    path = out / ".cache" / (name[:-5] + (".npz" if "npz" in damage else ".json"))
    data = path.read_bytes()
    path.write_bytes(b"PK\x03\x04 not a zip" if "garbage" in damage else data[: len(data) // 2])
    capsys.readouterr()
    assert run(out) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{PROG}CacheWarning: cache entry {name[:-5]}.npz of tiny is unreadable" in err
    W1, H1, stats = entry(out)
    assert stats["cached"] is False and np.array_equal(W, W1) and np.array_equal(H, H1)
    assert json.loads((out / "fig5.json").read_text())["experiments"]["tiny"]["cached"] is False


def test_a_damaged_checkpoint_is_dropped_with_a_warning(tmp_path, tiny, iterations, capsys):
    out = tmp_path / "out"
    iterations["stop_at"] = 10
    assert run(out) == 130
    (name,) = cache_files(out, ".checkpoint.npz")
    (out / ".cache" / name).write_bytes(b"damaged")
    iterations.update(stop_at=None, iterations=[])
    capsys.readouterr()
    assert run(out) == 0
    err = capsys.readouterr().err
    assert f"{PROG}CacheWarning: checkpoint " in err and "starting tiny afresh" in err
    assert iterations["iterations"][0] == 1
    assert "Traceback" not in err


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError])
def test_a_failure_while_writing_a_figure_leaves_the_old_set(tmp_path, tiny, monkeypatch, stop):
    import nmfsc.plotting

    out = tmp_path / "out"
    assert run(out) == 0
    old = {name: (out / name).read_bytes() for name in SET}
    tiny(sparseness_w=0.7)  # another figure
    writes = []
    real = nmfsc.plotting.write_atomic

    def fail_after_the_first(path, data):
        writes.append(path)
        if len(writes) > 1:
            raise stop("simulated")
        return real(path, data)

    monkeypatch.setattr(nmfsc.plotting, "write_atomic", fail_after_the_first)
    if stop is KeyboardInterrupt:
        assert run(out) == 130
    else:
        with pytest.raises(OSError, match="simulated"):
            run(out)
    assert {name: (out / name).read_bytes() for name in SET} == old
    assert sorted(p.name for p in out.iterdir()) == [".cache", *sorted(SET)]  # no leftovers


def _script(tmp_path, body):
    script = tmp_path / "script.py"
    script.write_text(SETUP + textwrap.dedent(body))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return [sys.executable, str(script)], env


def test_a_kill_between_renames_is_completed_by_the_next_run(tmp_path, tiny, capsys):
    out = tmp_path / "out"
    assert run(out) == 0
    old = {name: (out / name).read_bytes() for name in SET}
    command, env = _script(
        tmp_path,
        """
        import os, sys
        from reproduce.__main__ import main

        use_tiny(60, sparseness_w=0.7)
        real = os.replace
        def replace(src, dst):
            if str(dst).endswith("fig5.pdf"):
                os._exit(137)  # killed after the PNG was renamed
            real(src, dst)
        os.replace = replace
        main(["fig5", "--out", sys.argv[1], "--no-progress"])
        """,
    )
    done = subprocess.run([*command, str(out)], env=env, capture_output=True, timeout=120)
    assert done.returncode == 137, done.stderr.decode()
    staged = {name: out / f".fig5.new.{name.split('.')[1]}" for name in SET}
    assert (out / ".fig5.swap.json").is_file()
    assert (out / "fig5.png").read_bytes() != old["fig5.png"]  # a mixed set, for now
    new = {name: staged[name].read_bytes() for name in SET[1:]}
    assert new["fig5.pdf"] != old["fig5.pdf"] and new["fig5.json"] != old["fig5.json"]

    assert finish_pending(out) == ["fig5"]
    assert all((out / name).read_bytes() == data for name, data in new.items())
    assert sorted(p.name for p in out.iterdir()) == [".cache", *sorted(SET)]


def test_sigint_stops_a_running_experiment_with_one_line_and_status_130(tmp_path):
    out = tmp_path / "out"
    command, env = _script(
        tmp_path,
        """
        import sys
        from reproduce.__main__ import main

        use_tiny(10**7)
        sys.exit(main(["fig5", "--out", sys.argv[1], "--no-progress"]))
        """,
    )
    process = subprocess.Popen(
        [*command, str(out)], env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while not list((out / ".cache").glob("tiny-*.checkpoint.npz")):  # iterating
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    line = last_line(err)
    assert line.startswith(PROG + "interrupted: tiny stopped at iteration ")
    assert len(cache_files(out, ".checkpoint.npz")) == 1 and cache_files(out, ".json") == []


def test_missing_data_is_one_line_and_status_2(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "NMFSC_DATA_DIR": str(tmp_path / "empty"),
        "HTTPS_PROXY": "http://127.0.0.1:9",  # no download can succeed, or take long
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "",
    }
    code = (
        "import sys, time; time.sleep = lambda s: None\n"  # no waits between retries
        "from reproduce.__main__ import main\n"
        f"sys.exit(main(['fig1', '--quick', '--no-progress', '--out', {str(tmp_path / 'o')!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(PROG + "error: The data file ")


@pytest.mark.parametrize(
    "argv", [["--seed", "-1"], ["--max-time", "nan"], ["--max-time", "0"], ["fig9"]]
)
def test_bad_command_line_values_are_one_line_and_status_2(argv, capsys):
    assert main(["fig2", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(PROG + "error: ")


def test_quick_never_writes_into_figures():
    assert harness.Options(quick=True).out_dir == Path(harness.QUICK_OUT)
    assert harness.Options(quick=True, out=str(REPO / "figures")).out_dir == Path(harness.QUICK_OUT)
    assert harness.Options(quick=False).out_dir == Path("figures")


def test_ctrl_c_stops_compare_at_once_and_writes_nothing(tmp_path, monkeypatch, capsys):
    import signal as signals

    def compare_that_swallows_ctrl_c(*args, **kwargs):
        try:  # what a solver inside nmfsc.compare does with Ctrl-C
            signals.raise_signal(signals.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            pass
        raise AssertionError("went on after Ctrl-C")

    monkeypatch.setattr(nmfsc, "compare", compare_that_swallows_ctrl_c)
    argv = ["compare", "--dataset", "bars", "--quick", "--out", str(tmp_path), "--no-progress"]
    assert main(argv) == 130
    line = last_line(capsys.readouterr().err)
    assert line == PROG + "interrupted: compare bars stopped; nothing of bars was written"
    assert not (tmp_path / "compare").exists()
    assert signals.getsignal(signals.SIGINT) is signals.default_int_handler
