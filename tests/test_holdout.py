"""compare(holdout=..., missing_values=...) and the command line's --holdout and
--missing-values (issue 34)."""

import json
import warnings

import numpy as np
import pytest

import nmfsc
from nmfsc.cli import main
from nmfsc.readers import DataFileError, read_matrix

pytestmark = pytest.mark.filterwarnings("ignore::nmfsc.ConvergenceWarning")


@pytest.fixture
def low_rank():
    rng = np.random.default_rng(0)
    return rng.random((30, 4)) @ rng.random((4, 24))


def run(V, n_components=4, **kw):
    kw = {"sparseness_w": 0.2, "seeds": (0,), "max_iter": 300, "progress": False, **kw}
    return nmfsc.compare(V, n_components, **kw)


def test_holdout_hides_the_same_entries_for_every_method(low_rank):
    methods = ["nmf_sc", "nmf_euclidean", "nmf_divergence"]
    result = run(low_rank, methods=methods, holdout=0.2, seeds=(0, 1))
    rows = result.rows
    assert {r["holdout_fit"] for r in rows if r["method"] in ("nmf_sc", "nmf_euclidean")} == {
        "masked"
    }
    assert {r["holdout_fit"] for r in rows if r["method"] == "nmf_divergence"} == {"row means"}
    # the column is each run's relative error on the hidden entries, recomputed here
    from nmfsc.comparison._holdout import Holdout

    split = Holdout(low_rank, 0.2, 0, missing=False)
    assert split.hidden.sum() == round(0.2 * low_rank.size)
    for row in rows:
        run_ = result.runs[(row["method"], row["seed"])]
        WH = run_.W @ run_.H
        expected = np.linalg.norm((WH - low_rank)[split.hidden]) / np.linalg.norm(
            low_rank[split.hidden]
        )
        assert row["holdout_error"] == pytest.approx(expected, rel=1e-9)
        train = ~split.hidden  # and the error on the entries the masked methods fit
        fitted = np.linalg.norm((WH - low_rank)[train]) / np.linalg.norm(low_rank[train])
        assert row["fitted_error"] == pytest.approx(fitted, rel=1e-9)
    assert result.settings["holdout"] == 0.2
    assert "fitted-entries error" in result.to_markdown()


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_every_curve_measures_what_the_table_measures(low_rank, sparse):
    """With held-out entries the masked fits' objective covers the training
    entries only: their curves are the table's error on the filled V all the
    same, from the shared start to the row's relative error."""
    import scipy.sparse

    V = scipy.sparse.csr_matrix(low_rank) if sparse else low_rank
    methods = ["nmf_sc", "nmf_euclidean", "nmf_divergence", "sklearn_cd"]
    result = run(V, methods=methods, holdout=0.2)
    starts = set()
    for row in result.rows:
        curve = next(c for c in result.curves if c["method"] == row["method"])
        assert curve["relative_error"][-1] == pytest.approx(row["relative_error"], rel=1e-9)
        starts.add(round(curve["relative_error"][0], 12))
    assert len(starts) == 1  # the shared start's error, the same for every method


def test_masked_fit_predicts_hidden_low_rank_entries(low_rank):
    """Low-rank data, 30 % hidden: the masked fit's held-out error is at most half
    that of filling the holes with row means and fitting the filled matrix."""
    from nmfsc.comparison._holdout import Holdout

    result = run(low_rank, methods=["nmf_euclidean"], holdout=0.3, max_iter=3000, tol=1e-7)
    masked = result.rows[0]["holdout_error"]
    split = Holdout(low_rank, 0.3, 0, missing=False)
    filled = nmfsc.nmf_euclidean(split.filled, 4, random_state=0, max_iter=3000, tol=1e-7)
    WH = filled.W @ filled.H
    plain = np.linalg.norm((WH - low_rank)[split.hidden]) / np.linalg.norm(low_rank[split.hidden])
    assert masked <= 0.5 * plain


def test_holdout_is_seeded(low_rank):
    a = run(low_rank, methods=["nmf_euclidean"], holdout=0.1)
    b = run(low_rank, methods=["nmf_euclidean"], holdout=0.1)
    c = run(low_rank, methods=["nmf_euclidean"], holdout=0.1, holdout_seed=1)
    assert a.rows[0]["holdout_error"] == b.rows[0]["holdout_error"]
    assert a.rows[0]["holdout_error"] != c.rows[0]["holdout_error"]


