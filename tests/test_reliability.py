"""Reliability: nothing silently wrong, nothing lost (issue 13).

The public API with bad input (out-of-range parameters, wrong types, masked arrays,
NaN in scores) must raise a clear TypeError or ValueError that names the argument;
a checkpoint that was edited or damaged must be refused with a message naming the
file, never resumed silently, never hang, never give a bare KeyError; the folder of
a checkpoint is checked before the first iteration; saving never writes through a
link and concurrent writers do not crash each other. The data folder's side (safe,
concurrent, verified unpacking) is in ``test_reliability_data.py``.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import nmfsc
from nmfsc import datasets, scores
from nmfsc.solvers import CheckpointMismatchError
from nmfsc.solvers._data import make_data
from nmfsc.solvers.checkpoint import FORMAT_VERSION, content_digest, load_checkpoint
from nmfsc.solvers.hoyer import HoyerSteps

REPO = Path(nmfsc.__file__).resolve().parent.parent
V = np.abs(np.random.default_rng(0).standard_normal((12, 15)))
W_NAN = V.copy()
W_NAN[3, 4] = np.nan


def _masked(x):
    return np.ma.array(x, mask=np.zeros(np.shape(x), dtype=bool))


# --- bad inputs ---------------------------------------------------------------------

BAD_INPUTS = {
    # sparseness <-> norms
    "s_for_l1 l1 too big": (lambda: nmfsc.sparseness_for_l1(5, 1, 4), ValueError, "l1=5.0 is out"),
    "s_for_l1 l1 too small": (lambda: nmfsc.sparseness_for_l1(0.5, 1, 4), ValueError, "l1=0.5"),
    "s_for_l1 l2=0": (lambda: nmfsc.sparseness_for_l1(1, 0, 4), ValueError, "l2 must be finite"),
    "s_for_l1 nan": (lambda: nmfsc.sparseness_for_l1(np.nan, 1, 4), ValueError, "l1 must be"),
    "s_for_l1 shapes": (
        lambda: nmfsc.sparseness_for_l1([1.5, 1.5], [1.0, 1.0, 1.0], 4),
        ValueError,
        "l1 and l2 must have one shape",
    ),
    "s_for_l1 text": (lambda: nmfsc.sparseness_for_l1("2", 1, 4), TypeError, "l1 must be"),
    "s_for_l1 n=1": (lambda: nmfsc.sparseness_for_l1(1, 1, 1), ValueError, "n >= 2"),
    "l1_for_s overflow": (
        lambda: nmfsc.l1_for_sparseness(0.5, 16, 1e308),
        ValueError,
        "l2=1e[+]308 is too large",
    ),
    "l1_for_s s=2": (lambda: nmfsc.l1_for_sparseness(2, 16), ValueError, "sparseness must lie"),
    # data set helpers
    "natural patch 0": (
        lambda: datasets.load_natural(n_patches=20, patch_size=0),
        ValueError,
        "patch_size must be >= 1",
    ),
    "natural patch -1": (
        lambda: datasets.load_natural(n_patches=20, patch_size=-1),
        ValueError,
        "patch_size must be >= 1",
    ),
    "natural patches 10.5": (
        lambda: datasets.load_natural(n_patches=10.5),
        TypeError,
        "n_patches must be a positive integer",
    ),
    "natural patch 2.5": (
        lambda: datasets.load_natural(patch_size=2.5),
        TypeError,
        "patch_size must be a positive integer",
    ),
    "natural seed 'x'": (
        lambda: datasets.load_natural(random_state="x"),
        TypeError,
        "random_state must be None, a non-negative int",
    ),
    "natural seed -1": (
        lambda: datasets.load_natural(random_state=-1),
        ValueError,
        "random_state must be a non-negative",
    ),
    "natural path 3": (lambda: datasets.load_natural(path=3), TypeError, "path must be a file"),
    "bars n -1": (lambda: datasets.bars(n_samples=-1), ValueError, "n_samples must be >= 1"),
    "bars size 0": (lambda: datasets.bars(size=0), ValueError, "size must be >= 1"),
    "bars size 2.5": (lambda: datasets.bars(size=2.5), TypeError, "size must be a positive"),
    "bars p 'x'": (lambda: datasets.bars(p="x"), TypeError, "p must be a probability"),
    "bars p nan": (lambda: datasets.bars(p=float("nan")), ValueError, "p must be a probability"),
    "bars seed 'x'": (lambda: datasets.bars(random_state="x"), TypeError, "random_state"),
    "cbcl gate str": (lambda: datasets.load_cbcl(gate="a-folder"), TypeError, "gate must be a"),
    "cbcl_images gate": (lambda: datasets.cbcl_images(gate=3), TypeError, "gate must be a"),
    "orl gate str": (lambda: datasets.load_orl(gate="a-folder"), TypeError, "gate must be a"),
    "orl halved 'yes'": (lambda: datasets.orl_images(halved="yes"), TypeError, "halved must be"),
    "natural gate str": (lambda: datasets.natural_images(gate="x"), TypeError, "gate must be"),
    "download gate str": (lambda: datasets.download_all(gate="x"), TypeError, "gate must be"),
    "download progressbar": (
        lambda: datasets.download_all(progressbar="x"),
        TypeError,
        "progressbar must be True or False",
    ),
    # scores with NaN
    "part_recovery NaN W": (lambda: datasets.part_recovery(W_NAN, V), ValueError, "W contains"),
    "part_recovery NaN parts": (
        lambda: datasets.part_recovery(V, W_NAN),
        ValueError,
        "true_parts contains NaN",
    ),
    "part_recovery 1-D": (lambda: datasets.part_recovery(V[:, 0], V), ValueError, "W must be 2-D"),
    "locality NaN": (lambda: scores.locality(W_NAN, (3, 4)), ValueError, "W contains NaN"),
    "orientation NaN": (
        lambda: scores.orientation(W_NAN, (3, 4), on_off=False),
        ValueError,
        "W contains NaN",
    ),
    "sparseness_summary NaN W": (
        lambda: scores.sparseness_summary(W_NAN, V.T),
        ValueError,
        "W contains NaN",
    ),
    "sparseness_summary NaN H": (
        lambda: scores.sparseness_summary(V.T, W_NAN),
        ValueError,
        "H contains NaN",
    ),
    "summarize_scores inf": (
        lambda: scores.summarize_scores([0.5, np.inf]),
        ValueError,
        "values contains infinity",
    ),
    "summarize_scores text": (
        lambda: scores.summarize_scores(["a"]),
        TypeError,
        "values must be a real numeric",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_refused_clearly(case):
    call, kind, match = BAD_INPUTS[case]
    with pytest.raises(kind, match=match) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_a_text_file_as_images_mat_is_a_data_error(tmp_path):
    text = tmp_path / "IMAGES.mat"
    text.write_text("these are not the images you are looking for\n" * 20)
    with pytest.raises(datasets.DataError, match=r"Cannot read .*IMAGES.mat as a MATLAB file"):
        datasets.load_natural(n_patches=20, path=text)


def test_valid_norms_give_the_same_sparseness_as_before():
    n, l2 = 16, np.array([1.0, 2.0, 0.5])
    for target in (0.0, 0.3, 1.0):
        l1 = nmfsc.l1_for_sparseness(target, n, l2)
        expected = (np.sqrt(n) - l1 / l2) / (np.sqrt(n) - 1.0)
        np.testing.assert_array_equal(nmfsc.sparseness_for_l1(l1, l2, n), expected)
    assert nmfsc.sparseness_for_l1(2.0, 1.0, 4) == 0.0


def test_summarize_scores_still_takes_nan_as_undefined():
    stats = scores.summarize_scores([0.5, np.nan])
    assert stats["count"] == 1 and stats["n_undefined"] == 1


MASKED = {
    "nmf_sc V": (lambda: nmfsc.nmf_sc(_masked(V), 3, max_iter=1), "V"),
    "nmf_euclidean V": (lambda: nmfsc.nmf_euclidean(_masked(V), 3, max_iter=1), "V"),
    "W_init": (lambda: nmfsc.nmf_sc(V, 3, W_init=_masked(V[:, :3]), max_iter=1), "W_init"),
    "SparseNMF.fit": (lambda: nmfsc.SparseNMF(3, max_iter=1).fit(_masked(V)), "X"),
    "project x": (lambda: nmfsc.project(_masked([1.0, 2.0, 3.0]), 1.5, 1.0), "x"),
    "project l1": (lambda: nmfsc.project([1.0, 2.0, 3.0], _masked(1.5), 1.0), "l1"),
    "project_batch X": (lambda: nmfsc.project_batch(_masked(V), 2.0, 1.0), "X"),
    "project_batch l2": (
        lambda: nmfsc.project_batch(V, 2.0, _masked(np.ones(15))),
        "l2",
    ),
    "sparseness": (lambda: nmfsc.sparseness(_masked([1.0, 2.0])), "x"),
    "sparseness axis": (lambda: nmfsc.sparseness(_masked(V), axis=0), "x"),
    "l1_for_sparseness": (lambda: nmfsc.l1_for_sparseness(0.5, 4, _masked([1.0])), "l2"),
    "sparseness_for_l1": (lambda: nmfsc.sparseness_for_l1(_masked([1.5]), 1.0, 4), "l1"),
    "locality": (lambda: scores.locality(_masked(V), (3, 4)), "W"),
    "orientation": (lambda: scores.orientation(_masked(V), (3, 4), on_off=False), "W"),
    "sparseness_summary": (lambda: scores.sparseness_summary(V, _masked(V.T)), "H"),
    "summarize_scores": (lambda: scores.summarize_scores(_masked([0.1, 0.2])), "values"),
    "part_recovery": (lambda: datasets.part_recovery(_masked(V), V), "W"),
}


@pytest.mark.parametrize("solver", [nmfsc.nmf_divergence, nmfsc.local_nmf, nmfsc.sparse_nmf])
@pytest.mark.parametrize(
    "start, factor",
    [
        ({"W_init": np.zeros((12, 3))}, "W"),
        ({"H_init": np.zeros((3, 15))}, "H"),
        ({"W_init": np.where(np.arange(3) == 1, 0.0, np.ones((12, 3)))}, "W"),
    ],
)
def test_zero_starts_of_the_divergence_solvers_are_refused(solver, start, factor):
    """The audit's reproducer: these starts gave NaN factors, stop reason max_iter."""
    what = "column" if factor == "W" else "row"
    with pytest.raises(ValueError, match=f"starting {factor} .* all-zero {what}"):
        solver(V, 3, random_state=0, max_iter=5, **start)


