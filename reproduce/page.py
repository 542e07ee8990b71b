"""The reproduction page, written from the figures' JSON files.

``python -m reproduce.page [--out REPRODUCTION.md]`` writes the page a reader
reads: each claim of the paper in words, the paper's caption beside our figure,
the numbers that decide the claim for every seed of ``python -m reproduce
robustness``, and links to the raw JSON. Every number on it is read from
``figures/*.json`` (written by ``python -m reproduce``), none typed by hand; the
site builds its Reproduction page from the same function (``docs/conf.py``),
with its own links, and a test checks that the committed REPRODUCTION.md is the
page of the committed figures. Run it after the figures change.

The claims, their words and the rows of ``robustness.json`` that decide them
are :data:`reproduce._claims.CLAIMS`. Nothing here is part of the code version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from reproduce._claims import CLAIMS, SEP, flatten, fmt, holds_by_seed, run_words
from reproduce.experiments import METHOD_WORDS

ROOT = Path(__file__).resolve().parents[1]

# The paper's figures in the page's order, with a heading in words.
FIGURES = {
    "fig1": "Figure 1: standard NMF on faces and natural images",
    "fig2": "Figure 2: degrees of sparseness",
    "fig3": "Figure 3: sparseness constraints on the CBCL faces",
    "fig4": "Figure 4: a sparser basis on the ORL faces",
    "fig5": "Figure 5: sparse coefficients on natural images",
    "fig6": "Figure 6: passes of the projection",
    "sec5": "Section 5: Local NMF and Sparse NMF",
}
DATA_WORDS = {"cbcl": "CBCL faces", "orl": "ORL faces", "natural": "natural images"}
BLOBS = "Why some of Figure 5's features stay blobs"
# Every JSON file the page reads, offered for download at its end.
FILES = (*FIGURES, "convergence", "caps", "robustness")


@dataclass(frozen=True)
class Links:
    """Where the page's links point: the repository (REPRODUCTION.md at its root)
    or the site (``up`` leads from the page's folder to docs/: ``"../"`` for a
    page in docs/paper/)."""

    site: bool
    up: str = ""

    def image(self, name, alt):
        """Our figure, linked to its own page (the site) or to the full-size image."""
        if self.site:
            return f"[![{alt}]({self.up}../figures/{name}.png)]({self.up}paper/{name}.md)"
        return f"[![{alt}](figures/{name}.png)](figures/{name}.png)"

    def full_size(self, name, alt):
        """A figure drawn for the page's width that opens full size when clicked."""
        if self.site:
            return f"```{{image}} {self.up}../figures/{name}.png\n:alt: {alt}\n:width: 100%\n```"
        return f"[![{alt}](figures/{name}.png)](figures/{name}.png)"

    def download(self, filename):
        if self.site:
            return f"{{download}}`{filename} <{self.up}../figures/{filename}>`"
        return f"[{filename}](figures/{filename})"

    def page(self, name):
        """A guide of the site, by its name under docs/ (``settings``, ``paper/fig4``)."""
        return f"{self.up}{name}.md" if self.site else f"docs/{name}.md"

    @property
    def changelog(self):
        return self.page("about/changelog") if self.site else "CHANGELOG.md"


REPOSITORY = Links(site=False)
SITE = Links(site=True)
SITE_PAPER = Links(site=True, up="../")  # a page in docs/paper/


def load(figures_dir):
    """Every JSON file the page reads, by name."""
    folder = Path(figures_dir)
    docs = {}
    for name in FILES:
        path = folder / f"{name}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: run 'python -m reproduce {name}'")
        docs[name] = json.loads(path.read_text(encoding="utf-8"))
    return docs


def _figure_value(docs, path):
    """A flattened claim's value in its own figure's JSON (seed 0), or None."""
    figure = path.split(SEP, 1)[0]
    if figure not in docs:
        return None
    return flatten(docs[figure]["claims"], figure).get(path)


def _yes(value):
    return "yes" if value else "**no**"


def _caption(doc):
    return " ".join(doc["caption"].split())


def _seed_table(claim, table, seeds):
    head = "| | " + " | ".join(f"seed {s}" for s in seeds) + " |"
    lines = [head, "|---|" + "---:|" * len(seeds)]
    for path, label in (*claim.numbers, *claim.more):
        lines.append(f"| {label} | " + " | ".join(fmt(v) for v in table[path]["values"]) + " |")
    held = holds_by_seed(claim, table)
    lines.append("| **the claim holds** | " + " | ".join(_yes(h) for h in held) + " |")
    return lines


