"""The projection in one cooperative launch (nmfsc.gpu_backend.grid_kernels,
fused's ``form="grid"``) under Numba's CUDA simulator.

As in test_gpu_kernels.py, one test runs this file again in a subprocess
with ``NUMBA_ENABLE_CUDASIM=1``. The simulator's cooperative grids have one
block, so the cooperative kernel runs there on one block, and its phases
run also as one kernel each on grids of several blocks (the launch being
the barrier): the tests hold both to a NumPy reference that adds in the
kernels' order (equal bits, pass by pass), and the projection to the CPU
kernel and to the four-launch form.
"""

import math
import os
import warnings

import numpy as np
import pytest
from test_gpu_kernels import (
    CHUNK,
    EPS,
    LAYOUT,
    THREADS,
    ULPS,
    counted_launches,
    hard_rows,
    passes_under_the_simulator,
    projected_with_a_fall,
    reference_partials,
)

from nmfsc import l1_for_sparseness, project
from nmfsc.gpu_backend.thresholds import max_passes

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
in_simulator = pytest.mark.skipif(
    not SIMULATED,
    reason="runs in the simulator's subprocess (test_grid_kernels_pass_under_the_simulator)",
)
GRID = {"threads": THREADS, "chunk": CHUNK, "form": "grid"}


@pytest.mark.slow  # about a minute: the simulator runs every thread as a Python thread
@pytest.mark.skipif(SIMULATED, reason="this is the simulator's own run")
def test_grid_kernels_pass_under_the_simulator():
    passes_under_the_simulator(__file__, "13 passed, 1 skipped")


