"""The Euclidean objective E = 0.5 ||V - W H||_F^2: computed exactly from W H,
or from the Gram products an iteration already has (without forming W H), and
the base of the steps of the solvers that minimise it."""

from __future__ import annotations

import numpy as np

from nmfsc._blocked import gram_rows, in_groups, matmul_unsplit
from nmfsc._kernels import updates as _k
from nmfsc.solvers._data import EXACT_BELOW, inner
from nmfsc.solvers._loop import Steps

__all__ = [
    "EXACT_BELOW",
    "ColumnGram",
    "RowGram",
    "SquaredErrorSteps",
    "expanded_objective",
    "multiplicative_h_update",
    "multiplicative_w_update",
    "scale_rows_to_unit_l2",
]


class ColumnGram:
    """``X^T X``, computed once per array and reused while it is asked for the
        same array object.

        The solvers never modify the arrays of their state in place, so the array's
        identity stands for its contents: nmf_sc's W step computes W^T W of its
        result for the objective and the next H step needs it again (as every H
        step does when W is fixed), and nmf_euclidean's next H step needs the W^T W
        its objective took. A miss computes the same product, so a resumed run,
        whose W is a loaded copy, gets the same bits. Only the last array is kept.

        ``from_columns=True`` computes the product as ``C C^T``
    (:func:`nmfsc._blocked.gram_rows`) with
        ``C = X.T`` copied to rows, the layout in which nmf_sc's projected W step
        has the columns of its trials, so that a product handed over by
        :meth:`keep` and one computed on a miss (a resumed run) have the same bits.
    """

    def __init__(self, from_columns=False):
        self._last = None
        self._from_columns = from_columns

    def keep(self, X, gram):
        """Take ``gram``, computed by the caller as this object would, as X^T X."""
        self._last = (X, gram)

    def __call__(self, X, columns=None):
        """X^T X; ``columns``, X.T copied to rows if the caller has it (a
        miss with ``from_columns`` then copies nothing)."""
        if self._last is not None and self._last[0] is X:
            return self._last[1]
        if self._from_columns:
            columns = np.ascontiguousarray(X.T) if columns is None else columns
            gram = gram_rows(columns)
        else:
            gram = matmul_unsplit(X.T, X)
        self._last = (X, gram)
        return gram


def expanded_objective(vv, A, X, G, columns, quad=None):
    """``0.5 ||V - W H||_F^2`` from products an iteration has already computed.

    For a W step (``columns=True``: ``X = W``, ``A = V H^T``, ``G = H H^T``)::

        0.5 (||V||^2 - 2 <V H^T, W> + <H H^T, W^T W>)

    and for an H step (``columns=False``: ``X = H``, ``A = W^T V``,
    ``G = W^T W``) the same with ``<W^T V, H>`` and ``<W^T W, H H^T>``; ``vv`` is
    ||V||^2. It costs O(M^2 N) (or O(M^2 T)) instead of the O(N T M) of forming
    W H. The expansion cancels: its absolute error is a few roundings of
    ||V||^2 (about 1e-16 ||V||^2 to 1e-15 ||V||^2), so its *relative* error is
    that over E. Callers that record it recompute E exactly when it is below
    ``EXACT_BELOW * vv``, which bounds the relative error of every recorded
    objective by about 1e-11. ``quad`` is ``W^T W`` (``H H^T``) if the caller
    has it. The two inner products are accumulated in float64 whatever the
    dtype (:func:`nmfsc.solvers._data.inner`), so that float32 factors keep
    a meaningful objective.
    """
    if quad is None:
        quad = matmul_unsplit(X.T, X) if columns else gram_rows(X)
    return 0.5 * (vv - 2.0 * inner(A, X) + inner(G, quad))


def multiplicative_h_update(H, WtV, WtWH, eps, out, row_ss):
    r"""Lee & Seung's :math:`H' = H \odot (W^T V) \oslash (W^T W H + \epsilon)`
    written to ``out``, and the squared norms of its rows to ``row_ss``
    (``updates.multiplicative_update_into`` on groups of rows, one per
    thread: each row is computed alone, so the bits are the same on any
    number of threads)."""

    def rows(a, b):
        _k.multiplicative_update_into(H[a:b], WtV[a:b], WtWH[a:b], eps, out[a:b], row_ss[a:b])

    in_groups(H.shape[0], H.size, rows)


