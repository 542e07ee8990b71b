"""nmfsc.compare and `python -m reproduce compare`: numbers, determinism, reports, files."""

import csv
import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import nmfsc
import nmfsc.comparison._methods
from nmfsc.atomic import write_atomic
from nmfsc.comparison import METHODS, Comparison
from nmfsc.comparison._errors import relative_error, rescaled_error
from nmfsc.comparison._methods import starting_point
from nmfsc.datasets import bars

REPO = Path(__file__).resolve().parent.parent
SHAPE = (6, 6)


@pytest.fixture(scope="module")
def data():
    V, parts = bars(n_samples=60, size=6, random_state=0)
    return V, parts


def _compare(data, **kwargs):
    V, parts = data
    settings = dict(
        sparseness_w=0.6,
        seeds=(0, 1),
        max_iter=40,
        image_shape=SHAPE,
        parts=parts,
        progress=False,
        name="tiny bars",
    )
    settings.update(kwargs)
    return nmfsc.compare(V, 8, **settings)


@pytest.fixture(scope="module")
def result(data):
    return _compare(data)


def test_exports_and_method_names():
    assert nmfsc.compare is nmfsc.comparison.compare and nmfsc.Comparison is Comparison
    assert {"compare", "Comparison"} <= set(nmfsc.__all__)
    assert METHODS[:7] == (
        "nmf_sc",
        "nmf_sc_accelerated",
        "nmf_sc_accelerated_average",
        "nmf_euclidean",
        "nmf_divergence",
        "local_nmf",
        "sparse_nmf",
    )


def test_rows_and_summary(result):
    methods = list(nmfsc.comparison._methods.NMFSC_METHODS)
    if nmfsc.comparison._methods.sklearn_available():
        methods = list(METHODS)
    assert [(r["method"], r["seed"]) for r in result.rows] == [
        (m, s) for m in methods for s in (0, 1)
    ]
    for row in result.rows:
        assert 0 <= row["rescaled_relative_error"] <= row["relative_error"] + 1e-12 < 1.5
        assert 0 <= row["part_recovery"] <= 1 and row["locality"] is not None
        assert 1 <= row["n_iter"] <= 40 and row["time_s"] >= 0
        assert row["stop_reason"] in ("tol", "max_iter", "step_size")
    nmf_sc = [r for r in result.rows if r["method"] == "nmf_sc"]
    assert all(abs(r["sparseness_W"] - 0.6) < 1e-6 for r in nmf_sc)
    assert [s["method"] for s in result.summary] == methods
    entry = result.summary[0]
    values = [r["relative_error"] for r in nmf_sc]
    assert entry["relative_error_median"] == pytest.approx(np.median(values))
    assert entry["relative_error_min"] == min(values) and entry["n_seeds"] == 2
    W, H = result.factors("nmf_sc", 1)
    assert W.shape == (36, 8) and H.shape == (8, 60)
    for curve in result.curves:
        assert len(curve["iteration"]) == len(curve["time_s"]) == len(curve["relative_error"])
        assert curve["iteration"][0] == 0 and np.all(np.diff(curve["iteration"]) > 0)


def _without_times(comparison):
    doc = json.loads(comparison.to_json())
    for row in doc["rows"]:
        row.pop("time_s")
    for entry in doc["summary"]:
        for key in [k for k in entry if k.startswith("time_s")]:
            entry.pop(key)
    for curve in doc["curves"]:
        curve.pop("time_s")
    for record in doc["sklearn_cd_l1_search"]:
        record.pop("fit_times_s")
    return doc


def test_two_calls_give_identical_numbers_except_times(data, result):
    again = _compare(data)
    assert _without_times(again) == _without_times(result)
    for key, run in result.runs.items():
        np.testing.assert_array_equal(run.W, again.runs[key].W)


