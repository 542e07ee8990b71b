"""The solvers' table: every public solver, and every ``solver=`` variant of nmf_sc.

One row (a :class:`~nmfsc.solvers.dispatch.SolverSpec`) per way of running
a solver: the public function, its steps class, its own keywords, the
backends it runs on, whether its objective is the squared error, and whether
:func:`nmfsc.compare` offers it. Everything that lists solvers reads this
table: the solver functions' ``solver=`` dispatch, :func:`nmfsc.compare`,
the ``nmfsc`` command line, :class:`nmfsc.SparseNMF` and ``reproduce``
(which also hashes the modules of the solvers it runs into the figures'
code version).

Adding a ``solver=`` variant of nmf_sc takes its module (a
:class:`~nmfsc.solvers.hoyer.HoyerSteps` subclass) and one row here, with
``function=nmf_sc`` and its ``variant``; adding a solver function, its
module, one row here and its export from ``nmfsc.solvers`` and ``nmfsc``.
"""

from __future__ import annotations

from nmfsc.solvers.accelerated import AcceleratedSteps
from nmfsc.solvers.dispatch import IN_MEMORY, SolverSpec, install, solver_specs
from nmfsc.solvers.hoyer import HoyerSteps, nmf_sc
from nmfsc.solvers.penalized import LiuSparseSteps, LocalSteps, local_nmf, sparse_nmf
from nmfsc.solvers.standard import DivergenceSteps, EuclideanSteps, nmf_divergence, nmf_euclidean

__all__ = [
    "DASK",
    "GPU",
    "SOLVERS",
    "compared_solvers",
    "solver",
    "variants",
]

#: The Dask backend's name (:mod:`nmfsc.dask_backend`, which registers itself).
DASK = "dask"
#: The GPU backend's name (:mod:`nmfsc.gpu_backend`: V a CuPy array).
GPU = "gpu"
SPARSENESS = ("sparseness_w", "sparseness_h")

#: The table, in the order :func:`nmfsc.compare` runs and reports the methods.
#: The first variant of nmf_sc is its default: the paper's algorithm.
SOLVERS: tuple[SolverSpec, ...] = (
    SolverSpec(
        "nmf_sc",
        nmf_sc,
        HoyerSteps,
        SPARSENESS,
        variant="hoyer",
        backends=(IN_MEMORY, DASK, GPU),
        squared_error=True,
    ),
    SolverSpec(
        "nmf_sc",
        nmf_sc,
        AcceleratedSteps,
        SPARSENESS,
        variant="accelerated",
        squared_error=True,
        compared=False,
    ),
    SolverSpec(
        "nmf_euclidean",
        nmf_euclidean,
        EuclideanSteps,
        backends=(IN_MEMORY, DASK, GPU),
        squared_error=True,
    ),
    SolverSpec("nmf_divergence", nmf_divergence, DivergenceSteps),
    SolverSpec("local_nmf", local_nmf, LocalSteps, ("alpha", "beta")),
    SolverSpec("sparse_nmf", sparse_nmf, LiuSparseSteps, ("alpha",)),
)
install(SOLVERS)


def solver(name: str) -> SolverSpec:
    """The row of the public solver ``name`` (its default variant for nmf_sc)."""
    for spec in solver_specs():
        if spec.name == name:
            return spec
    raise ValueError(f"unknown solver {name!r}")


def variants(function) -> tuple[str, ...]:
    """The values the public solver ``function``'s ``solver=`` takes, the default
    first (empty for a solver without variants)."""
    return tuple(s.variant for s in solver_specs() if s.function is function and s.variant)


def compared_solvers() -> tuple[str, ...]:
    """The names :func:`nmfsc.compare` runs, in table order."""
    return tuple(dict.fromkeys(s.name for s in solver_specs() if s.compared))