ZERO_ROW_H = np.where(np.arange(3)[:, None] == 1, 0.0, np.ones((3, 15)))
ZERO_COLUMN_W = np.where(np.arange(3) == 1, 0.0, np.ones((12, 3)))


@pytest.mark.parametrize(
    "solver, params, start, factor",
    [
        # a factor left to multiplicative updates keeps a zero component at zero
        (nmfsc.nmf_euclidean, {}, {"W_init": np.zeros((12, 3))}, "W"),
        (nmfsc.nmf_euclidean, {}, {"H_init": np.zeros((3, 15))}, "H"),
        (nmfsc.nmf_euclidean, {}, {"H_init": ZERO_ROW_H}, "H"),
        (nmfsc.nmf_euclidean, {}, {"W_init": ZERO_COLUMN_W}, "W"),
        (nmfsc.nmf_sc, {"sparseness_w": 0.6}, {"H_init": ZERO_ROW_H}, "H"),
        (nmfsc.nmf_sc, {"sparseness_h": 0.6}, {"W_init": ZERO_COLUMN_W}, "W"),
        (nmfsc.nmf_sc, {}, {"H_init": np.zeros((3, 15))}, "H"),
    ],
)
def test_zero_components_of_a_euclidean_start_are_refused(solver, params, start, factor):
    """The audit found these runs ending with a lost component (or W H = 0,
    relative error 1.0, converged=True)."""
    what = "column" if factor == "W" else "row"
    with pytest.raises(ValueError, match=f"starting {factor} .* all-zero {what}"):
        solver(V, 3, random_state=0, max_iter=5, **params, **start)


