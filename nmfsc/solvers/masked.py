r"""NMF of partly observed data: ``nmf_sc(V, k, mask=...)`` and
``nmf_euclidean(V, k, mask=...)``.

The objective is the squared error over the observed entries,

.. math:: E(W, H) = \tfrac12 \lVert \Omega \odot (\tilde V - W H) \rVert_F^2,

with :math:`\Omega` the mask (1 where V was observed, 0 elsewhere) and
:math:`\tilde V = V / s`, s the largest *observed* entry; the unobserved
entries of V are never read. The paper's algorithm (:mod:`nmfsc.solvers.hoyer`)
is generalised exactly:

* the start is nmf_sc's (rows of H to unit L2 norm, the constrained factors
  projected; :meth:`HoyerSteps.initialize
  <nmfsc.solvers.hoyer.HoyerSteps.initialize>`);
* a constrained H takes the projected gradient step of E,

  .. math:: H' = P_H\big(H - \mu_H\, W^T (\Omega \odot (W H - \tilde V))\big),

  accepted when :math:`E(W, H') \le E(W, H)`, else :math:`\mu_H` is halved and
  the step retried; :math:`\mu_H \leftarrow 1.2 \mu_H` after acceptance. A
  constrained W likewise with the gradient
  :math:`(\Omega \odot (W H - \tilde V)) H^T`, each column of the trial
  projected at its own L2 norm;
* an unconstrained factor takes the weighted multiplicative update

  .. math::

      H &\leftarrow H \odot (W^T (\Omega \odot \tilde V)) \oslash
           (W^T (\Omega \odot (W H)) + 10^{-9}), \\
      W &\leftarrow W \odot ((\Omega \odot \tilde V) H^T) \oslash
           ((\Omega \odot (W H)) H^T + 10^{-9}),

  the H update followed, as in nmf_sc, by the rows of H scaled to unit L2
  norm and the columns of W multiplied by the old norms (W H unchanged).

Euclidean NMF (:class:`MaskedEuclideanSteps`) takes the two weighted
multiplicative updates, H then W, then rescales H's rows.

E is evaluated exactly (the Gram expansion that the unmasked solvers use
does not exist with a mask), and every step is computed from the residual
:math:`R = \Omega \odot (W H) - \tilde V`: the gradients are :math:`W^T R`
and :math:`R H^T`, a multiplicative denominator is its numerator plus
:math:`W^T R` (or :math:`R H^T`), as :math:`\Omega \odot (W H) = R + \tilde V`,
and :math:`E = \tfrac12 \lVert R \rVert_F^2`. R is formed in one pass with
E (:meth:`MaskedDense.residual_energy
<nmfsc.solvers._masked_data.MaskedDense.residual_energy>`), kept for the
(W, H) it belongs to (:class:`ObservedResiduals`), and always from the
state's own arrays, so that a resumed run repeats the uninterrupted one bit
for bit. Per iteration this costs, for each factor, one product for the
gradient (or two for a multiplicative update) and one R per trial step, each
O(N T M) for dense data and O(nnz M) for ``mask="stored"``, where a CSR V's
multiplicative W update and its new R are one pass. The history is
non-increasing up to rounding for nmf_sc; the multiplicative updates do not
increase E either (Lee & Seung's argument holds for weighted least squares).
"""

from __future__ import annotations

import numpy as np

from nmfsc._kernels import updates as _k
from nmfsc.solvers._objective import SquaredErrorSteps
from nmfsc.solvers._start import refuse_dead_components
from nmfsc.solvers.hoyer import EPS, MU_GROWTH, MU_MIN, HoyerSteps, support_sizes
from nmfsc.solvers.standard import EuclideanSteps

__all__ = [
    "MaskedCoefficientSteps",
    "MaskedEuclideanSteps",
    "MaskedHoyerSteps",
]


