r"""``nmf_sc(V, k, solver="accelerated", mask=...)``: block coordinate descent
on the observed entries.

The objective is the masked one of :mod:`nmfsc.solvers.masked`,

.. math:: E(W, H) = \tfrac12 \lVert \Omega \odot (\tilde V - W H) \rVert_F^2,

(:math:`\Omega` the mask, :math:`\tilde V` V divided by its largest observed
entry; the unobserved entries are never read), over nmf_sc's constraint
set, from nmf_sc's start. As the unmasked accelerated solver
(:mod:`nmfsc.solvers.accelerated`), each iteration sweeps over the rows of
H, then over the rows of :math:`W^T` (the columns of W). With the other rows
fixed, E depends on a row :math:`x = h_k` of H through

.. math:: f_k(x) = \tfrac12 \sum_t d_t x_t^2 - \langle b, x \rangle + \text{const},
   \quad d_t = \sum_i \Omega_{it} W_{ik}^2, \quad
   b_t = \sum_i \Omega_{it} W_{ik} R^{(k)}_{it},

:math:`R^{(k)} = \tilde V - \sum_{j \ne k} w_j h_j` (for a column of W the
same with the weights :math:`d_i = \sum_t \Omega_{it} H_{kt}^2` over its
entries). The weights differ from entry to entry (without a mask every
:math:`d_t` is :math:`g_{kk} = \lVert w_k \rVert^2`), so:

* an unconstrained factor takes the exact minimiser entry by entry,
  :math:`x_t = \max(0, b_t / d_t)` (masked HALS); an entry with
  :math:`d_t = 0` (no observed entry weighs on it, f_k does not depend on it)
  keeps its value;
* a constrained row (``sparseness_h``: unit L2 norm at the target L1 norm;
  ``sparseness_w``: the target sparseness at any norm) has no closed-form
  minimiser. It takes majorised steps: with :math:`L = \max_t d_t`, f_k is
  majorised at x by :math:`\tfrac L2 \lVert y - z \rVert^2 + \text{const}`,
  :math:`z = x - (d \odot x - b) / L`, whose minimiser over the set is
  :math:`P(z)`, Hoyer's projection (``sparseness_h``), or :math:`r\,u` with
  :math:`u = P(z)` at unit norm and :math:`r = \langle z, u \rangle`
  (``sparseness_w``; none when :math:`r \le 0`), the unmasked solver's rule
  against the majoriser. b and d do not depend on x, so the step is repeated
  on the row up to ``INNER_STEPS`` times (each O(n) plus a projection),
  until one decreases f_k by at most ``INNER_DELTA`` times the first did.

A row is replaced only when f_k, computed in the kernel, does not rise, so E
never rises up to rounding; every row of a constrained factor is an output of
the projection (times its norm), so the constraints hold at every iterate.
With a mask that is true everywhere :math:`d_t = g_{kk}`,
:math:`z = b / g_{kk}` and :math:`P(z) = P(b)`: the first step is the
unmasked solver's exact update, a second one moves the row by rounding
at most (and stops the row's steps), and the iterates are the unmasked
solver's up to rounding (the full-mask identity).
When only W is constrained, the rows of H are scaled to unit norm after
the H sweeps, as in the unmasked solver.

Cost. The kernel (:mod:`nmfsc._kernels.masked_rows`) keeps the residual
:math:`\Omega \odot (\tilde V - W H)` (float64, N x T; its transpose for the W
step, so that both steps run along its rows): a row's b and the previous
row's update take one pass over it, so a sweep costs O(N T M), as a pass
over V does. The sweeps per factor step follow the unmasked solver's rule
(Gillis & Glineur's :math:`K = 1 + \alpha \rho`, fewer when one decreases
E by at most ``SWEEP_DELTA`` times the first) with the masked costs: without
a mask :math:`\rho` is the cost of the step's products, O(N T M), over that
of a sweep on the Gram matrices, O(T M^2), so K reaches ``SWEEPS_MAX``; with
one, a sweep costs as much as the step's set-up (the weights and the
residual, one pass each over the observed entries times M), so
:math:`\rho` = ``MASKED_RHO`` = 1 and K = 2 (``masked_sweeps``). A mask
that is true everywhere keeps the unmasked K, so that it repeats the
unmasked solver's schedule (the full-mask identity).
The residual and the weights (two products with :math:`\Omega`) are
recomputed from W and H at every factor step, so the state is W and H alone
and a checkpoint resumes bit-identically. The recorded objective is E after
the W step, computed exactly from a fresh :math:`\Omega \odot (W H)`.

``mask="stored"`` (a scipy.sparse V, its stored entries the observed ones,
explicit zeros included) runs the same algorithm with the residual kept at
the stored entries alone (:class:`StoredRows`; kernel
:func:`nmfsc._kernels.masked_rows.sweep_stored_rows`): one float64 array of
nnz values in V's own CSR or CSC order, for both steps. A step whose row
entries are the pattern's inner index (the H step of a CSR V, the W step of
a CSC one) scatters, :math:`b_t \mathrel{+}= W_{ik} R_{it}` over the stored
entries of each outer row, and the other gathers, so neither step needs the
other layout; every :math:`b_t` is summed over the same entries in the same
order as the dense kernel sums it, and the rows' updates are the dense
kernel's (one routine), so a sparse V and the dense mask of its pattern
give the same iterates up to the rounding of the weights and of the
residual's recomputation. A sweep costs O(nnz M) (plus the rows' updates,
O(M (N + T)) and the projections), the weights one O(nnz M) pass per factor
step, and the memory beyond the factors is O(nnz): neither V nor the mask
is made dense.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from nmfsc._kernels import masked_rows as _mr
from nmfsc._kernels import sparse_projection as _proj
from nmfsc.solvers._data import inner
from nmfsc.solvers._masked_all_but import MaskedAllBut
from nmfsc.solvers.accelerated import (
    SWEEP_DELTA,
    SWEEP_RATIO,
    SWEEPS_MAX,
    AcceleratedSteps,
    unit_rows,
)

__all__ = [
    "AllButRows",
    "DenseRows",
    "MaskedAcceleratedSteps",
    "StoredRows",
    "masked_sweep",
    "masked_sweeps",
]

#: The cost of a factor step's set-up over that of one masked sweep (both
#: one pass over the observed entries times M): the rho of the sweep rule.
MASKED_RHO = 1.0
#: Majorised steps per constrained row and sweep.
INNER_STEPS = 5
#: A row's steps stop when one decreases f_k by at most this times the first.
INNER_DELTA = 0.1


def masked_sweep(
    X, kernel, operands, D, rule, l1, sweeps=1, delta=0.0, inner_steps=1, inner_delta=0.0
):
    """Up to ``sweeps`` sweeps of ``kernel``
    (:func:`nmfsc._kernels.masked_rows.sweep_masked_rows`, or
    :func:`~nmfsc._kernels.masked_rows.sweep_stored_rows` for a stored
    pattern) over the rows of X, called as ``kernel(X, *operands, D, rule,
    l1, ...)``; ``operands`` are the other factor's rows and the residual
    (updated in place) in the kernel's layout. Returns a new array (X is not
    modified). The sweeps stop early when one decreases f by at most
    ``delta`` times the first one did."""
    X = np.array(X, order="C")
    n = X.shape[1]
    b, scratch = np.empty(n), np.empty((4, n))
    max_passes = _proj.max_filter_passes(n)
    first = None
    for _ in range(sweeps):
        decrease, _unchanged = kernel(
            X,
            *operands,
            D,
            rule,
            float(l1),
            max_passes,
            inner_steps,
            float(inner_delta),
            b,
            scratch,
        )
        first = decrease if first is None else first
        if not decrease > delta * first:
            break
    return X


class DenseRows:
    """The sweeps' residual for a dense V and a boolean mask: an N x T array
    (its transpose for the W step), zero where unobserved."""

    def __init__(self, data):
        self.data = data
        self.mask = data.mask
        self.mask_t = np.ascontiguousarray(data.mask.T)  # the W step's layout (T x N)
        self.weights = data.mask.astype(np.float64)  # Omega as 0/1, for the weights' products
        self.V_t = np.ascontiguousarray(data.V.T, dtype=np.float64)

    def residual(self, W, H):
        """``(Omega * (V - W H), E)``, float64."""
        R = np.asarray(self.data.V - self.data.product(W, H), dtype=np.float64)
        return R, 0.5 * inner(R, R)

    def h_sweeps(self, W, H, R, rule, l1, sweeps):
        """The H step's sweeps from the residual R of (W, H) (updated in place)."""
        Wt = np.ascontiguousarray(W.T)
        D = (Wt * Wt) @ self.weights  # d of every row of H: (W o W)^T Omega
        return _sweeps(H, _mr.sweep_masked_rows, (Wt, R, self.mask), D, rule, l1, sweeps)

    def w_sweeps(self, W, H, rule, l1, sweeps):
        """The W step's sweeps over the rows of W^T; returns the new W^T."""
        R_t = np.asarray(H.T @ W.T, dtype=np.float64)
        np.multiply(R_t, self.mask_t, out=R_t)
        np.subtract(self.V_t, R_t, out=R_t)
        D = (H * H) @ self.weights.T  # d of every column of W: (H o H) Omega^T
        return _sweeps(W.T, _mr.sweep_masked_rows, (H, R_t, self.mask_t), D, rule, l1, sweeps)


