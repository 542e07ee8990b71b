r"""Chunk lists, tree reductions, and the data object of a Dask run.

A factor with one column per sample (H, W^T V, a trial of the H step) is a
:class:`ChunkedRows`: M x T split along T exactly as V's columns are, each
chunk a ``dask.delayed`` object, persisted (held where the active scheduler
keeps results: in memory for the local schedulers, on the workers of a
``dask.distributed`` cluster). Everything that spans the chunks is a *tree
reduction*: each chunk task returns a small array (M x M, N x M or M x 8),
and these are combined ``FAN_IN`` at a time, in chunk order, until one is
left, which the client receives.

:class:`DaskData` plays the part of :mod:`nmfsc.solvers._data`'s data objects
for a Dask array V: one reduction gives min(V), s = max(V), the count of
non-finite values and :math:`\lVert V\rVert_F^2` (V is checked as the
in-memory solvers check it), and every product is taken of the chunk as
stored and divided by s (no copy of a chunk; a chunk divided by s first where s
is outside :func:`nmfsc.solvers.framework.divides_first`'s range, so that no
product overflows or underflows): :math:`W^T V_c / s` chunk by
chunk, :math:`\sum_c V_c H_c^T / s` and :math:`\sum_c H_c H_c^T` as
reductions. Chunks may be dense
ndarrays or scipy.sparse matrices.
"""

from __future__ import annotations

import hashlib
import uuid
from functools import partial

import dask
import numpy as np
from dask import delayed
from dask.delayed import Delayed

from nmfsc._kernels import updates as _k
from nmfsc._threads import pool_threads, run_groups, split
from nmfsc.solvers.framework import divides_first, inner, is_sparse

__all__ = [
    "held",
    "local_values",
    "map_local",
    "map_reduce_local",
    "FAN_IN",
    "ChunkedRows",
    "DaskData",
    "as_delayed",
    "compute",
    "persist",
    "reduce_tree",
    "squares_chunk",
    "task",
]

#: Partial results combined per task of a tree reduction.
FAN_IN = 8
#: Values of a chunk converted to float64 at a time by :func:`chunk_check`.
BLOCK_VALUES = 1 << 20


def compute(*values):
    """``dask.compute`` without graph optimisation (the graphs are small and made
    to be run as they are: fusing or culling them only costs time each round)."""
    return dask.compute(*values, optimize_graph=False)


def persist(*values):
    """``dask.persist`` without graph optimisation (see :func:`compute`)."""
    return dask.persist(*values, optimize_graph=False)


def task(func, *args):
    """A ``dask.delayed`` call of ``func`` (a fresh key: the results are never shared)."""
    return delayed(func, pure=False)(*args)


def as_delayed(value, prefix):
    """``value`` as one Dask key, so that the tasks using it share one copy (W, H H^T)."""
    return delayed(value, name=f"nmfsc-{prefix}-{uuid.uuid4().hex}", traverse=False)


def add_all(*parts):
    """The sum of arrays, or of tuples of arrays entry by entry, in the given order."""
    first = parts[0]
    if isinstance(first, tuple):
        return tuple(add_all(*items) for items in zip(*parts, strict=True))
    total = first.copy()
    for part in parts[1:]:
        total += part
    return total


def reduce_tree(parts, combine=add_all):
    """Combine the delayed ``parts`` ``FAN_IN`` at a time, in order, into one delayed."""
    parts = list(parts)
    while len(parts) > 1:
        parts = [task(combine, *parts[i : i + FAN_IN]) for i in range(0, len(parts), FAN_IN)]
    return parts[0]


#: Names of Dask's schedulers that run every task in the calling thread.
_SERIAL = ("sync", "synchronous", "single-threaded")


def local_values(items):
    """The concrete values behind ``items`` when they all live in this process,
    else None.

    ``items`` is a list of delayed values or tuples of them and plain values.
    A delayed value is concrete when it was persisted by a local (threaded or
    synchronous) scheduler: its graph is then one key holding a NumPy array.
    Under ``dask.distributed`` the graph holds a future, and this returns None
    (the caller builds a graph as before).
    """

    def value(item):
        if not isinstance(item, Delayed):
            return item
        graph = item.__dask_graph__()
        if isinstance(graph, dict) and len(graph) == 1:
            held = graph.get(item.key)
            if isinstance(held, np.ndarray):
                return held
        raise LookupError

    try:
        return [tuple(map(value, i)) if isinstance(i, tuple) else value(i) for i in items]
    except LookupError:
        return None


