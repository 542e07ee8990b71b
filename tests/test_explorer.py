"""The explorer page (docs/_ext/explorer.py) works in a real browser, offline.

The browser test builds the page as the site build does (every panel of
``PANELS`` run on the real data, or read from the runs' cache, checked against
docs/explorer.md and laid out, as ``explorer_directive`` does), opens it from a
file in headless Chromium with the network cut (tests/headless_chromium.py),
drags each slider with the mouse (pressed on the thumb, moved along the track,
released) and walks it back with the arrow keys, reading what the page shows
after every move. It is skipped, with the reason, where no Chromium is
installed (Debian: ``apt-get install chromium``) or the real data are missing
(under ``CI=true`` the data must be there).
"""

import base64
import io
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from headless_chromium import CHROMIUM, Chromium

ROOT = Path(__file__).parents[1]
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


@pytest.fixture(scope="module")
def site_panels(explorer, request, tmp_path_factory, require_real_data):
    """The panels as the directive builds them, each showing what docs/explorer.md says.

    The runs (about 25 s on 2 cores) are kept in pytest's cache folder under the
    key the site build uses (settings, nmfsc's code, the data files), so a rerun
    with nothing changed reads them back.
    """
    cache = getattr(request.config, "cache", None)
    folder = cache.mkdir("explorer") if cache else tmp_path_factory.mktemp("explorer")
    panels = [explorer.build_panel(panel_id, folder) for panel_id in explorer.PANELS]
    for panel in panels:
        assert explorer.check_claim(panel) is None, explorer.check_claim(panel)
    return panels


def _page(body):
    """An HTML document around the explorer's HTML (the directive's raw node)."""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Explorer</title></head><body>{body}</body></html>"
    )


# What a reader sees of one panel: the slider's position, the label beside it, the
# image (its source and alternative text) and the numbers.
SHOWN = """(() => {
  const panel = document.getElementById(%s), image = panel.querySelector("img");
  const numbers = {};
  panel.querySelectorAll("[data-number]").forEach((cell) => {
    numbers[cell.getAttribute("data-number")] = cell.textContent;
  });
  return {position: Number(panel.querySelector("input[type=range]").value),
          label: panel.querySelector("output").textContent,
          src: image.getAttribute("src"), alt: image.alt, numbers: numbers};
})()"""
# The slider's track (viewport coordinates, after scrolling it into view) and the
# panel's box (page coordinates, for a screenshot).
TRACK = """(() => {
  const slider = document.querySelector("#" + %s + " input[type=range]");
  slider.scrollIntoView({block: "center"});
  const box = slider.getBoundingClientRect();
  return [box.left, box.right, box.top + box.height / 2];
})()"""
BOX = """(() => {
  const box = document.getElementById(%s).getBoundingClientRect();
  return [box.left + window.scrollX, box.top + window.scrollY, box.width, box.height];
})()"""


def _expected(position, step):
    src = "data:image/png;base64," + base64.b64encode(step.png).decode("ascii")
    return {
        "position": position,
        "label": step.label,
        "src": src,
        "alt": f"learned basis at {step.label}",
        "numbers": step.numbers,
    }


def _states(seen, expected):
    """The steps the page showed, in order (each once per stay); a view of no step fails."""
    states = []
    for shown in seen:
        if shown not in expected:
            pytest.fail(
                f"at position {shown['position']} the page shows no step of its own: "
                f"{shown['label']} {shown['numbers']}"
            )
        state = expected.index(shown)
        if not states or states[-1] != state:
            states.append(state)
    return states


def _drag(browser, tab, panel_id):
    """A mouse drag of the slider's thumb from the left end of the track past its right end.

    Pressed on the thumb, moved in 4-pixel steps, released; what the page shows
    after the press and after every move.
    """
    left, right, y = browser.evaluate(tab, TRACK % json.dumps(panel_id))
    shown = SHOWN % json.dumps(panel_id)

    def mouse(kind, x, **buttons):
        browser.call("Input.dispatchMouseEvent", tab, type=kind, x=x, y=y, **buttons)

    x = left + 4  # on the thumb at position 0
    mouse("mouseMoved", x)
    mouse("mousePressed", x, button="left", buttons=1, clickCount=1)
    seen = [browser.evaluate(tab, shown)]
    while x < right + 8:
        x += 4
        mouse("mouseMoved", x, button="left", buttons=1)
        seen.append(browser.evaluate(tab, shown))
    mouse("mouseReleased", x, button="left", buttons=0, clickCount=1)
    seen.append(browser.evaluate(tab, shown))
    return seen


