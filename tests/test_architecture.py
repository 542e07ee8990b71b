"""The layout rules of docs/architecture.md, checked on the source (AST, no imports).

- no module outside ``nmfsc/_kernels/`` longer than 450 lines, and no function
  there longer than 80 lines (docstrings count);
- no module reads another module's underscore names: neither
  ``from x import _name`` (a private *module* of a package, such as
  ``nmfsc.solvers._loop``, may be imported) nor ``module._name``;
- no module named common, utils, helpers or misc.
"""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("nmfsc", "reproduce", "examples")
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
VAGUE_NAMES = {"common", "_common", "utils", "_utils", "helpers", "_helpers", "misc", "_misc"}


def _sources():
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield path


SOURCES = list(_sources())


def _ids(paths):
    return [str(p.relative_to(ROOT)) for p in paths]


def _is_kernel(path):
    return "_kernels" in path.relative_to(ROOT).parts


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node, path):
    """The absolute module name of an ``ImportFrom`` in ``path``."""
    if not node.level:
        return node.module or ""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_module(dotted):
    relative = ROOT.joinpath(*dotted.split("."))
    return relative.with_suffix(".py").is_file() or (relative / "__init__.py").is_file()


def private_reads(path):
    """Every place in ``path`` that uses another module's underscore name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, module_aliases = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            module_aliases.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, path)
            for alias in node.names:
                if _is_module(f"{source}.{alias.name}"):
                    module_aliases.add(alias.asname or alias.name)
                elif alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"line {node.lineno}: from {source} import {alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in module_aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("path", SOURCES, ids=_ids(SOURCES))
def test_no_module_reads_another_modules_private_names(path):
    assert private_reads(path) == []


@pytest.mark.parametrize(
    "path",
    [p for p in SOURCES if not _is_kernel(p)],
    ids=_ids(p for p in SOURCES if not _is_kernel(p)),
)
def test_modules_and_functions_are_of_readable_length(path):
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_MODULE_LINES
    long = [
        f"{node.name} (line {node.lineno}): {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


def test_no_module_has_a_vague_name():
    assert [p for p in SOURCES if p.stem in VAGUE_NAMES] == []


def test_the_checker_finds_what_it_forbids(tmp_path, monkeypatch):
    """The rule can fail: a module reading two private names is caught."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    package = tmp_path / "nmfsc"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "lib.py").write_text("_hidden = 1\n")
    bad = package / "user.py"
    bad.write_text("from nmfsc.lib import _hidden\nimport nmfsc.lib as lib\nprint(lib._hidden)\n")
    assert len(private_reads(bad)) == 2