def test_every_method_starts_from_the_same_point(data, monkeypatch):
    import nmfsc.comparison._runner as runner

    V, _ = data
    seen = []

    def recording(function):
        def wrapper(*args, **kwargs):
            method = args[0] if function is runner.run_method else kwargs.get("solver")
            seen.append((method, args[-1]))
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(runner, "run_method", recording(runner.run_method))
    monkeypatch.setattr(runner, "run_sklearn", recording(runner.run_sklearn))
    methods = [m for m in METHODS if m != "sklearn_cd_l1"]
    if not nmfsc.comparison._methods.sklearn_available():
        methods = list(nmfsc.comparison._methods.NMFSC_METHODS)
    _compare(data, seeds=(4,), max_iter=3, methods=methods)
    W0, H0 = starting_point(V / V.max(), 8, 4)  # every method runs on V / max(V)
    assert len(seen) == len(methods)
    for _, (W, H) in seen:
        np.testing.assert_array_equal(W, W0)
        np.testing.assert_array_equal(H, H0)
    assert W0.max() <= V.max() * 10 and not np.array_equal(W0, starting_point(V, 8, 5)[0])


def test_the_l1_baselines_objective_has_a_minimum():
    """The matched baseline's penalty is on both factors: its fits converge
    (nmfsc's rule stops them), and ten times the budget finds the same fit,
    where a penalty on one factor shrank it and grew the other until
    max_iter, whatever the budget."""
    pytest.importorskip("sklearn")
    from nmfsc.comparison._methods import run_sklearn, starting_point

    rng = np.random.default_rng(8)
    V = (rng.random((50, 5)) ** 3) @ rng.random((5, 80)) + 0.01 * rng.random((50, 80))
    V /= V.max()
    start = starting_point(V, 5, 0)
    fits = [
        run_sklearn(
            V,
            5,
            start,
            solver="cd",
            penalty="W",
            alpha=1e-3,
            max_iter=budget,
            tol=1e-6,
            max_time=None,
            progress=False,
        )
        for budget in (3000, 30000)
    ]
    assert [fit.stop_reason for fit in fits] == ["tol", "tol"]
    assert fits[0].n_iter == fits[1].n_iter
    np.testing.assert_array_equal(fits[0].W, fits[1].W)


def test_matched_sparseness_baseline_within_001():
    """On dense random data the L1 weight is found by bisection (here within 6 fits;
    on V / max(V), which compare runs on, the second fit already matches)."""
    pytest.importorskip("sklearn")
    V = np.abs(np.random.default_rng(0).standard_normal((30, 50)))
    result = nmfsc.compare(
        V,
        5,
        sparseness_w=0.38,
        seeds=(0, 1),
        max_iter=40,
        progress=False,
        methods=["nmf_sc", "sklearn_cd", "sklearn_cd_l1"],
    )
    assert len(result.matched) == 2
    for record in result.matched:
        assert record["matched"], record
        assert record["alpha"] > 0 and record["matched_on"] == "W" and 2 <= record["fits"] <= 6
        row = next(
            r for r in result.rows if r["method"] == "sklearn_cd_l1" and r["seed"] == record["seed"]
        )
        nmf_sc = next(
            r for r in result.rows if r["method"] == "nmf_sc" and r["seed"] == record["seed"]
        )
        assert abs(row["sparseness_W"] - nmf_sc["sparseness_W"]) <= 0.01
        assert row["alpha"] == record["alpha"] and row["matched"] is True
        plain = next(
            r for r in result.rows if r["method"] == "sklearn_cd" and r["seed"] == record["seed"]
        )
        assert plain["sparseness_W"] < nmf_sc["sparseness_W"] - 0.01


def _early_stopping_data():
    """Small values and one large one: from the shared random start scikit-learn's
    CD rule (gradient violation relative to its first, huge, value) stops after a
    few iterations, far from convergence."""
    rng = np.random.default_rng(0)
    V = 1e-3 * (rng.random((60, 3)) @ rng.random((3, 80))) + 1e-4 * rng.random((60, 80))
    V[0, 0] = 1.0
    return V


