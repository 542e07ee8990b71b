"""The GPU backend (nmfsc.gpu_backend).

Its array code is written once over an array namespace, so most of it runs
here with NumPy standing in for CuPy: the same lines as on a GPU, on the
CPU. Those tests check what the issue asks of the GPU path (the CPU's
iterates, stopping rules, warnings, callbacks, checkpoints; the exact
projection). The tests marked ``needs_gpu`` run the same checks on CuPy
arrays and skip where CuPy or a GPU is absent (CI).
"""

import os
import subprocess
import sys
import warnings
from dataclasses import replace

import numpy as np
import pytest

import nmfsc
from nmfsc import (
    ConvergenceWarning,
    SparseNMF,
    backends,
    l1_for_sparseness,
    nmf_euclidean,
    nmf_sc,
    project,
)
from nmfsc._kernels import rowblocks
from nmfsc.gpu_backend import GPU_BACKEND, is_cupy_array
from nmfsc.gpu_backend.device_projection import project_batch_device, project_rows
from nmfsc.gpu_backend.run import run_on_device
from nmfsc.gpu_backend.sweeps import sweep_rows
from nmfsc.solvers import registry
from nmfsc.solvers.accelerated import AcceleratedSteps, sweep
from nmfsc.solvers.coefficients import CoefficientSteps, fit_coefficients
from nmfsc.solvers.framework import LoopSettings
from nmfsc.solvers.hoyer import HoyerSteps
from nmfsc.solvers.standard import EuclideanSteps


def _cupy_with_gpu():
    try:
        import cupy

        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:
        return None


CUPY = _cupy_with_gpu()
needs_gpu = pytest.mark.skipif(CUPY is None, reason="needs CuPy and a CUDA GPU")
EPS = np.finfo(np.float64).eps
# The bound on float64 histories, GPU path against CPU, over 50 iterations.
HISTORY_RTOL = 1e-9


@pytest.fixture(scope="module")
def V():
    return np.abs(np.random.default_rng(0).standard_normal((40, 300))) * 3.0


def on_device(steps, V, n_components, params, name="nmf_sc", **loop):
    """The GPU path's run, with NumPy arrays: the device code on the CPU."""
    settings = LoopSettings.from_keywords(name, loop)
    device_steps = GPU_BACKEND.steps_for(steps)
    return run_on_device(device_steps, V, n_components, params, settings, stacklevel=4)


def relative_gap(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / np.abs(np.asarray(b))))


SPARSENESS = [(None, 0.85), (0.6, None), (0.6, 0.7), (None, None)]


