"""Checkpoints: a stopped (or killed) run resumed is bit-identical to an
uninterrupted one; mismatched or damaged checkpoints are refused clearly;
writes are atomic."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import nmfsc
from nmfsc import ConvergenceWarning
from nmfsc.solvers import CheckpointMismatchError
from nmfsc.solvers.checkpoint import FORMAT_VERSION

M = 4
REPO = Path(nmfsc.__file__).resolve().parent.parent
CASES = [
    (nmfsc.nmf_sc, {"sparseness_w": 0.6, "sparseness_h": 0.5}),
    (nmfsc.nmf_sc, {"sparseness_h": 0.7}),
    (nmfsc.nmf_euclidean, {}),
    (nmfsc.nmf_divergence, {}),
    (nmfsc.local_nmf, {"alpha": 2.0}),
    (nmfsc.sparse_nmf, {"alpha": 10.0}),
]
IDS = ["sc-both", "sc-h", "euclidean", "divergence", "lnmf", "snmf"]


@pytest.fixture
def V():
    return 3.0 * np.abs(np.random.default_rng(1).standard_normal((30, 40))) + 0.01


def run(solver, V, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return solver(V, M, random_state=4, tol=0.0, **kwargs)


def assert_identical(a, b):
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.H, b.H)
    np.testing.assert_array_equal(a.objective, b.objective)
    assert a.n_iter == b.n_iter and a.step_sizes == b.step_sizes
    assert a.times.shape == b.times.shape


@pytest.mark.parametrize(("solver", "params"), CASES, ids=IDS)
def test_stop_then_resume_is_bit_identical(V, tmp_path, solver, params):
    path = tmp_path / "run.ckpt"
    whole = run(solver, V, max_iter=30, **params)
    with pytest.warns(ConvergenceWarning, match="max_iter=13 reached"):
        first = solver(
            V,
            M,
            random_state=4,
            tol=0.0,
            max_iter=13,
            checkpoint=path,
            checkpoint_every=7,
            **params,
        )
    assert first.n_iter == 13 and path.exists()
    resumed = run(
        solver, V, max_iter=30, checkpoint=path, checkpoint_every=7, resume=True, **params
    )
    assert_identical(resumed, whole)
    assert resumed.times[13] == first.times[13]  # the time count continues


def test_an_error_saves_the_committed_iterate_and_resume_continues(V, tmp_path):
    """An error in the middle of a run (a callback's, here at iteration 15 of
    20) leaves the checkpoint at the committed iterate, not at the periodic
    save before it (14), and resuming continues bit-identically. (A killed
    process leaves the periodic one: test_killed_process_resumes_bit_identically.)"""
    path = tmp_path / "run.ckpt"
    seen = []

    def crash_after_15(state):
        seen.append(state.iteration)
        if state.iteration == 15:
            raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError, match="simulated crash"):
        nmfsc.nmf_sc(
            V,
            M,
            sparseness_w=0.5,
            random_state=4,
            tol=0.0,
            max_iter=20,
            checkpoint=path,
            checkpoint_every=7,
            callback=crash_after_15,
        )
    with np.load(path) as saved:
        assert int(saved["iteration"]) == 15
    resumed = run(nmfsc.nmf_sc, V, sparseness_w=0.5, max_iter=20, checkpoint=path, resume=True)
    assert_identical(resumed, run(nmfsc.nmf_sc, V, sparseness_w=0.5, max_iter=20))


def test_resume_without_a_file_starts_afresh_and_keeps_the_file(V, tmp_path):
    path = tmp_path / "new.ckpt"
    result = run(nmfsc.nmf_euclidean, V, max_iter=5, checkpoint=path, resume=True)
    assert_identical(result, run(nmfsc.nmf_euclidean, V, max_iter=5))
    assert path.exists()  # kept after the run, holding its final state
    with np.load(path) as saved:
        assert int(saved["iteration"]) == 5


def test_keyboard_interrupt_saves_and_resumes(V, tmp_path):
    path = tmp_path / "run.ckpt"

    def interrupt(state):
        if state.iteration == 9:
            raise KeyboardInterrupt

    with pytest.warns(ConvergenceWarning, match="interrupted"):
        stopped = nmfsc.nmf_sc(
            V,
            M,
            sparseness_h=0.6,
            random_state=4,
            tol=0.0,
            max_iter=25,
            checkpoint=path,
            checkpoint_every=100,
            callback=interrupt,
        )
    assert stopped.stop_reason == "interrupted" and stopped.n_iter == 9
    resumed = run(nmfsc.nmf_sc, V, sparseness_h=0.6, max_iter=25, checkpoint=path, resume=True)
    assert_identical(resumed, run(nmfsc.nmf_sc, V, sparseness_h=0.6, max_iter=25))


def test_an_error_that_the_checkpoint_cannot_save_says_so(V, tmp_path, monkeypatch):
    from nmfsc.solvers import _loop

    path = tmp_path / "run.ckpt"
    calls = []

    def full_disk(*args, **kwargs):
        calls.append(1)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_loop.Run, "write_checkpoint", staticmethod(full_disk))
    with pytest.raises(OSError, match="No space left") as caught:
        run(nmfsc.nmf_sc, V, sparseness_h=0.6, max_iter=25, checkpoint=path, checkpoint_every=3)
    assert any("could not be saved either" in note for note in caught.value.__notes__)
    assert len(calls) == 2  # the periodic save that failed, and the last try


def test_resuming_a_finished_run_returns_it(V, tmp_path):
    path = tmp_path / "run.ckpt"
    done = nmfsc.nmf_euclidean(V, M, random_state=4, tol=1e-3, checkpoint=path)
    again = nmfsc.nmf_euclidean(V, M, random_state=4, tol=1e-3, checkpoint=path, resume=True)
    assert done.stop_reason == again.stop_reason == "tol"
    assert_identical(done, again)


def test_checkpoint_seconds(V, tmp_path):
    path = tmp_path / "run.ckpt"
    iterations = []

    def watch(state):
        time.sleep(0.002)
        if path.exists():
            with np.load(path) as saved:
                iterations.append(int(saved["iteration"]))

    run(
        nmfsc.nmf_euclidean,
        V,
        max_iter=30,
        checkpoint=path,
        checkpoint_every=1000,
        checkpoint_seconds=0.01,
        callback=watch,
    )
    assert iterations and 0 < iterations[-1] < 30


def test_stale_tmp_file_does_not_break_resume(V, tmp_path):
    path = tmp_path / "run.ckpt"
    run(nmfsc.nmf_divergence, V, max_iter=6, checkpoint=path)
    Path(str(path) + ".tmp").write_bytes(b"half-written garbage")
    resumed = run(nmfsc.nmf_divergence, V, max_iter=12, checkpoint=path, resume=True)
    assert_identical(resumed, run(nmfsc.nmf_divergence, V, max_iter=12))


def test_damaged_checkpoint_is_refused(V, tmp_path):
    path = tmp_path / "run.ckpt"
    path.write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match=r"checkpoint .*run.ckpt' cannot be read .*resume=False"):
        nmfsc.nmf_sc(V, M, checkpoint=path, resume=True)


def test_a_file_that_is_no_archive_is_named_so_without_numpys_pickle_advice(V, tmp_path):
    """Issue 42, item 8d: on 0.x the message quoted np.load's advice to load the
    file as a pickle; the refusal carries its path and problem apart, for the
    command line's own advice."""
    from nmfsc.solvers.checkpoint import CheckpointReadError

    path = tmp_path / "run.ckpt"
    path.write_bytes(b"not a zip file")
    with pytest.raises(CheckpointReadError) as caught:
        nmfsc.nmf_sc(V, M, checkpoint=path, resume=True)
    assert str(caught.value) == (
        f"checkpoint {str(path)!r} cannot be read (ValueError: it is not an .npz archive); "
        "delete it, or pass resume=False to start afresh"
    )
    assert caught.value.path == path and caught.value.problem.startswith("cannot be read (")