def test_missing_values_are_neither_fitted_nor_scored(low_rank):
    holes = low_rank.copy()
    holes[np.random.default_rng(9).random(holes.shape) < 0.1] = np.nan
    result = run(holes, methods=["nmf_sc"], missing_values=np.nan, holdout=0.1)
    assert np.isfinite(result.rows[0]["holdout_error"])
    with pytest.raises(ValueError, match="NaN"):
        run(holes, methods=["nmf_sc"])


@pytest.mark.parametrize(
    ("holdout", "error", "match"),
    [
        (0.0, ValueError, "strictly between 0 and 1"),
        (1.0, ValueError, "strictly"),
        ("0.1", TypeError, "fraction"),
    ],
)
def test_bad_holdout_is_refused(low_rank, holdout, error, match):
    with pytest.raises(error, match=match):
        run(low_rank, methods=["nmf_sc"], holdout=holdout)


def test_holdout_report_has_the_column(low_rank, tmp_path):
    result = run(low_rank, methods=["nmf_sc", "nmf_euclidean"], holdout=0.1)
    assert "held-out error" in result.to_markdown()
    assert "holdout_error" in result.to_csv().splitlines()[0]


# --- the command line -----------------------------------------------------------
@pytest.fixture
def csv_with_holes(tmp_path, low_rank):
    lines = []
    for i, row in enumerate(low_rank):
        cells = [f"{v:.6f}" for v in row]
        cells[i % len(cells)] = ""  # one empty cell per row
        lines.append(",".join(cells))
    path = tmp_path / "holes.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_read_matrix_reads_empty_cells_as_missing(csv_with_holes):
    V, _, _ = read_matrix(csv_with_holes, missing_values=np.nan)
    assert np.isnan(V).sum() == V.shape[0]
    with pytest.raises(DataFileError, match="empty cell"):
        read_matrix(csv_with_holes)


def test_cli_fit_with_missing_values(csv_with_holes, tmp_path, capsys):
    out = tmp_path / "fit.npz"
    argv = [str(csv_with_holes), "-k", "3", "--missing-values", "nan", "--no-progress"]
    assert main(["fit", *argv, "--max-iter", "200", "--out", str(out)]) == 0
    with np.load(out) as saved:
        record = json.loads(str(saved["record"]))
        assert np.all(np.isfinite(saved["W"]))
    assert record["relative_error"] < 0.2
    # the record says the fit is of the observed entries only
    assert record["data"]["missing_values"] == "nan"
    assert record["data"]["observed_entries"] == 30 * 24 - 30  # one empty cell per row
    assert record["objective_definition"].endswith(
        "over the observed entries only (missing values: the relative error too)"
    )
    assert main(["fit", *argv[:3], "--no-progress", "--out", str(out)]) != 0
    assert "empty cell" in capsys.readouterr().err


def test_cli_compare_with_holdout(csv_with_holes, tmp_path, capsys):
    argv = [
        "compare",
        str(csv_with_holes),
        "-k",
        "3",
        "--missing-values",
        "nan",
        "--holdout",
        "0.1",
        "--sparseness-w",
        "0.3",
        "--methods",
        "nmf_sc",
        "nmf_euclidean",
        "--seeds",
        "0",
        "--max-iter",
        "100",
        "--no-progress",
        "--out",
        str(tmp_path / "cmp"),
    ]
    assert main(argv) == 0
    assert "held-out error" in capsys.readouterr().out
    report = json.loads((tmp_path / "cmp" / "report.json").read_text())
    assert report["settings"]["holdout"] == 0.1
    assert all(row["holdout_error"] is not None for row in report["rows"])


@pytest.mark.parametrize("value", ["0", "1", "x"])
def test_cli_bad_holdout(csv_with_holes, value, capsys):
    argv = ["compare", str(csv_with_holes), "--holdout", value, "--missing-values", "nan"]
    assert main(argv) == 2
    assert "--holdout" in capsys.readouterr().err


# --- scipy.sparse V: sparse_zeros="missing", the stored entries are the observed ones
SPARSE_METHODS = ["nmf_sc", "nmf_euclidean", "nmf_divergence"]
if nmfsc.comparison._methods.sklearn_available():
    SPARSE_METHODS.append("sklearn_mu")


