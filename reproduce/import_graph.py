"""The import graph of the repository's Python modules, read from the source.

Every ``import`` and ``from ... import`` statement of a module counts, at any
depth (a deferred import inside a function is an edge too), except those
under ``if TYPE_CHECKING:``, which run only for the type checker. An edge
goes to the module named: ``from nmfsc.solvers import hoyer`` leads to
``nmfsc.solvers.hoyer``, ``from nmfsc.solvers import nmf_sc`` to the package
``nmfsc.solvers`` (its ``__init__``). Importing a module also runs its
parent packages' ``__init__``; those are not edges here: a package's
``__init__`` gathers names, it does not take part in what a module computes.

Two readers use it: :func:`reproduce._harness.code_version` (the files that
decide the figures are the modules reachable from the solvers the
experiments run and from the data-set table) and ``tests/test_architecture.py``
(no import circles).
"""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["imported_modules", "module_name", "module_path", "reachable"]


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` under the repository ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_path(name: str, root: Path) -> Path | None:
    """The file of the module ``name`` under ``root``, or None if it is not there."""
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST):
    """Every import statement of ``tree`` that runs, skipping ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    """The absolute module of a (possibly relative) ``from ... import`` in ``name``."""
    if not node.level:
        return node.module or ""
    package = name.split(".") if is_package else name.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(path: Path, root: Path) -> set[str]:
    """The modules under ``root`` that the module at ``path`` imports (see above)."""
    name = module_name(path, root)
    found = set()
    for node in _statements(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            source = _absolute(node, name, path.name == "__init__.py")
            targets = [
                f"{source}.{alias.name}" if module_path(f"{source}.{alias.name}", root) else source
                for alias in node.names
            ]
        found.update(t for t in targets if t != name and module_path(t, root))
    return found


def reachable(starts, root: Path) -> set[str]:
    """The modules reachable from the modules ``starts`` by imports, ``starts`` included."""
    seen, todo = set(), list(starts)
    while todo:
        name = todo.pop()
        path = module_path(name, root)
        if name in seen or path is None:
            continue
        seen.add(name)
        todo.extend(imported_modules(path, root) - seen)
    return seen
