"""The package imports cleanly, exports what it documents, and states one version."""

import importlib.metadata
import re
from pathlib import Path

import pytest

import nmfsc

ROOT = Path(__file__).resolve().parents[1]


def test_public_names_exist():
    for name in nmfsc.__all__:
        assert hasattr(nmfsc, name), name


def test_version_is_a_string():
    assert isinstance(nmfsc.__version__, str) and nmfsc.__version__


def _pyproject_version():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'^version\s*=\s*"([^"]+)"\s*$', text, flags=re.MULTILINE)
    assert match is not None, "pyproject.toml has no static version"
    return match.group(1)


def test_version_comes_from_the_installed_metadata():
    try:
        installed = importlib.metadata.version("nmfsc")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("nmfsc is not installed (imported from the source tree)")
    assert nmfsc.__version__ == installed == _pyproject_version()


def test_citation_file_names_the_same_version_and_the_paper():
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    match = re.search(r"^version:\s*(\S+)\s*$", text, flags=re.MULTILINE)
    assert match is not None and match.group(1) == _pyproject_version()
    assert "Non-negative matrix factorization with sparseness constraints" in text
    assert "Hoyer" in text


def test_package_is_typed():
    assert (Path(nmfsc.__file__).parent / "py.typed").is_file()
