"""`python -m reproduce compare --quick` writes its table, JSON and figures."""

import json

import numpy as np
import pytest

from reproduce.__main__ import main as reproduce_main

METHODS = {"nmf_euclidean", "nmf_divergence", "local_nmf", "sparse_nmf", "nmf_sc"}


def _run(dataset, out):
    argv = ["compare", "--dataset", dataset, "--quick", "--out", str(out), "--no-progress"]
    assert reproduce_main(argv) == 0
    return json.loads((out / "compare" / f"{dataset}.json").read_text())


def _check(doc, dataset, out):
    methods = {row["method"] for row in doc["methods"]}
    assert METHODS <= methods
    for row in doc["methods"]:
        assert 0.0 < row["relative_error"] < 1.5, row
        assert row["n_iter"] >= 1 and row["wall_time_s"] > 0
        curve = doc["curves"][row["method"]]
        assert len(curve["time_s"]) == len(curve["relative_error"]) >= 2
        assert np.all(np.diff(curve["time_s"]) >= 0)
    nmf_sc = next(r for r in doc["methods"] if r["method"] == "nmf_sc")
    ((key, target),) = doc["nmf_sc_params"].items()
    achieved = nmf_sc["sparseness_W_mean" if key == "sparseness_w" else "sparseness_H_mean"]
    assert achieved == pytest.approx(target, abs=1e-6)
    table = (out / "compare" / f"{dataset}.md").read_text()
    assert all(m in table for m in methods)
    for suffix in ("_bases.png", "_bases.pdf", "_curves.png"):
        assert (out / "compare" / f"{dataset}{suffix}").stat().st_size > 0


@pytest.mark.parametrize("dataset", ["swimmer", "bars"])
def test_compare_quick_on_synthetic_data(dataset, tmp_path):
    doc = _run(dataset, tmp_path)
    _check(doc, dataset, tmp_path)
    for row in doc["methods"]:
        assert 0.0 <= row["part_recovery"] <= 1.0


def test_compare_includes_tuned_sklearn_when_installed(tmp_path):
    pytest.importorskip("sklearn")
    doc = _run("bars", tmp_path)
    rows = {row["method"]: row for row in doc["methods"]}
    assert "sklearn_cd" in rows
    tuning = doc["sklearn_l1_tuning"]
    assert tuning["penalty_on"] == "W" and tuning["target_sparseness"] == 0.74
    if rows["sklearn_cd"]["sparseness_W_mean"] >= tuning["target_sparseness"]:
        assert tuning["alpha"] is None and "sklearn_cd_l1" not in rows
    else:
        assert tuning["alpha"] > 0 and tuning["fits"] >= 2 and "sklearn_cd_l1" in rows


@pytest.mark.realdata
def test_compare_quick_on_real_data(tmp_path, require_real_data):
    doc = _run("orl", tmp_path)
    _check(doc, "orl", tmp_path)
    assert all(row["locality_mean"] is not None for row in doc["methods"])
