"""How a solver call finds what runs it: the solvers' table and the backends.

This module is the seam between the solvers and what plugs into them. It
imports no solver and no backend; both are handed to it:

- the table of solvers, :data:`nmfsc.solvers.registry.SOLVERS`, which that
  module installs here (:func:`install`) when ``nmfsc.solvers`` is imported.
  A public solver function asks it for its ``solver=`` variant
  (:func:`variant`) and runs its steps with :func:`run_steps`;
- the backends, each registered by its own package (:func:`register_backend`).
  A backend runs a solver on data kept elsewhere than in one NumPy or SciPy
  array (the Dask backend, ``nmfsc.dask_backend``: V chunked on a Dask
  scheduler).

A backend
---------
A :class:`Backend` is a name, a test ``accepts(V)`` (is V this backend's
kind of data? It must not import the backend's dependencies) and a function
``run(steps, V, n_components, params, settings)``, which runs the in-memory
steps class ``steps`` (a ``Steps`` subclass,
such as ``HoyerSteps``) on V in its own way and
returns an :class:`~nmfsc.NMFResult`. ``params`` are the
solver's own keywords, already validated (the steps class's constructor
takes them by name); ``settings`` is the call's
``LoopSettings``. A backend usually subclasses
``Run`` (the loop; its hooks say what it
overrides) and the steps class (for nmf_sc, ``HoyerSteps``'s
four half-steps). A solver runs on a backend when its table entry names the
backend (``SolverSpec.backends``).

Data that a registered backend accepts, given to a solver whose entry does not
name that backend, is read as any array-like (NumPy gathers it into memory),
except by a ``solver=`` variant of nmf_sc, which refuses it and names the
variant that runs there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from nmfsc.solvers._loop import Run
from nmfsc.solvers._masked_data import MaskedRun

__all__ = [
    "IN_MEMORY",
    "Backend",
    "SolverSpec",
    "backend_for",
    "install",
    "method_name",
    "register_backend",
    "run_steps",
    "solver_specs",
    "variant",
]

#: The name of the backend every solver has: V as one NumPy array or SciPy
#: sparse matrix, in this process's memory.
IN_MEMORY = "numpy"


@dataclass(frozen=True)
class SolverSpec:
    """One row of the solvers' table (:data:`nmfsc.solvers.registry.SOLVERS`).

    Attributes
    ----------
    name : str
        The public function's name (``nmfsc.<name>``).
    function : callable
        The public function.
    steps : type
        Its ``Steps`` subclass: the per-iteration rules.
    keywords : tuple of str
        Its own keywords (besides the loop's), which its steps class takes by name.
    variant : str or None
        The value of ``solver=`` that selects it, for the variants of nmf_sc;
        None for a function without variants.
    backends : tuple of str
        The backends it runs on (:data:`IN_MEMORY` first).
    masked_steps : type or None
        The steps class that fits only the observed entries of V, for a call
        with ``mask=`` (``nmfsc.solvers.masked``); None where the solver
        does not take a mask.
    squared_error : bool
        Whether its objective is :math:`\\tfrac12\\lVert V - WH\\rVert_F^2`, so that
        its relative error is read off its objective history.
    compared : bool
        Whether :func:`nmfsc.compare` offers it as a method (named by
        :func:`method_name`).
    description : str
        One line that says what it is, for :func:`nmfsc.compare`'s report.
    fixed_keywords : tuple of (str, value) pairs
        Keywords the row always passes to its function (e.g.
        ``average_sparseness=True``): a row that runs a variant on another
        constraint. Such a row is not what ``solver=`` selects (that is the
        row of the variant without them).
    name_suffix : str
        Appended (after ``_``) to the row's name in :func:`method_name`, so
        that a row with ``fixed_keywords`` has a name of its own.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.solvers.registry import solver
    >>> spec = solver("nmf_sc")
    >>> spec.name, spec.variant, spec.backends
    ('nmf_sc', 'hoyer', ('numpy', 'dask', 'gpu'))
    >>> V = np.random.default_rng(0).random((20, 30))
    >>> res = spec.run(V, 3, sparseness_w=0.6, random_state=0, tol=1e-3)  # solver="hoyer"
    >>> res.solver, res.W.shape
    ('nmf_sc', (20, 3))
    """

    name: str
    function: Callable[..., Any]
    steps: type
    keywords: tuple[str, ...] = ()
    variant: str | None = None
    backends: tuple[str, ...] = (IN_MEMORY,)
    masked_steps: type | None = None
    squared_error: bool = False
    compared: bool = True
    description: str = ""
    fixed_keywords: tuple[tuple[str, Any], ...] = ()
    name_suffix: str = ""

    def run(self, V, n_components, **keywords):
        """Call the public function, with ``solver=`` set for a variant and the
        row's :attr:`fixed_keywords`."""
        if self.variant is not None:
            keywords["solver"] = self.variant
        return self.function(V, n_components, **keywords, **dict(self.fixed_keywords))


@dataclass(frozen=True)
class Backend:
    """A backend: its name, which data it takes and how it runs a solver (module docstring).

    Examples
    --------
    A backend for a kind of data of one's own (here not registered, and its
    ``run`` a placeholder for ``run(steps, V, n_components, params, settings)``,
    which returns an :class:`~nmfsc.NMFResult`):

    >>> import numpy as np
    >>> from nmfsc.solvers.dispatch import Backend
    >>> class Blocks(list):  # V kept as a list of column blocks
    ...     pass
    >>> blocks = Backend("blocks", lambda V: isinstance(V, Blocks), run=lambda *args: None,
    ...                  array_name="list of blocks")
    >>> blocks.accepts(Blocks()), blocks.accepts(np.ones((2, 2)))
    (True, False)
    >>> blocks.arrays()  # how messages name its data
    'a list of blocks'
    """

    name: str
    accepts: Callable[[Any], bool]
    run: Callable[..., Any]
    array_name: str = ""  # how its arrays are called in messages ("Dask array")

    def arrays(self) -> str:
        """``"a <kind> array"`` for messages: :attr:`array_name`, or the capitalised name."""
        return f"a {self.array_name or self.name.capitalize() + ' array'}"


_SPECS: list[SolverSpec] = []
_BACKENDS: dict[str, Backend] = {}


def install(specs) -> None:
    """Make ``specs`` the solvers' table (called by ``nmfsc.solvers.registry``).

    Examples
    --------
    >>> from nmfsc.solvers.dispatch import install, solver_specs
    >>> from nmfsc.solvers.registry import SOLVERS
    >>> install(SOLVERS)  # what importing nmfsc.solvers.registry does
    >>> solver_specs() == SOLVERS
    True
    """
    _SPECS[:] = list(specs)


def solver_specs() -> tuple[SolverSpec, ...]:
    """The installed table, in its order.

    Examples
    --------
    >>> from nmfsc.solvers.dispatch import solver_specs
    >>> first = solver_specs()[0]  # nmf_sc's default variant
    >>> first.name, first.variant, first.description
    ('nmf_sc', 'hoyer', "the paper's projected gradient algorithm")
    """
    return tuple(_SPECS)


def register_backend(backend: Backend) -> None:
    """Register ``backend`` (replacing one of the same name); its package calls this
    when it is imported.

    Examples
    --------
    What importing ``nmfsc.dask_backend`` does (here registering the Dask
    backend again, which replaces it by itself; Dask is not imported):

    >>> from nmfsc.dask_backend import is_dask_array, solve_on_dask
    >>> from nmfsc.solvers.dispatch import Backend, register_backend
    >>> register_backend(Backend("dask", is_dask_array, solve_on_dask))
    """
    _BACKENDS[backend.name] = backend


def backend_for(V) -> Backend | None:
    """The registered backend that accepts V, or None for in-memory data.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from nmfsc.solvers.dispatch import backend_for
    >>> backend_for(np.ones((4, 3))) is None, backend_for(sp.eye(4, format="csr")) is None
    (True, True)

    A Dask array (with Dask installed) gives the backend named ``"dask"``.
    """
    return next((b for b in _BACKENDS.values() if b.accepts(V)), None)


def variant(name: str, solver: str) -> SolverSpec:
    """The entry of ``name``'s variant ``solver``; a ValueError names the variants.

    Examples
    --------
    >>> from nmfsc.solvers.dispatch import variant
    >>> variant("nmf_sc", "accelerated").steps.__name__
    'AcceleratedSteps'
    >>> variant("nmf_sc", "fast")
    Traceback (most recent call last):
    ...
    ValueError: solver must be one of 'hoyer', 'accelerated'; got 'fast'
    """
    variants = [
        s for s in _SPECS if s.name == name and s.variant is not None and not s.fixed_keywords
    ]
    for spec in variants:
        if spec.variant == solver:
            return spec
    allowed = ", ".join(repr(s.variant) for s in variants)
    raise ValueError(f"solver must be one of {allowed}; got {solver!r}")


def run_steps(steps: type, V, n_components, *, params: dict, settings, mask=None, backends=()):
    """Run the steps class ``steps`` with its keywords ``params`` on V: on the
    backend that accepts V when the solver's entry names it, else in memory
    (``Run``). With a ``mask``, the entry's
    ``SolverSpec.masked_steps`` run in memory on the observed entries.
    ``backends`` name the backends of steps that have no entry in the table
    (:func:`nmfsc.solvers.coefficients.fit_coefficients`'s H step alone).

    Examples
    --------
    What ``nmf_euclidean(V, 3, random_state=0, tol=1e-3)`` does:

    >>> import numpy as np
    >>> from nmfsc import nmf_euclidean
    >>> from nmfsc.solvers.dispatch import run_steps
    >>> from nmfsc.solvers.framework import LoopSettings
    >>> from nmfsc.solvers.registry import solver
    >>> V = np.random.default_rng(0).random((20, 30))
    >>> settings = LoopSettings(random_state=0, tol=1e-3)
    >>> res = run_steps(solver("nmf_euclidean").steps, V, 3, params={}, settings=settings)
    >>> res.solver, bool(np.array_equal(res.W, nmf_euclidean(V, 3, random_state=0, tol=1e-3).W))
    ('nmf_euclidean', True)
    """
    backend = backend_for(V)
    spec = next((s for s in _SPECS if s.steps is steps and not s.fixed_keywords), None)
    if mask is not None:
        masked = _masked_steps(spec, steps, backend)
        make_masked = partial(masked, **params)
        return MaskedRun(mask, make_masked, V, n_components, params, settings).run(stacklevel=4)
    if backend is not None:
        if backend.name in (backends if spec is None else spec.backends):
            return backend.run(steps, V, n_components, params, settings)
        if spec is not None and spec.variant is not None:
            raise ValueError(
                f"solver={spec.variant!r} does not run on {backend.arrays()} "
                f"yet; use solver={_default_variant(spec)!r} (the paper's algorithm) or compute "
                "V into memory"
            )
    make_steps = partial(steps, **params)
    return Run(make_steps, V, n_components, params, settings).run(stacklevel=4)


def method_name(spec: SolverSpec) -> str:
    """The name :func:`nmfsc.compare` and ``reproduce`` give the row ``spec``: the
    function's name, with ``_<variant>`` after it for a variant other than the
    default (``nmf_sc`` for ``solver="hoyer"``, ``nmf_sc_accelerated`` for
    ``solver="accelerated"``), and ``_<name_suffix>`` for a row that has one
    (``nmf_sc_accelerated_average``).

    Examples
    --------
    >>> from nmfsc.solvers.dispatch import method_name, variant
    >>> method_name(variant("nmf_sc", "hoyer")), method_name(variant("nmf_sc", "accelerated"))
    ('nmf_sc', 'nmf_sc_accelerated')
    """
    name = spec.name
    if spec.variant is not None and spec.variant != _default_variant(spec):
        name = f"{name}_{spec.variant}"
    return f"{name}_{spec.name_suffix}" if spec.name_suffix else name


def _default_variant(spec: SolverSpec) -> str | None:
    """The default ``solver=`` of ``spec``'s function: its first variant."""
    return next(s.variant for s in _SPECS if s.name == spec.name and s.variant)


def _masked_steps(spec: SolverSpec | None, steps: type, backend: Backend | None) -> type:
    """The steps class that runs ``steps``'s solver with a mask, or a ValueError."""
    if backend is not None:
        raise ValueError(
            f"mask= does not run on {backend.arrays()}: masks are not "
            "supported there; compute V (and the mask) into memory, or leave mask=None"
        )
    if spec is not None and spec.masked_steps is not None:
        return spec.masked_steps
    if spec is not None and spec.variant is not None:
        raise ValueError(
            f"solver={spec.variant!r} does not take a mask yet; use "
            f"solver={_default_variant(spec)!r} (the paper's algorithm) with mask=..."
        )
    name = spec.name if spec is not None else steps.__name__
    raise ValueError(f"{name} does not take a mask")
