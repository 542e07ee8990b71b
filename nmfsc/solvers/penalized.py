"""Divergence NMF with penalty terms, the other solvers Hoyer (2004) compared
against: local NMF (Li et al. 2001, nmfpack's lnmf) and sparse NMF (Liu et al.
2003, nmfpack's snmf), exactly as SPEC.md restates the original MATLAB code.

Both keep the columns of W summing to 1 and use the quotient C = V / (W H)
without eps. All work on the normalised data V (max 1); see each function for
its update and objective.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from nmfsc._kernels import updates as _k
from nmfsc._parameters import check
from nmfsc.solvers._data import inner, total
from nmfsc.solvers._docs import DIVERGENCE_UNITS, document
from nmfsc.solvers._result import NMFResult
from nmfsc.solvers._settings import LoopOptions, LoopSettings, takes_loop_settings
from nmfsc.solvers.dispatch import run_solver
from nmfsc.solvers.standard import QuotientSteps

if TYPE_CHECKING:  # typing.Unpack is Python >= 3.11; only the type checker needs it
    from typing_extensions import Unpack

__all__ = ["local_nmf", "sparse_nmf"]


class UnitSumSteps(QuotientSteps):
    """Local and sparse NMF: columns of W start (and stay) summing to 1, and
    C = V / (W H) has no eps (as the original code)."""

    quotient_eps = 0.0

    def initialize(self, W, H):
        super().initialize(W, H)  # refuses all-zero columns of W and rows of H
        W = W.copy()
        _k.normalize_columns_to_unit_sum(W)
        return {"W": W, "H": H}


class LocalSteps(UnitSumSteps):
    """One iteration of local NMF (Li et al. 2001): H, then W, W's columns to sum 1."""

    name = "local_nmf"

    def __init__(self, data, n_components, alpha, beta):
        super().__init__(data, n_components)
        self.alpha = alpha
        self.beta = beta

    def penalty(self, W, H):
        return self.alpha * total(W.T @ W) - self.beta * inner(H, H)

    def step(self, state):
        W, H = state["W"].copy(), state["H"].copy()
        C = self.C  # one quotient per iteration, from the current iterate
        _k.sqrt_update(H, self.data.wtc(W, C))
        # D_ij = sum_k W_ik + sum_t H_jt, with the new H
        _k.outer_sum_update(W, self.data.cht(C, H), W.sum(axis=1), H.sum(axis=1))
        _k.normalize_columns_to_unit_sum(W)
        return {"W": W, "H": H}, self._evaluate(W, H), None


class LiuSparseSteps(UnitSumSteps):
    """One iteration of sparse NMF (Liu et al. 2003): H, then W, W's columns to sum 1."""

    name = "sparse_nmf"

    def __init__(self, data, n_components, alpha):
        super().__init__(data, n_components)
        self.alpha = alpha
        self.one_plus_alpha = np.full(n_components, 1.0 + alpha)

    def penalty(self, W, H):
        return self.alpha * total(H)

    def step(self, state):
        W, H = state["W"].copy(), state["H"].copy()
        # H <- H * (W^T C) / (1 + alpha), C = V / (W H) of the current iterate
        _k.outer_sum_update(H, self.data.wtc(W, self.C), self.one_plus_alpha, self.zeros_t)
        # W <- W * (C' H'^T) / (row sums of H'), C' = V / (W H') with the new H,
        # as nmfpack's snmf.m computes it again (its lnmf.m does not)
        self.data.quotient(W, H, self.quotient_eps, self.scratch)
        _k.outer_sum_update(W, self.data.cht(self.scratch, H), self.zeros_n, H.sum(axis=1))
        _k.normalize_columns_to_unit_sum(W)
        return {"W": W, "H": H}, self._evaluate(W, H), None


