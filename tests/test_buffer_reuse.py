"""nmf_sc's trial buffers (issue 33): a run without a callback writes each H
step's trials into the H before the committed one (``Steps.reuse_buffers``,
``_Projector.keep_buffers``); a run with a callback hands every accepted
trial over as a new array. Both give the same bits; neither ever writes a
trial into the committed iterate."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pytest

import nmfsc
from nmfsc.observed import Observed
from nmfsc.solvers._data import make_data
from nmfsc.solvers.framework import LoopSettings, Run
from nmfsc.solvers.hoyer import HoyerSteps
from nmfsc.solvers.masked import MaskedHoyerSteps

CASES = {
    "s_h": {"sparseness_h": 0.7},
    "s_w": {"sparseness_w": 0.6},
    "both": {"sparseness_w": 0.5, "sparseness_h": 0.6},
}


def _data(shape=(30, 400), seed=0):
    # 8 x 400 entries of H (below nmfsc._blocked.PARALLEL_ENTRIES: one group of rows)
    return np.random.default_rng(seed).random(shape)


def _fit(V, M, callback=None, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        return nmfsc.nmf_sc(V, M, random_state=0, tol=0, callback=callback, **options)


def _never_stop(state):
    return False


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("M", [1, 8])
@pytest.mark.parametrize("masked", [False, True])
def test_reused_buffers_give_the_bits_of_fresh_ones(case, M, masked):
    """The objective history and the factors are bit-equal with buffers
    reused (no callback) and handed over (a callback that keeps nothing)."""
    V = _data()
    extra = {"mask": np.random.default_rng(1).random(V.shape) < 0.8} if masked else {}
    reused = _fit(V, M, max_iter=25, **CASES[case], **extra)
    fresh = _fit(V, M, callback=_never_stop, max_iter=25, **CASES[case], **extra)
    assert reused.n_iter == fresh.n_iter == 25
    np.testing.assert_array_equal(reused.objective, fresh.objective)
    np.testing.assert_array_equal(reused.W, fresh.W)
    np.testing.assert_array_equal(reused.H, fresh.H)


def test_float32_reuse_gives_the_same_bits():
    V = _data().astype(np.float32)
    reused = _fit(V, 6, max_iter=15, sparseness_h=0.7)
    fresh = _fit(V, 6, callback=_never_stop, max_iter=15, sparseness_h=0.7)
    np.testing.assert_array_equal(reused.objective, fresh.objective)
    np.testing.assert_array_equal(reused.H, fresh.H)


@pytest.mark.parametrize("steps_class", [HoyerSteps, MaskedHoyerSteps])
@pytest.mark.parametrize("M", [1, 4])
def test_steps_with_reuse_never_touch_the_committed_state_and_use_two_buffers(steps_class, M):
    """Each step leaves the state it was given unmodified (the committed
    iterate is never a trial's buffer), and after the first two steps every
    new H is one of the same two arrays (no M x T array allocated)."""
    V = _data((20, 300))
    if steps_class is MaskedHoyerSteps:
        from nmfsc.solvers._masked_data import open_masked

        data = open_masked(V, Observed.of(np.random.default_rng(2).random(V.shape) < 0.8))[0]
    else:
        data = make_data(V, float(V.max()))
    steps = steps_class(data, M, 0.5, 0.6)
    steps.reuse_buffers()
    rng = np.random.default_rng(0)
    state = steps.initialize(rng.random((20, M)), rng.random((M, 300)))
    steps.start(state)
    buffers = []
    for _ in range(12):
        before = {key: np.copy(value) for key, value in state.items()}
        new, objective, reason = steps.step(state)
        for key, value in before.items():
            np.testing.assert_array_equal(state[key], value, err_msg=key)
        assert objective is not None and reason is None
        assert not np.shares_memory(new["H"], state["H"])
        assert not np.shares_memory(new["W"], state["W"])
        buffers.append(new["H"])
        state = new
    assert len({id(H) for H in buffers[2:]}) == 2


def test_a_callback_keeping_every_h_sees_distinct_unchanged_arrays():
    """A callback may keep state.H: each one it was given stays what it was,
    and the last is the result's H."""
    V = _data()
    kept = []

    def keep(state):
        kept.append((state.H, state.H.copy()))

    result = _fit(V, 8, callback=keep, max_iter=10, sparseness_h=0.7)
    assert len(kept) == 10
    assert len({id(H.base if H.base is not None else H) for H, _ in kept}) == 10
    for H, copy in kept:
        np.testing.assert_array_equal(H, copy)
    np.testing.assert_array_equal(kept[-1][0], result.H)


def _run(V, M, options, patch, **loop):
    """A callback-free Run of HoyerSteps whose H projector's ``step_rows``
    is wrapped by ``patch(original, calls)``."""
    settings = LoopSettings.from_keywords(
        "nmf_sc", {"random_state": 0, "tol": 0, "max_iter": 40, **loop}
    )
    run = Run(partial(HoyerSteps, **options), V, M, options, settings)
    projector = run.steps.proj_h
    assert projector.keeps_buffers
    calls = [0]
    projector.step_rows = patch(projector.step_rows, calls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        return run.run(stacklevel=2)


def _assert_is_the_uninterrupted_run(V, result):
    """``result`` is, bit for bit, a plain run of as many iterations."""
    reference = _fit(V, 8, max_iter=result.n_iter, sparseness_h=0.7)
    np.testing.assert_array_equal(result.objective, reference.objective)
    np.testing.assert_array_equal(result.H, reference.H)
    np.testing.assert_array_equal(result.W, reference.W)


@pytest.mark.parametrize("at_call", [2, 8, 11])
def test_an_interrupted_run_returns_the_committed_iterate(at_call):
    """A KeyboardInterrupt after a trial was written (into a reused buffer)
    returns the iterate committed before it, bit for bit: that of a run
    stopped there by max_iter."""
    V = _data()
    options = {"sparseness_w": None, "sparseness_h": 0.7}

    def patch(step_rows, calls):
        def interrupted(*args):
            projected = step_rows(*args)
            calls[0] += 1
            if calls[0] == at_call:
                raise KeyboardInterrupt
            return projected

        return interrupted

    result = _run(V, 8, options, patch)
    assert result.stop_reason == "interrupted"
    _assert_is_the_uninterrupted_run(V, result)


@pytest.mark.parametrize(("from_call", "stop"), [(2, "step_size"), (8, "stalled"), (11, "stalled")])
def test_a_run_stopped_by_the_step_size_returns_the_committed_iterate(from_call, stop):
    """From the ``from_call``-th H trial on, every trial is written (into a
    reused buffer) and then reported unprojectable, so mu_H halves below
    1e-200: the result is the iterate committed before, bit for bit. (The
    stop is "stalled" where an iteration was complete and the objective
    still falling; at the second trial none is.)"""
    V = _data()
    options = {"sparseness_w": None, "sparseness_h": 0.7}

    def patch(step_rows, calls):
        def failing(*args):
            projected = step_rows(*args)
            calls[0] += 1
            return None if calls[0] >= from_call else projected

        return failing

    result = _run(V, 8, options, patch)
    assert result.stop_reason == stop
    _assert_is_the_uninterrupted_run(V, result)


def test_masked_one_component_w_step_leaves_the_state_unmodified():
    """Masked nmf_sc with M = 1 and both constraints: the W step's accepted
    trial (C^T, a view of the projector's buffer for M = 1) must be copied, or
    the next W step's trials overwrite the committed W (the run then stopped
    at "step_size" after 3 iterations on this problem)."""
    rng = np.random.default_rng(0)
    V = rng.random((40, 30))
    mask = rng.random(V.shape) < 0.8
    for callback in (None, _never_stop):
        result = _fit(
            V, 1, callback=callback, sparseness_w=0.3, sparseness_h=0.4, mask=mask, max_iter=20
        )
        assert result.stop_reason == "max_iter"


@pytest.fixture
def reuse_told(monkeypatch):
    """A list that gets an entry each time a run tells its HoyerSteps to
    reuse buffers (``Steps.reuse_buffers``)."""
    told = []
    original = HoyerSteps.reuse_buffers

    def record(self):
        told.append(True)
        original(self)

    monkeypatch.setattr(HoyerSteps, "reuse_buffers", record)
    return told


class _ObjectiveOnly:
    """A callback that declares it keeps no array of the states."""

    keeps_iterates = False

    def __init__(self):
        self.seen = []

    def __call__(self, state):
        self.seen.append(float(state.objective))
        return False


@pytest.mark.parametrize(
    "callback, reuses",
    [(None, True), (_never_stop, False), (_ObjectiveOnly(), True)],
    ids=["none", "plain function", "keeps_iterates=False"],
)
def test_a_callback_that_keeps_no_iterate_lets_the_run_reuse(reuse_told, callback, reuses):
    told = reuse_told
    V = _data()
    result = _fit(V, 8, callback=callback, max_iter=5, sparseness_h=0.7)
    assert bool(told) is reuses
    fresh = _fit(V, 8, callback=_never_stop, max_iter=5, sparseness_h=0.7)
    np.testing.assert_array_equal(result.objective, fresh.objective)


def test_sparsenmf_reuses_the_buffers(reuse_told):
    """SparseNMF's stopping rule keeps no iterate (keeps_iterates = False)."""
    told = reuse_told
    X = _data().T
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        nmfsc.SparseNMF(n_components=4, sparseness_coefficients=0.6, max_iter=5).fit(X)
    assert told


@pytest.mark.parametrize("kind", ["dense", "sparse", "scaled"])
def test_w_t_v_is_written_into_one_buffer_for_every_h_step(kind, monkeypatch):
    """The H step's W^T V goes into the same M x T array every step (its
    pages touched once per run, not once per iteration), with the values
    of a fresh product, for dense, sparse and scaled V."""
    import scipy.sparse as sp

    V = _data((20, 300))
    if kind == "sparse":
        V = sp.csr_matrix(np.where(V > 0.3, V, 0.0))
    data = make_data(V, 2.0 if kind == "scaled" else float(V.max()))
    outs = []
    wtv = type(data).wtv

    def spy(self, W, out=None):
        result = wtv(self, W, out=out)
        assert out is None or result is out
        np.testing.assert_allclose(result, wtv(self, W), rtol=1e-14)
        outs.append(out)
        return result

    monkeypatch.setattr(type(data), "wtv", spy)
    steps = HoyerSteps(data, 4, None, 0.6)
    rng = np.random.default_rng(0)
    state = steps.initialize(rng.random((20, 4)), rng.random((4, 300)))
    steps.start(state)
    outs.clear()  # the start's objective may take a product of its own
    for _ in range(4):
        state = steps.step(state)[0]
    assert len(outs) == 4 and outs[0] is not None
    assert all(out is outs[0] for out in outs)
