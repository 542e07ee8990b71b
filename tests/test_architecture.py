"""The layout rules of docs/architecture.md, checked on the source (AST, no imports).

- a private name belongs to its package and that package's subpackages: no
  module elsewhere imports a private module (``nmfsc.solvers._loop``) or a
  private name (``from x import _name``, ``module._name``), nor uses a private
  attribute (``self._name``, ``super()._name``) that only another package defines;
- no import circles between modules (:mod:`reproduce.import_graph`; deferred
  imports count);
- one registry of solvers: each public solver name, and each ``solver=``
  variant of ``nmf_sc``, is written in at most five files (its module, the two
  ``__all__``, the experiments table and the registry);
- no module named common, utils, helpers or misc;
- every module under ``nmfsc/`` (``__init__.py`` aside) is named in
  docs/architecture.md: by its file name in backticks, or, where several
  modules share that name, by its folder and file name (``gpu_backend/run.py``).
"""

import ast
import functools
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nmfsc.solvers.registry import SOLVERS  # noqa: E402
from reproduce.import_graph import imported_modules, module_name  # noqa: E402

FOLDERS = ("nmfsc", "reproduce", "examples")
VAGUE_NAMES = {"common", "_common", "utils", "_utils", "helpers", "_helpers", "misc", "_misc"}
MAX_FILES_PER_SOLVER_NAME = 5
ARCHITECTURE_PAGE = ROOT / "docs" / "architecture.md"


def _sources(root):
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield path


SOURCES = list(_sources(ROOT))


@functools.cache
def _parse(path):
    return ast.parse(path.read_text(encoding="utf-8"))


def _ids(paths):
    return [str(p.relative_to(ROOT)) for p in paths]


def _is_private(part):
    return part.startswith("_") and not part.startswith("__")


def _package(path, root):
    """The package that ``path``'s module belongs to, as a tuple of names."""
    return tuple(module_name(path, root).split(".")[: None if path.name == "__init__.py" else -1])


def _owner(dotted):
    """The package that owns the private name or module ``dotted`` (the part
    before its first private component), or None if nothing in it is private."""
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if _is_private(part):
            return tuple(parts[:i])
    return None


def _inside(package, owner):
    return package[: len(owner)] == owner


