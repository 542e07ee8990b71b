r"""Hoyer's projection of the rows of a chunked M x T array, each pass one reduction.

Every row x of the trial H is projected onto s >= 0, sum(s) = l1, ||s||_2 = l2
(the problem of :mod:`nmfsc._kernels.projection`). With rho = l1 / l2, the
answer is l2 u, u the projection for (rho, 1). The kernel's passes keep a
support S = {y >= lo} (y = x) of k entries and, with

.. math:: m = \rho / k, \quad t = \sqrt{(1 - \rho^2 / k) / \textstyle\sum_S (y - \bar y)^2},
          \quad u_i = m + t (y_i - \bar y) \text{ on } S,

stop when u >= 0 at the least entry of S (u is monotone in y), and otherwise
drop the entries with u_i <= 0. A pass therefore needs, per row, only the
support's count k, sum, centred sum of squares, min and max: each chunk
computes them for its part of the row (its own mean and centred squares) and
the parts are merged in chunk order by Chan, Golub & LeVeque's pairwise
update,

.. math:: M_2 = M_{2,a} + M_{2,b} + (\bar y_b - \bar y_a)^2 \, k_a k_b / (k_a + k_b),

which keeps the centred sum as accurate as the kernel's. The client receives
M x 8 numbers per pass, decides every row's next support (or that it is
done), and sends 4 M numbers back; a row is never gathered. The special cases
are the kernel's: a non-finite row (the projection fails: None), a row that
already meets its targets to 1e-13 (kept), rho = 1 (l2 at the row's largest
entry, the earliest on ties: a global argmax, merged with the statistics), a
flat support (1 - rho^2 / k <= 1e-15 or k = 1: u = m on S). A support whose
entries are all equal with a sparser target (the kernel breaks such ties by
index) is refused with a RuntimeError: it needs a row that is constant on its
support, which random data does not give.

The result equals the kernel's to rounding (the supports are the same unless
an entry's u is 0 to rounding, where either choice changes u by about 1e-16).
"""

from __future__ import annotations

import dask
import numpy as np

from nmfsc.dask_backend.chunked import ChunkedRows, reduce_tree, task

__all__ = ["FEASIBLE_RTOL", "R2_FLAT", "project_chunked_rows"]

#: As the kernel: a row meeting its targets to this relative tolerance is kept.
FEASIBLE_RTOL = 1e-13
#: As the kernel: 1 - rho^2 / k at or below this is the flat support.
R2_FLAT = 1e-15

# Columns of the per-row statistics.
_K, _SUM, _M2, _LO, _HI, _BAD, _ARG, _MAX = range(8)


def _chunk_stats(x, offset, params):
    """Per-row statistics (M x 8) of the selected entries of one chunk.

    ``params`` None selects every entry; else (lo, m, t, mean) selects
    y >= lo with m + t (y - mean) > 0.
    """
    y = np.asarray(x, dtype=np.float64)
    M = y.shape[0]
    out = np.zeros((M, 8))
    if params is None:
        sel = np.ones(y.shape, dtype=bool)
        out[:, _BAD] = ~np.all(np.isfinite(y), axis=1)
        if y.shape[1]:
            out[:, _ARG] = offset + np.argmax(y, axis=1)
            out[:, _MAX] = np.max(y, axis=1)
    else:
        lo, m, t, mean = (p[:, None] for p in params)
        sel = (y >= lo) & (m + t * (y - mean) > 0.0)
    count = np.count_nonzero(sel, axis=1).astype(np.float64)
    total = np.where(sel, y, 0.0).sum(axis=1)
    own_mean = np.divide(total, count, out=np.zeros(M), where=count > 0)
    dev = np.where(sel, y - own_mean[:, None], 0.0)
    out[:, _K] = count
    out[:, _SUM] = total
    out[:, _M2] = np.einsum("ij,ij->i", dev, dev)
    out[:, _LO] = np.where(sel, y, np.inf).min(axis=1, initial=np.inf)
    out[:, _HI] = np.where(sel, y, -np.inf).max(axis=1, initial=-np.inf)
    return out