def map_local(func, args):
    """``[func(*a) for a in args]`` in this process, on the machine's cores (in
    this thread under Dask's synchronous scheduler).

    The calls are split into one contiguous group per thread
    (:func:`nmfsc._threads.pool_threads`: all of them, whatever BLAS limit
    the run has set for its tasks' products); this thread runs the first group while
    the shared pool runs the others (a pass of the projection is a few
    milliseconds: a task per call cost more in hand-offs than the calls
    themselves).
    """
    if dask.config.get("scheduler", None) in _SERIAL:
        return [func(*a) for a in args]
    groups = [args[a:b] for a, b in split(len(args), pool_threads())]
    parts = run_groups([partial(_run_group, func, group) for group in groups])
    return [value for part in parts for value in part]


def _run_group(func, group):
    return [func(*a) for a in group]


def map_reduce_local(func, args, combine):
    """``combine`` over :func:`map_local`'s values, grouped as :func:`reduce_tree`
    groups its tasks (so the same bits), without building a graph."""
    parts = map_local(func, args)
    while len(parts) > 1:
        parts = [combine(*parts[i : i + FAN_IN]) for i in range(0, len(parts), FAN_IN)]
    return parts[0]


def held(value):
    """``value`` as a persisted delayed value held in this process (what a local
    scheduler's persist gives; :func:`local_values` finds it again)."""
    key = f"nmfsc-held-{uuid.uuid4().hex}"
    return Delayed(key, {key: value})


class ChunkedRows:
    """An M x T array split along its columns into persisted delayed chunks."""

    def __init__(self, parts, widths, dtype, rows):
        self.parts = list(parts)
        self.widths = tuple(int(w) for w in widths)
        self.dtype = np.dtype(dtype)
        self.shape = (int(rows), sum(self.widths))

    @classmethod
    def persisted(cls, parts, like, dtype=None, rows=None):
        """New chunks (delayed, computed now) laid out as the ChunkedRows ``like``."""
        parts = persist(*parts)
        rows = like.shape[0] if rows is None else rows
        return cls(parts, like.widths, like.dtype if dtype is None else dtype, rows)

    @property
    def offsets(self):
        return np.concatenate([[0], np.cumsum(self.widths)[:-1]]).astype(np.int64)

    def map(self, func, *args):
        """``func(chunk, *args)`` on every chunk, persisted (args are shared); in
        this process, without a graph, when the chunks are held here."""
        local = local_values(self.parts)
        if local is not None:
            made = map_local(func, [(part, *args) for part in local])
            return ChunkedRows([held(x) for x in made], self.widths, self.dtype, self.shape[0])
        return ChunkedRows.persisted([task(func, part, *args) for part in self.parts], self)

    def to_dask_array(self):
        """The chunks as one ``dask.array.Array`` (nothing is computed)."""
        import dask.array as da

        M = self.shape[0]
        blocks = [
            da.from_delayed(part, shape=(M, w), dtype=self.dtype)
            for part, w in zip(self.parts, self.widths, strict=True)
        ]
        return da.concatenate(blocks, axis=1)

    def compute(self):
        """The whole array on the client (for tests and small problems only)."""
        return np.concatenate(compute(*self.parts), axis=1)


# --- the per-chunk functions (run on the workers) ------------------------------------
def normalised(v, scale):
    """The chunk V_c / s in its dtype: dense ndarray or CSR (s = 1: as given)."""
    if is_sparse(v):
        v = v.tocsr()
        if scale == 1.0:
            return v
        return type(v)((v.data / v.data.dtype.type(scale), v.indices, v.indptr), shape=v.shape)
    v = np.asarray(v)
    return v if scale == 1.0 else v / scale


def chunk_check(v):
    """[min, max, sum of squares of v / max, non-finite count] of a chunk (zeros
    count for sparse).

    The squares are of the values divided by the chunk's maximum (so that they
    neither overflow nor underflow at any scale: :func:`merge_checks` brings
    them to the common maximum), summed in float64 by slices of 2^20 values, so
    that a float32 chunk is never copied whole.
    """
    values = v.tocsr().data if is_sparse(v) else np.asarray(v).reshape(-1)
    bad = float(np.count_nonzero(~np.isfinite(values)))
    if values.size == 0:
        return np.array([0.0, 0.0, 0.0, bad])
    lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
    if is_sparse(v) and values.size < v.shape[0] * v.shape[1]:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    squares = 0.0
    for start in range(0, values.size, BLOCK_VALUES):
        part = values[start : start + BLOCK_VALUES].astype(np.float64)
        part = part[np.isfinite(part)] if bad else part
        if hi > 0 and np.isfinite(hi):
            part /= hi
        squares += float(np.dot(part, part))
    return np.array([lo, hi, squares, bad])


