"""Every claim across seeds: ``python -m reproduce robustness [--seeds 0 1 2 3 4]``.

Each figure's claims come from one random start (seed 0). This target runs
every experiment behind Figures 1, 3, 4, 5 and Section 5 once per seed (the
seed draws the random start and, for the natural images, which patches are
sampled), computes every figure's claims from each seed's runs exactly as the
figure scripts do, and repeats Figure 6's projection trials per seed. Written to
``<out>/robustness.json`` (every claim for every seed, the spread of each number
and, for every yes/no claim, whether it holds for every seed),
``<out>/robustness.md`` (the same tables, by internal key) and
``<out>/robustness.png``/``.pdf``: one panel per claim of the paper, in words,
one dot per seed (:func:`reproduce._claims.seeds_figure`). The reproduction
page (``python -m reproduce.page``) reads the JSON.

``python -m reproduce.robustness [--out figures]`` redraws the PNG and PDF from
``<out>/robustness.json`` and runs nothing: the drawing is not part of the code
version, so a new drawing needs no new run.

Not part of ``all`` and not run in CI: with five seeds it runs the whole
suite five times (about 15 minutes a seed on 2 cores). Runs are cached like the
figures' (seed 0 reuses ``all``'s cache in the same output folder, under the
same ``--max-time``).
"""

from __future__ import annotations

from reproduce import fig6
from reproduce._claims import (
    CLAIMS,
    constraint_error,
    figure_claims,
    flatten,
    fmt,
    runs_needed,
    seeds_figure,
    shown_in_tables,
)
from reproduce._figure import run_all
from reproduce._harness import figure_json
from reproduce._output import write_figure_set
from reproduce.experiments import pick

DEFAULT_SEEDS = (0, 1, 2, 3, 4)
CAPTION = (
    "Every claim of the reproduction for several random seeds: one dot per seed for "
    "each score behind a claim."
)


def seed_claims(options):
    """Flattened claims of every figure (and Figure 6) and the runs' summaries, for one seed."""
    results = run_all(pick(*runs_needed()), options)
    claims = figure_claims(results)
    dims = fig6.QUICK_DIMS if options.quick else fig6.DIMS
    trials = fig6.QUICK_TRIALS if options.quick else fig6.TRIALS
    passes, worst = fig6.compute(dims, fig6.LEVELS, trials, options.seed)
    six = fig6.claims(dims, fig6.LEVELS, passes, worst)
    claims["fig6"] = {k: six[k] for k in ("largest_passes_whole_grid", "bound_holds")}
    claims["constraints"] = {"max_error_of_achieved_sparseness": constraint_error(results)}
    runs = {
        name: {
            key: run.stats[key] for key in ("n_iter", "stop_reason", "relative_error", "run_time_s")
        }
        for name, run in results.items()
    }
    return flatten(claims), runs


def aggregate(flat_by_seed):
    """Per claim path: the value for each seed, and its spread or whether it always holds."""
    table = {}
    for path in flat_by_seed[0]:
        values = [flat.get(path) for flat in flat_by_seed]
        row = {"values": values}
        if all(isinstance(v, bool) for v in values):
            row["holds_for_seeds"] = sum(values)
            row["holds_for_every_seed"] = all(values)
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            row.update(min=min(values), max=max(values), spread=max(values) - min(values))
        table[path] = row
    return table


def markdown(seeds, table):
    """The two tables of REPRODUCTION.md: yes/no claims, then the numbers behind them."""
    head = "| claim | " + " | ".join(f"seed {s}" for s in seeds)
    rule = "|---|" + "---:|" * len(seeds)
    lines = ["### Yes/no claims", "", head + " | every seed |", rule + "---|"]
    for path, row in table.items():
        if "holds_for_every_seed" in row and shown_in_tables(path):
            cells = " | ".join(fmt(v) for v in row["values"])
            lines.append(f"| {path} | {cells} | {fmt(row['holds_for_every_seed'])} |")
    lines += ["", "### The numbers behind them", "", head + " | spread |", rule + "---:|"]
    for path, row in table.items():
        if "spread" in row and shown_in_tables(path):
            cells = " | ".join(fmt(v) for v in row["values"])
            lines.append(f"| {path} | {cells} | {fmt(row['spread'])} |")
    return "\n".join(lines) + "\n"


def draw(doc):
    """The seeds figure of a robustness JSON document (the file's contents, or
    the payload :func:`main` writes into it)."""
    return seeds_figure(CLAIMS, doc["claims"], doc["parameters"]["seeds"])


def redraw(out_dir="figures"):
    """Redraw ``<out_dir>/robustness.png`` and ``.pdf`` from ``<out_dir>/robustness.json``
    (left as it is); returns the two paths. Runs nothing."""
    import json
    from pathlib import Path

    from nmfsc.plotting import save_figure

    out_dir = Path(out_dir)
    doc = json.loads((out_dir / "robustness.json").read_text(encoding="utf-8"))
    return list(save_figure(draw(doc), out_dir / "robustness"))


def main(options, seeds=DEFAULT_SEEDS):
    """Run every seed, write robustness.json/.md/.png/.pdf; return the paths."""
    import dataclasses

    from nmfsc.atomic import write_atomic

    flat_by_seed, runs_by_seed = [], {}
    for seed in seeds:
        print(f"[robustness] seed {seed}", flush=True)
        flat, runs = seed_claims(dataclasses.replace(options, seed=seed))
        flat_by_seed.append(flat)
        runs_by_seed[str(seed)] = runs
    table = aggregate(flat_by_seed)
    failing = [p for p, r in table.items() if r.get("holds_for_every_seed") is False]
    payload = {
        "parameters": {
            "seeds": list(seeds),
            "figures": ["fig1", "fig3", "fig4", "fig5", "sec5", "fig6"],
        },
        "runs": runs_by_seed,
        "claims": table,
        "summary": {
            "yes_no_claims": sum("holds_for_every_seed" in r for r in table.values()),
            "fail_for_some_seed": failing,
            "fail_for_some_seed_text": ", ".join(
                f"{p} ({table[p]['holds_for_seeds']} of {len(seeds)} seeds)" for p in failing
            )
            or "none",
        },
        "seed": list(seeds),  # the seeds, in place of the --seed option
    }
    text = markdown(seeds, table)
    out = options.out_dir
    write_atomic(out / "robustness.md", text)
    fig = draw(payload)
    paths = write_figure_set(
        fig, out, "robustness", figure_json(options, "robustness", CAPTION, payload)
    )
    return [*paths, out / "robustness.md"]


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m reproduce.robustness",
        description="Redraw robustness.png and .pdf from robustness.json (runs nothing; "
        "'python -m reproduce robustness' runs the seeds).",
    )
    parser.add_argument("--out", default="figures", help="folder of robustness.json")
    for path in redraw(parser.parse_args().out):
        print(path)
