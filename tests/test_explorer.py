"""The explorer page (docs/_ext/explorer.py) works in a real browser, offline.

Its HTML is written here from small made-up runs and opened with headless
Chromium (``--dump-dom``); a harness script moves each slider through every
position as a reader's drag does (set the value, fire ``input``) and records what
the page shows. The browser tests are skipped, with the reason, where no
Chromium is installed (Debian: ``apt-get install chromium``).
"""

import html
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).parents[1]
CHROMIUM = next(
    (
        path
        for name in ("chromium", "chromium-browser", "google-chrome")
        if (path := shutil.which(name))
    ),
    None,
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)"
)


@pytest.fixture(scope="module")
def explorer():
    sys.path.insert(0, str(ROOT / "docs/_ext"))
    try:
        import explorer
    finally:
        sys.path.remove(str(ROOT / "docs/_ext"))
    return explorer


def _png(level):
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    plt.imsave(buffer, np.full((4, 4), level), format="png", vmin=0, vmax=1, cmap="gray")
    return buffer.getvalue()


def _panels(explorer):
    return [
        explorer.Panel(
            "faces",
            "Faces & <parts>",
            "a caption",
            [
                explorer.Step(
                    f"sparseness_w = {s}",
                    _png(s),
                    {"locality": f"{s / 2:.3f}", "error": f"{1 - s:.3f}"},
                )
                for s in (0.1, 0.5, 0.9)
            ],
        ),
        explorer.Panel(
            "patches",
            "Patches",
            "another caption",
            [
                explorer.Step(label, _png(level), {"orientation": label})
                for label, level in [("none", 0.2), ("0.85", 0.7)]
            ],
        ),
    ]


HARNESS = """<pre id="harness-log"></pre><script>
var log = [];
document.querySelectorAll(".nmfsc-explorer").forEach(function (panel) {
  var slider = panel.querySelector("input[type=range]");
  for (var i = Number(slider.min); i <= Number(slider.max); i++) {
    slider.value = String(i);
    slider.dispatchEvent(new Event("input", {bubbles: true}));
    var numbers = {};
    panel.querySelectorAll("[data-number]").forEach(function (cell) {
      numbers[cell.getAttribute("data-number")] = cell.textContent;
    });
    log.push({panel: panel.id, position: i,
              src: panel.querySelector("img").getAttribute("src"),
              label: panel.querySelector("output").textContent, numbers: numbers});
  }
});
document.getElementById("harness-log").textContent = JSON.stringify(log);
</script>"""


def _browse(page):
    """The harness's log, from the DOM headless Chromium has after running the page."""
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    match = re.search(r'<pre id="harness-log">(.*?)</pre>', proc.stdout, flags=re.S)
    assert match, (
        f"no harness log in Chromium's DOM (exit {proc.returncode}): {proc.stderr[-2000:]}"
    )
    return json.loads(html.unescape(match.group(1)))


@needs_chromium
def test_slider_changes_the_image_and_the_numbers(explorer, tmp_path):
    panels = _panels(explorer)
    page = tmp_path / "explorer.html"
    page.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
        + explorer.explorer_html(panels)
        + HARNESS
        + "</body></html>",
        encoding="utf-8",
    )
    log = _browse(page)
    expected = [
        (f"explorer-{panel.id}", i, step) for panel in panels for i, step in enumerate(panel.steps)
    ]
    assert len(log) == len(expected) == 5
    for shown, (panel_id, position, step) in zip(log, expected, strict=True):
        assert shown["panel"] == panel_id and shown["position"] == position
        assert shown["label"] == step.label
        assert shown["numbers"] == step.numbers
        assert shown["src"].startswith("data:image/png;base64,")
        assert shown["src"].split(",", 1)[1] == __import__("base64").b64encode(step.png).decode()
    # Each move showed a different image, and the numbers changed with it.
    faces = [entry for entry in log if entry["panel"] == "explorer-faces"]
    assert len({entry["src"] for entry in faces}) == 3
    assert len({entry["numbers"]["locality"] for entry in faces}) == 3


def test_page_is_self_contained_and_escaped(explorer):
    page = explorer.explorer_html(_panels(explorer))
    # No file or host to fetch: every image is inline.
    assert not re.search(r'src="(?!data:)', page)
    assert "http" not in page
    assert "Faces &amp; &lt;parts&gt;" in page and "<parts>" not in page


def test_runs_are_cached_on_their_inputs(explorer, tmp_path, monkeypatch):
    calls = []

    def fake_builder(settings):
        calls.append(settings["values"])
        return [explorer.Step(str(v), _png(0.5), {"n": str(v)}) for v in settings["values"]]

    monkeypatch.setitem(explorer.BUILDERS, "orl", fake_builder)
    monkeypatch.setattr(explorer, "_data_files", lambda panel_id: [])
    first = explorer.build_panel("orl", tmp_path)
    again = explorer.build_panel("orl", tmp_path)
    assert len(calls) == 1 and [s.label for s in again.steps] == [s.label for s in first.steps]
    monkeypatch.setitem(explorer.PANELS, "orl", {**explorer.PANELS["orl"], "values": (None, 0.5)})
    explorer.build_panel("orl", tmp_path)
    assert calls[-1] == (None, 0.5) and len(calls) == 2
    assert len(list(tmp_path.glob("orl-*.pickle"))) == 1  # the stale run is removed


@pytest.mark.realdata
def test_orl_panel_on_the_real_data(explorer):
    steps = explorer.orl_panel({"values": (None, 0.75), "n_components": 4, "max_iter": 20})
    assert [step.label for step in steps] == ["no constraint (plain NMF)", "sparseness_w = 0.75"]
    assert steps[1].numbers["sparseness of W (mean)"] == "0.750"
    assert steps[0].png != steps[1].png and all(s.png.startswith(b"\x89PNG") for s in steps)


def _orl_panel(explorer, localities, errors):
    steps = [
        explorer.Step(
            str(value),
            b"",
            {
                "sparseness of W (mean)": "0.420" if value is None else str(value),
                "locality (mean)": str(loc),
                "relative error": str(err),
            },
        )
        for value, loc, err in zip(
            explorer.PANELS["orl"]["values"], localities, errors, strict=True
        )
    ]
    return explorer.Panel("orl", "ORL", "", steps)


def test_the_build_checks_what_the_page_says(explorer):
    # None, 0.3, 0.5, 0.6, 0.75, 0.85: the shape of the real runs passes ...
    errors = [0.176, 0.179, 0.177, 0.181, 0.199, 0.415]
    assert (
        explorer.check_claim(_orl_panel(explorer, [0.29, 0.19, 0.35, 0.42, 0.57, 0.30], errors))
        is None
    )
    # ... a locality that stops rising, or a 0.85 that does not break up, does not.
    flat = explorer.check_claim(_orl_panel(explorer, [0.29, 0.19, 0.35, 0.34, 0.57, 0.30], errors))
    assert "locality does not rise" in flat
    smooth = explorer.check_claim(
        _orl_panel(explorer, [0.29, 0.19, 0.35, 0.42, 0.57, 0.60], errors[:-1] + [0.21])
    )
    assert "0.85 does not break" in smooth
