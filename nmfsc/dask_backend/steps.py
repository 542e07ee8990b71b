r"""The iterations of nmf_sc and nmf_euclidean with H chunked like V's columns.

They are the in-memory iterations (:class:`nmfsc.solvers.hoyer.HoyerSteps`,
nmf_euclidean's multiplicative updates) with every operation on H done chunk
by chunk and every sum over samples done as a tree reduction:

- the H step's :math:`W^T V` and the new H are per chunk; the energy of a
  trial, :math:`\tfrac12(\lVert V\rVert^2 - 2\langle W^T V, H'\rangle +
  \langle W^T W, H' H'^T\rangle)`, needs :math:`\langle W^T V, H'\rangle` and
  :math:`H' H'^T`: one reduction of 1 + M^2 numbers per chunk; the projection
  of H's rows is :func:`nmfsc.dask_backend.chunked_projection.project_chunked_rows`;
- the W step needs :math:`V H^T` and :math:`H H^T` (one reduction of
  (N + M) M numbers per chunk) and then runs on the client exactly as in
  memory (the W step's code is inherited).

The step sizes, the acceptance test and the recorded objective are those of
the in-memory solver, so the iterates agree with it to rounding.
"""

from __future__ import annotations

from operator import getitem

import numpy as np

from nmfsc.dask_backend.chunked import (
    ChunkedRows,
    add_all,
    as_delayed,
    compute,
    held,
    inner_and_gram_chunk,
    local_values,
    map_reduce_local,
    multiplicative_h_chunk,
    persist,
    reduce_tree,
    task,
    wtv_chunk,
)
from nmfsc.dask_backend.chunked_projection import (
    chunk_stats,
    merge_stats,
    project_chunked_rows,
    trial,
)
from nmfsc.solvers.framework import (
    ColumnGram,
    SquaredErrorSteps,
    inner,
    multiplicative_w_update,
)
from nmfsc.solvers.hoyer import EPS, MU_GROWTH, MU_MIN, HoyerSteps
from nmfsc.solvers.standard import EuclideanSteps

__all__ = ["DaskEuclideanSteps", "DaskHoyerSteps"]


def _divide_rows(h, norms):
    return h / norms[:, None]


def multiplicative_h(data, W, H, WtW):
    """Lee & Seung's H update chunk by chunk; the new H and its rows' squared norms."""
    Wd = as_delayed(W, "W")
    made = [
        task(multiplicative_h_chunk, v, h, Wd, WtW, data.scale, EPS)
        for v, h in zip(data.parts, H.parts, strict=True)
    ]
    row_ss = reduce_tree([task(getitem, m, 1) for m in made])
    if local_values(H.parts) is not None:  # a local scheduler: one call, kept here
        *made, row_ss = compute(*made, row_ss)
        return ChunkedRows([held(m[0]) for m in made], H.widths, H.dtype, H.shape[0]), row_ss
    *made, row_ss = persist(*made, row_ss)
    H_new = ChunkedRows(
        persist(*[task(getitem, m, 0) for m in made]), H.widths, H.dtype, H.shape[0]
    )
    return H_new, compute(row_ss)[0]


def rescale_rows(H, W, row_ss):
    """Rows of H to unit L2 norm, W's columns taking the norms (zero rows kept)."""
    norms = np.sqrt(row_ss)
    norms[norms == 0.0] = 1.0
    return H.map(_divide_rows, norms), W * norms[None, :]