class StoredRows:
    """The sweeps' residual for ``mask="stored"``: V - W H at the stored
    entries alone (float64, nnz, in V's CSR or CSC order), one array for
    both steps; neither V nor the mask is made dense."""

    def __init__(self, data):
        self.data = data
        self.indptr, self.indices = data.raw.indptr, data.raw.indices
        self.csc = data.csc

    def residual(self, W, H):
        """``(values, E)``: V - W H at the stored entries, float64, and E
        (:meth:`~nmfsc.solvers._masked_data.MaskedStored.residual_energy`)."""
        R, energy = self.data.residual_energy(
            W.astype(np.float64, copy=False), H.astype(np.float64, copy=False)
        )
        return np.negative(R.data, out=R.data), energy

    def h_sweeps(self, W, H, R, rule, l1, sweeps):
        """The H step's sweeps: a CSR pattern scatters them (H's entries are
        its columns), a CSC one gathers."""
        scatter = not self.csc
        D = self._weights(W, scatter, H.shape[1])
        operands = (np.ascontiguousarray(W.T), self.indptr, self.indices, R, scatter)
        return _sweeps(H, _mr.sweep_stored_rows, operands, D, rule, l1, sweeps)

    def w_sweeps(self, W, H, rule, l1, sweeps):
        """The W step's sweeps over the rows of W^T from a fresh residual."""
        R = self.residual(W, H)[0]
        D = self._weights(np.ascontiguousarray(H.T), self.csc, W.shape[0])
        operands = (H, self.indptr, self.indices, R, self.csc)
        return _sweeps(W.T, _mr.sweep_stored_rows, operands, D, rule, l1, sweeps)

    def _weights(self, Yt, scatter, n):
        """D (M x n): the weights of every row, from the other factor Yt
        (its rows along the pattern's other index)."""
        out = np.empty((n, Yt.shape[1]))
        _mr.stored_weights(self.indptr, self.indices, Yt, scatter, out)
        return np.ascontiguousarray(out.T)


