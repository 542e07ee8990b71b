"""The backends: where data kept elsewhere than in one NumPy or SciPy array is computed.

A backend runs the solvers on its own kind of array (the Dask backend,
:mod:`nmfsc.dask_backend`: V chunked on a Dask scheduler; the GPU backend,
:mod:`nmfsc.gpu_backend`: V a CuPy array on a GPU). Each declares, in the one
:class:`Backend` it registers (:func:`register_backend`, from its package's
``__init__``, which ``import nmfsc`` runs), everything it does:

- which arrays are its own (``accepts``, which imports nothing);
- which solvers it runs: the in-memory ``Steps`` class of each, with the
  dotted name of its own form of those steps (``steps``), imported when a
  run starts (so that importing nmfsc imports neither Dask nor CuPy);
- how a run goes (``run``), how its arrays are projected (``project_batch``),
  normed (``frobenius_norm``) and made from host data (``from_host``), and
  whether NumPy's functions run on them through their own module
  (``array_api``: CuPy's arrays do, Dask's are computed lazily).

Everyone else asks this module for the backend of an array
(:func:`backend_for`) or of a name (:func:`backend_named`) and reads the
declaration: the solvers' table derives each row's backends from it
(:attr:`nmfsc.solvers.dispatch.SolverSpec.backends`), :func:`nmfsc.project`
hands a device array to the backend's projection, and
:class:`nmfsc.SparseNMF` and the ``nmfsc`` command line never import a
backend. This module imports nothing of nmfsc.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Backend", "backend_for", "backend_named", "backends", "register_backend"]


@dataclass(frozen=True)
class Backend:
    """A backend's declaration of what it runs and how (module docstring).

    Attributes
    ----------
    name : str
        Its name (``"dask"``, ``"gpu"``; the command line's ``--device``).
    accepts : callable
        ``accepts(V)``: whether V is this backend's kind of array. It must
        not import the backend's dependencies.
    run : callable
        ``run(steps, V, n_components, params, settings)``: runs the backend's
        own steps class ``steps`` (:meth:`steps_for` of an in-memory one)
        with the solver's checked keywords ``params`` and the call's
        ``LoopSettings`` on V; returns an :class:`~nmfsc.NMFResult`.
    steps : mapping of type to str
        The in-memory ``Steps`` class of each solver it runs, mapped to the
        dotted name (``"package.module.Class"``) of its own form of them.
    array_name : str
        How messages call its arrays (``"CuPy (GPU) array"``); default the
        capitalised name and "array".
    array_api : bool
        Whether NumPy's functions run on its arrays through their module
        (``cupy`` for CuPy): :class:`nmfsc.SparseNMF` then checks and
        transforms them where they are. False (Dask): only ``fit`` takes them.
    project_batch : callable or None
        ``project_batch(X, l1, l2, axis, nonneg, method, return_passes)`` on
        its arrays (:func:`nmfsc.project_batch`'s arguments), or None.
    frobenius_norm : callable or None
        ``frobenius_norm(V, scale)``: ``||V||_F`` computed as
        ``scale * ||V / scale||_F`` (``scale``: max(V) > 0) where V is.
    from_host : callable or None
        ``from_host(V)``: a host array copied into the backend's kind (the
        command line's ``--device``); an ImportError or RuntimeError in one
        line where that cannot be done.
    to_memory : str
        The expression that brings its array ``X`` into memory, for
        messages (``"X.compute()"``, ``"cupy.asnumpy(X)"``).

    See Also
    --------
    register_backend : Registers one.
    backend_for, backend_named : Find a registered one.
    backends : The registered ones.

    Examples
    --------
    A backend for a kind of data of one's own (here not registered, and its
    ``run`` a placeholder):

    >>> import numpy as np
    >>> from nmfsc.backends import Backend
    >>> class Blocks(list):  # V kept as a list of column blocks
    ...     pass
    >>> blocks = Backend("blocks", lambda V: isinstance(V, Blocks), run=lambda *args: None,
    ...                  array_name="list of blocks")
    >>> blocks.accepts(Blocks()), blocks.accepts(np.ones((2, 2)))
    (True, False)
    >>> blocks.arrays()  # how messages name its data
    'a list of blocks'
    >>> from nmfsc.solvers.hoyer import HoyerSteps
    >>> blocks.runs(HoyerSteps)  # it declares no steps
    False
    """

    name: str
    accepts: Callable[[Any], bool]
    run: Callable[..., Any]
    steps: Mapping[type, str] = field(default_factory=dict)
    array_name: str = ""
    array_api: bool = False
    project_batch: Callable[..., Any] | None = None
    frobenius_norm: Callable[[Any, float], float] | None = None
    from_host: Callable[[Any], Any] | None = None
    to_memory: str = "numpy.asarray(X)"

    def arrays(self) -> str:
        """``"a <kind> array"`` for messages: :attr:`array_name`, or the capitalised name."""
        return f"a {self.array_name or self.name.capitalize() + ' array'}"

    def runs(self, steps: type) -> bool:
        """Whether it runs the in-memory steps class ``steps``."""
        return steps in self.steps

    def steps_for(self, steps: type) -> type:
        """Its own steps class for the in-memory ``steps`` (imported now).

        Examples
        --------
        >>> from nmfsc.backends import backend_named
        >>> from nmfsc.solvers.hoyer import HoyerSteps
        >>> backend_named("gpu").steps_for(HoyerSteps).__name__
        'DeviceHoyerSteps'
        """
        try:
            path = self.steps[steps]
        except KeyError:
            raise ValueError(f"{steps.__name__} does not run on {self.arrays()}") from None
        module, _, name = path.rpartition(".")
        return getattr(importlib.import_module(module), name)


_BACKENDS: dict[str, Backend] = {}


def register_backend(backend: Backend) -> None:
    """Register ``backend`` (replacing one of the same name); its package calls
    this when it is imported.

    See Also
    --------
    Backend : What it registers.
    backends : The registered backends.

    Examples
    --------
    What importing ``nmfsc.gpu_backend`` does (here registering the GPU
    backend again, which replaces it by itself; CuPy is not imported):

    >>> from nmfsc.backends import backend_named, register_backend
    >>> register_backend(backend_named("gpu"))
    """
    _BACKENDS[backend.name] = backend


def backends() -> tuple[Backend, ...]:
    """The registered backends, in the order they registered.

    See Also
    --------
    register_backend : Adds one.
    backend_for, backend_named : Find one.

    Examples
    --------
    >>> import nmfsc
    >>> from nmfsc.backends import backends
    >>> [b.name for b in backends()]
    ['dask', 'gpu']
    """
    return tuple(_BACKENDS.values())


def backend_for(V: Any) -> Backend | None:
    """The registered backend that accepts V, or None for in-memory data.

    See Also
    --------
    backend_named : The backend of a name.
    backends : The registered backends.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from nmfsc.backends import backend_for
    >>> backend_for(np.ones((4, 3))) is None, backend_for(sp.eye(4, format="csr")) is None
    (True, True)

    A Dask array (with Dask installed) gives the backend named ``"dask"``.
    """
    return next((b for b in _BACKENDS.values() if b.accepts(V)), None)


def backend_named(name: str) -> Backend:
    """The registered backend called ``name``; a ValueError names the others.

    See Also
    --------
    backend_for : The backend that accepts a data matrix.
    backends : The registered backends.

    Examples
    --------
    >>> from nmfsc.backends import backend_named
    >>> backend_named("gpu").arrays()
    'a CuPy (GPU) array'
    >>> backend_named("tpu")
    Traceback (most recent call last):
    ...
    ValueError: no backend called 'tpu'; the backends are 'dask', 'gpu'
    """
    try:
        return _BACKENDS[name]
    except KeyError:
        known = ", ".join(repr(b) for b in _BACKENDS)
        raise ValueError(f"no backend called {name!r}; the backends are {known}") from None
