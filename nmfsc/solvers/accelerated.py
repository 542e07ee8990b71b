r"""An accelerated solver for nmf_sc's problem: ``nmf_sc(..., solver="accelerated")``.

It minimises the same :math:`E(W, H) = \tfrac12 \lVert V - W H \rVert_F^2`
over the same constraint set as the paper's algorithm
(:mod:`nmfsc.solvers.hoyer`), from the same start (:meth:`HoyerSteps.initialize
<nmfsc.solvers.hoyer.HoyerSteps.initialize>`), by block coordinate descent
over the rows of H and of W^T, each block minimised exactly. Each iteration
updates H, then W.

Both sub-problems have the form: for the rows :math:`x_k` of X (M x n; X = H
for the H step, X = W^T for the W step),

.. math:: f(X) = \tfrac12 \langle G, X X^T \rangle - \langle A, X \rangle
          + \tfrac12 \lVert V \rVert^2,

with :math:`G = W^T W`, :math:`A = W^T V` for H and :math:`G = H H^T`,
:math:`A = H V^T` for W^T. With the other rows fixed, f depends on row k
through :math:`f_k(x) = \tfrac12 g_{kk} \lVert x \rVert^2 - \langle b_k, x
\rangle`, :math:`b_k = a_k - \sum_{j \ne k} g_{kj} x_j`, and each row's
constraint set has an exact minimiser of :math:`f_k`:

* an unconstrained factor (x >= 0): :math:`x_k = \max(0, b_k / g_{kk})`, the
  HALS update (Cichocki & Phan 2009);
* the rows of H with ``sparseness_h`` (x >= 0, unit L2 norm, the target L1
  norm): the norm is fixed, so :math:`f_k` is :math:`-\langle b_k, x\rangle`
  up to a constant and its minimiser over the set is the nearest point of the
  set to :math:`b_k`: :math:`x_k = P(b_k)`, Hoyer's projection (Potluru et al.
  2013, "Block coordinate descent for sparse NMF");
* the columns of W with ``sparseness_w`` (the target sparseness at any L2
  norm, as nmf_sc has them): :math:`x_k = r\,u` with :math:`u = P(b_k)` at unit
  norm and :math:`r = \langle b_k, u\rangle / g_{kk}`; a row whose
  :math:`\langle b_k, u\rangle \le 0` is left as it is.

The products G and A cost one pass over V (O(N T M)), a sweep over the rows
O(M^2 n) plus M projections, so several sweeps are taken per pass, as Gillis &
Glineur (2012) do for HALS: up to ``K = 1 + SWEEP_RATIO * rho`` sweeps, rho =
(N T M) / (n M^2 + n M) the cost of the pass over the cost of a sweep, at most
``SWEEPS_MAX``, and fewer when a sweep decreases f by less than
``SWEEP_DELTA`` times the first sweep did. When only W is constrained the rows
of H are then scaled to unit L2 norm and the columns of W take the norms (W H
unchanged; nmf_sc's convention).

Guarantees: a row is replaced only when its value of :math:`f_k`, computed in
the kernel, does not rise (:mod:`nmfsc._kernels.rowblocks`), so E never
increases up to the rounding of the recorded expanded objective (about 1e-16
||V||^2); every row of a constrained factor is an output of Hoyer's projection
(times its norm), so the constraints hold at every iterate. The objective
converges (it is bounded below); the iterates need not (the sets are not
convex). The state is W and H alone, so a checkpoint resumes bit-identically.

The recorded objective is E after the W step by the expansion of
:func:`nmfsc.solvers._objective.expanded_objective` (recomputed exactly when
small, as nmf_sc does).
"""

from __future__ import annotations

import itertools

import numpy as np

from nmfsc._blocked import PARALLEL_ENTRIES, gram_rows, in_groups, matmul_columns
from nmfsc._kernels import rowblocks as _rb
from nmfsc._kernels import sparse_projection as _proj
from nmfsc._threads import run_groups, split, threads
from nmfsc.solvers._objective import expanded_objective
from nmfsc.solvers.hoyer import HoyerSteps
from nmfsc.sparseness import l1_for_sparseness

__all__ = ["AcceleratedSteps", "sweep"]

#: Sweeps per update: 1 + SWEEP_RATIO * (cost of a pass over V) / (cost of one sweep).
SWEEP_RATIO = 1.0
#: At most this many sweeps per update of a factor.
SWEEPS_MAX = 10
#: The sweeps stop when one decreases f by less than this times the first one.
SWEEP_DELTA = 0.1
#: With average_sparseness: halvings of the step size before a redistribution is skipped.
REDISTRIBUTE_HALVINGS = 8