class ObservedResiduals:
    """:math:`R = \\Omega \\odot (W H) - \\tilde V` and E of the last (W, H) pair
    kept, returned while the same array objects are asked for again (the
    solvers never modify their state's arrays in place).

    For dense data R is N x T, and two such buffers take turns: the kept R,
    and a spare into which the next R (a new pair's, or a line-search
    trial's) is written; keeping a trial's R makes the old one the spare. So
    no N x T array is allocated per product, and an R handed out stays
    valid until the second product after it."""

    def __init__(self, data):
        self.data = data
        self._last = None
        self._spare = None

    def keep(self, W, H, R, energy):
        """Remember ``(R, E)`` as (W, H)'s; when R is the spare (a trial's),
        the R kept before becomes the spare (none before the first)."""
        if self._spare is R:
            self._spare = None if self._last is None else self._last[2]
        self._last = (W, H, R, energy)

    def trial(self, W, H):
        """``(R, E)`` of (W, H) written into the spare buffer, not kept."""
        R, energy = self.data.residual_energy(W, H, out=self._spare)
        self._spare = R
        return R, energy

    def __call__(self, W, H):
        """``(R, E)`` of (W, H), computed and kept unless it is the pair kept."""
        last = self._last
        if last is not None and last[0] is W and last[1] is H:
            return last[2], last[3]
        R, energy = self.trial(W, H)
        self.keep(W, H, R, energy)
        return R, energy


def multiplicative(X, numerator, denominator):
    """``X * numerator / (denominator + 1e-9)`` (a new array) and its rows' sums of squares.

    The denominator, W^T (mask * W H) for H, is a sum of non-negative
    terms, but it arrives as W^T (mask * V) + W^T R, whose rounding can leave
    a tiny negative where the true value is 0; it is clamped at 0 (in place)
    so that X stays non-negative."""
    np.maximum(denominator, 0.0, out=denominator)
    out = np.empty_like(X)
    row_ss = np.empty(X.shape[0])
    _k.multiplicative_update_into(X, numerator, denominator, EPS, out, row_ss)
    return out, row_ss


class MaskedHoyerSteps(HoyerSteps):
    """One iteration of masked nmf_sc: the H step, then the W step (module
    docstring). The start, the projections and the state (W, H, mu_W, mu_H)
    are nmf_sc's."""

    def __init__(self, data, n_components, sparseness_w, sparseness_h):
        super().__init__(data, n_components, sparseness_w, sparseness_h)
        self.observed = ObservedResiduals(data)

    def start(self, state):
        return self.objective(state["W"], state["H"])

    def objective(self, W, H):
        return self.observed(W, H)[1]

    def step(self, state):
        W, H = state["W"], state["H"]
        mu_w, mu_h = float(state["mu_W"]), float(state["mu_H"])
        if self.proj_h is None:
            W, H = self._h_multiplicative(W, H)
        else:
            H_new, mu_h = self._h_projected(W, H, mu_h)
            if H_new is None:  # no descent step: converged; only mu_H changed
                return {**state, "mu_H": mu_h}, None, "step_size"
            H = H_new
        reason = None
        if self.proj_w is None:
            W = self._w_multiplicative(W, H)
        else:
            W_new, mu_w = self._w_projected(W, H, mu_w)
            if W_new is None:
                reason = "step_size"  # H has moved; W stays
            else:
                W = W_new
        new = {"W": W, "H": H, "mu_W": mu_w, "mu_H": mu_h}
        return new, self.objective(W, H), reason

    def _h_multiplicative(self, W, H, rescale=True):
        H_new, row_ss = multiplicative(H, *self.data.h_terms(W, self.observed(W, H)[0]))
        W = W.copy()
        _k.scale_rows_to_unit_l2(H_new, W, row_ss)
        return W, H_new

    def _w_multiplicative(self, W, H, HHt=None):
        fused = self.data.w_update_residual(W, H, EPS)  # mask="stored": one pass
        if fused is None:
            return multiplicative(W, *self.data.w_terms(H, self.observed(W, H)[0]))[0]
        W_new, R, energy = fused
        self.observed.keep(W_new, H, R, energy)  # the objective's, at no further pass
        return W_new

    def _h_projected(self, W, H, mu):
        R, before = self.observed(W, H)
        dH = self.data.left(W, R)

        def evaluate(trial):  # the trial is the projector's buffer, taken if accepted
            return W, trial, *self.observed.trial(W, trial)

        return self._search(self.proj_h, H, dH, mu, before, evaluate, own_norm=False, pick=1)

    def _w_projected(self, W, H, mu):
        """On C = W^T, the projection's layout (one column of W per row)."""
        R, before = self.observed(W, H)
        dC = self.data.right_rows(H, R)

        def evaluate(trial):
            # A copy whatever M (np.ascontiguousarray gives a view for M = 1): W
            # must not be the projector's buffer, which the next W step's trials
            # overwrite.
            W_trial = np.array(trial.T, order="C")
            return W_trial, H, *self.observed.trial(W_trial, H)

        C = np.ascontiguousarray(W.T)
        return self._search(self.proj_w, C, dC, mu, before, evaluate, own_norm=True, pick=0)

    def _search(self, projector, X, D, mu, before, evaluate, own_norm, pick):
        """nmf_sc's step rule with the masked E: the trial ``P(X - mu D)`` is
        accepted when its E is at most ``before``, else mu is halved. Returns
        the new factor (``pick``: 0 for W, 1 for H) and the next mu (mu * 1.2);
        or None and mu when mu falls below 1e-200 (no descent step)."""
        guide = support_sizes(X)
        while True:
            projected = projector.step_rows(X, D, mu, guide, own_norm)
            if projected is not None:
                W, H, R, after = evaluate(projected)
                if after <= before:
                    if pick == 1:
                        H = projector.take()  # the same array: the buffer handed over
                    self.observed.keep(W, H, R, after)
                    return (W, H)[pick], mu * MU_GROWTH
            mu /= 2.0
            if not MU_MIN <= mu < np.inf:  # also ends the loop for a NaN or infinite mu
                return None, mu