def test_a_projected_factor_may_start_with_a_zero_component():
    """nmf_sc's projection moves a zero column of W (sparseness_w set): allowed."""
    res = nmfsc.nmf_sc(V, 3, sparseness_w=0.6, W_init=ZERO_COLUMN_W, random_state=0)
    assert np.all(np.any(res.W > 0, axis=0)) and np.isfinite(res.relative_error)


@pytest.mark.parametrize("solver", [nmfsc.nmf_sc, nmfsc.nmf_euclidean, nmfsc.nmf_divergence])
@pytest.mark.parametrize("c", [1e-300, 1e-16, 1e16, 1e300])
def test_a_start_far_from_the_data_scale_is_refused(solver, c):
    W0 = np.abs(np.random.default_rng(1).standard_normal((12, 3)))
    with pytest.raises(ValueError, match="times V's scale"):
        solver(V, 3, W_init=W0 * c, random_state=0, max_iter=5)


def test_part_recovery_refuses_all_zero_parts():
    with pytest.raises(ValueError, match="true_parts is all zero"):
        datasets.part_recovery(V[:, :3], np.zeros((12, 3)))


@pytest.mark.parametrize("case", sorted(MASKED))
def test_masked_arrays_are_refused(case):
    call, name = MASKED[case]
    with pytest.raises(TypeError, match=rf"^{name} is a numpy masked array; nmfsc does not use"):
        call()


