"""A long vector's projection in chunks, on any number of threads (bracket.CHUNK).

The bracketing path's passes sum fixed-size chunks and add the chunks' sums
in order, so the result depends on the vector's length only: the same bits
on 1, 2 or 3 threads, within 4 ulp of the unchunked passes.
"""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nmfsc import l1_for_sparseness, project, project_batch
from nmfsc import projection as api
from nmfsc._kernels import bracket
from nmfsc._kernels import sparse_projection as kernels

# Chunks this short make a few thousand entries several chunks (the default,
# 32,768, is tested through project() below).
SHORT_CHUNK = 1024


def _vector(kind, n, rng):
    if kind == "normal":
        return np.abs(rng.standard_normal(n))
    if kind == "zeros":
        x = np.abs(rng.standard_normal(n))
        x[rng.random(n) < 0.7] = 0.0
        return x
    if kind == "ties":
        return np.round(rng.exponential(size=n), 1)
    if kind == "signed":
        return rng.standard_normal(n)
    if kind == "heavy":
        return rng.lognormal(-8.0, 1.9, n)
    raise ValueError(kind)


def _shape(x, l1, nonneg, chunk, threaded):
    out = np.full(x.size, np.nan)
    passes = bracket.shape_into(x, nonneg, l1, l1, 1.0, out, 0, 6, chunk, threaded)
    return passes, out


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["normal", "zeros", "ties", "signed", "heavy"]),
    chunks=st.integers(1, 9),
    extra=st.integers(-SHORT_CHUNK + 1, SHORT_CHUNK - 1),
    target=st.floats(0.2, 0.95),
    seed=st.integers(0, 2**32 - 1),
)
def test_chunked_passes_agree_with_unchunked_and_across_threads(kind, chunks, extra, target, seed):
    n = max(bracket.BRACKET_MIN_N, chunks * SHORT_CHUNK + extra)
    x = _vector(kind, n, np.random.default_rng(seed))
    nonneg = kind != "signed"
    l1 = l1_for_sparseness(target, n)
    whole_passes, whole = _shape(x, l1, nonneg, n, False)
    passes, serial = _shape(x, l1, nonneg, SHORT_CHUNK, False)
    threaded_passes, threaded = _shape(x, l1, nonneg, SHORT_CHUNK, True)
    # Threads change nothing: the chunks are fixed by n.
    assert threaded_passes == passes
    np.testing.assert_array_equal(threaded, serial)
    exact = project(x, l1, 1.0, nonneg=nonneg, method="hoyer")
    if passes < 0 or whole_passes < 0:
        # A guard or the band's verification can trip on one side only (the
        # exact kernel then decides): what was solved is the projection.
        for solved, out in ((passes, serial), (whole_passes, whole)):
            if solved >= 0:
                np.testing.assert_allclose(out, exact, rtol=0, atol=1e-13)
        return
    # Within 4 ulp of the unchunked passes, save where those are themselves
    # further from the paper's (exact) kernel: on ties the unchunked bracket
    # path was measured 4-6 ulp from it and the chunked one 1 ulp.
    ulp = np.spacing(np.abs(whole).max())
    slack = np.abs(whole - exact).max() + 4 * ulp
    np.testing.assert_allclose(serial, exact, rtol=0, atol=slack)
    np.testing.assert_allclose(serial, whole, rtol=0, atol=slack)
    np.testing.assert_array_equal(np.sign(serial), np.sign(whole) * (serial != 0))


@pytest.mark.parametrize("n", [SHORT_CHUNK * 4, SHORT_CHUNK * 4 + 5, SHORT_CHUNK * 4 + 16])
def test_a_last_chunk_of_a_few_entries_is_summed(n):
    # n = 4 chunks and 5 entries: the last chunk is a tail alone.
    x = _vector("normal", n, np.random.default_rng(n))
    x[-3:] = x.max() * 2.0  # the tail holds the largest entries
    l1 = l1_for_sparseness(0.9, n)
    _, whole = _shape(x, l1, True, n, False)
    for threaded in (False, True):
        passes, out = _shape(x, l1, True, SHORT_CHUNK, threaded)
        assert passes > 0
        np.testing.assert_allclose(out, whole, rtol=0, atol=4 * np.spacing(whole.max()))
        assert np.all(out[-3:] > 0.0)