def test_scikit_learn_runs_to_nmfscs_rule_not_its_own():
    pytest.importorskip("sklearn")
    from sklearn.decomposition import NMF

    V = _early_stopping_data()
    W0, H0 = starting_point(V, 6, 0)
    own = NMF(6, init="custom", solver="cd", tol=1e-4, max_iter=2000)
    coef = own.fit_transform(V.T, W=H0.T.copy(), H=W0.T.copy())
    own_error = relative_error(V, own.components_.T, coef.T)
    assert own.n_iter_ <= 5  # the premise: its own rule stops almost at once
    result = nmfsc.compare(
        V,
        6,
        methods=["sklearn_cd", "sklearn_mu"],
        seeds=(0,),
        max_iter=2000,
        tol=1e-4,
        progress=False,
    )
    cd = next(r for r in result.rows if r["method"] == "sklearn_cd")
    assert cd["stop_reason"] == "tol" and cd["n_iter"] >= 100
    assert cd["relative_error"] < 0.5 * own_error
    curve = next(c for c in result.curves if c["method"] == "sklearn_cd")
    E = (np.array(curve["relative_error"]) * np.linalg.norm(V)) ** 2 / 2
    assert np.all(np.diff(curve["iteration"]) == 10)  # nmfsc's rule, every 10 iterations:
    assert abs(E[-2] - E[-1]) < 1e-4 * E[-2] and abs(E[-3] - E[-2]) >= 1e-4 * E[-3]
    mu = next(r for r in result.rows if r["method"] == "sklearn_mu")
    assert mu["stop_reason"] == "max_iter" and mu["n_iter"] == 2000  # slower: not converged
    md = result.to_markdown()
    assert "| sklearn_mu (not converged) | 0 |" in md and "sklearn_cd (not" not in md


