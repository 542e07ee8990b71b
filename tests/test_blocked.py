"""nmfsc/_blocked.py: the blocked products and sums against plain NumPy, and
their bits on any number of threads."""

import numpy as np
import pytest

from nmfsc import _blocked
from nmfsc._kernels import reductions


@pytest.fixture(params=[1, 3], ids=["one_thread", "three_threads"])
def threads(request, monkeypatch):
    monkeypatch.setattr(_blocked, "threads", lambda: request.param)
    return request.param


def _bits_on(monkeypatch, counts, compute):
    results = []
    for count in counts:
        monkeypatch.setattr(_blocked, "threads", lambda count=count: count)
        results.append(compute())
    return results


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5), (5, 40_001), (70_000,)])
def test_inner_is_numpys_sum_of_products_in_float64(threads, dtype, shape):
    rng = np.random.default_rng(0)
    A = rng.standard_normal(shape).astype(dtype)
    B = rng.standard_normal(shape).astype(dtype)
    exact = float(np.sum(A.astype(np.float64) * B.astype(np.float64)))
    scale = float(np.sum(np.abs(A.astype(np.float64) * B.astype(np.float64))))
    assert abs(_blocked.inner(A, B) - exact) <= 1e-14 * scale


def test_inner_of_a_transposed_view_is_that_of_a_copy(threads):
    rng = np.random.default_rng(1)
    A, B = rng.random((300, 200)), rng.random((200, 300))
    assert _blocked.inner(A.T, B) == _blocked.inner(np.ascontiguousarray(A.T), B)


def test_dot_pieces_sums_each_piece_alone():
    a = np.arange(1.0, 38.0)
    partials = np.zeros(3)
    reductions.dot_pieces(a, a, 16, 0, 3, partials)
    expected = [np.sum(a[p * 16 : (p + 1) * 16] ** 2) for p in range(3)]
    np.testing.assert_array_equal(partials, expected)  # small integers: exact


def test_squared_difference_is_numpys():
    rng = np.random.default_rng(2)
    V, WH = rng.random((9, 1003)), rng.random((9, 1003))
    expected = float(np.sum((V - WH) ** 2))
    assert reductions.squared_difference(V, WH) == pytest.approx(expected, rel=1e-13)
    assert reductions.squared_difference(V[:, ::2], WH[:, ::2]) == pytest.approx(
        float(np.sum((V[:, ::2] - WH[:, ::2]) ** 2)), rel=1e-13
    )


@pytest.mark.parametrize("T", [5, 2048, 9001])
def test_products_are_numpys(threads, T):
    rng = np.random.default_rng(3)
    V, W, H = rng.random((17, T)), rng.random((17, 4)), rng.random((4, T))
    G = rng.random((4, 4))
    np.testing.assert_allclose(_blocked.matmul_columns(W.T, V), W.T @ V, rtol=1e-13)
    np.testing.assert_allclose(
        _blocked.matmul_columns(G, H, minus=W.T @ V), G @ H - W.T @ V, rtol=1e-12, atol=1e-12
    )
    np.testing.assert_allclose(_blocked.matmul_summed(V, H.T), V @ H.T, rtol=1e-13)
    np.testing.assert_allclose(_blocked.matmul_summed(H, V.T), H @ V.T, rtol=1e-13)
    np.testing.assert_allclose(_blocked.gram_rows(H), H @ H.T, rtol=1e-13)
    expected = 0.5 * float(np.sum((V - W @ H) ** 2))
    assert _blocked.half_squared_error(V, W, H) == pytest.approx(expected, rel=1e-12)


def test_float32_products_stay_float32():
    rng = np.random.default_rng(4)
    V = rng.random((6, 9000)).astype(np.float32)
    H = rng.random((3, 9000)).astype(np.float32)
    assert _blocked.matmul_summed(V, H.T).dtype == np.float32
    W = rng.random((6, 3)).astype(np.float32)
    assert _blocked.matmul_columns(W.T, V).dtype == np.float32
    assert isinstance(_blocked.inner(V, V), float)


