"""The iterations of nmf_sc (both solvers), nmf_euclidean and fit_coefficients on device arrays.

Each class keeps the in-memory solver's rules and order of operations
(:class:`~nmfsc.solvers.hoyer.HoyerSteps`, whose four half-steps it
overrides, :class:`~nmfsc.solvers.accelerated.AcceleratedSteps`, whose
sweeps are :func:`~nmfsc.gpu_backend.sweeps.sweep_rows`, and
:class:`~nmfsc.solvers.standard.EuclideanSteps`, and
:class:`~nmfsc.solvers.coefficients.CoefficientSteps`, whose H step is
DeviceHoyerSteps's) and computes them with the array namespace ``xp`` of the data (CuPy on a GPU,
NumPy in the tests): the products by ``xp.matmul`` (cuBLAS), the
projection by :func:`~nmfsc.gpu_backend.device_projection.project_rows`. From the
same start they give the same iterates as the CPU to rounding (the CPU's
kernels sum in another order), so the float64 objective histories agree to
about 1e-12 relative.
"""

from __future__ import annotations

import numpy as np

from nmfsc._kernels.rowblocks import RULE_NONNEG, RULE_SCALED, RULE_UNIT
from nmfsc.gpu_backend.arrays import inner, stepped
from nmfsc.gpu_backend.device_projection import project_rows
from nmfsc.gpu_backend.sweeps import sweep_rows, unit_rows
from nmfsc.solvers.accelerated import SWEEP_DELTA, AcceleratedSteps
from nmfsc.solvers.coefficients import CoefficientSteps
from nmfsc.solvers.hoyer import EPS, MU_GROWTH, MU_MIN, HoyerSteps
from nmfsc.solvers.standard import EuclideanSteps
from nmfsc.sparseness import l1_for_sparseness

__all__ = [
    "DeviceAcceleratedSteps",
    "DeviceCoefficientSteps",
    "DeviceData",
    "DeviceEuclideanSteps",
    "DeviceHoyerSteps",
]


class DeviceData:
    """V / max(V) on the device (copied once there, not when max(V) = 1) and
    its products, as :class:`nmfsc.solvers.framework.ScaledData` gives them
    for in-memory V; nothing here copies V to the host."""

    sparse = False

    def __init__(self, xp, V, scale):
        self.xp = xp
        self.scale = scale
        self.V = V if scale == 1.0 else V / scale
        self.shape, self.dtype = V.shape, V.dtype
        self.vv = inner(xp, self.V, self.V)

    def wtv(self, W):
        return W.T @ self.V

    def hvt(self, H):
        return H @ self.V.T

    def vht(self, H):
        return self.V @ H.T

    def half_squared_error(self, W, H):
        """``0.5 ||V - W H||^2``, from an N x T temporary on the device."""
        R = self.V - W @ H
        return 0.5 * inner(self.xp, R, R)

    def relative_error(self, W_normalised, H):
        """``||V - W H||_F / ||V||_F`` on the normalised data."""
        return float(np.sqrt(2.0 * self.half_squared_error(W_normalised, H) / self.vv))


class _Grams:
    """W^T W once per W array, as the in-memory ColumnGram (``from_columns``:
    from the rows of C = W^T), which would copy W^T with NumPy on a miss.
    (H H^T is ``h_gram``, HoyerSteps's RowGram of :meth:`DeviceHoyerSteps.row_gram`.)"""

    def __init__(self, xp, from_columns):
        self.xp = xp
        self.from_columns = from_columns
        self.w = None

    def wtw(self, W, C=None):
        if self.w is not None and self.w[0] is W:
            return self.w[1]
        if self.from_columns:
            C = self.xp.ascontiguousarray(W.T) if C is None else C
            gram = C @ C.T
        else:
            gram = W.T @ W
        self.w = (W, gram)
        return gram


def _flush(xp, X):
    """Subnormal entries to zero (as the CPU kernels' ``flush_subnormal``)."""
    tiny = np.finfo(X.dtype).tiny
    return xp.where(xp.abs(X) < tiny, 0.0, X).astype(X.dtype, copy=False)


def _multiplicative(xp, X, num, den):
    """Lee & Seung's ``X * num / (den + eps)``, flushed, and each row's sum of squares."""
    out = _flush(xp, X * (num / (den + EPS)))
    return out, xp.sum(out * out, axis=1, dtype=xp.float64)


def _scale_rows(xp, H, W, row_ss):
    """H's rows to unit L2 norm, W's columns times the norms (W H unchanged)."""
    norms = xp.sqrt(row_ss)
    safe = xp.where(norms > 0, norms, 1.0).astype(H.dtype)
    return _flush(xp, H / safe[:, None]), W * safe[None, :]


