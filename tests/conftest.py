"""Shared test fixtures.

Tests marked ``@pytest.mark.realdata`` need the real data sets (CBCL, ORL, natural
images) in nmfsc's data folder (``$NMFSC_DATA_DIR``, else the OS cache). Without them
such tests are skipped with the reason, except under CI (``CI=true``), where the data
must be there and its absence fails them.
"""

import os

import pytest


def _missing_real_data():
    """Return the data folder and the registry files missing from it."""
    from nmfsc.datasets._fetchers import DATASETS, default_gate

    folder = default_gate().path
    missing = [name for dataset in DATASETS.values() for name in dataset.files
               if not (folder / name).is_file()]
    return folder, missing


def _require_real_data():
    folder, missing = _missing_real_data()
    if missing:
        reason = (
            f"real data sets not found: {len(missing)} file(s) missing from {folder} "
            f"(e.g. {missing[0]}); set NMFSC_DATA_DIR to a folder that holds them, or "
            f"run 'python -m nmfsc.datasets download'"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}. Under CI=true the real data must be present.")
        pytest.skip(reason)
    return folder


@pytest.fixture(scope="session")
def require_real_data():
    """The data folder, once it is known to hold every real data file.

    Skips the test when files are missing, or fails it when ``CI`` is ``"true"``.
    """
    return _require_real_data()


def pytest_runtest_setup(item):
    """Tests marked ``realdata`` get the same check as ``require_real_data``."""
    if item.get_closest_marker("realdata") is not None:
        _require_real_data()