def _arrow_left(browser, tab, panel_id, times):
    """Press the left arrow key ``times`` times (the slider has the focus after the drag)."""
    seen = []
    for _ in range(times):
        for kind in ("rawKeyDown", "keyUp"):
            browser.call(
                "Input.dispatchKeyEvent",
                tab,
                type=kind,
                key="ArrowLeft",
                code="ArrowLeft",
                windowsVirtualKeyCode=37,
            )
        seen.append(browser.evaluate(tab, SHOWN % json.dumps(panel_id)))
    return seen


def _screenshot(browser, tab, panel_id):
    x, y, width, height = browser.evaluate(tab, BOX % json.dumps(panel_id))
    clip = {"x": x, "y": y, "width": width, "height": height, "scale": 1}
    shot = browser.call(
        "Page.captureScreenshot", tab, format="png", clip=clip, captureBeyondViewport=True
    )
    return base64.b64decode(shot["data"])


@needs_chromium
@pytest.mark.realdata
def test_dragging_the_sliders_of_the_built_page(explorer, site_panels, tmp_path):
    page = tmp_path / "explorer.html"
    page.write_text(_page(explorer.explorer_html(site_panels)), encoding="utf-8")
    with Chromium(tmp_path / "profile") as browser:
        tab = browser.open(page.as_uri(), offline=True)
        for panel in site_panels:
            panel_id = f"explorer-{panel.id}"
            expected = [_expected(i, step) for i, step in enumerate(panel.steps)]
            last = len(expected) - 1
            assert browser.evaluate(tab, SHOWN % json.dumps(panel_id)) == expected[0]
            first_shot = _screenshot(browser, tab, panel_id)
            dragged = _drag(browser, tab, panel_id)
            last_shot = _screenshot(browser, tab, panel_id)
            walked_back = _arrow_left(browser, tab, panel_id, last)

            # The drag went through every step once, in order; the keys came back.
            assert _states(dragged, expected) == list(range(len(expected)))
            assert _states(walked_back, expected) == list(range(last - 1, -1, -1))
            # Each step has its own image and numbers, and the page's claims hold
            # for the numbers the reader saw.
            assert len({step.png for step in panel.steps}) == len(panel.steps)
            steps_seen = [expected[i] for i in _states(dragged, expected)]
            seen_panel = explorer.Panel(
                panel.id, "", "", [explorer.Step(s["label"], b"", s["numbers"]) for s in steps_seen]
            )
            assert explorer.check_claim(seen_panel) is None
            # What the screen shows changed from the first step to the last.
            for name, shot in [("first", first_shot), ("last", last_shot)]:
                assert shot.startswith(b"\x89PNG")
                (tmp_path / f"{panel.id}-{name}.png").write_bytes(shot)
            assert first_shot != last_shot
            print(panel.id, *(f"{s['label']}: {s['numbers']}" for s in steps_seen), sep="\n  ")

    # No request but the page's own file (the images are data: URIs) ...
    requests = [
        p["request"]["url"] for _, m, p in browser.events if m == "Network.requestWillBeSent"
    ]
    assert page.as_uri() in requests  # (the page's load was recorded)
    assert [url for url in requests if not url.startswith(("file:", "data:"))] == []
    # ... and no error on the console, nor an uncaught exception.
    errors = [
        (m, p)
        for _, m, p in browser.events
        if m == "Runtime.exceptionThrown"
        or (m == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"))
        or (m == "Log.entryAdded" and p["entry"]["level"] == "error")
    ]
    assert errors == []


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
    steps = explorer.orl_panel({"values": (None, 0.75), "n_components": 4, "max_iter": 5000})
    assert [step.label for step in steps] == ["no constraint (plain NMF)", "sparseness_w = 0.75"]
    assert steps[1].numbers["sparseness of W (mean)"] == "0.750"
    assert steps[0].png != steps[1].png and all(s.png.startswith(b"\x89PNG") for s in steps)
    # a run stopped by its iteration limit is refused: the page shows converged runs only
    with pytest.raises(RuntimeError, match="stopped by 'max_iter' after 3 iterations"):
        explorer.orl_panel({"values": (0.75,), "n_components": 4, "max_iter": 3})


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