def sweep(X, G, A, rule, l1=1.0, sweeps=1, delta=0.0):
    """Up to ``sweeps`` block coordinate sweeps over the rows of X for
    :math:`f(X) = \\tfrac12 \\langle G, X X^T\\rangle - \\langle A, X\\rangle`
    (module docstring); returns a new array (X is not modified).

    ``rule``: ``rowblocks.RULE_NONNEG`` (HALS), ``RULE_UNIT`` (rows at unit L2
    norm and L1 norm ``l1``) or ``RULE_SCALED`` (rows at that L1/L2 ratio,
    any norm); ``l1`` is one value for every row or one per row. The sweeps
    stop early when one decreases f by at most ``delta`` times the first
    sweep's decrease (``delta=0``: only when a sweep changes nothing).
    """
    X = np.array(X, order="C")
    M, n = X.shape
    G = np.ascontiguousarray(G)
    A = np.ascontiguousarray(A)
    # R = G X in float64 whatever X's dtype (the kernel's b_k are float64).
    R = matmul_columns(np.asarray(G, dtype=np.float64), np.asarray(X, dtype=np.float64))
    l1 = np.ascontiguousarray(np.broadcast_to(np.asarray(l1, dtype=np.float64), (M,)))
    rows = _Rows(X, R, G, A, rule, l1, _proj.max_filter_passes(n))
    blocks = [(start, min(M, start + _rb.BLOCK)) for start in range(0, M, _rb.BLOCK)]
    workers = threads() if M * n >= PARALLEL_ENTRIES and len(blocks) > 1 else 1
    first = None
    for _ in range(sweeps):
        if workers == 1:
            decrease = rows.sweep(blocks)
        else:
            decrease = rows.sweep_overlapped(blocks, workers)
        first = decrease if first is None else first
        if not decrease > delta * first:
            break
    return X


