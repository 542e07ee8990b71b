"""Sphinx directive ``paper-figure``: a paper figure's numbers, read from its JSON.

Every number on the paper-figure pages comes from ``figures/<name>.json`` (written
by ``python -m reproduce all``) when the site is built, never from a hand copy::

    ```{paper-figure} fig4
    Plain NMF {c[locality_mean][fig1b]:.3f}, sW = 0.5: {c[locality_mean][fig4a]:.3f}.
    ```

The content is a Markdown template filled by :meth:`str.format` with ``c`` (the
JSON's ``claims``), ``e`` (its ``experiments``, by name), ``j`` (the whole
JSON) and ``caption`` (the paper's caption on one line); literal braces are
written ``{{`` and ``}}``. After it the directive adds a
table of the runs behind the figure (solver, data, settings, iterations, why the
run stopped, relative error, time) and the code version that produced them. The
JSON is a dependency of the page, so a new reproduction rebuilds it.
"""

import json
import os
import re
import string
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective


class _JSONFormatter(string.Formatter):
    """``str.format`` where ``x[k]`` indexes a list by ``int(k)`` (``-1`` too)."""

    def get_field(self, field_name, args, kwargs):
        head, *keys = re.findall(r"^[^\[]+|\[[^\]]*\]", field_name)
        value = kwargs[head]
        for key in keys:
            key = key[1:-1]
            value = value[int(key)] if isinstance(value, list) else value[key]
        return value, head


def _fmt(value, spec=".3g"):
    if isinstance(value, float):
        return format(value, spec)
    return str(value)


def _params(params):
    return ", ".join(f"{k} = {_fmt(v)}" for k, v in params.items()) or "none"


def runs_table(experiments):
    """Markdown lines of a table of the runs in ``experiments`` (a dict by name)."""
    lines = [
        "| run | data | solver | settings | M | iterations | stopped by | rel. error | time |",
        "|---|---|---|---|---:|---:|---|---:|---:|",
    ]
    for name, run in experiments.items():
        error = run.get("relative_error")
        seconds = run.get("run_time_s")
        lines.append(
            f"| {name} | {run.get('dataset', '')} | `{run.get('solver', '')}` "
            f"| {_params(run.get('params', {}))} | {run.get('n_components', '')} "
            f"| {run.get('n_iter', '')} | {run.get('stop_reason', '')} "
            f"| {'' if error is None else format(error, '.3f')} "
            f"| {'' if seconds is None else format(seconds, '.0f') + ' s'} |"
        )
    return lines


class PaperFigure(SphinxDirective):
    required_arguments = 1
    has_content = True

    def run(self):
        name = self.arguments[0]
        folder = Path(self.config.paper_figures_dir)
        path = folder / f"{name}.json"
        if not path.is_file():
            raise self.error(f"paper-figure: {path} not found (run 'python -m reproduce {name}')")
        self.env.note_dependency(str(path))
        data = json.loads(path.read_text(encoding="utf-8"))
        fields = {
            "c": data.get("claims", {}),
            "e": data.get("experiments", {}),
            "j": data,
            "caption": " ".join(data.get("caption", "").split()),
        }
        try:
            text = _JSONFormatter().format("\n".join(self.content), **fields)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise self.error(
                f"paper-figure {name}: template field {exc!r} not in {path.name}"
            ) from exc
        lines = text.splitlines()
        experiments = data.get("experiments")
        if experiments:
            lines += ["", f"The runs behind {name}:", ""]
            lines += runs_table(experiments)
        versions = data.get("versions", {})
        # The JSON itself, offered for download (copied into the site).
        here = Path(self.env.doc2path(self.env.docname)).parent
        download = f"{{download}}`{path.name} <{os.path.relpath(path, here)}>`"
        seed = data.get("seed")
        seed = f"seeds {', '.join(map(str, seed))}" if isinstance(seed, list) else f"seed {seed}"
        lines += [
            "",
            f"*Numbers read from {download} when this page was built: {seed}, "
            f"code version `{versions.get('code_version', '?')}`, "
            f"Python {versions.get('python', '?')}, numpy {versions.get('numpy', '?')}, "
            f"numba {versions.get('numba', '?')}"
            + (" (quick run, not the paper's settings)" if data.get("quick") else "")
            + ".*",
        ]
        container = nodes.container(classes=["paper-figure"])
        self.state.nested_parse(StringList(lines, source=str(path)), self.content_offset, container)
        return [container]


def _check_dir(app, config):
    if not Path(config.paper_figures_dir).is_dir():
        raise ExtensionError(f"paper_figures_dir {config.paper_figures_dir!r} is not a folder")


def setup(app):
    app.add_config_value("paper_figures_dir", "figures", "env")
    app.add_directive("paper-figure", PaperFigure)
    app.connect("config-inited", _check_dir)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