@pytest.mark.parametrize("solver", ["cd", "mu"])
def test_scikit_learn_in_chunks_gives_the_iterates_of_one_call(solver):
    """Continued from its own factors (init="custom"), scikit-learn runs the same
    iterations as one call (tol=0 in both: no early stop)."""
    pytest.importorskip("sklearn")
    from sklearn.decomposition import NMF

    from nmfsc.comparison._methods import run_sklearn

    V = _early_stopping_data()
    W0, H0 = starting_point(V, 6, 0)
    run = run_sklearn(
        V, 6, (W0, H0), solver=solver, max_iter=35, tol=0.0, max_time=None, progress=False
    )
    one = NMF(6, init="custom", solver=solver, tol=0.0, max_iter=35)
    with warnings.catch_warnings():  # mu's ConvergenceWarning at max_iter
        warnings.simplefilter("ignore")
        coef = one.fit_transform(V.T, W=H0.T.copy(), H=W0.T.copy())
    assert run.n_iter == 35 and run.iterations == [0, 10, 20, 30, 35]
    np.testing.assert_allclose(run.W, one.components_.T, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(run.H, coef.T, rtol=1e-10, atol=1e-14)


def test_an_unmatched_row_shows_a_penalty_that_does_something():
    from nmfsc.comparison._matched import _candidates

    plain, weak, dead = (0.0, 0.779, "plain"), (1e-4, 0.7785, "weak"), (1e-3, np.inf, "dead")
    pick = min(_candidates([plain, weak, dead], 0.85), key=lambda t: abs(t[1] - 0.85))
    assert pick is weak  # not the unpenalised fit, although it is closer
    assert _candidates([plain, dead], 0.85) == [plain, dead]  # no penalised fit alive
    assert _candidates([(0.0, 0.845, "plain"), weak], 0.85)[0][2] == "plain"  # matched at 0


def test_unreachable_sparseness_is_reported_not_faked(data):
    pytest.importorskip("sklearn")
    result = _compare(
        data, sparseness_w=0.2, seeds=(0,), methods=["nmf_sc", "sklearn_cd", "sklearn_cd_l1"]
    )
    row = next(r for r in result.rows if r["method"] == "sklearn_cd_l1")
    assert row["matched"] is False and "not matched" in row["note"]
    assert "(not matched)" in result.to_markdown()


def test_rescaled_error_is_the_minimum_over_c():
    rng = np.random.default_rng(3)
    V, W, H = rng.random((7, 9)), rng.random((7, 3)), rng.random((3, 9)) * 0.2
    c, err = rescaled_error(V, W, H)
    grid = np.linspace(0, 3 * c, 30001)
    brute = min(np.linalg.norm(V - g * (W @ H)) for g in grid) / np.linalg.norm(V)
    assert err == pytest.approx(brute, rel=1e-6) and err <= brute + 1e-15
    assert rescaled_error(V, W, 0 * H) == (0.0, 1.0)


def test_markdown_csv_json(result, tmp_path):
    md = result.to_markdown()
    assert md.startswith("# Comparison on tiny bars\n") and "QUICK" not in md
    assert "Seeds 0, 1" in md and "max_iter 40" in md and "Sparse NMF's L1 term" in md
    assert '- nmf_sc: nmf_sc(solver="hoyer")' in md
    assert '- nmf_sc_accelerated: nmf_sc(solver="accelerated")' in md
    assert "| dead samples |" in md
    assert "QUICK" in result.to_markdown(quick=True).splitlines()[0]
    rows = list(csv.DictReader(io.StringIO(result.to_csv(tmp_path / "t.csv"))))
    assert (tmp_path / "t.csv").read_text() == result.to_csv()
    assert len(rows) == len(result.rows)
    for parsed, row in zip(rows, result.rows, strict=True):
        assert parsed["method"] == row["method"] and int(parsed["seed"]) == row["seed"]
        assert float(parsed["relative_error"]) == row["relative_error"]
    doc = json.loads(result.to_json(tmp_path / "t.json"))
    assert doc == json.loads((tmp_path / "t.json").read_text())
    assert doc["rows"] == result.rows and doc["quick"] is False
    assert doc["settings"]["seeds"] == [0, 1] and doc["settings"]["max_iter"] == 40


def test_to_frame(result, monkeypatch):
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            result.to_frame()
    else:
        frame = result.to_frame()
        assert list(frame["method"]) == [r["method"] for r in result.rows]
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        result.to_frame()


def test_save_writes_atomically_and_marks_quick(result, tmp_path):
    paths = result.save(tmp_path / "out", quick=True)
    names = sorted(p.name for p in paths)
    assert {
        "report.md",
        "report.json",
        "report.csv",
        "bases.png",
        "error_vs_time.pdf",
        "error_vs_iteration.png",
        "sparseness.png",
    } <= set(names)
    assert sorted(os.listdir(tmp_path / "out")) == names  # no temporary files left
    assert json.loads((tmp_path / "out" / "report.json").read_text())["quick"] is True
    assert "QUICK" in (tmp_path / "out" / "report.md").read_text().splitlines()[0]


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = write_atomic(tmp_path / "report.md", "old\n")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, "new\n")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["report.md"]


def test_bad_arguments(data):
    V, _ = data
    with pytest.raises(ValueError, match=r"unknown method\(s\) 'nmf_foo'.*nmf_sc"):
        nmfsc.compare(V, 3, methods=["nmf_sc", "nmf_foo"], sparseness_w=0.5, progress=False)
    with pytest.raises(ValueError, match="sparseness_w or sparseness_h"):
        nmfsc.compare(V, 3, progress=False)
    with pytest.raises(ValueError, match="negative"):
        nmfsc.compare(-V, 3, sparseness_w=0.5, progress=False)
    with pytest.raises(ValueError, match="image_shape"):
        nmfsc.compare(V, 3, sparseness_w=0.5, image_shape=(5, 5), progress=False)
    with pytest.raises(ValueError, match=r"seeds must differ: \[0\] repeated"):
        nmfsc.compare(V, 3, sparseness_w=0.5, seeds=(0, 1, 0), progress=False)


