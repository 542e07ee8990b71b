r"""Hoyer's projection of the rows of a chunked M x T array, each pass one reduction.

Every row x of the trial H is projected onto s >= 0, sum(s) = l1, ||s||_2 = l2
(the problem of :mod:`nmfsc._kernels.sparse_projection`). With rho = l1 / l2, the
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
M x 9 numbers per pass, decides every row's next support (or that it is
done), and sends 4 M numbers back; a row is never gathered. The special cases
are the kernel's: a non-finite row (the projection fails: None), a row that
already meets its targets to 1e-13 (kept), rho = 1 (l2 at the row's largest
entry, the earliest on ties: a global argmax, merged with the statistics), a
flat support (1 - rho^2 / k <= 1e-15 or k = 1: u = m on S). A support whose
k entries are all equal with a sparser target (images of a few grey levels,
repeated samples) is broken by index as the kernel breaks it: the tied
entries take the ramp k - 1, ..., 0 in index order, whose projection the
client computes (k numbers, by :func:`nmfsc.project`), and each chunk
writes the values of its tied entries' ranks, which one more pass (the
count of tied entries per chunk) places.

The result equals the kernel's to rounding (the supports are the same unless
an entry's u is 0 to rounding, where either choice changes u by about 1e-16).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from dask.delayed import Delayed

from nmfsc._kernels import rowstats as _rowstats
from nmfsc.dask_backend.chunked import (
    ChunkedRows,
    compute,
    held,
    local_values,
    map_local,
    map_reduce_local,
    persist,
    reduce_tree,
    task,
)
from nmfsc.projection import project

__all__ = [
    "FEASIBLE_RTOL",
    "R2_FLAT",
    "Projected",
    "chunk_stats",
    "merge_stats",
    "project_chunked_rows",
    "trial",
]

#: As the kernel: a row meeting its targets to this relative tolerance is kept.
FEASIBLE_RTOL = 1e-13
#: As the kernel: 1 - rho^2 / k at or below this is the flat support.
R2_FLAT = 1e-15

# Columns of the per-row statistics (the kernels' layout).
_K, _SUM, _M2, _LO, _HI = _rowstats.K, _rowstats.SUM, _rowstats.M2, _rowstats.LO, _rowstats.HI
_BAD, _ARG, _MAX, _OUT = _rowstats.BAD, _rowstats.ARG, _rowstats.MAX, _rowstats.OUT
_WIDTH = _rowstats.WIDTH
#: Rounds of the warm start (from the positive entries) before the passes from all entries.
WARM_ROUNDS = 4


def _as_float(x):
    y = np.asarray(x)
    return y if y.dtype in (np.float32, np.float64) else y.astype(np.float64)


def chunk_stats(x, offset, params, prior=None):
    """Per-row statistics of the selected entries of one chunk (Numba kernels of
    :mod:`nmfsc._kernels.rowstats`; float32 chunks are read without a copy).

    ``params`` None: the first pass, M x 18: the statistics of every entry
    (with the non-finite flag and the argmax) and of the positive entries
    (the warm start's support), and, given a ``prior`` shape (m, t, mean)
    per row, M x 27 with the statistics of {y : m + t (y - mean) > 0} (the
    support of the last projection's shape, a closer warm start). Else
    (lo, m, t, mean) select y >= lo with m + t (y - mean) > 0: M x 9.
    """
    y = _as_float(x)
    M = y.shape[0]
    if params is not None:
        out = np.zeros((M, _WIDTH))
        _rowstats.selected_stats(y, None, 0.0, *params, out)
        return out
    out = np.zeros((M, (2 if prior is None else 3) * _WIDTH))
    _rowstats.all_and_positive_stats(y, offset, out)
    if prior is not None:
        third = np.zeros((M, _WIDTH))
        _rowstats.selected_stats(y, None, 0.0, np.full(M, -np.inf), *prior, third)
        out[:, 2 * _WIDTH :] = third
    return out


def trial(h, dh, mu):
    """H - mu dH as the in-memory step forms it (mu dH first, then the difference)."""
    step = np.multiply(dh, mu)
    np.subtract(h, step, out=step)
    return np.ascontiguousarray(step)


def _pass_stats(form, args, offset, params, prior):
    """A pass's statistics of one chunk, made by ``form(*args)`` (or ``args``
    itself, ``form`` None). A trial (``form`` :func:`trial`) is not stored for
    a pass after the first: the kernel forms each entry as it reads it, with
    the same operations in the same dtype, so the same values."""
    if form is trial and params is not None:
        h, dh, mu = args
        dtype = np.multiply(dh[:1, :1], mu).dtype
        if h.dtype == dh.dtype == dtype and dtype in (np.float32, np.float64):
            out = np.zeros((h.shape[0], _WIDTH))
            _rowstats.selected_stats(h, dh, dtype.type(mu), *params, out)
            return out
    return chunk_stats(args if form is None else form(*args), offset, params, prior)


def merge_stats(*parts):
    """Merge per-chunk statistics in chunk order (Chan et al.; argmax: earliest),
    each block of ``_WIDTH`` columns on its own."""
    acc = parts[0].copy()
    for b in parts[1:]:
        for c in range(0, acc.shape[1], _WIDTH):
            _merge_block(acc[:, c : c + _WIDTH], b[:, c : c + _WIDTH])
    return acc


def _merge_block(acc, b):
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
    acc[:, _OUT] = np.maximum(acc[:, _OUT], b[:, _OUT])
    acc[:, _BAD] = np.maximum(acc[:, _BAD], b[:, _BAD])
    later = b[:, _MAX] > acc[:, _MAX]
    acc[:, _ARG] = np.where(later, b[:, _ARG], acc[:, _ARG])
    acc[:, _MAX] = np.maximum(acc[:, _MAX], b[:, _MAX])


def _formed(func, form, args, *rest):
    """``func(form(*args), *rest)``: the chunk is made in the task that uses it
    (one task per chunk and pass); ``form`` None: ``args`` is the chunk."""
    return func(args if form is None else form(*args), *rest)


def _write_chunk(x, offset, final, dtype, tie_values=None):
    """The projected chunk: l2 max(m + t (y - mean), 0) on y >= lo, copies, single
    entries, and for a tied row r the values ``tie_values[r]`` at its tied
    entries (y >= lo), in order."""
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
    for r, values in (tie_values or {}).items():
        out[r] = 0.0
        out[r, y[r] >= lo[r]] = values
    return out.astype(dtype, copy=False)


def _tied_counts(x, lo, rows):
    """Per row of ``rows``, the entries of the chunk at or above its ``lo``."""
    y = np.asarray(x, dtype=np.float64)
    return np.count_nonzero(y[rows] >= lo[rows, None], axis=1)


def _tie_values(inputs, local, form, lo, ties, rho, l2):
    """Per chunk, ``{row: the values of its tied entries}`` for the rows whose
    support is all tied (:func:`_supports`), as the in-memory kernel breaks
    the tie: the k tied entries take the ramp k - 1, ..., 0 in index order,
    and their values are the projection of the ramp (l2 times the shape at
    L1 / L2 = rho); one pass counts each chunk's tied entries to place them."""
    rows = np.flatnonzero(ties)
    if rows.size == 0:
        return [None] * len(inputs)
    if local is not None:
        counts = map_local(_formed, [(_tied_counts, form, a, lo, rows) for a in local])
    else:
        counts = compute(*[task(_formed, _tied_counts, form, a, lo, rows) for a in inputs])
    counts = np.array(counts).reshape(len(inputs), rows.size)  # chunk x tied row
    starts = np.vstack([np.zeros(rows.size, dtype=np.int64), np.cumsum(counts, axis=0)])
    per_chunk = [{} for _ in inputs]
    for i, r in enumerate(rows):
        k = int(starts[-1, i])
        ramp = np.arange(k - 1, -1, -1, dtype=np.float64)
        values = project(ramp, rho[r] * l2[r], l2[r]) if k > 1 else np.full(k, l2[r])
        for c in range(len(inputs)):
            per_chunk[c][int(r)] = values[starts[c, i] : starts[c + 1, i]]
    return per_chunk


def _reduce(X, offsets, params, form, prior=None):
    """One pass's merged statistics: in this process when the chunks are
    concrete here (a local scheduler), else as a graph on the active scheduler."""
    local = local_values(X)
    if local is not None:
        args = [(form, a, off, params, prior) for a, off in zip(local, offsets, strict=True)]
        return map_reduce_local(_pass_stats, args, merge_stats)
    parts = [
        task(_pass_stats, form, args, off, params, prior)
        for args, off in zip(X, offsets, strict=True)
    ]
    return compute(reduce_tree(parts, merge_stats))[0]


def _step(rho, k, total, css):
    """(m, t, mean) of the shape on each support, and which supports are flat (t = 0)."""
    m = rho / k
    r2 = 1.0 - rho * rho / k
    flat = (r2 <= R2_FLAT) | (k == 1)
    t = np.where(flat, 0.0, np.sqrt(np.maximum(r2, 0.0) / np.where(css > 0, css, 1.0)))
    mean = np.where(flat, 0.0, total / k)
    return m, t, mean, flat


def _supports(stats, rho, rows, reduce, prior_rows):
    """Each row's final support and shape (lo, m, t, mean), one reduction per
    pass, and the rows whose support is all tied with a sparser target
    (``tied``; their lo is the tied value).

    A support S with shape u = m + t (y - mean) is the projection's when u > 0
    at S's least entry and u <= 0 at the largest entry outside S: u is then
    t max(y - tau, 0) with the targets' norms, and that tau is unique. A row
    starts *warm*, from the support of the prior shape where ``prior_rows``
    (the last projection's; the trials of a line search and the iterations
    of a run differ little, so that support is nearly the answer) and else
    from its positive entries; while its support is not the projection's,
    the next is {y : u(y) > 0} over all entries (when that shrinks the
    support these are the paper's passes from a superset, which end; a
    support that grows ``WARM_ROUNDS`` times, or a flat or tied one, sends
    the row to the paper's passes from all entries, ``y >= lo``). The answer
    does not depend on the start, except where an entry's shape is zero to
    rounding (a tie at the threshold: either support passes the settle test,
    and the start decides which): the shape is computed from the final
    support's statistics, the same whichever pass found it.
    """
    M = rho.size
    full = stats[:, :_WIDTH]
    start = stats[:, _WIDTH : 2 * _WIDTH]
    if prior_rows is not None:
        prior_rows = prior_rows & (stats[:, 2 * _WIDTH + _K] >= 2)
        start = np.where(prior_rows[:, None], stats[:, 2 * _WIDTH :], start)
    warm = rows & (start[:, _K] >= 2)
    cur = np.where(warm[:, None], start, full)
    lo, m, t, mean = np.zeros(M), np.zeros(M), np.zeros(M), np.zeros(M)
    active, growths = rows.copy(), np.zeros(M, dtype=int)
    ties = np.zeros(M, dtype=bool)
    while True:
        k, total, css, lo_s, hi, out = (cur[:, c].copy() for c in (_K, _SUM, _M2, _LO, _HI, _OUT))
        m_new, t_new, mean_new, flat = _step(rho, k, total, css)
        tied = active & ~flat & (lo_s == hi)
        restart = warm & active & (flat | tied | (growths >= WARM_ROUNDS))
        if np.any(restart):  # the paper's passes from all entries for these rows
            warm &= ~restart
            cur[restart] = full[restart]
            continue
        if np.any(tied):  # broken by index by the caller (module docstring)
            ties |= tied
            lo = np.where(tied, lo_s, lo)
            active &= ~tied
        m, t, mean = (np.where(active, a, b) for a, b in ((m_new, m), (t_new, t), (mean_new, mean)))
        lo = np.where(active, np.where(warm, -np.inf, lo_s), lo)
        keeps = m + t * (lo_s - mean) >= 0.0
        settled = flat | (keeps & (~warm | (m + t * (out - mean) <= 0.0)))
        active &= ~settled
        if not np.any(active):
            return lo, m, t, mean, ties
        new = reduce((lo, m, t, mean))
        growths += active & warm & (new[:, _K] > k)
        cur = np.where(active[:, None], new, cur)


class Projected(NamedTuple):
    """What :func:`project_chunked_rows` returns."""

    #: The projected rows (persisted), or None if a row was not finite.
    rows: ChunkedRows | None
    #: The value of ``extra``, if given.
    value: object
    #: Each row's final shape (m, t, mean), a ``prior`` for the next projection.
    shape: tuple | None


def project_chunked_rows(inputs, like, l1, l2, form=None, first=None, extra=None, prior=None):
    """Project every row of a chunked M x T array onto (L1, L2) = (l1, l2) (per row).

    ``inputs`` holds, per chunk, the delayed chunk (``form`` None) or the
    arguments of ``form``, which makes the chunk on the worker (the trial
    ``H - mu dH`` of :func:`trial`, which the passes after the first form
    entry by entry and never store). ``like`` is a :class:`ChunkedRows` with
    the layout and dtype. ``l1`` must lie in [l2, sqrt(T) l2] and l2 > 0 (the
    caller's checks). ``first``: the first pass's merged statistics, when the
    caller computed them with other work (:func:`chunk_stats` with ``params``
    None and the same ``prior``, merged by :func:`merge_stats`).
    ``extra(parts)``, if given, makes a delayed reduction of the projected
    chunks that is computed with them (one round trip; under a local
    scheduler ``extra`` may return the value itself). ``prior``: the
    ``shape`` of an earlier projection of rows like these, where the passes
    start (:func:`_supports`); it changes how many passes are made, not the
    answer.
    """
    offsets = like.offsets
    T = like.shape[1]
    stats = _reduce(inputs, offsets, None, form, prior) if first is None else first
    if np.any(stats[:, _BAD]):
        return Projected(None, None, None)
    arg = stats[:, _ARG].copy()
    k, total, css, lo = (stats[:, c] for c in (_K, _SUM, _M2, _LO))
    mean = total / k
    norm = np.sqrt(np.maximum(k * mean * mean + css, 0.0))
    feasible = (lo >= 0) & (np.abs(total - l1) <= FEASIBLE_RTOL * l1)
    feasible &= np.abs(norm - l2) <= FEASIBLE_RTOL * l2
    rho = np.minimum(np.maximum(l1 / l2, 1.0), np.sqrt(T))
    kind = np.where(feasible, 1, np.where(rho == 1.0, 2, 0))
    prior_rows = None if prior is None else prior[1] > 0
    if prior_rows is not None and stats.shape[1] < 3 * _WIDTH:
        raise ValueError("first holds no statistics of the prior's supports")
    lo, m, t, mean, ties = _supports(
        stats, rho, kind == 0, lambda p: _reduce(inputs, offsets, p, form), prior_rows
    )
    l2 = np.asarray(l2, dtype=np.float64)
    final = (lo, m, t, mean, l2, kind, arg)
    shape = (m, np.where((kind == 0) & ~ties, t, 0.0), mean)
    local = local_values(inputs)
    tie_values = _tie_values(inputs, local, form, lo, ties, rho, l2)
    if local is not None:  # a local scheduler: write the chunks here, no graph
        args = [
            (_write_chunk, form, a, off, final, like.dtype, tv)
            for a, off, tv in zip(local, offsets, tie_values, strict=True)
        ]
        projected = ChunkedRows(
            [held(x) for x in map_local(_formed, args)], like.widths, like.dtype, like.shape[0]
        )
        if extra is None:
            return Projected(projected, None, shape)
        value = extra(projected.parts)
        if isinstance(value, Delayed):
            value = compute(value)[0]
        return Projected(projected, value, shape)
    parts = [
        task(_formed, _write_chunk, form, args, off, final, like.dtype, tv)
        for args, off, tv in zip(inputs, offsets, tie_values, strict=True)
    ]
    if extra is None:
        return Projected(ChunkedRows.persisted(parts, like), None, shape)
    *parts, value = persist(*parts, extra(parts))
    rows = ChunkedRows(parts, like.widths, like.dtype, like.shape[0])
    return Projected(rows, compute(value)[0], shape)
