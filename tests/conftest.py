"""Shared test set-up: hypothesis profiles and a one-off warm-up of the kernels.

Profiles (pick one with ``--hypothesis-profile=NAME``):

- ``default``: no deadline (the first call of a kernel compiles it), 60 examples;
- ``ci``: the same, derandomized, so that a CI run is reproducible;
- ``thorough``: 2000 examples per property, for a long run by hand.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("default", max_examples=60, **_COMMON)
settings.register_profile("ci", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile("thorough", max_examples=2000, **_COMMON)
settings.load_profile("default")


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
