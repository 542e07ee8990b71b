"""The solvers' table: every public solver, and every ``solver=`` variant of nmf_sc.

One row (a :class:`~nmfsc.solvers.dispatch.SolverSpec`) per way of running
a solver: the public function, its steps class, its own keywords, its steps
with a mask (missing values), whether its objective is the squared error,
and whether :func:`nmfsc.compare` offers it. The backends a row runs on are
not listed here: each backend declares the steps it runs
(:class:`nmfsc.backends.Backend`), and the row's
:attr:`~nmfsc.solvers.dispatch.SolverSpec.backends` follow. What lists
or selects solvers reads this table: the solver functions' ``solver=``
dispatch, :func:`nmfsc.compare`, the ``nmfsc`` command line,
:class:`nmfsc.SparseNMF` and ``reproduce`` (which also hashes the modules
of the solvers it runs into the figures' code version).

Adding a ``solver=`` variant of nmf_sc takes its module (a
``HoyerSteps`` subclass) and one row here, with
``function=nmf_sc`` and its ``variant`` (and, to run with a mask or on a
GPU, its masked steps in ``masked_steps`` and its device steps in the GPU
backend's declaration, :data:`nmfsc.gpu_backend.GPU_BACKEND`); adding a
solver function, its module, one row here, its call of
:func:`~nmfsc.solvers.dispatch.run_solver` and its export from
``nmfsc.solvers`` and ``nmfsc``.
"""

from __future__ import annotations

from nmfsc.solvers.accelerated import AcceleratedSteps
from nmfsc.solvers.dispatch import SolverSpec, install, method_name, solver_specs
from nmfsc.solvers.hoyer import HoyerSteps, nmf_sc
from nmfsc.solvers.masked import MaskedEuclideanSteps, MaskedHoyerSteps
from nmfsc.solvers.masked_accelerated import MaskedAcceleratedSteps
from nmfsc.solvers.penalized import LiuSparseSteps, LocalSteps, local_nmf, sparse_nmf
from nmfsc.solvers.standard import DivergenceSteps, EuclideanSteps, nmf_divergence, nmf_euclidean

__all__ = [
    "SOLVERS",
    "compared_solvers",
    "masked_solvers",
    "solver",
    "variants",
]

SPARSENESS = ("sparseness_w", "sparseness_h")

#: The table, in the order :func:`nmfsc.compare` runs and reports the methods:
#: one :class:`~nmfsc.solvers.dispatch.SolverSpec` per way of running a solver
#: (its names: :func:`compared_solvers`). The first variant of nmf_sc is its
#: default: the paper's algorithm.
SOLVERS: tuple[SolverSpec, ...] = (
    SolverSpec(
        "nmf_sc",
        nmf_sc,
        HoyerSteps,
        SPARSENESS,
        variant="hoyer",
        masked_steps=MaskedHoyerSteps,
        squared_error=True,
        description="the paper's projected gradient algorithm",
    ),
    SolverSpec(
        "nmf_sc",
        nmf_sc,
        AcceleratedSteps,
        SPARSENESS,
        variant="accelerated",
        masked_steps=MaskedAcceleratedSteps,
        squared_error=True,
        description="the same problem and start, solved by block coordinate descent",
    ),
    SolverSpec(
        "nmf_sc",
        nmf_sc,
        AcceleratedSteps,
        SPARSENESS,
        variant="accelerated",
        squared_error=True,
        description="the sparseness targets held on average over W's columns (H's rows), "
        "each free to differ (Ohib, Gillis et al. 2022)",
        fixed_keywords=(("average_sparseness", True),),
        name_suffix="average",
    ),
    SolverSpec(
        "nmf_euclidean",
        nmf_euclidean,
        EuclideanSteps,
        masked_steps=MaskedEuclideanSteps,
        squared_error=True,
        description="Lee & Seung's multiplicative updates, Euclidean",
    ),
    SolverSpec(
        "nmf_divergence",
        nmf_divergence,
        DivergenceSteps,
        description="Lee & Seung's multiplicative updates, divergence",
    ),
    SolverSpec(
        "local_nmf",
        local_nmf,
        LocalSteps,
        ("alpha", "beta"),
        description="local NMF (Li et al. 2001)",
    ),
    SolverSpec(
        "sparse_nmf",
        sparse_nmf,
        LiuSparseSteps,
        ("alpha",),
        description="sparse NMF with an L1 penalty on H (Liu et al. 2003)",
    ),
)
install(SOLVERS)


def solver(name: str) -> SolverSpec:
    """The row named ``name`` (:func:`~nmfsc.solvers.dispatch.method_name`): a
    public solver's name gives its default variant (``"nmf_sc"``: the paper's
    algorithm), ``<name>_<variant>`` another variant.

    See Also
    --------
    nmfsc.solvers.registry.SOLVERS : The table it reads.
    variants : The ``solver=`` values of a public solver.
    nmfsc.solvers.dispatch.SolverSpec : What a row is.

    Examples
    --------
    >>> from nmfsc import nmf_sc
    >>> from nmfsc.solvers.registry import solver
    >>> solver("nmf_sc").variant  # the default: the paper's algorithm
    'hoyer'
    >>> spec = solver("nmf_sc_accelerated")
    >>> spec.function is nmf_sc, spec.variant, spec.keywords
    (True, 'accelerated', ('sparseness_w', 'sparseness_h'))
    >>> solver("nmf_fast")
    Traceback (most recent call last):
    ...
    ValueError: unknown solver 'nmf_fast'
    """
    for spec in solver_specs():
        if method_name(spec) == name:
            return spec
    raise ValueError(f"unknown solver {name!r}")


def variants(function) -> tuple[str, ...]:
    """The values the public solver ``function``'s ``solver=`` takes, the default
    first (empty for a solver without variants).

    See Also
    --------
    solver : One row of the table.
    nmfsc.solvers.dispatch.variant : The entry of one variant.

    Examples
    --------
    >>> from nmfsc import nmf_euclidean, nmf_sc
    >>> from nmfsc.solvers.registry import variants
    >>> variants(nmf_sc), variants(nmf_euclidean)
    (('hoyer', 'accelerated'), ())
    """
    return tuple(
        s.variant
        for s in solver_specs()
        if s.function is function and s.variant and not s.fixed_keywords
    )


def compared_solvers() -> tuple[str, ...]:
    """The names :func:`nmfsc.compare` runs (:func:`~nmfsc.solvers.dispatch.method_name`),
    in table order.

    See Also
    --------
    nmfsc.compare : Runs them.
    solver : The row of one of them.
    nmfsc.solvers.dispatch.method_name : How a row is named.

    Examples
    --------
    >>> from nmfsc.solvers.registry import compared_solvers
    >>> compared_solvers()[:3]  # nmf_sc's rows first, the paper's algorithm leading
    ('nmf_sc', 'nmf_sc_accelerated', 'nmf_sc_accelerated_average')
    >>> "nmf_euclidean" in compared_solvers()
    True
    """
    return tuple(method_name(s) for s in solver_specs() if s.compared)


def masked_solvers() -> tuple[str, ...]:
    """The names (:func:`~nmfsc.solvers.dispatch.method_name`) of the rows that
    take ``mask=`` (they have masked steps), in table order: ``nmf_sc``,
    ``nmf_sc_accelerated``, ``nmf_euclidean``."""
    return tuple(method_name(s) for s in solver_specs() if s.masked_steps is not None)
