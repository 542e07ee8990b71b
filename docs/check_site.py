"""Check the built site as a reader would: pages render, images load, links resolve.

    python docs/check_site.py [docs/_build/html] [--out DIR] [--chromium PATH]

1. Every internal ``href`` and ``src`` in every built HTML page must resolve to a
   file of the build (anchors and query strings are ignored; external URLs,
   ``mailto:``, ``data:`` and ``javascript:`` are not followed).
2. The home page, the gallery index, one gallery example and one API page are
   served on 127.0.0.1 by ``http.server`` in a thread and screenshot with headless
   Chromium; each must exist, hold its images, and the screenshot must be a PNG
   that is not blank.

Prints a summary and exits 1 on any failure. Needs Chromium (``chromium`` or
``chromium-browser`` on PATH, or ``--chromium``) for step 2; without it step 2 is
reported as skipped and the exit status reflects step 1 only. Not run in CI
(installing a browser there costs more than it finds); run it after a build.
"""

import argparse
import functools
import html.parser
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
import zlib
from pathlib import Path
from urllib.parse import unquote, urlsplit

PAGES = {
    "home": "index.html",
    "gallery index": "auto_examples/index.html",
    "example": "auto_examples/plot_orl_sparseness_sweep.html",
    "API page": "api/generated/nmfsc.nmf_sc.html",
}
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--window-size=1280,2400",
    "--virtual-time-budget=5000",
]


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []  # (tag, attribute, value)

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append((tag, name, value))


def page_links(path):
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser.links


def site_pages(root):
    """The built pages (not the theme's HTML templates under _static/)."""
    return sorted(p for p in root.rglob("*.html") if "_static" not in p.relative_to(root).parts)


def broken_links(root):
    """(page, link) for every internal href/src of the build that names no file."""
    broken, checked = [], 0
    for page in site_pages(root):
        for _tag, _attr, value in page_links(page):
            parts = urlsplit(value)
            if parts.scheme or parts.netloc or value.startswith(("#", "mailto:", "data:")):
                continue
            if not parts.path:
                continue
            target = (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            if not target.is_file() or root.resolve() not in target.parents:
                broken.append((page.relative_to(root), value))
    return broken, checked


def png_is_not_blank(path):
    """True when the PNG decodes to more than one distinct pixel value."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return False
    idat, pos = b"", 8
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    # Filter bytes and pixels mixed: a blank page compresses to a handful of values.
    return len(set(raw[:2_000_000])) > 8


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root):
    """An HTTP server for ``root`` on 127.0.0.1 (a free port), in a daemon thread."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def find_chromium(explicit):
    for name in [explicit, "chromium", "chromium-browser", "google-chrome"]:
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def screenshot(chromium, url, out_png):
    profile = tempfile.mkdtemp(prefix="check_site_chromium_")
    try:
        cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
        cmd += [f"--screenshot={out_png}", url]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stderr[-500:]
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", nargs="?", default=str(Path(__file__).parent / "_build/html"))
    parser.add_argument("--out", help="folder for the screenshots (default: a temp dir)")
    parser.add_argument("--chromium", default=None, help="path of the Chromium binary")
    args = parser.parse_args(argv)
    root = Path(args.html)
    failures = []
    if not (root / "index.html").is_file():
        print(f"check_site: {root}/index.html not found; build the site first")
        return 1

    broken, checked = broken_links(root)
    n_pages = len(site_pages(root))
    print(f"links: {checked} internal href/src checked in {n_pages} pages, {len(broken)} broken")
    for page, link in broken[:50]:
        print(f"  BROKEN {page}: {link}")
    if broken:
        failures.append(f"{len(broken)} broken internal links")

    for label, page in PAGES.items():
        path = root / page
        if not path.is_file():
            failures.append(f"{label}: {page} missing")
            continue
        images = [v for tag, attr, v in page_links(path) if tag == "img" and attr == "src"]
        print(f"page {label:<14s} {page}: {len(images)} <img>")
        if label != "API page" and not images:
            failures.append(f"{label}: {page} has no images")

    chromium = find_chromium(args.chromium)
    if chromium is None:
        print("screenshots: skipped (no chromium on PATH; pass --chromium)")
    else:
        out = Path(args.out or tempfile.mkdtemp(prefix="check_site_"))
        out.mkdir(parents=True, exist_ok=True)
        server = serve(root)
        host, port = server.server_address[:2]
        try:
            for label, page in PAGES.items():
                png = out / (label.replace(" ", "_") + ".png")
                code, err = screenshot(chromium, f"http://{host}:{port}/{page}", png)
                ok = code == 0 and png.is_file() and png_is_not_blank(png)
                size = png.stat().st_size if png.is_file() else 0
                print(f"screenshot {label:<14s} {png} ({size} bytes): {'ok' if ok else 'FAILED'}")
                if not ok:
                    failures.append(f"screenshot of {label} failed: exit {code} {err}")
        finally:
            server.shutdown()

    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
