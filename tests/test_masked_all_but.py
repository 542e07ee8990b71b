"""A scipy.sparse V observed at every entry but a sparse set (its zeros are
data, a few entries held out): Observed.all_but, the masked solvers on it,
and compare(holdout=) on such V without a dense copy."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import nmfsc
from nmfsc import ConvergenceWarning, _entries, nmf_euclidean, nmf_sc
from nmfsc.comparison import _holdout
from nmfsc.comparison._holdout import Holdout, draw_positions
from nmfsc.observed import Observed
from nmfsc.solvers import masked_accelerated
from nmfsc.solvers._masked_data import MaskedDense, open_masked
from nmfsc.solvers.coefficients import fit_coefficients

N, T, M = 40, 30, 4


def _counts(shape=(N, T), density=0.25, seed=0, fmt="csr"):
    """Sparse counts from a rank-M model: the zeros are data."""
    rng = np.random.default_rng(seed)
    rate = rng.gamma(0.5, size=(shape[0], M)) @ rng.gamma(0.5, size=(M, shape[1]))
    counts = rng.poisson(rate * density * 4)
    return sp.csr_matrix(counts.astype(float)).asformat(fmt)


def _hidden(shape=(N, T), count=120, seed=1):
    rng = np.random.default_rng(seed)
    return np.divmod(rng.choice(shape[0] * shape[1], size=count, replace=False), shape[1])


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return function(*args, **kwargs)


# --- Observed.all_but ---------------------------------------------------------


def test_all_but_counts_masks_and_transposes():
    rows, cols = _hidden()
    observed = Observed.all_but(np.r_[rows, rows[:5]], np.r_[cols, cols[:5]], (N, T))
    mask = np.ones((N, T), dtype=bool)
    mask[rows, cols] = False
    np.testing.assert_array_equal(observed.to_mask(), mask)
    assert observed.count() == mask.sum()  # duplicates count once
    np.testing.assert_array_equal(observed.T.to_mask(), mask.T)
    assert observed.T.unobserved.has_sorted_indices
    V = _counts()
    assert observed.largest(V) == V.toarray()[mask].max()
    assert observed.largest(V.toarray()) == V.toarray()[mask].max()


@pytest.mark.parametrize(
    ("rows", "cols", "match"),
    [
        ([0, 1], [0], "differ in length"),
        ([N], [0], "outside the 40 x 30 matrix"),
        ([0], [-1], "outside the 40 x 30 matrix"),
    ],
)
def test_all_but_refuses_bad_entries_in_one_line(rows, cols, match):
    with pytest.raises(ValueError, match=match):
        Observed.all_but(rows, cols, (N, T))


def test_all_but_refuses_indices_that_are_not_integers():
    with pytest.raises(TypeError, match="rows must hold integer indices, got dtype float64"):
        Observed.all_but([1.7], [2], (N, T))
    with pytest.raises(TypeError, match="cols must hold integer indices, got dtype bool"):
        Observed.all_but([1], [True], (N, T))


def test_an_unobserved_pattern_is_made_canonical_csr():
    rows, cols = _hidden()
    order = np.random.default_rng(3).permutation(rows.size)
    coo = sp.coo_array((np.ones(rows.size), (rows[order], cols[order])), shape=(N, T))
    observed = Observed(unobserved=coo)
    assert observed.unobserved.format == "csr" and observed.unobserved.has_canonical_format
    np.testing.assert_array_equal(
        observed.to_mask(), Observed.all_but(rows, cols, (N, T)).to_mask()
    )
    V = _counts()
    a = _quiet(nmf_sc, V, M, sparseness_w=0.5, mask=observed, random_state=0, max_iter=10)
    b = _quiet(nmf_sc, V.toarray(), M, sparseness_w=0.5, mask=observed.to_mask(), random_state=0,
               max_iter=10)  # fmt: skip
    np.testing.assert_allclose(a.W, b.W, rtol=1e-9, atol=1e-12)
    with pytest.raises(TypeError, match="unobserved must be a scipy.sparse pattern"):
        Observed(unobserved=np.zeros((N, T), bool))


def test_a_nearly_exact_fit_reports_its_error_exactly():
    """Below 1e-4 of ||V||^2 the Gram expansion would lose the fit's digits:
    E is then recomputed by blocks, and the run stops where the dense mask's does."""
    rng = np.random.default_rng(1)
    W0, H0 = np.zeros((60, 3)), np.zeros((3, 60))
    for k in range(3):  # three blocks: an exact rank-3 fit exists
        W0[20 * k : 20 * (k + 1), k] = rng.random(20) + 0.5
        H0[k, 20 * k : 20 * (k + 1)] = rng.random(20) + 0.5
    V = sp.csr_matrix(W0 @ H0 * 1e3)
    observed = Observed.all_but(*np.divmod(rng.choice(3600, 100, replace=False), 60), (60, 60))
    a = _quiet(nmf_sc, V, 3, mask=observed, random_state=3)
    b = _quiet(nmf_sc, V.toarray(), 3, mask=observed.to_mask(), random_state=3)
    assert b.relative_error < 1e-8 and b.stop_reason == "tol"
    assert a.n_iter == b.n_iter
    assert a.relative_error == pytest.approx(b.relative_error, rel=1e-5)