def _verdict(held):
    if all(held):
        return f"holds for every seed ({len(held)} of {len(held)})"
    return f"holds for {sum(held)} of {len(held)} seeds"


def _in_our_figure(claim, docs):
    """The deciding numbers as the figure's own JSON has them (seed 0)."""
    parts = []
    for path, label in claim.numbers:
        value = _figure_value(docs, path)
        if value is not None:
            parts.append(f"{label} **{fmt(value)}**")
    verdicts = [_figure_value(docs, p) for p in claim.verdicts]
    if not parts or None in verdicts:
        return []
    held = "yes" if all(verdicts) else "no"
    return [f"In our figure (seed 0): {'; '.join(parts)}. The claim holds: **{held}**."]


def _figure_notes(name, docs, table, seeds, links):
    """What a figure's section says beyond its claims' tables."""
    c = docs[name]["claims"]
    if name == "fig2":
        p = docs[name]["parameters"]
        achieved = ", ".join(f"{a:.3f}" for a in c["achieved"])
        nonzero = ", ".join(str(n) for n in c["nonzero_entries"])
        return [
            f"Our Figure 2: the projection took vectors of {p['length']} entries to "
            f"sparseness {achieved} (largest error {c['max_abs_error']:.1e}); they keep "
            f"{nonzero} non-zero entries."
        ]
    if name == "fig5":
        return _blobs(docs, table, seeds, links)
    if name == "fig6":
        worst = c["worst_case_desired_0.9_initial_0.1"]
        pair = c["worst_pair_on_average"]
        p = docs[name]["parameters"]
        at = [d for d, m in zip(worst["dims"], worst["max"], strict=True) if m == max(worst["max"])]
        others = table[f"fig6{SEP}largest_passes_whole_grid"]["values"][1:]
        return [
            f"Our Figure 6: in the worst case (desired sparseness {pair['desired']:g} from "
            f"initial {pair['initial']:g}) the mean number of passes grows from "
            f"{worst['mean'][0]:g} at n = {worst['dims'][0]} to {worst['mean'][-1]:g} at "
            f"n = {worst['dims'][-1]}: slowly, as the paper says. Over the whole grid "
            f"({len(p['dims'])} dimensions, {len(p['levels']) ** 2} pairs of initial and "
            f"desired sparseness, {p['trials']} trials each) the largest count was "
            f"**{c['largest_passes_whole_grid']}**, at n = {', '.join(map(str, at))}; the "
            f"other seeds' draws needed at most {max(others)}. The paper's "
            f"bound of {c['paper_bound']} is a statement about its own trials: another "
            f"random draw can exceed it. Every projection met its L1 and L2 targets to "
            f"{c['constraints']['max_l1_error']:.1e} and was non-negative; the two "
            f'projection kernels ("hoyer" and "fast") count passes the same way and '
            f"agree to {c['max_abs_difference_fast_vs_hoyer']:.1e}."
        ]
    return []


def _blobs(docs, table, seeds, links):
    """Figure 5: why some features stay blobs."""
    c = docs["fig5"]["claims"]
    run = docs["fig5"]["experiments"]["fig5"]
    shares = table[f"fig5{SEP}oriented_share{SEP}fig5{SEP}0.5"]["values"]
    shares4 = table[f"fig5{SEP}oriented_share{SEP}fig5{SEP}0.4"]["values"]
    means = table[f"fig5{SEP}orientation{SEP}fig5{SEP}mean"]["values"]
    plain = table[f"fig5{SEP}oriented_share{SEP}fig1c{SEP}0.5"]["values"]
    n = run["n_components"]
    return [
        f"### {BLOBS}",
        "",
        f"The paper shows oriented, edge-like features. Ours are oriented on average "
        f"(mean orientation {c['orientation']['fig5']['mean']:.3f}, median "
        f"{c['orientation']['fig5']['median']:.3f}, against "
        f"{c['orientation']['fig1c']['mean']:.3f} for plain NMF), but not all {n} are: "
        f"**{c['oriented_share']['fig5']['0.5']:.0%}** have an orientation above 0.5 "
        f"({c['oriented_share']['fig5']['0.4']:.0%} above 0.4), the least oriented "
        f"scores {c['orientation']['fig5']['min']:.2f} ([the scores]({links.page('scores')}) "
        "say what a round blob, an edge and a grating score). "
        f"The run stopped by its convergence rule after {run['n_iter']} iterations. "
        "What we checked:",
        "",
        f"- **The settings**, item by item against the paper "
        f"([settings]({links.page('settings')}), [data sets]({links.page('datasets')})): "
        "Olshausen's whitened images as given, the patch size and sampling, the ON and "
        "OFF channels, the scaling of each row, the number of features, sH on the rows "
        "of H, the start and the step sizes; Hoyer's own code also divides the data by "
        "its maximum before it starts, as ours does.",
        "- **Iterations.** `python -m reproduce.fig5_longer` continues the run past its "
        "stop and prints the share at fixed iterations: thousands of iterations later "
        "the share and the mean orientation are where they were (its output is in the "
        f"[changelog]({links.changelog})). More iterations do not turn the blobs into "
        "edges.",
        f"- **Seeds.** Over seeds {seeds[0]} to {seeds[-1]} the share above 0.5 is "
        f"{min(shares):.0%} to {max(shares):.0%} ({min(shares4):.0%} to {max(shares4):.0%} "
        f"above 0.4) and the mean orientation {min(means):.3f} to {max(means):.3f}: "
        "it is not one unlucky start.",
        "",
        "So neither the run's length, nor the preprocessing, the scale or the seed is "
        "the cause: with these settings the algorithm reaches a basis in which most "
        "features are clearly oriented and the rest are small localised blobs. The "
        "paper shows its features without a score, so we cannot say whether its share "
        "was higher. Plain NMF's share above 0.5 is "
        + (f"{max(plain):.0%}" if max(plain) == 0 else f"at most {max(plain):.0%}")
        + " for every seed.",
    ]


