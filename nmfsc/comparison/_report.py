"""The report writers of :class:`nmfsc.Comparison`: summaries, Markdown, CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np

from nmfsc.comparison._methods import METHOD_DESCRIPTIONS, METHODS

__all__ = [
    "COLUMNS",
    "SUMMARY_KEYS",
    "csv_text",
    "dead_text",
    "failures_text",
    "holdout_ranking",
    "json_document",
    "markdown",
    "summarize",
]

#: (row key, column title, format) of the per-run table, in order.
COLUMNS = (
    ("method", "method", "{}"),
    ("seed", "seed", "{}"),
    ("relative_error", "rel. error", "{:.4f}"),
    ("rescaled_relative_error", "rescaled rel. error", "{:.4f}"),
    ("fitted_error", "fitted-entries error", "{:.4f}"),
    ("holdout_error", "held-out error", "{:.4f}"),
    ("holdout_fit", "fitted to", "{}"),
    ("sparseness_W", "sparseness W", "{:.3f}"),
    ("sparseness_H", "sparseness H", "{:.3f}"),
    ("locality", "locality", "{:.3f}"),
    ("orientation", "orientation", "{:.3f}"),
    ("part_recovery", "part recovery", "{:.3f}"),
    ("dead_samples", "dead samples", "{:g}"),
    ("stationarity", "stationarity", "{:.1e}"),
    ("n_iter", "iterations", "{:g}"),
    ("stop_reason", "stop", "{}"),
    ("time_s", "time (s)", "{:.2f}"),
    ("alpha", "L1 alpha", "{:.3g}"),
)
#: Stop reasons of a converged run (any other is marked "not converged").
CONVERGED = ("tol", "step_size")
#: Numeric row keys summarised over seeds (median, min, max).
SUMMARY_KEYS = (
    "relative_error",
    "rescaled_relative_error",
    "fitted_error",
    "holdout_error",
    "sparseness_W",
    "sparseness_H",
    "locality",
    "orientation",
    "part_recovery",
    "dead_samples",
    "stationarity",
    "n_iter",
    "time_s",
    "alpha",
)
CSV_FIELDS = tuple(key for key, _, _ in COLUMNS[:-1]) + (
    "zero_components",
    "rescale_c",
    "alpha",
    "matched",
    "note",
)
WHY_BOTH = (
    "Both errors are shown because a penalty can shrink a factor: Sparse NMF's L1 term "
    "on H pulls WH towards zero, so its plain relative error ||V - WH|| / ||V|| is large "
    "although a rescaled c·WH fits V well; the rescaled error min_c ||V - c·WH|| / ||V|| "
    "(c = <V, WH> / ||WH||²) compares the fits themselves."
)


def summarize(rows):
    """Per-method summaries over seeds: ``<key>_median``, ``_min``, ``_max``
    over the runs that did not fail (``stop_reason`` ``"failed"``), None
    where every run failed."""
    out = []
    for method in METHODS:
        group = [r for r in rows if r["method"] == method]
        if not group:
            continue
        entry = {"method": method, "n_seeds": len(group)}
        ran = [r for r in group if r["stop_reason"] != "failed"]
        for key in SUMMARY_KEYS:
            values = [r[key] for r in ran if r.get(key) is not None]
            if not any(key in r for r in group):
                continue
            if values:
                entry[f"{key}_median"] = float(np.median(values))
                entry[f"{key}_min"] = float(np.min(values))
                entry[f"{key}_max"] = float(np.max(values))
            else:
                entry[f"{key}_median"] = entry[f"{key}_min"] = entry[f"{key}_max"] = None
        reasons = [r["stop_reason"] for r in group]
        entry["n_converged"] = sum(reason in CONVERGED for reason in reasons)
        entry["n_failed"] = len(group) - len(ran)
        entry["stop_reasons"] = ", ".join(
            f"{s} x{reasons.count(s)}" for s in dict.fromkeys(reasons)
        )
        if "matched" in group[0]:
            entry["matched"] = f"{sum(bool(r['matched']) for r in group)}/{len(group)}"
        out.append(entry)
    return out


def _cell(value, fmt):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return fmt.format(value)


def _columns(rows):
    return [c for c in COLUMNS if any(r.get(c[0]) is not None for r in rows)]


def run_table(rows) -> str:
    """The per-run Markdown table (one row per method and seed)."""
    columns = _columns(rows)
    lines = [
        "| " + " | ".join(t for _, t, _ in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for row in rows:
        cells = [_cell(row.get(k), f) for k, _, f in columns]
        if row.get("matched") is False:
            cells[0] += " (not matched)"
        if row.get("stop_reason") == "failed":
            cells[0] += " (failed)"
        elif row.get("stop_reason") not in CONVERGED:
            cells[0] += " (not converged)"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def failures_text(rows) -> str:
    """One line per failed run (``stop_reason`` ``"failed"``): why it failed."""
    failed = [r for r in rows if r.get("stop_reason") == "failed"]
    if not failed:
        return ""
    lines = [f"- {r['method']}, seed {r['seed']}: {r['note']}" for r in failed]
    return (
        "Failed runs (no number of theirs enters a ranking; a fit worse than "
        "W H = 0 is a failed fit whatever stopped it):\n" + "\n".join(lines)
    )


def summary_table(summary, rows) -> str:
    """The per-method Markdown table: median [min - max] over seeds."""
    columns = [c for c in _columns(rows) if c[0] not in ("seed", "stop_reason", "holdout_fit")]
    lines = [
        "| " + " | ".join(t for _, t, _ in columns) + " | stop |",
        "|" + "|".join("---" for _ in columns) + "|---|",
    ]
    for entry in summary:
        cells = [entry["method"] + (f" (matched {entry['matched']})" if "matched" in entry else "")]
        if entry["n_converged"] < entry["n_seeds"]:
            cells[0] += f" (converged {entry['n_converged']}/{entry['n_seeds']})"
        for key, _, fmt in columns[1:]:
            med, lo, hi = (entry.get(f"{key}_{s}") for s in ("median", "min", "max"))
            if med is None:
                cells.append("n/a")
            elif _cell(lo, fmt) == _cell(hi, fmt):
                cells.append(_cell(med, fmt))
            else:
                cells.append(f"{_cell(med, fmt)} [{_cell(lo, fmt)}–{_cell(hi, fmt)}]")
        lines.append("| " + " | ".join(cells) + f" | {entry['stop_reasons']} |")
    return "\n".join(lines) + "\n"


def _budget_text(s):
    time_cap = "no time cap" if s["max_time"] is None else f"max_time {s['max_time']:g} s per run"
    return (
        f"Budgets: max_iter {s['max_iter']}, tol {s['tol']:g}, {time_cap}. Every method, "
        "scikit-learn's included, runs to the same rule: it stops when the relative "
        "decrease of its own objective over 10 iterations falls below tol (scikit-learn "
        "is run in chunks of 10 iterations, each continued from the last one's factors, "
        "and its objective evaluated after each chunk; its own, looser stopping rules are "
        "not used). A run stopped by max_iter, max_time or a stalled line search (stalled) "
        "is marked (not converged); a run that raised an error or fits V worse than "
        "W H = 0 (relative error above 1) is marked (failed). The rule measures a rate, "
        "not a distance to a solution: the column stationarity (the projected gradient "
        "relative to the gradient's terms, 0 at a stationary point; for the fits of the "
        "squared error without a penalty, a masked fit's on the entries it fits) says how "
        "far each fit still is."
    )


def _legend(rows):
    """One line per method of the table: what the row is."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    return "Methods:\n" + "\n".join(f"- {m}: {METHOD_DESCRIPTIONS[m]}" for m in methods)