# --- checkpoints ---------------------------------------------------------------------

KW = {"sparseness_w": 0.6, "sparseness_h": 0.5, "random_state": 4, "tol": 0.0}


def _run(path=None, max_iter=4, **extra):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        return nmfsc.nmf_sc(V, 3, max_iter=max_iter, checkpoint=path, **KW, **extra)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A checkpoint after 4 iterations (bytes and entries) and the run to 6 without one."""
    path = tmp_path_factory.mktemp("ckpt") / "run.npz"
    _run(path)
    with np.load(path) as data:
        arrays = {key: data[key] for key in data.files}
    return path.read_bytes(), arrays, _run(max_iter=6)


def _write(path, arrays, redigest=False):
    arrays = dict(arrays)
    if redigest:
        arrays["digest"] = np.array(content_digest(arrays))
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def _resume(path):
    return _run(path, max_iter=6, resume=True)


@contextmanager
def _time_limit(seconds):
    """Fail (instead of hanging) when the block runs longer than ``seconds``."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def alarm(*_):
        raise TimeoutError(f"still running after {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _edits(arrays):
    W, H = arrays["state_W"], arrays["state_H"]
    W_nan, W_neg = W.copy(), W.copy()
    W_nan[0, 0], W_neg[0, 0] = np.nan, -W_neg[0, 0] - 1.0
    return {
        "W NaN": {"state_W": W_nan},
        "W negative": {"state_W": W_neg},
        "W zero": {"state_W": np.zeros_like(W)},
        "W scaled": {"state_W": 2.0 * W},
        "W one entry": {"state_W": W + np.eye(*W.shape) * 1e-9},
        "H scaled": {"state_H": 0.5 * H},
        "mu_W 0": {"state_mu_W": np.array(0.0)},
        "mu_H -1": {"state_mu_H": np.array(-1.0)},
        "mu_H NaN": {"state_mu_H": np.array(np.nan)},
        "mu_W inf": {"state_mu_W": np.array(np.inf)},
        "mu_H doubled": {"state_mu_H": 2.0 * arrays["state_mu_H"]},
        "iteration -1": {"iteration": np.array(-1)},
        "iteration +1": {"iteration": arrays["iteration"] + 1},
        "objective edited": {"objective": arrays["objective"] * 1.5},
        "times negative": {"times": -arrays["times"]},
        "W wrong shape": {"state_W": W[:, :2]},
        "W float32": {"state_W": W.astype(np.float32)},
        "H transposed": {"state_H": np.ascontiguousarray(H.T)},
        "meta edited": {"meta": np.array(str(arrays["meta"]).replace('"nmf_sc"', '"nmf_sc2"'))},
        "extra entry": {"state_extra": np.array(1.0)},
    }


EDITS = [
    "W NaN",
    "W negative",
    "W zero",
    "W scaled",
    "W one entry",
    "H scaled",
    "mu_W 0",
    "mu_H -1",
    "mu_H NaN",
    "mu_W inf",
    "mu_H doubled",
    "iteration -1",
    "iteration +1",
    "objective edited",
    "times negative",
    "W wrong shape",
    "W float32",
    "H transposed",
    "meta edited",
    "extra entry",
]


@pytest.mark.parametrize("redigest", [False, True], ids=["old-digest", "new-digest"])
@pytest.mark.parametrize("edit", EDITS)
def test_edited_checkpoint_is_refused(tmp_path, saved, edit, redigest):
    """Each edit is refused: by the digest, and (for the edits a digest recomputed
    after the edit hides) by the checks of shapes, signs, finiteness and step sizes."""
    _, arrays, _ = saved
    assert sorted(_edits(arrays)) == sorted(EDITS)
    path = tmp_path / "run.npz"
    _write(path, arrays | _edits(arrays)[edit], redigest=redigest)
    semantic = not edit.endswith(("scaled", "one entry", "doubled", "edited", "zero"))
    if redigest and not semantic and edit != "meta edited":
        pytest.skip("a consistent forgery of valid values: only the digest can catch it")
    with _time_limit(60), pytest.raises(ValueError, match=r"^checkpoint '.*run.npz' ") as caught:
        _resume(path)
    if edit == "meta edited":
        assert caught.type is CheckpointMismatchError
    assert "resume=False" in str(caught.value)


@pytest.mark.parametrize("key", ["state_W", "state_mu_H", "iteration", "digest", "meta"])
def test_checkpoint_with_a_missing_entry_is_refused(tmp_path, saved, key):
    _, arrays, _ = saved
    path = tmp_path / "run.npz"
    _write(path, {k: v for k, v in arrays.items() if k != key})
    with pytest.raises(ValueError, match=rf"checkpoint '.*' is damaged: it has no '{key}' entry"):
        _resume(path)


def test_byte_flips_are_refused_or_harmless(tmp_path, saved):
    """Flip one byte at 40 spread positions: each resume is refused with a ValueError
    naming the file, or (a flip in bytes nothing reads) equals the uninterrupted run."""
    data, _, whole = saved
    path = tmp_path / "run.npz"
    outcomes = {"refused": 0, "identical": 0}
    for position in np.linspace(0, len(data) - 1, 40).astype(int):
        flipped = bytearray(data)
        flipped[position] ^= 0xFF
        path.write_bytes(bytes(flipped))
        try:
            with _time_limit(60):
                result = _resume(path)
        except ValueError as error:
            assert str(error).startswith(f"checkpoint {str(path)!r}"), (position, error)
            outcomes["refused"] += 1
        else:
            np.testing.assert_array_equal(result.W, whole.W, err_msg=f"flip at {position}")
            np.testing.assert_array_equal(result.objective, whole.objective)
            outcomes["identical"] += 1
    assert outcomes["refused"] >= 30, outcomes


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "cannot be read"),
        (b"not a zip file", "cannot be read"),
        ("half", "cannot be read"),
        ("npy", "cannot be read"),
    ],
)
def test_unreadable_checkpoint_is_refused(tmp_path, saved, content, match):
    path = tmp_path / "run.npz"
    if content == "half":
        content = saved[0][: len(saved[0]) // 2]
    elif content == "npy":
        np.save(tmp_path / "x.npy", V)
        content = (tmp_path / "x.npy").read_bytes()
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"^checkpoint '.*run.npz' {match}.*resume=False"):
        _resume(path)