def scale_rows_to_unit_l2(H, W, row_ss):
    """Rows of H scaled to unit L2 norm in place, W's columns multiplied by
    the norms ``sqrt(row_ss)`` (``updates.scale_rows_to_unit_l2`` on groups
    of rows of H, with their columns of W)."""

    def rows(a, b):
        _k.scale_rows_to_unit_l2(H[a:b], W[:, a:b], row_ss[a:b])

    in_groups(H.shape[0], H.size, rows)


def multiplicative_w_update(data, W, H, HHt, eps):
    r"""Lee & Seung's :math:`W' = W \odot (V H^T) \oslash (W H H^T + \epsilon)`,
    and :math:`\langle V H^T, W' \rangle` (for the expanded objective).

    ``data.vht_blocks(H)`` gives V H^T in blocks of rows (one block for dense
    data, so the operations are those of a single update; blocks of about
    2^16 entries for CSR data, so that beside W and W' only a block of V H^T
    is held). Each block of W H H^T is computed into its rows of W' and the
    update written over it (the kernel reads every entry before writing it).
    W is not modified.
    """
    W_new = None
    cross = 0.0
    for rows, VHt in data.vht_blocks(H):
        block = W[rows]
        if rows == slice(None):
            W_new = out = matmul_unsplit(block, HHt)  # the denominator, overwritten by the update
        else:  # written straight into its rows of W' (no block-sized temporary)
            if W_new is None:
                W_new = np.empty_like(W)
            out = matmul_unsplit(block, HHt, out=W_new[rows])
        unused = np.empty(out.shape[0])
        _k.multiplicative_update_into(block, VHt, out, eps, out, unused)
        cross += inner(VHt, out)
    return W_new, cross


class RowGram:
    """``X X^T`` of the array a step has just accepted, handed to the next
    step that asks for the same array object.

    nmf_sc's projected H step computes H' H'^T of every trial for its
    objective; the next H step needs H H^T of that same H for the objective
    before its step. ``keep`` stores it; a miss (the first step, a resumed run
    whose H is a loaded copy) computes ``product(X)``, the product the step
    computed for what ``keep`` was given (``HoyerSteps.row_gram``:
    :func:`nmfsc._blocked.gram_rows`, or ``X @ X.T`` on the GPU backend,
    whose arrays the blocked sums cannot take), so the bits are the same
    either way.
    """

    def __init__(self, product):
        self._last = None
        self._product = product

    def keep(self, X, gram):
        self._last = (X, gram)

    def __call__(self, X):
        if self._last is not None and self._last[0] is X:
            return self._last[1]
        gram = self._product(X)
        self._last = (X, gram)
        return gram


class SquaredErrorSteps(Steps):
    """The iteration of a solver whose objective is ``E = 0.5 ||V - W H||_F^2``
    (nmf_sc and Euclidean NMF): ||V||^2, kept for evaluating E."""

    objective_power = 2
    #: The result reports how far the fit is from stationary (NMFResult.stationarity).
    measures_stationarity = True

    def __init__(self, data, n_components):
        super().__init__(data, n_components)
        self.vv = data.vv

    def start(self, state):
        return self.objective(state["W"], state["H"])

    def objective(self, W, H):
        """E(W, H) computed exactly: from W H for dense data, see
        :class:`nmfsc.solvers._data.ScaledData` for sparse or mapped data."""
        return self.data.half_squared_error(W, H)

    def recorded(self, energy, W, H):
        """The objective to record for (W, H): ``energy``, its value by the
        expansion from the last step's products, unless it is below
        ``EXACT_BELOW ||V||^2`` (or not a number), where it is recomputed exactly."""
        if energy >= EXACT_BELOW * self.vv:
            return energy
        return self.objective(W, H)
