"""The package imports cleanly and exports what it documents."""

import nmfsc


def test_public_names_exist():
    for name in nmfsc.__all__:
        assert hasattr(nmfsc, name), name


def test_version_is_a_string():
    assert isinstance(nmfsc.__version__, str) and nmfsc.__version__
