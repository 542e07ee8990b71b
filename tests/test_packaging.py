"""What an install ships: the nmfsc package only, not the repository's tooling.

``reproduce/`` (like ``demos/`` and ``benchmarks/``) is run from the repository root
(``python -m reproduce all``) and writes into the repository's ``figures/``; an install
must not claim a generic top-level name such as ``reproduce``. The tests import it from
the repository root (``python -m pytest`` from there, and pytest's ``pythonpath``).
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _find_options():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["setuptools"]["packages"]["find"]


def test_setuptools_discovery_finds_only_nmfsc():
    """The packages setuptools installs, found as it finds them from pyproject.toml."""
    setuptools = pytest.importorskip("setuptools")
    options = _find_options()
    # pyproject.toml's [tool.setuptools.packages.find] defaults to namespaces = true.
    find = (
        setuptools.find_namespace_packages
        if options.get("namespaces", True)
        else setuptools.find_packages
    )
    packages = [
        package
        for where in options.get("where", ["."])
        for package in find(
            where=str(ROOT / where),
            include=options.get("include", ["*"]),
            exclude=options.get("exclude", []),
        )
    ]
    assert "nmfsc" in packages and "nmfsc.datasets" in packages
    assert {package.split(".")[0] for package in packages} == {"nmfsc"}


def test_the_tests_import_reproduce_from_the_repository():
    import reproduce

    assert Path(reproduce.__file__).resolve() == ROOT / "reproduce" / "__init__.py"
