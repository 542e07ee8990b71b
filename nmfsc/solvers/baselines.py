"""The solvers Hoyer (2004) compared against: standard NMF (Euclidean and
divergence, Lee & Seung 2001), local NMF (Li et al. 2001) and sparse NMF
(Liu et al. 2003), exactly as SPEC.md restates the original MATLAB code.

All work on the normalised data V (max 1); see each function for its update
and objective.
"""

from __future__ import annotations

import numpy as np

from nmfsc._kernels import updates as _k
from nmfsc.solvers._common import EXACT_BELOW, ColumnGram, check_nonneg_real
from nmfsc.solvers._docs import DIVERGENCE_UNITS, EUCLIDEAN_UNITS, document
from nmfsc.solvers._loop import Steps, solve

__all__ = ["local_nmf", "nmf_divergence", "nmf_euclidean", "sparse_nmf"]

EPS = 1e-9


def _run(make_steps, V, n_components, solver_params, options):
    return solve(make_steps, V, n_components, solver_params=solver_params, **options)


# --------------------------------------------------------------------------
# Euclidean
# --------------------------------------------------------------------------
class EuclideanSteps(Steps):
    name = "nmf_euclidean"
    objective_power = 2

    def __init__(self, V, n_components):
        super().__init__(V, n_components)
        self.WH = np.empty_like(V)
        self.vv = float(np.vdot(V, V))
        self.w_gram = ColumnGram()  # W^T W, computed once per W array

    def start(self, state):
        return self._objective(state["W"], state["H"])

    def _objective(self, W, H):
        np.matmul(W, H, out=self.WH)
        return _k.half_squared_residual(self.V, self.WH)

    def step(self, state):
        W0, H0 = state["W"], state["H"]
        # New arrays written by the kernels (the state is not modified); the
        # H update also leaves the squared row norms for the rescaling.
        H, W = np.empty_like(H0), np.empty_like(W0)
        row_ss, unused = np.empty(H.shape[0]), np.empty(W.shape[0])
        _k.multiplicative_update_into(H0, W0.T @ self.V, self.w_gram(W0) @ H0, EPS, H, row_ss)
        VHt, HHt = self.V @ H.T, H @ H.T
        _k.multiplicative_update_into(W0, VHt, W0 @ HHt, EPS, W, unused)
        cross = float(np.vdot(VHt, W))
        _k.scale_rows_to_unit_l2(H, W, row_ss)
        # The objective of the new (W, H) from the W step's products, without
        # forming W H (see expanded_objective), with the W^T W of the rescaled
        # W that the next H step needs: rescaling W's columns by the row norms
        # n of H and H's rows by 1 / n leaves <V H^T, W> and <H H^T, W^T W>
        # unchanged. Exact when it is small.
        norms = np.sqrt(row_ss)
        norms[norms == 0.0] = 1.0  # a zero row of H was not rescaled
        quad = self.w_gram(W) * (1.0 / norms)[:, None] * (1.0 / norms)[None, :]
        objective = 0.5 * (self.vv - 2.0 * cross + float(np.vdot(HHt, quad)))
        if not objective >= EXACT_BELOW * self.vv:
            objective = self._objective(W, H)
        return {"W": W, "H": H}, objective, None


# --------------------------------------------------------------------------
# Divergence-based solvers. The quotient C = V / (W H + eps) of the current
# iterate is computed with its objective (one pass over W H) at the end of each
# iteration and used by the next; a resumed run recomputes it from W and H.
# --------------------------------------------------------------------------
class _DivergenceSteps(Steps):
    objective_power = 1
    #: eps in C = V / (W H + eps)
    quotient_eps = EPS

    def __init__(self, V, n_components):
        super().__init__(V, n_components)
        N, T = V.shape
        self.WH = np.empty_like(V)
        self.C = np.empty_like(V)
        self.scratch = np.empty_like(V)
        self.zeros_n = np.zeros(N)
        self.zeros_m = np.zeros(n_components)
        self.zeros_t = np.zeros(T)

    def start(self, state):
        return self._evaluate(state["W"], state["H"])

    def _evaluate(self, W, H):
        """Objective of (W, H); leaves C = V / (W H + eps) in self.C."""
        np.matmul(W, H, out=self.WH)
        divergence = _k.divergence_and_quotient(self.V, self.WH, self.quotient_eps, self.C)
        return divergence + self.penalty(W, H)

    def penalty(self, W, H):
        return 0.0