def _notes(docs, links):
    """Where we differ from the paper, or where a reader should know more."""
    sec5 = docs["sec5"]["experiments"]
    fig1 = docs["fig1"]["experiments"]
    c3 = docs["fig3"]["claims"]
    snmf = sorted(
        (r["params"]["alpha"], r["relative_error"])
        for r in sec5.values()
        if METHOD_WORDS[r["solver"]] == "SNMF" and r["dataset"] == "natural"
    )
    large = [(a, e) for a, e in snmf if a > snmf[0][0]]
    lnmf = {
        r["dataset"]: r["relative_error"]
        for r in sec5.values()
        if METHOD_WORDS[r["solver"]] == "LNMF"
    }
    return [
        "## Where we differ from the paper, or where a reader should know more",
        "",
        f"- **Figure 6's bound on the passes**: see [Figure 6](#{_slug(FIGURES['fig6'])}).",
        f"- **Figure 5's blobs**: see [above](#{_slug(BLOBS)}).",
        f"- **Figure 3a's \"slightly higher\".** Plain NMF's mean basis sparseness on "
        f"CBCL is {c3['plain_nmf_cbcl_mean_sparseness_W']:.4f}, a hair below sW of "
        f"Figure 3a as the paper says, from Figure 1a's converged run "
        f"({fig1['fig1a']['n_iter']} iterations); it rises during training.",
        "- **ORL's halving.** The ORL images are halved the way MATLAB's current "
        "`imresize(I, 0.5, 'bilinear')` does, with antialiasing; MATLAB of 2004 did not "
        "antialias by default, so our images are slightly smoother than the paper's. "
        "This changes pixel values, not the claims.",
        "- **Natural images.** The patches are drawn with NumPy's generator, not "
        "MATLAB's, so they differ from the paper's; the sampling rule is the paper's.",
        "- **Sparse NMF with a large alpha.** The update H ← H (Wᵀ C)/(1 + alpha) "
        "shrinks the coefficients towards zero: with alpha "
        + " and ".join(f"{a:g}" for a, _ in large)
        + " the relative errors on natural data are "
        + " and ".join(f"{e:.4g}" for _, e in large)
        + " (the objective D + alpha sum(H) prefers a small H to a good fit). The shapes "
        "of the basis vectors, which the paper compares, are still blobs.",
        f"- **Local NMF's error.** Local NMF optimises the divergence plus its locality "
        f"terms, not the reconstruction; its relative errors ({lnmf['orl']:.3f} on ORL, "
        f"{lnmf['natural']:.3f} on natural data) are not comparable with plain NMF's.",
        "- **Exact zeros.** The projection returns exact zeros where the original MATLAB "
        "returned tiny values; the objective is the same to rounding.",
        "- **Reproducibility.** The seed fixes the random starts and the natural-image "
        "patches (`python -m reproduce all --seed 1` gives another draw). A seed gives "
        "the same bits on one machine with the same BLAS; another processor or BLAS may "
        "change the last bits and, over thousands of iterations, the iteration counts "
        "and the pictures slightly, not the claims.",
    ]


