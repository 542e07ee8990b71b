r"""Block coordinate sweeps over the rows of a factor, on device arrays.

The array-code form of :func:`nmfsc.solvers.accelerated.sweep` (the
accelerated solver's sub-problem; the rules in :mod:`nmfsc._kernels.rowblocks`):
for the rows :math:`x_k` of X (M x n) it lowers

.. math:: f(X) = \tfrac12 \langle G, X X^T \rangle - \langle A, X \rangle

by replacing each row in turn with the exact minimiser of
:math:`f_k(x) = \tfrac12 g_{kk} \lVert x \rVert^2 - \langle b_k, x \rangle`,
:math:`b_k = a_k - \sum_{j \ne k} g_{kj} x_j`, over the row's set
(``RULE_NONNEG``: :math:`\max(0, b_k / g_{kk})`; ``RULE_UNIT``: the
projection :math:`P(b_k)`; ``RULE_SCALED``: :math:`r P(b_k)`,
:math:`r = \langle b_k, P(b_k)\rangle / g_{kk}`), and only where
:math:`f_k` does not rise by the values computed in float64.

A small sub-problem (X of at most :data:`HOST_ENTRIES` entries, such as
the W step's W^T of M x N with N a few hundred) is swept on the host by
the CPU's own :func:`nmfsc.solvers.accelerated.sweep`: X, G and A are
copied there and the new X back, a few hundred kilobytes, where the array
code below would make a few dozen launches and host reads per row and
sweep. V never takes part. The rest, on the device:

The kernel's order of work is kept: R = G X (float64) is held, the rows go
in blocks of ``BLOCK``, each row's :math:`b_k` is corrected by the changes
D of the block's rows before it, and after the block
:math:`R \mathrel{+}= G_{:,\mathrm{block}} D`. The rows are processed one
at a time (each reads the changes before it): each row costs a few
reductions of length n, the projection of a one-row matrix
(:func:`~nmfsc.gpu_backend.device_projection.project_rows`; on a GPU, the
fused kernels' one-launch form, which spreads the row over the whole GPU;
it also says whether :math:`b_k` is finite) and one transfer of four
scalars to the host for the acceptance test; the update of R after a
block is one product (cuBLAS on a GPU). G (M x M) is copied to the host
once per sweep call for its scalars.
"""

from __future__ import annotations

import numpy as np

from nmfsc._array_api import to_host
from nmfsc._kernels.rowblocks import BLOCK, RULE_NONNEG, RULE_SCALED, RULE_UNIT
from nmfsc.gpu_backend.device_projection import project_rows
from nmfsc.solvers.accelerated import sweep

__all__ = ["HOST_ENTRIES", "sweep_rows", "unit_rows"]

#: Device sub-problems whose X has at most this many entries are swept on
#: the host (module docstring): 2 MB of float64, a quarter of a million
#: entries (M = 72 rows of up to 3,640), copied in well under a
#: millisecond, where the device's sweep costs launches and host reads per
#: row whatever the rows' length.
HOST_ENTRIES = 1 << 18


def sweep_rows(xp, X, G, A, rule, l1=1.0, sweeps=1, delta=0.0):
    """Up to ``sweeps`` sweeps over the rows of X (module docstring); a new
    array of X's dtype (X is not modified). The sweeps stop early when one
    decreases f by at most ``delta`` times the first one's decrease, as
    :func:`nmfsc.solvers.accelerated.sweep` does. NumPy arrays (the tests)
    always take the array code."""
    if xp is not np and X.size <= HOST_ENTRIES:
        host = sweep(to_host(X), to_host(G), to_host(A), rule, l1, sweeps, delta)
        return xp.asarray(host)
    X = xp.array(X, copy=True, order="C")
    M, n = X.shape
    G64 = xp.asarray(G, dtype=xp.float64)
    g_host = to_host(G64)
    R = G64 @ X.astype(xp.float64)
    D = xp.zeros((BLOCK, n))
    targets = (xp.full(1, float(l1)), xp.ones(1))
    first = None
    for _ in range(sweeps):
        decrease = 0.0
        for start in range(0, M, BLOCK):
            stop = min(M, start + BLOCK)
            D[...] = 0.0
            for k in range(start, stop):
                g = float(g_host[k, k])
                b = A[k].astype(xp.float64) - R[k] + g * X[k].astype(xp.float64)
                if k > start:
                    b = b - G64[k, start:k] @ D[: k - start]
                decrease += _update_row(xp, X, D, k, k - start, b, g, rule, targets)
            R += G64[:, start:stop] @ D[: stop - start]
        first = decrease if first is None else first
        if not decrease > delta * first:
            break
    return X


def _update_row(xp, X, D, k, slot, b, g, rule, targets):
    """Row k of X replaced by its rule's minimiser of f_k where that is
    defined and does not raise f_k (``rowblocks.sweep_block``'s test); its
    change as stored goes to ``D[slot]``. Returns the decrease of f (0.0 for
    a row left as it is)."""
    if not (g > 0.0 or rule == RULE_UNIT):
        return 0.0
    if rule == RULE_NONNEG:
        if not bool(xp.isfinite(b).all()):
            return 0.0
        new = xp.maximum(b / g, 0.0)
    else:
        # The projection says whether b is finite (the fused kernels' host
        # read of the fates: no read of its own).
        S, finite = project_rows(xp, b[None, :], *targets)
        if not bool(finite[0]):
            return 0.0
        new = S[0]
        if rule == RULE_SCALED:
            r = float(xp.vdot(b, new)) / g
            if not (r > 0.0 and np.isfinite(r)):
                return 0.0
            new = new * r
    old = X[k].astype(xp.float64)
    sums = to_host(
        xp.stack([xp.vdot(old, old), xp.vdot(b, old), xp.vdot(new, new), xp.vdot(b, new)])
    )
    before = 0.5 * g * sums[0] - sums[1]
    after = 0.5 * g * sums[2] - sums[3]
    if not after <= before:
        return 0.0
    X[k] = new
    D[slot] = X[k].astype(xp.float64) - old  # the change as stored (float32 rounds)
    return float(before - after)


def unit_rows(xp, W, H):
    """Rows of H scaled to unit L2 norm, W's columns multiplied by the norms
    (W H unchanged; :func:`nmfsc.solvers.accelerated.unit_rows`); a zero
    row stays zero. Returns new arrays."""
    norms = xp.sqrt(xp.sum(H * H, axis=1))
    safe = xp.where(norms > 0, norms, 1.0).astype(H.dtype)
    return xp.ascontiguousarray(W * safe), H / safe[:, None]
