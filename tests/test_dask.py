"""nmf_sc and nmf_euclidean on Dask arrays (issue 17): the same iterates as in memory.

The comparisons run on a ``dask.distributed.LocalCluster`` with two
single-threaded workers (in this process, so that they start in a fraction of
a second); the memory-limit test starts worker processes of its own.
"""

import os
import signal
import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
import dask.array as da  # noqa: E402
import scipy.sparse  # noqa: E402

from nmfsc import nmf_euclidean, nmf_sc  # noqa: E402
from nmfsc.solvers import ConvergenceWarning  # noqa: E402

ITERATIONS = 50


@pytest.fixture(autouse=True, scope="module")
def _keep_the_sigint_handler():
    """Put back SIGINT's handler after this module's clusters: a process-based
    LocalCluster leaves SIGINT ignored in the test process, which every later
    subprocess inherits (test_reproduce_interrupt's Ctrl-C tests then fail)."""
    handler = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, handler)


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def _data(N=30, T=120, M=3, seed=0):
    """Data with a sparse non-negative structure (its step sizes stay large)."""
    rng = np.random.default_rng(seed)
    W = rng.random((N, M))
    H = rng.random((M, T)) * (rng.random((M, T)) < 0.4)
    return W @ H + 0.05 * rng.random((N, T))


