r"""An accelerated solver for nmf_sc's problem: ``nmf_sc(..., solver="accelerated")``.

It minimises the same :math:`E(W, H) = \tfrac12 \lVert V - W H \rVert_F^2`
over the same constraint set as the paper's algorithm
(:mod:`nmfsc.solvers.hoyer`), from the same start (:meth:`HoyerSteps.initialize
<nmfsc.solvers.hoyer.HoyerSteps.initialize>`), but takes larger and more
steps per pass over the data. Each iteration updates H, then W.

Both sub-problems have the form: for the rows :math:`x_k` of X (M x n; X = H
for the H step, X = W^T for the W step),

.. math:: f(X) = \tfrac12 \langle G, X X^T \rangle - \langle A, X \rangle
          + \tfrac12 \lVert V \rVert^2, \qquad \nabla f(X) = G X - A,

with :math:`G = W^T W`, :math:`A = W^T V` for H and :math:`G = H H^T`,
:math:`A = H V^T` for W^T. The products G and A cost one pass over V
(O(N T M)); everything below costs O(M^2 n) per step, so several steps are
taken per pass (Gillis & Glineur 2012).

A constrained factor (rows of H with ``sparseness_h``: unit L2 norm and the
target L1 norm; columns of W with ``sparseness_w``: the target sparseness, each
projected at its own L2 norm, exactly as nmf_sc) takes up to ``K`` projected
gradient steps of length :math:`\mu / L`, :math:`L = \lambda_{\max}(G)`, with
Nesterov's extrapolation (the inertial proximal steps of Pock & Sabach's
iPALM; Bolte, Sabach & Teboulle's PALM without the inertia)::

    Y_0 = X_0,  t_0 = 1
    Z   = P(Y_j - (mu / L) (G Y_j - A))                  # P: Hoyer's projection
    if f(Z) <= f(X_j):   X_{j+1} = Z,  mu <- 1.2 mu
                         t_{j+1} = (1 + sqrt(1 + 4 t_j^2)) / 2
                         Y_{j+1} = X_{j+1} + (t_j - 1) / t_{j+1} (X_{j+1} - X_j)
    elif Y_j != X_j:     restart: Y_j = X_j, t_j = 1, and retake the step
    else:                mu <- mu / 2 and retake the step

As in nmf_sc, mu below 1e-200 means that no descent step exists: the run has
converged (stop reason ``"step_size"``).

The restart rule (Ang & Gillis 2019; O'Donoghue & Candes 2015) makes f
non-increasing: an iterate is only accepted when it does not raise f. The
inner loop also stops when a step decreases f by less than ``INNER_DELTA``
times the first step's decrease. mu (``mu_W``, ``mu_H``) is carried from one
iteration to the next, as nmf_sc's step sizes are; the extrapolation starts
afresh at every update, so the state (W, H, mu_W, mu_H) is nmf_sc's and a
checkpoint resumes bit-identically.

An unconstrained factor takes ``K`` sweeps of HALS (Cichocki & Phan 2009), the
exact minimisation of f over one row at a time, kept non-negative::

    x_k <- max(0, x_k + (a_k - g_k X) / g_kk)       for k = 1 .. M

(a row with :math:`g_{kk} = 0`, a zero column of W or row of H, is left as it
is). As in nmf_sc, when only W is constrained the rows of H are then scaled to
unit L2 norm and the columns of W take the norms (W H unchanged; a column's
sparseness does not depend on its norm).

``K`` follows Gillis & Glineur: ``1 + INNER_RATIO * rho`` projected steps
(``1 + HALS_RATIO * rho`` HALS sweeps), rho the cost of the pass over V over
the cost of a step, ``(N T M) / (n M^2 + n M)`` for rows of length n, capped
at ``INNER_MAX``.

The recorded objective is E after the W step by the expansion of
:func:`nmfsc.solvers._objective.expanded_objective` (recomputed exactly when
small, as nmf_sc does). It never increases, up to rounding: each HALS row update
is an exact minimisation, and every accepted projected step does not raise f.
"""

from __future__ import annotations

import numpy as np

from nmfsc.solvers._objective import expanded_objective
from nmfsc.solvers.hoyer import MU_GROWTH, MU_MIN, HoyerSteps, support_sizes

__all__ = ["AcceleratedSteps"]

#: HALS sweeps: 1 + HALS_RATIO * (cost of a pass over V) / (cost of one sweep).
HALS_RATIO = 0.5
#: Projected steps: 1 + INNER_RATIO * (cost of a pass over V) / (cost of one step).
INNER_RATIO = 2.0
#: At most this many projected gradient steps per update of a constrained factor.
INNER_MAX = 30
#: The inner loop stops when a step decreases f by less than this times the first step.
INNER_DELTA = 0.1


