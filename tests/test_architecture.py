"""The layout rules of docs/architecture.md, checked on the source (AST, no imports).

- a private name belongs to its package and that package's subpackages: no
  module elsewhere imports a private module (``nmfsc.solvers._loop``) or a
  private name (``from x import _name``, ``module._name``), nor uses a private
  attribute (``self._name``, ``super()._name``) that only another package defines;
  the scripts of ``benchmarks/`` are held to it too, but for the few private
  names that a benchmark times and that :data:`BENCHMARK_PRIVATE_USES` names;
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
BENCHMARKS = sorted((ROOT / "benchmarks").glob("*.py"))

#: The private names a benchmark may reach, by file: each is the code that the
#: benchmark times or splits, which no public name gives (the kernels validate
#: nothing and stay private: docs/architecture.md). Keyed by the dotted name
#: the benchmark reaches (module, or module and name), with why. A crossing not
#: listed here fails, and so does an entry that no benchmark needs any more.
BENCHMARK_PRIVATE_USES = {
    "bench_projection.py": {
        "nmfsc._kernels.sparse_projection": (
            "times the projection kernels called directly, against project() (the "
            "wrapper's overhead, issue 14), the NumPy transcription and np.sum"
        ),
    },
    "bench_solvers.py": {
        "nmfsc._kernels.sparse_projection": (
            "times the row kernels of nmf_sc's H step (unguided, guided by the "
            "support sizes, and the fused trial step) that no public call selects"
        ),
        "nmfsc._kernels.bracket": (
            "counts the rows whose projection the bracket answers, unguided and guided"
        ),
    },
    "bench_scale.py": {
        "nmfsc.solvers.hoyer._Projector": (
            "the projection's share of an nmf_sc iteration, timed by wrapping its "
            "projector's step_rows inside the solver"
        ),
    },
    "profile_gpu_iteration.py": {
        "nmfsc.gpu_backend.fused._Launcher": (
            "splits the fused GPU projection's time by kernel, by wrapping the "
            "launcher every kernel launch goes through"
        ),
    },
}


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


def _private_attributes(root, paths=None):
    """Every private attribute or method name defined in a module, by module path
    (the modules of ``paths``; by default every source under ``root``)."""
    defined = {}
    for path in _sources(root) if paths is None else paths:
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


def private_crossings(path, root=ROOT, defined=None, allowed=()):
    """Every place in ``path`` that reaches into another package's private name,
    but for the dotted names of ``allowed`` (an import of one, or an attribute
    of it)."""
    return [
        what for dotted, what in _crossings(path, root, defined) if not _allowed(dotted, allowed)
    ]


def _allowed(dotted, allowed):
    """Whether ``dotted`` is one of ``allowed`` or inside one (a private module's names)."""
    return dotted is not None and any(dotted == a or dotted.startswith(a + ".") for a in allowed)


def _crossings(path, root, defined):
    """``(dotted name or None, where and what)`` of every private crossing in ``path``."""
    defined = _private_attributes(root) if defined is None else defined
    package, tree = _package(path, root), _parse(path)
    found, aliases = [], {}

    def check(dotted, lineno, what):
        owner = _owner(dotted)
        if owner is not None and not _inside(package, owner):
            found.append((dotted, f"line {lineno}: {what}"))

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
                found.append((None, f"line {node.lineno}: inherited private attribute {node.attr}"))
    return found


DEFINED = _private_attributes(ROOT)


@pytest.mark.parametrize("path", SOURCES, ids=_ids(SOURCES))
def test_no_module_reaches_into_another_packages_private_names(path):
    assert private_crossings(path, ROOT, DEFINED) == []


BENCHMARKS_DEFINED = {**DEFINED, **_private_attributes(ROOT, BENCHMARKS)}


@pytest.mark.parametrize("path", BENCHMARKS, ids=_ids(BENCHMARKS))
def test_no_benchmark_reaches_into_private_names_it_does_not_time(path):
    allowed = BENCHMARK_PRIVATE_USES.get(path.name, {})
    assert private_crossings(path, ROOT, BENCHMARKS_DEFINED, allowed) == []


@pytest.mark.parametrize(
    "name, dotted",
    [(name, dotted) for name, uses in BENCHMARK_PRIVATE_USES.items() for dotted in uses],
)
def test_each_private_use_of_a_benchmark_is_still_made(name, dotted):
    """The exceptions stay narrow: an entry that its benchmark no longer needs goes."""
    path = ROOT / "benchmarks" / name
    assert path in BENCHMARKS, f"benchmarks/{name} is gone"
    assert dotted in {d for d, _ in _crossings(path, ROOT, BENCHMARKS_DEFINED)}


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
    bench = tmp_path / "benchmarks/bench.py"
    bench.parent.mkdir()
    bench.write_text(
        "from nmfsc.lib import _inner\nfrom nmfsc import _own\nprint(_own.x, _inner._hidden)\n"
    )
    # Allowing nmfsc.lib._inner lets its import and its attributes pass, nothing else.
    assert private_crossings(bench, tmp_path, defined, {"nmfsc.lib._inner"}) == [
        "line 2: from nmfsc import _own"
    ]
    assert len(private_crossings(bench, tmp_path, defined)) == 3
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
