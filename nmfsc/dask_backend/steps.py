r"""The iterations of nmf_sc and nmf_euclidean with H chunked like V's columns.

They are the in-memory iterations (:class:`nmfsc.solvers.hoyer.HoyerSteps`,
nmf_euclidean's multiplicative updates) with every operation on H done chunk
by chunk and every sum over samples done as a tree reduction:

- the H step's :math:`W^T V` and the new H are per chunk; the energy of a
  trial, :math:`\tfrac12(\lVert V\rVert^2 - 2\langle W^T V, H'\rangle +
  \langle W^T W, H' H'^T\rangle)`, needs :math:`\langle W^T V, H'\rangle` and
  :math:`H' H'^T`: one reduction of 1 + M^2 numbers per chunk; the projection
  of H's rows is :func:`nmfsc.dask_backend.projection.project_chunked_rows`;
- the W step needs :math:`V H^T` and :math:`H H^T` (one reduction of
  (N + M) M numbers per chunk) and then runs on the client exactly as in
  memory (the W step's code is inherited).

The step sizes, the acceptance test and the recorded objective are those of
the in-memory solver, so the iterates agree with it to rounding.
"""

from __future__ import annotations

import dask
import numpy as np
from dask import delayed

from nmfsc.dask_backend.chunked import (
    ChunkedRows,
    as_delayed,
    inner_and_gram,
    multiplicative_h_chunk,
    task,
)
from nmfsc.dask_backend.projection import project_chunked_rows
from nmfsc.solvers._data import inner
from nmfsc.solvers._objective import ColumnGram, SquaredErrorSteps, multiplicative_w_update
from nmfsc.solvers.hoyer import EPS, MU_GROWTH, MU_MIN, HoyerSteps

__all__ = ["DaskEuclideanSteps", "DaskHoyerSteps"]


def _trial(h, dh, mu):
    """H - mu dH as the in-memory step forms it (mu dH first, then the difference)."""
    trial = np.multiply(dh, mu)
    np.subtract(h, trial, out=trial)
    return np.ascontiguousarray(trial)


def _gradient(h, a, WtW):
    return WtW @ h - a


def _divide_rows(h, norms):
    return h / norms[:, None]


def multiplicative_h(data, W, H, WtW):
    """Lee & Seung's H update chunk by chunk; the new H and its rows' squared norms."""
    Wd = as_delayed(W, "W")
    update = delayed(multiplicative_h_chunk, pure=False, nout=2)
    pairs = [
        update(v, h, Wd, WtW, data.scale, EPS) for v, h in zip(data.parts, H.parts, strict=True)
    ]
    H_new = ChunkedRows.persisted([p[0] for p in pairs], H)
    row_ss = np.sum(np.stack(dask.compute(*[p[1] for p in pairs])), axis=0)
    return H_new, row_ss


def rescale_rows(H, W, row_ss):
    """Rows of H to unit L2 norm, W's columns taking the norms (zero rows kept)."""
    norms = np.sqrt(row_ss)
    norms[norms == 0.0] = 1.0
    return H.map(_divide_rows, norms), W * norms[None, :]


class DaskHoyerSteps(HoyerSteps):
    """nmf_sc's iteration on a :class:`~nmfsc.dask_backend.chunked.DaskData`."""

    def initialize(self, W, H):
        """The in-memory start (on the client, the same bits), then H split into chunks."""
        state = super().initialize(W, H)
        self.proj_h_client = None  # the in-memory projector's M x T buffers are not needed
        return {**state, "H": self.data.split(state["H"])}

    def _h_multiplicative(self, W, H, rescale=True):
        WtW = self._w_gram(W)
        H_new, row_ss = multiplicative_h(self.data, W, H, WtW)
        if rescale:
            H_new, W = rescale_rows(H_new, W, row_ss)
        return W, H_new

    def _w_multiplicative(self, W, H, HHt=None):
        if HHt is None:
            HHt = self.data.vht_and_gram(H)[1]
        return super()._w_multiplicative(W, H, HHt)

    def _w_projected(self, W, H, mu, HHt=None):
        if HHt is None:
            HHt = self.data.vht_and_gram(H)[1]
        return super()._w_projected(W, H, mu, HHt)

    def _h_projected(self, W, H, mu):
        """The projected gradient H step (in-memory: :class:`HoyerSteps`), chunk by chunk."""
        WtV = self.data.wtv(W)
        WtW = self._w_gram(W)

        def energy(X):
            cross, quad = inner_and_gram(WtV, X)
            return 0.5 * (self.vv - 2.0 * cross + inner(WtW, quad)), quad

        before, _ = energy(H)
        WtWd = as_delayed(WtW, "WtW")
        dH = ChunkedRows.persisted(
            [task(_gradient, h, a, WtWd) for h, a in zip(H.parts, WtV.parts, strict=True)], H
        )
        M = H.shape[0]
        l2 = np.ones(M)
        l1 = self.proj_h.l1_unit * l2
        while True:
            inputs = [(h, d, mu) for h, d in zip(H.parts, dH.parts, strict=True)]
            projected = project_chunked_rows(inputs, H, l1, l2, form=_trial)
            if projected is not None:
                after, quad = energy(projected)
                if after <= before:
                    return projected, mu * MU_GROWTH, after, quad
            mu /= 2.0
            if not MU_MIN <= mu < np.inf:  # also ends the loop for a NaN or infinite mu
                return None, mu, before, None


class DaskEuclideanSteps(SquaredErrorSteps):
    """nmf_euclidean's iteration (H, then W, then H's rows to unit norm), chunked."""

    name = "nmf_euclidean"

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