def _expanded(xp, vv, A, X, G, quad):
    """``0.5 (||V||^2 - 2 <A, X> + <G, quad>)`` (the in-memory ``expanded_objective``)."""
    return 0.5 * (vv - 2.0 * inner(xp, A, X) + inner(xp, G, quad))


class DeviceHoyerSteps(HoyerSteps):
    """nmf_sc's iteration (``solver="hoyer"``) on device arrays: HoyerSteps's
    :meth:`step`, with its four half-steps and its start computed by ``xp``."""

    def __init__(self, data, n_components, sparseness_w, sparseness_h):
        super().__init__(data, n_components, sparseness_w, sparseness_h)
        N, T = data.shape
        self.xp = data.xp
        self.l1_h = None if sparseness_h is None else l1_for_sparseness(sparseness_h, T)
        self.l1_w = None if sparseness_w is None else l1_for_sparseness(sparseness_w, N)
        self.grams = _Grams(self.xp, from_columns=sparseness_w is not None)

    def row_gram(self, X):
        """X X^T by the array library (the CPU's blocked sums write into
        NumPy buffers, which a CuPy product cannot take)."""
        return X @ X.T

    def initialize(self, W, H):
        """HoyerSteps's start (rows of H to unit norm, then the projections), on
        the device; W and H arrive as host arrays from the random start."""
        xp = self.xp
        self.refuse_dead(W, H)
        W, H = xp.asarray(W), xp.asarray(H)
        norms = xp.linalg.norm(H, axis=1, keepdims=True)
        H = H / xp.where(norms > 0, norms, 1.0)
        if self.l1_w is not None:
            C = xp.ascontiguousarray(W.T)
            ones = xp.ones(C.shape[0])
            W = self._project_start(C, self.l1_w * ones, ones).T
        if self.l1_h is not None:
            ones = xp.ones(H.shape[0])
            H = self._project_start(H, self.l1_h * ones, ones)
        return {
            "W": xp.ascontiguousarray(W),
            "H": xp.ascontiguousarray(H),
            "mu_W": 1.0,
            "mu_H": 1.0,
        }

    def _project_start(self, X, l1, l2):
        S, finite = project_rows(self.xp, X, l1, l2, dtype=X.dtype)
        if not bool(finite.all()):
            raise ValueError("the start has a row that cannot be projected: it is not finite")
        return S

    def h_multiplicative(self, W, H, rescale=True):
        xp = self.xp
        WtV, WtW = self.data.wtv(W), self.grams.wtw(W)
        H_new, row_ss = _multiplicative(xp, H, WtV, WtW @ H)
        if rescale:
            H_new, W = _scale_rows(xp, H_new, W, row_ss)
        return W, H_new

    def w_multiplicative(self, W, H, HHt=None):
        xp = self.xp
        HHt = H @ H.T if HHt is None else HHt
        VHt = self.data.vht(H)
        W_new, _ = _multiplicative(xp, W, VHt, W @ HHt)
        cross = inner(xp, VHt, W_new)
        return W_new, 0.5 * (self.vv - 2.0 * cross + inner(xp, HHt, self.grams.wtw(W_new)))

    def h_projected(self, W, H, mu):
        WtV, WtW = self.data.wtv(W), self.grams.wtw(W)
        before = _expanded(self.xp, self.vv, WtV, H, WtW, self.h_gram(H))
        dH = WtW @ H - WtV
        H_new, mu, energy, quad = self._search(self.l1_h, H, dH, mu, before, WtV, WtW, False)
        if H_new is not None:
            self.h_gram.keep(H_new, quad)
        return H_new, mu, energy, quad

    def w_projected(self, W, H, mu, HHt=None):
        xp = self.xp
        HVt = self.data.hvt(H)
        HHt = H @ H.T if HHt is None else HHt
        C = xp.ascontiguousarray(W.T)
        before = _expanded(xp, self.vv, HVt, C, HHt, self.grams.wtw(W, C))
        dC = HHt @ C - HVt
        C_new, mu, energy, quad = self._search(self.l1_w, C, dC, mu, before, HVt, HHt, True)
        if C_new is None:
            return None, mu, energy
        W_new = xp.ascontiguousarray(C_new.T)
        self.grams.w = (W_new, quad)
        return W_new, mu, energy

    def _search(self, l1_unit, X, D, mu, before, A, G, own_norm):
        """HoyerSteps's line search on the rows of X (module docstring of
        :mod:`nmfsc.solvers.hoyer`): the trial ``P(X - mu D)`` is accepted when
        its expanded energy is at most ``before``, else mu is halved."""
        xp = self.xp
        count = X.shape[0]
        while True:
            trial = stepped(xp, X, D, mu)
            if own_norm:
                l2 = xp.sqrt(xp.sum(trial * trial, axis=1, dtype=xp.float64))
                usable = bool(((l2 > 0) & xp.isfinite(l2)).all())
            else:
                l2 = xp.ones(count)
                usable = True
            if usable:
                S, finite = project_rows(xp, trial, l1_unit * l2, l2, dtype=X.dtype)
                if bool(finite.all()):
                    quad = S @ S.T
                    after = _expanded(xp, self.vv, A, S, G, quad)
                    if after <= before:
                        return S, mu * MU_GROWTH, after, quad
            mu /= 2.0
            if not MU_MIN <= mu < np.inf:
                return None, mu, before, None


