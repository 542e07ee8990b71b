"""The solvers' API: input checks and their messages, the random start, the
result, stopping, warnings, callback, progress bar, units and dtypes.

Agreement with SPEC's formulas is in test_solvers_reference.py, checkpoints in
test_solvers_checkpoint.py.
"""

import dataclasses
import inspect
import warnings

import numpy as np
import pytest

import nmfsc
from nmfsc import ConvergenceWarning, NMFResult

M = 4
SOLVERS = [
    nmfsc.nmf_sc,
    nmfsc.nmf_euclidean,
    nmfsc.nmf_divergence,
    nmfsc.local_nmf,
    nmfsc.sparse_nmf,
]
SOLVER_IDS = [f.__name__ for f in SOLVERS]


@pytest.fixture
def V():
    return 5.0 * np.abs(np.random.default_rng(0).standard_normal((30, 40))) + 0.01


def quiet(solver, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return solver(*args, **kwargs)


# --- exports -----------------------------------------------------------------


def test_public_api():
    for name in [
        "nmf_sc",
        "nmf_euclidean",
        "nmf_divergence",
        "local_nmf",
        "sparse_nmf",
        "NMFResult",
        "ConvergenceWarning",
        "CheckpointMismatchError",
    ]:
        assert name in nmfsc.__all__
    assert issubclass(ConvergenceWarning, UserWarning)
    assert nmfsc.CheckpointMismatchError is nmfsc.solvers.CheckpointMismatchError


@pytest.mark.parametrize("solver", SOLVERS, ids=SOLVER_IDS)
def test_loop_keywords_are_the_loop_settings_fields(solver):
    """Each solver's signature (as inspect and help() show it) ends with
    LoopSettings' fields: same names, order and defaults, keyword-only."""
    from nmfsc.solvers._settings import LoopSettings

    fields = [(f.name, f.default) for f in dataclasses.fields(LoopSettings)]
    params = list(inspect.signature(solver).parameters.values())[-len(fields) :]
    assert [(p.name, p.default) for p in params] == fields
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)


def test_estimator_loop_defaults_are_the_loop_settings_defaults():
    from nmfsc.solvers._settings import LoopSettings

    params = inspect.signature(nmfsc.SparseNMF).parameters
    shared = set(params) & set(LoopSettings.names())
    assert shared == {
        "max_iter",
        "tol",
        "window",
        "stationarity_tol",
        "max_time",
        "random_state",
        "progress",
        "init",
    }
    for name in shared:
        assert params[name].default == getattr(LoopSettings(), name)


# --- input checks ---------------------------------------------------------------

BAD_V = [
    (-np.ones((3, 4)), ValueError, r"V has negative entries; NMF needs V >= 0"),
    (np.array([[1.0, np.nan], [1.0, 2.0]]), ValueError, "V contains NaN or infinity"),
    (np.array([[1.0, np.inf], [1.0, 2.0]]), ValueError, "V contains NaN or infinity"),
    (np.ones(5), ValueError, "V must be 2-D"),
    (np.ones((2, 2, 2)), ValueError, "V must be 2-D"),
    (np.ones((0, 4)), ValueError, "V is empty"),
    (np.zeros((3, 4)), ValueError, "V is all zeros"),
    (np.array([["a", "b"]]), TypeError, "V must be a real numeric array"),
]


@pytest.mark.parametrize("solver", SOLVERS, ids=SOLVER_IDS)
@pytest.mark.parametrize(("bad", "error", "match"), BAD_V)
def test_bad_data(solver, bad, error, match):
    with pytest.raises(error, match=match):
        solver(bad, 2)


