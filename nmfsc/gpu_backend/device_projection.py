r"""Hoyer's projection of many rows at once on a device (CuPy, or NumPy in
the tests): the formulas, the choice between the fused CUDA kernels and
the array code, and the public projection of CuPy arrays.

For a row x (of :math:`|x|` for the signed variant) and targets
:math:`L_1, L_2`, the projection is :math:`s = \beta \max(x - \alpha, 0)`,
whose support is the k largest entries. With :math:`y` the row sorted in
decreasing order, :math:`S_1(k), S_2(k)` the sums of its first k entries
and of their squares, and :math:`\rho = L_1 / L_2`, the threshold of a
support of size k solves :math:`(S_1 - k\alpha)^2 = \rho^2 \sum_{i \le k}
(y_i - \alpha)^2`:

.. math:: \alpha_k = m_k - \rho \sqrt{\frac{c_k}{k (k - \rho^2)}},\quad
          m_k = S_1 / k,\quad c_k = S_2 - S_1^2 / k,

and k is a consistent support when :math:`y_{k+1} \le \alpha_k < y_k`.
Among the consistent k (all computed at once from cumulative sums), the
projection is the one closest to x, the largest
:math:`\langle s, x\rangle` (the norms of s are fixed). Then
:math:`\beta = L_2 / \lVert \max(x - \alpha, 0) \rVert`.

This is the same point as the CPU kernels' (:mod:`nmfsc.projection`), to
rounding times the row's condition :math:`\kappa` (at most ``KAPPA_MAX``,
below), wherever the projection is unique. Where it is not, or no k is
consistent in floating point (ties across the threshold), and at
sparseness 1 (:math:`L_1 = L_2`, one entry), the rows follow the CPU's
rule: one entry for sparseness 1 (the first largest), and the rest are
projected by the CPU kernel itself, one row copied to the host and back,
so that ties are broken by index exactly as there. So is a row whose
threshold cannot give its projection accurately: where the support's
entries are nearly equal (a row like ``1 + 1e-4 * noise``), the rounding
of :math:`\alpha` is amplified by :math:`\beta` into every entry; the
estimate :math:`\kappa` of :func:`~nmfsc.gpu_backend.thresholds.condition_parts`
above ``KAPPA_MAX`` sends the row to the CPU kernel, whose centred form is
accurate there. A row that already
meets the targets (to 1e-13) is returned as it is, as by the CPU kernels.

The threshold is found by passes first
(:func:`~nmfsc.gpu_backend.thresholds.thresholds_by_passes`: no sort, a
few reductions over the rows per pass, as many passes as Hoyer's algorithm
takes), and by the sort above only for rows whose passes do not settle
(:func:`~nmfsc.gpu_backend.thresholds.thresholds_by_sort`), in array code
(:mod:`nmfsc.gpu_backend.array_projection`; memory: about six arrays of
the rows' size). On a GPU with Numba's CUDA target the same passes run as
fused kernels (:mod:`nmfsc.gpu_backend.fused`: four launches per
projection, or one for fewer rows than the GPU has multiprocessors, where
the array code makes about ten passes over the rows per Hoyer pass); the
array code is their rare rows' path and their fallback.
"""

from __future__ import annotations

import warnings

import numpy as np
from numba.core.errors import NumbaPerformanceWarning

from nmfsc._array_api import namespace, to_host
from nmfsc.gpu_backend.array_projection import project_rows_by_arrays
from nmfsc.gpu_backend.cuda_target import load_cuda_target, raised_by_numba

__all__ = [
    "fused_kernels",
    "project_batch_device",
    "project_rows",
    "release_fused_workspaces",
]


def project_rows(xp, X, l1, l2, nonneg=True, dtype=None):
    """Project each row of the 2-D array X onto its targets ``l1[r]``, ``l2[r]``
    (1-D float64 arrays of ``xp``). Returns ``(S, finite)``: S of X's shape
    (rows that are not finite are left NaN) and a boolean per row (an
    array of ``xp``; a NumPy array from the fused kernels, whose host has
    read it already). The projection is computed in float64 and S is stored in ``dtype``
    (float64 by default; float32 rounds each entry once, as casting the
    float64 result would). Float32 rows are read as they are (the passes'
    sums in float64), so that no float64 copy of them is made.

    CuPy rows are projected by the fused CUDA kernels
    (:func:`nmfsc.gpu_backend.fused.project_rows_fused`) where Numba's CUDA
    target is installed (:func:`fused_kernels`); otherwise, and for NumPy
    rows, by the array code (:func:`project_rows_by_arrays`). Both give
    the same projection to rounding (they add the same sums in different
    orders)."""
    if xp is not np and X.ndim == 2:
        fused = fused_kernels()
        if fused is not None:
            try:
                with warnings.catch_warnings():
                    # Numba's launch-time notes (a small grid's "under-utilization",
                    # its own CUDA target's deprecation) are not the user's to act on.
                    warnings.simplefilter("ignore", NumbaPerformanceWarning)
                    # numba-cuda raises a class of its own for the same note.
                    warnings.filterwarnings("ignore", message=".*under-utilization")
                    warnings.simplefilter("ignore", DeprecationWarning)
                    return fused(xp, X, l1, l2, nonneg, dtype=dtype)
            except Exception as error:  # Numba's CUDA errors: no compiler (NVVM), driver
                _fused_failed(error, stacklevel=2)
    return project_rows_by_arrays(xp, X, l1, l2, nonneg, dtype)