def merge_checks(*parts):
    """[min, max, sum of squares of V / max, non-finite count] of chunks' checks."""
    lo = min(p[0] for p in parts)
    hi = max(p[1] for p in parts)

    def relative(p):  # the chunk's squares in units of the common maximum
        usable = p[1] != hi and p[1] > 0 and np.isfinite(p[1]) and np.isfinite(hi)
        return p[2] * (p[1] / hi) ** 2 if usable else p[2]

    return np.array([lo, hi, sum(relative(p) for p in parts), sum(p[3] for p in parts)])


def chunk_digest(v):
    """SHA-256 of a chunk's float64 bytes (of its canonical CSR form if sparse)."""
    digest = hashlib.sha256()
    if is_sparse(v):
        csr = v.tocsr()
        csr.sum_duplicates()
        for part, dtype in (
            (csr.data, np.float64),
            (csr.indices, np.int64),
            (csr.indptr, np.int64),
        ):
            digest.update(np.ascontiguousarray(part, dtype=dtype).data)
    else:
        digest.update(np.ascontiguousarray(v, dtype=np.float64).data)
    return digest.hexdigest()


def squares_chunk(v, scale):
    """The sum of squares of the chunk V_c / s (its stored values if sparse)."""
    values = v.tocsr().data if is_sparse(v) else np.asarray(v, dtype=np.float64)
    values = values / scale
    return np.float64(inner(values, values))


def wtv_chunk(v, W, scale):
    """W^T V_c / s: the product of the chunk as stored, divided by s (M x T_c), so that
    the chunk is not copied (as :class:`nmfsc.solvers._data.ScaledData` does).

    Dense chunks too as ``(V_c^T W)^T``: OpenBLAS's ``W^T V_c`` (M x N times
    N x T_c with M small) is slower per column than the whole ``W^T V``,
    ``(V_c^T W)^T`` as fast (benchmarks/README.md)."""
    v, divisor = as_stored(v, scale)
    out = np.ascontiguousarray((v.T @ W).T)
    if divisor != 1.0:
        out /= divisor
    return out


def as_stored(v, scale):
    """(the chunk, the divisor of its products): V_c and s, or V_c / s and 1 where
    s is outside :func:`nmfsc.solvers.framework.divides_first`'s range."""
    v = v.tocsr() if is_sparse(v) else np.asarray(v)
    if divides_first(scale, v.dtype):
        return normalised(v, scale), 1.0
    return v, scale


def vht_and_gram_chunk(v, h, scale):
    """(V_c H_c^T / s, H_c H_c^T), V_c as stored."""
    v, divisor = as_stored(v, scale)
    return np.asarray(v @ h.T) / divisor, h @ h.T


def inner_and_gram_chunk(a, x):
    return np.array([inner(a, x)]), x @ x.T


def half_squared_error_chunk(v, W, h, scale):
    v = normalised(v, scale)
    R = W @ h
    R -= v.toarray() if is_sparse(v) else v
    return np.array([0.5 * inner(R, R)])


def multiplicative_h_chunk(v, h, W, WtW, scale, eps):
    """Lee & Seung's H update of a chunk, and the squared norms of its new rows."""
    out, row_ss = np.empty_like(h), np.empty(h.shape[0])
    _k.multiplicative_update_into(h, wtv_chunk(v, W, scale), WtW @ h, eps, out, row_ss)
    return out, row_ss