def test_format_version_1_is_refused_as_such(tmp_path, saved):
    _, arrays, _ = saved
    path = tmp_path / "run.npz"
    old = {k: v for k, v in arrays.items() if k != "digest"} | {"format_version": np.array(1)}
    _write(path, old)
    expected = f"has format version 1 .an older nmfsc's.*writes {FORMAT_VERSION}"
    with pytest.raises(ValueError, match=expected):
        _resume(path)


def test_nan_and_infinite_step_sizes_cannot_hang_the_halving_loop():
    """Straight into the solver's steps: the halving loops end for NaN and inf."""
    rng = np.random.default_rng(0)
    steps = HoyerSteps(make_data(V, float(V.max())), 3, 0.6, 0.5)
    state = steps.initialize(np.abs(rng.standard_normal((12, 3))), np.abs(rng.random((3, 15))))
    steps.start(state)
    for mu in (np.nan, np.inf):
        with _time_limit(30):
            _, objective, reason = steps.step({**state, "mu_H": mu})
            assert (objective, reason) == (None, "step_size")
            _, _, reason = steps.step({**state, "mu_W": mu})
            assert reason == "step_size"


def test_checkpoint_folder_is_checked_before_the_first_iteration(tmp_path):
    calls = []
    missing = tmp_path / "no-such-folder" / "run.npz"
    with pytest.raises(ValueError, match=r"its folder '.*no-such-folder' does not exist"):
        _run(missing, callback=calls.append)
    with pytest.raises(ValueError, match=r"checkpoint '.*' is a folder; pass a file path"):
        _run(tmp_path, callback=calls.append)
    assert calls == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes anywhere")