class DaskHoyerSteps(HoyerSteps):
    """nmf_sc's iteration on a :class:`~nmfsc.dask_backend.chunked.DaskData`."""

    def __init__(self, data, n_components, sparseness_w, sparseness_h):
        super().__init__(data, n_components, sparseness_w, sparseness_h)
        #: The last projection of H's rows' shape per row: where the next starts
        #: (it changes the number of passes, not the answer; none after a resume).
        self.h_shape = None

    def initialize(self, W, H):
        """The in-memory start (on the client, the same bits), then H split into chunks."""
        state = super().initialize(W, H)
        self.proj_h_client = None  # the in-memory projector's M x T buffers are not needed
        return {**state, "H": self.data.split(state["H"])}

    def h_multiplicative(self, W, H, rescale=True):
        WtW = self.w_gram(W)
        H_new, row_ss = multiplicative_h(self.data, W, H, WtW)
        if rescale:
            H_new, W = rescale_rows(H_new, W, row_ss)
        return W, H_new

    def w_multiplicative(self, W, H, HHt=None):
        if HHt is None:
            HHt = self.data.vht_and_gram(H)[1]
        return super().w_multiplicative(W, H, HHt)

    def w_projected(self, W, H, mu, HHt=None):
        if HHt is None:
            HHt = self.data.vht_and_gram(H)[1]
        return super().w_projected(W, H, mu, HHt)

    def h_projected(self, W, H, mu):
        """The projected gradient H step (in-memory: :class:`HoyerSteps`), chunk by chunk.

        One round trip starts it: per chunk W^T V_c and dH_c (kept), the
        energy terms of H_c, and the first projection pass's statistics of the
        first trial. Each trial then costs its projection passes and one round
        trip that writes the projected chunks and reduces their energy terms.
        """
        WtW = self.w_gram(W)
        WtV, dH, (cross, quad), first = h_step_start(self.data, W, H, WtW, mu, self.h_shape)
        before = 0.5 * (self.vv - 2.0 * cross + inner(WtW, quad))
        l2 = np.ones(H.shape[0])
        l1 = self.proj_h.l1_unit * l2

        def energy_terms(parts):
            local = local_values(list(zip(WtV, parts, strict=True)))
            if local is not None:
                return map_reduce_local(inner_and_gram_chunk, local, add_all)
            pairs = [task(inner_and_gram_chunk, a, x) for a, x in zip(WtV, parts, strict=True)]
            return reduce_tree(pairs)

        while True:
            inputs = [(h, d, mu) for h, d in zip(H.parts, dH, strict=True)]
            projected, terms, shape = project_chunked_rows(
                inputs, H, l1, l2, form=trial, first=first, extra=energy_terms, prior=self.h_shape
            )
            first = None
            if projected is not None:
                after = 0.5 * (self.vv - 2.0 * float(terms[0][0]) + inner(WtW, terms[1]))
                if after <= before:
                    self.h_shape = shape  # an accepted trial: like the next iteration's
                    return projected, mu * MU_GROWTH, after, terms[1]
            mu /= 2.0
            if not MU_MIN <= mu < np.inf:  # also ends the loop for a NaN or infinite mu
                return None, mu, before, None


def _h_start_chunk(v, h, W, WtW, scale, mu, offset, prior):
    a = wtv_chunk(v, W, scale)
    d = WtW @ h - a
    terms = inner_and_gram_chunk(a, h)
    return a, d, terms, chunk_stats(trial(h, d, mu), offset, None, prior)


def h_step_start(data, W, H, WtW, mu, prior=None):
    """Per chunk W^T V_c and dH_c = W^T W H_c - W^T V_c (kept where they are made),
    and, reduced, (<W^T V, H>, H H^T) and the first trial's first-pass statistics
    (with those of ``prior``'s supports: :func:`project_chunked_rows`)."""
    Wd, WtWd = as_delayed(W, "W"), as_delayed(WtW, "WtW")
    made = [
        task(_h_start_chunk, v, h, Wd, WtWd, data.scale, mu, off, prior)
        for v, h, off in zip(data.parts, H.parts, H.offsets, strict=True)
    ]
    terms = reduce_tree([task(getitem, m, 2) for m in made])
    stats = reduce_tree([task(getitem, m, 3) for m in made], merge_stats)
    if local_values(H.parts) is not None:  # a local scheduler: one call, kept here
        *made, terms, stats = compute(*made, terms, stats)
        WtV, dH = [held(m[0]) for m in made], [held(m[1]) for m in made]
    else:
        *made, terms, stats = persist(*made, terms, stats)
        kept = persist(*[task(getitem, m, i) for i in (0, 1) for m in made])
        WtV, dH = list(kept[: len(made)]), list(kept[len(made) :])
        terms, stats = compute(terms, stats)
    cross, quad = terms
    return WtV, dH, (float(cross[0]), quad), stats


class DaskEuclideanSteps(SquaredErrorSteps):
    """nmf_euclidean's iteration (H, then W, then H's rows to unit norm), chunked."""

    name = EuclideanSteps.name

    def __init__(self, data, n_components):
        super().__init__(data, n_components)
        self.w_gram = ColumnGram()

    def initialize(self, W, H):
        return {"W": W, "H": self.data.split(H)}

    def step(self, state):
        W0, H0 = state["W"], state["H"]
        H, row_ss = multiplicative_h(self.data, W0, H0, self.w_gram(W0))
        HHt = self.data.vht_and_gram(H)[1]  # V H^T is kept for the W update's vht_blocks
        W, cross = multiplicative_w_update(self.data, W0, H, HHt, EPS)
        norms = np.sqrt(row_ss)
        norms[norms == 0.0] = 1.0
        H = H.map(_divide_rows, norms)
        W = W * norms[None, :]
        quad = self.w_gram(W) * (1.0 / norms)[:, None] * (1.0 / norms)[None, :]
        energy = 0.5 * (self.vv - 2.0 * cross + inner(HHt, quad))
        return {"W": W, "H": H}, self.recorded(energy, W, H), None