# --- the data --------------------------------------------------------------------------
class DaskData:
    """V, a ``dask.array.Array`` chunked along its columns, checked and normalised
    by s = max(V) (module docstring). The products mirror
    :class:`nmfsc.solvers._data.DenseData`'s, with H a :class:`ChunkedRows`."""

    def __init__(self, V):
        self.V = V = checked_dask_data(V)
        self.parts = list(V.to_delayed().ravel())
        self.widths = V.chunks[1]
        self.shape, self.dtype = V.shape, V.dtype
        self.sparse = False
        lo, hi, ss, bad = compute(
            reduce_tree([task(chunk_check, p) for p in self.parts], merge_checks)
        )[0]
        if bad:
            raise ValueError(f"V has {int(bad)} NaN or infinite values; V must be finite")
        if lo < 0:
            raise ValueError(f"V has negative values (min {lo!r}); V must be non-negative")
        if hi == 0:
            raise ValueError(f"V is all zeros (shape {V.shape}); there is nothing to factorize")
        self.scale = float(hi)
        self.vv = float(ss)  # already of V / s (chunk_check)
        self._vht = None  # (H, V H^T) of the last reduction that computed both

    def fingerprint(self):
        """``"NxT:sha256"`` over the chunk widths and every chunk's SHA-256 (one pass)."""
        digests = compute(*[task(chunk_digest, p) for p in self.parts])
        combined = hashlib.sha256(repr(self.widths).encode())
        for d in digests:
            combined.update(d.encode())
        return f"{self.shape[0]}x{self.shape[1]}:dask:{combined.hexdigest()}"

    def split(self, H):
        """An in-memory M x T array as persisted chunks laid out as V's columns."""
        bounds = np.concatenate([[0], np.cumsum(self.widths)])
        parts = [
            as_delayed(np.ascontiguousarray(H[:, a:b]), "H")
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ]
        return ChunkedRows(persist(*parts), self.widths, H.dtype, H.shape[0])

    def wtv(self, W):
        """W^T V / s, chunk by chunk (persisted)."""
        Wd = as_delayed(W, "W")
        parts = [task(wtv_chunk, p, Wd, self.scale) for p in self.parts]
        dtype = np.result_type(W.dtype, self.dtype)
        return ChunkedRows(persist(*parts), self.widths, dtype, W.shape[1])

    def vht_and_gram(self, H):
        """(V H^T / s, H H^T): one reduction. V H^T is kept for :meth:`vht` of this H."""
        parts = [
            task(vht_and_gram_chunk, v, h, self.scale)
            for v, h in zip(self.parts, H.parts, strict=True)
        ]
        VHt, HHt = compute(reduce_tree(parts))[0]
        self._vht = (H, VHt)
        return VHt, HHt

    def vht(self, H):
        if self._vht is not None and self._vht[0] is H:
            return self._vht[1]
        parts = [
            task(vht_and_gram_chunk, v, h, self.scale)
            for v, h in zip(self.parts, H.parts, strict=True)
        ]
        VHt = compute(reduce_tree(parts))[0][0]
        self._vht = (H, VHt)
        return VHt

    def hvt(self, H):
        """H V^T (M x N, C-contiguous): V H^T transposed."""
        return np.ascontiguousarray(self.vht(H).T)

    def vht_blocks(self, H):
        """V H^T as one block (W is on the client): ``(slice(None), V H^T)``."""
        yield slice(None), self.vht(H)

    def half_squared_error(self, W, H):
        """``0.5 ||V / s - W H||_F^2`` exactly, chunk by chunk (one reduction)."""
        Wd = as_delayed(W, "W")
        parts = [
            task(half_squared_error_chunk, v, Wd, h, self.scale)
            for v, h in zip(self.parts, H.parts, strict=True)
        ]
        return float(compute(reduce_tree(parts))[0][0])

    def relative_error(self, W, H, W_normalised):
        """``||V - W H||_F / ||V||_F`` (``W_normalised`` in V / s's units)."""
        return float(np.sqrt(max(0.0, 2.0 * self.half_squared_error(W_normalised, H) / self.vv)))


def inner_and_gram(A, X):
    """(<A, X>, X X^T) of two ChunkedRows of the same layout: one reduction."""
    parts = [task(inner_and_gram_chunk, a, x) for a, x in zip(A.parts, X.parts, strict=True)]
    cross, gram = compute(reduce_tree(parts))[0]
    return float(cross[0]), gram


def checked_dask_data(V):
    """V as a 2-D float32 / float64 Dask array with one chunk along its rows,
    its chunk sizes known, and no empty chunk of columns (dropped)."""
    if V.ndim != 2:
        raise ValueError(f"V must be 2-D (features x samples), got a Dask array with ndim={V.ndim}")
    if any(np.isnan(size) for sizes in V.chunks for size in sizes):
        raise ValueError(
            "V's chunk sizes are unknown (NaN), as after boolean indexing; call "
            "V.compute_chunk_sizes() first"
        )
    if len(V.chunks[0]) != 1:
        raise ValueError(
            f"V must be chunked along its columns (samples) only, got {len(V.chunks[0])} "
            f"chunks along its {V.shape[0]} rows; pass V.rechunk({{0: -1}})"
        )
    if V.shape[0] == 0 or V.shape[1] == 0:
        raise ValueError(f"V is empty (shape {V.shape}); there is nothing to factorize")
    if V.dtype.kind not in "biuf":
        raise TypeError(f"V must hold real numbers, got a Dask array of dtype {V.dtype}")
    if V.dtype not in (np.float32, np.float64):
        V = V.astype(np.float64)
    if 0 in V.chunks[1]:  # an empty chunk has no entries to add: the same V without it
        V = V.rechunk({1: tuple(width for width in V.chunks[1] if width)})
    return V
