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
#: threads per row in the per-row kernels (the simulator runs each thread
#: as a Python thread; test_a_pass_reads_the_rows_again_where_its_threshold_fell
#: runs finish_pass with the real ROW_THREADS).
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
    out = subprocess.run(
        [sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider", "-rs"],
        capture_output=True,
        text=True,
        env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"},
        cwd=os.path.dirname(HERE),
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "14 passed, 1 skipped" in out.stdout, out.stdout[-2000:]


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


@in_simulator
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_support_sums_equal_a_reference_in_the_same_order(dtype):
    """The partials of a pass equal the reference's bits, read from the
    rows (A) or from the support a pass before kept (B, the later passes)."""
    from nmfsc.gpu_backend.cuda_kernels import pass_kernels

    rng = np.random.default_rng(1)
    X = rng.standard_normal((5, 300)).astype(dtype)
    X[3, 10] = np.nan
    X[4] = np.round(X[4], 1)
    alpha = np.array([-np.inf, 0.0, 0.5, -0.2, 0.3])
    higher = np.array([0.1, 0.2, 0.5, 0.4, 0.8])  # the next pass's thresholds
    state = np.zeros(5, dtype=np.int32)
    chunks = -(-300 // CHUNK)
    kernels = pass_kernels(THREADS)
    sums = kernels.support_sums[(5, chunks), THREADS]
    for signed in (False, True):
        B = np.full_like(X, np.nan)
        kept = np.zeros((5, chunks, THREADS), dtype=np.int32)
        from_a = np.ones(5, dtype=np.int32)
        for keep in (0, 1):  # a pass that keeps nothing in B, then one that keeps its support
            compact = np.full(5, keep, dtype=np.int32)
            got = [np.zeros((5, chunks), dtype=d) for d in (np.int64, float, float, np.int64)]
            sums(X, B, kept, from_a, compact, signed, alpha, state, CHUNK, *got)
            for g, want in zip(got, reference_partials(X, alpha, signed), strict=True):
                np.testing.assert_array_equal(g, want)
            assert kept.sum() == keep * reference_partials(X, alpha, signed)[0].sum()
        from_a[:] = 0
        stored = kept.copy()
        for level, keep in ((higher, 0), (higher, 1), (higher + 0.3, 0)):
            # From B: a pass that only reads it, one that keeps its own
            # support in place, and one that reads that smaller support.
            compact = np.full(5, keep, dtype=np.int32)
            got = [np.zeros((5, chunks), dtype=d) for d in (np.int64, float, float, np.int64)]
            sums(X, B, kept, from_a, compact, signed, level, state, CHUNK, *got)
            for g, want in zip(got[:3], reference_partials(X, level, signed)[:3], strict=True):
                np.testing.assert_array_equal(g, want)
            if keep:
                assert kept.sum() == reference_partials(X, level, signed)[0].sum()
            else:
                np.testing.assert_array_equal(kept, stored)
            stored = kept.copy()


@in_simulator
def test_a_pass_reads_the_rows_again_where_its_threshold_fell():
    """finish_pass: a row whose next threshold is below this pass's (by
    rounding) reads the rows next time, not the support kept in B."""
    from nmfsc.gpu_backend.cuda_kernels import ACTIVE, ROW_THREADS, pass_kernels

    count = np.array([[4], [4]], dtype=np.int64)
    s1, s2 = np.array([[4.0], [8.0]]), np.array([[4.0], [20.0]])
    odd = np.zeros((2, 1), dtype=np.int64)
    alpha = np.array([5.0, -np.inf])  # row 0: ones with a threshold 5 above them
    size, state = np.full(2, -1), np.full(2, ACTIVE, dtype=np.int32)
    moving, from_a = np.zeros(3, dtype=np.int64), np.array([0, 1], dtype=np.int32)
    # Row 0 read B (kept at threshold 5); row 1 read the rows and kept its support.
    compact, stored = np.array([0, 1], dtype=np.int32), np.array([4, 0])
    kept_level = np.array([5.0, -np.inf])
    l1, l2 = np.full(2, 1.5), np.ones(2)
    finish = pass_kernels(THREADS).finish_pass[2, ROW_THREADS]
    finish(
        count,
        s1,
        s2,
        odd,
        l1,
        l2,
        False,
        True,
        40,
        alpha,
        size,
        state,
        moving,
        1,
        from_a,
        compact,
        stored,
        kept_level,
        np.full(2, np.inf),  # the settled rows' conditions (none settles here)
    )
    assert from_a.tolist() == [1, 0] and alpha[0] < 5.0 and moving[1] == 2
    assert stored.tolist() == [4, 4] and kept_level[1] == -np.inf
    # The next pass keeps its support where this one's (4) is below 3/4 of
    # what it reads: the rows (40 entries) for row 0, B's 4 for row 1.
    assert compact.tolist() == [1, 0]


@in_simulator
@pytest.mark.parametrize(
    ("dtype", "signed"), [(np.float64, False), (np.float64, True), (np.float32, False)]
)
def test_fused_projection_is_the_cpu_projection(dtype, signed, monkeypatch):
    """Every row as the array code gives it (float32 rows: the projection of
    their float64 values) to 16 ulps of l2, as close to nmfsc.project as the
    array code is, with its support; the constant row goes to the CPU kernel."""
    from nmfsc.gpu_backend import fused
    from nmfsc.gpu_backend.device_projection import project_rows

    to_cpu = []
    monkeypatch.setattr(
        fused, "project", lambda x, *a, **k: to_cpu.append(x) or project(x, *a, **k)
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
    from nmfsc.gpu_backend.device_projection import project_rows_by_arrays

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
def test_the_hosts_reads_between_passes_change_nothing():
    """Passes launched after every row has settled, before the host looks
    (``check_every`` > 1), leave the result as it is: the same bits for
    every spacing of the host's reads."""
    from nmfsc.gpu_backend.fused import project_rows_fused

    X, l1, l2 = hard_rows(300, np.float64, False)
    info = {}
    want, finite = project_rows_fused(np, X, l1, l2, **LAYOUT, check_every=1, info=info)
    assert info["passes"] > 3  # so that spacings of 2-5 end past the last pass
    for check_every in (2, 3, 5, 1000):
        got, got_finite = project_rows_fused(np, X, l1, l2, **LAYOUT, check_every=check_every)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got_finite, finite)


@in_simulator
def test_ill_conditioned_rows_go_to_the_cpu_kernel(monkeypatch):
    """Rows with nearly equal entries on their support: finish_norm's
    condition sends them to the CPU kernel (the threshold's result would
    miss the L1 target by far more than rounding); a plain row stays."""
    from nmfsc.gpu_backend import fused

    to_cpu = []
    monkeypatch.setattr(
        fused, "project", lambda x, *a, **k: to_cpu.append(x) or project(x, *a, **k)
    )
    rng = np.random.default_rng(3)
    n = 300
    X = np.stack([1.0 + 1e-4 * rng.random(n), 1.0 + 1e-6 * rng.random(n), rng.random(n)])
    l1 = np.array([l1_for_sparseness(t, n) for t in (0.9, 0.3, 0.6)])
    info = {}
    S, finite = fused.project_rows_fused(np, X, l1, np.ones(3), **LAYOUT, info=info)
    assert finite.all() and info["on_cpu"] == len(to_cpu) == 2
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
    # At least two whole reads (the first pass, and the second, which
    # keeps nothing: it reads what the first kept, all), then the kept
    # entries: less than a read of the rows per pass. The first pass keeps
    # nothing, every other at most what it reads.
    assert info["passes"] > 3 and info["sorted"] == info["on_cpu"] == 0
    assert 2 * X.size <= info["read"] < info["passes"] * X.size
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