def test_the_bits_do_not_depend_on_the_thread_count(monkeypatch):
    rng = np.random.default_rng(5)
    V, W, H = rng.random((13, 20_000)), rng.random((13, 3)), rng.random((3, 20_000))

    def everything():
        return (
            _blocked.matmul_columns(W.T, V),
            _blocked.matmul_summed(V, H.T),
            _blocked.gram_rows(H),
            np.array([_blocked.inner(V, V), _blocked.half_squared_error(V, W, H)]),
        )

    one, two, five = _bits_on(monkeypatch, (1, 2, 5), everything)
    for a, b, c in zip(one, two, five, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def _small_operands():
    """Products below _blocked.SMALL_GEMM: one block, and several blocks
    of a long shared dimension (3 x 3000 x 3)."""
    rng = np.random.default_rng(6)
    V, W, H = rng.random((60, 50)), rng.random((60, 5)), rng.random((5, 50))
    A, B = rng.random((3, 3000)), rng.random((3000, 3))
    v = rng.random((60, 1))
    return V, W, H, A, B, v


def _small_products(V, W, H, A, B, v):
    return (
        _blocked.matmul_columns(W.T, V),
        _blocked.matmul_columns(W.T @ W, H, minus=W.T @ V),
        _blocked.matmul_summed(V, H.T),
        _blocked.matmul_summed(A, B),
        _blocked.matmul_columns(V.T, v),
        _blocked.gram_rows(H),
        np.array([_blocked.half_squared_error(V, W, H)]),
    )


@pytest.fixture
def no_threadpoolctl(monkeypatch):
    """threadpoolctl's controller made to fail the test if anything asks for it."""
    from nmfsc import _threads

    def refuse():
        raise AssertionError("threadpoolctl was asked for")

    monkeypatch.setattr(_threads, "_blas_controller", refuse)


def test_small_products_skip_the_pool_and_the_blas_limit(no_threadpoolctl):
    """Below SMALL_GEMM a product runs on the calling thread: neither the
    pool's thread count nor threadpoolctl's limit is asked for (each cost
    tens of microseconds, most of a small fit's iteration)."""
    V, W, H, A, B, v = _small_operands()
    for got, want in zip(
        _small_products(V, W, H, A, B, v),
        (W.T @ V, W.T @ W @ H - W.T @ V, V @ H.T, A @ B, V.T @ v, H @ H.T),
        strict=False,
    ):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_small_products_have_the_blocked_paths_bits(monkeypatch):
    """The direct path gives the bits of the blocks on the pool with BLAS
    limited to one thread (OpenBLAS runs products this small on one thread
    by itself)."""
    operands = _small_operands()
    direct = _small_products(*operands)
    monkeypatch.setattr(_blocked, "SMALL_GEMM", 0)
    monkeypatch.setattr(_blocked, "SMALL_GEMV", 0)
    for count in (1, 2):
        monkeypatch.setattr(_blocked, "threads", lambda count=count: count)
        for a, b in zip(direct, _small_products(*operands), strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "settings",
    [
        {"sparseness_w": 0.5},
        {"sparseness_h": 0.5},
        {},
        {"sparseness_h": 0.5, "solver": "accelerated"},
    ],
    ids=["s_W", "s_H", "plain", "accelerated"],
)
@pytest.mark.filterwarnings("ignore::nmfsc.ConvergenceWarning")  # 20 iterations, on purpose
def test_a_small_fit_never_asks_threadpoolctl(request, settings):
    import nmfsc

    V = np.random.default_rng(7).random((60, 50))
    expected = nmfsc.nmf_sc(V, 5, max_iter=20, tol=0, random_state=0, **settings)
    request.getfixturevalue("no_threadpoolctl")  # from here on
    result = nmfsc.nmf_sc(V, 5, max_iter=20, tol=0, random_state=0, **settings)
    np.testing.assert_array_equal(result.objective, expected.objective)


def test_matmul_unsplit_runs_with_blas_at_one_thread(monkeypatch):
    """A factor product above SMALL_GEMM (W H H^T at 288 x 72 x 72) runs
    with BLAS limited to one thread, never on BLAS's own threads (which
    then spin on the core the next blocked product wants), with the bits of
    the product on any BLAS thread count; one below it asks threadpoolctl
    nothing."""
    from nmfsc import _threads

    rng = np.random.default_rng(3)
    W, HHt = rng.random((288, 72)), rng.random((72, 72))
    want = W @ HHt
    seen = []
    matmul = np.matmul

    def spy(*args, **kwargs):
        seen.append(_threads.blas_threads())
        return matmul(*args, **kwargs)

    monkeypatch.setattr(np, "matmul", spy)
    got = _blocked.matmul_unsplit(W, HHt)
    assert seen in ([1], [None])  # None: no BLAS that threadpoolctl can see
    np.testing.assert_array_equal(got, want)
    out = np.empty((72, 72))
    assert _blocked.matmul_unsplit(W.T, W, out=out) is out
    np.testing.assert_array_equal(out, W.T @ W)
    monkeypatch.setattr(np, "matmul", matmul)

    def refuse():
        raise AssertionError("threadpoolctl was asked for")

    monkeypatch.setattr(_threads, "_blas_controller", refuse)
    small = rng.random((30, 8))
    np.testing.assert_array_equal(_blocked.matmul_unsplit(small.T, small), small.T @ small)