class DivergenceSteps(_DivergenceSteps):
    name = "nmf_divergence"

    def step(self, state):
        W, H = state["W"].copy(), state["H"].copy()
        # W <- W * (C H^T) / (row sums of H), C = V / (W H + eps) of the current iterate
        _k.outer_sum_update(W, self.C @ H.T, self.zeros_n, H.sum(axis=1))
        # H <- H * (W^T C') / (column sums of W), C' = V / (W' H + eps) with the new W
        np.matmul(W, H, out=self.WH)
        _k.quotient(self.V, self.WH, EPS, self.scratch)
        _k.outer_sum_update(H, W.T @ self.scratch, W.sum(axis=0), self.zeros_t)
        _k.normalize_rows_to_unit_l2(H, W)
        return {"W": W, "H": H}, self._evaluate(W, H), None


class _UnitSumSteps(_DivergenceSteps):
    """Local and sparse NMF: columns of W start (and stay) summing to 1, and
    C = V / (W H) has no eps (as the original code)."""

    quotient_eps = 0.0

    def initialize(self, W, H):
        W = W.copy()
        _k.normalize_columns_to_unit_sum(W)
        return {"W": W, "H": H}


class LocalSteps(_UnitSumSteps):
    name = "local_nmf"

    def __init__(self, V, n_components, alpha, beta):
        super().__init__(V, n_components)
        self.alpha = alpha
        self.beta = beta

    def penalty(self, W, H):
        return self.alpha * float(np.sum(W.T @ W)) - self.beta * float(np.vdot(H, H))

    def step(self, state):
        W, H = state["W"].copy(), state["H"].copy()
        C = self.C  # one quotient per iteration, from the current iterate
        _k.sqrt_update(H, W.T @ C)
        # D_ij = sum_k W_ik + sum_t H_jt, with the new H
        _k.outer_sum_update(W, C @ H.T, W.sum(axis=1), H.sum(axis=1))
        _k.normalize_columns_to_unit_sum(W)
        return {"W": W, "H": H}, self._evaluate(W, H), None


class SparseDivergenceSteps(_UnitSumSteps):
    name = "sparse_nmf"

    def __init__(self, V, n_components, alpha):
        super().__init__(V, n_components)
        self.alpha = alpha
        self.one_plus_alpha = np.full(n_components, 1.0 + alpha)

    def penalty(self, W, H):
        return self.alpha * float(np.sum(H))

    def step(self, state):
        W, H = state["W"].copy(), state["H"].copy()
        C = self.C  # one quotient per iteration, from the current iterate
        _k.outer_sum_update(H, W.T @ C, self.one_plus_alpha, self.zeros_t)
        _k.outer_sum_update(W, C @ H.T, self.zeros_n, H.sum(axis=1))
        _k.normalize_columns_to_unit_sum(W)
        return {"W": W, "H": H}, self._evaluate(W, H), None


# --------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------
def _options(**kwargs):
    return kwargs


