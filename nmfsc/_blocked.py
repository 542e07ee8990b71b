r"""The solvers' large products and sums, in blocks of a fixed size spread
over nmfsc's threads, with results that do not depend on how many threads.

Every product or sum here is cut into blocks whose size is fixed by the
shapes alone (never a number of blocks per thread); the threads of
:mod:`nmfsc._threads` take contiguous runs of blocks; a sum over blocks adds
their partial results in block order. BLAS runs single-threaded inside each
block (:func:`nmfsc._threads.single_blas`), so that

- its own threads neither fight the pool's for the cores (OpenBLAS's idle
  threads spin for a while after each product, holding the core that the
  next Numba kernel's second group wants), nor split a sum by their count
  (OpenBLAS's threaded ``ddot`` gives different bits for 1 and 2 threads);
- the same blocks with the same operations give the same bits on 1, 2 or
  any number of threads.

The functions:

- :func:`matmul_columns` -- :math:`A B` (optionally minus :math:`C`) by
  blocks of B's columns: no sum is split (W^T V, W^T W H);
- :func:`matmul_summed` -- :math:`A B` with the shared dimension cut into
  blocks and the partial products added in order
  (V H^T, H V^T, H H^T, where the shared dimension is the long one, T);
- :func:`gram_rows` -- :math:`X X^T`, the same way;
- :func:`matmul_unsplit` -- :math:`A B` whole on the calling thread, for the
  products of the factors alone (W^T W, W H H^T), too small to share;
- :func:`inner` -- :math:`\sum_{ij} A_{ij} B_{ij}` in float64, by pieces of
  ``PIECE`` entries;
- :func:`half_squared_error` -- :math:`\tfrac12 \lVert V - W H\rVert_F^2` by
  blocks of columns of W H, none of it held whole;
- :func:`in_groups` -- a kernel that computes each row (column) alone, on
  groups of rows (columns).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from nmfsc._kernels import reductions as _r
from nmfsc._threads import run_groups, single_blas, split, threads

__all__ = [
    "COLUMNS",
    "PIECE",
    "SUMMED",
    "gram_rows",
    "half_squared_error",
    "inner",
    "matmul_columns",
    "matmul_summed",
    "matmul_unsplit",
    "in_groups",
]

#: :func:`matmul_columns` cuts B's columns into at most this many blocks of
#: equal size, each of at least ``COLUMNS`` columns (one block when fewer).
COLUMNS, COLUMN_BLOCKS = 512, 256
#: :func:`matmul_summed` cuts the shared dimension into at most this many
#: blocks of equal size (so at most this many partial products are held),
#: each of at least ``SUMMED``.
SUMMED, SUMMED_BLOCKS = 512, 64
#: Entries per partial sum of :func:`inner`.
PIECE = 1 << 14
#: Columns of W H per block of :func:`half_squared_error`.
RESIDUAL_COLUMNS = 1024

#: A row-wise kernel over at least this many entries runs on all threads.
PARALLEL_ENTRIES = 1 << 16


#: A product of an (m x k) and a (k x n) matrix with m n k below this runs
#: directly on the calling thread, BLAS not limited: OpenBLAS runs a gemm
#: that small on one thread (its ``GEMM_MULTITHREAD_THRESHOLD`` rule,
#: 65536 x 4), so its bits are those of the blocked path, without the tens
#: of microseconds that the pool and a threadpoolctl limit cost per product
#: (most of an iteration on a matrix of a few thousand entries).
SMALL_GEMM = 1 << 18
#: The same bound for a matrix-vector product (m or n equal to 1), which
#: OpenBLAS runs on one thread below 2304 x 4 entries of the matrix.
SMALL_GEMV = 2304 * 4


def _blas_alone(m: int, n: int, k: int) -> bool:
    """Whether BLAS computes an (m x k) by (k x n) product on one thread by
    itself (see :data:`SMALL_GEMM`)."""
    size = m * n * k
    return size < (SMALL_GEMM if min(m, n) > 1 else SMALL_GEMV)


def _over_blocks(count: int, task: Callable[[int, int], None], alone: bool = False) -> None:
    """``task(a, b)`` for contiguous runs of the blocks ``0..count-1``, one
    run per thread, BLAS single-threaded; all of them in this thread, BLAS
    as it is, when ``alone`` (every block's product is one that BLAS keeps
    on one thread: :func:`_blas_alone`). Each block computes the same in
    either case."""
    if alone:
        task(0, count)
        return
    groups = split(count, threads())
    with single_blas():
        run_groups([partial(task, a, b) for a, b in groups])


def _in_order(partials) -> float:
    """The sum of the blocks' partial sums, added one by one in block order."""
    total = 0.0
    for value in partials:
        total += float(value)
    return total


def in_groups(count: int, entries: int, task: Callable[[int, int], object]) -> None:
    """``task(a, b)`` for contiguous groups of ``0..count-1`` (rows, or
    columns), one group per thread when the kernel covers at least
    :data:`PARALLEL_ENTRIES` entries. For kernels that compute every row (or
    column) alone, whose result is then the same in any group."""
    if entries < PARALLEL_ENTRIES:
        task(0, count)
        return
    run_groups([partial(task, a, b) for a, b in split(count, threads())])