def test_all_but_refuses_a_pattern_that_leaves_nothing():
    rows, cols = np.divmod(np.arange(6), 3)
    with pytest.raises(ValueError, match="every entry is unobserved"):
        Observed.all_but(rows, cols, (2, 3))


# --- the data: every product equals the dense mask's --------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_products_equal_the_dense_masks(dtype):
    V = _counts().astype(dtype)
    observed = Observed.all_but(*_hidden(), (N, T))
    data, scale = open_masked(V, observed)
    dense, dense_scale = open_masked(V.toarray(), Observed(mask=observed.to_mask()))
    assert isinstance(dense, MaskedDense) and scale == dense_scale
    rng = np.random.default_rng(2)
    W, H = rng.random((N, M)).astype(dtype), rng.random((M, T)).astype(dtype)
    R, E = data.residual_energy(W, H)
    R_dense, E_dense = dense.residual_energy(W, H)
    rtol = 1e-10 if dtype == np.float64 else 1e-4
    assert E == pytest.approx(E_dense, rel=rtol)
    np.testing.assert_allclose(data.left(W, R), dense.left(W, R_dense), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(
        data.right_rows(H, R), dense.right_rows(H, R_dense), rtol=rtol, atol=rtol
    )
    for ours, theirs in zip(data.h_terms(W, R), dense.h_terms(W, R_dense), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol)
    for ours, theirs in zip(data.w_terms(H, R), dense.w_terms(H, R_dense), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol)
    assert data.mean() == pytest.approx(dense.mean(), rel=rtol)
    assert data.relative_error(W, H) == pytest.approx(dense.relative_error(W, H), rel=rtol)
    assert data.count == dense.count


def test_the_unobserved_values_are_never_read():
    V = _counts()
    rows, cols = _hidden()
    observed = Observed.all_but(rows, cols, (N, T))
    poisoned = V.tolil()
    poisoned[rows[:10], cols[:10]] = np.nan
    poisoned[rows[10:20], cols[10:20]] = 1e300
    a = _quiet(nmf_sc, V, M, sparseness_w=0.5, mask=observed, random_state=0, max_iter=20)
    b = _quiet(nmf_sc, poisoned.tocsr(), M, sparseness_w=0.5, mask=observed, random_state=0,
               max_iter=20)  # fmt: skip
    np.testing.assert_array_equal(a.W, b.W)


def test_a_nan_at_an_observed_entry_is_refused_in_one_line():
    V = _counts().tolil()
    V[0, 0] = np.nan
    observed = Observed.all_but([1], [1], (N, T))
    with pytest.raises(ValueError, match="add its position to the unobserved entries"):
        nmf_sc(V.tocsr(), M, mask=observed)


def test_a_dense_v_runs_the_dense_mask_of_the_same_entries():
    V = _counts().toarray()
    observed = Observed.all_but(*_hidden(), (N, T))
    a = _quiet(nmf_sc, V, M, sparseness_h=0.5, mask=observed, random_state=0, max_iter=15)
    b = _quiet(nmf_sc, V, M, sparseness_h=0.5, mask=observed.to_mask(), random_state=0,
               max_iter=15)  # fmt: skip
    np.testing.assert_array_equal(a.H, b.H)


# --- the solvers: the dense mask's iterates, to rounding ----------------------

SETTINGS = [
    {"sparseness_w": 0.6},
    {"sparseness_h": 0.6},
    {"sparseness_w": 0.5, "sparseness_h": 0.5},
    {},
]


@pytest.mark.parametrize("solver", ["hoyer", "accelerated"])
@pytest.mark.parametrize("params", SETTINGS)
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_nmf_sc_gives_the_dense_masks_iterates(solver, params, fmt):
    V = _counts(fmt=fmt)
    observed = Observed.all_but(*_hidden(), (N, T))
    kw = {"random_state": 0, "max_iter": 40, "solver": solver, **params}
    a = _quiet(nmf_sc, V, M, mask=observed, **kw)
    b = _quiet(nmf_sc, V.toarray(), M, mask=observed.to_mask(), **kw)
    assert a.n_iter == b.n_iter
    np.testing.assert_allclose(a.objective, b.objective, rtol=1e-9)
    np.testing.assert_allclose(a.W, b.W, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(a.H, b.H, rtol=1e-7, atol=1e-9)


def test_nmf_euclidean_and_fit_coefficients_give_the_dense_masks_iterates():
    V = _counts()
    observed = Observed.all_but(*_hidden(), (N, T))
    mask = observed.to_mask()
    a = _quiet(nmf_euclidean, V, M, mask=observed, random_state=0, max_iter=40)
    b = _quiet(nmf_euclidean, V.toarray(), M, mask=mask, random_state=0, max_iter=40)
    np.testing.assert_allclose(a.objective, b.objective, rtol=1e-9)
    np.testing.assert_allclose(a.W, b.W, rtol=1e-7, atol=1e-9)
    for s_h in (None, 0.6):
        c = _quiet(fit_coefficients, V, a.W, sparseness_h=s_h, mask=observed, max_iter=30,
                   random_state=0)  # fmt: skip
        d = _quiet(fit_coefficients, V.toarray(), a.W, sparseness_h=s_h, mask=mask, max_iter=30,
                   random_state=0)  # fmt: skip
        np.testing.assert_allclose(c.H, d.H, rtol=1e-7, atol=1e-9)


def test_the_all_but_sweeps_are_the_masked_sweeps(monkeypatch):
    """The kernel that keeps only W H on the unobserved entries takes the same
    steps as the one that keeps the dense residual, with any number of
    sweeps per factor step."""
    monkeypatch.setattr(masked_accelerated.MaskedAcceleratedSteps, "sweeps", lambda *a: 4)
    V = _counts(seed=3)
    observed = Observed.all_but(*_hidden(count=300, seed=4), (N, T))
    kw = {"random_state": 1, "max_iter": 30, "solver": "accelerated", "sparseness_w": 0.7}
    a = _quiet(nmf_sc, V, M, mask=observed, **kw)
    b = _quiet(nmf_sc, V.toarray(), M, mask=observed.to_mask(), **kw)
    np.testing.assert_allclose(a.W, b.W, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("params", SETTINGS)
def test_the_accelerated_objective_never_rises_and_the_constraints_hold(params):
    V = _counts(shape=(60, 50), seed=5)
    observed = Observed.all_but(*_hidden((60, 50), count=600, seed=6), (60, 50))
    result = _quiet(
        nmf_sc, V, 5, mask=observed, solver="accelerated", random_state=2, max_iter=60, **params
    )
    objective = np.asarray(result.objective)
    assert np.all(np.diff(objective) <= 1e-12 * objective[0])
    achieved = {"sparseness_w": result.sparseness_W, "sparseness_h": result.sparseness_H}
    for key, target in params.items():
        np.testing.assert_allclose(achieved[key], target, atol=1e-6)


# --- the kernels and the draw -------------------------------------------------


def test_the_pattern_passes_agree_with_scipy():
    rng = np.random.default_rng(7)
    shape = (25, 35)
    A = sp.random(*shape, density=0.3, random_state=8, format="csr")
    positions = np.sort(rng.choice(shape[0] * shape[1], size=200, replace=False))
    pattern = _entries.pattern_of_positions(positions, shape)
    assert pattern.indices.dtype == np.int32 == pattern.indptr.dtype
    expected = np.zeros(shape, bool)
    expected.flat[positions] = True
    np.testing.assert_array_equal(pattern.toarray(), expected)
    inside = _entries.in_pattern(A, pattern)
    rows = np.repeat(np.arange(shape[0]), np.diff(A.indptr))
    np.testing.assert_array_equal(inside, expected[rows, A.indices])
    values = _entries.values_at(A, pattern)
    np.testing.assert_array_equal(values, A.toarray().flat[positions])
    row_values = rng.random(shape[0])
    merged = _entries.merge_rows(A, ~inside, pattern, row_values)
    assert merged.has_canonical_format and merged.indices.dtype == np.int32
    np.testing.assert_array_equal(
        merged.toarray(), np.where(expected, row_values[:, None], A.toarray())
    )
    W, H = rng.random((shape[0], 3)), rng.random((3, shape[1]))
    np.testing.assert_allclose(_entries.product_at(pattern, W, H), (W @ H).flat[positions])
    by_col = pattern.tocsc()
    by_col.sort_indices()
    np.testing.assert_allclose(_entries.product_at(by_col, W, H), (W @ H).T[by_col.T.toarray()])


@pytest.mark.parametrize(("size", "count"), [(10, 3), (10, 9), (1000, 7), (10**6, 5000)])
def test_draw_positions_are_distinct_sorted_and_in_range(size, count):
    drawn = draw_positions(size, count, np.random.default_rng(0))
    assert drawn.size == count and drawn.dtype == np.int64
    assert np.all(np.diff(drawn) > 0) and 0 <= drawn[0] and drawn[-1] < size


def test_draw_positions_is_uniform():
    """Every position of 40 is drawn with probability 12/40: over 4000 draws
    each count is Binomial(4000, 0.3), within 5 standard deviations."""
    counts = np.zeros(40)
    for seed in range(4000):
        counts[draw_positions(40, 12, np.random.default_rng(seed))] += 1
    mean, sd = 4000 * 0.3, np.sqrt(4000 * 0.3 * 0.7)
    assert np.all(np.abs(counts - mean) < 5 * sd), counts
    pairs = np.zeros((6, 6))  # and pairs of positions together, as often as any pair
    for seed in range(3000):
        drawn = draw_positions(6, 3, np.random.default_rng(seed))
        pairs[np.ix_(drawn, drawn)] += 1
    off = pairs[~np.eye(6, dtype=bool)]
    assert np.all(np.abs(off - 3000 * 0.2) < 5 * np.sqrt(3000 * 0.2 * 0.8)), pairs


def test_draw_positions_takes_memory_of_the_count_not_the_range():
    tracemalloc.start()
    drawn = draw_positions(10**12, 20_000, np.random.default_rng(0))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert drawn.size == 20_000 and peak < 64 * 20_000


def test_ranks_map_to_the_entries_outside_the_excluded():
    excluded = np.array([0, 3, 4, 9])
    allowed = np.setdiff1d(np.arange(12), excluded)
    ranks = np.arange(allowed.size)
    np.testing.assert_array_equal(_holdout._ranks_to_positions(ranks, excluded), allowed)


# --- compare(holdout=) on a sparse V whose zeros are observed ------------------


@pytest.mark.parametrize("missing", [False, True])
def test_the_split_of_every_entry_is_the_dense_copys(missing):
    V = _counts()
    if missing:
        V.data[::7] = np.nan
    dense = V.toarray()
    if missing:
        dense[dense == 0] = 0.0  # zeros stay observed; the NaN are the stored ones
    a = Holdout(V, 0.15, 3, missing, zeros_observed=True)
    b = Holdout(dense, 0.15, 3, missing)
    np.testing.assert_array_equal(a.hidden_pattern.toarray(), b.hidden_pattern.toarray())
    np.testing.assert_array_equal(a.hidden_values, b.hidden_values)
    assert a.baselines == pytest.approx(b.baselines, rel=1e-12)
    np.testing.assert_allclose(a.filled.toarray(), b.filled, rtol=1e-12)
    np.testing.assert_array_equal(a.observed.to_mask(), b.observed.mask)


def test_compare_on_a_sparse_v_is_its_dense_copys_table():
    V = _counts(shape=(50, 40), seed=9)
    methods = ["nmf_sc", "nmf_sc_accelerated", "nmf_euclidean", "nmf_divergence"]
    kw = {"methods": methods, "sparseness_w": 0.5, "seeds": (0, 1), "holdout": 0.2}
    kw |= {"max_iter": 60, "progress": False}
    a = _quiet(nmfsc.compare, V, M, **kw)
    b = _quiet(nmfsc.compare, V.toarray(), M, **kw)
    assert a.settings["sparse_zeros"] == "observed"
    for x, y in zip(a.rows, b.rows, strict=True):
        assert (x["method"], x["holdout_fit"]) == (y["method"], y["holdout_fit"])
        for column in ("holdout_error", "fitted_error", "relative_error", "sparseness_W"):
            assert x[column] == pytest.approx(y[column], rel=1e-7), (x["method"], column)


def test_compare_holds_out_entries_of_a_huge_sparse_v_without_a_dense_copy(no_densify):
    # 200,000 x 100,000: a dense float64 copy would take 160 GB.
    rng = np.random.default_rng(3)
    nnz = 3000
    V = sp.csr_matrix(
        (rng.integers(1, 5, nnz).astype(float), (rng.integers(0, 200_000, nnz),
         rng.integers(0, 100_000, nnz))),
        shape=(200_000, 100_000),
    )  # fmt: skip
    methods = ["nmf_sc", "nmf_sc_accelerated", "nmf_euclidean", "nmf_divergence"]
    tracemalloc.start()
    result = _quiet(
        nmfsc.compare, V, 2, methods=methods, sparseness_h=0.5, seeds=(0,), holdout=1e-6,
        max_iter=3, progress=False,
    )  # fmt: skip
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 200 * 2**20  # the factors are 2.4 MB; a dense copy 160 GB
    assert [row["holdout_fit"] for row in result.rows] == ["masked"] * 3 + ["row means"]
    assert all(row["holdout_error"] is not None for row in result.rows)


def test_cli_compare_holds_out_entries_of_a_sparse_mtx_file_whose_zeros_are_data(tmp_path):
    import json

    import scipy.io

    from nmfsc.cli import main

    path = tmp_path / "counts.mtx"
    scipy.io.mmwrite(path, _counts(shape=(50, 40), seed=11).tocoo())
    argv = ["compare", str(path), "-k", "3", "--holdout", "0.1", "--sparseness-w", "0.5"]
    argv += ["--methods", "nmf_sc", "nmf_divergence", "--seeds", "0", "--max-iter", "50"]
    assert main([*argv, "--no-progress", "--out", str(tmp_path / "cmp")]) == 0
    report = json.loads((tmp_path / "cmp" / "report.json").read_text())
    assert report["settings"]["sparse_zeros"] == "observed"
    assert [row["holdout_fit"] for row in report["rows"]] == ["masked", "row means"]
    assert all(row["holdout_error"] is not None for row in report["rows"])
