"""The stationarity measure: the projected gradient of nmf_sc's problem."""

import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import nmfsc
from nmfsc.solvers.stationarity import constrained_residual, projected_residual, stationarity


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    V = rng.random((30, 4)) @ rng.random((4, 25)) + 0.05 * rng.random((30, 25))
    return V


def _fit(V, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        return nmfsc.nmf_sc(V, 3, random_state=0, **kwargs)


def _brute_force_norm(x, g, free_scale):
    """||P_T(-g)||, T the tangent cone at x of {y >= 0, ||y||_1/||y||_2 fixed}
    (and ||y||_2 fixed unless ``free_scale``), by SLSQP: the average set's
    brute force for one vector."""
    return _brute_force_average_norm(x[:, None], g[:, None], free_scale)


@pytest.mark.parametrize("free_scale", [True, False], ids=["W-cone", "H-fixed-norm"])
def test_the_constrained_residual_is_the_projection_onto_the_tangent_cone(free_scale):
    rng = np.random.default_rng(1)
    for _trial in range(20):
        n = int(rng.integers(3, 9))
        x = rng.random(n) * (rng.random(n) < 0.7)
        x[0] = max(x[0], 0.1)  # a support of at least one entry
        x[1] = max(x[1], 0.2)  # and of two, with unequal entries
        g = rng.standard_normal(n) * 3
        r = constrained_residual(x[:, None], g[:, None], 0, free_scale)[:, 0]
        assert np.linalg.norm(r) == pytest.approx(_brute_force_norm(x, g, free_scale), abs=1e-6)
    X = rng.random((6, 4))
    G = rng.standard_normal((6, 4))
    assert np.array_equal(
        constrained_residual(X.T, G.T, 1, free_scale), constrained_residual(X, G, 0, free_scale).T
    )


def _brute_force_average_norm(X, G, free_scale):
    """||P_T(-G)||, T the tangent cone at X of {Y >= 0, sum_i ||y_i||_1/||y_i||_2
    fixed} over X's columns (each ||y_i||_2 fixed too unless ``free_scale``), by SLSQP."""
    from scipy.optimize import minimize

    n, r = X.shape
    support = X > 0
    l1, l2 = X.sum(axis=0), np.linalg.norm(X, axis=0)
    A = np.where(support, (1.0 - l1 / l2**2 * X) / l2, 1.0 / l2)  # the ratios' gradient
    constraints = [{"type": "eq", "fun": lambda d: np.sum(A * d.reshape(n, r))}]
    if not free_scale:
        for j in range(r):
            held = {"type": "eq", "fun": lambda d, j=j: X[:, j] @ d.reshape(n, r)[:, j]}
            constraints.append(held)
    bounds = [(None, None) if s else (0.0, None) for s in support.ravel()]
    g = G.ravel()
    best = minimize(
        lambda d: 0.5 * np.sum((d + g) ** 2),
        np.zeros(n * r),
        jac=lambda d: d + g,
        bounds=bounds,
        constraints=constraints,
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    return np.linalg.norm(best.x)


@pytest.mark.parametrize("free_scale", [True, False], ids=["W-cone", "H-fixed-norm"])
def test_the_average_residual_is_the_projection_onto_its_tangent_cone(free_scale):
    rng = np.random.default_rng(2)
    for _trial in range(15):
        n, r = int(rng.integers(3, 7)), int(rng.integers(2, 4))
        X = rng.random((n, r)) * (rng.random((n, r)) < 0.7)
        X[0] = np.maximum(X[0], 0.1)
        X[1] = np.maximum(X[1], 0.2) + 0.05  # two unequal entries in every column
        G = rng.standard_normal((n, r)) * 3
        R = constrained_residual(X, G, 0, free_scale, average=True)
        expected = _brute_force_average_norm(X, G, free_scale)
        assert np.linalg.norm(R) == pytest.approx(expected, abs=1e-6)
        # One shared multiplier allows less than one per column: never a smaller residual.
        alone = constrained_residual(X, G, 0, free_scale)
        assert np.linalg.norm(R) >= np.linalg.norm(alone) - 1e-12
    assert np.array_equal(
        constrained_residual(X.T, G.T, 1, free_scale, True),
        constrained_residual(X, G, 0, free_scale, True).T,
    )


def test_a_single_entry_column_on_average_may_still_grow_entries():
    """A column of one entry is a point of its own set, but under a mean
    sparseness it may grow entries while another column gives up
    sparseness: its entries off the support, where the gradient is
    negative enough, count."""
    rng = np.random.default_rng(4)
    X = rng.random((6, 3)) + 0.1
    X[:, 0] = 0.0
    X[2, 0] = 1.0
    G = rng.standard_normal((6, 3))
    G[[0, 4], 0] = -5.0
    R = constrained_residual(X, G, 0, False, average=True)
    assert np.all(R[[0, 4], 0] < 0)
    assert np.count_nonzero(constrained_residual(X, G, 0, False)[:, 0]) == 0


def test_one_column_on_average_is_the_column_alone():
    rng = np.random.default_rng(3)
    x, g = rng.random((7, 1)), rng.standard_normal((7, 1))
    for free_scale in (True, False):
        assert np.allclose(
            constrained_residual(x, g, 0, free_scale, average=True),
            constrained_residual(x, g, 0, free_scale),
            atol=1e-13,
        )


def test_a_kkt_point_has_zero_residual_and_a_descent_direction_does_not():
    x = np.array([0.5, 0.3, 0.2, 0.0, 0.0])
    mu = 0.7
    a = 1.0 - x.sum() / (x @ x) * x
    g = -mu * a  # g + mu a = 0 on the support
    g[3:] = [-mu + 0.4, -mu + 2.0]  # off the support: g + mu >= 0
    assert np.allclose(constrained_residual(x[:, None], g[:, None], 0, True), 0.0)
    g[4] = -mu - 0.5  # entering the support would lower f
    R = constrained_residual(x[:, None], g[:, None], 0, True)
    assert np.linalg.norm(R) > 0.1


def test_equal_entries_are_a_point_and_only_the_scale_of_w_moves():
    x = np.full(5, 0.4)  # sparseness 0: the set is x's ray (W) or x itself (H)
    g = np.array([0.3, -0.1, 0.2, 0.5, -0.4])
    assert np.allclose(constrained_residual(x[:, None], g[:, None], 0, False), 0.0)
    r = constrained_residual(x[:, None], g[:, None], 0, True)[:, 0]
    assert np.allclose(r, (g @ x) / (x @ x) * x)


def test_the_gradient_mapping_of_a_nonnegative_factor():
    X = np.array([[1.0, 0.0], [0.0, 1e-80]])
    G = np.array([[0.3, -0.2], [0.5, 1.0]])
    R = projected_residual(X, G, 2.0)
    assert np.array_equal(R, [[0.3, -0.2], [0.0, 2e-80]])  # a tiny entry: a tiny residual


def test_an_exact_fit_is_stationary_and_the_measure_is_scale_free(problem):
    rng = np.random.default_rng(2)
    W, H = rng.random((6, 2)), rng.random((2, 5))
    assert stationarity(W @ H, W, H)["max"] < 1e-15  # zero to rounding
    result = _fit(problem, sparseness_w=0.6, max_iter=30)
    base = stationarity(problem, result.W, result.H, sparseness_w=0.6)
    scaled = stationarity(problem * 1e6, result.W * 1e3, result.H * 1e3, sparseness_w=0.6)
    assert scaled["W"] == pytest.approx(base["W"], rel=1e-9)
    assert scaled["H"] == pytest.approx(base["H"], rel=1e-9)
    assert 0 < base["max"] < 1


def test_it_falls_to_zero_as_a_solver_converges(problem):
    values = [
        _fit(problem, sparseness_w=0.6, solver="accelerated", max_iter=n, tol=0).stationarity
        for n in (1, 10, 100, 2000)
    ]
    assert values == sorted(values, reverse=True)
    assert values[0] > 1e-3 and values[-1] < 1e-7
    with warnings.catch_warnings():  # multiplicative updates: continuously too
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        euclidean = [
            nmfsc.nmf_euclidean(problem, 3, random_state=0, max_iter=n, tol=0).stationarity
            for n in (100, 1000, 10000)
        ]
    assert euclidean == sorted(euclidean, reverse=True) and euclidean[-1] < 1e-5


def test_both_factors_constrained_sees_the_scale_of_w():
    """W's columns are free in scale under nmf_sc: a fit of V = 3 w h with w and
    h at their sparseness is not stationary (growing w lowers E)."""
    rng = np.random.default_rng(4)
    w = nmfsc.project(rng.random(20), nmfsc.l1_for_sparseness(0.6, 20), 1.0)
    h = nmfsc.project(rng.random(15), nmfsc.l1_for_sparseness(0.5, 15), 1.0)
    W, H = w[:, None], h[None, :]
    assert stationarity(3 * W @ H, W, H, sparseness_w=0.6, sparseness_h=0.5)["W"] > 0.1
    assert stationarity(W @ H, W, H, sparseness_w=0.6, sparseness_h=0.5)["max"] < 1e-12


def test_a_rate_rule_stop_is_not_a_stationary_point(problem):
    # The default solver's rule (relative decrease over 10 iterations below tol)
    # fires on its slow tail: the measure says how far it still is.
    early = _fit(problem, sparseness_w=0.6, tol=1e-4)
    late = _fit(problem, sparseness_w=0.6, tol=0, max_iter=5000)
    assert early.stop_reason == "tol" and early.stationarity > 100 * late.stationarity


def test_the_result_reports_it_where_it_means_something(problem):
    dense = _fit(problem, sparseness_w=0.6, sparseness_h=0.4, max_iter=50)
    sparse = _fit(sp.csr_matrix(problem), sparseness_w=0.6, sparseness_h=0.4, max_iter=50)
    assert dense.stationarity == pytest.approx(sparse.stationarity, rel=1e-8)
    direct = stationarity(problem, dense.W, dense.H, sparseness_w=0.6, sparseness_h=0.4)
    assert dense.stationarity == pytest.approx(direct["max"], rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
        assert nmfsc.nmf_euclidean(problem, 3, random_state=0, max_iter=50).stationarity > 0
        assert nmfsc.nmf_divergence(problem, 3, random_state=0, max_iter=5).stationarity is None
    assert _fit(problem, sparseness_w=0.6, mask=problem > 0.2, max_iter=5).stationarity > 0


@pytest.mark.parametrize("params", [{"sparseness_w": 0.6}, {"sparseness_h": 0.5}, {}])
def test_a_mask_measures_the_masked_objective(problem, params):
    """A mask true everywhere gives the unmasked measure; a sparse V's stored
    entries, and every entry but a few, give the measure of the same entries'
    dense mask."""
    import scipy.sparse as sp

    from nmfsc.observed import Observed

    full = _fit(problem, mask=np.ones(problem.shape, bool), max_iter=30, **params)
    plain = _fit(problem, max_iter=30, **params)
    assert full.stationarity == pytest.approx(plain.stationarity, rel=1e-9)
    stored = sp.csr_matrix(np.where(problem > 0.3, problem, 0.0))
    a = _fit(stored, mask="stored", max_iter=30, **params)
    b = _fit(problem, mask=problem > 0.3, max_iter=30, **params)
    assert a.stationarity == pytest.approx(b.stationarity, rel=1e-7)
    held_out = Observed.all_but([0, 3, 7], [1, 2, 9], problem.shape)
    c = _fit(sp.csr_matrix(problem), mask=held_out, max_iter=30, **params)
    d = _fit(problem, mask=held_out.to_mask(), max_iter=30, **params)
    assert c.stationarity == pytest.approx(d.stationarity, rel=1e-7)
    assert b.stationarity != pytest.approx(plain.stationarity, rel=1e-3)  # another objective


def test_the_masked_measure_of_an_exact_fit_takes_no_energy(monkeypatch):
    """On every entry but a few, the measure needs the residual alone: near
    an exact fit, where the energy would be recomputed by blocks of W H
    (O(N T M)), it is not computed at all, and the measure is 0."""
    from nmfsc.observed import Observed
    from nmfsc.solvers import _masked_all_but
    from nmfsc.solvers._masked_data import open_masked
    from nmfsc.solvers.stationarity import masked_stationarity

    rng = np.random.default_rng(6)
    W, H = rng.random((30, 3)), rng.random((3, 20))
    V = sp.csr_matrix(W @ H)
    held_out = Observed.all_but([0, 4, 9], [2, 5, 7], V.shape)
    data, scale = open_masked(V, held_out)

    def refused(*args, **kwargs):
        raise AssertionError("the energy was computed")

    for name in ("exact_half_squared_error", "residual_energy"):
        monkeypatch.setattr(_masked_all_but.MaskedAllBut, name, refused)
    measure = masked_stationarity(data, W / scale, H)
    assert measure["max"] <= 1e-12


@pytest.mark.parametrize("solver", ["hoyer", "accelerated"])
def test_a_masked_stationarity_tol_stops_only_where_the_fit_is_stationary(problem, solver):
    mask = np.random.default_rng(4).random(problem.shape) < 0.8
    kw = {"sparseness_w": 0.6, "mask": mask, "solver": solver, "tol": 1e-4, "max_iter": 20000}
    rate = _fit(problem, **kw)
    strict = _fit(problem, stationarity_tol=1e-6, **kw)
    assert strict.stop_reason == "tol" and strict.converged and strict.stationarity <= 1e-6
    if solver == "hoyer":  # its rate rule stops farther away
        assert rate.stationarity > 1e-6 and strict.n_iter > rate.n_iter


def test_compare_shows_it_for_the_squared_error_fits(problem):
    pytest.importorskip("sklearn")
    result = nmfsc.compare(
        problem,
        3,
        sparseness_w=0.6,
        methods=["nmf_sc", "nmf_divergence", "sklearn_cd", "sklearn_cd_l1"],
        seeds=(0,),
        max_iter=100,
        progress=False,
    )
    rows = {row["method"]: row for row in result.rows}
    assert rows["nmf_sc"]["stationarity"] > 0 and rows["sklearn_cd"]["stationarity"] > 0
    assert rows["nmf_divergence"]["stationarity"] is None
    assert rows["sklearn_cd_l1"]["stationarity"] is None  # a penalised objective
    assert "| stationarity |" in result.to_markdown()


def test_stationarity_tol_stops_only_where_the_fit_is_stationary(problem):
    rate = _fit(problem, sparseness_w=0.6, tol=1e-4)
    strict = _fit(problem, sparseness_w=0.6, tol=1e-4, stationarity_tol=1e-6)
    assert rate.stop_reason == strict.stop_reason == "tol" and strict.converged
    assert rate.stationarity > 1e-6 >= strict.stationarity
    assert strict.n_iter > rate.n_iter and strict.n_iter % 10 == 0  # checked every window
    assert strict.params["stationarity_tol"] == 1e-6 and rate.params["stationarity_tol"] is None


def test_a_stalled_start_is_never_called_converged(problem):
    """A sample whose coefficients start at zero stays dead under multiplicative
    updates although a coefficient would lower E: the rate rule calls that
    converged, the stationarity rule does not."""
    rng = np.random.default_rng(3)
    W0, H0 = rng.random((30, 3)), rng.random((3, 25))
    H0[:, 5] = 0.0
    start = {"init": "custom", "W_init": W0, "H_init": H0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.DegenerateFitWarning)
        rate = nmfsc.nmf_euclidean(problem, 3, tol=1e-4, **start)
        assert rate.stop_reason == "tol" and rate.dead_samples == 1
        assert rate.stationarity > 1e-2  # the dead sample's gradient
        with pytest.warns(nmfsc.ConvergenceWarning):
            strict = nmfsc.nmf_euclidean(
                problem, 3, tol=1e-4, stationarity_tol=1e-4, max_iter=500, **start
            )
    assert strict.stop_reason == "max_iter" and not strict.converged


@pytest.mark.parametrize("call", ["divergence", "masked coefficients"])
def test_stationarity_tol_is_refused_where_it_is_not_measured(problem, call):
    from nmfsc.solvers.coefficients import fit_coefficients

    W = np.random.default_rng(5).random((problem.shape[0], 3))
    with pytest.raises(ValueError, match="stationarity_tol is measured for the solvers"):
        if call == "divergence":
            nmfsc.nmf_divergence(problem, 3, stationarity_tol=1e-4)
        else:
            fit_coefficients(problem, W, mask=problem > 0.2, stationarity_tol=1e-4)
    with pytest.raises(ValueError, match="stationarity_tol must be"):
        nmfsc.nmf_sc(problem, 3, stationarity_tol=-1.0)


def test_the_command_line_takes_stationarity_tol(problem, tmp_path, capsys):
    from nmfsc.cli import main

    np.save(tmp_path / "v.npy", problem)
    argv = ["fit", str(tmp_path / "v.npy"), "-k", "3", "--sparseness-w", "0.6"]
    argv += ["--stationarity-tol", "1e-6", "--no-progress", "--out", str(tmp_path / "f.npz")]
    assert main(argv) == 0
    assert "stop reason tol" in capsys.readouterr().out
    with np.load(tmp_path / "f.npz") as saved:
        record = json.loads(str(saved["record"]))
    assert record["params"]["stationarity_tol"] == 1e-6 and record["stationarity"] <= 1e-6


def test_the_command_line_takes_stationarity_tol_with_missing_values(problem, tmp_path, capsys):
    from nmfsc.cli import main

    holes = problem.copy()
    holes[np.random.default_rng(6).random(problem.shape) < 0.1] = np.nan
    np.save(tmp_path / "v.npy", holes)
    argv = ["fit", str(tmp_path / "v.npy"), "-k", "3", "--sparseness-w", "0.6"]
    argv += ["--missing-values", "nan", "--solver", "accelerated", "--stationarity-tol", "1e-6"]
    assert main([*argv, "--no-progress", "--out", str(tmp_path / "f.npz")]) == 0
    assert "stop reason tol" in capsys.readouterr().out
    with np.load(tmp_path / "f.npz") as saved:
        record = json.loads(str(saved["record"]))
    assert record["stationarity"] <= 1e-6


def test_the_estimator_takes_stationarity_tol(problem):
    X = problem.T  # scikit-learn's orientation
    model = nmfsc.SparseNMF(
        3, sparseness_components=0.6, solver="accelerated", stationarity_tol=1e-8, random_state=0
    )
    model.fit(X)
    assert model.result_.converged and model.result_.stationarity <= 1e-8
    assert model.get_params()["stationarity_tol"] == 1e-8
    assert model.transform(X).shape == (X.shape[0], 3)  # transform keeps tol's rule
    holes = X.copy()
    holes[0, 0] = np.nan
    masked = nmfsc.SparseNMF(
        3, missing_values=np.nan, solver="accelerated", stationarity_tol=1e-8, random_state=0
    )
    masked.fit(holes)
    assert masked.result_.converged and masked.result_.stationarity <= 1e-8