BAD_OPTIONS = [
    ({"n_components": 0}, ValueError, "n_components must be >= 1, got 0"),
    ({"n_components": -2}, ValueError, "n_components must be >= 1, got -2"),
    ({"n_components": 2.5}, TypeError, "n_components must be a positive integer, got 2.5"),
    ({"n_components": True}, TypeError, "n_components must be a positive integer"),
    ({"max_iter": -1}, ValueError, "max_iter must be >= 0, got -1"),
    ({"max_iter": 3.0}, TypeError, "max_iter must be a non-negative integer, got 3.0"),
    ({"tol": -1e-3}, ValueError, r"tol must be finite and >= 0, got -0.001"),
    ({"tol": np.nan}, ValueError, "tol must be finite and >= 0, got nan"),
    ({"tol": "small"}, TypeError, "tol must be a real number, got 'small'"),
    ({"window": 0}, ValueError, "window must be >= 1, got 0"),
    ({"max_time": 0}, ValueError, r"max_time must be finite and > 0, got 0.0"),
    ({"max_time": -5.0}, ValueError, r"max_time must be finite and > 0, got -5.0"),
    ({"callback": 3}, TypeError, "callback must be callable or None, got 3"),
    ({"checkpoint_every": 0}, ValueError, "checkpoint_every must be >= 1, got 0"),
    ({"checkpoint_seconds": 0.0}, ValueError, "checkpoint_seconds must be finite and > 0"),
    ({"checkpoint": 3}, TypeError, r"checkpoint must be a path \(str or Path\) or None"),
    ({"resume": True}, ValueError, r"resume=True needs a checkpoint path"),
    ({"random_state": "seed"}, TypeError, "random_state must be None, a non-negative int"),
    ({"random_state": -1}, ValueError, "random_state must be None, a non-negative int"),
]


@pytest.mark.parametrize("solver", SOLVERS, ids=SOLVER_IDS)
@pytest.mark.parametrize(("options", "error", "match"), BAD_OPTIONS)
def test_bad_options(V, solver, options, error, match):
    options = {"n_components": M, **options}
    n_components = options.pop("n_components")
    with pytest.raises(error, match=match):
        solver(V, n_components, **options)


BAD_INIT = [
    ({"W_init": np.ones((30, 3))}, ValueError, r"W_init must have shape \(30, 4\), got \(30, 3\)"),
    ({"H_init": np.ones((4, 41))}, ValueError, r"H_init must have shape \(4, 40\), got \(4, 41\)"),
    ({"W_init": -np.ones((30, 4))}, ValueError, "W_init has negative entries; it must be >= 0"),
    ({"H_init": -np.ones((4, 40))}, ValueError, "H_init has negative entries; it must be >= 0"),
    ({"W_init": np.full((30, 4), np.nan)}, ValueError, "W_init contains NaN or infinity"),
    ({"H_init": np.ones(40)}, ValueError, "H_init must be 2-D"),
]


@pytest.mark.parametrize("solver", SOLVERS, ids=SOLVER_IDS)
@pytest.mark.parametrize(("options", "error", "match"), BAD_INIT)
def test_bad_init(V, solver, options, error, match):
    with pytest.raises(error, match=match):
        solver(V, M, **options)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"sparseness_w": 1.5}, ValueError, r"sparseness_w must lie in \[0, 1\], got 1.5"),
        ({"sparseness_h": -0.1}, ValueError, r"sparseness_h must lie in \[0, 1\], got -0.1"),
        ({"sparseness_w": "high"}, TypeError, r"sparseness_w must be a real number in \[0, 1\]"),
        ({"sparseness_h": np.nan}, ValueError, r"sparseness_h must lie in \[0, 1\], got nan"),
    ],
)
def test_bad_sparseness(V, options, error, match):
    with pytest.raises(error, match=match):
        nmfsc.nmf_sc(V, M, **options)


@pytest.mark.parametrize(
    ("solver", "options", "match"),
    [
        (nmfsc.local_nmf, {"alpha": -1.0}, "alpha must be finite and >= 0, got -1.0"),
        (nmfsc.local_nmf, {"beta": np.inf}, "beta must be finite and >= 0, got inf"),
        (nmfsc.sparse_nmf, {"alpha": -0.5}, "alpha must be finite and >= 0, got -0.5"),
    ],
)
def test_bad_penalties(V, solver, options, match):
    with pytest.raises(ValueError, match=match):
        solver(V, M, **options)


@pytest.mark.parametrize("solver", SOLVERS, ids=SOLVER_IDS)
def test_unknown_or_positional_options_are_type_errors(V, solver):
    with pytest.raises(TypeError, match="unexpected keyword argument 'sparsenes_w'"):
        solver(V, M, sparsenes_w=0.5)
    with pytest.raises(TypeError, match="positional argument"):
        solver(V, M, None)


