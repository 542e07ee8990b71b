"""Hoyer's projection of many rows at once in array code (CuPy or NumPy):
the formulas of :mod:`nmfsc.gpu_backend.device_projection`'s docstring.

The projection of the rows wherever the fused kernels do not run (NumPy
rows, no Numba CUDA target), and of the rare rows whose passes do not
settle on the device (:mod:`nmfsc.gpu_backend.fused`).
"""

from __future__ import annotations

import numpy as np

from nmfsc._array_api import to_host
from nmfsc.gpu_backend.thresholds import (
    KAPPA_MAX,
    condition_parts,
    max_passes,
    row_squares,
    support_moments,
    thresholds_by_passes,
    thresholds_by_sort,
)
from nmfsc.projection import project

__all__ = ["FEASIBLE_RTOL", "project_rows_by_arrays"]

#: The relative tolerance of "already meets the targets" (the CPU kernels').
FEASIBLE_RTOL = 1e-13


def project_rows_by_arrays(xp, X, l1, l2, nonneg=True, dtype=None, *, by_sort=False):
    """:func:`~nmfsc.gpu_backend.device_projection.project_rows` by the
    array code, whatever the arrays: the threshold of each row from
    :func:`~nmfsc.gpu_backend.thresholds.thresholds_by_passes`, or from
    :func:`~nmfsc.gpu_backend.thresholds.thresholds_by_sort` where the
    passes do not settle; ``by_sort``: from the sort alone (rows whose
    passes are known not to settle, such as the fused kernels' stuck
    rows)."""
    if X.dtype != xp.float32:  # float32 rows stay float32; their sums are float64
        X = X.astype(xp.float64, copy=False)
    count, n = X.shape
    A = X if nonneg else xp.abs(X)
    finite = xp.isfinite(A).all(axis=1)
    A = xp.where(finite[:, None], A, 0.0)
    rho = l1 / l2
    if by_sort:
        threshold = xp.zeros(count)
        found = xp.zeros(count, dtype=bool)
        k = xp.zeros(count, dtype=xp.int64)
        s1, s2 = xp.zeros(count), xp.zeros(count)
    else:
        threshold, found, (k, s1, s2) = thresholds_by_passes(xp, A, rho, max_passes(n))
    rest = to_host(~found & finite)
    if rest.any():
        rows = xp.asarray(np.flatnonzero(rest))
        sorted_threshold, sorted_found = thresholds_by_sort(xp, A[rows], rho[rows])
        threshold[rows] = sorted_threshold
        found[rows] = sorted_found
        k[rows], s1[rows], s2[rows] = support_moments(xp, A[rows], sorted_threshold)
    Z = xp.maximum(A - xp.where(found, threshold, 0.0)[:, None], 0.0)
    norms = xp.sqrt(xp.sum(Z * Z, axis=1))
    beta = l2 / xp.where(norms > 0, norms, 1.0)
    S = Z * beta[:, None]
    # Rows whose result the threshold cannot give accurately (nearly equal
    # entries on the support: thresholds.condition_parts) go to the CPU.
    kappa = condition_parts(xp, k, s1, s2, threshold, rho) * beta / l1
    ill = found & ~(kappa <= KAPPA_MAX)
    # Sparseness 1: l2 at the first largest entry.
    single = xp.abs(rho - 1.0) <= FEASIBLE_RTOL
    if bool(single.any()):
        first = xp.argmax(A, axis=1)
        one = xp.zeros_like(S)
        one[xp.arange(count), first] = l2
        S = xp.where(single[:, None], one, S)
    # Rows that meet the targets already stay as they are.
    total = xp.sum(A, axis=1, dtype=xp.float64)
    norm = xp.sqrt(row_squares(xp, A))
    meets = (xp.abs(total - l1) <= FEASIBLE_RTOL * l1) & (xp.abs(norm - l2) <= FEASIBLE_RTOL * l2)
    if nonneg:
        meets &= (X >= 0).all(axis=1)
    S = xp.where(meets[:, None], A, S)
    if not nonneg:
        S = xp.where(X < 0, -S, S)
    fallback = to_host(finite & (~found | ill) & ~single & ~meets)
    for r in np.flatnonzero(fallback):
        row = project(to_host(X[r]), float(l1[r]), float(l2[r]), nonneg=nonneg)
        S[r] = xp.asarray(row)
    S = xp.where(finite[:, None], S, xp.nan)
    return S.astype(xp.float64 if dtype is None else dtype, copy=False), finite