def run_kernels(X, l1, l2, signed, blocks=None, snapshots=None):
    """The grid form's kernels on the rows X, by hand: the cooperative
    kernel on one block (``blocks`` None), or its phases one launch each
    on ``blocks`` blocks, ``snapshots`` (a list) receiving each row's
    threshold after each pass. Returns the arrays they fill, as a dict."""
    from nmfsc.gpu_backend.cuda_kernels import ACTIVE, ALPHA, FATE, L1, L2
    from nmfsc.gpu_backend.grid_kernels import FATE_COLUMNS, ROW_COLUMNS, grid_kernels

    count, n = X.shape
    chunks = -(-n // CHUNK)
    kernels = grid_kernels(THREADS, CHUNK // THREADS)
    out = {
        "rows": np.zeros((count, ROW_COLUMNS)),
        "fates": np.zeros((count, FATE_COLUMNS), dtype=np.int64),
        "counts": np.zeros((count, chunks, 2), dtype=np.int64),
        "sums": np.zeros((count, chunks, 2)),
        "B": np.zeros_like(X),
        "held": np.zeros((count, chunks * THREADS), dtype=np.int32),
        "active": np.zeros(max_passes(n) + 1, dtype=np.int64),
        "S": np.zeros((count, n)),
    }
    out["rows"][:, L1], out["rows"][:, L2] = l1, l2
    row, partials = (out["rows"], out["fates"]), (out["counts"], out["sums"])
    stored = (out["B"], out["held"])
    limit = max_passes(n)
    if blocks is None:
        kernels.project[1, THREADS](
            X, *stored, signed, not signed, *row, *partials, out["active"], limit, out["S"]
        )
        return out
    kernels.first_step[blocks, THREADS](X, signed, not signed, *row, *partials, out["active"])
    p = 1
    while out["active"][p]:
        if snapshots is not None:
            snapshots.append(out["rows"][:, ALPHA].copy())
        p += 1
        kernels.pass_step[blocks, THREADS](
            X, *stored, signed, *row, *partials, out["active"], p, limit
        )
        assert out["active"][p] == np.sum(out["fates"][:, FATE] == ACTIVE)
    if snapshots is not None:
        snapshots.append(out["rows"][:, ALPHA].copy())
    kernels.norm_step[blocks, THREADS](X, *stored, signed, *row, *partials)
    kernels.scale_step[blocks, THREADS](X, signed, *row, out["S"])
    return out


def row_total(values, threads=THREADS):
    """A row's partials (one per chunk) added as the kernels' last block
    adds them: thread t those of chunks t, t + threads, ... in order, then
    the tree."""
    lanes = np.zeros(threads, dtype=values.dtype)
    for t in range(threads):
        for value in values[t::threads]:
            lanes[t] += value
    half = threads // 2
    while half:
        lanes[:half] += lanes[half : 2 * half]
        half //= 2
    return lanes[0]


def closed_form(k, s1, s2, rho):
    """cuda_kernels._closed_form, in Python floats (the simulator's)."""
    kf = float(k)
    room = kf * (kf - rho * rho)
    if not room > 0:
        return math.nan
    return s1 / kf - rho * math.sqrt(max(s2 - s1 * s1 / kf, 0.0) / room)


def reference_passes(A, l1, l2, signed):
    """Each row's thresholds, pass by pass, and its result, from the
    reference's partials (the kernels' order) and Hoyer's closed form:
    ``(thresholds, S)``, the thresholds a list of the rows' after each pass
    (a row keeps its last once settled)."""
    count = A.shape[0]
    rho = l1 / l2
    alpha = np.full(count, -np.inf)
    size = np.full(count, -1)
    settled = np.zeros(count, dtype=bool)
    thresholds = []
    while not settled.all():
        counts, S1, S2, _ = reference_partials(A, alpha, signed)
        for r in np.flatnonzero(~settled):
            k = row_total(counts[r])
            settled[r] = k == size[r]
            alpha[r] = closed_form(k, row_total(S1[r]), row_total(S2[r]), rho[r])
            size[r] = k
        thresholds.append(alpha.copy())
    a = np.abs(A) if signed else A
    S = np.zeros(A.shape)
    for r in range(count):
        z = a[r] - alpha[r]
        lanes = [
            np.where(z > 0, z * z, 0.0)[c * CHUNK : (c + 1) * CHUNK]
            for c in range(-(-A.shape[1] // CHUNK))
        ]
        parts = []
        for segment in lanes:
            per_thread = np.array([sum(segment[t::THREADS], 0.0) for t in range(THREADS)])
            parts.append(row_total(per_thread))
        norm = math.sqrt(row_total(np.array(parts)))
        S[r] = np.where(z > 0, z * (l2[r] / norm), 0.0)
        if signed:
            S[r] = np.where(A[r] < 0, -S[r], S[r])
    return thresholds, S


@in_simulator
@pytest.mark.parametrize("signed", [False, True])
def test_every_pass_and_the_result_equal_a_reference_in_the_same_order(signed):
    """The thresholds after each pass (the phases on three blocks) and the
    result equal the reference's bits: each pass's sums are the first
    two's, whether a lane's entries come from the rows or from B."""
    from nmfsc.gpu_backend.cuda_kernels import FATE, PASSES, SETTLED

    rng = np.random.default_rng(11)
    n = 300
    X = rng.standard_normal((4, n))
    X = X if signed else np.abs(X) ** 2
    l1 = np.array([l1_for_sparseness(s, n) for s in (0.3, 0.6, 0.85, 0.95)])
    l2 = np.array([1.0, 0.5, 2.0, 1.0])
    snapshots = []
    got = run_kernels(X, l1, l2, signed, blocks=3, snapshots=snapshots)
    thresholds, S = reference_passes(X, l1, l2, signed)
    assert (got["fates"][:, FATE] == SETTLED).all()
    assert len(snapshots) == len(thresholds) == got["fates"][:, PASSES].max()
    for mine, theirs in zip(snapshots, thresholds, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(got["S"], S)


@in_simulator
@pytest.mark.parametrize(("dtype", "signed"), [(np.float64, False), (np.float32, True)])
def test_the_cooperative_kernel_is_its_phases_on_any_number_of_blocks(dtype, signed):
    """The one launch on one block and the phases on 2 and 7 blocks (each
    taking tiles of several rows) fill every array with the same bits."""
    X, l1, l2 = hard_rows(300, dtype, signed)
    X[2, 7] = np.nan
    one = run_kernels(X, l1, l2, signed)
    for blocks in (2, 7):
        many = run_kernels(X, l1, l2, signed, blocks=blocks)
        for name in ("rows", "fates", "S", "active"):
            np.testing.assert_array_equal(many[name], one[name], err_msg=f"{name}, {blocks} blocks")


@in_simulator
@pytest.mark.parametrize(
    ("dtype", "signed"), [(np.float64, False), (np.float64, True), (np.float32, False)]
)
def test_the_grid_form_is_the_cpu_projection(dtype, signed):
    """Every row of the hard rows as the four-launch form and the array
    code give it, to 16 ulps of l2, with their supports; the same rows
    take the same paths (sorted, to the CPU kernel)."""
    from nmfsc.gpu_backend import fused
    from nmfsc.gpu_backend.device_projection import project_rows

    n = 300
    X, l1, l2 = hard_rows(n, dtype, signed)
    info, rows_info = {}, {}
    S, finite = fused.project_rows_fused(np, X, l1, l2, not signed, **GRID, info=info)
    R, _ = fused.project_rows_fused(np, X, l1, l2, not signed, **LAYOUT, info=rows_info)
    assert finite.all() and info["form"] == "grid" and rows_info["form"] == "rows"
    assert (info["sorted"], info["on_cpu"]) == (rows_info["sorted"], rows_info["on_cpu"])
    array_code, _ = project_rows(np, X.astype(np.float64), l1, l2, not signed)
    for r in range(X.shape[0]):
        assert np.max(np.abs(S[r] - array_code[r])) <= ULPS * EPS * l2[r], r
        assert np.max(np.abs(S[r] - R[r])) <= ULPS * EPS * l2[r], r
        np.testing.assert_array_equal(S[r] != 0, R[r] != 0, err_msg=str(r))
        # As close to the CPU kernel as the array code is.
        want = project(X[r].astype(np.float64), l1[r], l2[r], nonneg=not signed)
        gap = np.max(np.abs(array_code[r] - want))
        assert np.max(np.abs(S[r] - want)) <= gap + ULPS * EPS * l2[r], r


@in_simulator
def test_the_grid_form_is_one_launch_and_one_host_read(monkeypatch):
    """Rows that take many passes and rows that take few: one launch, and
    the host reads the fates once; the second pass keeps the support (a
    row's later passes read less than the row)."""
    from nmfsc.gpu_backend import fused

    launches, reads = counted_launches(monkeypatch)
    n = 300
    rng = np.random.default_rng(6)
    for power, sparseness in ((1, 0.2), (4, 0.97)):
        X = np.abs(rng.standard_normal((3, n))) ** power
        info = {}
        launches.clear()
        reads.clear()
        l1 = np.full(3, l1_for_sparseness(sparseness, n))
        S, finite = fused.project_rows_fused(np, X, l1, np.ones(3), **GRID, info=info)
        assert finite.all() and len(launches) == 1 and len(reads) == 1
        assert (info["passes"] > 6) == (power == 4), info
        # Two whole reads, then B: less than a whole read per later pass.
        assert 2 * X.size <= info["read"] < 2 * X.size + (info["passes"] - 1) * X.size
        for r in range(3):
            assert np.max(np.abs(S[r] - project(X[r], l1[r], 1.0))) <= ULPS * EPS


@in_simulator
def test_a_pass_reads_the_rows_again_where_its_threshold_fell(monkeypatch):
    """A threshold below the level B was kept at (forced here for the third
    pass) sends the next pass to the rows, which keeps again; the result
    is unchanged."""
    n = 300
    plain, plain_info, fell, info, calls = projected_with_a_fall(monkeypatch, n, GRID)
    assert len(calls) > 4 and calls[3] == n  # the pass after the fall: the whole row
    assert info["passes"] > plain_info["passes"] and info["read"] >= plain_info["read"] + n
    np.testing.assert_allclose(fell, plain, rtol=0, atol=ULPS * EPS)
    np.testing.assert_array_equal(fell != 0, plain != 0)


@in_simulator
def test_rows_stopped_by_the_pass_limit_are_sorted(monkeypatch):
    """A row still active at the pass limit is STUCK and sorted by the host;
    the loop ends there on every block; a reused workspace gives the same
    bits, also where a launch cut short left its counters non-zero (the
    kernel resets them)."""
    from nmfsc.gpu_backend import fused
    from nmfsc.gpu_backend.cuda_kernels import DONE

    n = 300
    X = np.abs(np.random.default_rng(9).standard_normal((2, n))) ** 3
    l1 = np.full(2, l1_for_sparseness(0.8, n))
    fused.release_workspaces()
    want, _ = fused.project_rows_fused(np, X, l1, np.ones(2), **GRID)
    again, _ = fused.project_rows_fused(np, X, l1, np.ones(2), **GRID)
    np.testing.assert_array_equal(again, want)
    (work,) = fused._WORKSPACES.values()  # as a launch cut short could leave it
    work.fates[:, DONE] = 1
    work.active[:] = 3
    again, _ = fused.project_rows_fused(np, X, l1, np.ones(2), **GRID)
    np.testing.assert_array_equal(again, want)
    assert not work.fates[:, DONE].any()
    monkeypatch.setattr(fused, "max_passes", lambda n: 4)
    fused.release_workspaces()
    info = {}
    stopped, finite = fused.project_rows_fused(np, X, l1, np.ones(2), **GRID, info=info)
    assert finite.all() and info["sorted"] == 2 and info["passes"] == 4
    assert np.max(np.abs(stopped - want)) <= ULPS * EPS
    fused.release_workspaces()


@in_simulator
def test_a_gpu_that_cannot_launch_the_grid_gets_four_launches(monkeypatch):
    """Where the cooperative kernel cannot be compiled, linked or launched
    (an error of Numba's), the form falls back to four launches on that
    GPU for the rest of the process, with one RuntimeWarning, and the same
    projection to rounding; the GPU's most blocks are found once per
    workspace; an error of nmfsc's own propagates."""
    from nmfsc.gpu_backend import fused

    linker_error = type("LinkerError", (Exception,), {"__module__": "numba.cuda.cudadrv.driver"})
    asked = []

    def no_cudadevrt(self, kernel, block, *args):
        asked.append(block)
        raise linker_error("cudadevrt not found")

    monkeypatch.setattr(fused, "_GRID_FAILED", set())
    n = 300
    X = np.abs(np.random.default_rng(2).standard_normal((2, n)))
    l1 = np.full(2, l1_for_sparseness(0.6, n))
    fused.release_workspaces()
    for _ in range(2):  # the most blocks, found once
        fused.project_rows_fused(np, X, l1, np.ones(2), **GRID)
    original = fused._Launcher.cooperative_blocks
    monkeypatch.setattr(
        fused._Launcher, "cooperative_blocks", lambda *a: asked.append(a[2]) or original(*a)
    )
    fused.project_rows_fused(np, X, l1, np.ones(2), **GRID)
    assert asked == []
    monkeypatch.setattr(fused._Launcher, "cooperative_blocks", no_cudadevrt)
    fused.release_workspaces()
    with pytest.warns(RuntimeWarning, match="cudadevrt not found.*four launches"):
        info = {}
        S, finite = fused.project_rows_fused(np, X, l1, np.ones(2), **GRID, info=info)
    assert finite.all() and info["form"] == "rows" and fused._GRID_FAILED == {None}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fused.project_rows_fused(np, X, l1, np.ones(2), **GRID)
    for r in range(2):
        assert np.max(np.abs(S[r] - project(X[r], l1[r], 1.0))) <= ULPS * EPS

    def bug(self, kernel, block, *args):
        raise IndexError("a bug of nmfsc's")

    monkeypatch.setattr(fused._Launcher, "cooperative_blocks", bug)
    monkeypatch.setattr(fused, "_GRID_FAILED", set())
    fused.release_workspaces()
    with pytest.raises(IndexError, match="a bug"):
        fused.project_rows_fused(np, X, l1, np.ones(2), **GRID)
    fused.release_workspaces()


def test_an_unknown_form_is_refused():
    from nmfsc.gpu_backend.fused import project_rows_fused

    with pytest.raises(ValueError, match="form must be 'auto' or one of"):
        project_rows_fused(np, np.ones((1, 4)), np.ones(1), np.ones(1), form="fast")


def test_auto_takes_the_grid_for_fewer_rows_than_multiprocessors(monkeypatch):
    """ "auto": the one-launch form where the rows are fewer than the GPU's
    multiprocessors (read once per GPU), four launches for more, and
    under the simulator."""
    from types import SimpleNamespace

    from nmfsc.gpu_backend import fused

    reads = []
    runtime = SimpleNamespace(
        deviceGetAttribute=lambda attribute, device: reads.append((attribute, device)) or 132
    )
    fake_cupy = SimpleNamespace(cuda=SimpleNamespace(runtime=runtime))
    monkeypatch.setattr(fused, "_ATTRIBUTES", {})
    device = SimpleNamespace(id=0)
    assert fused.chosen_form(fake_cupy, SimpleNamespace(shape=(1, 10**6), device=device)) == "grid"
    assert fused.chosen_form(fake_cupy, SimpleNamespace(shape=(131, 9), device=device)) == "grid"
    assert fused.chosen_form(fake_cupy, SimpleNamespace(shape=(132, 9), device=device)) == "rows"
    assert reads == [(16, 0)]
    assert fused.chosen_form(np, np.ones((1, 4))) == "rows"