def test_penalty_options_belong_to_their_solvers(V):
    with pytest.raises(TypeError, match="unexpected keyword argument 'alpha'"):
        nmfsc.nmf_sc(V, M, alpha=1.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'beta'"):
        nmfsc.sparse_nmf(V, M, beta=1.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sparseness_w'"):
        nmfsc.nmf_euclidean(V, M, sparseness_w=0.5)


# --- the random start ------------------------------------------------------------


@pytest.mark.parametrize("solver", SOLVERS, ids=SOLVER_IDS)
def test_seeds_reproduce_bit_for_bit(V, solver):
    a = quiet(solver, V, M, random_state=7, max_iter=15)
    b = quiet(solver, V, M, random_state=np.random.default_rng(7), max_iter=15)
    c = quiet(solver, V, M, random_state=8, max_iter=15)
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.H, b.H)
    np.testing.assert_array_equal(a.objective, b.objective)
    assert not np.array_equal(a.W, c.W)
    assert a.objective[0] != c.objective[0]


def test_random_start_is_the_spec_draw(V):
    """W = |randn(N, M)|, then H = |randn(M, T)|, from default_rng(seed);
    nmf_euclidean applies no start-up of its own."""
    result = quiet(nmfsc.nmf_euclidean, V, M, random_state=3, max_iter=0)
    rng = np.random.default_rng(3)
    W0 = np.abs(rng.standard_normal((30, M)))
    H0 = np.abs(rng.standard_normal((M, 40)))
    np.testing.assert_array_equal(result.H, H0)
    np.testing.assert_allclose(result.W, W0 * V.max(), rtol=1e-15)


def test_w_init_alone_keeps_the_random_h(V):
    rng = np.random.default_rng(3)
    rng.standard_normal((30, M))
    H0 = np.abs(rng.standard_normal((M, 40)))
    W_init = np.full((30, M), 2.0)
    result = quiet(nmfsc.nmf_euclidean, V, M, random_state=3, W_init=W_init, max_iter=0)
    np.testing.assert_array_equal(result.H, H0)
    np.testing.assert_allclose(result.W, W_init, rtol=1e-15)


@pytest.mark.parametrize("solver", [nmfsc.local_nmf, nmfsc.sparse_nmf])
def test_unit_sum_start(V, solver):
    result = quiet(solver, V, M, random_state=0, max_iter=0)
    np.testing.assert_allclose(result.W.sum(axis=0), V.max(), rtol=1e-13)


def test_nmf_sc_start(V):
    result = quiet(
        nmfsc.nmf_sc, V, M, random_state=0, max_iter=0, sparseness_w=0.7, sparseness_h=0.4
    )
    np.testing.assert_allclose(np.linalg.norm(result.W, axis=0), V.max(), rtol=1e-12)
    np.testing.assert_allclose(result.sparseness_W, 0.7, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(result.H, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(result.sparseness_H, 0.4, atol=1e-12)
    assert result.step_sizes == (1.0, 1.0)


# --- units, dtypes, the result -----------------------------------------------------


@pytest.mark.parametrize("solver", SOLVERS, ids=SOLVER_IDS)
def test_units_of_w_and_the_objective(V, solver):
    """W is returned in V's units, H unchanged: scaling V by c scales W by c,
    the Euclidean objective by c**2 and the divergence ones by c."""
    a = quiet(solver, V, M, random_state=1, max_iter=10)
    b = quiet(solver, 1000.0 * V, M, random_state=1, max_iter=10)
    np.testing.assert_allclose(b.W, 1000.0 * a.W, rtol=1e-9)
    np.testing.assert_allclose(b.H, a.H, rtol=1e-9)
    power = 2 if solver in (nmfsc.nmf_sc, nmfsc.nmf_euclidean) else 1
    np.testing.assert_allclose(b.objective, 1000.0**power * a.objective, rtol=1e-9)
    assert b.scale == pytest.approx(1000.0 * a.scale)
    assert b.relative_error == pytest.approx(a.relative_error, rel=1e-9)


@pytest.mark.parametrize(
    "solver, options",
    [
        (nmfsc.nmf_sc, {"sparseness_h": 0.5}),
        (nmfsc.nmf_sc, {"sparseness_w": 0.5}),
        (nmfsc.nmf_sc, {}),
        (nmfsc.nmf_euclidean, {}),
    ],
    ids=["nmf_sc-s_h", "nmf_sc-s_w", "nmf_sc-plain", "nmf_euclidean"],
)
def test_euclidean_history_is_the_objective_of_the_returned_factors(V, solver, options):
    """The history comes from the steps' products (and, for nmf_euclidean,
    from the W^T W of the rescaled W): it must still be the objective of the
    factors returned."""
    result = quiet(solver, V, M, random_state=1, max_iter=10, **options)
    exact = 0.5 * np.sum((V - result.W @ result.H) ** 2)
    assert result.objective[-1] == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("s_h", [None, 0.5])
@pytest.mark.parametrize("mu_w", [1.0, 1e300])
def test_one_component_steps_leave_the_state_unmodified(V, s_h, mu_w):
    """With M = 1, W^T of the start's projection is a view of the projector's
    buffer: W must be taken from it, or the W step's trials, written into that
    buffer, overwrite the state's W (a rejected trial then moves W without a
    descent test, and the W^T W kept for that array goes stale). A step makes
    new arrays and leaves the state's untouched, whether a trial is accepted
    (mu_W = 1) or every one is rejected (mu_W = 1e300 halves to below 1e-200)."""
    from nmfsc.solvers._data import make_data
    from nmfsc.solvers.hoyer import HoyerSteps

    rng = np.random.default_rng(0)
    steps = HoyerSteps(make_data(V, float(V.max())), 1, 0.6, s_h)
    W0, H0 = np.abs(rng.standard_normal((V.shape[0], 1))), rng.random((1, V.shape[1]))
    state = steps.initialize(W0, H0)
    steps.start(state)
    state = {**state, "mu_W": mu_w}
    before = {key: np.copy(value) for key, value in state.items()}
    steps.step(state)
    for key, value in before.items():
        np.testing.assert_array_equal(state[key], value, err_msg=key)


@pytest.mark.parametrize("factor", ["W", "H"])
def test_start_projection_takes_the_rows_and_refuses_a_row_it_cannot_project(V, factor):
    """The start's projected factors are new arrays (not the projector's
    buffer), and a start row that is not finite (refused earlier by the public
    functions) is a clear error here, for W as for H."""
    from nmfsc.solvers._data import make_data
    from nmfsc.solvers.hoyer import HoyerSteps

    rng = np.random.default_rng(0)
    steps = HoyerSteps(make_data(V, float(V.max())), 2, 0.6, 0.5)
    W0, H0 = rng.random((V.shape[0], 2)), rng.random((2, V.shape[1]))
    state = steps.initialize(W0, H0)
    assert state["W"] is not steps.proj_w.out and state["H"] is not steps.proj_h.out
    assert steps.proj_w.out is None and steps.proj_h.out is None
    bad = {"W": W0, "H": H0}
    bad[factor] = bad[factor].copy()
    bad[factor][0, 0] = np.nan
    with pytest.raises(ValueError, match="cannot be projected: it is not finite"):
        steps.initialize(bad["W"], bad["H"])


def test_column_gram_is_computed_once_per_array():
    from nmfsc.solvers._objective import ColumnGram

    rng = np.random.default_rng(0)
    W = rng.random((20, 3))
    gram = ColumnGram()
    first = gram(W)
    assert gram(W) is first  # the same array: reused
    np.testing.assert_array_equal(first, W.T @ W)
    copy = W.copy()
    again = gram(copy)  # an equal array, another object: computed the same way
    assert again is not first
    np.testing.assert_array_equal(again, first)
    other = rng.random((20, 3))
    np.testing.assert_array_equal(gram(other), other.T @ other)


def test_column_gram_from_columns_given_or_copied_has_the_same_bits():
    from nmfsc.solvers._objective import ColumnGram

    W = np.random.default_rng(1).random((30, 4))
    columns = np.ascontiguousarray(W.T)
    given = ColumnGram(from_columns=True)(W, columns)
    copied = ColumnGram(from_columns=True)(W)
    np.testing.assert_array_equal(given, copied)
    np.testing.assert_array_equal(given, columns @ columns.T)
    # The given rows are the ones used on a miss, and a hit ignores them.
    gram = ColumnGram(from_columns=True)
    np.testing.assert_array_equal(gram(W, 2.0 * columns), 4.0 * given)
    assert gram(W, columns) is gram(W)


def test_h_v_transposed_is_v_h_transposed_for_every_kind_of_data(tmp_path):
    """``hvt`` (nmf_sc's projected W step) against ``vht`` for dense, sparse
    and mapped data: H V^T, C-contiguous."""
    import scipy.sparse as sp

    from nmfsc.solvers._data import make_data

    rng = np.random.default_rng(2)
    for dtype, M, rtol in [(np.float64, 3, 1e-14), (np.float64, 1, 1e-14), (np.float32, 3, 1e-6)]:
        V, H = rng.random((13, 17)).astype(dtype), rng.random((M, 17)).astype(dtype)
        np.save(tmp_path / "V.npy", V)
        mapped = np.load(tmp_path / "V.npy", mmap_mode="r")
        for given in (V, sp.csr_matrix(V), sp.csc_matrix(V), mapped):
            data = make_data(given, 2.0)
            HVt = data.hvt(H)
            assert HVt.shape == (M, 13) and HVt.flags.c_contiguous and HVt.dtype == dtype
            np.testing.assert_allclose(HVt, data.vht(H).T, rtol=rtol)
            np.testing.assert_allclose(HVt, H @ V.T / 2.0, rtol=rtol)


def test_divergence_history_is_the_divergence_of_the_returned_factors(V):
    result = quiet(nmfsc.nmf_divergence, V, M, random_state=1, max_iter=10)
    WH = result.W @ result.H
    exact = np.sum(V * np.log(V / WH) - V + WH)
    assert result.objective[-1] == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("solver", SOLVERS, ids=SOLVER_IDS)
def test_float32_input_gives_float32_factors(V, solver):
    a = quiet(solver, V.astype(np.float32), M, random_state=2, max_iter=10)
    b = quiet(solver, V.astype(np.float32).astype(np.float64), M, random_state=2, max_iter=10)
    assert a.W.dtype == a.H.dtype == np.float32
    assert b.W.dtype == b.H.dtype == np.float64
    np.testing.assert_allclose(a.objective, b.objective, rtol=1e-4)


@pytest.mark.parametrize("solver", SOLVERS, ids=SOLVER_IDS)
def test_integer_input_is_float64(V, solver):
    a = quiet(solver, np.round(10 * V).astype(np.int32), M, random_state=2, max_iter=3)
    b = quiet(solver, np.round(10 * V), M, random_state=2, max_iter=3)
    assert a.W.dtype == a.H.dtype == np.float64
    np.testing.assert_array_equal(a.W, b.W)


def test_input_is_not_modified(V):
    original = V.copy()
    W_init = np.ones((30, M))
    quiet(nmfsc.nmf_sc, V, M, sparseness_w=0.5, W_init=W_init, max_iter=3)
    np.testing.assert_array_equal(V, original)
    np.testing.assert_array_equal(W_init, 1.0)


def test_result_fields(V):
    result = quiet(nmfsc.nmf_sc, V, M, sparseness_w=0.6, random_state=0, max_iter=12)
    assert isinstance(result, NMFResult)
    assert result.W.shape == (30, M) and result.H.shape == (M, 40)
    assert result.objective.shape == result.times.shape == (13,)
    assert result.times[0] == 0.0 and np.all(np.diff(result.times) >= 0)
    assert result.sparseness_W.shape == result.sparseness_H.shape == (M,)
    np.testing.assert_allclose(result.sparseness_W, 0.6, atol=1e-9)
    np.testing.assert_allclose(result.sparseness_H, nmfsc.sparseness(result.H, axis=1))
    assert result.n_iter == 12 and result.converged is False
    assert result.stop_reason == "max_iter" and result.solver == "nmf_sc"
    assert result.params["sparseness_w"] == 0.6 and result.params["sparseness_h"] is None
    assert result.params["n_components"] == M and result.params["max_iter"] == 12
    assert result.scale == V.max()
    mu_w, mu_h = result.step_sizes
    assert 0 < mu_w and mu_h == 1.0
    expected = np.linalg.norm(V - result.W @ result.H) / np.linalg.norm(V)
    assert result.relative_error == pytest.approx(expected, rel=1e-12)
    text = repr(result)
    assert text.startswith("NMFResult(solver='nmf_sc', V 30x40, M=4, n_iter=12")
    assert "stop_reason='max_iter'" in text and len(text) < 250
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.n_iter = 3
    assert quiet(nmfsc.nmf_divergence, V, M, max_iter=2).step_sizes is None


# --- stopping ----------------------------------------------------------------------


@pytest.mark.parametrize("solver", SOLVERS, ids=SOLVER_IDS)
def test_max_iter_warns_and_names_the_limit(V, solver):
    with pytest.warns(ConvergenceWarning, match=r"max_iter=5 reached; raise max_iter"):
        result = solver(V, M, random_state=0, max_iter=5, tol=0.0)
    assert result.n_iter == 5 and not result.converged and result.stop_reason == "max_iter"


def test_max_time_warns(V):
    with pytest.warns(ConvergenceWarning, match=r"max_time=1e-09 s reached; raise max_time"):
        result = nmfsc.nmf_sc(V, M, random_state=0, max_time=1e-9)
    assert result.stop_reason == "max_time" and not result.converged
    assert result.n_iter <= 1


def test_max_iter_zero_returns_the_start(V):
    with pytest.warns(ConvergenceWarning):
        result = nmfsc.nmf_sc(V, M, random_state=0, max_iter=0)
    assert result.n_iter == 0 and result.objective.shape == (1,)


@pytest.mark.parametrize("solver", SOLVERS, ids=SOLVER_IDS)
def test_converges_on_exact_low_rank_data(solver):
    """V = W0 H0 exactly: every solver stops by its tolerance, not a limit, at
    the first iteration k where |E[k-10] - E[k]| < tol |E[k-10]|.

    (On exact data E falls towards 0 and its relative decrease shrinks only
    slowly: with tol=1e-5 this takes tens of thousands of iterations.)"""
    rng = np.random.default_rng(4)
    V = np.abs(rng.standard_normal((30, 3))) @ np.abs(rng.standard_normal((3, 40)))
    tol = 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = solver(V, 3, random_state=0, max_iter=5000, tol=tol)
    assert result.converged and result.stop_reason == "tol"
    E, k, w = result.objective, result.n_iter, result.params["window"]
    assert w == 10 and k >= w

    def change(j):
        return abs(E[j - w] - E[j]) / abs(E[j - w])

    assert change(k) < tol
    assert all(change(j) >= tol for j in range(w, k))


def test_exact_fit_gets_close():
    rng = np.random.default_rng(5)
    V = np.abs(rng.standard_normal((20, 2))) @ np.abs(rng.standard_normal((2, 25)))
    result = nmfsc.nmf_euclidean(V, 2, random_state=0, max_iter=20000, tol=1e-7)
    assert result.converged and result.relative_error < 1e-2


def test_window_is_respected(V):
    result = nmfsc.nmf_euclidean(V, M, random_state=0, tol=1.0, window=3, max_iter=100)
    assert result.stop_reason == "tol" and result.n_iter == 3


@pytest.mark.parametrize(
    ("shape", "option", "vectors"),
    [((1, 30), "sparseness_w", "W's columns"), ((30, 1), "sparseness_h", "H's rows")],
)
@pytest.mark.parametrize("solver", ["hoyer", "accelerated"])
def test_a_sparseness_target_for_vectors_of_one_entry_is_refused(shape, option, vectors, solver):
    """A vector of one entry has no sparseness: a target for it is an error,
    not silently met (the result's sparseness would be NaN)."""
    V = np.random.default_rng(0).random(shape)
    with pytest.raises(ValueError, match=rf"{option}=0.5 is set, but {vectors} .* single entry"):
        nmfsc.nmf_sc(V, 1, solver=solver, **{option: 0.5})


@pytest.mark.parametrize(("s_w", "s_h"), [(None, 0.6), (0.6, None), (0.5, 0.5)])
def test_step_size_underflow_is_convergence_where_the_objective_stopped_falling(
    V, monkeypatch, s_w, s_h
):
    """When the step size falls below its floor no descent step exists and,
    where the objective has stopped falling (by at most tol over the window),
    nmf_sc has converged (stop reason "step_size", no warning).

    With the real floor (1e-200) this needs a trial that increases E at every
    step size, which exact projections make practically unreachable in
    float64 (at tiny steps the trial rounds to the current, feasible, iterate,
    whose projection is itself). So the floor is raised to 0.9: the first
    rejected trial ends the run, in the H step (nothing changes) or the W step
    (H has moved and the iteration counts); tol = 0.999 over a window longer
    than the run counts any fall since the start as stopped.
    """
    from nmfsc.solvers import hoyer as module

    monkeypatch.setattr(module, "MU_MIN", 0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = nmfsc.nmf_sc(
            V,
            M,
            sparseness_w=s_w,
            sparseness_h=s_h,
            random_state=0,
            max_iter=50,
            tol=0.999,
            window=100,
        )
    assert result.stop_reason == "step_size" and result.converged
    assert min(result.step_sizes) < 0.9
    assert result.objective.shape == (result.n_iter + 1,)
    assert np.all(np.diff(result.objective) <= 0)
    assert result.objective[-1] == pytest.approx(
        0.5 * np.sum((V - result.W @ result.H) ** 2), rel=1e-12
    )


@pytest.mark.parametrize(("s_w", "s_h"), [(0.6, None), (0.5, 0.5)])
def test_step_size_underflow_while_the_objective_falls_is_a_stall(V, monkeypatch, s_w, s_h):
    """The same runs with tol = 0: the objective was still falling when the
    line search gave up, so the run stalled ("stalled": not converged, a
    ConvergenceWarning that says by how much it still fell). (With s_H alone
    the first H step ends the run before any iteration: no fall to weigh,
    so "step_size", as above.)"""
    from nmfsc.solvers import hoyer as module

    monkeypatch.setattr(module, "MU_MIN", 0.9)
    with pytest.warns(ConvergenceWarning, match=r"no descent step .* still fell by"):
        result = nmfsc.nmf_sc(
            V, M, sparseness_w=s_w, sparseness_h=s_h, random_state=0, max_iter=50, tol=0.0
        )
    assert result.stop_reason == "stalled" and not result.converged
    assert result.objective[-1] == pytest.approx(
        0.5 * np.sum((V - result.W @ result.H) ** 2), rel=1e-12
    )


def test_float32_factors_that_stall_do_not_say_converged():
    """float32 factors: rounding each trial to float32 costs more than a
    small step gains, the step size collapses long before the float64 run of
    the same start stops falling, and the run says "stalled" (with the advice
    to fit in float64), not "converged"; float64 goes on, lower."""
    rng = np.random.default_rng(0)
    V = rng.random((40, 60)) * (rng.random((40, 60)) > 0.3)
    kw = dict(sparseness_w=0.6, sparseness_h=0.3, random_state=0, max_iter=400, tol=1e-7)
    with pytest.warns(ConvergenceWarning, match="float32 factors.*astype"):
        r32 = nmfsc.nmf_sc(V.astype(np.float32), 4, **kw)
    assert r32.stop_reason == "stalled" and not r32.converged
    assert min(r32.step_sizes) < 1e-200
    with pytest.warns(ConvergenceWarning, match="max_iter=400 reached"):
        r64 = nmfsc.nmf_sc(V, 4, **kw)
    assert r64.n_iter > r32.n_iter and r64.objective[-1] < r32.objective[-1]


# --- callback and progress ------------------------------------------------------------


def test_callback_sees_every_iteration_and_can_stop(V):
    seen = []

    def callback(state):
        seen.append((state.iteration, state.objective, state.elapsed))
        with pytest.raises(ValueError):
            state.W[0, 0] = 1.0
        return state.iteration == 6

    result = nmfsc.nmf_sc(V, M, sparseness_w=0.5, random_state=0, callback=callback)
    assert result.stop_reason == "callback" and not result.converged
    assert result.n_iter == 6 and [s[0] for s in seen] == [1, 2, 3, 4, 5, 6]
    assert [s[1] for s in seen] == list(result.objective[1:])
    assert [s[2] for s in seen] == list(result.times[1:])


def test_callback_returning_none_does_not_stop(V):
    result = quiet(nmfsc.nmf_euclidean, V, M, callback=lambda s: None, max_iter=4)
    assert result.n_iter == 4


@pytest.mark.parametrize("stop", [np.True_, 1, np.int64(1)], ids=["numpy bool", "int", "numpy int"])
def test_callback_returning_any_true_bool_or_int_stops(V, stop):
    """A test of an array returns NumPy's bool: it stops the run as True does."""
    result = nmfsc.nmf_sc(
        V,
        M,
        sparseness_w=0.6,
        random_state=0,
        max_iter=50,
        tol=0,
        callback=lambda s: stop if s.iteration >= 3 else np.False_,
    )
    assert (result.stop_reason, result.n_iter) == ("callback", 3)


@pytest.mark.parametrize("answer", [np.ones(3), 0.5, "stop"])
def test_callback_returning_something_else_is_an_error(V, answer):
    with pytest.raises(TypeError, match="return True to stop the run, or False or None"):
        nmfsc.nmf_euclidean(V, M, callback=lambda s: answer, max_iter=4)


def test_keyboard_interrupt_returns_the_last_iterate(V):
    def callback(state):
        if state.iteration == 5:
            raise KeyboardInterrupt

    with pytest.warns(ConvergenceWarning, match="interrupted by KeyboardInterrupt"):
        result = nmfsc.nmf_sc(V, M, sparseness_h=0.5, random_state=0, callback=callback)
    assert result.stop_reason == "interrupted" and not result.converged
    assert result.n_iter == 5 and result.objective.shape == (6,)
    reference = quiet(nmfsc.nmf_sc, V, M, sparseness_h=0.5, random_state=0, max_iter=5)
    np.testing.assert_array_equal(result.W, reference.W)


def test_progress_bar(V, capsys):
    pytest.importorskip("tqdm")
    result = quiet(nmfsc.nmf_divergence, V, M, random_state=0, max_iter=7, progress=True)
    err = capsys.readouterr().err
    assert "nmf_divergence" in err and "7/7" in err and "objective=" in err
    assert result.n_iter == 7


def test_progress_to_a_file_is_plain_periodic_lines(V, capsys, monkeypatch):
    """stderr is not a terminal here (captured): no bar redraws, one line per
    interval and one at the end."""
    pytest.importorskip("tqdm")
    from nmfsc.solvers._progress import PlainProgress

    quiet(nmfsc.nmf_sc, V, M, sparseness_w=0.5, random_state=0, max_iter=50, progress=True)
    err = capsys.readouterr().err
    assert "\r" not in err and err.count("\n") == 1  # a short run: the final line only
    assert err.startswith("nmf_sc: 50/50 it (100 %), ") and "objective=" in err
    monkeypatch.setattr(PlainProgress, "interval", 0.0)  # a line after every iteration
    quiet(nmfsc.nmf_sc, V, M, sparseness_w=0.5, random_state=0, max_iter=5, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" it")[0] for line in lines] == [
        f"nmf_sc: {i}/5" for i in (1, 2, 3, 4, 5, 5)
    ]
    assert "ETA" in lines[0] and "ETA" not in lines[-1]


def test_progress_without_tqdm_is_a_clear_import_error(V, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match=r"progress=True needs tqdm \(pip install tqdm\)"):
        nmfsc.nmf_sc(V, M, progress=True, max_iter=2)
    quiet(nmfsc.nmf_sc, V, M, max_iter=2)  # without a bar tqdm is not needed


# --- real data ----------------------------------------------------------------------


@pytest.mark.realdata
def test_nmf_sc_on_cbcl():
    from nmfsc.datasets import load_cbcl

    V = load_cbcl()
    result = quiet(nmfsc.nmf_sc, V, 49, sparseness_w=0.8, random_state=0, max_iter=5)
    assert result.W.shape == (361, 49) and result.H.shape == (49, 2429)
    assert np.all(np.diff(result.objective) <= 1e-12 * np.sum(V**2))
    np.testing.assert_allclose(result.sparseness_W, 0.8, atol=1e-9)
    assert result.relative_error < 1.0
