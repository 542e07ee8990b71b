"""Every figure script runs in --quick mode on the real data and writes sane JSON."""

import json

import numpy as np
import pytest

from reproduce import FIGURES
from reproduce.__main__ import main as reproduce_main

pytestmark = [pytest.mark.realdata, pytest.mark.slow]  # `all --quick` on the real data

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


def test_robustness_quick_reports_every_claim_for_each_seed(quick_outputs):
    out = str(quick_outputs)
    assert (
        reproduce_main(
            ["robustness", "--quick", "--seeds", "0", "1", "--out", out, "--no-progress"]
        )
        == 0
    )
    doc = json.loads((quick_outputs / "robustness.json").read_text())
    assert doc["parameters"]["seeds"] == [0, 1]
    assert set(doc["runs"]) == {"0", "1"}
    fig4 = json.loads((quick_outputs / "fig4.json").read_text())["claims"]
    row = doc["claims"]["fig4 / locality_rises_with_sW"]
    # seed 0's value is the one the figure itself reports (same cached runs)
    assert row["values"][0] == fig4["locality_rises_with_sW"]
    assert row["holds_for_every_seed"] == all(row["values"])
    loc = doc["claims"]["fig4 / locality_mean / fig4a"]
    assert loc["values"][0] == fig4["locality_mean"]["fig4a"]
    assert loc["spread"] == max(loc["values"]) - min(loc["values"])
    assert "fig6 / bound_holds" in doc["claims"]
    failing = {p for p, r in doc["claims"].items() if r.get("holds_for_every_seed") is False}
    assert set(doc["summary"]["fail_for_some_seed"]) == failing
    table = (quick_outputs / "robustness.md").read_text()
    assert "| fig4 / locality_rises_with_sW |" in table
    assert (quick_outputs / "robustness.png").stat().st_size > 0


def test_caps_quick_sets_each_claim_beside_the_longer_run(quick_outputs):
    out = str(quick_outputs)
    assert reproduce_main(["caps", "--quick", "--out", out, "--no-progress"]) == 0
    doc = json.loads((quick_outputs / "caps.json").read_text())
    # in --quick mode every run stops at its (tiny) iteration budget
    assert set(doc["parameters"]["capped_runs"]) == set(doc["runs"])
    for path, row in doc["claims"].items():
        if isinstance(row["at_cap"], bool):
            assert row["agree"] == (row["at_cap"] == row["at_twice_cap"]), path
        elif "difference" in row:
            assert row["agree"] == (abs(row["difference"]) <= doc["parameters"]["agreement"])
    assert doc["summary"]["all_agree"] == (not doc["summary"]["disagree"])


def test_fig5_reports_its_oriented_share(quick_outputs):
    claims = json.loads((quick_outputs / "fig5.json").read_text())["claims"]
    for run in ("fig5", "fig1c"):
        share = claims["oriented_share"][run]
        assert set(share) == {"0.4", "0.5"}
        assert 0.0 <= share["0.5"] <= share["0.4"] <= 1.0


def test_fig5_longer_prints_the_oriented_share(capsys, require_real_data):
    from reproduce import fig5_longer

    fig5_longer.main(["--max-iter", "2"])
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["iteration"] == 2
    assert 0.0 <= last["share_above_0.5"] <= last["share_above_0.4"] <= 1.0
    assert np.isfinite(last["objective"])


def test_code_version_covers_what_decides_the_figures_and_nothing_else():
    """The solvers, kernels and data code are hashed; the Dask backend, the
    accelerated solver, the comparison, the command line and the drawing are
    not, so changing them keeps the figures' code version (and reuses cached
    runs)."""
    from reproduce._harness import code_files

    names = {p.relative_to(p.parents[1]).as_posix() for p in code_files()}
    for decides in (
        "solvers/hoyer.py",
        "solvers/registry.py",  # the table: which steps "nmf_sc" runs
        "_kernels/sparse_projection.py",
        "_kernels/bracket.py",
    ):
        assert decides in names
    assert "reproduce/_harness.py" in names
    for aside in (
        "dask_backend/steps.py",
        "comparison/_runner.py",
        "_kernels/rowstats.py",
        "solvers/accelerated.py",
        "cli.py",
        "_commands.py",
        "readers.py",
        "_parsers.py",
    ):
        assert aside not in names
    for decides in ("datasets/catalog.py", "datasets/_readers.py", "datasets/_preprocess.py"):
        assert decides in names
    assert not any(n.endswith(("plotting.py", "estimator.py")) for n in names)
