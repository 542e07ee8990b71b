"""The claim tables of ``reproduce robustness`` and ``reproduce caps`` (pure functions)."""

import pytest

from reproduce._claims import SEP, flatten, fmt, shown_in_tables
from reproduce.caps import AGREEMENT, compare_claims
from reproduce.robustness import aggregate, markdown


def test_flatten_keeps_scalar_leaves_with_their_path():
    tree = {
        "fig4": {
            "locality_mean": {"fig4a": 0.3, "fig4b": 0.4},
            "rises": True,
            "series": [1, 2],
            "none": None,
        }
    }
    assert flatten(tree) == {
        f"fig4{SEP}locality_mean{SEP}fig4a": 0.3,
        f"fig4{SEP}locality_mean{SEP}fig4b": 0.4,
        f"fig4{SEP}rises": True,
        f"fig4{SEP}none": None,
    }


def test_aggregate_says_when_a_claim_fails_for_one_seed():
    seeds = [
        {"a / holds": True, "a / x": 0.5},
        {"a / holds": False, "a / x": 0.25},
        {"a / holds": True, "a / x": 0.75},
    ]
    table = aggregate(seeds)
    assert table["a / holds"] == {
        "values": [True, False, True],
        "holds_for_seeds": 2,
        "holds_for_every_seed": False,
    }
    assert table["a / x"]["spread"] == pytest.approx(0.5)
    assert (table["a / x"]["min"], table["a / x"]["max"]) == (0.25, 0.75)
    text = markdown([0, 1, 2], table)
    assert "| a / holds | yes | **no** | yes | **no** |" in text
    assert "| a / x | 0.500 | 0.250 | 0.750 | 0.500 |" in text


def test_compare_claims_agreement_rule():
    cap = {"b": True, "x": 0.300, "y": 0.300, "z": 0.300}
    twice = {"b": False, "x": 0.300 + AGREEMENT / 2, "y": 0.300 + 2 * AGREEMENT, "z": 0.300}
    table = compare_claims(cap, twice)
    assert table["b"]["agree"] is False
    assert table["x"]["agree"] is True
    assert table["y"]["agree"] is False
    assert table["y"]["difference"] == pytest.approx(2 * AGREEMENT)
    assert table["z"] == {"at_cap": 0.3, "at_twice_cap": 0.3, "difference": 0.0, "agree": True}


def test_tables_leave_out_per_vector_details_and_met_constraints():
    assert shown_in_tables(f"fig4{SEP}locality_mean{SEP}fig4a")
    assert not shown_in_tables(f"fig5{SEP}orientation{SEP}fig5{SEP}min")
    assert not shown_in_tables(f"fig4{SEP}achieved_sparseness_W{SEP}fig4a{SEP}mean")
    assert (fmt(True), fmt(False), fmt(None), fmt(3), fmt(0.12345), fmt(2.5e-5)) == (
        "yes",
        "**no**",
        "-",
        "3",
        "0.123",
        "2.5e-05",
    )


def test_caps_table_says_when_no_run_was_capped():
    from reproduce.caps import markdown as caps_markdown

    assert "every run stopped by the convergence rule" in caps_markdown({}, {})


def test_strip_figure_reads_at_page_width():
    # Seven panels of internal keys in one strip 3,362 px wide could not be read:
    # the panels go in rows of at most three, and every label is in words.
    from reproduce._claims import readable, strip_figure

    panels = {
        f"fig{k}": {"locality_mean / fig4a": [0.4, 0.5], "orientation_mean_1c_natural": [0.1, 0.2]}
        for k in range(7)
    }
    fig = strip_figure(panels, ["seed 0", "seed 1"], "title")
    assert fig.get_figwidth() <= 3 * 4.5
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert labels and not any("_" in label for label in labels)
    assert readable("locality_mean / fig4a") == "locality, Fig. 4a"
    assert readable("orientation_mean_natural / sec5_snmf_natural_alpha1") == (
        "orientation on natural images, SNMF, alpha 1"
    )


def test_every_claim_in_words_reads_its_rows_from_the_committed_seeds():
    import json
    from pathlib import Path

    from reproduce._claims import CLAIMS

    doc = json.loads((Path(__file__).parents[1] / "figures/robustness.json").read_text())
    table = doc["claims"]
    for claim in CLAIMS:
        for path, label in (*claim.numbers, *claim.more):
            assert path in table, path
            assert "_" not in label and SEP not in label, label
        assert claim.verdicts and all(path in table for path in claim.verdicts)
    yes_no = {p for p, r in table.items() if "holds_for_every_seed" in r}
    assert yes_no <= {p for claim in CLAIMS for p in claim.verdicts}


def test_seeds_figure_is_drawn_for_the_page_and_redrawn_from_the_json(tmp_path):
    # The seeds figure was 1982 px shrunk to about 715 on the page (text 7 px):
    # now one column of panels 7.2 in wide, text of at least 9 pt, labels in
    # words; redrawing it reads the JSON and leaves it as it was.
    import json
    import shutil
    from pathlib import Path

    from reproduce.robustness import draw, redraw

    source = Path(__file__).parents[1] / "figures/robustness.json"
    shutil.copy(source, tmp_path / "robustness.json")
    before = (tmp_path / "robustness.json").read_bytes()
    fig = draw(json.loads(before))
    assert fig.get_figwidth() <= 7.5
    axes = fig.get_axes()
    labels = [t for ax in axes for t in ax.get_yticklabels()]
    assert labels and all(t.get_fontsize() >= 9 for t in labels)
    assert not any("_" in t.get_text() for t in labels)
    paths = redraw(tmp_path)
    assert [p.name for p in paths] == ["robustness.png", "robustness.pdf"]
    assert (tmp_path / "robustness.json").read_bytes() == before