def _same_rows(a, b, columns):
    assert [r["method"] for r in a.rows] == [r["method"] for r in b.rows]
    for x, y in zip(a.rows, b.rows, strict=True):
        assert x["holdout_fit"] == y["holdout_fit"]
        for column in columns:
            assert x[column] == pytest.approx(y[column], rel=1e-9), (x["method"], column)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_holdout_equals_the_dense_holdout_of_a_full_pattern(low_rank, fmt):
    """Every entry stored: the same hidden entries, the same fits (mask='stored'
    for the masked methods, row means for the others), the same rows."""
    import scipy.sparse as sp

    kw = {"methods": SPARSE_METHODS, "holdout": 0.2, "max_iter": 100}
    dense = run(low_rank, **kw)
    stored = run(sp.csr_matrix(low_rank).asformat(fmt), **kw)
    _same_rows(dense, stored, ["holdout_error", "relative_error", "sparseness_W"])


def test_sparse_holdout_is_the_dense_one_with_unstored_entries_missing():
    """A sparse pattern: the masked methods fit the stored entries, so they give
    what the dense V with NaN where unstored gives with missing_values=nan."""
    import scipy.sparse as sp

    S = sp.random(40, 30, density=0.4, random_state=1, format="csr")
    holes = S.toarray()
    holes[holes == 0] = np.nan
    kw = {"methods": ["nmf_sc", "nmf_euclidean"], "holdout": 0.15, "max_iter": 100}
    dense = run(holes, missing_values=np.nan, **kw)
    stored = run(S, sparse_zeros="missing", **kw)
    _same_rows(dense, stored, ["holdout_error", "fitted_error"])


def test_sparse_holdout_hides_stored_entries_and_keeps_v_sparse(monkeypatch):
    import scipy.sparse as sp

    from nmfsc.comparison import _runner
    from nmfsc.comparison._holdout import Holdout

    S = sp.random(50, 40, density=0.2, random_state=2, format="csc")
    split = Holdout(S, 0.1, 0, missing=False)
    assert split.hidden.sum() == round(0.1 * S.nnz)
    assert np.all(S.toarray()[split.hidden_rows, split.hidden_cols] != 0)
    fitted = []

    def recording(method, V, *args, **kw):
        observed = kw.get("observed")
        fitted.append((method, sp.issparse(V), V.nnz, observed is not None and observed.stored))
        return run_method(method, V, *args, **kw)

    run_method = _runner.run_method
    monkeypatch.setattr(_runner, "run_method", recording)
    kw = {"holdout": 0.1, "max_iter": 20, "sparse_zeros": "missing"}
    result = run(S, methods=["nmf_sc", "nmf_divergence"], **kw)
    train = S.nnz - split.hidden.sum()
    assert fitted == [("nmf_sc", True, train, True), ("nmf_divergence", True, S.nnz, False)]
    assert all(np.isfinite(row["holdout_error"]) for row in result.rows)


def test_sparse_missing_values_are_stored_nans():
    import scipy.sparse as sp

    S = sp.random(30, 20, density=0.5, random_state=3, format="csr")
    S.data[::9] = np.nan
    result = run(S, methods=["nmf_sc"], missing_values=np.nan, holdout=0.1, max_iter=20)
    assert np.isfinite(result.rows[0]["holdout_error"])
    assert result.rows[0]["holdout_fit"] == "masked"
    with pytest.raises(ValueError, match="NaN"):
        run(S, methods=["nmf_sc"], holdout=0.1)


def test_cli_compare_with_holdout_on_a_sparse_mtx_file(tmp_path, capsys):
    import scipy.io
    import scipy.sparse as sp

    path = tmp_path / "ratings.mtx"
    scipy.io.mmwrite(path, sp.random(40, 30, density=0.3, random_state=4, format="coo"))
    argv = [
        "compare",
        str(path),
        "-k",
        "3",
        "--holdout",
        "0.1",
        "--sparse-zeros",
        "missing",
        "--sparseness-w",
        "0.3",
        "--methods",
        "nmf_sc",
        "nmf_divergence",
        "--seeds",
        "0",
        "--max-iter",
        "50",
        "--no-progress",
        "--out",
        str(tmp_path / "cmp"),
    ]
    assert main(argv) == 0
    assert "held-out error" in capsys.readouterr().out
    report = json.loads((tmp_path / "cmp" / "report.json").read_text())
    assert report["settings"]["holdout"] == 0.1
    assert [row["holdout_fit"] for row in report["rows"]] == ["masked", "row means"]
    assert all(row["holdout_error"] is not None for row in report["rows"])


