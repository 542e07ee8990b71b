"""README's install, ``pip install -e ".[test]"``, has no Dask, and README's test
command must pass there as it does in CI (which also installs the ``dask``
extra). So a test that imports Dask, or a module of nmfsc's Dask backend
(``nmfsc.dask_backend.<module>``: those import Dask), first skips without it,
``pytest.importorskip("dask")``: at module level before the import, or in the
same function before it. Checked on the source (AST), so that the rule holds
whether or not Dask is installed where the tests run.
"""

import ast
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
DASK_BACKEND = TESTS.parent / "nmfsc" / "dask_backend"
OPTIONAL = ("dask", "distributed")
# Statements whose bodies run later (a skip inside one guards only its own body).
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _needs_dask(name):
    if name.split(".")[0] in OPTIONAL:
        return True
    return name.startswith("nmfsc.dask_backend.")


def _imported(node):
    """The modules an import statement loads (absolute imports only)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level and node.module:
        names = [node.module]
        if node.module == "nmfsc.dask_backend":  # from nmfsc.dask_backend import chunked_projection
            names += [
                f"{node.module}.{alias.name}"
                for alias in node.names
                if (DASK_BACKEND / f"{alias.name}.py").is_file()
            ]
        return names
    return []


def _is_dask_skip(node):
    """``pytest.importorskip("dask" ...)`` (or "distributed")."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "importorskip"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and str(node.args[0].value).split(".")[0] in OPTIONAL
    )


def _first_skip(statements):
    """The line of the first Dask skip among these statements (and inside them), or None."""
    lines = [
        node.lineno
        for statement in statements
        for node in ast.walk(statement)
        if _is_dask_skip(node)
    ]
    return min(lines, default=None)


def unguarded_dask_imports(source):
    """(line, module) of every import of Dask or the Dask backend that no earlier
    Dask skip guards, in its function or at module level."""
    tree = ast.parse(source)
    module_skip = _first_skip([s for s in tree.body if not isinstance(s, _DEFINITIONS)])
    found = []

    def visit(statements, skip):
        for statement in statements:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                own = _first_skip(statement.body)
                guard = min((line for line in (skip, own) if line is not None), default=None)
                visit(statement.body, guard)
                continue
            if isinstance(statement, ast.ClassDef):
                visit(statement.body, skip)
                continue
            for node in ast.walk(statement):
                for name in _imported(node):
                    if _needs_dask(name) and (skip is None or skip > node.lineno):
                        found.append((node.lineno, name))

    visit(tree.body, module_skip)
    return found


TEST_FILES = sorted(TESTS.glob("*.py"))


@pytest.mark.parametrize("path", TEST_FILES, ids=[p.name for p in TEST_FILES])
def test_every_dask_import_in_the_tests_skips_without_dask(path):
    unguarded = unguarded_dask_imports(path.read_text(encoding="utf-8"))
    assert not unguarded, (
        f"{path.name} imports Dask without pytest.importorskip('dask') first "
        f"(line, module): {unguarded}; README's install has no Dask"
    )


def test_the_checker_finds_an_unguarded_import_and_accepts_a_guarded_one():
    unguarded = textwrap.dedent(
        """
        import pytest

        def test_a():
            from nmfsc.dask_backend.chunked_projection import trial

        def test_b():
            from nmfsc.dask_backend import chunked

        def test_c():
            import dask.array as da
            pytest.importorskip("dask")
        """
    )
    assert [name for _, name in unguarded_dask_imports(unguarded)] == [
        "nmfsc.dask_backend.chunked_projection",
        "nmfsc.dask_backend.chunked",
        "dask.array",
    ]
    guarded = textwrap.dedent(
        """
        import pytest
        from nmfsc import dask_backend          # the package itself needs no Dask

        def test_a():
            pytest.importorskip("dask")
            from nmfsc.dask_backend.chunked_projection import trial
        """
    )
    assert unguarded_dask_imports(guarded) == []
    at_module_level = textwrap.dedent(
        """
        import pytest

        pytest.importorskip("dask")
        distributed = pytest.importorskip("distributed")
        import dask.array as da

        def test_a():
            from nmfsc.dask_backend.chunked_projection import trial
        """
    )
    assert unguarded_dask_imports(at_module_level) == []