def _rewrite(path, **replace):
    with np.load(path) as saved:
        arrays = {key: saved[key] for key in saved.files}
    arrays.update(replace)
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def test_checkpoint_from_another_format_version_is_refused(V, tmp_path):
    path = tmp_path / "run.ckpt"
    run(nmfsc.nmf_sc, V, max_iter=3, checkpoint=path)
    _rewrite(path, format_version=np.array(99))
    expected = f"has format version 99, this nmfsc writes {FORMAT_VERSION}"
    with pytest.raises(ValueError, match=expected):
        nmfsc.nmf_sc(V, M, random_state=4, checkpoint=path, resume=True)


def test_inconsistent_checkpoint_is_refused(V, tmp_path):
    path = tmp_path / "run.ckpt"
    run(nmfsc.nmf_sc, V, max_iter=3, checkpoint=path)
    _rewrite(path, iteration=np.array(7))
    with pytest.raises(ValueError, match="is inconsistent: iteration 7 but 4 objective values"):
        nmfsc.nmf_sc(V, M, random_state=4, checkpoint=path, resume=True)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"V": "other"}, "different data V"),
        ({"sparseness_w": 0.4}, "different params"),
        ({"n_components": 3}, "different params"),
        ({"solver": nmfsc.nmf_euclidean}, "different solver: 'nmf_sc' there, 'nmf_euclidean'"),
        ({"random_state": 5}, "different start"),
    ],
)
def test_mismatched_checkpoint_is_refused(V, tmp_path, change, match):
    path = tmp_path / "run.ckpt"
    run(nmfsc.nmf_sc, V, sparseness_w=0.5, max_iter=3, checkpoint=path)
    solver = change.get("solver", nmfsc.nmf_sc)
    data = V + 1.0 if change.get("V") else V
    kwargs = {"sparseness_w": change.get("sparseness_w", 0.5)} if solver is nmfsc.nmf_sc else {}
    with pytest.raises(CheckpointMismatchError, match=match):
        solver(
            data,
            change.get("n_components", M),
            random_state=change.get("random_state", 4),
            max_iter=5,
            checkpoint=path,
            resume=True,
            **kwargs,
        )
    assert issubclass(CheckpointMismatchError, ValueError)
    # without resume the checkpoint is simply overwritten
    run(solver, data, max_iter=2, checkpoint=path, **kwargs)