def test_a_vector_of_one_chunk_keeps_the_unchunked_bits():
    n = bracket.CHUNK
    x = _vector("normal", n, np.random.default_rng(1))
    l1 = l1_for_sparseness(0.8, n)
    _, whole = _shape(x, l1, True, 10 * n, False)
    _, chunked = _shape(x, l1, True, bracket.CHUNK, True)
    np.testing.assert_array_equal(chunked, whole)


@pytest.mark.parametrize("nonneg", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_long_project_is_the_serial_kernel(nonneg, dtype):
    """project() of a vector long enough for the threads gives the bits of
    the one-thread kernel, for both signs and float32 input; project_batch
    with fewer rows than threads, along either axis, too."""
    n = api._THREADED_MIN_N + 4099
    x = _vector("normal" if nonneg else "signed", n, np.random.default_rng(7)).astype(dtype)
    l1 = l1_for_sparseness(0.85, n)
    want = np.empty(n)
    x64 = x.astype(np.float64)
    status, _ = kernels.project_vector(
        x64, l1, 1.0, nonneg, kernels.METHOD_FAST, want, kernels.max_filter_passes(n)
    )
    assert status == kernels.STATUS_OK
    np.testing.assert_array_equal(project(x, l1, 1.0, nonneg=nonneg), want)
    threaded = np.empty(n)
    kernels.project_vector_threaded(
        x64, l1, 1.0, nonneg, kernels.METHOD_FAST, threaded, kernels.max_filter_passes(n)
    )
    np.testing.assert_array_equal(threaded, want)
    for X, axis in ((x[None, :], 1), (x[:, None], 0)):
        got = project_batch(X, l1, 1.0, axis=axis, nonneg=nonneg)
        np.testing.assert_array_equal(got.reshape(-1), want)
        # Targets as arrays take the checked path.
        got = project_batch(X, [l1], [1.0], axis=axis, nonneg=nonneg)
        np.testing.assert_array_equal(got.reshape(-1), want)


def test_long_edge_cases_take_the_exact_kernel_on_threads():
    n = api._THREADED_MIN_N
    for x in (np.zeros(n), np.ones(n), np.r_[np.ones(3), np.zeros(n - 3)]):
        l1 = l1_for_sparseness(0.9, n)
        s = project(x, l1, 1.0)
        assert np.isclose(s.sum(), l1) and np.isclose(np.linalg.norm(s), 1.0)
        out = np.empty(n)
        kernels.project_vector(x, l1, 1.0, True, kernels.METHOD_FAST, out, 40)
        np.testing.assert_array_equal(s, out)
    bad = np.ones(n)
    bad[n // 2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        project(bad, 100.0, 1.0)


_CHILD = """
import hashlib, json, sys
import numpy as np
from nmfsc import l1_for_sparseness, project, project_batch
rng = np.random.default_rng(3)
n = int(sys.argv[1])
x = np.abs(rng.standard_normal(n))
l1 = l1_for_sparseness(0.85, n)
X = np.stack([x, rng.standard_normal(n)])
parts = [project(x, l1, 1.0), project(-x + 3.0, l1, 1.0),
         project_batch(X, l1, 1.0, axis=1, nonneg=False),
         project_batch(X.T.copy(), l1, 1.0, axis=0, nonneg=False)]
print(json.dumps([hashlib.sha256(p.tobytes()).hexdigest() for p in parts]))
"""


def _digests(threads, n):
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_same_bits_on_one_two_and_three_threads():
    n = 4 * bracket.CHUNK + 12345  # five chunks, the last not full
    assert n >= api._THREADED_MIN_N
    one = _digests(1, n)
    assert _digests(2, n) == one
    assert _digests(3, n) == one
    # And those of this process (whatever its threads), through the serial kernel.
    rng = np.random.default_rng(3)
    x = np.abs(rng.standard_normal(n))
    l1 = l1_for_sparseness(0.85, n)
    out = np.empty(n)
    kernels.project_vector(x, l1, 1.0, True, kernels.METHOD_FAST, out, 40)
    assert hashlib.sha256(out.tobytes()).hexdigest() == one[0]