class AllButRows:
    r"""The sweeps for V observed at every entry but a sparse set U
    (:class:`~nmfsc.solvers._masked_all_but.MaskedAllBut`): no residual
    is kept, only W H on U (float64, in U's order for the step), from which
    and the Gram matrix of the other factor the kernel
    (:func:`nmfsc._kernels.masked_rows.sweep_all_but_rows`) takes each row's
    sums. A sweep costs as the unmasked solver's does, plus O(M nnz(U)).

    The weights :math:`d_t = g_{kk} - \sum_{i \in U_t} y_i^2` and the sums
    are differences of sums over all entries and over U, so they carry an
    error of about :math:`\epsilon\, g_{kk}` where the dense kernel's do not:
    where a row or column of V is observed at entries that weigh little
    (nearly all of it unobserved, or the other factor nearly zero there),
    the entry's step departs from the dense mask's, and below
    ``WEIGHT_FLOOR`` the entry keeps its value (as one with no observed
    entry does). A random held-out set leaves every row and column mostly
    observed, and the iterates are the dense mask's to rounding."""

    #: d_t below this times g_kk (W H's entries on U weigh on nearly all of
    #: the row's observed entries) is taken as 0: the entry keeps its value.
    WEIGHT_FLOOR = 1e-12

    def __init__(self, data):
        self.data = data
        self.by_row = data.pattern  # U, CSR: the W step's entries (rows of V)
        by_col = data.pattern.tocsc()
        by_col.sort_indices()
        self.by_col = by_col  # the H step's entries (columns of V)
        # U with the step's entries as rows and ones as values, for the sums of
        # squares in the weights: made once for each orientation.
        self.ones_by_row = _ones(self.by_row, data.shape[1])
        self.ones_by_col = _ones(by_col, data.shape[0])

    def residual(self, W, H):
        """``(None, E)``: the sweeps keep no residual."""
        return None, self.data.residual_energy(W, H)[1]

    def h_sweeps(self, W, H, R, rule, l1, sweeps):
        """The H step's sweeps (``R`` unused)."""
        Wt = np.ascontiguousarray(W.T, dtype=np.float64)
        A = np.asarray(self.data.wtv(W), dtype=np.float64)
        return self._sweeps(H, Wt, A, self.by_col, self.ones_by_col, W, H, rule, l1, sweeps)

    def w_sweeps(self, W, H, rule, l1, sweeps):
        """The W step's sweeps over the rows of W^T; returns the new W^T."""
        Y = np.ascontiguousarray(H, dtype=np.float64)
        A = np.ascontiguousarray(self.data.vht(H).T, dtype=np.float64)
        return self._sweeps(W.T, Y, A, self.by_row, self.ones_by_row, W, H, rule, l1, sweeps)

    def _sweeps(self, X, Y, A, pattern, ones, W, H, rule, l1, sweeps):
        """Sweeps over the rows of X with the other factor's rows Y, A = Y V^(T)
        and U with X's entries as its outer index (``pattern``; ``ones``, the
        same with ones as its values)."""
        G = Y @ Y.T
        hidden = self.data.at_unobserved(W, H, pattern)
        squares = np.asarray(ones @ (Y * Y).T).T  # sum over U_t of y_i^2, M x n
        diagonal = np.diag(G)[:, None]
        D = diagonal - squares
        D[D <= self.WEIGHT_FLOOR * diagonal] = 0.0
        operands = (Y, A, G, pattern.indptr, pattern.indices, hidden)
        return _sweeps(X, _mr.sweep_all_but_rows, operands, D, rule, l1, sweeps)