@pytest.mark.parametrize(
    "unseeded", [None, np.random.default_rng(5)], ids=["random_state None", "a Generator"]
)
def test_a_start_no_integer_seed_names_is_not_compared(V, tmp_path, unseeded):
    """Resumed with random_state None or a Generator, the checkpoint of seed 4
    continues seed 4's run (as documented: such a start cannot be compared)."""
    path = tmp_path / "run.ckpt"
    whole = run(nmfsc.nmf_sc, V, sparseness_w=0.5, max_iter=8)
    run(nmfsc.nmf_sc, V, sparseness_w=0.5, max_iter=4, checkpoint=path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        resumed = nmfsc.nmf_sc(
            V,
            M,
            sparseness_w=0.5,
            random_state=unseeded,
            tol=0.0,
            max_iter=8,
            checkpoint=path,
            resume=True,
        )
    assert_identical(resumed, whole)


def test_stopping_options_may_change_on_resume(V, tmp_path):
    path = tmp_path / "run.ckpt"
    run(nmfsc.nmf_sc, V, sparseness_h=0.5, max_iter=5, checkpoint=path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = nmfsc.nmf_sc(
            V,
            M,
            sparseness_h=0.5,
            random_state=4,
            max_iter=8,
            tol=0.5,
            window=2,
            checkpoint=path,
            resume=True,
        )
    assert result.n_iter >= 5


_CHILD = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    import nmfsc

    def slow(state):
        time.sleep(0.004)  # leaves the iterates alone; gives the parent time to kill

    V = np.load(sys.argv[1])
    nmfsc.nmf_sc(V, 4, sparseness_w=0.6, sparseness_h=0.5, random_state=4, tol=0.0,
                 max_iter=100000, checkpoint=sys.argv[2], checkpoint_every=5, callback=slow)
    """
)


def test_killed_process_resumes_bit_identically(V, tmp_path):
    """SIGKILL a long run in a subprocess once its checkpoint has advanced; the
    in-process resume then equals an uninterrupted run to the same max_iter."""
    if not hasattr(signal, "SIGKILL"):
        pytest.skip("needs SIGKILL")
    data, path = tmp_path / "V.npy", tmp_path / "run.ckpt"
    np.save(data, V)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(data), str(path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        first = None
        while time.monotonic() < deadline:
            if child.poll() is not None:
                pytest.fail(f"child exited early: {child.stderr.read().decode()[-2000:]}")
            if path.exists():
                with np.load(path) as saved:
                    iteration = int(saved["iteration"])
                first = iteration if first is None else first
                if iteration > first:
                    break
            time.sleep(0.01)
        else:
            pytest.fail("the child's checkpoint did not advance within 120 s")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stderr.close()
    with np.load(path) as saved:
        saved_at = int(saved["iteration"])
    assert saved_at % 5 == 0 and saved_at >= 10
    target = saved_at + 12
    params = {"sparseness_w": 0.6, "sparseness_h": 0.5}
    resumed = run(nmfsc.nmf_sc, V, max_iter=target, checkpoint=path, resume=True, **params)
    assert_identical(resumed, run(nmfsc.nmf_sc, V, max_iter=target, **params))


@pytest.mark.parametrize("solver", ["hoyer", "accelerated"])
def test_resume_is_bit_identical_on_guided_long_rows(tmp_path, solver):
    # Rows of H longer than the bracket's threshold: their trial projections
    # are guided by the support sizes of the H they step from, which a resumed
    # run reads off its loaded H, so it guides them as the whole run did.
    V = np.abs(np.random.default_rng(2).standard_normal((12, 5000))) + 0.01
    params = {"sparseness_h": 0.8}

    def nmf_sc(V, M, **kwargs):
        return nmfsc.nmf_sc(V, M, solver=solver, **kwargs)

    path = tmp_path / "run.ckpt"
    whole = run(nmf_sc, V, max_iter=8, **params)
    with pytest.warns(ConvergenceWarning, match="max_iter=4 reached"):
        nmf_sc(
            V, M, random_state=4, tol=0.0, max_iter=4, checkpoint=path, checkpoint_every=4, **params
        )
    resumed = run(nmf_sc, V, max_iter=8, checkpoint=path, resume=True, **params)
    assert_identical(resumed, whole)