def _merge_stats(*parts):
    """Merge per-chunk statistics in chunk order (Chan et al.; argmax: earliest)."""
    acc = parts[0].copy()
    for b in parts[1:]:
        na, nb = acc[:, _K], b[:, _K]
        n = na + nb
        both = (na > 0) & (nb > 0)
        safe_a, safe_b, safe_n = np.where(both, na, 1), np.where(both, nb, 1), np.where(both, n, 1)
        d = b[:, _SUM] / safe_b - acc[:, _SUM] / safe_a
        extra = np.where(both, d * d * safe_a * safe_b / safe_n, 0.0)
        acc[:, _M2] = acc[:, _M2] + b[:, _M2] + extra
        acc[:, _K] = n
        acc[:, _SUM] += b[:, _SUM]
        acc[:, _LO] = np.minimum(acc[:, _LO], b[:, _LO])
        acc[:, _HI] = np.maximum(acc[:, _HI], b[:, _HI])
        acc[:, _BAD] = np.maximum(acc[:, _BAD], b[:, _BAD])
        later = b[:, _MAX] > acc[:, _MAX]
        acc[:, _ARG] = np.where(later, b[:, _ARG], acc[:, _ARG])
        acc[:, _MAX] = np.maximum(acc[:, _MAX], b[:, _MAX])
    return acc


def _write_chunk(x, offset, final, dtype):
    """The projected chunk: l2 max(m + t (y - mean), 0) on y >= lo, copies, single entries."""
    lo, m, t, mean, l2, kind, arg = final
    y = np.asarray(x, dtype=np.float64)
    shape = np.maximum(m[:, None] + t[:, None] * (y - mean[:, None]), 0.0)
    out = np.where(y >= lo[:, None], l2[:, None] * shape, 0.0)
    keep = kind == 1
    out[keep] = y[keep]
    for r in np.flatnonzero(kind == 2):
        out[r] = 0.0
        j = int(arg[r]) - offset
        if 0 <= j < y.shape[1]:
            out[r, j] = l2[r]
    return out.astype(dtype, copy=False)


def _reduce(X, offsets, params, form):
    parts = [
        task(_chunk_stats, task(form, *args) if form else args, off, params)
        for args, off in zip(X, offsets, strict=True)
    ]
    return dask.compute(reduce_tree(parts, _merge_stats))[0]


def project_chunked_rows(inputs, like, l1, l2, form=None):
    """Project every row of a chunked M x T array onto (L1, L2) = (l1, l2) (per row).

    ``inputs`` holds, per chunk, the delayed chunk (``form`` None) or the
    arguments of ``form``, which makes the chunk on the worker (the trial
    ``H - mu dH``, formed in every pass rather than stored). ``like`` is a
    :class:`ChunkedRows` with the layout and dtype. Returns the projected
    rows as a persisted :class:`ChunkedRows`, or None if a row is not finite.
    ``l1`` must lie in [l2, sqrt(T) l2] and l2 > 0 (the caller's checks).
    """
    offsets = like.offsets
    T = like.shape[1]
    stats = _reduce(inputs, offsets, None, form)
    if np.any(stats[:, _BAD]):
        return None
    arg = stats[:, _ARG].copy()
    k, total, css, lo, hi = (stats[:, c].copy() for c in (_K, _SUM, _M2, _LO, _HI))
    mean = total / k
    norm = np.sqrt(np.maximum(k * mean * mean + css, 0.0))
    feasible = (lo >= 0) & (np.abs(total - l1) <= FEASIBLE_RTOL * l1)
    feasible &= np.abs(norm - l2) <= FEASIBLE_RTOL * l2
    rho = np.minimum(np.maximum(l1 / l2, 1.0), np.sqrt(T))
    kind = np.where(feasible, 1, np.where(rho == 1.0, 2, 0))
    m, t = np.zeros_like(rho), np.zeros_like(rho)
    active = kind == 0
    while True:
        m = np.where(active, rho / k, m)
        r2 = 1.0 - rho * rho / k
        flat = active & ((r2 <= R2_FLAT) | (k == 1))
        t[flat], mean[flat] = 0.0, 0.0
        active &= ~flat
        if np.any(active & (lo == hi)):
            raise RuntimeError(
                "the distributed projection met a row of H that is constant on its support "
                "with a sparser target (a tie the in-memory kernel breaks by index); "
                "run this problem in memory (pass V as a NumPy array)"
            )
        t = np.where(active, np.sqrt(np.maximum(r2, 0.0) / np.where(active, css, 1.0)), t)
        mean = np.where(active, total / k, mean)
        active &= m + t * (lo - mean) < 0.0
        if not np.any(active):
            break
        stats = _reduce(inputs, offsets, (lo, m, t, mean), form)
        for values, column in ((k, _K), (total, _SUM), (css, _M2), (lo, _LO), (hi, _HI)):
            values[active] = stats[active, column]
    final = (lo, m, t, mean, np.asarray(l2, dtype=np.float64), kind, arg)
    parts = [
        task(_write_chunk, task(form, *args) if form else args, off, final, like.dtype)
        for args, off in zip(inputs, offsets, strict=True)
    ]
    return ChunkedRows.persisted(parts, like)