# --- text: a sparse V whose zeros are observed ---------------------------------------
def _docstring_tfidf():
    """TF-IDF (terms x documents) of the standard library's longer docstrings:
    real text, offline, a few per cent of its entries stored."""
    pytest.importorskip("sklearn")
    from sklearn.feature_extraction.text import TfidfVectorizer

    docs = set()
    with warnings.catch_warnings():  # getattr on typing's deprecated aliases warns
        warnings.simplefilter("ignore", DeprecationWarning)
        docs = _docstrings()
    vectorizer = TfidfVectorizer(max_features=1000, stop_words="english", min_df=3)
    return vectorizer.fit_transform(sorted(docs)).T.tocsr()


def _docstrings():
    import importlib
    import inspect

    docs = set()
    for name in ("argparse", "collections", "datetime", "decimal", "functools", "itertools",
                 "json", "logging", "os", "pathlib", "re", "shutil", "socket", "statistics",
                 "string", "subprocess", "tarfile", "tempfile", "textwrap", "threading",
                 "typing", "zipfile"):  # fmt: skip
        module = importlib.import_module(name)
        for attr in dir(module):
            doc = inspect.getdoc(getattr(module, attr, None))
            if doc and len(doc) > 200 and not attr.startswith("_"):
                docs.add(doc)
    return docs


def test_held_out_text_ranks_against_trivial_predictions_and_fails_worse_than_zero():
    """A TF-IDF matrix's zeros are data: hidden and fitted like any entry (the
    default), the report ranks the methods against predicting zero and the row
    means, and no run worse than predicting zero is called converged."""
    V = _docstring_tfidf()
    methods = ["nmf_sc", "nmf_sc_accelerated", "nmf_euclidean", "sklearn_cd"]
    result = run(V, methods=methods, sparseness_w=0.9, holdout=0.2, n_components=10)
    assert result.settings["sparse_zeros"] == "observed"
    baselines = result.settings["holdout_baselines"]
    assert baselines["zero_fill"] == 1.0 and 0 < baselines["row_mean_fill"] < 1
    for row in result.rows:
        worse = row["holdout_error"] is None or row["holdout_error"] > 1
        worse |= row["relative_error"] is None or row["relative_error"] > 1
        assert (row["stop_reason"] == "failed") == worse, row
        if worse:
            assert "worse than predicting zero" in row["note"]
    report = result.to_markdown()
    ranking = report[report.index("## Held-out ranking") : report.index("## Every run")]
    assert "*row means*" in ranking and "*zero*" in ranking
    ranked = [r for r in result.rows if r["stop_reason"] != "failed"]
    assert all(f"| {r['method']} |" in ranking for r in ranked)


def test_observed_zeros_hide_unstored_entries_as_the_dense_copy_does(low_rank):
    import scipy.sparse as sp

    S = sp.random(40, 30, density=0.3, random_state=5, format="csr")
    kw = {"methods": ["nmf_sc", "nmf_divergence"], "holdout": 0.2, "max_iter": 60}
    sparse, dense = run(S, **kw), run(S.toarray(), **kw)
    _same_rows(sparse, dense, ["holdout_error", "relative_error"])
    with pytest.raises(ValueError, match="sparse_zeros must be 'observed'"):
        run(S, sparse_zeros="stored", **kw)


def test_compare_reports_dead_samples_per_run():
    V = _docstring_tfidf()
    result = run(V, methods=["nmf_sc"], sparseness_w=0.95, n_components=10, max_iter=200)
    (row,) = result.rows
    assert row["dead_samples"] > 0
    report = result.to_markdown()
    assert f"- nmf_sc, seed 0: {row['dead_samples']:,} of {V.shape[1]:,} samples" in report


def test_cli_refuses_hidden_entries_that_do_not_fit_before_fitting(tmp_path, capsys, monkeypatch):
    import scipy.io
    import scipy.sparse as sp

    import nmfsc._commands as commands

    path = tmp_path / "counts.mtx"
    scipy.io.mmwrite(path, sp.random(400, 300, density=0.01, random_state=6, format="coo"))
    monkeypatch.setattr(commands, "memory_limit", lambda: (2**20, "RLIMIT_AS"))
    monkeypatch.setattr(commands, "check_factor_memory", lambda *a, **k: None)
    monkeypatch.setattr(nmfsc, "compare", lambda *a, **k: pytest.fail("fitted"))
    argv = ["compare", str(path), "-k", "2", "--sparseness-w", "0.5", "--holdout", "0.2"]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "hides about 24,000 of the 400 x 300 entries" in err and "0.00258 GiB" in err
    assert "--sparse-zeros missing" in err
    assert err.count("\n") == 1
