"""NMF with sparseness constraints (Hoyer 2004, Section 3.3).

The iteration, on the normalised data V (max 1), with E(W, H) = 0.5 ||V - W H||_F^2:

H step, when ``sparseness_h`` (s_H) is set -- projected gradient descent::

    dH = W^T (W H - V)
    repeat:  H' = P_H(H - mu_H dH);  accept if E(W, H') <= E(W, H), else mu_H /= 2
    mu_H *= 1.2 after acceptance

where P_H projects every row onto L2 = 1, L1 = sqrt(T) - (sqrt(T) - 1) s_H.
Otherwise the multiplicative update H <- H * (W^T V) / (W^T W H + 1e-9), then
every row of H scaled to unit L2 norm and the columns of W multiplied by the
old norms (W H unchanged).

W step, when ``sparseness_w`` (s_W) is set: the same with dW = (W H - V) H^T,
W' = P_W(W - mu_W dW), where P_W projects every column w' of the trial onto
L2 = ||w'||_2 (its own norm) and L1 = (sqrt(N) - (sqrt(N) - 1) s_W) ||w'||_2.
Otherwise W <- W * (V H^T) / (W H H^T + 1e-9).

A step size below 1e-200 means no descent step exists: the run has converged
(stop reason ``"step_size"``).

Speed. A trial never forms the N x T residual. With the products of the step
computed once (W^T V and W^T W for the H step, V H^T and H H^T for the W
step),

    E(W, H') = 0.5 (||V||^2 - 2 <W^T V, H'> + <W^T W, H' H'^T>),
    E(W', H) = 0.5 (||V||^2 - 2 <V H^T, W'> + <H H^T, W'^T W'>),

which costs O(M^2 T) (or O(M^2 N)) per trial instead of O(N T M). This
expansion loses precision by cancellation when E is small next to ||V||^2
(absolute error about 1e-16 ||V||^2), so the acceptance test compares two
values computed by the same expansion from the same products (the objective
before the step is recomputed that way, not taken from the history): the
comparison is then between two nearly equally rounded numbers. The objective
recorded after each iteration is the last step's value by the same expansion
(the accepted trial's energy, or for a multiplicative W step the expansion with
the new W), so recording it costs no N x T product; when it is below 1e-4
||V||^2, where the cancellation would cost more than about 1e-11 of its
relative accuracy, it is recomputed exactly as 0.5 ||V - W H||_F^2 from W H
(see :func:`nmfsc.solvers._objective.expanded_objective`). The history is
non-increasing up to that rounding.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from nmfsc._blocked import gram_rows, in_groups, matmul_columns
from nmfsc._kernels import bracket as _bracket
from nmfsc._kernels import sparse_projection as _proj
from nmfsc._parameters import check
from nmfsc.backends import backend_for
from nmfsc.observed import Observed
from nmfsc.projection import project_average
from nmfsc.solvers._data import inner
from nmfsc.solvers._docs import EUCLIDEAN_UNITS, document
from nmfsc.solvers._objective import (
    ColumnGram,
    RowGram,
    SquaredErrorSteps,
    expanded_objective,
    multiplicative_h_update,
    multiplicative_w_update,
    scale_rows_to_unit_l2,
)
from nmfsc.solvers._result import NMFResult
from nmfsc.solvers._settings import LoopOptions, LoopSettings, takes_loop_settings
from nmfsc.solvers._start import refuse_dead_components
from nmfsc.solvers.dispatch import run_solver
from nmfsc.sparseness import l1_for_sparseness

if TYPE_CHECKING:  # typing.Unpack is Python >= 3.11; only the type checker needs it
    from typing_extensions import Unpack

__all__ = ["HoyerSteps", "nmf_sc", "support_sizes"]

MU_MIN = 1e-200
MU_GROWTH = 1.2
EPS = 1e-9


class _Projector:
    """Projects every row of an (count x n) array in one kernel call, reusing buffers."""

    def __init__(self, count, n, l1_unit, dtype=np.float64):
        self.l1_unit = l1_unit
        self.shape, self.dtype = (count, n), dtype
        self.out = None  # the buffer the last call wrote into (see _buffer_for and take)
        #: Whether :meth:`take` leaves the taken buffer here to be written into
        #: again (:meth:`keep_buffers`) instead of handing it over for good.
        self.keeps_buffers = False
        self._buffers: list[np.ndarray] = []  # the buffers owned here: at most two
        self.status = np.zeros(count, dtype=np.int64)
        self.passes = np.zeros(count, dtype=np.int64)
        self.ones = np.ones(count)
        self.max_passes = _proj.max_filter_passes(n)

    def rows(self, X):
        """Project the rows of contiguous X onto L2 = 1, L1 = l1_unit (the
        start's projection). Returns the projected rows (a buffer: copy
        before the next call), or None if some row is not finite. The kernel
        computes in float64 per row; with float32 rows it writes float32
        results (the targets then hold to float32's precision)."""
        return self._in_groups(X, partial(self._project, X, self.l1_unit * self.ones))

    def step_rows(self, X, G, mu, guide, own_norm=False):
        """:meth:`rows` of the trial ``X - mu * G`` of a projected gradient
        step, at unit L2 norm or, with ``own_norm``, each row at its own
        (``projection.project_step_rows``: the trial is formed row by row
        inside the kernel and never stored whole). ``guide``: the support
        size to expect in each row (int64), that of the factor X
        (:func:`support_sizes`); it speeds up long rows whose values are
        heavy-tailed and moves only the last bits
        (``projection.project_vector_guided``). Returns the projected rows
        (a buffer, as :meth:`rows`), or None if some trial row is not finite
        or has no norm to project at."""
        return self._in_groups(X, partial(self._step, X, G, mu, guide, own_norm))

    def _in_groups(self, X, task):
        """Run ``task(a, b)`` on groups of X's rows, one group per thread when X
        is large (the kernels release the GIL); the projected rows, or None."""
        self.out = self._buffer_for(X)
        in_groups(X.shape[0], X.size, task)
        if np.any(self.status != _proj.STATUS_OK):
            return None
        return self.out

    def _project(self, X, l1, a, b):
        """Rows a..b-1 of :meth:`rows`."""
        rows = slice(a, b)
        _proj.project_rows(
            X[rows],
            l1[rows],
            self.ones[rows],
            True,
            _proj.METHOD_FAST,
            self.out[rows],
            self.status[rows],
            self.passes[rows],
            self.max_passes,
        )

    def _step(self, X, G, mu, guide, own_norm, a, b):
        """Rows a..b-1 of :meth:`step_rows`, with a row of scratch of their own."""
        rows = slice(a, b)
        row = np.empty(self.shape[1], dtype=self.dtype)
        _proj.project_step_rows(
            X[rows],
            G[rows],
            mu,
            self.l1_unit,
            own_norm,
            _proj.METHOD_FAST,
            self.out[rows],
            self.status[rows],
            self.passes[rows],
            self.max_passes,
            guide[rows],
            row,
        )

    def _buffer_for(self, X):
        """The buffer the projection of X's rows is written into: one owned
        here that shares no memory with X, else a new one. X is the
        iterate the trials step from (the run's committed H, or a copy of
        W's columns), so a trial never overwrites it, even when X is a
        buffer taken from here (:meth:`keep_buffers`)."""
        for buffer in self._buffers:
            if not np.may_share_memory(buffer, X):
                return buffer
        buffer = np.empty(self.shape, dtype=self.dtype)
        self._buffers = [*self._buffers[-1:], buffer]
        return buffer

    def keep_buffers(self):
        """Let :meth:`take` keep the buffer it hands out, to be written into
        again once it is no longer the iterate the trials step from: with
        the H step's accepted trial taken as the new H, the trials of the
        next step go into the buffer of the H before, and the steps allocate
        no count x n array after the second. Only for a run whose callers
        keep no iterate but the committed one (a run without a callback:
        a callback may keep ``state.H``)."""
        self.keeps_buffers = True

    def take(self):
        """The last projected rows as the caller's array (no copy). The
        buffer is handed over (the next call writes into a new one), or,
        after :meth:`keep_buffers`, also kept here for the call after the
        next one (:meth:`_buffer_for` never writes into the array the trials
        step from)."""
        out = self.out
        if not self.keeps_buffers:
            self._hand_over()
        return out

    def _hand_over(self):
        """Forget the last buffer written into: it is the caller's now."""
        self._buffers = [b for b in self._buffers if b is not self.out]
        self.out = None

    def start_rows(self, X):
        """:meth:`rows` of the start's factor (H, or C = W^T), handed over
        for good (never kept, even after :meth:`keep_buffers`), not
        borrowed: the start is the run's array (H, made contiguous, is the
        buffer itself; W = C^T is a view of it with one component, a copy
        only with more). The start is finite (checked before), so every row
        projects."""
        projected = self.rows(np.ascontiguousarray(X))
        if projected is None:
            raise ValueError("the start has a row that cannot be projected: it is not finite")
        self._hand_over()
        return projected


class _AverageProjector:
    """:class:`_Projector`'s interface for a factor whose rows (H's, or W's
    columns as the rows of C = W^T) are held to a sparseness on average
    (``average_sparseness``): one call of
    :func:`nmfsc.projection.project_average` on all the rows at once, their
    mean sparseness the target, each row free to differ. The rows' L2 norms
    are 1, or with ``own_norm`` each trial row's own. Every call returns a
    new array (no buffers are shared)."""

    def __init__(self, sparseness, dtype=np.float64):
        self.sparseness, self.dtype = sparseness, dtype
        self.out = None

    def rows(self, X, own_norm=False):
        """The rows of X projected at unit L2 norm (or their own), or None if
        one is not finite or, with ``own_norm``, has no norm."""
        X = np.asarray(X, dtype=np.float64)
        if not np.isfinite(X).all():
            return None
        if own_norm and not np.all(np.einsum("ij,ij->i", X, X) > 0):
            return None
        norms = None if own_norm else 1.0
        self.out = project_average(X, self.sparseness, axis=1, norms=norms).astype(
            self.dtype, copy=False
        )
        return self.out

    def step_rows(self, X, G, mu, guide, own_norm=False):
        """:meth:`rows` of the trial ``X - mu * G`` (``guide`` is not used)."""
        with np.errstate(over="ignore", invalid="ignore"):
            trial = np.asarray(X, dtype=np.float64) - mu * np.asarray(G, dtype=np.float64)
        return self.rows(trial, own_norm)

    def keep_buffers(self):
        """Nothing to keep: every call writes a new array."""

    def take(self):
        """The last projected rows, the caller's."""
        out, self.out = self.out, None
        return out

    def start_rows(self, X):
        """:meth:`rows` of the start's factor (finite, checked before)."""
        projected = self.rows(X)
        if projected is None:
            raise ValueError("the start has a row that cannot be projected: it is not finite")
        return self.take()


def _reused(buffer, shape, dtype):
    """``buffer`` if it has this shape and dtype, else a new (empty) array."""
    if buffer is not None and buffer.shape == shape and buffer.dtype == dtype:
        return buffer
    return np.empty(shape, dtype=dtype)


def support_sizes(X):
    """The non-zero entries of each row of a projected factor (H, or C = W^T),
    as int64: the guide for the projection of a trial stepped from it
    (:meth:`_Projector.step_rows`). Computed from the factor itself, so a resumed
    run guides its projections exactly as the uninterrupted run did."""
    return _bracket.row_supports(np.ascontiguousarray(X))


class HoyerSteps(SquaredErrorSteps):
    """One iteration of nmf_sc: the H step, then the W step (module docstring).

    :meth:`step` is written in four half-steps, the interface a backend that
    keeps V or H elsewhere overrides (the Dask backend's ``DaskHoyerSteps``
    replaces the products with chunk-wise reductions and keeps the rules):

    - :meth:`h_multiplicative` and :meth:`h_projected`: H's update, with W fixed;
    - :meth:`w_multiplicative` and :meth:`w_projected`: W's update, with H fixed;

    and the two Gram caches :attr:`w_gram` (W^T W, a
    :class:`~nmfsc.solvers.framework.ColumnGram`) and :attr:`h_gram` (H H^T, a
    :class:`~nmfsc.solvers.framework.RowGram`).
    """

    name = "nmf_sc"
    degenerate_hint: str | None = (
        "a zero of the multiplicative update (or of the projection) never moves again; "
        'solver="accelerated" (nmfsc fit --solver accelerated) solves the same problem from '
        "the same start by block coordinate descent and can revive them"
    )
    state_scalars: tuple[str, ...] = ("mu_W", "mu_H")

    def __init__(self, data, n_components, sparseness_w, sparseness_h, average_sparseness=False):
        super().__init__(data, n_components)
        N, T = data.shape
        M = n_components
        for name, value, n, vectors in (
            ("sparseness_w", sparseness_w, N, "W's columns (V's rows)"),
            ("sparseness_h", sparseness_h, T, "H's rows (V's columns)"),
        ):
            if value is not None and n < 2:
                raise ValueError(
                    f"{name}={value!r} is set, but {vectors} have a single entry, whose "
                    f"sparseness is undefined; use {name}=None"
                )
        self.s_w = sparseness_w
        self.s_h = sparseness_h
        self.average = bool(average_sparseness)
        self.proj_h = self.proj_w = None
        if sparseness_h is not None:
            self.proj_h = self.projector(M, T, sparseness_h, data.dtype)
        if sparseness_w is not None:
            self.proj_w = self.projector(M, N, sparseness_w, data.dtype)
        # W^T W, computed once per W array (as the trials' columns C C^T when W
        # is projected, so that the kept product and a recomputed one agree).
        self.w_gram = ColumnGram(from_columns=sparseness_w is not None)
        self.h_gram = RowGram(self.row_gram)  # H H^T of the H the last H step accepted
        self._gradient = None  # dH's buffer (M x T), reused by every H step
        self._wtv = None  # W^T V's buffer (M x T), reused by every H step

    def projector(self, count, n, sparseness, dtype):
        """The projector of a factor's ``count`` rows of length ``n``: each
        row at the sparseness (:class:`_Projector`) or, with
        ``average_sparseness``, their mean (:class:`_AverageProjector`)."""
        if self.average:
            return _AverageProjector(sparseness, dtype)
        return _Projector(count, n, l1_for_sparseness(sparseness, n), dtype)

    # --- start ------------------------------------------------------------
    def initialize(self, W, H):
        """The start of Hoyer's code: rows of H to unit L2 norm; project W's
        columns (L2 = 1) if s_W is set and H's rows if s_H is set. Step sizes
        start at 1. A factor left to multiplicative updates may not have an
        all-zero column (W) or row (H): it could never move (see
        :meth:`refuse_dead`)."""
        self.refuse_dead(W, H)
        norms = np.linalg.norm(H, axis=1, keepdims=True)
        H = H / np.where(norms > 0, norms, 1.0)  # a zero row stays zero
        if self.proj_w is not None:
            W = self.proj_w.start_rows(W.T).T
        if self.proj_h is not None:
            H = self.proj_h.start_rows(H)
        return {
            "W": np.ascontiguousarray(W),
            "H": np.ascontiguousarray(H),
            "mu_W": 1.0,
            "mu_H": 1.0,
        }

    def refuse_dead(self, W, H):
        """Refuse zero components of the factors that take multiplicative updates
        (a projected factor is moved by its projection)."""
        refuse_dead_components(
            "nmf_sc", W if self.proj_w is None else None, H if self.proj_h is None else None
        )

    def step_sizes(self, state):
        return (float(state["mu_W"]), float(state["mu_H"]))

    def row_gram(self, X):
        """X X^T, as the H step computes it for its trials (:attr:`h_gram`'s
        product on a miss): :func:`nmfsc._blocked.gram_rows`. A backend whose
        arrays are not NumPy's overrides it."""
        return gram_rows(X)

    def reuse_buffers(self):
        """The projectors keep their buffers (:meth:`_Projector.keep_buffers`):
        an H step's trials are written into the H before the committed one,
        so the steps allocate no M x T array after the second iteration."""
        for projector in (self.proj_h, self.proj_w):
            if projector is not None:
                projector.keep_buffers()

    # --- one iteration ----------------------------------------------------
    def step(self, state):
        W, H = state["W"], state["H"]
        mu_w, mu_h = float(state["mu_W"]), float(state["mu_H"])
        HHt = None  # H H^T of the new H, when the H step has computed it
        if self.proj_h is None:
            W, H = self.h_multiplicative(W, H)
        else:
            H, mu_h, _, HHt = self.h_projected(W, H, mu_h)
            if H is None:  # no descent step: converged; only mu_H changed
                return {**state, "mu_H": mu_h}, None, "step_size"
        reason = None
        if self.proj_w is None:
            W, energy = self.w_multiplicative(W, H, HHt)
        else:
            W_new, mu_w, energy = self.w_projected(W, H, mu_w, HHt)
            if W_new is None:
                reason = "step_size"  # H has moved; W stays
            else:
                W = W_new
        new = {"W": W, "H": H, "mu_W": mu_w, "mu_H": mu_h}
        return new, self.recorded(energy, W, H), reason

    def h_multiplicative(self, W, H, rescale=True):
        """The multiplicative H update; with ``rescale`` (nmf_sc) rows of H are
        then scaled to unit L2 norm and W's columns take the norms."""
        WtV = self.data.wtv(W)
        WtW = self.w_gram(W)
        H_new, row_ss = np.empty_like(H), np.empty(H.shape[0])
        multiplicative_h_update(H, WtV, matmul_columns(WtW, H), EPS, H_new, row_ss)
        if rescale:
            W = W.copy()
            scale_rows_to_unit_l2(H_new, W, row_ss)
        return W, H_new

    def w_multiplicative(self, W, H, HHt=None):
        """The multiplicative W update; returns the new W and E(W, H) by the expansion."""
        HHt = gram_rows(H) if HHt is None else HHt
        W, cross = multiplicative_w_update(self.data, W, H, HHt, EPS)
        # expanded_objective(vv, V H^T, W, H H^T, columns=True, quad=W^T W)
        return W, 0.5 * (self.vv - 2.0 * cross + inner(HHt, self.w_gram(W)))

    def h_projected(self, W, H, mu):
        """The projected gradient H step. Returns the new H (None if no step
        size gives descent), the new step size, E(W, H) by the expansion, and
        H H^T of the new H (which the W step needs too)."""
        # W^T V and dH live only in this step: their buffers are the same
        # every step, so that no M x T array is allocated (and its pages
        # zero-filled by the kernel on first touch) anew.
        dtype = np.result_type(W.dtype, self.data.dtype, H.dtype)
        self._wtv = _reused(self._wtv, H.shape, dtype)
        self._gradient = _reused(self._gradient, H.shape, dtype)
        WtV = self.data.wtv(W, out=self._wtv)
        WtW = self.w_gram(W)
        before = expanded_objective(self.vv, WtV, H, WtW, False, self.h_gram(H))
        dH = matmul_columns(WtW, H, out=self._gradient, minus=WtV)
        H_new, mu, energy, quad = self._line_search(self.proj_h, H, dH, mu, before, WtV, WtW)
        if H_new is not None:
            H_new = self.proj_h.take()  # the accepted trial's buffer is the new H
            self.h_gram.keep(H_new, quad)
        return H_new, mu, energy, quad

    def w_projected(self, W, H, mu, HHt=None):
        """The projected gradient W step, taken on C = W^T (M x N, one column
        of W per row: the projection's layout), with the gradient
        dC = H H^T C - H V^T and

            E(C^T, H) = 0.5 (||V||^2 - 2 <H V^T, C> + <H H^T, C C^T>);

        E before the step by the same expansion as the trials' (C C^T = W^T W,
        kept from the step that made W), so that the acceptance test compares
        two values rounded alike; only the accepted trial is transposed back
        into W. Returns the new W (None if no step size gives descent), the
        new step size and E by the expansion."""
        HVt = self.data.hvt(H)
        HHt = gram_rows(H) if HHt is None else HHt
        C = np.ascontiguousarray(W.T)
        before = expanded_objective(self.vv, HVt, C, HHt, False, self.w_gram(W, C))
        dC = matmul_columns(HHt, C, minus=HVt)
        C_new, mu, energy, quad = self._line_search(
            self.proj_w, C, dC, mu, before, HVt, HHt, own_norm=True
        )
        if C_new is None:
            return None, mu, energy
        # A copy whatever M (for M = 1 np.ascontiguousarray would return a
        # view): the projector's buffer stays its own, for the next W step.
        W_new = np.array(C_new.T, order="C")
        self.w_gram.keep(W_new, quad)
        return W_new, mu, energy

    def _line_search(self, projector, X, D, mu, before, A, G, own_norm=False):
        """The paper's step rule on the rows of X (H, or C = W^T) with the gradient
        D: the trial ``P(X - mu D)`` is accepted if its energy
        ``0.5 (||V||^2 - 2 <A, X'> + <G, X' X'^T>)`` is at most ``before``,
        else mu is halved. Returns the accepted rows (the projector's
        buffer: the caller takes it or copies it), the next step size
        (mu * 1.2), their energy and X' X'^T; or, when mu falls
        below 1e-200 or is no longer finite (no descent step), None, that mu,
        ``before`` and None."""
        guide = support_sizes(X)
        while True:
            projected = projector.step_rows(X, D, mu, guide, own_norm)
            if projected is not None:
                quad = gram_rows(projected)
                after = expanded_objective(self.vv, A, projected, G, False, quad)
                if after <= before:
                    return projected, mu * MU_GROWTH, after, quad
            mu /= 2.0
            if not MU_MIN <= mu < np.inf:  # also ends the loop for a NaN or infinite mu
                return None, mu, before, None


@document(EUCLIDEAN_UNITS, mask=True)
@takes_loop_settings
def nmf_sc(
    V: ArrayLike,
    n_components: int,
    *,
    sparseness_w: float | None = None,
    sparseness_h: float | None = None,
    solver: str = "hoyer",
    average_sparseness: bool = False,
    mask: ArrayLike | str | Observed | None = None,
    **loop: Unpack[LoopOptions],
) -> NMFResult:
    r"""Non-negative matrix factorization with sparseness constraints (Hoyer 2004).

    Finds non-negative ``W`` (N x M) and ``H`` (M x T) minimising

    .. math:: E(W, H) = \tfrac12 \lVert V - W H \rVert_F^2

    subject, when set, to ``sparseness(W[:, i]) == sparseness_w`` for every
    column of W and ``sparseness(H[i, :]) == sparseness_h`` with
    ``||H[i, :]||_2 == 1`` for every row of H, where
    ``sparseness(x) = (sqrt(n) - ||x||_1 / ||x||_2) / (sqrt(n) - 1)``.

    Each iteration updates H, then W. A constrained factor takes a projected
    gradient step (for H: :math:`H' = P(H - \mu_H W^T (W H - V))`, rows
    projected to L2 = 1 and the L1 norm of the target sparseness), accepted
    when :math:`E` does not increase, otherwise the step size is halved and
    the step retried; after acceptance :math:`\mu \leftarrow 1.2 \mu`. Each
    column of W is projected at its own norm after the step. An unconstrained
    factor takes Lee & Seung's multiplicative update
    :math:`H \leftarrow H \odot (W^T V) \oslash (W^T W H + 10^{-9})` (then rows
    of H rescaled to unit norm, W's columns taking the norms) or
    :math:`W \leftarrow W \odot (V H^T) \oslash (W H H^T + 10^{-9})`.
    The objective never increases (up to rounding). See
    :doc:`/solvers` for the details and the fast evaluation of E.

    Parameters
    ----------
    %(data)s
    sparseness_w, sparseness_h : float in [0, 1] or None, default None
        Target sparseness of every column of W / every row of H; None leaves
        that factor unconstrained (multiplicative updates).
    solver : str, default "hoyer"
        The algorithm, one of the variants of nmf_sc in
        :data:`nmfsc.solvers.registry.SOLVERS`: "hoyer" is the paper's
        (described above), the one the figures are made with; "accelerated"
        solves the same problem from the same start, faster
        (:doc:`/solvers`, "nmf_sc(solver='accelerated')").
    average_sparseness : bool, default False
        Hold the sparseness targets on average only (Ohib, Gillis et al.
        2022): the *mean* sparseness of W's columns is ``sparseness_w`` (of
        H's rows, ``sparseness_h``), each free to differ, so a part may be
        as sparse as the data make it. Every projection is then
        :func:`nmfsc.projection.project_average` of the whole factor, one
        shared threshold; the accelerated solver takes projected gradient
        steps on such a factor (a sweep over single rows cannot move
        sparseness between them). In memory, without a mask.
    %(options)s

    Returns
    -------
    %(returns)s

    See Also
    --------
    SparseNMF : The same solver as a scikit-learn estimator (samples as rows).
    NMFResult : What it returns: the factors and the record of the run.
    nmf_euclidean : The same objective without sparseness constraints.
    sparse_nmf, local_nmf : Sparseness by a penalty rather than a constraint.
    project : The projection that holds each vector at its sparseness.
    compare : nmf_sc and standard NMF side by side on your data.

    Notes
    -----
    ``step_sizes`` are the final ``(mu_W, mu_H)`` (1.0 for an unconstrained
    factor). The run also converges (stop reason ``"step_size"``) when a step
    size falls below 1e-200; E never rises by more than rounding (~1e-16 ||V||^2).

    References
    ----------
    P. O. Hoyer, "Non-negative matrix factorization with sparseness
    constraints", JMLR 5:1457-1469, 2004.

    D. D. Lee and H. S. Seung, "Algorithms for non-negative matrix
    factorization", NIPS 13, 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc import nmf_sc
    >>> V = np.abs(np.random.default_rng(0).standard_normal((30, 40)))
    >>> res = nmf_sc(V, 4, sparseness_w=0.6, random_state=0, tol=1e-4)
    >>> res.stop_reason, bool(np.allclose(res.sparseness_W, 0.6))
    ('tol', True)
    >>> print(f"{res.relative_error:.2f}")  # ||V - W H|| / ||V||: W is in V's units
    0.52
    """
    settings = LoopSettings.from_keywords("nmf_sc", loop)
    s_w = check("sparseness_w", sparseness_w)
    s_h = check("sparseness_h", sparseness_h)
    params = {"sparseness_w": s_w, "sparseness_h": s_h}
    if check_average_sparseness(average_sparseness, s_w, s_h, V, mask):
        params["average_sparseness"] = True
    # the row of the table (nmfsc.solvers.registry) of this solver= variant
    return run_solver(
        "nmf_sc", V, n_components, params=params, settings=settings, mask=mask, solver=solver
    )


def check_average_sparseness(average_sparseness, sparseness_w, sparseness_h, V, mask=None):
    """``average_sparseness`` as a bool, checked: it needs a sparseness target
    and runs in memory without a mask (a ValueError says what to do)."""
    if not isinstance(average_sparseness, bool | np.bool_):
        raise TypeError(f"average_sparseness must be True or False, got {average_sparseness!r}")
    if not average_sparseness:
        return False
    if sparseness_w is None and sparseness_h is None:
        raise ValueError(
            "average_sparseness=True holds a sparseness target on average, but neither "
            "sparseness_w nor sparseness_h is set; set one, or leave average_sparseness=False"
        )
    if mask is not None:
        raise ValueError(
            "average_sparseness=True does not take a mask yet; fill the missing entries, "
            "or hold every vector to the target (average_sparseness=False)"
        )
    backend = backend_for(V)
    if backend is not None:
        raise ValueError(
            f"average_sparseness=True does not run on {backend.arrays()} yet; compute V "
            "into memory, or hold every vector to the target (average_sparseness=False)"
        )
    return True