def _ones(pattern, n_other):
    """A CSR or CSC ``pattern`` as a CSR matrix with its outer index as rows
    and ones as values (``n_other`` columns)."""
    shape = (pattern.indptr.shape[0] - 1, n_other)
    return sparse.csr_array((np.ones(pattern.nnz), pattern.indices, pattern.indptr), shape=shape)


def masked_sweeps() -> int:
    """K, the sweeps per factor step with a hidden entry:
    :math:`1 + \alpha \rho` with ``SWEEP_RATIO`` and ``MASKED_RHO``."""
    return int(min(SWEEPS_MAX, 1 + SWEEP_RATIO * MASKED_RHO))


def _sweeps(X, kernel, operands, D, rule, l1, sweeps):
    return masked_sweep(
        X, kernel, operands, D, rule, l1, sweeps, SWEEP_DELTA, INNER_STEPS, INNER_DELTA
    )


class MaskedAcceleratedSteps(AcceleratedSteps):
    """One iteration of ``nmf_sc(solver="accelerated", mask=...)``: the H
    sweeps, then the W sweeps (module docstring). The start is nmf_sc's; the
    state is W and H."""

    def __init__(self, data, n_components, sparseness_w, sparseness_h):
        super().__init__(data, n_components, sparseness_w, sparseness_h)
        if isinstance(data, MaskedAllBut):
            self.rows = AllButRows(data)
        else:
            self.rows = StoredRows(data) if data.sparse else DenseRows(data)
        self._last = None
        self.full_mask = data.count == data.shape[0] * data.shape[1]

    def sweeps(self, n, n_other):
        """K for a factor with rows of length ``n``: the unmasked solver's
        with a mask that is true everywhere, else :func:`masked_sweeps`
        (also for a sparse set of unobserved entries, so that a sparse V
        and its dense copy with the same mask take the same sweeps)."""
        return super().sweeps(n, n_other) if self.full_mask else masked_sweeps()

    def residual(self, W, H):
        """``(R, E)`` of :meth:`DenseRows.residual` or
        :meth:`StoredRows.residual`, kept for the same (W, H) arrays."""
        last = self._last
        if last is not None and last[0] is W and last[1] is H:
            return last[2], last[3]
        R, energy = self.rows.residual(W, H)
        self._last = (W, H, R, energy)
        return R, energy

    def start(self, state):
        return self.objective(state["W"], state["H"])

    def objective(self, W, H):
        return self.residual(W, H)[1]

    def step(self, state):
        W, H = state["W"], state["H"]
        N, T = self.data.shape
        R = self.residual(W, H)[0]
        R = None if R is None else R.copy()  # the sweeps update it in place
        if self.proj_h is None:
            rule, l1 = _mr.RULE_NONNEG, 1.0
        else:
            rule, l1 = _mr.RULE_UNIT, self.proj_h.l1_unit
        H = self.rows.h_sweeps(W, H, R, rule, l1, self.sweeps(T, N))
        if self.proj_h is None and self.proj_w is not None:
            W, H = unit_rows(W, H)
        if self.proj_w is None:
            rule, l1 = _mr.RULE_NONNEG, 1.0
        else:
            rule, l1 = _mr.RULE_SCALED, self.proj_w.l1_unit
        Wt = self.rows.w_sweeps(W, H, rule, l1, self.sweeps(N, T))
        W = np.ascontiguousarray(Wt.T)
        return {"W": W, "H": H}, self.objective(W, H), None
