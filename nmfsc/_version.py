"""nmfsc's version, from one source: pyproject.toml, read from the installed metadata."""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("nmfsc")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