class DeviceEuclideanSteps(EuclideanSteps):
    """nmf_euclidean's iteration on device arrays (EuclideanSteps's rules)."""

    def __init__(self, data, n_components):
        super().__init__(data, n_components)
        self.xp = data.xp
        self.grams = _Grams(self.xp, from_columns=False)

    def initialize(self, W, H):
        state = super().initialize(W, H)
        return {"W": self.xp.asarray(state["W"]), "H": self.xp.asarray(state["H"])}

    def step(self, state):
        xp = self.xp
        W0, H0 = state["W"], state["H"]
        H, row_ss = _multiplicative(xp, H0, self.data.wtv(W0), self.grams.wtw(W0) @ H0)
        HHt = H @ H.T
        VHt = self.data.vht(H)
        W, _ = _multiplicative(xp, W0, VHt, W0 @ HHt)
        cross = inner(xp, VHt, W)
        H, W = _scale_rows(xp, H, W, row_ss)
        norms = xp.sqrt(row_ss)
        inv = 1.0 / xp.where(norms == 0.0, 1.0, norms)
        quad = self.grams.wtw(W) * inv[:, None] * inv[None, :]
        energy = 0.5 * (self.vv - 2.0 * cross + inner(xp, HHt, quad))
        return {"W": W, "H": H}, self.recorded(energy, W, H), None


class DeviceAcceleratedSteps(AcceleratedSteps, DeviceHoyerSteps):
    """``nmf_sc(solver="accelerated")``'s iteration on device arrays:
    AcceleratedSteps's :meth:`step` (the H step's sweeps, the rows of H to
    unit norm when only W is constrained, the W step's sweeps over W^T, the
    expanded objective), its sweeps by :func:`~nmfsc.gpu_backend.sweeps.sweep_rows`;
    its start is DeviceHoyerSteps's (AcceleratedSteps's ``initialize`` calls it)."""

    def __init__(self, data, n_components, sparseness_w, sparseness_h):
        super().__init__(data, n_components, sparseness_w, sparseness_h)
        # W^T W as C C^T of W^T's rows, the product the W step hands over
        # (so a resumed run's recomputed product has the same bits).
        self.grams = _Grams(self.xp, from_columns=True)

    def step(self, state):
        xp = self.xp
        W, H = state["W"], state["H"]
        N, T = self.data.shape
        WtV, WtW = self.data.wtv(W), self.grams.wtw(W)
        if self.l1_h is None:
            H = sweep_rows(xp, H, WtW, WtV, RULE_NONNEG, 1.0, self.sweeps(T, N), SWEEP_DELTA)
            if self.l1_w is not None:
                W, H = unit_rows(xp, W, H)
        else:
            H = sweep_rows(xp, H, WtW, WtV, RULE_UNIT, self.l1_h, self.sweeps(T, N), SWEEP_DELTA)
        HHt = H @ H.T
        HVt = self.data.hvt(H)
        rule, l1 = (RULE_NONNEG, 1.0) if self.l1_w is None else (RULE_SCALED, self.l1_w)
        Wt = sweep_rows(xp, W.T, HHt, HVt, rule, l1, self.sweeps(N, T), SWEEP_DELTA)
        W = xp.ascontiguousarray(Wt.T)
        quad = Wt @ Wt.T
        self.grams.w = (W, quad)
        energy = _expanded(xp, self.vv, HVt, Wt, HHt, quad)
        return {"W": W, "H": H}, self.recorded(energy, W, H), None


class DeviceCoefficientSteps(CoefficientSteps, DeviceHoyerSteps):
    """:func:`~nmfsc.solvers.coefficients.fit_coefficients`'s iteration (nmf_sc's
    H step alone, W fixed) on device arrays: CoefficientSteps's :meth:`step`
    and start, its H step DeviceHoyerSteps's :meth:`h_projected` (s_H set)
    or :meth:`h_multiplicative` without the rescaling (s_H None).

    ``fixed_W`` is fit_coefficients's record, in the result's ``params``, that
    W does not move (it is always True).
    """

    def __init__(self, data, n_components, sparseness_h, fixed_W=True):
        super().__init__(data, n_components, sparseness_h)