def _matched_text(records):
    if not records:
        return ""
    r0 = records[0]
    parts = [
        f"seed {r['seed']}: alpha {r['alpha']:.3g} → {_cell(r['achieved'], '{:.3f}')} "
        f"(target {r['target']:.3f}, {r['fits']} fits)"
        for r in records
    ]
    text = (
        "sklearn_cd_l1 is scikit-learn's CD NMF with an L1 penalty of one weight on both "
        "factors (l1_ratio 1, alpha_H 'same'), the weight found by log-scale bisection "
        f"until the mean sparseness of {r0['matched_on']} is within 0.01 of nmf_sc's: "
        + "; ".join(parts)
        + "."
    )
    notes = [f"seed {r['seed']}: {r['note']}" for r in records if r["note"]]
    return text + ("\n\n" + "\n".join(f"- {n}" for n in notes) if notes else "")


def _holdout_setup(s) -> str:
    """The held-out settings as a sentence of the report's introduction."""
    parts = []
    if s.get("holdout") is not None:
        parts.append(
            f" {100 * s['holdout']:g} % of the observed entries are hidden (drawn with "
            f"holdout_seed {s['holdout_seed']}) and scored as the held-out error."
        )
    if s.get("missing_values") == "nan":
        parts.append(" NaN entries are missing: neither fitted nor scored.")
    zeros = s.get("sparse_zeros")
    if zeros == "observed":
        parts.append(" V is sparse and its zeros are observed: hidden and fitted like any entry.")
    elif zeros == "missing":
        parts.append(" V is sparse and only its stored entries are observed.")
    return "".join(parts)


