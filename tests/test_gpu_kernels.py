"""The fused projection's CUDA kernels (nmfsc.gpu_backend.cuda_kernels and
fused) under Numba's CUDA simulator.

The simulator must be switched on before numba is imported, so in the
suite's own process one test (test_kernels_pass_under_the_simulator) runs
this file again in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``; there the
other tests run, on NumPy arrays standing in for device arrays, with small
blocks (the simulator runs every thread as a Python thread). They hold the
kernels to a NumPy reference that adds in the kernels' order (equal bits),
and the fused projection to the CPU kernels and the array code.
"""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from nmfsc import l1_for_sparseness, project

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
in_simulator = pytest.mark.skipif(
    not SIMULATED,
    reason="runs in the simulator's subprocess (test_kernels_pass_under_the_simulator)",
)
#: Small blocks for the simulator: 4 threads, chunks of 128 entries, 4
#: threads per row in solve_rows (the simulator runs each thread as a
#: Python thread).
THREADS, CHUNK, ROWS = 4, 128, 4
LAYOUT = {"threads": THREADS, "chunk": CHUNK, "row_threads": ROWS}
#: The fused projection against the array code (float64), per entry: ulps
#: of the row's norm l2 (its entries are at most l2). The two add the same
#: sums in different orders; 9.9 ulps is the largest gap seen here.
ULPS = 16
EPS = np.finfo(np.float64).eps
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.slow  # about a minute: the simulator runs every thread as a Python thread
@pytest.mark.skipif(SIMULATED, reason="this is the simulator's own run")
def test_kernels_pass_under_the_simulator():
    passes_under_the_simulator(__file__, "16 passed, 1 skipped")