def test_reproduce_quick_never_writes_into_figures(tmp_path):
    """`python -m reproduce compare --quick` with the default --out, from a scratch folder."""
    from reproduce._harness import Options

    (tmp_path / "figures").mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "reproduce",
            "compare",
            "--dataset",
            "bars",
            "--quick",
            "--no-progress",
        ],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert list((tmp_path / "figures").iterdir()) == []
    out = tmp_path / "quick-output" / "compare" / "bars"
    doc = json.loads((out / "report.json").read_text())
    assert doc["quick"] is True and doc["settings"]["max_iter"] == 5
    assert "QUICK" in (out / "report.md").read_text().splitlines()[0]
    assert Options(quick=True, out=str(REPO / "figures")).out_dir == Path("quick-output")
    assert Options(quick=True, out=str(tmp_path)).out_dir == tmp_path
    assert Options(out="figures").out_dir == Path("figures")


# --- scipy.sparse V: the same table, never made dense ------------------------


def _sparse_v(shape=(40, 50), density=0.2, seed=0, fmt="csr"):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    V = sp.random(*shape, density=density, format=fmt, random_state=rng)
    V.data = 1.0 - V.data  # (0, 1]: no explicit zeros
    return V


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_errors_match_dense(fmt):
    V = _sparse_v(fmt=fmt)
    rng = np.random.default_rng(1)
    W, H = np.abs(rng.standard_normal((40, 3))), np.abs(rng.standard_normal((3, 50)))
    dense = V.toarray()
    assert relative_error(V, W, H) == pytest.approx(relative_error(dense, W, H), rel=1e-12)
    c_s, e_s = rescaled_error(V, W, H)
    c_d, e_d = rescaled_error(dense, W, H)
    assert c_s == pytest.approx(c_d, rel=1e-12) and e_s == pytest.approx(e_d, rel=1e-12)
    assert rescaled_error(V, W, 0 * H) == (0.0, 1.0)


def test_sparse_errors_near_an_exact_fit_are_computed_exactly():
    import scipy.sparse as sp

    rng = np.random.default_rng(2)
    W, H = np.abs(rng.standard_normal((30, 3))), np.abs(rng.standard_normal((3, 20)))
    dense = W @ H
    V = sp.csr_matrix(dense)
    W_near = W * (1 + 1e-9)  # relative error 1e-9: the expansion alone would be noise
    expected = np.linalg.norm(dense - W_near @ H) / np.linalg.norm(dense)
    assert relative_error(V, W_near, H) == pytest.approx(expected, rel=1e-6)
    c, err = rescaled_error(V, W_near, H)
    assert c == pytest.approx(1 / (1 + 1e-9), rel=1e-12) and err < 1e-12


def _numbers(comparison):
    skip = ("time_s",)
    return [{k: v for k, v in row.items() if k not in skip} for row in comparison.rows]


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_compare_on_sparse_v_gives_the_dense_table(fmt):
    V = _sparse_v(fmt=fmt)
    settings = dict(sparseness_h=0.6, seeds=(0,), max_iter=30, progress=False)
    sparse, dense = nmfsc.compare(V, 4, **settings), nmfsc.compare(V.toarray(), 4, **settings)
    assert [r["method"] for r in sparse.rows] == [r["method"] for r in dense.rows]
    for a, b in zip(_numbers(sparse), _numbers(dense), strict=True):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], float):
                assert a[key] == pytest.approx(b[key], rel=1e-8, abs=1e-12), (a["method"], key)
            else:
                assert a[key] == b[key], (a["method"], key)
    for key, run in sparse.runs.items():
        other = dense.runs[key]
        assert run.iterations == other.iterations
        np.testing.assert_allclose(run.errors, other.errors, rtol=1e-8)


def test_compare_never_densifies_a_huge_sparse_v(no_densify):
    # 200,000 x 100,000: a dense float64 copy would take 160 GB.
    V = _sparse_v(shape=(200_000, 100_000), density=1.5e-7, seed=3)
    with pytest.raises(AssertionError, match="made dense"):
        V.toarray()  # the guard is on
    comparison = nmfsc.compare(V, 2, sparseness_h=0.5, seeds=(0,), max_iter=3, progress=False)
    assert comparison.settings["shape"] == [200_000, 100_000]
    assert {r["method"] for r in comparison.rows} == set(
        nmfsc.comparison._methods.available_methods()
    )
    assert all(0 < r["relative_error"] <= 1.5 for r in comparison.rows)