class MaskedCoefficientSteps(MaskedHoyerSteps):
    """The masked H step alone, W fixed (``fit_coefficients(..., mask=...)``,
    what ``SparseNMF(missing_values=np.nan).transform`` runs): the projected
    gradient step with s_H, else the weighted multiplicative update without
    the row rescaling (which would change W); W is used as given."""

    name = "nmf_sc (coefficients, W fixed)"
    measures_stationarity = False  # W is given, not fitted

    def __init__(self, data, n_components, sparseness_h):
        super().__init__(data, n_components, None, sparseness_h)

    def refuse_dead(self, W, H):
        refuse_dead_components(self.name, None, H if self.proj_h is None else None)

    def step(self, state):
        W, H = state["W"], state["H"]
        mu_h = float(state["mu_H"])
        if self.proj_h is None:
            H, _ = multiplicative(H, *self.data.h_terms(W, self.observed(W, H)[0]))
        else:
            H, mu_h = self._h_projected(W, H, mu_h)
            if H is None:
                return {**state, "mu_H": mu_h}, None, "step_size"
        new = {"W": W, "H": H, "mu_W": state["mu_W"], "mu_H": mu_h}
        return new, self.objective(W, H), None


class MaskedEuclideanSteps(SquaredErrorSteps):
    """One iteration of masked Euclidean NMF: H, then W, then H's rows to unit norm."""

    name = EuclideanSteps.name

    def __init__(self, data, n_components):
        super().__init__(data, n_components)
        self.observed = ObservedResiduals(data)

    def initialize(self, W, H):
        refuse_dead_components(self.name, W, H)
        return {"W": W, "H": H}

    def start(self, state):
        return self.objective(state["W"], state["H"])

    def objective(self, W, H):
        return self.observed(W, H)[1]

    def step(self, state):
        W0, H0 = state["W"], state["H"]
        data = self.data
        H, row_ss = multiplicative(H0, *data.h_terms(W0, self.observed(W0, H0)[0]))
        W, _ = multiplicative(W0, *data.w_terms(H, self.observed.trial(W0, H)[0]))
        _k.scale_rows_to_unit_l2(H, W, row_ss)
        return {"W": W, "H": H}, self.objective(W, H), None
