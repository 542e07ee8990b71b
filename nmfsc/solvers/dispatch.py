"""How a solver call finds what runs it: the solvers' table and the backends.

This module is the seam between the solvers and what plugs into them. It
imports no solver and no backend; both are handed to it:

- the table of solvers, :data:`nmfsc.solvers.registry.SOLVERS`, which that
  module installs here (:func:`install`) when ``nmfsc.solvers`` is imported.
  A public solver function runs its row (:func:`run_solver`: its
  ``solver=`` variant for nmf_sc, :func:`variant`);
- the backends (:mod:`nmfsc.backends`), each registered by its own package
  with what it runs. A row runs on a backend when the backend declares the
  row's steps class (:attr:`SolverSpec.backends`, derived, never listed
  by hand).

Data that a registered backend accepts, given to a solver whose steps that
backend does not run, is read as any array-like (NumPy gathers it into
memory), except by a ``solver=`` variant of nmf_sc, which refuses it and
names the variant that runs there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from nmfsc.backends import Backend, backend_for, backends
from nmfsc.observed import Observed
from nmfsc.solvers._loop import Run
from nmfsc.solvers._masked_data import MaskedRun

__all__ = [
    "IN_MEMORY",
    "SolverSpec",
    "install",
    "method_name",
    "run_solver",
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

    See Also
    --------
    nmfsc.solvers.registry.SOLVERS : The table of rows.
    install : Makes a list of rows the table.
    run_solver : Runs a row.

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
    masked_steps: type | None = None
    squared_error: bool = False
    compared: bool = True
    description: str = ""
    fixed_keywords: tuple[tuple[str, Any], ...] = ()
    name_suffix: str = ""

    @property
    def backends(self) -> tuple[str, ...]:
        """The backends it runs on: :data:`IN_MEMORY`, then each registered
        backend that declares :attr:`steps` (:class:`nmfsc.backends.Backend`),
        in the order they registered. A row with :attr:`fixed_keywords`
        (another constraint) runs in memory only: a backend declares the
        steps it runs with their defaults."""
        if self.fixed_keywords:
            return (IN_MEMORY,)
        return (IN_MEMORY, *(b.name for b in backends() if b.runs(self.steps)))

    def run(self, V, n_components, **keywords):
        """Call the public function, with ``solver=`` set for a variant and the
        row's :attr:`fixed_keywords`."""
        if self.variant is not None:
            keywords["solver"] = self.variant
        return self.function(V, n_components, **keywords, **dict(self.fixed_keywords))


_SPECS: list[SolverSpec] = []


def install(specs) -> None:
    """Make ``specs`` the solvers' table (called by ``nmfsc.solvers.registry``).

    See Also
    --------
    solver_specs : The installed table.
    SolverSpec : A row.

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

    See Also
    --------
    install : Installs the table.
    nmfsc.solvers.registry.SOLVERS : The table, by name.

    Examples
    --------
    >>> from nmfsc.solvers.dispatch import solver_specs
    >>> first = solver_specs()[0]  # nmf_sc's default variant
    >>> first.name, first.variant, first.description
    ('nmf_sc', 'hoyer', "the paper's projected gradient algorithm")
    """
    return tuple(_SPECS)


