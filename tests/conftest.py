"""Shared test set-up: real-data gating, hypothesis profiles, kernel warm-up.

Tests marked ``@pytest.mark.realdata`` need the real data sets (CBCL, ORL, natural
images) in nmfsc's data folder (``$NMFSC_DATA_DIR``, else the OS cache). Without them
such tests are skipped with the reason, except under CI (``CI=true``), where the data
must be there and its absence fails them.

Hypothesis profiles (pick one with ``--hypothesis-profile=NAME``; under ``CI=true``
the ``ci`` profile is the default):

- ``default``: no deadline (the first call of a kernel compiles it), 60 examples;
- ``ci``: the same, derandomized, so that a CI run is reproducible;
- ``thorough``: 2000 examples per property, for a long run by hand.
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("default", max_examples=60, **_COMMON)
settings.register_profile("ci", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile("thorough", max_examples=2000, **_COMMON)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "default")


@pytest.fixture(scope="session", autouse=True)
def _warm_kernels():
    """Compile every kernel variant once, before any timed or property test."""
    from nmfsc import project, project_batch

    x = np.array([0.3, -0.2, 0.9, 0.1])
    for method in ("fast", "hoyer"):
        for nonneg in (True, False):
            project(x, 1.2, 1.0, method=method, nonneg=nonneg)
            for parallel in (False, True):
                project_batch(
                    np.tile(x, (3, 1)),
                    1.2,
                    1.0,
                    axis=1,
                    method=method,
                    nonneg=nonneg,
                    parallel=parallel,
                )


@pytest.fixture
def no_densify(monkeypatch):
    """Every scipy.sparse toarray / todense raises: V must never be made dense."""
    import scipy.sparse as sp

    def refuse(self, *args, **kwargs):
        raise AssertionError(f"a sparse matrix of shape {self.shape} was made dense")

    for name in ("csr_matrix", "csc_matrix", "coo_matrix", "csr_array", "csc_array", "coo_array"):
        for method in ("toarray", "todense"):
            monkeypatch.setattr(getattr(sp, name), method, refuse)


def _missing_real_data():
    """Return the data folder and the registry files missing from it."""
    from nmfsc.datasets._fetchers import default_gate
    from nmfsc.datasets.catalog import DATASETS

    folder = default_gate().path
    missing = [
        name
        for dataset in DATASETS.values()
        for name in dataset.files
        if not (folder / name).is_file()
    ]
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
