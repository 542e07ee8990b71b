"""The ``{explorer}`` directive: the explorer page's panels, run at build time.

The runs and the page's HTML are in :mod:`explorer`, which needs no Sphinx
(tests/test_explorer.py drives that HTML in a headless browser); this module
only plugs them into the build.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from explorer import PANELS, build_panel, check_claim, explorer_html
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


class ExplorerDirective(SphinxDirective):
    """``{explorer}``: the panels, run (or read from the cache) and laid out."""

    has_content = False

    def run(self):
        cache_dir = Path(self.env.app.doctreedir) / "explorer"
        panels = [build_panel(panel_id, cache_dir) for panel_id in PANELS]
        for panel in panels:
            problem = check_claim(panel)
            if problem:
                # With -W (CI) this fails the build: the page's prose would be false.
                logger.warning(f"explorer: {problem}", location=self.get_location())
        return [nodes.raw("", explorer_html(panels), format="html")]


def setup(app):
    app.add_directive("explorer", ExplorerDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
