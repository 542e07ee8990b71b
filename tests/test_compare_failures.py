"""nmfsc.compare on data that trips a method: every row is kept, failures are rows.

A method that raises, or whose fit is worse than W H = 0, gets a row with
``stop_reason`` ``"failed"`` and a note saying why; the other methods' rows stand,
and the reports and figures are still written.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import nmfsc
import nmfsc.comparison._runner as runner
from nmfsc.comparison import METHODS

pytest.importorskip("sklearn")


def _by_method(comparison):
    return {row["method"]: row for row in comparison.rows}


def test_a_factor_zeroed_by_the_l1_search_is_a_result_not_an_error():
    # A chunk of scikit-learn's penalised CD zeroes a factor; the next chunk
    # used to be refused ("Array passed to NMF (input H) is full of zeros")
    # and the whole comparison ended with it.
    V = (np.random.default_rng(0).random((60, 40)) < 0.3).astype(float)
    comparison = nmfsc.compare(V, 2, sparseness_w=0.5, seeds=(0,), progress=False)
    rows = _by_method(comparison)
    assert list(rows) == list(METHODS)
    assert all(row["stop_reason"] != "failed" for row in rows.values())
    (record,) = comparison.matched
    assert None in [value for _, value in record["path"]]  # the zeroed fits, recorded
    assert record["matched"]


def test_a_fit_worse_than_zero_is_failed_and_says_why(tmp_path):
    V = np.zeros((30, 30))
    V[4, 7] = 2.5
    comparison = nmfsc.compare(
        V, 20, sparseness_w=0.5, methods=["nmf_sc", "local_nmf"], seeds=(0,), progress=False
    )
    rows = _by_method(comparison)
    assert rows["nmf_sc"]["stop_reason"] == "tol"
    local = rows["local_nmf"]
    assert local["relative_error"] > 1
    assert local["stop_reason"] == "failed"
    assert "worse than predicting zero" in local["note"]
    assert "another objective than the squared error" in local["note"]
    summary = {entry["method"]: entry for entry in comparison.summary}
    assert summary["local_nmf"]["n_converged"] == 0
    assert summary["local_nmf"]["relative_error_median"] is None  # ranks nowhere
    comparison.save(tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "| local_nmf (failed) |" in report
    assert "- local_nmf, seed 0: failed: relative error 3.47 > 1" in report


def test_one_method_raising_keeps_every_other_row(monkeypatch, tmp_path):
    real = runner.run_sklearn

    def broken(V, M, start, *, solver="cd", **kwargs):
        if solver == "mu":
            raise ValueError("something\ninside scikit-learn broke")
        return real(V, M, start, solver=solver, **kwargs)

    monkeypatch.setattr(runner, "run_sklearn", broken)
    rng = np.random.default_rng(1)
    V = rng.random((12, 3)) @ rng.random((3, 10))
    comparison = nmfsc.compare(
        V,
        3,
        sparseness_w=0.5,
        methods=["nmf_sc", "sklearn_mu", "sklearn_cd"],
        seeds=(0, 1),
        max_iter=50,
        image_shape=(3, 4),
        progress=False,
    )
    assert [(r["method"], r["seed"]) for r in comparison.rows] == [
        (m, s) for m in ("nmf_sc", "sklearn_mu", "sklearn_cd") for s in (0, 1)
    ]
    for row in comparison.rows:
        if row["method"] == "sklearn_mu":
            assert row["stop_reason"] == "failed" and row["relative_error"] is None
            assert row["note"] == "failed: ValueError: something inside scikit-learn broke"
        else:
            assert 0 <= row["relative_error"] < 1 and row["stop_reason"] != "failed"
    paths = comparison.save(tmp_path)  # reports and figures of the failed runs too
    assert {p.name for p in paths} >= {"report.md", "report.json", "bases.png"}


def test_an_interrupt_is_not_a_failed_row(monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_sklearn", interrupted)
    V = np.random.default_rng(2).random((6, 5))
    with pytest.raises(KeyboardInterrupt):
        nmfsc.compare(V, 2, sparseness_w=0.5, methods=["sklearn_cd"], seeds=(0,), progress=False)


def _matrix(kind, N, T, rng):
    if kind == "binary":
        V = (rng.random((N, T)) < 0.3).astype(float)
    elif kind == "rank_one":
        V = np.outer(rng.random(N), rng.random(T))
    elif kind == "empty_rows_and_columns":
        V = rng.random((N, T))
        V[rng.random(N) < 0.4] = 0.0
        V[:, rng.random(T) < 0.4] = 0.0
    elif kind == "tiny":
        V = rng.random((N, T)) * 1e-300
    else:
        V = rng.random((N, T))
    if not V.any():
        V[rng.integers(N), rng.integers(T)] = 1.0
    return V


@given(
    kind=st.sampled_from(["dense", "binary", "rank_one", "empty_rows_and_columns", "tiny"]),
    shape=st.tuples(st.integers(2, 12), st.integers(2, 12)),
    sparse=st.booleans(),
    k=st.integers(1, 50),
    target=st.floats(0.3, 0.95),
    seed=st.integers(0, 2**16),
)
def test_compare_finishes_with_every_row_on_generated_data(kind, shape, sparse, k, target, seed):
    V = _matrix(kind, *shape, np.random.default_rng(seed))
    if sparse:
        V = sp.csr_matrix(V)
    comparison = nmfsc.compare(V, k, sparseness_w=target, seeds=(0,), max_iter=20, progress=False)
    rows = _by_method(comparison)
    assert list(rows) == list(METHODS)
    for row in rows.values():
        if row["stop_reason"] == "failed":  # a poor fit, never an exception
            assert "worse than predicting zero" in row["note"], row["note"]
        else:
            assert 0.0 <= row["relative_error"] <= 1.0
    nmf_sc = rows["nmf_sc"]
    if nmf_sc["stop_reason"] != "failed" and nmf_sc["sparseness_W"] is not None:
        W, _ = comparison.factors("nmf_sc")
        alive = np.any(W != 0, axis=0)
        assert np.allclose(nmfsc.sparseness(W[:, alive], axis=0), target, atol=1e-6)
    l1 = rows["sklearn_cd_l1"]
    if l1["stop_reason"] != "failed":
        assert l1["matched"] or l1["note"].startswith("not matched")


def test_the_command_line_says_when_runs_failed(tmp_path, capsys):
    from nmfsc.cli import main

    V = np.zeros((30, 30))
    V[4, 7] = 2.5
    np.save(tmp_path / "spike.npy", V)
    argv = ["compare", str(tmp_path / "spike.npy"), "-k", "20", "--sparseness-w", "0.5"]
    argv += ["--methods", "nmf_sc", "local_nmf", "--seeds", "0", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0  # the comparison is complete
    out, err = capsys.readouterr()
    assert "| local_nmf (failed) | 0 |" in out
    assert (
        err.splitlines()[-1]
        == '1 of 2 runs failed (local_nmf); the report says why ("Failed runs")'
    )