class _Rows:
    """One factor's sweeps (:func:`sweep`): X, R = G X, the rule, and scratch.

    After a block of rows (``rowblocks.sweep_block``, sequential), every row
    of R takes the block's changes D (``rowblocks.update_r``). On several
    threads the update is split in two: first the rows of the next block
    (all that its sweep reads), then, at the same time, the next block's
    sweep on this thread and the other rows of R on all threads, by pieces
    of columns taken in turn (this thread joins when its sweep is done).
    Two buffers of changes alternate, the one being read and the one being
    written. Every entry of R takes the same expression for each block, the
    blocks in order, so the bits are those of one thread."""

    def __init__(self, X, R, G, A, rule, l1, max_passes):
        self.X, self.R, self.G, self.A = X, R, G, A
        self.rule, self.l1, self.max_passes = rule, l1, max_passes
        n = X.shape[1]
        self.b, self.new = np.empty(n), np.empty(n)
        self.D = np.empty((2, _rb.BLOCK, n))

    def _block(self, start, stop, slot, decrease):
        """The block's rows (``rowblocks.sweep_block``), their changes into
        ``D[slot]``; the sweep's decrease so far."""
        decrease, _unchanged = _rb.sweep_block(
            self.X,
            self.R,
            self.G,
            self.A,
            self.rule,
            self.l1,
            self.max_passes,
            self.b,
            self.new,
            self.D[slot],
            start,
            stop,
            decrease,
        )
        return decrease

    def _update_all(self, start, stop, slot):
        """Every row of R takes the changes ``D[slot]`` of the block
        ``start..stop-1`` (``rowblocks.update_r``), R's columns in groups
        (each alone)."""
        M, n = self.R.shape

        def update(lo, hi):
            _rb.update_r(self.R, self.G, self.D[slot], start, stop, lo, hi)

        in_groups(n, M * n, update)

    def sweep(self, blocks):
        """One sweep, each block's update of R over column groups; its decrease of f."""
        decrease = 0.0
        for start, stop in blocks:
            decrease = self._block(start, stop, 0, decrease)
            self._update_all(start, stop, 0)
        return decrease

    def sweep_overlapped(self, blocks, workers):
        """:meth:`sweep` with each block's sweep beside the update of R by
        the block before it (class docstring); the same bits."""
        M, n = self.R.shape
        R, G = self.R, self.G
        columns = split(n, min(8 * workers, max(1, n // 1024)))
        start, stop = blocks[0]
        decrease = self._block(start, stop, 0, 0.0)
        for index, (start, stop) in enumerate(blocks[:-1]):
            changes = self.D[index % 2]
            after, end = blocks[index + 1]
            _rb.update_r_rows(R, G, changes, start, stop, after, end, 0, n)
            pieces = [
                (r0, r1, lo, hi)
                for r0, r1 in ((0, after), (end, M))
                if r1 > r0
                for lo, hi in columns
            ]
            taken = itertools.count()  # its next() is atomic: each piece once

            def update(pieces=pieces, taken=taken, changes=changes, start=start, stop=stop):
                while (piece := next(taken)) < len(pieces):
                    r0, r1, lo, hi = pieces[piece]
                    _rb.update_r_rows(R, G, changes, start, stop, r0, r1, lo, hi)

            def sweep_then_update(after=after, end=end, slot=(index + 1) % 2, prior=decrease):
                value = self._block(after, end, slot, prior)
                update()
                return value

            decrease = run_groups([sweep_then_update] + [update] * (workers - 1))[0]
        start, stop = blocks[-1]
        self._update_all(start, stop, (len(blocks) - 1) % 2)
        return decrease


class AcceleratedSteps(HoyerSteps):
    """One iteration of ``nmf_sc(solver="accelerated")``: the H step, then the
    W step (module docstring). The start is nmf_sc's; the state is W and H
    (no step sizes)."""

    name = "nmf_sc (accelerated)"
    degenerate_hint = "try another random_state, fewer components or a lower sparseness target"
    state_scalars: tuple[str, ...] = ()

    def initialize(self, W, H):
        state = super().initialize(W, H)
        return {"W": state["W"], "H": state["H"]}

    def step_sizes(self, state):
        return None

    def sweeps(self, n, n_other):
        """K of the module docstring for a factor with rows of length ``n``."""
        M = self.n_components
        rho = (n * n_other * M) / (n * M * M + n * M)
        return int(min(SWEEPS_MAX, 1 + SWEEP_RATIO * rho))

    def step(self, state):
        W, H = state["W"], state["H"]
        N, T = self.data.shape
        WtV = self.data.wtv(W)
        WtW = self.w_gram(W)
        if self.proj_h is None:
            H = sweep(H, WtW, WtV, _rb.RULE_NONNEG, 1.0, self.sweeps(T, N), SWEEP_DELTA)
            if self.proj_w is not None:
                W, H = unit_rows(W, H)
        else:
            H = self.constrained(self.proj_h, _rb.RULE_UNIT, H, WtW, WtV, self.sweeps(T, N))
        HHt = gram_rows(H)
        HVt = self.data.hvt(H)
        Wt = np.ascontiguousarray(W.T)
        if self.proj_w is None:
            Wt = sweep(Wt, HHt, HVt, _rb.RULE_NONNEG, 1.0, self.sweeps(N, T), SWEEP_DELTA)
        else:
            Wt = self.constrained(self.proj_w, _rb.RULE_SCALED, Wt, HHt, HVt, self.sweeps(N, T))
        W = np.ascontiguousarray(Wt.T)
        energy = expanded_objective(self.vv, HVt, Wt, HHt, columns=False)
        return {"W": W, "H": H}, self.recorded(energy, W, H), None

    def constrained(self, projector, rule, X, G, A, sweeps):
        """The sweeps over the rows of a constrained factor X (H, or W^T),
        ``rule`` ``RULE_UNIT`` (H's rows) or ``RULE_SCALED`` (W's columns).

        With ``average_sparseness`` each row is held at its own current
        sparseness (one L1 norm per row: a sweep over single rows cannot
        move sparseness from one row to another), then the factor takes one
        projected gradient step onto the average set (:meth:`redistribute`),
        which can. E never rises: each sweep's rows and the step are
        accepted only where they do not raise it."""
        if not self.average:
            return sweep(X, G, A, rule, projector.l1_unit, sweeps, SWEEP_DELTA)
        X = sweep(X, G, A, rule, self.ratios(X, projector), sweeps, SWEEP_DELTA)
        return self.redistribute(projector, X, G, A, own_norm=rule == _rb.RULE_SCALED)

    @staticmethod
    def ratios(X, projector):
        """Each row's L1 / L2 ratio (the L1 norm it has at unit L2 norm), the
        target's for an all-zero row."""
        X = np.asarray(X, dtype=np.float64)
        l1 = np.abs(X).sum(axis=1)
        l2 = np.sqrt(np.einsum("ij,ij->i", X, X))
        target = l1_for_sparseness(projector.sparseness, X.shape[1])
        return np.where(l2 > 0, l1 / np.where(l2 > 0, l2, 1.0), target)

    def redistribute(self, projector, X, G, A, own_norm):
        """One projected gradient step on the rows of X for
        :math:`f(X) = \\tfrac12 \\langle G, XX^T\\rangle - \\langle A, X\\rangle`,
        projected onto the average set (``projector``; each row at its own
        norm with ``own_norm``), from the step size 1 / L (L the largest
        eigenvalue of G), halved at most :data:`REDISTRIBUTE_HALVINGS` times
        until f does not rise; X itself when no trial lowers it."""
        X = np.ascontiguousarray(X)
        before = expanded_objective(self.vv, A, X, G, False, gram_rows(X))
        D = matmul_columns(np.asarray(G), X, minus=A)
        mu = 1.0 / _largest(G)
        for _ in range(REDISTRIBUTE_HALVINGS + 1):
            trial = projector.step_rows(X, D, mu, None, own_norm)
            if trial is not None:
                after = expanded_objective(self.vv, A, trial, G, False, gram_rows(trial))
                if after <= before:
                    return np.ascontiguousarray(projector.take())
            mu /= 2.0
        return X


def unit_rows(W, H):
    """Rows of H scaled to unit L2 norm, W's columns multiplied by the norms
    (W H unchanged); a zero row stays zero. Returns new arrays."""
    norms = np.sqrt(np.einsum("ij,ij->i", H, H))
    safe = np.where(norms > 0, norms, 1.0).astype(H.dtype)
    return np.ascontiguousarray(W * safe), H / safe[:, None]


def _largest(G):
    """The largest eigenvalue of the symmetric positive semi-definite G (1 if it is 0)."""
    value = float(np.linalg.eigvalsh(np.asarray(G, dtype=np.float64))[-1])
    return value if value > 0 else 1.0