@document(EUCLIDEAN_UNITS)
def nmf_euclidean(
    V,
    n_components,
    *,
    W_init=None,
    H_init=None,
    random_state=None,
    max_iter=10000,
    tol=1e-5,
    window=10,
    max_time=None,
    callback=None,
    progress=False,
    checkpoint=None,
    checkpoint_every=50,
    checkpoint_seconds=None,
    resume=False,
):
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

    References
    ----------
    D. D. Lee and H. S. Seung, "Algorithms for non-negative matrix
    factorization", NIPS 13, 2001.
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004 (nmfpack's nmfmse).
    """
    options = _options(
        W_init=W_init,
        H_init=H_init,
        random_state=random_state,
        max_iter=max_iter,
        tol=tol,
        window=window,
        max_time=max_time,
        callback=callback,
        progress=progress,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        checkpoint_seconds=checkpoint_seconds,
        resume=resume,
    )
    return _run(EuclideanSteps, V, n_components, {}, options)


@document(DIVERGENCE_UNITS)
def nmf_divergence(
    V,
    n_components,
    *,
    W_init=None,
    H_init=None,
    random_state=None,
    max_iter=10000,
    tol=1e-5,
    window=10,
    max_time=None,
    callback=None,
    progress=False,
    checkpoint=None,
    checkpoint_every=50,
    checkpoint_seconds=None,
    resume=False,
):
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

    References
    ----------
    D. D. Lee and H. S. Seung, "Algorithms for non-negative matrix
    factorization", NIPS 13, 2001.
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004 (nmfpack's nmfdiv).
    """
    options = _options(
        W_init=W_init,
        H_init=H_init,
        random_state=random_state,
        max_iter=max_iter,
        tol=tol,
        window=window,
        max_time=max_time,
        callback=callback,
        progress=progress,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        checkpoint_seconds=checkpoint_seconds,
        resume=resume,
    )
    return _run(DivergenceSteps, V, n_components, {}, options)


@document(DIVERGENCE_UNITS)
def local_nmf(
    V,
    n_components,
    *,
    alpha=1.0,
    beta=1.0,
    W_init=None,
    H_init=None,
    random_state=None,
    max_iter=10000,
    tol=1e-5,
    window=10,
    max_time=None,
    callback=None,
    progress=False,
    checkpoint=None,
    checkpoint_every=50,
    checkpoint_seconds=None,
    resume=False,
):
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

    References
    ----------
    S. Z. Li, X. W. Hou, H. J. Zhang and Q. S. Cheng, "Learning spatially
    localized, parts-based representation", CVPR 2001.
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004 (nmfpack's lnmf).
    """
    alpha = check_nonneg_real(alpha, "alpha")
    beta = check_nonneg_real(beta, "beta")
    options = _options(
        W_init=W_init,
        H_init=H_init,
        random_state=random_state,
        max_iter=max_iter,
        tol=tol,
        window=window,
        max_time=max_time,
        callback=callback,
        progress=progress,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        checkpoint_seconds=checkpoint_seconds,
        resume=resume,
    )

    def make_steps(Vn, M):
        return LocalSteps(Vn, M, alpha, beta)

    return _run(make_steps, V, n_components, {"alpha": alpha, "beta": beta}, options)


@document(DIVERGENCE_UNITS)
def sparse_nmf(
    V,
    n_components,
    *,
    alpha=1.0,
    W_init=None,
    H_init=None,
    random_state=None,
    max_iter=10000,
    tol=1e-5,
    window=10,
    max_time=None,
    callback=None,
    progress=False,
    checkpoint=None,
    checkpoint_every=50,
    checkpoint_seconds=None,
    resume=False,
):
    r"""Sparse NMF (Liu et al. 2003): divergence NMF with an L1 penalty on H.

    The columns of W start summing to 1. Each iteration, with the single
    quotient :math:`C = V \oslash (W H)` of the current iterate,

    .. math::

        H &\leftarrow H \odot (W^T C) / (1 + \alpha), \\
        W_{ij} &\leftarrow W_{ij} (C H^T)_{ij} / \textstyle\sum_t H_{jt},

    (the new H in the second line), then the columns of W are rescaled to sum
    to 1. The objective recorded is
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

    References
    ----------
    W. Liu, N. Zheng and X. Lu, "Non-negative matrix factorization for visual
    coding", ICASSP 2003.
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.
    """
    alpha = check_nonneg_real(alpha, "alpha")
    options = _options(
        W_init=W_init,
        H_init=H_init,
        random_state=random_state,
        max_iter=max_iter,
        tol=tol,
        window=window,
        max_time=max_time,
        callback=callback,
        progress=progress,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        checkpoint_seconds=checkpoint_seconds,
        resume=resume,
    )

    def make_steps(Vn, M):
        return SparseDivergenceSteps(Vn, M, alpha)

    return _run(make_steps, V, n_components, {"alpha": alpha}, options)
