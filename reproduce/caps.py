"""Do the capped runs' claims hold at twice the cap? ``python -m reproduce caps``.

Some experiments stop at their iteration cap (``max_iter`` in
:mod:`reproduce.experiments`) rather than by the solvers' convergence rule. For
every run that the cap stopped, this target runs the same experiment (same
seed, same start) with twice the cap, computes every figure's claims with those
longer runs in place of the capped ones, and sets each number beside the one
at the cap. A claim *agrees* when a yes/no claim is the same and a number moves
by at most ``AGREEMENT`` (the claims are quoted to three decimals; a score that
moves less than 0.005 rounds to the same two decimals, or next to them).

Written to ``<out>/caps.json``, ``<out>/caps.md`` (the table quoted in
REPRODUCTION.md) and a strip figure ``<out>/caps.png``/``.pdf``. Not part of
``all`` (the longer runs may take as long as the suite); the runs at the cap
come from ``all``'s cache in the same output folder (same ``--max-time``).
"""

from __future__ import annotations

import dataclasses

from reproduce._claims import (
    figure_claims,
    flatten,
    fmt,
    runs_needed,
    score_panels,
    shown_in_tables,
    strip_figure,
)
from reproduce._figure import run_all
from reproduce._harness import figure_json
from reproduce._output import write_figure_set
from reproduce.experiments import EXPERIMENTS, pick

AGREEMENT = 0.005
CAPTION = (
    "Every score behind a claim, from the runs as the figures use them (stopped at their "
    "iteration cap where one binds) and with the capped runs given twice the cap."
)


def compare_claims(at_cap, at_twice):
    """Per flattened claim: both values, the difference and whether they agree."""
    table = {}
    for path, a in at_cap.items():
        b = at_twice.get(path)
        row = {"at_cap": a, "at_twice_cap": b}
        if isinstance(a, bool) or isinstance(b, bool):
            row["agree"] = a == b
        elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
            row["difference"] = b - a
            row["agree"] = abs(b - a) <= AGREEMENT
        table[path] = row
    return table


def run_summary(cap, twice):
    """What the longer run of one capped experiment did."""
    a, b = cap.stats, twice.stats
    return {
        "max_iter": [cap.experiment.max_iter, twice.experiment.max_iter],
        "n_iter": [a["n_iter"], b["n_iter"]],
        "stop_reason": [a["stop_reason"], b["stop_reason"]],
        "final_objective": [a["final_objective"], b["final_objective"]],
        "objective_relative_decrease": (a["final_objective"] - b["final_objective"])
        / abs(a["final_objective"]),
        "relative_error": [a["relative_error"], b["relative_error"]],
    }


def markdown(runs, table):
    """The tables of REPRODUCTION.md: the longer runs, then every claim at both caps."""
    if not runs:
        return "No run stopped at its iteration cap: every run stopped by the convergence rule.\n"
    lines = [
        "| run | cap | iterations (stop) at 2x cap | objective decrease "
        "| rel. error at cap -> 2x |",
        "|---|---:|---|---:|---|",
    ]
    for name, r in runs.items():
        lines.append(
            f"| {name} | {r['max_iter'][0]} | {r['n_iter'][1]} ({r['stop_reason'][1]}) | "
            f"{r['objective_relative_decrease']:.1e} | "
            f"{r['relative_error'][0]:.4f} -> {r['relative_error'][1]:.4f} |"
        )
    lines += ["", "| claim | at the cap | at twice the cap | agree |", "|---|---:|---:|---|"]
    for path, row in table.items():
        if "agree" in row and shown_in_tables(path):
            lines.append(
                f"| {path} | {fmt(row['at_cap'])} | {fmt(row['at_twice_cap'])} | "
                f"{fmt(row['agree'])} |"
            )
    return "\n".join(lines) + "\n"


def main(options):
    """Run the capped experiments again at twice their cap; write caps.*; return the paths."""
    from nmfsc.atomic import write_atomic

    at_cap = run_all(pick(*runs_needed()), options)
    capped = [n for n, run in at_cap.items() if run.stats["stop_reason"] == "max_iter"]
    longer = [
        dataclasses.replace(EXPERIMENTS[n], max_iter=2 * EXPERIMENTS[n].max_iter) for n in capped
    ]
    twice = run_all(longer, options)
    flat_cap = flatten(figure_claims(at_cap))
    flat_twice = flatten(figure_claims({**at_cap, **twice}))
    table = compare_claims(flat_cap, flat_twice)
    runs = {n: run_summary(at_cap[n], twice[n]) for n in capped}
    disagree = [p for p, row in table.items() if row.get("agree") is False]
    payload = {
        "parameters": {"agreement": AGREEMENT, "capped_runs": capped},
        "runs": runs,
        "claims": table,
        "summary": {
            "all_agree": not disagree,
            "disagree": disagree,
            "disagree_text": ", ".join(disagree) or "none",
            "capped_runs_text": ", ".join(capped) or "none",
        },
    }
    out = options.out_dir
    write_atomic(out / "caps.md", markdown(runs, table))
    fig = strip_figure(
        score_panels([flat_cap, flat_twice]), ["at the cap", "twice the cap"], CAPTION
    )
    paths = write_figure_set(fig, out, "caps", figure_json(options, "caps", CAPTION, payload))
    return [*paths, out / "caps.md"]