def variant(name: str, solver: str) -> SolverSpec:
    """The entry of ``name``'s variant ``solver``; a ValueError names the variants.

    See Also
    --------
    run_solver : Runs the variant's row.
    nmfsc.solvers.registry.variants : The variants of a public solver.

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


def run_solver(name: str, V, n_components, *, params: dict, settings, mask=None, solver=None):
    """Run the table's row of the public solver ``name`` (its variant
    ``solver`` for nmf_sc, :func:`variant`) with its keywords ``params`` on V:
    on the backend that accepts V when that backend runs the row's steps,
    else in memory (``Run``). With a ``mask`` (the public argument: a boolean
    array, ``"stored"`` or an :class:`~nmfsc.observed.Observed`), the row's
    :attr:`SolverSpec.masked_steps` run in memory on the observed entries.

    See Also
    --------
    run_steps : Runs a steps class that has no row.
    variant : The entry of a ``solver=`` variant.
    SolverSpec : A row of the table.

    Examples
    --------
    What ``nmf_euclidean(V, 3, random_state=0, tol=1e-3)`` does:

    >>> import numpy as np
    >>> from nmfsc import nmf_euclidean
    >>> from nmfsc.solvers.dispatch import run_solver
    >>> from nmfsc.solvers.framework import LoopSettings
    >>> V = np.random.default_rng(0).random((20, 30))
    >>> settings = LoopSettings(random_state=0, tol=1e-3)
    >>> res = run_solver("nmf_euclidean", V, 3, params={}, settings=settings)
    >>> res.solver, bool(np.array_equal(res.W, nmf_euclidean(V, 3, random_state=0, tol=1e-3).W))
    ('nmf_euclidean', True)
    """
    has_variants = any(s.name == name and s.variant is not None for s in _SPECS)
    spec = variant(name, solver) if has_variants else _entry(name)
    backend = backend_for(V)
    observed = Observed.of(mask)  # the public mask=, made one type here
    if observed is not None:
        make_masked = partial(_masked_steps(spec, backend), **params)
        run = MaskedRun(observed, make_masked, V, n_components, params, settings)
        return run.run(stacklevel=4)
    if backend is not None:
        if backend.runs(spec.steps):
            return backend.run(backend.steps_for(spec.steps), V, n_components, params, settings)
        if spec.variant is not None:
            raise ValueError(
                f"solver={spec.variant!r} does not run on {backend.arrays()} "
                f"yet; use solver={_default_variant(spec)!r} (the paper's algorithm) or compute "
                "V into memory"
            )
    make_steps = partial(spec.steps, **params)
    return Run(make_steps, V, n_components, params, settings).run(stacklevel=4)


def run_steps(steps: type, V, n_components, *, params: dict, settings):
    """Run the steps class ``steps``, which has no row in the table
    (:func:`nmfsc.solvers.coefficients.fit_coefficients`'s H step alone), with
    its keywords ``params`` on V: on the backend that accepts V when it
    declares ``steps``, else in memory (``Run``).

    See Also
    --------
    run_solver : Runs a row of the table.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.solvers.coefficients import CoefficientSteps
    >>> from nmfsc.solvers.dispatch import run_steps
    >>> from nmfsc.solvers.framework import LoopSettings
    >>> rng = np.random.default_rng(0)
    >>> V, W = rng.random((20, 30)), rng.random((20, 3))
    >>> settings = LoopSettings(W_init=W, tol=1e-3)  # W fixed; H from the random start
    >>> run_steps(CoefficientSteps, V, 3, params={"sparseness_h": None}, settings=settings).H.shape
    (3, 30)
    """
    backend = backend_for(V)
    if backend is not None and backend.runs(steps):
        return backend.run(backend.steps_for(steps), V, n_components, params, settings)
    make_steps = partial(steps, **params)
    return Run(make_steps, V, n_components, params, settings).run(stacklevel=4)


def method_name(spec: SolverSpec) -> str:
    """The name :func:`nmfsc.compare` and ``reproduce`` give the row ``spec``: the
    function's name, with ``_<variant>`` after it for a variant other than the
    default (``nmf_sc`` for ``solver="hoyer"``, ``nmf_sc_accelerated`` for
    ``solver="accelerated"``), and ``_<name_suffix>`` for a row that has one
    (``nmf_sc_accelerated_average``).

    See Also
    --------
    nmfsc.solvers.registry.solver : The row of a name.
    nmfsc.solvers.registry.compared_solvers : The names compare runs.

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


def _entry(name: str) -> SolverSpec:
    """The row of the public solver ``name`` without variants (an error in
    the table, not the caller's, when there is none)."""
    for spec in _SPECS:
        if spec.name == name and spec.variant is None and not spec.fixed_keywords:
            return spec
    raise LookupError(f"the solvers' table has no row {name!r} (nmfsc.solvers.registry)")


def _masked_steps(spec: SolverSpec, backend: Backend | None) -> type:
    """The steps class that runs ``spec``'s solver with a mask, or a ValueError."""
    if backend is not None:
        raise ValueError(
            f"mask= does not run on {backend.arrays()}: masks are not "
            "supported there; compute V (and the mask) into memory, or leave mask=None"
        )
    if spec.masked_steps is not None:
        return spec.masked_steps
    if spec.variant is not None:
        raise ValueError(
            f"solver={spec.variant!r} does not take a mask yet; use "
            f"solver={_default_variant(spec)!r} (the paper's algorithm) with mask=..."
        )
    raise ValueError(f"{spec.name} does not take a mask")