def _runs_table(docs):
    lines = [
        "| run | data | iterations | stopped by | relative error | time |",
        "|---|---|---:|---|---:|---:|",
    ]
    seen = set()
    for name in FIGURES:
        for run, r in docs[name].get("experiments", {}).items():
            if run in seen:
                continue
            seen.add(run)
            lines.append(
                f"| {run_words(run)} | {DATA_WORDS.get(r['dataset'], r['dataset'])} "
                f"| {r['n_iter']} | {r['stop_reason']} "
                f"| {r['relative_error']:.3f} | {r['run_time_s']:.0f} s |"
            )
    return lines


def _about(docs, table, seeds, links):
    conv = docs["convergence"]
    caps = docs["caps"]
    robust = docs["robustness"]
    versions = docs["fig1"]["versions"]
    figure_codes = sorted({docs[n]["versions"]["code_version"] for n in (*FIGURES, "convergence")})
    seed0 = [
        abs(row["values"][0] - _figure_value(docs, path))
        for path, row in table.items()
        if isinstance(_figure_value(docs, path), float)
    ]
    rv = robust["versions"]
    capped = caps["parameters"]["capped_runs"]
    downloads = ", ".join(links.download(f"{name}.json") for name in FILES)
    return [
        "## About these results",
        "",
        "### How the runs stop, and whether they converged",
        "",
        "The original solvers never stopped by themselves. Ours stop at the first of: "
        "the relative change of the objective over a window of iterations below "
        + f"{conv['parameters']['tol']:.0e}".replace("e-0", "e-")
        + " (the convergence rule, `tol`), nmf_sc's step "
        "size vanishing, an iteration budget per run, or a time guard "
        f"(the budgets and guards: [settings]({links.page('settings')})). A run stopped "
        "by its time guard is never drawn over a figure; the next run of the same "
        "command continues it. "
        f"**{conv['claims']['n_stopped_by_convergence_rule']} of "
        f"{conv['claims']['n_runs']} runs** behind the figures stopped by the convergence "
        f"rule ([convergence]({links.page('paper/convergence')})); runs stopped at their "
        f"iteration budget: {'none' if not capped else ', '.join(capped)} "
        f"([capped runs]({links.page('paper/caps')})).",
        "",
        "### The runs behind the figures (seed 0)",
        "",
        *_runs_table(docs),
        "",
        "Each time is the run's wall time as its JSON records it, on the machine "
        "below (slower when the machine is shared with other work).",
        "",
        "### Machine, versions and code",
        "",
        f"The figures: Python {versions['python']}, NumPy {versions['numpy']}, Numba "
        f"{versions['numba']}, SciPy {versions['scipy']}, Matplotlib "
        f"{versions['matplotlib']}, on `{versions['platform']}`; code version "
        + ", ".join(f"`{v}`" for v in figure_codes)
        + f". The seeds ({', '.join(map(str, seeds))}): Python {rv['python']}, NumPy "
        f"{rv['numpy']}, Numba {rv['numba']}, on `{rv['platform']}`; code version "
        f"`{rv['code_version']}`. "
        "The code version is a hash of the code that decides a run's factors; the "
        "drawing and this page are not part of it. The seeds ran before the figures, "
        "on another machine; seed 0's numbers there differ from the figures' own by at "
        f"most {max(seed0):.1e} (the last bits of the BLAS's sums steer a long run's "
        f"path). How the committed figures changed from run to run is in the "
        f"[changelog]({links.changelog}).",
        "",
        "### The raw numbers",
        "",
        f"Every number on this page, with every run's settings, iterations, objective "
        f"and scores: {downloads}. The page is written from them by "
        "`python -m reproduce.page`.",
    ]


def _seeds(docs):
    """robustness.json's claims and seeds, after checking that every yes/no claim
    in it has its words in CLAIMS (none left out of the page)."""
    robust = docs["robustness"]
    table, seeds = robust["claims"], robust["parameters"]["seeds"]
    yes_no = {p for p, r in table.items() if "holds_for_every_seed" in r}
    missing = yes_no - {p for claim in CLAIMS for p in claim.verdicts}
    if missing:
        raise ValueError(f"claims of robustness.json with no words in CLAIMS: {sorted(missing)}")
    return table, seeds