@document(DIVERGENCE_UNITS)
@takes_loop_settings
def local_nmf(
    V: ArrayLike,
    n_components: int,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    **loop: Unpack[LoopOptions],
) -> NMFResult:
    r"""Local NMF (Li et al. 2001), as in Hoyer's nmfpack.

    The columns of W start summing to 1. Each iteration, with the single
    quotient :math:`C = V \oslash (W H)` of the current iterate,

    .. math::

        H &\leftarrow \sqrt{H \odot (W^T C)}, \\
        W_{ij} &\leftarrow W_{ij} (C H^T)_{ij} / \Big(\textstyle\sum_k W_{ik}
                 + \sum_t H_{jt}\Big),

    (the new H in the second line), then the columns of W are rescaled to sum
    to 1. The objective recorded is

    .. math:: D(V \Vert W H) + \alpha \textstyle\sum (W^T W)
              - \beta \sum \operatorname{diag}(H H^T)

    on the normalised data (times ``max(V)``). ``alpha`` and ``beta`` change
    only this number, not the iterates (as in the original code), and the
    objective need not decrease monotonically.

    Parameters
    ----------
    %(data)s
    alpha, beta : float >= 0, default 1.0
        Weights of the objective's penalty terms.
    %(options)s

    Returns
    -------
    %(returns)s

    See Also
    --------
    nmf_divergence : The objective without the locality terms.
    sparse_nmf : The divergence objective with an L1 penalty on H.
    nmf_sc : Sparseness set as a constraint.
    locality : How local each learned basis image is.

    References
    ----------
    S. Z. Li, X. W. Hou, H. J. Zhang and Q. S. Cheng, "Learning spatially
    localized, parts-based representation", CVPR 2001.

    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004 (nmfpack's lnmf).

    Examples
    --------
    >>> import numpy as np
    >>> V = np.abs(np.random.default_rng(0).standard_normal((20, 30)))
    >>> from nmfsc import local_nmf
    >>> res = local_nmf(V, 3, random_state=0, tol=1e-4)
    >>> res.W.shape, res.H.shape, res.stop_reason
    ((20, 3), (3, 30), 'tol')
    >>> bool(np.allclose(res.W.sum(axis=0), V.max()))  # W's columns sum to 1, times max(V)
    True
    """
    settings = LoopSettings.from_keywords("local_nmf", loop)
    alpha = check("alpha", alpha)
    beta = check("beta", beta)

    params = {"alpha": alpha, "beta": beta}
    return run_solver("local_nmf", V, n_components, params=params, settings=settings)


@document(DIVERGENCE_UNITS)
@takes_loop_settings
def sparse_nmf(
    V: ArrayLike, n_components: int, *, alpha: float = 1.0, **loop: Unpack[LoopOptions]
) -> NMFResult:
    r"""Sparse NMF (Liu et al. 2003): divergence NMF with an L1 penalty on H.

    The columns of W start summing to 1. Each iteration, as nmfpack's snmf.m,

    .. math::

        H' &\leftarrow H \odot (W^T C) / (1 + \alpha),
              \quad C = V \oslash (W H), \\
        W_{ij} &\leftarrow W_{ij} (C' H'^T)_{ij} / \textstyle\sum_t H'_{jt},
              \quad C' = V \oslash (W H'),

    (the quotient computed again with the new H), then the columns of W are
    rescaled to sum to 1. The objective recorded is
    :math:`D(V \Vert W H) + \alpha \sum H` on the normalised data (times
    ``max(V)``).

    Parameters
    ----------
    %(data)s
    alpha : float >= 0, default 1.0
        Weight of the L1 penalty on H (the paper tried 1, 100 and 10000).
    %(options)s

    Returns
    -------
    %(returns)s

    See Also
    --------
    nmf_sc : Sparseness set as a constraint instead of a penalty weight.
    nmf_divergence : The objective without the penalty.
    local_nmf : The divergence objective with locality terms.

    References
    ----------
    W. Liu, N. Zheng and X. Lu, "Non-negative matrix factorization for visual
    coding", ICASSP 2003.

    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    Examples
    --------
    >>> import numpy as np
    >>> V = np.abs(np.random.default_rng(0).standard_normal((20, 30)))
    >>> from nmfsc import sparse_nmf
    >>> loose = sparse_nmf(V, 3, alpha=0.0, random_state=0, tol=1e-4)
    >>> tight = sparse_nmf(V, 3, alpha=10.0, random_state=0, tol=1e-4)
    >>> bool(tight.sparseness_H.mean() > loose.sparseness_H.mean())  # a larger alpha, a sparser H
    True
    """
    settings = LoopSettings.from_keywords("sparse_nmf", loop)
    alpha = check("alpha", alpha)

    return run_solver("sparse_nmf", V, n_components, params={"alpha": alpha}, settings=settings)