def _fused_failed(error, stacklevel):
    """Switch the fused kernels off for this process, with one
    RuntimeWarning, where ``error`` is Numba's CUDA target failing
    (:func:`raised_by_numba`); re-raise any other error (a bug)."""
    if not raised_by_numba(error):
        raise error
    _FUSED[:] = [None]
    warnings.warn(
        f"the fused CUDA projection failed ({type(error).__name__}: {error}); "
        "projecting with CuPy array code instead (slower); "
        'pip install "numba-cuda[cu12]"',
        RuntimeWarning,
        stacklevel=stacklevel + 1,
    )


_FUSED: list = []  # [project_rows_fused] or [None], once decided


def fused_kernels():
    """:func:`nmfsc.gpu_backend.fused.project_rows_fused`, or None where
    Numba's CUDA target (``numba-cuda``, or numba's own ``numba.cuda``) is
    missing or finds no GPU; then CuPy rows take the array code (slower:
    about ten passes over the rows' memory per Hoyer pass, where the fused
    kernels make one). Decided once per process; numba.cuda is imported
    here (:func:`~nmfsc.gpu_backend.cuda_target.load_cuda_target`, which
    lets numba-cuda 0.30 load beside numpy 2.5), at the first projection of
    a CuPy array, never by ``import nmfsc``."""
    if not _FUSED:
        try:
            usable = load_cuda_target().is_available()
            from nmfsc.gpu_backend.fused import project_rows_fused
        except ImportError:
            usable = False
        except Exception as error:  # Numba's CUDA target failed to load
            _fused_failed(error, stacklevel=3)
            return None
        _FUSED.append(project_rows_fused if usable else None)
    return _FUSED[0]


def release_fused_workspaces():
    """Drop what the fused kernels keep, in this host thread, from one
    projection to the next of the same rows
    (:func:`nmfsc.gpu_backend.fused.release_workspaces`), if they have run
    in this process: at the end of a run on the device and of a public
    projection, so that nmfsc holds none of CuPy's memory after it."""
    if _FUSED and _FUSED[0] is not None:
        from nmfsc.gpu_backend.fused import release_workspaces

        release_workspaces()


def project_batch_device(X, l1, l2, axis, nonneg, method, return_passes):
    """:func:`nmfsc.project_batch` (and :func:`nmfsc.project`, a 1-D X) of a
    device array, computed on the device; the result is a device array.
    ``method`` (checked by the caller) is accepted for the CPU's signature:
    both of its methods give this projection. Errors as the CPU's."""
    xp = namespace(X)
    if return_passes:
        raise ValueError("return_passes counts the CPU kernels' passes; not on a GPU array")
    if X.ndim not in (1, 2) or X.size == 0:
        raise ValueError(f"X must be a non-empty 1-D or 2-D array, got shape {X.shape}")
    if axis not in (0, 1):
        raise ValueError(f"axis must be 0 (columns) or 1 (rows), got {axis!r}")
    rows = X[None, :] if X.ndim == 1 else (X.T if axis == 0 else X)
    count, n = rows.shape
    l1a = xp.broadcast_to(xp.asarray(l1, dtype=xp.float64), (count,))
    l2a = xp.broadcast_to(xp.asarray(l2, dtype=xp.float64), (count,))
    ok = (l2a > 0) & (l1a >= l2a * (1 - 1e-12)) & (l1a <= np.sqrt(n) * l2a * (1 + 1e-12))
    if not bool(ok.all()):
        i = int(to_host(xp.flatnonzero(~ok))[0])
        raise ValueError(
            f"l1={float(l1a[i])!r} is unreachable (vector {i}) for a vector of length {n} with "
            f"l2={float(l2a[i])!r}: it must satisfy 0 < l2 <= l1 <= sqrt(n) * l2"
        )
    try:
        S, finite = project_rows(xp, rows, l1a, l2a, nonneg)
    finally:
        release_fused_workspaces()
    finite = to_host(finite)
    if not finite.all():
        what = "column" if axis == 0 and X.ndim == 2 else "row"
        first = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"X contains NaN or infinity ({what} {first})")
    if X.ndim == 1:
        return S[0]
    return xp.ascontiguousarray(S.T) if axis == 0 else S