def _spans(length: int, least: int, most: int) -> list[slice]:
    """``range(length)`` in contiguous blocks of equal size (within one), as
    many as blocks of ``least`` fill, at most ``most``: a function of the
    shape alone, and equal blocks, so that the threads' runs are balanced."""
    if length < 2 * least:
        return [slice(0, length)]
    count = max(1, min(most, length // least))
    return [slice(a, b) for a, b in split(length, count)]


def matmul_columns(A, B, out=None, minus=None):
    """``A @ B`` (``A @ B - minus`` with ``minus``), written to ``out`` (a new
    C-contiguous array if None), by blocks of B's columns (:data:`COLUMNS`).
    Each entry is one BLAS dot product over the shared dimension, the same
    on any number of threads."""
    alone = _blas_alone(A.shape[0], B.shape[1], A.shape[1])
    if alone and B.shape[1] < 2 * COLUMNS:  # one block, on this thread
        out = np.matmul(A, B, out=out)
        if minus is not None:
            np.subtract(out, minus, out=out)
        return out
    if out is None:
        out = np.empty((A.shape[0], B.shape[1]), dtype=np.result_type(A.dtype, B.dtype))
    blocks = _spans(B.shape[1], COLUMNS, COLUMN_BLOCKS)

    def task(a, b):
        for cols in blocks[a:b]:
            np.matmul(A, B[:, cols], out=out[:, cols])
            if minus is not None:
                np.subtract(out[:, cols], minus[:, cols], out=out[:, cols])

    _over_blocks(len(blocks), task, alone)
    return out


def matmul_unsplit(A, B, out=None):
    """``A @ B`` whole on the calling thread, BLAS at one thread (as it is
    when BLAS keeps the product on one thread by itself: :func:`_blas_alone`).

    For the products of the factors alone (W^T W, W H H^T: O(M^2 N), against
    the O(M N T) of the products with V): too small to be worth the pool,
    and never left to BLAS's own threads, which spin for a while after the
    product on the core that the next blocked product's second group wants
    (benchmarks/README.md, "Where the second core went"). OpenBLAS splits a
    gemm over the rows and columns of the product, never the shared
    dimension, so these are the bits of the product on any thread count."""
    if _blas_alone(A.shape[0], B.shape[1], A.shape[1]):
        return np.matmul(A, B, out=out)
    with single_blas():
        return np.matmul(A, B, out=out)


def matmul_summed(A, B, out=None):
    """``A @ B`` as the sum, in order, of the products of blocks along the
    shared dimension (``A[:, k] @ B[k, :]``, :data:`SUMMED`), for a
    long shared dimension and a small product. Written to ``out`` (a new
    array if None)."""
    alone = _blas_alone(A.shape[0], B.shape[1], A.shape[1])
    if alone and A.shape[1] < 2 * SUMMED:  # one block, on this thread
        return np.matmul(A, B, out=out)
    shape = (A.shape[0], B.shape[1])
    dtype = np.result_type(A.dtype, B.dtype)
    if out is None:
        out = np.empty(shape, dtype=dtype)
    blocks = _spans(A.shape[1], SUMMED, SUMMED_BLOCKS)
    if len(blocks) == 1:  # not alone: a small one block returned above
        with single_blas():
            np.matmul(A, B, out=out)
        return out
    partials = np.empty((len(blocks), *shape), dtype=dtype)

    def task(a, b):
        for p in range(a, b):
            np.matmul(A[:, blocks[p]], B[blocks[p], :], out=partials[p])

    _over_blocks(len(blocks), task, alone)
    out[...] = partials[0]
    for p in range(1, len(blocks)):
        out += partials[p]
    return out


def gram_rows(X, out=None):
    """``X @ X.T`` by :func:`matmul_summed` (blocks along X's rows)."""
    return matmul_summed(X, X.T, out)


def inner(A, B) -> float:
    """``sum(A * B)`` as a Python float, computed in float64 by pieces of
    :data:`PIECE` entries of the flattened arrays (C order), the pieces'
    sums added in order."""
    a = A.ravel()
    b = B.ravel()
    pieces = max(1, -(-a.shape[0] // PIECE))
    partials = np.zeros(pieces)
    if pieces == 1:
        _r.dot_pieces(a, b, PIECE, 0, 1, partials)
        return float(partials[0])
    run_groups(
        [
            partial(_r.dot_pieces, a, b, PIECE, first, stop, partials)
            for first, stop in split(pieces, threads())
        ]
    )
    return _in_order(partials)


def half_squared_error(V, W, H) -> float:
    """``0.5 ||V - W H||_F^2`` in float64, W H formed by blocks of
    about :data:`RESIDUAL_COLUMNS` columns (one buffer of N x a block per thread),
    the blocks' sums added in order."""
    blocks = _spans(V.shape[1], RESIDUAL_COLUMNS, V.shape[1])
    widest = max(block.stop - block.start for block in blocks)
    partials = np.zeros(len(blocks))
    dtype = np.result_type(W.dtype, H.dtype)

    def task(a, b):
        buffer = np.empty((W.shape[0], widest), dtype=dtype)
        for p in range(a, b):
            cols = blocks[p]
            WH = buffer[:, : cols.stop - cols.start]
            np.matmul(W, H[:, cols], out=WH)
            partials[p] = _r.squared_difference(V[:, cols], WH)

    _over_blocks(len(blocks), task, _blas_alone(W.shape[0], V.shape[1], W.shape[1]))
    return 0.5 * _in_order(partials)