def _summary(table, links):
    """How many claims hold for every seed, a table of them, and the seeds figure."""
    held = {claim.anchor: holds_by_seed(claim, table) for claim in CLAIMS}
    every = [claim for claim in CLAIMS if all(held[claim.anchor])]
    lines = [
        f"**{len(every)} of {len(CLAIMS)} claims hold for every seed.**"
        + "".join(
            f" Not for every seed: [{c.title}](#{_slug(c.title)}) {_verdict(held[c.anchor])}."
            for c in CLAIMS
            if c not in every
        ),
        "",
        "| claim | in the paper | across the seeds |",
        "|---|---|---|",
    ]
    for claim in CLAIMS:
        lines.append(
            f"| [{claim.title}](#{_slug(claim.title)}) | {FIGURES[claim.figure].split(':')[0]} "
            f"| {_verdict(held[claim.anchor])} |"
        )
    return [
        *lines,
        "",
        links.full_size(
            "robustness", "The numbers behind each claim, one dot per seed, one panel per claim"
        ),
        "",
        "*The numbers behind each claim, one dot per seed. Click the figure for full "
        f"size; PDF: {links.download('robustness.pdf')}.*",
    ]


def _claim(claim, docs, table, seeds):
    """One claim: the paper's words, what decides it, our figure's numbers, the seeds."""
    return [
        f"### {claim.title}",
        "",
        f"**The paper says:** {claim.paper}",
        "",
        f"**Decided by:** the {claim.score}; the claim {claim.rule}. It "
        f"**{_verdict(holds_by_seed(claim, table))}**.",
        "",
        *_in_our_figure(claim, docs),
        "",
        *_seed_table(claim, table, seeds),
    ]


def seeds_section(figures_dir=ROOT / "figures", links=REPOSITORY):
    """Every claim across the seeds, for the site's page on the seeds: the
    summary, the seeds figure and each claim's table, under ``###`` headings."""
    docs = load(figures_dir)
    table, seeds = _seeds(docs)
    lines = [*_summary(table, links), ""]
    for claim in CLAIMS:
        lines += [*_claim(claim, docs, table, seeds), ""]
    return "\n".join(_tidy(lines)).strip() + "\n"


def render(figures_dir=ROOT / "figures", links=REPOSITORY):
    """The reproduction page (Markdown) from the JSON files in ``figures_dir``."""
    docs = load(figures_dir)
    table, seeds = _seeds(docs)
    lines = [
        "# Reproduction of Hoyer (2004), claim by claim",
        "",
        "Patrik Hoyer's *Non-negative matrix factorization with sparseness "
        "constraints* (JMLR, 2004) makes its case with figures and a comparison in "
        "its Section 5. Below, each claim is stated in words, the paper's caption is set "
        "beside our figure, and the numbers that decide the claim are given for "
        f"{len(seeds)} random seeds (the seed draws the random start and, for the "
        "natural images, which patches are sampled). The scores are defined in "
        f"[the scores]({links.page('scores')}): *locality* is 1 for a basis image whose "
        "energy sits in one point and 0 for one spread over the frame; *orientation* is "
        "about 0 for a round blob and up to 1 for an edge or a grating. The figures are "
        "seed 0's.",
        "",
        *_summary(table, links),
        "",
    ]
    for name, heading in FIGURES.items():
        lines += [
            f"## {heading}",
            "",
            f"> **The paper.** {_caption(docs[name])}",
            "",
            links.image(name, f"{heading.split(':')[0]}, as reproduced"),
            "",
            f"*Ours: {heading.split(':')[0]} as reproduced (seed 0"
            + (f"; its runs: [its page]({links.page('paper/' + name)})" if links.site else "")
            + f"). Raw numbers: {links.download(name + '.json')}.*",
            "",
        ]
        for claim in (c for c in CLAIMS if c.figure == name):
            lines += [*_claim(claim, docs, table, seeds), ""]
        lines += [*_figure_notes(name, docs, table, seeds, links), ""]
    lines += [*_notes(docs, links), "", *_about(docs, table, seeds, links)]
    return "\n".join(_tidy(lines)) + "\n"


def _slug(text):
    """The anchor MyST and GitHub give a heading (lower case, punctuation dropped)."""
    import re

    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def _tidy(lines):
    """No two blank lines in a row."""
    out = []
    for line in lines:
        if line == "" and out and out[-1] == "":
            continue
        out.append(line)
    return out


def main(argv=None):
    import argparse

    from nmfsc.atomic import write_atomic

    parser = argparse.ArgumentParser(
        prog="python -m reproduce.page",
        description="Write the reproduction page from figures/*.json (runs nothing).",
    )
    parser.add_argument("--figures", default=str(ROOT / "figures"), help="folder of the JSON")
    parser.add_argument("--out", default=str(ROOT / "REPRODUCTION.md"), help="the page")
    args = parser.parse_args(argv)
    write_atomic(Path(args.out), render(args.figures, REPOSITORY))
    print(args.out)


if __name__ == "__main__":
    main()
