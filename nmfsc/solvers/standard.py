"""Standard NMF (Lee & Seung 2001), the baseline of Hoyer (2004): the Euclidean
objective (nmfpack's nmfmse) and the divergence objective (nmfdiv), exactly as
SPEC.md restates the original MATLAB code.

All work on the normalised data V (max 1); see each function for its update
and objective. :class:`QuotientSteps` is also the base of the penalised
divergence solvers in :mod:`nmfsc.solvers.penalized`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from nmfsc._blocked import gram_rows, matmul_columns
from nmfsc._kernels import updates as _k
from nmfsc.observed import Observed
from nmfsc.solvers._data import inner
from nmfsc.solvers._docs import DIVERGENCE_UNITS, EUCLIDEAN_UNITS, document
from nmfsc.solvers._loop import Steps
from nmfsc.solvers._objective import (
    ColumnGram,
    SquaredErrorSteps,
    multiplicative_h_update,
    multiplicative_w_update,
    scale_rows_to_unit_l2,
)
from nmfsc.solvers._result import NMFResult
from nmfsc.solvers._settings import LoopOptions, LoopSettings, takes_loop_settings
from nmfsc.solvers._start import refuse_dead_components
from nmfsc.solvers.dispatch import run_solver

if TYPE_CHECKING:  # typing.Unpack is Python >= 3.11; only the type checker needs it
    from typing_extensions import Unpack

__all__ = ["QuotientSteps", "nmf_divergence", "nmf_euclidean"]

EPS = 1e-9


class EuclideanSteps(SquaredErrorSteps):
    """One iteration of Euclidean NMF: H, then W, then H's rows to unit norm."""

    name = "nmf_euclidean"

    def __init__(self, data, n_components):
        super().__init__(data, n_components)
        self.w_gram = ColumnGram()  # W^T W, computed once per W array

    def initialize(self, W, H):
        """The start as given, refused with an all-zero column of W or row of H
        (the multiplicative updates could never move it)."""
        refuse_dead_components(self.name, W, H)
        return super().initialize(W, H)

    def step(self, state):
        W0, H0 = state["W"], state["H"]
        # New arrays written by the kernels (the state is not modified); the
        # H update also leaves the squared row norms for the rescaling.
        H = np.empty_like(H0)
        row_ss = np.empty(H.shape[0])
        WtWH = matmul_columns(self.w_gram(W0), H0)
        multiplicative_h_update(H0, self.data.wtv(W0), WtWH, EPS, H, row_ss)
        HHt = gram_rows(H)
        W, cross = multiplicative_w_update(self.data, W0, H, HHt, EPS)  # and <V H^T, W>
        scale_rows_to_unit_l2(H, W, row_ss)
        # The objective of the new (W, H) from the W step's products, without
        # forming W H (see expanded_objective), with the W^T W of the rescaled
        # W that the next H step needs: rescaling W's columns by the row norms
        # n of H and H's rows by 1 / n leaves <V H^T, W> and <H H^T, W^T W>
        # unchanged. Exact when it is small.
        norms = np.sqrt(row_ss)
        norms[norms == 0.0] = 1.0  # a zero row of H was not rescaled
        quad = self.w_gram(W) * (1.0 / norms)[:, None] * (1.0 / norms)[None, :]
        energy = 0.5 * (self.vv - 2.0 * cross + inner(HHt, quad))
        return {"W": W, "H": H}, self.recorded(energy, W, H), None


# --------------------------------------------------------------------------
# Divergence-based solvers. The quotient C = V / (W H + eps) of the current
# iterate is computed with its objective (one pass over W H) at the end of each
# iteration and used by the next; a resumed run recomputes it from W and H.
# --------------------------------------------------------------------------
class QuotientSteps(Steps):
    """The iteration of a divergence-based solver: its objective D(V || W H)
    plus a penalty, evaluated together with the quotient C of the iterate."""

    objective_power = 1
    #: eps in C = V / (W H + eps)
    quotient_eps = EPS

    def __init__(self, data, n_components):
        super().__init__(data, n_components)
        N, T = data.shape
        self.C = data.new_quotient()
        self.scratch = data.new_quotient()
        self.zeros_n = np.zeros(N)
        self.zeros_m = np.zeros(n_components)
        self.zeros_t = np.zeros(T)

    def initialize(self, W, H):
        """The start as given, refused if a column of W or a row of H is all zero:
        the updates divide by those sums, so such a start can only give NaN."""
        refuse_dead_components(self.name, W, H)
        return super().initialize(W, H)

    def start(self, state):
        return self._evaluate(state["W"], state["H"])

    def _evaluate(self, W, H):
        """Objective of (W, H); leaves C = V / (W H + eps) in self.C."""
        divergence = self.data.divergence_and_quotient(W, H, self.quotient_eps, self.C)
        return divergence + self.penalty(W, H)

    def penalty(self, W, H):
        return 0.0


class DivergenceSteps(QuotientSteps):
    """One iteration of divergence NMF: W, then H, then H's rows to unit norm."""

    name = "nmf_divergence"

    def step(self, state):
        W, H = state["W"].copy(), state["H"].copy()
        # W <- W * (C H^T) / (row sums of H), C = V / (W H + eps) of the current iterate
        _k.outer_sum_update(W, self.data.cht(self.C, H), self.zeros_n, H.sum(axis=1))
        # H <- H * (W^T C') / (column sums of W), C' = V / (W' H + eps) with the new W
        self.data.quotient(W, H, EPS, self.scratch)
        _k.outer_sum_update(H, self.data.wtc(W, self.scratch), W.sum(axis=0), self.zeros_t)
        _k.normalize_rows_to_unit_l2(H, W)
        return {"W": W, "H": H}, self._evaluate(W, H), None