def _private_attributes(root):
    """Every private attribute or method name defined in a module, by module path."""
    defined = {}
    for path in _sources(root):
        names = set()
        for node in ast.walk(_parse(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
        defined[path] = {n for n in names if _is_private(n)}
    return defined


def private_crossings(path, root=ROOT, defined=None):
    """Every place in ``path`` that reaches into another package's private name."""
    defined = _private_attributes(root) if defined is None else defined
    package, tree = _package(path, root), _parse(path)
    found, aliases = [], {}

    def check(dotted, lineno, what):
        owner = _owner(dotted)
        if owner is not None and not _inside(package, owner):
            found.append(f"line {lineno}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                check(alias.name, node.lineno, f"import {alias.name}")
                aliases[alias.asname or alias.name.split(".")[0]] = alias.asname and alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                source = ".".join(base + ((node.module,) if node.module else ()))
            else:
                source = node.module or ""
            for alias in node.names:
                check(f"{source}.{alias.name}", node.lineno, f"from {source} import {alias.name}")
                aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
            continue
        value = node.value
        if isinstance(value, ast.Name) and aliases.get(value.id):
            check(f"{aliases[value.id]}.{node.attr}", node.lineno, f"{value.id}.{node.attr}")
        elif (isinstance(value, ast.Name) and value.id in ("self", "cls")) or (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "super"
        ):
            # super()._name reaches past this module's own override of _name.
            past = isinstance(value, ast.Call)
            owners = [
                p for p, names in defined.items() if node.attr in names and not (past and p == path)
            ]
            if owners and not any(_inside(package, _package(p, root)) for p in owners):
                found.append(f"line {node.lineno}: inherited private attribute {node.attr}")
    return found


DEFINED = _private_attributes(ROOT)


@pytest.mark.parametrize("path", SOURCES, ids=_ids(SOURCES))
def test_no_module_reaches_into_another_packages_private_names(path):
    assert private_crossings(path, ROOT, DEFINED) == []


def import_circles(root):
    """The strongly connected components of more than one module (Tarjan)."""
    graph = {module_name(p, root): imported_modules(p, root) for p in _sources(root)}
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_no_import_circles():
    assert import_circles(ROOT) == []


@functools.cache
def _code_strings(path):
    """The string constants of the module at ``path`` that are not docstrings."""
    tree = _parse(path)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    }


def _written_in(word, root):
    """The files of nmfsc/ and reproduce/ whose code (not prose) holds the string ``word``."""
    return [
        str(path.relative_to(root))
        for path in _sources(root)
        if "examples" not in path.relative_to(root).parts and word in _code_strings(path)
    ]


@pytest.mark.parametrize(
    "word", sorted({s.name for s in SOLVERS} | {s.variant for s in SOLVERS if s.variant})
)
def test_each_solver_name_is_written_in_at_most_five_files(word):
    files = _written_in(word, ROOT)
    assert "nmfsc/solvers/registry.py" in files
    assert len(files) <= MAX_FILES_PER_SOLVER_NAME, files


def test_no_module_has_a_vague_name():
    assert [p for p in SOURCES if p.stem in VAGUE_NAMES] == []


def _tree(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checker_finds_what_it_forbids(tmp_path):
    """The rules can fail: private reads across packages, and a circle, are caught."""
    _tree(
        tmp_path,
        {
            "nmfsc/__init__.py": "",
            "nmfsc/_own.py": "_hidden = 1\n",
            "nmfsc/lib/__init__.py": "",
            "nmfsc/lib/_inner.py": "_hidden = 1\nclass Base:\n    def _step(self): pass\n",
            "nmfsc/lib/fine.py": "from nmfsc.lib._inner import _hidden\nfrom nmfsc import _own\n",
            "nmfsc/user.py": (
                "from nmfsc.lib._inner import Base\nimport nmfsc.lib._inner as inner\n"
                "print(inner._hidden)\nclass Mine(Base):\n    def go(self): return self._step()\n"
                "    def _step(self): return super()._step()\n"
            ),
            "reproduce/__init__.py": "",
            "reproduce/a.py": "from nmfsc._own import x\nimport reproduce.b\n",
            "reproduce/b.py": "def f():\n    import reproduce.a\n",
        },
    )
    defined = _private_attributes(tmp_path)
    assert private_crossings(tmp_path / "nmfsc/lib/fine.py", tmp_path, defined) == []
    user = private_crossings(tmp_path / "nmfsc/user.py", tmp_path, defined)
    assert len(user) == 4, user  # two imports, inner._hidden, super()._step
    assert len(private_crossings(tmp_path / "reproduce/a.py", tmp_path, defined)) == 1
    assert import_circles(tmp_path) == [["reproduce.a", "reproduce.b"]]


def unnamed_modules(package, page):
    """The modules under ``package`` (``__init__.py`` aside) that ``page`` does not
    name. A path in backticks names the module whose path ends with it; a bare
    file name counts only for a name no other module under ``package`` has."""
    modules = [
        path
        for path in sorted(package.rglob("*.py"))
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    ]
    shared = {name for name, n in Counter(p.name for p in modules).items() if n > 1}
    named = set(re.findall(r"`([^`\s]+\.py)`", page))
    missing = []
    for path in modules:
        full = path.relative_to(package.parent).as_posix()
        if not any(
            ("/" in span or path.name not in shared) and (full == span or full.endswith("/" + span))
            for span in named
        ):
            missing.append(full)
    return missing


def test_every_module_is_named_in_the_architecture_page():
    page = ARCHITECTURE_PAGE.read_text(encoding="utf-8")
    assert unnamed_modules(ROOT / "nmfsc", page) == []


def test_the_page_check_finds_an_unnamed_module(tmp_path):
    """A shared file name needs its folder; a unique one is enough alone."""
    _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/run.py": "",
            "pkg/alone.py": "",
            "pkg/sub/__init__.py": "",
            "pkg/sub/run.py": "",
            "pkg/sub/other.py": "",
        },
    )
    page = "`pkg/run.py`, `alone.py` and `run.py`; `sub/other.py`"
    assert unnamed_modules(tmp_path / "pkg", page) == ["pkg/sub/run.py"]
    assert unnamed_modules(tmp_path / "pkg", page + " `sub/run.py`") == []