def passes_under_the_simulator(path, summary):
    """Run the tests of ``path`` with Numba's CUDA simulator on, in a
    subprocess: they pass, with ``summary`` (pytest's count) in the output."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", path, "-q", "-p", "no:cacheprovider", "-rs"],
        capture_output=True,
        text=True,
        env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"},
        cwd=os.path.dirname(HERE),
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert summary in out.stdout, out.stdout[-2000:]


def counted_launches(monkeypatch):
    """``(launches, reads)``, lists that receive the fused projection's
    launches (their kernels) and its host reads (their shapes)."""
    from nmfsc.gpu_backend import fused

    launches, reads = [], []
    original = fused._Launcher.__call__
    monkeypatch.setattr(
        fused._Launcher,
        "__call__",
        lambda self, kernel, *args: launches.append(kernel) or original(self, kernel, *args),
    )
    monkeypatch.setattr(fused, "to_host", lambda a: reads.append(a.shape) or np.asarray(a))
    return launches, reads


def reference_partials(A, alpha, signed, threads=THREADS, chunk=CHUNK):
    """The support's (count, S1, S2, odd) per (row, chunk), added as the
    kernel adds them: each thread its strided entries in order, then the
    block's tree (t += t + h for h = threads/2, ..., 1)."""
    rows, n = A.shape
    chunks = -(-n // chunk)
    out = [np.zeros((rows, chunks), dtype=d) for d in (np.int64, float, float, np.int64)]
    for r in range(rows):
        for c in range(chunks):
            segment = A[r, c * chunk : (c + 1) * chunk].astype(np.float64)
            if signed:
                segment = np.abs(segment)
            sums = [np.zeros(threads, dtype=d) for d in (np.int64, float, float, np.int64)]
            for t in range(threads):
                for x in segment[t::threads]:
                    if x > alpha[r]:
                        sums[0][t] += 1
                        sums[1][t] += x
                        sums[2][t] += x * x
                    sums[3][t] += (1 << 32) if not np.isfinite(x) else int(x < 0)
            half = threads // 2
            while half:
                for s in sums:
                    s[:half] += s[half : 2 * half]
                half //= 2
            for o, s in zip(out, sums, strict=True):
                o[r, c] = s[0]
    return out


def hard_rows(n, dtype, signed):
    """Rows and targets that take every path: plain rows at sparseness from
    near 0 to near 1, ties (among them across the threshold), mostly zeros,
    one entry, a constant row (no consistent support: the CPU kernel), a
    row already at its targets, sparseness 1."""
    rng = np.random.default_rng(7)
    rows, sparseness = [], []
    for s in (1e-6, 0.3, 0.85, 0.999):
        rows.append(rng.standard_normal(n) if signed else np.abs(rng.standard_normal(n)))
        sparseness.append(s)
    rows.append(np.round(np.abs(rng.standard_normal(n)), 1))  # ties
    sparseness.append(0.6)
    sparse = np.zeros(n)
    sparse[[3, 50, 51, 200]] = [2.0, 1.0, 1.0, 0.5]
    rows += [sparse, np.eye(1, n, 17)[0], np.full(n, 0.25)]
    sparseness += [0.4, 0.5, 0.5]
    at_targets = project(np.abs(rng.standard_normal(n)), l1_for_sparseness(0.7, n), 1.0)
    rows.append(at_targets)
    sparseness.append(0.7)
    rows.append(np.abs(rng.standard_normal(n)))
    sparseness.append(1.0)
    X = np.stack(rows).astype(dtype)
    l2 = rng.uniform(0.5, 2.0, len(rows))
    l2[8] = 1.0  # the row at its targets
    l1 = np.array([l1_for_sparseness(s, n, t) for s, t in zip(sparseness, l2, strict=True)])
    return X, l1, l2


def first_and_second_pass(X, l1, l2, signed, threads=THREADS, chunk=CHUNK, rows=ROWS):
    """The fused projection's first two launches on the rows X: the arrays
    they fill, as a dict, with the first pass's partials and thresholds
    copied before the second pass writes over them."""
    from nmfsc.gpu_backend.cuda_kernels import L1, L2, pass_kernels

    count, n = X.shape
    chunks = -(-n // chunk)
    kernels = pass_kernels(threads, rows, chunk // threads)
    out = {
        "rows": np.zeros((count, 5)),
        "fates": np.zeros((count, 6), dtype=np.int64),
        "counts": np.zeros((count, chunks, 2), dtype=np.int64),
        "sums": np.zeros((count, chunks, 2)),
    }
    out["rows"][:, L1], out["rows"][:, L2] = l1, l2
    row, partials = (out["rows"], out["fates"]), (out["counts"], out["sums"])
    kernels.first_sums[(count, chunks), threads](X, signed, not signed, *row, *partials)
    out["first"] = {name: out[name].copy() for name in ("rows", "fates", "counts", "sums")}
    kernels.second_sums[(count, chunks), threads](X, signed, *row, *partials)
    return out


@in_simulator
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_first_two_passes_equal_a_reference_in_the_same_order(dtype):
    """first_sums's partials equal the reference's bits at the threshold
    -inf, with the entries that are not finite and those below 0 counted,
    and its row totals give the first threshold and the rows' fates;
    second_sums's partials are the reference's at that threshold. Each
    row's last block leaves its ticket counter at 0."""
    from nmfsc.gpu_backend.cuda_kernels import (
        ACTIVE,
        ALPHA,
        DONE,
        FATE,
        NONFINITE,
        NOT_FINITE,
        SIZE,
    )

    rng = np.random.default_rng(1)
    n = 300
    X = rng.standard_normal((4, n)).astype(dtype)
    X[3, 10] = np.nan
    X[2] = np.round(X[2], 1)
    l1 = np.array([l1_for_sparseness(s, n) for s in (0.3, 0.6, 0.8, 0.5)])
    l2 = np.ones(4)
    for signed in (False, True):
        got = first_and_second_pass(X, l1, l2, signed)
        first = got["first"]
        counts, S1, S2, odd = reference_partials(X, np.full(4, -np.inf), signed)
        np.testing.assert_array_equal(first["counts"][..., 0], counts)
        np.testing.assert_array_equal(first["counts"][..., 1], odd)
        np.testing.assert_array_equal(first["sums"][..., 0], S1)
        np.testing.assert_array_equal(first["sums"][..., 1], S2)
        assert odd[3].sum() >= NOT_FINITE and (odd[:3].sum() > 0) == (not signed)
        assert first["fates"][:, FATE].tolist() == [ACTIVE, ACTIVE, ACTIVE, NONFINITE]
        assert first["fates"][:3, SIZE].tolist() == [n] * 3
        assert not got["fates"][:, DONE].any() and not first["fates"][:, DONE].any()
        alpha = first["rows"][:3, ALPHA]
        A = np.abs(X[:3]).astype(np.float64) if signed else X[:3].astype(np.float64)
        # Hoyer's closed form of the whole row, to rounding.
        k, s1, s2, rho = n, A.sum(axis=1), (A * A).sum(axis=1), l1[:3] / l2[:3]
        want = s1 / k - rho * np.sqrt((s2 - s1 * s1 / k) / (k * (k - rho * rho)))
        np.testing.assert_allclose(alpha, want, rtol=1e-12, atol=1e-14)
        counts, S1, S2, _ = reference_partials(X[:3], alpha, signed)
        np.testing.assert_array_equal(got["counts"][:3, :, 0], counts)
        np.testing.assert_array_equal(got["sums"][:3, :, 0], S1)
        np.testing.assert_array_equal(got["sums"][:3, :, 1], S2)
        np.testing.assert_array_equal(got["fates"][:3, SIZE], counts.sum(axis=1))


def projected_with_a_fall(monkeypatch, n, layout):
    """A row of n entries projected by the fused kernels with ``layout``,
    as it is, then with the third closed form made to return a threshold
    below every entry (below the level B was kept at). Returns ``(plain,
    plain_info, fell, info, calls)``: the two results and their ``info``,
    and the support sizes the closed form was given in the second."""
    from nmfsc.gpu_backend import cuda_kernels, fused

    X = np.abs(np.random.default_rng(4).standard_normal((1, n))) ** 2
    l1, l2 = np.full(1, l1_for_sparseness(0.8, n)), np.ones(1)
    plain_info = {}
    plain, _ = fused.project_rows_fused(np, X, l1, l2, **layout, info=plain_info)
    closed_form = cuda_kernels._closed_form
    calls = []

    def falls_once(k, s1, s2, rho):
        calls.append(k)
        return X.min() - 1.0 if len(calls) == 3 else closed_form(k, s1, s2, rho)

    monkeypatch.setattr(cuda_kernels, "_closed_form", falls_once)
    fused.release_workspaces()
    info = {}
    fell, _ = fused.project_rows_fused(np, X, l1, l2, **layout, info=info)
    return plain, plain_info, fell, info, calls


@in_simulator
def test_solve_rows_reads_the_rows_again_where_its_threshold_fell(monkeypatch):
    """A row whose next threshold falls below the level its support was
    kept at in B (by rounding, in practice; here the third closed form is
    made to return a threshold below every entry) reads the rows
    themselves for the next pass and keeps its support again: it still
    ends at the projection, with one more read of the row."""
    n = 300
    plain, plain_info, fell, info, calls = projected_with_a_fall(monkeypatch, n, LAYOUT)
    assert len(calls) > 3 and calls[3] == n  # the pass after the fall: the whole row
    assert info["passes"] > plain_info["passes"] and info["read"] >= plain_info["read"] + n
    np.testing.assert_allclose(fell, plain, rtol=0, atol=ULPS * EPS)
    np.testing.assert_array_equal(fell != 0, plain != 0)


@in_simulator
@pytest.mark.parametrize(
    ("dtype", "signed"), [(np.float64, False), (np.float64, True), (np.float32, False)]
)
def test_fused_projection_is_the_cpu_projection(dtype, signed, monkeypatch):
    """Every row as the array code gives it (float32 rows: the projection of
    their float64 values) to 16 ulps of l2, as close to nmfsc.project as the
    array code is, with its support; the constant row goes to the CPU kernel."""
    from nmfsc.gpu_backend import array_projection, fused
    from nmfsc.gpu_backend.device_projection import project_rows

    to_cpu = []
    for module in (fused, array_projection):  # no consistent support: the array code's path
        monkeypatch.setattr(
            module, "project", lambda x, *a, **k: to_cpu.append(x) or project(x, *a, **k)
        )
    n = 300
    X, l1, l2 = hard_rows(n, dtype, signed)
    S, finite = fused.project_rows_fused(np, X, l1, l2, not signed, **LAYOUT)
    assert S.dtype == np.float64 and finite.all()
    assert len(to_cpu) == 1 and np.all(to_cpu[0] == 0.25)  # the constant row only
    array_code, _ = project_rows(np, X.astype(np.float64), l1, l2, not signed)
    for r in range(X.shape[0]):
        want = project(X[r].astype(np.float64), l1[r], l2[r], nonneg=not signed)
        assert np.max(np.abs(S[r] - array_code[r])) <= ULPS * EPS * l2[r], r
        # As close to the CPU kernel as the array code is (both compute the
        # closed-form threshold; the CPU kernel gets there its own way).
        gap = np.max(np.abs(array_code[r] - want))
        assert np.max(np.abs(S[r] - want)) <= gap + ULPS * EPS * l2[r], r
        assert np.array_equal(S[r] != 0, want != 0), r
    if dtype == np.float64:  # in float32 it is no longer at its targets to 1e-13
        np.testing.assert_array_equal(S[8], X[8])  # already at its targets: as it is
    assert np.count_nonzero(S[9]) == 1 and S[9, np.argmax(np.abs(X[9]))] == pytest.approx(
        np.sign(X[9, np.argmax(np.abs(X[9]))]) * l2[9]
    )


@in_simulator
@pytest.mark.parametrize(("dtype", "signed"), [(np.float32, False), (np.float64, True)])
def test_a_float32_result_is_the_float64_result_rounded_once(dtype, signed, monkeypatch):
    """``dtype=np.float32``: the kernels store each entry of the float64
    projection rounded once, the bits of casting the float64 result; so do
    the rows that take the other paths (the CPU kernel, sparseness 1, not
    finite), and the array code."""
    from nmfsc.gpu_backend import fused
    from nmfsc.gpu_backend.array_projection import project_rows_by_arrays

    X, l1, l2 = hard_rows(300, dtype, signed)
    X[2, 7] = np.nan
    both = [
        fused.project_rows_fused(np, X, l1, l2, not signed, dtype=out, **LAYOUT)
        for out in (None, np.float32)
    ]
    (wide, finite), (narrow, finite32) = both
    assert wide.dtype == np.float64 and narrow.dtype == np.float32
    np.testing.assert_array_equal(finite32, finite)
    assert not finite[2] and finite.sum() == X.shape[0] - 1
    np.testing.assert_array_equal(narrow, wide.astype(np.float32))
    wide, _ = project_rows_by_arrays(np, X, l1, l2, not signed)
    narrow, _ = project_rows_by_arrays(np, X, l1, l2, not signed, np.float32)
    assert narrow.dtype == np.float32
    np.testing.assert_array_equal(narrow, wide.astype(np.float32))


@in_simulator
def test_a_projection_is_four_launches_whatever_the_passes(monkeypatch):
    """Rows that take many Hoyer passes and rows that take few are
    projected in the same four launches, and the host reads the rows' fates
    once, after them."""
    from nmfsc.gpu_backend import fused

    launches, reads = counted_launches(monkeypatch)
    n = 300
    rng = np.random.default_rng(6)
    for power, sparseness in ((1, 0.2), (4, 0.97)):
        X = np.abs(rng.standard_normal((3, n))) ** power
        info = {}
        launches.clear()
        reads.clear()
        S, finite = fused.project_rows_fused(
            np, X, np.full(3, l1_for_sparseness(sparseness, n)), np.ones(3), **LAYOUT, info=info
        )
        assert finite.all() and len(launches) == 4 and len(reads) == 1
        assert (info["passes"] > 6) == (power == 4), info
        for r in range(3):
            want = project(X[r], l1_for_sparseness(sparseness, n), 1.0)
            assert np.max(np.abs(S[r] - want)) <= ULPS * EPS


@in_simulator
def test_a_layout_whose_rows_threads_split_a_chunk_is_refused():
    """solve_rows's threads must take whole chunks' lanes in order (a
    multiple of the grid's threads), or a thread's compaction could write
    past its row."""
    from nmfsc.gpu_backend.cuda_kernels import pass_kernels
    from nmfsc.gpu_backend.fused import project_rows_fused

    with pytest.raises(ValueError, match="multiple of threads"):
        pass_kernels(4, 2)
    X = np.abs(np.random.default_rng(8).standard_normal((2, 13)))
    l1 = np.full(2, l1_for_sparseness(0.5, 13))
    with pytest.raises(ValueError, match="multiple of threads"):
        project_rows_fused(np, X, l1, np.ones(2), threads=4, chunk=8, row_threads=2)


@in_simulator
def test_stale_tickets_and_stuck_rows(monkeypatch):
    """A workspace whose ticket counters a cut-short launch left non-zero
    projects as a fresh one (the host resets them); a row stopped by the
    pass limit is sorted, and info counts the passes it took on the device."""
    from nmfsc.gpu_backend import cuda_kernels, fused

    n = 300
    X = np.abs(np.random.default_rng(9).standard_normal((2, n))) ** 3
    l1 = np.full(2, l1_for_sparseness(0.8, n))
    fused.release_workspaces()
    want, _ = fused.project_rows_fused(np, X, l1, np.ones(2), **LAYOUT)
    (work,) = fused._WORKSPACES.values()
    work.fates[:, cuda_kernels.DONE] = 1
    got, finite = fused.project_rows_fused(np, X, l1, np.ones(2), **LAYOUT)
    np.testing.assert_array_equal(got, want)
    assert finite.all() and not work.fates[:, cuda_kernels.DONE].any()
    monkeypatch.setattr(fused, "max_passes", lambda n: 4)
    info = {}
    stopped, finite = fused.project_rows_fused(np, X, l1, np.ones(2), **LAYOUT, info=info)
    assert finite.all() and info["sorted"] == 2 and info["passes"] == 4
    assert info["read"] >= 2 * 3 * n  # the grid's two passes and solve_rows's first, per row
    assert np.max(np.abs(stopped - want)) <= ULPS * EPS
    fused.release_workspaces()


@in_simulator
def test_ill_conditioned_rows_go_to_the_cpu_kernel(monkeypatch):
    """Rows with nearly equal entries on their support: solve_rows's
    condition test (or, for a row whose passes do not settle, the array
    code's) sends them to the CPU kernel (the threshold's result would
    miss the L1 target by far more than rounding); a plain row stays."""
    from nmfsc.gpu_backend import array_projection, fused

    to_cpu = []
    for module in (fused, array_projection):
        monkeypatch.setattr(
            module, "project", lambda x, *a, **k: to_cpu.append(x) or project(x, *a, **k)
        )
    rng = np.random.default_rng(3)
    n = 300
    X = np.stack([1.0 + 1e-4 * rng.random(n), 1.0 + 1e-6 * rng.random(n), rng.random(n)])
    l1 = np.array([l1_for_sparseness(t, n) for t in (0.9, 0.3, 0.6)])
    info = {}
    S, finite = fused.project_rows_fused(np, X, l1, np.ones(3), **LAYOUT, info=info)
    assert finite.all() and info["on_cpu"] >= 1
    assert info["on_cpu"] + info["sorted"] == len(to_cpu) == 2
    for r in range(2):
        np.testing.assert_array_equal(S[r], project(X[r], l1[r], 1.0))
    want = project(X[2], l1[2], 1.0)
    assert np.max(np.abs(S[2] - want)) <= ULPS * EPS


@in_simulator
def test_rows_that_are_not_finite_are_refused_and_others_kept():
    from nmfsc.gpu_backend.fused import project_rows_fused

    X = np.abs(np.random.default_rng(2).standard_normal((3, 200)))
    X[0, 5] = np.nan
    X[2, 199] = np.inf
    l1 = np.full(3, l1_for_sparseness(0.5, 200))
    S, finite = project_rows_fused(np, X, l1, np.ones(3), **LAYOUT)
    assert finite.tolist() == [False, True, False]
    assert np.isnan(S[0]).all() and np.isnan(S[2]).all()
    np.testing.assert_allclose(S[1], project(X[1], l1[1], 1.0), rtol=0, atol=4 * EPS)


@in_simulator
def test_same_bits_on_every_launch():
    from nmfsc.gpu_backend.fused import project_rows_fused

    X = np.abs(np.random.default_rng(3).standard_normal((4, 300))) ** 3
    l1 = np.array([l1_for_sparseness(s, 300) for s in (0.2, 0.5, 0.8, 0.95)])
    info = {}
    first, _ = project_rows_fused(np, X, l1, np.ones(4), **LAYOUT, info=info)
    again, _ = project_rows_fused(np, X, l1, np.ones(4), **LAYOUT)
    np.testing.assert_array_equal(first, again)
    # At least three whole reads (the first two passes over the grid, the
    # first of solve_rows), then the kept entries: less than a read of the
    # rows per pass. Only solve_rows keeps, each pass at most what it reads.
    assert info["passes"] > 3 and info["sorted"] == info["on_cpu"] == 0
    assert 3 * X.size <= info["read"] < info["passes"] * X.size
    assert 0 < info["written"] < info["read"] - X.size


@in_simulator
def test_a_kept_workspace_starts_each_projection_afresh():
    """The arrays kept from one projection to the next of rows of the same
    shape (fused._workspace) carry nothing over: rows projected after
    others, harder ones among them (a row to the CPU kernel, one at
    sparseness 1, one not finite), have the bits of their projection by a
    fresh workspace; release_workspaces drops them."""
    from nmfsc.gpu_backend import fused

    def projected(X, l1, l2):
        return fused.project_rows_fused(np, X, l1, l2, **LAYOUT)

    hard, l1_hard, l2_hard = hard_rows(300, np.float64, False)
    hard[2, 7] = np.nan
    rng = np.random.default_rng(5)
    plain = np.abs(rng.standard_normal(hard.shape)) ** 2
    l1_plain = np.array([l1_for_sparseness(0.5, 300)] * len(plain))
    want = []
    for X, l1, l2 in ((plain, l1_plain, np.ones(len(plain))), (hard, l1_hard, l2_hard)):
        fused.release_workspaces()  # each by a fresh workspace
        want.append(projected(X, l1, l2))
    fused.release_workspaces()
    assert not fused._WORKSPACES
    projected(plain, l1_plain, np.ones(len(plain)))
    assert len(fused._WORKSPACES) == 1
    for X, l1, l2, (S, finite) in (
        (hard, l1_hard, l2_hard, want[1]),
        (plain, l1_plain, np.ones(len(plain)), want[0]),
    ):
        got, got_finite = projected(X, l1, l2)
        np.testing.assert_array_equal(got, S)
        np.testing.assert_array_equal(got_finite, finite)
    assert len(fused._WORKSPACES) == 1  # one shape, one workspace
    for n in range(200, 200 + fused.KEEP_WORKSPACES + 2):  # other shapes: at most KEEP_WORKSPACES
        X = np.abs(rng.standard_normal((2, n)))
        projected(X, np.full(2, l1_for_sparseness(0.5, n)), np.ones(2))
    assert len(fused._WORKSPACES) == fused.KEEP_WORKSPACES
    fused.release_workspaces()
    assert not fused._WORKSPACES
    # Each host thread keeps and drops its own.
    small = plain[:2, :200]
    l1_small = np.full(2, l1_for_sparseness(0.5, 200))
    # One worker thread throughout: a second thread could get another
    # identifier (or, once the first has ended, the same one).
    projected_once, released_here = threading.Event(), threading.Event()

    def worker_projects_then_releases():
        projected(small, l1_small, np.ones(2))
        projected_once.set()
        released_here.wait(timeout=60)
        fused.release_workspaces()

    worker = threading.Thread(target=worker_projects_then_releases)
    worker.start()
    assert projected_once.wait(timeout=60)
    assert len(fused._WORKSPACES) == 1
    fused.release_workspaces()  # this thread's: none
    assert len(fused._WORKSPACES) == 1
    released_here.set()
    worker.join()
    assert not fused._WORKSPACES


@in_simulator
def test_rows_of_many_chunks_per_row_thread():
    """Rows in more chunks than the per-row kernels have threads (11 chunks
    of 8 entries for 4 threads: each adds two or three chunks' partials)
    project as in one chunk, to rounding, with the same bits on every
    launch."""
    from nmfsc.gpu_backend.fused import project_rows_fused

    n = 2 * THREADS * (2 * ROWS + 3)
    X = np.abs(np.random.default_rng(9).standard_normal((2, n))) ** 2
    l1 = np.array([l1_for_sparseness(s, n) for s in (0.4, 0.8)])
    layout = {"threads": THREADS, "row_threads": ROWS}
    few, _ = project_rows_fused(np, X, l1, np.ones(2), chunk=CHUNK, **layout)
    many = [
        project_rows_fused(np, X, l1, np.ones(2), chunk=2 * THREADS, **layout)[0] for _ in range(2)
    ]
    np.testing.assert_array_equal(many[0], many[1])
    assert np.max(np.abs(many[0] - few)) <= ULPS * EPS
    np.testing.assert_array_equal(many[0] != 0, few != 0)