@document(EUCLIDEAN_UNITS, mask=True)
@takes_loop_settings
def nmf_euclidean(
    V: ArrayLike,
    n_components: int,
    *,
    mask: ArrayLike | str | Observed | None = None,
    **loop: Unpack[LoopOptions],
) -> NMFResult:
    r"""Standard NMF with the Euclidean objective (Lee & Seung 2001).

    Minimises :math:`E = \tfrac12 \lVert V - W H \rVert_F^2` over
    non-negative W (N x M) and H (M x T) with the multiplicative updates

    .. math::

        H &\leftarrow H \odot (W^T V) \oslash (W^T W H + 10^{-9}), \\
        W &\leftarrow W \odot (V H^T) \oslash (W H H^T + 10^{-9}),

    then every row of H is scaled to unit L2 norm and W's columns take the
    norms (W H unchanged). The objective history is
    :math:`\tfrac12 \lVert V - W H \rVert_F^2` of each iterate, computed
    from the W step's products :math:`V H^T` and :math:`H H^T` (no extra
    N x T product; relative error below about 1e-11) and exactly from
    :math:`W H` when it is below 1e-4 :math:`\lVert V \rVert_F^2`.

    Parameters
    ----------
    %(data)s
    %(options)s

    Returns
    -------
    %(returns)s

    See Also
    --------
    nmf_sc : The same objective with sparseness constraints.
    nmf_divergence : Lee and Seung's other objective.
    sklearn.decomposition.NMF : scikit-learn's NMF (samples as rows).

    References
    ----------
    D. D. Lee and H. S. Seung, "Algorithms for non-negative matrix
    factorization", NIPS 13, 2001.

    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004 (nmfpack's nmfmse).

    Examples
    --------
    >>> import numpy as np
    >>> V = np.abs(np.random.default_rng(0).standard_normal((20, 30)))
    >>> from nmfsc import nmf_euclidean
    >>> res = nmf_euclidean(V, 3, random_state=0, tol=1e-4)
    >>> res.W.shape, res.H.shape, res.stop_reason
    ((20, 3), (3, 30), 'tol')
    >>> bool(np.all(np.diff(res.objective) <= 1e-12 * res.objective[0]))  # never increases
    True

    With entries missing, ``mask`` fits the observed ones only (a hidden entry
    may hold anything, NaN included):

    >>> seen = np.random.default_rng(1).random(V.shape) > 0.2
    >>> res = nmf_euclidean(np.where(seen, V, np.nan), 3, mask=seen, random_state=0, tol=1e-4)
    >>> bool(np.isfinite(res.W @ res.H).all())  # W H predicts the hidden entries too
    True
    """
    settings = LoopSettings.from_keywords("nmf_euclidean", loop)
    return run_solver("nmf_euclidean", V, n_components, params={}, settings=settings, mask=mask)


@document(DIVERGENCE_UNITS)
@takes_loop_settings
def nmf_divergence(V: ArrayLike, n_components: int, **loop: Unpack[LoopOptions]) -> NMFResult:
    r"""Standard NMF with the divergence objective (Lee & Seung 2001).

    Minimises

    .. math:: D(V \Vert W H) = \sum_{it} V_{it} \log \frac{V_{it}}{(WH)_{it}}
              - V_{it} + (WH)_{it}

    (terms with :math:`V_{it} = 0` contribute :math:`(WH)_{it}`) by, with
    :math:`C = V \oslash (W H + 10^{-9})` recomputed before each half-step,

    .. math::

        W_{ij} &\leftarrow W_{ij} (C H^T)_{ij} / \textstyle\sum_t H_{jt}, \\
        H_{jt} &\leftarrow H_{jt} (W^T C)_{jt} / \textstyle\sum_i W_{ij},

    then every row of H is scaled to unit L2 norm and W's columns take the norms.

    Parameters
    ----------
    %(data)s
    %(options)s

    Returns
    -------
    %(returns)s

    See Also
    --------
    nmf_euclidean : Lee and Seung's squared-error objective.
    sparse_nmf : This objective with an L1 penalty on H.
    local_nmf : This objective with Li et al.'s locality terms.

    References
    ----------
    D. D. Lee and H. S. Seung, "Algorithms for non-negative matrix
    factorization", NIPS 13, 2001.

    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004 (nmfpack's nmfdiv).

    Examples
    --------
    >>> import numpy as np
    >>> V = np.abs(np.random.default_rng(0).standard_normal((20, 30)))
    >>> from nmfsc import nmf_divergence
    >>> res = nmf_divergence(V, 3, random_state=0, tol=1e-4)
    >>> res.W.shape, res.H.shape, res.stop_reason
    ((20, 3), (3, 30), 'tol')
    >>> bool(res.objective[-1] < res.objective[0])  # D(V || W H) fell from the start
    True
    """
    settings = LoopSettings.from_keywords("nmf_divergence", loop)
    return run_solver("nmf_divergence", V, n_components, params={}, settings=settings)
