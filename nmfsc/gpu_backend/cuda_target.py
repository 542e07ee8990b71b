"""Numba's CUDA target, loaded so that it compiles beside numpy 2.5.

numba-cuda 0.30 (NVIDIA's CUDA target for Numba, in maintenance mode since
2026: NVIDIA/numba-cuda#902) registers an overload of ``np.row_stack`` when
its array registry (``numba.cuda.np.arrayobj``) is first imported, which is
at the first compilation of any kernel. numpy 2.5 removed ``row_stack``, so
with that pair every kernel's first compilation raises an AttributeError
(NVIDIA/numba-cuda#907, closed without a fix). :func:`load_cuda_target`
imports that registry once, with a stand-in ``row_stack`` on numpy for the
duration of the import only: numpy is left as it was, and the overload
registered for the stand-in is never reached (nmfsc's kernels do not call
``row_stack``). With a numpy that has ``row_stack``, or a Numba whose CUDA
target has no such registry (numba's own ``numba.cuda``), nothing is done.

:func:`raised_by_numba` tells the target's own failures (no compiler, no
driver, no ``cudadevrt`` to link) from nmfsc's bugs, for the projection's
fallbacks (:mod:`~nmfsc.gpu_backend.device_projection`,
:mod:`~nmfsc.gpu_backend.fused`).
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
import warnings

import numpy as np

__all__ = ["REGISTRY", "load_cuda_target", "raised_by_numba"]

#: numba-cuda's module that registers ``np.row_stack`` when it is imported.
REGISTRY = "numba.cuda.np.arrayobj"

#: The name numpy 2.5 removed (a string: linters flag the attribute itself).
_ROW_STACK = "row_stack"
_LOCK = threading.Lock()


def load_cuda_target():
    """``numba.cuda``, with numba-cuda's array registry imported (module
    docstring). Raises ImportError where Numba has no CUDA target."""
    with warnings.catch_warnings():  # numba's own CUDA target warns that it is deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        from numba import cuda
    if cuda.is_available():  # else nothing will be compiled
        import_with_row_stack(REGISTRY)
    return cuda


def import_with_row_stack(name):
    """Import the module ``name`` (if it exists) with ``np.row_stack``
    present during the import: numpy's own where it has one, else a
    stand-in that calls ``np.vstack``, removed again after. Returns the
    module, or None where there is no such module."""
    try:
        if importlib.util.find_spec(name) is None:
            return None
    except ModuleNotFoundError:  # a parent package is missing
        return None
    with _LOCK:
        if _has_row_stack():
            return importlib.import_module(name)
        setattr(np, _ROW_STACK, _row_stack)
        try:
            return importlib.import_module(name)
        finally:
            delattr(np, _ROW_STACK)


def _has_row_stack():
    with warnings.catch_warnings():  # numpy 2.0-2.4 warn that it is deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        return hasattr(np, _ROW_STACK)


def _row_stack(tup, *, dtype=None, casting="same_kind"):
    """numpy < 2.5's ``row_stack``: an alias of :func:`numpy.vstack`."""
    return np.vstack(tup, dtype=dtype, casting=casting)


def raised_by_numba(error):
    """Whether ``error`` is Numba's CUDA target failing (no compiler, no
    driver, a numba-cuda that does not work with this numpy): an error of
    Numba's own types, or one raised inside Numba's code (such as an
    AttributeError where numba-cuda uses a name that numpy removed).
    An error raised in nmfsc's code, with no frame of Numba's between, is a
    bug and propagates."""
    if type(error).__module__.startswith(("numba", "cuda")):
        return True
    trace = error.__traceback__
    while trace is not None:
        if str(trace.tb_frame.f_globals.get("__name__", "")).startswith(("numba", "cuda")):
            return True
        trace = trace.tb_next
    return False