def hals(X, G, A, sweeps):
    r"""``sweeps`` HALS sweeps on the rows of X for :math:`f(X) = \tfrac12 \langle G,
    X X^T\rangle - \langle A, X\rangle`; returns a new array (X is not modified).

    Row k becomes :math:`\max(0, x_k + (a_k - g_k X) / g_{kk})`, the minimiser of
    f over :math:`x_k \ge 0` with the other rows fixed; a row with
    :math:`g_{kk} \le 0` is left unchanged.
    """
    X = X.copy()
    diag = np.diagonal(G)
    for _ in range(sweeps):
        for k in range(X.shape[0]):
            if not diag[k] > 0:
                continue
            row = X[k] + (A[k] - G[k] @ X) / diag[k]
            np.maximum(row, 0.0, out=X[k])
    return X


class AcceleratedSteps(HoyerSteps):
    """One iteration of ``nmf_sc(solver="accelerated")``: the H step, then the
    W step (module docstring). The start and the state are nmf_sc's (W, H,
    mu_W, mu_H; the step sizes here are multiples of 1/L)."""

    name = "nmf_sc (accelerated)"

    def inner_steps(self, n, n_other, ratio=INNER_RATIO):
        """K of the module docstring for a factor with rows of length ``n``."""
        M = self.n_components
        rho = (n * n_other * M) / (n * M * M + n * M)
        return int(min(INNER_MAX, 1 + ratio * rho))

    def step(self, state):
        W, H = state["W"], state["H"]
        mu_w, mu_h = float(state["mu_W"]), float(state["mu_H"])
        N, T = self.data.shape
        WtV = self.data.wtv(W)
        WtW = self._w_gram(W)
        if self.proj_h is None:
            H = hals(H, WtW, WtV, self.inner_steps(T, N, HALS_RATIO))
            if self.proj_w is not None:
                W, H = unit_rows(W, H)
        else:
            H, _, mu_h = self.projected(
                H, WtW, WtV, self.proj_h, False, self.inner_steps(T, N), mu_h
            )
            if mu_h < MU_MIN:  # no descent step: converged, as nmf_sc; only mu_H changed
                return {**state, "mu_H": mu_h}, None, "step_size"
        HHt = H @ H.T
        HVt = np.ascontiguousarray(self.data.vht(H).T)
        if self.proj_w is None:
            Wt = hals(np.ascontiguousarray(W.T), HHt, HVt, self.inner_steps(N, T, HALS_RATIO))
            energy = None
        else:
            Wt, energy, mu_w = self.projected(
                np.ascontiguousarray(W.T), HHt, HVt, self.proj_w, True, self.inner_steps(N, T), mu_w
            )
        W = np.ascontiguousarray(Wt.T)
        if energy is None:
            energy = expanded_objective(self.vv, HVt, Wt, HHt, columns=False)
        new = {"W": W, "H": H, "mu_W": mu_w, "mu_H": mu_h}
        reason = "step_size" if mu_w < MU_MIN else None  # H has moved; W stays
        return new, self.recorded(energy, W, H), reason

    def projected(self, X, G, A, projector, own_norm, steps, mu):
        """Up to ``steps`` extrapolated projected gradient steps of length mu / L
        (module docstring) on the rows of X. Returns the last accepted X, f there
        (by the expansion) and the new mu."""

        def f(Z):
            return expanded_objective(self.vv, A, Z, G, columns=False)

        lipschitz = float(np.linalg.eigvalsh(G.astype(np.float64))[-1])
        if not lipschitz > 0:
            return X, f(X), mu
        f_x, t, Y, X_prev = f(X), 1.0, X, X
        first = None
        guide = support_sizes(X, axis=1)
        for _ in range(steps):
            Z = self.project(Y - (mu / lipschitz) * (G @ Y - A), projector, own_norm, guide)
            f_z = f(Z) if Z is not None else np.inf
            if not f_z <= f_x:
                if Y is not X:  # restart: drop the extrapolation
                    Y, t = X, 1.0
                    continue
                mu /= 2.0
                if not MU_MIN <= mu:
                    break
                continue
            decrease = f_x - f_z
            X_prev, X, f_x = X, Z, f_z
            mu *= MU_GROWTH
            first = decrease if first is None else first
            if decrease <= INNER_DELTA * first:
                break
            t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / t_next
            Y = X + beta * (X - X_prev) if beta > 0 else X
            t = t_next
        return X, f_x, mu

    @staticmethod
    def project(X, projector, own_norm, guide=None):
        """Hoyer's projection of X's rows, at unit L2 norm or (``own_norm``) at
        each row's own norm (``guide``: as ``_Projector.rows``); a new array, or
        None if a row cannot be projected."""
        X = np.ascontiguousarray(X)
        norms = None
        if own_norm:
            norms = np.sqrt(np.einsum("ij,ij->i", X, X)).astype(np.float64)
            if not (np.all(norms > 0) and np.all(np.isfinite(norms))):
                return None
        projected = projector.rows(X, norms, guide)
        return None if projected is None else projected.copy()


def unit_rows(W, H):
    """Rows of H scaled to unit L2 norm, W's columns multiplied by the norms
    (W H unchanged); a zero row stays zero. Returns new arrays."""
    norms = np.sqrt(np.einsum("ij,ij->i", H, H))
    safe = np.where(norms > 0, norms, 1.0).astype(H.dtype)
    return np.ascontiguousarray(W * safe), H / safe[:, None]