def holdout_ranking(comparison) -> str:
    """The held-out ranking: each method's median held-out error over the seeds
    where it did not fail, beside predicting zero (1 by definition) and
    predicting each hidden entry by its row's training mean; "" when nothing
    was hidden."""
    baselines = comparison.settings.get("holdout_baselines") or {}
    if baselines.get("zero_fill") is None:
        return ""
    entries = [
        (baselines["row_mean_fill"], "*row means* (each hidden entry predicted by its row's mean)"),
        (baselines["zero_fill"], "*zero* (every hidden entry predicted 0)"),
    ]
    failed = []
    for entry in comparison.summary:
        value = entry.get("holdout_error_median")
        if value is None:
            failed.append(entry["method"])
            continue
        ran = entry["n_seeds"] - entry["n_failed"]
        seeds = "" if ran == entry["n_seeds"] else f" ({ran} of {entry['n_seeds']} seeds)"
        entries.append((value, entry["method"] + seeds))
    entries.sort(key=lambda e: e[0])
    lines = [
        "| rank | method or trivial prediction | held-out error |",
        "|---|---|---|",
        *(f"| {i} | {name} | {value:.4f} |" for i, (value, name) in enumerate(entries, 1)),
    ]
    text = (
        "## Held-out ranking\n\nMedian relative error on the hidden entries over the seeds "
        "where a method did not fail, beside two trivial predictions: a method below "
        "*row means* has learnt something the row means do not say; one above *zero* is "
        "failed.\n\n" + "\n".join(lines)
    )
    if failed:
        text += f"\n\nFailed on every seed, so not ranked: {', '.join(failed)}."
    return text


def dead_text(rows, n_samples) -> str:
    """One line per run that left samples dead (all-zero coefficients although
    the fit would gain by giving them some): its converged error describes a
    fit of fewer samples than V has."""
    dead = [r for r in rows if r.get("dead_samples")]
    if not dead:
        return ""
    lines = [
        f"- {r['method']}, seed {r['seed']}: {r['dead_samples']:,} of {n_samples:,} samples "
        f"({100 * r['dead_samples'] / n_samples:.0f} %)"
        for r in dead
    ]
    return (
        "Dead samples (columns of H all zero although a coefficient would lower the "
        "error; at a high sparseness of W no sparse basis vector may overlap a sample, "
        "and the fit describes only the others):\n" + "\n".join(lines)
    )


def markdown(comparison, quick=False) -> str:
    """The Markdown report of a :class:`~nmfsc.Comparison`."""
    s = comparison.settings
    title = f"# Comparison on {s['name']}" + (
        " — QUICK (smoke test, not a result)" if quick else ""
    )
    seeds = ", ".join(map(str, s["seeds"]))
    sparse = ", ".join(
        f"{k} {v:g}"
        for k, v in (("sparseness_w", s["sparseness_w"]), ("sparseness_h", s["sparseness_h"]))
        if v is not None
    )
    intro = (
        f"V is {s['shape'][0]} x {s['shape'][1]} (features x samples), M = "
        f"{s['n_components']}; nmf_sc at {sparse or '—'}, sparse_nmf at alpha "
        f"{s['sparse_nmf_alpha']:g}. Seeds {seeds}: for each seed every method starts "
        "from the same W0, H0."
    ) + _holdout_setup(s)
    blocks = [
        title,
        intro,
        _budget_text(s),
        _legend(comparison.rows),
        WHY_BOTH,
        _matched_text(comparison.matched),
        "## Summary over seeds (median [min–max])",
        summary_table(comparison.summary, comparison.rows),
        holdout_ranking(comparison),
        "## Every run",
        run_table(comparison.rows),
        failures_text(comparison.rows),
        dead_text(comparison.rows, s["shape"][1]),
    ]
    return "\n\n".join(b.strip("\n") for b in blocks if b) + "\n"


def csv_text(rows) -> str:
    """The per-run table as CSV (empty cells for values that do not apply)."""
    buffer = io.StringIO()
    fields = [f for f in dict.fromkeys(CSV_FIELDS) if any(f in r for r in rows)]
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row[k] for k in fields})
    return buffer.getvalue()


def json_document(comparison, quick=False) -> dict:
    """Everything but the factors, as one JSON-ready dict."""
    return {
        "name": comparison.settings["name"],
        "quick": bool(quick),
        "settings": comparison.settings,
        "rows": comparison.rows,
        "summary": comparison.summary,
        "sklearn_cd_l1_search": comparison.matched,
        "curves": comparison.curves,
        "versions": comparison.versions,
    }


def json_text(comparison, quick=False) -> str:
    return json.dumps(json_document(comparison, quick), indent=2, allow_nan=False) + "\n"