@pytest.mark.parametrize(("s_w", "s_h"), SPARSENESS)
def test_nmf_sc_device_path_has_the_cpu_iterates(V, s_w, s_h):
    params = {"sparseness_w": s_w, "sparseness_h": s_h}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu = nmf_sc(V, 5, max_iter=50, tol=0, random_state=1, **params)
        dev = on_device(HoyerSteps, V, 5, params, max_iter=50, tol=0, random_state=1)
    assert dev.n_iter == cpu.n_iter == 50
    assert relative_gap(dev.objective, cpu.objective) < HISTORY_RTOL
    np.testing.assert_allclose(dev.W, cpu.W, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(dev.H, cpu.H, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(dev.sparseness_H, cpu.sparseness_H, rtol=1e-9)
    assert dev.step_sizes == pytest.approx(cpu.step_sizes, rel=1e-9)
    assert dev.relative_error == pytest.approx(cpu.relative_error, rel=1e-9)


@pytest.mark.parametrize(("s_w", "s_h"), SPARSENESS)
def test_accelerated_device_path_has_the_cpu_iterates(V, s_w, s_h):
    """solver="accelerated" on the device: the CPU's history over 30 iterations."""
    params = {"sparseness_w": s_w, "sparseness_h": s_h}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu = nmf_sc(V, 5, max_iter=30, tol=0, random_state=1, solver="accelerated", **params)
        dev = on_device(AcceleratedSteps, V, 5, params, max_iter=30, tol=0, random_state=1)
    assert dev.n_iter == cpu.n_iter == 30
    assert relative_gap(dev.objective, cpu.objective) < HISTORY_RTOL
    # The factors to 1e-6 of their largest entry: near convergence a row's
    # move of about 1e-7 changes its f_k by about the rounding of the test
    # "f_k does not rise", so one side may keep a move the other rejects
    # (seen for a row of H at sparseness_h=0.85); the objective moves by less.
    for mine, theirs in ((dev.W, cpu.W), (dev.H, cpu.H)):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-6 * np.abs(theirs).max())
    np.testing.assert_allclose(dev.sparseness_H, cpu.sparseness_H, rtol=1e-6)
    np.testing.assert_allclose(dev.sparseness_W, cpu.sparseness_W, rtol=1e-6)
    assert dev.relative_error == pytest.approx(cpu.relative_error, rel=1e-9)


@pytest.mark.parametrize(
    "rule", [rowblocks.RULE_NONNEG, rowblocks.RULE_UNIT, rowblocks.RULE_SCALED]
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_device_sweeps_are_the_kernels_sweeps(rule, dtype):
    """sweep_rows gives the rows the Numba kernel's sweep gives (rounding
    apart), the blocks of 8, the early stop and float32 included; X is left
    as it was."""
    rng = np.random.default_rng(7)
    M, n = 11, 60  # two blocks, the second one short
    B = np.abs(rng.standard_normal((M, 3 * M)))
    G = (B @ B.T).astype(dtype)
    A = (np.abs(rng.standard_normal((M, n))) * 40.0).astype(dtype)  # <b_k, P(b_k)> > 0
    X = np.abs(rng.standard_normal((M, n))).astype(dtype)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    l1 = l1_for_sparseness(0.6, n)
    before = X.copy()
    # (After more sweeps a row's last moves are below the rounding of the
    # test "f_k does not rise", which either side may then keep or reject.)
    for sweeps, delta in ((1, 0.0), (6, 0.1), (5, 0.0)):
        want = sweep(X, G, A, rule, l1, sweeps, delta)
        got = sweep_rows(np, X, G, A, rule, l1, sweeps, delta)
        assert got.dtype == dtype
        assert np.all(np.any(want != X, axis=1))  # every row moves: every rule is tried
        tol = 1e-9 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    np.testing.assert_array_equal(X, before)


@pytest.mark.parametrize(
    "rule", [rowblocks.RULE_NONNEG, rowblocks.RULE_UNIT, rowblocks.RULE_SCALED]
)
def test_device_sweeps_leave_a_row_whose_b_is_not_finite(rule):
    """A row whose b_k is not finite (a NaN in A) stays as it is, as in the
    Numba kernel's sweep; the others move as there. (The projected rules
    learn it from the projection's finite flag.)"""
    rng = np.random.default_rng(5)
    M, n = 4, 50
    B = np.abs(rng.standard_normal((M, 3 * M)))
    A = np.abs(rng.standard_normal((M, n))) * 40.0
    A[2, 7] = np.nan
    X = np.abs(rng.standard_normal((M, n)))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    l1 = l1_for_sparseness(0.6, n)
    want = sweep(X, B @ B.T, A, rule, l1, 1, 0.0)
    got = sweep_rows(np, X, B @ B.T, A, rule, l1, 1, 0.0)
    np.testing.assert_array_equal(got[2], X[2])
    np.testing.assert_array_equal(want[2], X[2])
    assert np.all(np.any(got != X, axis=1)[[0, 1, 3]])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def nearly_constant_rows(n=2000):
    """Rows whose support's entries are nearly equal (1 + 1e-2 .. 1e-6 of
    noise), at sparseness 0.3 to 0.9, and their targets: the threshold's
    rounding, times beta ~ 1 / spread, is far above float64's there."""
    rng = np.random.default_rng(3)
    spreads = (1e-2, 1e-4, 1e-6)
    X = np.stack([1.0 + e * rng.random(n) for e in spreads for _ in range(3)])
    sparseness = [0.3, 0.6, 0.9] * len(spreads)
    l1 = np.array([l1_for_sparseness(t, n) for t in sparseness])
    return X, l1, np.ones(len(X))


def test_ill_conditioned_rows_are_projected_as_on_the_cpu():
    """The array code's rows with nearly equal entries: the CPU kernel's
    result (the threshold's would miss the L1 target by up to 1e-4)."""
    X, l1, l2 = nearly_constant_rows()
    S, finite = project_rows(np, X, l1, l2)
    assert finite.all()
    for r in range(len(X)):
        want = project(X[r], l1[r], l2[r])
        np.testing.assert_array_equal(S[r], want)
        assert abs(S[r].sum() - l1[r]) <= 4 * EPS * l1[r]


def test_float32_rows_are_squared_in_float64():
    """Float32 rows project as their float64 values do (the CPU's squares
    are float64): within 16 ulps of l2 of the CPU kernel, the same support."""
    rng = np.random.default_rng(4)
    n = 2000
    X = np.abs(rng.standard_normal((3, n))).astype(np.float32)
    l1 = np.array([l1_for_sparseness(t, n) for t in (0.3, 0.6, 0.9)])
    S, _ = project_rows(np, X, l1, np.ones(3))
    for r in range(3):
        want = project(X[r].astype(np.float64), l1[r], 1.0)
        assert np.max(np.abs(S[r] - want)) <= 16 * EPS, r
        np.testing.assert_array_equal(S[r] != 0, want != 0)


def test_small_device_sweeps_run_on_the_host(monkeypatch):
    """A device sub-problem of at most HOST_ENTRIES entries is swept by the
    CPU's own sweep (the same bits), its result back in the device's
    namespace; a larger one, and NumPy arrays, take the array code."""
    from nmfsc.gpu_backend import sweeps

    rng = np.random.default_rng(8)
    M, n = 6, 40
    B = np.abs(rng.standard_normal((M, 2 * M)))
    G, A = B @ B.T, np.abs(rng.standard_normal((M, n))) * 20.0
    X = np.abs(rng.standard_normal((M, n)))
    l1 = l1_for_sparseness(0.5, n)
    calls = []
    monkeypatch.setattr(sweeps, "sweep", lambda *a: calls.append(a) or sweep(*a))
    got = sweep_rows(_NotNumpy(), X, G, A, rowblocks.RULE_SCALED, l1, 4, 0.0)
    assert len(calls) == 1
    np.testing.assert_array_equal(got, sweep(X, G, A, rowblocks.RULE_SCALED, l1, 4, 0.0))
    sweep_rows(np, X, G, A, rowblocks.RULE_SCALED, l1, 4, 0.0)
    monkeypatch.setattr(sweeps, "HOST_ENTRIES", X.size - 1)
    sweep_rows(_NotNumpy(), X, G, A, rowblocks.RULE_NONNEG, l1, 2, 0.0)
    assert len(calls) == 1


def test_accelerated_device_path_float32(V):
    params = {"sparseness_w": 0.5, "sparseness_h": 0.6}
    with pytest.warns(ConvergenceWarning, match="max_iter=15 reached"):
        dev = on_device(
            AcceleratedSteps, V.astype(np.float32), 4, params, max_iter=15, random_state=0
        )
    assert dev.W.dtype == dev.H.dtype == np.float32
    assert np.all(np.diff(dev.objective) <= 1e-5 * dev.objective[0])
    np.testing.assert_allclose(dev.sparseness_H, 0.6, atol=1e-5)


def test_nmf_euclidean_device_path_has_the_cpu_iterates(V):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu = nmf_euclidean(V, 5, max_iter=50, tol=0, random_state=2)
        dev = on_device(
            EuclideanSteps, V, 5, {}, "nmf_euclidean", max_iter=50, tol=0, random_state=2
        )
    assert relative_gap(dev.objective, cpu.objective) < HISTORY_RTOL
    np.testing.assert_allclose(dev.W, cpu.W, rtol=1e-8, atol=1e-10)


def test_float32_runs_and_keeps_its_dtype(V):
    params = {"sparseness_w": None, "sparseness_h": 0.8}
    with pytest.warns(ConvergenceWarning, match="max_iter=20 reached"):
        dev = on_device(HoyerSteps, V.astype(np.float32), 4, params, max_iter=20, random_state=0)
    assert dev.W.dtype == dev.H.dtype == np.float32
    assert np.all(np.diff(dev.objective) <= 1e-5 * dev.objective[0])
    np.testing.assert_allclose(dev.sparseness_H, 0.8, atol=1e-5)


def test_stopping_rule_and_callback_are_the_loops(V):
    params = {"sparseness_w": None, "sparseness_h": 0.5}
    cpu = nmf_sc(V, 3, random_state=0, tol=1e-4, **params)
    seen = []
    dev = on_device(
        HoyerSteps,
        V,
        3,
        params,
        random_state=0,
        tol=1e-4,
        callback=lambda it: seen.append(it.objective),
    )
    assert dev.stop_reason == cpu.stop_reason == "tol" and dev.n_iter == cpu.n_iter
    assert seen == list(dev.objective[1:])
    stopped = on_device(HoyerSteps, V, 3, params, random_state=0, callback=lambda it: True)
    assert stopped.stop_reason == "callback" and stopped.n_iter == 1


@pytest.mark.parametrize("steps", [HoyerSteps, AcceleratedSteps])
def test_checkpoint_and_resume_continue_the_run(V, tmp_path, steps):
    params = {"sparseness_w": 0.5, "sparseness_h": 0.6}
    path = tmp_path / "run.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        whole = on_device(steps, V, 3, params, max_iter=12, tol=0, random_state=0)
        on_device(steps, V, 3, params, max_iter=5, tol=0, random_state=0, checkpoint=path)
        resumed = on_device(
            steps,
            V,
            3,
            params,
            max_iter=12,
            tol=0,
            random_state=0,
            checkpoint=path,
            resume=True,
        )
    assert resumed.n_iter == 12
    np.testing.assert_array_equal(resumed.objective, whole.objective)
    np.testing.assert_array_equal(resumed.W, whole.W)


def test_a_checkpoint_of_other_data_with_the_same_margins_is_refused(V, tmp_path):
    """Two V with the same row and column sums (a 2 x 2 swap of mass) are
    other data: resuming one's checkpoint on the other is refused."""
    from nmfsc import CheckpointMismatchError

    params = {"sparseness_w": 0.5, "sparseness_h": 0.6}
    path = tmp_path / "run.npz"
    other = V.copy()
    d = 0.9 * min(V[0, 1], V[1, 0])
    other[0, 0] += d
    other[0, 1] -= d
    other[1, 0] -= d
    other[1, 1] += d
    np.testing.assert_allclose(other.sum(axis=0), V.sum(axis=0))
    np.testing.assert_allclose(other.sum(axis=1), V.sum(axis=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        on_device(HoyerSteps, V, 3, params, max_iter=3, tol=0, random_state=0, checkpoint=path)
        with pytest.raises(CheckpointMismatchError, match="different data V"):
            on_device(
                HoyerSteps,
                other,
                3,
                params,
                max_iter=6,
                tol=0,
                random_state=0,
                checkpoint=path,
                resume=True,
            )


def test_device_run_refuses_what_it_cannot_compute(V):
    with pytest.raises(ValueError, match="negative entries"):
        on_device(HoyerSteps, -V, 3, {"sparseness_w": None, "sparseness_h": 0.5})
    with pytest.raises(ValueError, match="init='nndsvd' is not computed on a GPU"):
        on_device(HoyerSteps, V, 3, {"sparseness_w": None, "sparseness_h": 0.5}, init="nndsvd")


def projection_cases():
    rng = np.random.default_rng(3)
    for k in range(200):
        n = int(rng.choice([2, 3, 5, 17, 100, 361, 1500]))
        m = int(rng.integers(1, 5))
        X = rng.standard_normal((m, n)) if k % 3 == 0 else np.abs(rng.standard_normal((m, n)))
        if k % 4 == 0:
            X = np.round(X, 1)  # ties, among them across the threshold
        l2 = rng.uniform(0.5, 2.0, m)
        l1 = np.array([l1_for_sparseness(float(rng.uniform(0.0, 1.0)), n, t) for t in l2])
        yield X, l1, l2, bool(k % 5)


def test_projection_is_the_cpu_projection():
    """Every row as nmfsc.project gives it (to rounding), the support
    included, signed and non-negative, ties and sparseness 0 and 1."""
    for X, l1, l2, nonneg in projection_cases():
        S, finite = project_rows(np, X, l1, l2, nonneg)
        assert finite.all()
        for r in range(X.shape[0]):
            want = project(X[r], l1[r], l2[r], nonneg=nonneg)
            np.testing.assert_allclose(S[r], want, rtol=1e-9, atol=1e-12 * l2[r])
            assert np.array_equal(S[r] != 0, want != 0)


def test_projection_edge_rows():
    x = np.full(6, 0.5)
    S, _ = project_rows(np, np.stack([x, x]), np.array([1.0, np.sqrt(6)]), np.ones(2))
    np.testing.assert_array_equal(S[0], project(x, 1.0, 1.0))  # sparseness 1: the first entry
    np.testing.assert_allclose(S[1], project(x, np.sqrt(6), 1.0), rtol=1e-15)  # sparseness 0
    already = project(np.arange(1.0, 7.0), 2.0, 1.0)
    S, _ = project_rows(np, already[None, :], np.array([2.0]), np.ones(1))
    np.testing.assert_array_equal(S[0], already)  # meets the targets: as it is
    bad = np.array([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]])
    S, finite = project_rows(np, bad, np.array([1.2, 1.2]), np.ones(2))
    assert finite.tolist() == [False, True] and np.isnan(S[0]).all()


def test_project_batch_device_layouts_and_errors():
    X = np.abs(np.random.default_rng(4).standard_normal((30, 4)))
    l1 = l1_for_sparseness(0.7, 30)
    np.testing.assert_allclose(
        project_batch_device(X, l1, 1.0, 0, True, "fast", False),
        nmfsc.project_batch(X, l1, 1.0, axis=0),
        rtol=1e-9,
        atol=1e-13,
    )
    with pytest.raises(ValueError, match="unreachable"):
        project_batch_device(X, 100.0, 1.0, 0, True, "fast", False)
    with pytest.raises(ValueError, match=r"NaN or infinity \(column 2\)"):
        bad = X.copy()
        bad[3, 2] = np.inf
        project_batch_device(bad, l1, 1.0, 0, True, "fast", False)


def test_the_backend_is_registered_and_named_in_the_table():
    stub = type("ndarray", (), {"__module__": "cupy._core.core"})()
    assert is_cupy_array(stub) and not is_cupy_array(np.zeros(2))
    assert backends.backend_for(stub) is GPU_BACKEND
    gpu_rows = {(s.name, s.variant) for s in registry.SOLVERS if "gpu" in s.backends}
    assert gpu_rows == {("nmf_sc", "hoyer"), ("nmf_sc", "accelerated"), ("nmf_euclidean", None)}
    # each declared steps class resolves to the device form of those steps
    for steps in GPU_BACKEND.steps:
        assert issubclass(GPU_BACKEND.steps_for(steps), steps)


def test_import_nmfsc_does_not_import_cupy_or_numba_cuda():
    code = (
        "import sys, numpy as np, nmfsc\n"
        "nmfsc.project(np.arange(1.0, 5.0), 1.5, 1.0)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cupy', 'numba_cuda')\n"
        "    or m.startswith('numba.cuda')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(CUPY is not None, reason="a GPU is there: the error is not raised")
def test_cli_device_gpu_without_cupy_is_one_line(tmp_path):
    data = tmp_path / "v.csv"
    data.write_text("1,2,3\n4,5,6\n7,8,9.5\n")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "nmfsc",
            "fit",
            str(data),
            "-k",
            "2",
            "--device",
            "gpu",
            "--out",
            str(tmp_path / "o.npz"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "--device gpu" in out.stderr
    assert not (tmp_path / "o.npz").exists()


@needs_gpu
@pytest.mark.parametrize(("s_w", "s_h"), SPARSENESS)
@pytest.mark.parametrize(("solver", "iterations"), [("hoyer", 50), ("accelerated", 30)])
def test_cupy_arrays_in_cupy_arrays_out(V, s_w, s_h, solver, iterations):
    params = {"sparseness_w": s_w, "sparseness_h": s_h, "solver": solver}
    keywords = {"max_iter": iterations, "tol": 0, "random_state": 1, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu = nmf_sc(V, 5, **keywords)
        gpu = nmf_sc(CUPY.asarray(V), 5, **keywords)
    assert is_cupy_array(gpu.W) and is_cupy_array(gpu.H)
    assert relative_gap(gpu.objective, cpu.objective) < HISTORY_RTOL
    if solver == "hoyer":  # the accelerated factors: see its NumPy test above
        np.testing.assert_allclose(gpu.W.get(), cpu.W, rtol=1e-8, atol=1e-10)


@needs_gpu
def test_cupy_projection_and_euclidean(V):
    X = CUPY.asarray(V)
    l1 = l1_for_sparseness(0.7, V.shape[0])
    S = nmfsc.project_batch(X, l1, 1.0, axis=0)
    assert is_cupy_array(S)
    np.testing.assert_allclose(S.get(), nmfsc.project_batch(V, l1, 1.0), rtol=1e-9, atol=1e-13)
    s = nmfsc.project(X[:, 0], l1, 1.0)
    np.testing.assert_allclose(s.get(), project(V[:, 0], l1, 1.0), rtol=1e-9, atol=1e-13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu = nmf_euclidean(V, 4, max_iter=50, tol=0, random_state=0)
        gpu = nmf_euclidean(X, 4, max_iter=50, tol=0, random_state=0)
    assert relative_gap(gpu.objective, cpu.objective) < HISTORY_RTOL


def test_passes_and_sort_find_the_same_thresholds():
    """The two ways project_rows finds a row's threshold agree (the sort is
    the passes' fallback, so each is checked against the other)."""
    from nmfsc.gpu_backend.thresholds import (
        max_passes,
        support_moments,
        thresholds_by_passes,
        thresholds_by_sort,
    )

    rng = np.random.default_rng(5)
    for n in (10, 361, 5000):
        A = np.abs(rng.standard_normal((8, n))) ** rng.uniform(0.5, 3.0, (8, 1))
        rho = np.array([l1_for_sparseness(s, n) for s in np.linspace(0.05, 0.95, 8)])
        by_passes, settled, moments = thresholds_by_passes(np, A, rho, max_passes(n))
        by_sort, found = thresholds_by_sort(np, A, rho)
        assert settled.all() and found.all()
        np.testing.assert_allclose(by_passes, by_sort, rtol=1e-10, atol=1e-13)
        # The last pass's moments are those of the support above the threshold.
        for got, want in zip(moments, support_moments(np, A, by_passes), strict=True):
            np.testing.assert_array_equal(got, want)


def route_to_device(monkeypatch, accepts):
    """From now on the GPU backend takes what ``accepts`` says (NumPy arrays
    taken for CuPy ones), so that the public solvers, fit_coefficients and
    SparseNMF take their GPU paths: the device code, on the CPU. Returns
    the list of the shapes of the V of each DeviceRun that follows."""
    from nmfsc.gpu_backend.run import DeviceRun

    calls = []
    open_data = DeviceRun.open_data

    def counted(run, data):
        calls.append(data.shape)
        open_data(run, data)

    monkeypatch.setattr(DeviceRun, "open_data", counted)
    monkeypatch.setitem(backends._BACKENDS, "gpu", replace(GPU_BACKEND, accepts=accepts))
    return calls


def test_public_solvers_reach_the_backend_through_the_seam(V, monkeypatch):
    """nmf_sc (both solvers) and nmf_euclidean hand data the GPU backend
    accepts to it (here NumPy data, made acceptable): same history, the
    warning at the caller; a mask refused there, and a variant whose row
    does not name the backend refused with the variant that runs there."""
    calls = route_to_device(monkeypatch, lambda data: data is V)
    with pytest.warns(ConvergenceWarning) as caught:
        routed = nmf_sc(V, 3, sparseness_h=0.7, max_iter=10, random_state=0)
    assert caught[0].filename == __file__
    with pytest.warns(ConvergenceWarning):
        cpu = nmf_sc(V.copy(), 3, sparseness_h=0.7, max_iter=10, random_state=0)
    assert relative_gap(routed.objective, cpu.objective) < HISTORY_RTOL
    with pytest.warns(ConvergenceWarning):
        nmf_euclidean(V, 3, max_iter=5, random_state=0)
    with pytest.warns(ConvergenceWarning):
        fast = nmf_sc(V, 3, sparseness_h=0.7, max_iter=10, random_state=0, solver="accelerated")
    with pytest.warns(ConvergenceWarning):
        fast_cpu = nmf_sc(
            V.copy(), 3, sparseness_h=0.7, max_iter=10, random_state=0, solver="accelerated"
        )
    assert relative_gap(fast.objective, fast_cpu.objective) < HISTORY_RTOL
    assert len(calls) == 3  # all three runs were DeviceRuns
    with pytest.raises(ValueError, match="mask= does not run on a CuPy"):
        nmf_sc(V, 3, sparseness_h=0.7, solver="accelerated", mask=np.ones(V.shape, bool))
    # a backend that does not declare the accelerated steps refuses that variant
    gpu = backends.backend_named("gpu")
    steps = {k: v for k, v in gpu.steps.items() if k is not AcceleratedSteps}
    monkeypatch.setitem(backends._BACKENDS, "gpu", replace(gpu, steps=steps))
    with pytest.raises(ValueError, match="does not run on a CuPy .* solver='hoyer'"):
        nmf_sc(V, 3, sparseness_h=0.7, solver="accelerated")


class _NotNumpy:
    """NumPy under another name: the array code's ``xp`` for a CuPy array."""

    def __getattr__(self, name):
        return getattr(np, name)


def test_device_rows_take_the_fused_kernels_else_the_array_code(monkeypatch):
    """project_rows hands CuPy rows to the fused kernels where Numba's CUDA
    target is there; when they fail (no compiler) it says so once and
    projects with the array code from then on."""
    from nmfsc.gpu_backend import device_projection as projection

    X = np.abs(np.random.default_rng(6).standard_normal((3, 50)))
    l1, l2 = np.full(3, l1_for_sparseness(0.6, 50)), np.ones(3)
    want, _ = project_rows(np, X, l1, l2)
    calls = []
    monkeypatch.setattr(
        projection, "_FUSED", [lambda *args, **kwargs: calls.append(args) or "fused"]
    )
    assert project_rows(_NotNumpy(), X, l1, l2) == "fused" and len(calls) == 1
    assert project_rows(np, X, l1, l2)[0] is not None and len(calls) == 1  # NumPy: array code

    NvvmSupportError = type("NvvmSupportError", (Exception,), {"__module__": "numba.cuda.cudadrv"})

    def no_compiler(*args, **kwargs):
        raise NvvmSupportError("libNVVM cannot be found")

    monkeypatch.setattr(projection, "_FUSED", [no_compiler])
    with pytest.warns(RuntimeWarning, match=r"fused CUDA projection failed \(NvvmSupportError"):
        S, finite = project_rows(_NotNumpy(), X, l1, l2)
    np.testing.assert_array_equal(S, want)
    assert projection._FUSED == [None]
    np.testing.assert_array_equal(project_rows(_NotNumpy(), X, l1, l2)[0], want)  # no warning

    def bug(*args, **kwargs):
        raise IndexError("a bug, not a missing compiler")

    monkeypatch.setattr(projection, "_FUSED", [bug])
    with pytest.raises(IndexError, match="a bug"):
        project_rows(_NotNumpy(), X, l1, l2)

    # numba-cuda 0.30 with numpy 2.5 fails inside its own code with a plain
    # AttributeError (np.row_stack is gone): the array code projects.
    inside_numba = {"__name__": "numba.cuda.np.arrayobj", "np": np}
    exec("def compile_kernels(*args, **kwargs):\n    return np.row_stack\n", inside_numba)
    monkeypatch.setattr(projection, "_FUSED", [inside_numba["compile_kernels"]])
    if hasattr(np, "row_stack"):  # numpy < 2.5: raise as numpy 2.5 would
        monkeypatch.delattr(np, "row_stack")
    with pytest.warns(RuntimeWarning, match=r"fused CUDA projection failed \(AttributeError"):
        S, finite = project_rows(_NotNumpy(), X, l1, l2)
    np.testing.assert_array_equal(S, want)


@needs_gpu
@pytest.mark.parametrize("form", ["rows", "grid"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cupy_rows_take_the_fused_kernels(dtype, form):
    """On a GPU with Numba's CUDA target, the fused kernels project CuPy
    rows (the real layout: rows of 10^5 in 25 chunks) as the CPU does, in
    each form (the one-launch form runs: it does not fall back to four
    launches), with the same bits on every launch; and the one-launch form
    with the same bits on one block, three, and as many as the GPU holds
    (the cross-block work the simulator, one block per cooperative grid,
    cannot run). project_rows takes them, in the form "auto" chooses."""
    from nmfsc.gpu_backend.device_projection import fused_kernels

    fused = fused_kernels()
    if fused is None:
        pytest.skip("needs Numba's CUDA target (pip install numba-cuda[cu12])")
    rng = np.random.default_rng(8)
    n = 100_000
    X = np.abs(rng.standard_normal((6, n))) ** rng.uniform(0.5, 3.0, (6, 1))
    X[5] = np.round(X[5], 1)
    X = X.astype(dtype)
    l1 = np.array([l1_for_sparseness(s, n) for s in (0.01, 0.3, 0.6, 0.85, 0.99, 0.7)])
    on_gpu = [CUPY.asarray(a) for a in (X, l1, np.ones(6))]
    info: dict = {}
    S, finite = fused(CUPY, *on_gpu, form=form, info=info)
    assert info["form"] == form and bool(finite.all()) and is_cupy_array(S)
    S = S.get()
    for blocks in (1, 3, None) if form == "grid" else (None,):
        again, _ = fused(CUPY, *on_gpu, form=form, blocks=blocks)
        np.testing.assert_array_equal(again.get(), S, err_msg=f"blocks={blocks}")
    for r in range(6):
        want = project(X[r].astype(np.float64), l1[r], 1.0)
        np.testing.assert_allclose(S[r], want, rtol=1e-9, atol=1e-12)
        assert np.array_equal(S[r] != 0, want != 0)
    by_default, _ = project_rows(CUPY, *on_gpu)
    np.testing.assert_allclose(by_default.get(), S, rtol=1e-9, atol=1e-12)


@needs_gpu
@pytest.mark.parametrize(("solver", "columns"), [("hoyer", 300), ("accelerated", 60_000)])
def test_runs_with_the_grid_form_have_the_cpu_history(solver, columns, monkeypatch):
    """nmf_sc on CuPy arrays with the one-launch projection: the CPU's
    objective history (the accelerated solver's H of 5 x 60,000 is swept on
    the device, each row one projection)."""
    from nmfsc.gpu_backend import fused
    from nmfsc.gpu_backend.device_projection import fused_kernels

    if fused_kernels() is None:
        pytest.skip("needs Numba's CUDA target (pip install numba-cuda[cu12])")
    monkeypatch.setattr(fused, "FORM", "grid")
    V = np.abs(np.random.default_rng(0).standard_normal((40, columns))) * 3.0
    keywords = {"max_iter": 10, "tol": 0, "random_state": 1, "solver": solver}
    params = {"sparseness_w": 0.6, "sparseness_h": 0.7}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu = nmf_sc(V, 5, **params, **keywords)
        gpu = nmf_sc(CUPY.asarray(V), 5, **params, **keywords)
    assert not fused._GRID_FAILED  # the one-launch form ran
    assert relative_gap(gpu.objective, cpu.objective) < HISTORY_RTOL


# --- SparseNMF and fit_coefficients (SparseNMF.transform's solve) --------------


@pytest.fixture(scope="module")
def basis(V):
    """A basis fitted on V (40 x 5, in V's units), for fit_coefficients."""
    with pytest.warns(ConvergenceWarning):
        return nmf_sc(V, 5, sparseness_w=0.6, max_iter=20, random_state=0).W


@pytest.mark.parametrize("s_h", [None, 0.7])
def test_device_coefficient_steps_have_the_cpu_history(V, basis, s_h):
    """fit_coefficients's H step alone (W fixed) on the device, NumPy standing
    in for CuPy: the CPU's objective history over 50 iterations, with and
    without sparseness_h, and the CPU's coefficients."""
    data = V[:, :120]
    # Without s_h, fit_coefficients runs with W at the data's scale (its
    # _basis_ratio) and scales H back; the device run is given that W.
    ratio = 1.0 if s_h is not None else float(data.max() / basis.max())
    params = {"sparseness_h": s_h, "fixed_W": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu = fit_coefficients(data, basis, sparseness_h=s_h, max_iter=50, tol=0, random_state=1)
        dev = on_device(
            CoefficientSteps,
            data,
            5,
            params,
            "fit_coefficients",
            W_init=basis * ratio,
            max_iter=50,
            tol=0,
            random_state=1,
        )
    assert dev.n_iter == cpu.n_iter == 50
    assert relative_gap(dev.objective, cpu.objective) < HISTORY_RTOL
    np.testing.assert_allclose(dev.H * ratio, cpu.H, rtol=1e-8, atol=1e-10 * np.abs(cpu.H).max())
    if s_h is not None:
        np.testing.assert_allclose(dev.sparseness_H, s_h, rtol=1e-9)


def is_ndarray(data):
    return isinstance(data, np.ndarray)


ESTIMATORS = [
    {"sparseness_components": 0.5},
    {"sparseness_coefficients": 0.7},
    {"sparseness_components": 0.5, "sparseness_coefficients": 0.7, "solver": "accelerated"},
]


def estimator_data():
    rng = np.random.default_rng(11)
    return np.abs(rng.standard_normal((60, 25))), np.abs(rng.standard_normal((30, 25)))


def fitted(X, X_new, **params):
    """A SparseNMF fitted on X, its fit_transform, transform and score of X_new."""
    model = SparseNMF(4, random_state=0, tol=1e-4, max_iter=500, **params)
    Z = model.fit_transform(X)
    return model, Z, model.transform(X_new), model.score(X_new)


@pytest.mark.parametrize("params", ESTIMATORS)
def test_sparse_nmf_gpu_path_gives_the_cpu_results(monkeypatch, params):
    """SparseNMF's GPU path (check, fit, transform, score on the device; here
    NumPy arrays taken for CuPy ones) gives the CPU estimator's results."""
    X, X_new = estimator_data()
    cpu, Z_cpu, T_cpu, score_cpu = fitted(X, X_new, **params)
    routed = route_to_device(monkeypatch, is_ndarray)
    dev, Z_dev, T_dev, score_dev = fitted(X, X_new, **params)
    # fit, transform and score each ran on the device, on X.T (V is N x T)
    assert routed == [X.T.shape, X_new.T.shape, X_new.T.shape]
    assert dev.n_iter_ == cpu.n_iter_
    assert relative_gap(dev.result_.objective, cpu.result_.objective) < HISTORY_RTOL
    assert dev.reconstruction_err_ == pytest.approx(cpu.reconstruction_err_, rel=HISTORY_RTOL)
    assert isinstance(dev.reconstruction_err_, float) and isinstance(score_dev, float)
    assert score_dev == pytest.approx(score_cpu, rel=HISTORY_RTOL)
    for mine, theirs in ((Z_dev, Z_cpu), (dev.components_, cpu.components_), (T_dev, T_cpu)):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-6 * np.abs(theirs).max())
    np.testing.assert_allclose(dev.inverse_transform(T_dev), T_dev @ dev.components_)


def test_sparse_nmf_gpu_path_checks_x_on_the_device(monkeypatch):
    """Bad X on the GPU path: scikit-learn's one-line messages, and the GPU's
    limits (missing values) named with what to do."""
    routed = route_to_device(monkeypatch, is_ndarray)
    X, _ = estimator_data()
    model = SparseNMF(3, random_state=0, tol=1e-3, max_iter=200)
    for bad, error, match in (
        (-X, ValueError, "Negative values in data passed to SparseNMF"),
        (
            np.where(X > 2.0, np.nan, X),
            ValueError,
            r"Input X contains NaN or infinity \(\d+ entries\)",
        ),
        (X[0], ValueError, "Expected 2D array, got 1D array instead"),
        (X[:0], ValueError, r"Found array with 0 sample\(s\)"),
        (X.astype(complex), TypeError, "real numeric array, got dtype complex128"),
    ):
        with pytest.raises(error, match=match):
            model.fit(bad)
    with pytest.raises(
        TypeError, match=r"missing_values=np.nan\) does not run on a GPU: .*asnumpy"
    ):
        SparseNMF(3, missing_values=np.nan).fit(X)
    assert routed == []
    model.fit(X.astype(np.int64) + 1)  # integers: float64 on the device
    assert model.components_.dtype == np.float64 and model.n_features_in_ == 25
    with pytest.raises(ValueError, match="X has 24 features, but SparseNMF is expecting 25"):
        model.transform(X[:, 1:])
    zeros = model.transform(np.zeros((4, 25)))  # all zero: zero coefficients, no solve
    assert zeros.shape == (4, 3) and not zeros.any() and len(routed) == 1
    assert model.score(np.zeros((4, 25))) == 0.0
    with pytest.raises(ValueError, match="mask= does not run on a CuPy"):
        fit_coefficients(X.T, model.components_.T, mask=np.ones(X.T.shape, bool))
    with pytest.raises(ValueError, match="X has 2 columns, but SparseNMF has 3 components"):
        model.inverse_transform(X[:, :2])
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        model.inverse_transform(np.full((2, 3), np.inf))


@needs_gpu
@pytest.mark.parametrize("params", ESTIMATORS)
def test_sparse_nmf_on_cupy_arrays(params):
    """SparseNMF on CuPy arrays: CuPy arrays out, Python floats for the
    errors, the CPU estimator's results."""
    X, X_new = estimator_data()
    cpu, Z_cpu, T_cpu, score_cpu = fitted(X, X_new, **params)
    gpu, Z_gpu, T_gpu, score_gpu = fitted(CUPY.asarray(X), CUPY.asarray(X_new), **params)
    for array in (Z_gpu, T_gpu, gpu.components_, gpu.inverse_transform(T_gpu)):
        assert is_cupy_array(array)
    assert isinstance(gpu.reconstruction_err_, float) and isinstance(score_gpu, float)
    assert gpu.n_iter_ == cpu.n_iter_
    assert relative_gap(gpu.result_.objective, cpu.result_.objective) < HISTORY_RTOL
    assert gpu.reconstruction_err_ == pytest.approx(cpu.reconstruction_err_, rel=HISTORY_RTOL)
    assert score_gpu == pytest.approx(score_cpu, rel=HISTORY_RTOL)
    for mine, theirs in ((Z_gpu, Z_cpu), (gpu.components_, cpu.components_), (T_gpu, T_cpu)):
        np.testing.assert_allclose(mine.get(), theirs, rtol=0, atol=1e-6 * np.abs(theirs).max())
    # a model fitted on the host transforms CuPy data on the GPU
    on_host = cpu.transform(CUPY.asarray(X_new))
    assert is_cupy_array(on_host)
    np.testing.assert_allclose(on_host.get(), T_cpu, rtol=0, atol=1e-6 * np.abs(T_cpu).max())


@needs_gpu
def test_sparse_nmf_on_cupy_arrays_float32_custom_start_and_errors():
    X, _ = estimator_data()
    X_gpu = CUPY.asarray(X)
    model = SparseNMF(3, sparseness_components=0.5, random_state=0, tol=1e-3, max_iter=300)
    Z = model.fit_transform(X_gpu.astype(CUPY.float32))
    assert Z.dtype == model.components_.dtype == np.float32 and is_cupy_array(Z)
    rng = np.random.default_rng(0)
    W, H = np.abs(rng.standard_normal((60, 3))), np.abs(rng.standard_normal((3, 25)))
    custom = {"init": "custom", "random_state": 0, "tol": 1e-3, "max_iter": 300}
    cpu = SparseNMF(3, **custom).fit(X, W=W, H=H)
    gpu = SparseNMF(3, **custom).fit(X_gpu, W=CUPY.asarray(W), H=CUPY.asarray(H))
    assert relative_gap(gpu.result_.objective, cpu.result_.objective) < HISTORY_RTOL
    with pytest.raises(TypeError, match=r"fitted on a GPU .* pass cupy.asarray\(X\)"):
        gpu.transform(X)
    with pytest.raises(TypeError, match=r"fitted on a GPU .* pass cupy.asarray\(X\)"):
        gpu.inverse_transform(np.ones((2, 3)))
    with pytest.raises(TypeError, match="does not run on a GPU: pass cupy.asnumpy"):
        SparseNMF(3, missing_values=np.nan).fit(X_gpu)
    with pytest.raises(ValueError, match="Negative values in data passed to SparseNMF"):
        SparseNMF(3).fit(-X_gpu)
    with pytest.raises(ValueError, match="init='nndsvd' is not computed on a GPU"):
        SparseNMF(3, init="nndsvd").fit(X_gpu)


@needs_gpu
def test_cupy_starts_and_fit_coefficients_on_cupy_arrays(V, basis):
    """nmf_sc takes W_init and H_init as CuPy arrays, and fit_coefficients a
    CuPy V and W: CuPy out, the CPU's histories."""
    rng = np.random.default_rng(2)
    W0, H0 = np.abs(rng.standard_normal((40, 4))), np.abs(rng.standard_normal((4, 300)))
    keywords = {"sparseness_h": 0.7, "max_iter": 30, "tol": 0, "init": "custom"}
    V_gpu = CUPY.asarray(V)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu = nmf_sc(V, 4, W_init=W0, H_init=H0, **keywords)
        gpu = nmf_sc(V_gpu, 4, W_init=CUPY.asarray(W0), H_init=CUPY.asarray(H0), **keywords)
        assert is_cupy_array(gpu.W)
        assert relative_gap(gpu.objective, cpu.objective) < HISTORY_RTOL
        for s_h in (None, 0.7):
            loop = {"sparseness_h": s_h, "max_iter": 30, "tol": 0, "random_state": 1}
            cpu = fit_coefficients(V, basis, **loop)
            gpu = fit_coefficients(V_gpu, CUPY.asarray(basis), **loop)
            assert is_cupy_array(gpu.H)
            assert relative_gap(gpu.objective, cpu.objective) < HISTORY_RTOL


@pytest.mark.parametrize(
    ("steps", "s_w", "s_h"),
    [
        (HoyerSteps, None, 0.85),
        (HoyerSteps, 0.6, 0.7),
        (HoyerSteps, None, None),
        (AcceleratedSteps, 0.6, 0.7),
        (EuclideanSteps, None, None),
    ],
)
def test_device_steps_never_take_the_cpus_blocked_products(monkeypatch, steps, s_w, s_h):
    """The CPU's blocked products sum into NumPy buffers, which CuPy's matmul
    cannot write into: the device path must never reach them, whatever the
    size (it did, through the H H^T cache, for T >= 1024: nmf_sc at 288 x
    10^6 on an H100 stopped with "`out` must be a tuple or cupy.ndarray")."""
    from nmfsc import _blocked

    def refuse(*args, **kwargs):
        raise AssertionError("a CPU blocked product on the device path")

    V = np.abs(np.random.default_rng(12).standard_normal((40, 3000)))
    params = {} if steps is EuclideanSteps else {"sparseness_w": s_w, "sparseness_h": s_h}
    name = "nmf_euclidean" if steps is EuclideanSteps else "nmf_sc"
    monkeypatch.setattr(_blocked, "_over_blocks", refuse)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = on_device(steps, V, 10, params, name=name, max_iter=5, tol=0, random_state=0)
    assert result.n_iter == 5


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cupy_stepped_is_numpys_step_and_runs_keep_no_workspace(dtype):
    """The fused trial step (arrays.stepped) is NumPy's ``X - mu * D`` in
    X's dtype to a rounding of the product (the GPU may fuse the multiply
    and the subtraction); a run on the GPU leaves none of the fused projection's
    workspaces behind."""
    from nmfsc.gpu_backend.arrays import stepped
    from nmfsc.gpu_backend.device_projection import fused_kernels

    rng = np.random.default_rng(4)
    X, D = (np.abs(rng.standard_normal((7, 5000))).astype(dtype) for _ in range(2))
    got = stepped(CUPY, CUPY.asarray(X), CUPY.asarray(D), 0.37)
    want = stepped(np, X, D, 0.37)
    assert got.dtype == want.dtype == dtype
    scale = np.abs(X) + 0.37 * np.abs(D)  # a rounding of the product, at most
    assert np.all(np.abs(got.get() - want) <= np.finfo(dtype).eps * scale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        nmf_sc(CUPY.asarray(np.abs(X)), 3, sparseness_h=0.7, max_iter=3, tol=0, random_state=0)
    if fused_kernels() is not None:
        from nmfsc.gpu_backend import fused

        assert not fused._WORKSPACES