def test_unwritable_checkpoint_folder_is_refused_before_the_first_iteration(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(ValueError, match="cannot write in its folder"):
            _run(folder / "run.npz")
    finally:
        folder.chmod(0o700)


def test_existing_links_beside_the_checkpoint_are_not_written_through(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    path = tmp_path / "run.npz"
    Path(str(path) + ".tmp").symlink_to(victim)
    result = _run(path)
    assert victim.read_text() == "keep me"
    assert Path(str(path) + ".tmp").is_symlink() and not path.is_symlink()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    resumed = _run(path, max_iter=4, resume=True)
    np.testing.assert_array_equal(resumed.W, result.W)


_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from nmfsc.solvers.checkpoint import save_checkpoint

    seed, path = int(sys.argv[1]), sys.argv[2]
    rng = np.random.default_rng(seed)
    state = {"W": rng.random((12, 3)), "H": rng.random((3, 15)), "mu_W": 1.0, "mu_H": 1.0}
    meta = {"solver": "nmf_sc", "writer": 0}
    for k in range(150):
        save_checkpoint(path, state=state, meta=meta, iteration=k, objective=[1.0] * (k + 1),
                        times=[0.0] * (k + 1))
    """
)


def test_two_processes_saving_to_one_path_do_not_collide(tmp_path):
    path = tmp_path / "run.npz"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(seed), str(path)],
            env=env,
            stderr=subprocess.PIPE,
        )
        for seed in (1, 2)
    ]
    deadline = time.monotonic() + 120
    for child in children:
        try:
            _, err = child.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            pytest.fail("a writer did not finish within 120 s")
        assert child.returncode == 0, err.decode()[-2000:]
    layout = {"W": (12, 3), "H": (3, 15), "mu_W": (), "mu_H": ()}
    state, iteration, _, _ = load_checkpoint(path, {"solver": "nmf_sc", "writer": 0}, layout)
    assert iteration == 149
    candidates = [np.random.default_rng(seed).random((12, 3)) for seed in (1, 2)]
    assert any(np.array_equal(state["W"], W) for W in candidates)
    assert [p.name for p in tmp_path.iterdir()] == ["run.npz"]


def test_a_valid_checkpoint_still_resumes_bit_identically(tmp_path, saved):
    data, _, whole = saved
    path = tmp_path / "run.npz"
    path.write_bytes(data)
    resumed = _resume(path)
    np.testing.assert_array_equal(resumed.W, whole.W)
    np.testing.assert_array_equal(resumed.H, whole.H)
    np.testing.assert_array_equal(resumed.objective, whole.objective)
    assert resumed.step_sizes == whole.step_sizes
    with np.load(path) as data:
        assert json.loads(str(data["meta"]))["solver"] == "nmf_sc"