def _run(solver, V, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return solver(V, 3, random_state=7, max_iter=ITERATIONS, tol=0, **kw)


def _assert_same_run(a, b):
    assert len(a.objective) == len(b.objective) == ITERATIONS + 1
    rel = np.abs(a.objective - b.objective) / np.abs(a.objective)
    assert np.max(rel) <= 1e-9
    np.testing.assert_allclose(b.W, a.W, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(b.H.compute(), a.H, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(b.sparseness_H, a.sparseness_H, rtol=1e-9)
    assert b.relative_error == pytest.approx(a.relative_error, rel=1e-9)


@pytest.mark.parametrize(
    "targets",
    [{"sparseness_w": 0.5}, {"sparseness_h": 0.5}, {"sparseness_w": 0.4, "sparseness_h": 0.6}],
    ids=["sW", "sH", "both"],
)
def test_nmf_sc_matches_in_memory(client, targets):
    V = _data()
    memory = _run(nmf_sc, V, **targets)
    chunked = _run(nmf_sc, da.from_array(V, chunks=(V.shape[0], 45)), **targets)
    _assert_same_run(memory, chunked)
    assert chunked.step_sizes == pytest.approx(memory.step_sizes, rel=1e-6)


@pytest.mark.parametrize("scheduler", ["threads", "synchronous"])
def test_local_scheduler_projects_in_process(client, scheduler, monkeypatch):
    """Under a local scheduler the projection's passes and writes run on the
    client's chunks without a graph (chunked.map_local), with the same run."""
    import dask

    from nmfsc.dask_backend import chunked
    from nmfsc.dask_backend import chunked_projection as projection

    calls = []

    def counted(func, args):
        calls.append(len(args))
        return chunked.map_local(func, args)

    monkeypatch.setattr(projection, "map_local", counted)
    V = _data()
    memory = _run(nmf_sc, V, sparseness_h=0.5)
    with dask.config.set(scheduler=scheduler):
        chunked_run = _run(nmf_sc, da.from_array(V, chunks=(V.shape[0], 45)), sparseness_h=0.5)
    _assert_same_run(memory, chunked_run)
    assert calls and set(calls) == {3}  # every write in process, one call per 3 chunks


@pytest.mark.parametrize("scheduler, limited", [("threads", True), ("synchronous", False)])
def test_blas_threads_are_shared_with_the_threaded_schedulers_tasks(scheduler, limited):
    """Under the threaded scheduler (2 threads, 4 chunks) each task's BLAS gets
    2 // 2 = 1 thread for the run, and the setting comes back after it; the
    synchronous scheduler (one task at a time) keeps BLAS as it is."""
    import dask

    threadpoolctl = pytest.importorskip("threadpoolctl")
    from nmfsc.dask_backend.run import blas_threads_shared

    def blas_threads():
        info = threadpoolctl.threadpool_info()
        return [i["num_threads"] for i in info if i["user_api"] == "blas"]

    before = blas_threads()
    V = da.ones((4, 40), chunks=(4, 10))
    with dask.config.set(scheduler=scheduler, num_workers=2), blas_threads_shared(V):
        inside = blas_threads()
    assert blas_threads() == before
    assert inside == ([1] * len(before) if limited else before)


def test_sparse_nmf_fits_a_dask_array(client):
    """SparseNMF.fit_transform on a Dask X (samples x features, chunked along the
    samples) runs nmf_sc on X.T chunk-wise: the same fit as on the NumPy X."""
    from nmfsc import SparseNMF

    X = _data().T  # 120 samples x 30 features
    kw = {"n_components": 3, "sparseness_coefficients": 0.5, "random_state": 7}
    kw |= {"max_iter": ITERATIONS, "tol": 0.0}
    memory, chunked = SparseNMF(**kw), SparseNMF(**kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        Z = memory.fit_transform(X)
        Zd = chunked.fit_transform(da.from_array(X, chunks=(45, X.shape[1])))
    assert isinstance(Zd, da.Array) and Zd.chunks[0] == (45, 45, 30)
    rel = np.abs(memory.result_.objective - chunked.result_.objective) / memory.result_.objective
    assert np.max(rel) <= 1e-9
    np.testing.assert_allclose(chunked.components_, memory.components_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(Zd.compute(), Z, rtol=1e-6, atol=1e-9)
    assert chunked.reconstruction_err_ == pytest.approx(memory.reconstruction_err_, rel=1e-9)
    assert chunked.n_features_in_ == 30
    with pytest.raises(TypeError, match=r"transform and score need X in memory.*X\.compute"):
        chunked.transform(da.from_array(X, chunks=(45, 30)))


def test_nmf_euclidean_matches_in_memory(client):
    V = _data()
    _assert_same_run(_run(nmf_euclidean, V), _run(nmf_euclidean, da.from_array(V, chunks=(30, 50))))


def test_sparse_chunks_match_dense_in_memory(client):
    V = _data()
    V[V < 0.5] = 0.0  # about half the entries
    chunked = da.from_array(V, chunks=(30, 40)).map_blocks(scipy.sparse.csr_matrix)
    _assert_same_run(_run(nmf_sc, V, sparseness_h=0.5), _run(nmf_sc, chunked, sparseness_h=0.5))


@pytest.mark.parametrize("targets", [{"sparseness_h": 0.5}, {"sparseness_w": 0.5}])
def test_resume_is_bit_identical(client, tmp_path, targets):
    """Both projected steps: H's rows (chunked) and W's columns (on the
    client, with H V^T gathered from the chunks and W^T W recomputed on
    resume)."""
    V = da.from_array(_data(), chunks=(30, 45))
    path = tmp_path / "run.npz"
    kw = {**targets, "random_state": 3, "tol": 0, "checkpoint": path}
    with pytest.warns(ConvergenceWarning):
        whole = nmf_sc(V, 3, max_iter=12, **{**kw, "checkpoint": tmp_path / "whole.npz"})
    with pytest.warns(ConvergenceWarning):
        nmf_sc(V, 3, max_iter=5, checkpoint_every=2, **kw)
    assert len(list(tmp_path.glob("run.npz.H-*"))) == 1  # older H folders are pruned
    with pytest.warns(ConvergenceWarning):
        resumed = nmf_sc(V, 3, max_iter=12, resume=True, **kw)
    assert resumed.n_iter == whole.n_iter == 12
    np.testing.assert_array_equal(resumed.objective, whole.objective)
    np.testing.assert_array_equal(resumed.W, whole.W)
    np.testing.assert_array_equal(resumed.H.compute(), whole.H.compute())
    assert resumed.step_sizes == whole.step_sizes


def test_resume_refuses_a_damaged_chunk(client, tmp_path):
    V = da.from_array(_data(), chunks=(30, 45))
    path = tmp_path / "run.npz"
    with pytest.warns(ConvergenceWarning):
        nmf_sc(V, 3, max_iter=2, random_state=3, checkpoint=path)
    chunk = next(tmp_path.glob("run.npz.H-*")) / "1.npy"
    raw = bytearray(chunk.read_bytes())
    raw[-1] ^= 1
    chunk.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="integrity"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        nmf_sc(V, 3, max_iter=4, random_state=3, checkpoint=path, resume=True)


@pytest.mark.parametrize("delete", ["folder", "chunk"])
def test_resume_names_a_deleted_chunk_folder_or_file(client, tmp_path, delete):
    """Issue 30, point 7: a deleted chunk folder gave a bare FileNotFoundError."""
    import shutil

    V = da.from_array(_data(), chunks=(30, 45))
    path = tmp_path / "run.npz"
    with pytest.warns(ConvergenceWarning):
        nmf_sc(V, 3, max_iter=2, random_state=3, checkpoint=path)
    folder = next(tmp_path.glob("run.npz.H-*"))
    if delete == "folder":
        shutil.rmtree(folder)
        expected = f"the folder '{folder.name}' that holds H's chunks is missing"
    else:
        (folder / "1.npy").unlink()
        expected = f"H's chunk file {folder.name}/1.npy is missing"
    with pytest.raises(ValueError, match=expected), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        nmf_sc(V, 3, max_iter=4, random_state=3, checkpoint=path, resume=True)


@pytest.mark.parametrize("scheduler", [None, "synchronous"], ids=["distributed", "synchronous"])
def test_rows_tied_on_their_support_are_broken_by_index_as_in_memory(
    client, scheduler, monkeypatch
):
    """Eight columns repeated 25 times: H's rows reach supports whose entries
    are all equal with a sparser target, which the in-memory kernel breaks by
    index. The Dask run breaks them the same way (the run stopped with a
    RuntimeError before) and matches the in-memory run."""
    import contextlib

    import dask

    from nmfsc.dask_backend import chunked_projection as projection

    tied = []
    tie_values = projection._tie_values

    def spied(inputs, local, form, lo, ties, *rest):
        tied.append(int(ties.sum()))
        return tie_values(inputs, local, form, lo, ties, *rest)

    monkeypatch.setattr(projection, "_tie_values", spied)
    V = np.tile(np.random.default_rng(0).random((20, 8)), (1, 25))
    kw = {"sparseness_h": 0.8, "random_state": 0, "max_iter": 30, "tol": 0.0}
    setting = (
        contextlib.nullcontext() if scheduler is None else dask.config.set(scheduler=scheduler)
    )
    with warnings.catch_warnings(), setting:
        warnings.simplefilter("ignore", ConvergenceWarning)
        memory = nmf_sc(V, 4, **kw)
        chunked = nmf_sc(da.from_array(V, chunks=(20, 37)), 4, **kw)
    assert sum(tied) > 0  # the ties were met, and broken
    rel = np.abs(chunked.objective - memory.objective) / memory.objective
    assert np.max(rel) <= 1e-9
    np.testing.assert_allclose(chunked.H.compute(), memory.H, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(chunked.sparseness_H, memory.sparseness_H, rtol=1e-9)


def test_bad_dask_input_is_refused(client):
    V = _data()
    with pytest.raises(ValueError, match="chunked along its columns"):
        nmf_sc(da.from_array(V, chunks=(10, 40)), 3)
    with pytest.raises(ValueError, match="negative"):
        nmf_sc(da.from_array(V - 1.0, chunks=(30, 40)), 3)
    with pytest.raises(ValueError, match="init='nndsvd'"):
        nmf_sc(da.from_array(V, chunks=(30, 40)), 3, init="nndsvd")
    X = da.from_array(V, chunks=(30, 40))
    with pytest.raises(ValueError, match=r"chunk sizes are unknown .*compute_chunk_sizes"):
        nmf_sc(X[:, X[0] >= 0], 3, sparseness_h=0.5)


def test_empty_chunks_of_columns_are_dropped(client):
    V = _data()
    kw = {"sparseness_h": 0.5, "random_state": 0, "max_iter": 4, "tol": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gaps = nmf_sc(da.from_array(V, chunks=(V.shape[0], (0, 40, 0, V.shape[1] - 40))), 3, **kw)
        plain = nmf_sc(da.from_array(V, chunks=(V.shape[0], (40, V.shape[1] - 40))), 3, **kw)
    np.testing.assert_array_equal(gaps.objective, plain.objective)


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_runs_under_a_worker_memory_limit(tmp_path):
    """Worker processes with a 1 GB limit each factorize a V stored as an .npy stack.

    Not less: a worker that has imported nmfsc and compiled its kernels holds
    about 270 MB, and Dask pauses a worker at 80 % of its limit, so a 300 MB
    limit left both workers paused and the run waiting for ever (it hung CI)."""
    V = _data(N=50, T=400)
    da.to_npy_stack(tmp_path / "V", da.from_array(V, chunks=(50, 100)))
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            memory_limit="1GB",
            dashboard_address=":0",
        ) as cluster,
        distributed.Client(cluster),
    ):
        stored = da.from_npy_stack(tmp_path / "V")
        with pytest.warns(ConvergenceWarning):
            res = nmf_sc(stored, 3, sparseness_h=0.5, random_state=0, max_iter=5)
    memory = _run_few(V)
    np.testing.assert_allclose(res.objective, memory.objective, rtol=1e-9)


def _run_few(V):
    with pytest.warns(ConvergenceWarning):
        return nmf_sc(V, 3, sparseness_h=0.5, random_state=0, max_iter=5)


def test_import_nmfsc_does_not_import_dask():
    code = (
        "import sys, numpy as np, nmfsc\n"
        "nmfsc.nmf_sc(np.random.default_rng(0).random((6, 8)), 2, max_iter=3, tol=0)\n"
        "print(sorted(m for m in sys.modules if m == 'dask' or m.startswith('dask.')))\n"
    )
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert out.stdout.strip() == "[]"
