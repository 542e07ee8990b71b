"""The entries of the API reference's autosummary lists, read once for the tests."""

from pathlib import Path

API_REFERENCE = Path(__file__).parents[1] / "docs/api/index.rst"


def api_reference_entries():
    """``(module, name)`` of every entry of an autosummary list in
    docs/api/index.rst, in the page's order (data entries such as
    ``SOLVERS`` included)."""
    module, in_list = None, False
    for line in API_REFERENCE.read_text(encoding="utf-8").splitlines():
        if line.startswith(".. currentmodule::"):
            module = line.split("::")[1].strip()
        if line.startswith(".. autosummary::"):
            in_list = True
        elif line.strip() and not line.startswith("   "):
            in_list = False
        elif in_list and line.strip() and not line.strip().startswith(":"):
            yield module, line.strip()
