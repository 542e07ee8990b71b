"""Every figure script runs in --quick mode on the real data and writes sane JSON."""

import json

import numpy as np
import pytest

from reproduce import FIGURES
from reproduce.__main__ import main as reproduce_main

pytestmark = pytest.mark.realdata

COMMON_KEYS = {"figure", "caption", "quick", "seed", "versions", "claims"}
RUN_KEYS = {
    "n_iter",
    "stop_reason",
    "run_time_s",
    "final_objective",
    "relative_error",
    "sparseness_W_columns",
    "sparseness_H_rows",
    "scores",
}


@pytest.fixture(scope="module")
def quick_outputs(tmp_path_factory, require_real_data):
    out = tmp_path_factory.mktemp("figures")
    assert reproduce_main(["all", "--quick", "--out", str(out), "--no-progress"]) == 0
    return out


@pytest.mark.parametrize("name", FIGURES)
def test_quick_run_writes_png_pdf_json(quick_outputs, name):
    for suffix in (".png", ".pdf", ".json"):
        path = quick_outputs / f"{name}{suffix}"
        assert path.is_file() and path.stat().st_size > 0, path
    doc = json.loads((quick_outputs / f"{name}.json").read_text())
    assert COMMON_KEYS <= set(doc)
    assert doc["quick"] is True and doc["figure"] == name
    for entry in doc.get("experiments", {}).values():
        assert RUN_KEYS <= set(entry)
        assert entry["n_iter"] >= 1
        assert np.isfinite(entry["final_objective"])
        assert 0.0 < entry["relative_error"] < 1.5
        assert entry["stop_reason"] in {"tol", "step_size", "max_iter", "max_time"}


def test_constrained_runs_meet_their_targets(quick_outputs):
    for name in ("fig3", "fig4", "fig5"):
        doc = json.loads((quick_outputs / f"{name}.json").read_text())
        for entry in doc["experiments"].values():
            params = entry["params"]
            for key, field in (
                ("sparseness_w", "sparseness_W_columns"),
                ("sparseness_h", "sparseness_H_rows"),
            ):
                if key in params:
                    got = entry[field]
                    assert got["min"] == pytest.approx(params[key], abs=1e-6)
                    assert got["max"] == pytest.approx(params[key], abs=1e-6)


def test_fig6_quick_checks_passes_and_constraints(quick_outputs):
    claims = json.loads((quick_outputs / "fig6.json").read_text())["claims"]
    assert claims["constraints"]["all_within_1e-8_and_nonnegative"] is True
    assert claims["largest_passes_whole_grid"] <= 2 * claims["paper_bound"]
    assert claims["bound_holds"] == (claims["largest_passes_whole_grid"] <= claims["paper_bound"])
    worst = claims["worst_case_desired_0.9_initial_0.1"]
    assert worst["min"] <= worst["mean"] <= worst["max"]
    assert claims["max_abs_difference_fast_vs_hoyer"] < 1e-10


def test_rerun_uses_the_cache(quick_outputs, capsys):
    assert reproduce_main(["fig1", "--quick", "--out", str(quick_outputs), "--no-progress"]) == 0
    assert "cached result" in capsys.readouterr().err
    doc = json.loads((quick_outputs / "fig1.json").read_text())
    assert all(e["cached"] for e in doc["experiments"].values())


def test_convergence_figure_reads_every_run_of_the_figures(quick_outputs):
    doc = json.loads((quick_outputs / "convergence.json").read_text())
    runs = doc["runs"]
    names = set()
    for source in ("fig1", "fig3", "fig4", "fig5", "sec5"):
        names |= set(json.loads((quick_outputs / f"{source}.json").read_text())["experiments"])
    assert set(runs) == names
    claims = doc["claims"]
    assert claims["n_runs"] == len(names)
    capped = {n for n, r in runs.items() if r["stop_reason"] in ("max_iter", "max_time")}
    assert set(claims["stopped_by_cap_last_change"]) == capped
    assert set(claims["stopped_by_convergence_rule"]) == set(runs) - capped
