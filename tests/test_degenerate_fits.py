"""Fits that leave samples with all-zero coefficients or components unused:
nmf_sc warns (DegenerateFitWarning), the result and `nmfsc fit`'s record count them."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import nmfsc
from nmfsc.solvers.framework import degenerate_counts

REPO = Path(__file__).resolve().parent.parent
SETTINGS = dict(sparseness_w=0.9, random_state=0, tol=1e-5, max_iter=3000)


def _text_like():
    """A sparse 60 x 80 'term-document' matrix: at sparseness 0.9 the paper's
    algorithm leaves documents whose coefficients reached zero and stay there."""
    rng = np.random.default_rng(0)
    return sp.random(60, 80, density=0.05, random_state=rng, format="csr")


def _dead_by_definition(V, W, H):
    """All-zero columns of H where W^T V has a positive entry (computed densely)."""
    zero = ~np.any(H != 0, axis=0)
    gain = np.any(W.T @ np.asarray(V.todense()) > 0, axis=0)
    return int(np.count_nonzero(zero & gain))


def test_hoyer_warns_about_dead_samples_and_counts_them():
    V = _text_like()
    with pytest.warns(nmfsc.DegenerateFitWarning) as record:
        result = nmfsc.nmf_sc(V, 5, **SETTINGS)
    assert len(record) == 1 and record[0].filename == __file__  # points at the caller
    dead = _dead_by_definition(V, result.W, result.H)
    assert result.stop_reason == "tol" and dead >= 10 and result.dead_samples == dead
    message = str(record[0].message)
    assert f"left {dead} of 80 samples with all-zero coefficients" in message
    assert 'solver="accelerated"' in message and "--solver accelerated" in message
    # the same start, the other algorithm: every document represented, a lower error
    better = nmfsc.nmf_sc(V, 5, solver="accelerated", **SETTINGS)  # no warning (or the test fails)
    assert better.dead_samples == 0 and better.unused_components == 0
    assert better.relative_error < result.relative_error
    # dense V gives the same count
    with pytest.warns(nmfsc.DegenerateFitWarning):
        dense = nmfsc.nmf_sc(V.toarray(), 5, **SETTINGS)
    assert dense.dead_samples == dead


def test_a_sample_no_basis_vector_touches_is_not_dead():
    """A zero column of V (or one outside every basis vector's support) is rightly
    left at zero: no warning."""
    V = np.abs(np.random.default_rng(1).standard_normal((20, 30)))
    V[:, 7] = 0.0
    result = nmfsc.nmf_sc(V, 3, sparseness_w=0.5, random_state=0, tol=1e-4)
    assert not np.any(result.H[:, 7]) and result.dead_samples == 0


def test_degenerate_counts():
    W = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # component 2 unused (zero column)
    H = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    V = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0]])  # sample 3: all zero
    dead, unused = degenerate_counts(W, H, lambda columns: V[:, columns])
    assert (dead, unused) == (1, 1)  # sample 1 is dead (W^T v_1 > 0); sample 3 is not
    dead, _ = degenerate_counts(W, H, lambda columns: sp.csc_matrix(V)[:, columns])
    assert dead == 1


def test_other_solvers_count_without_warning():
    V = _text_like()
    result = nmfsc.nmf_euclidean(V, 5, random_state=0, max_iter=200, tol=1e-4)
    assert result.dead_samples >= 0 and result.unused_components >= 0


def test_fit_command_records_dead_samples_and_objective_units(tmp_path):
    V = _text_like()
    path = tmp_path / "tfidf.mtx"
    import scipy.io

    scipy.io.mmwrite(path, V)
    out = tmp_path / "fit.npz"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nmfsc",
            "fit",
            str(path),
            "-k",
            "5",
            "--sparseness-w",
            "0.9",
            "--tol",
            "1e-5",
            "--max-iter",
            "3000",
            "--no-progress",
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "DegenerateFitWarning" in done.stderr and "--solver accelerated" in done.stderr
    with np.load(out, allow_pickle=False) as z:
        record = json.loads(str(z["record"]))
        W, H = z["W"], z["H"]
    assert record["dead_samples"] == _dead_by_definition(V, W, H) >= 10
    assert record["unused_components"] == 0
    assert record["objective_units"] == "V" and "||V - W H||_F^2" in record["objective_definition"]


def test_fit_command_keeps_float32(tmp_path):
    V = np.abs(np.random.default_rng(2).standard_normal((12, 15))).astype(np.float32)
    np.save(tmp_path / "v.npy", V)
    out = tmp_path / "fit.npz"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nmfsc",
            "fit",
            str(tmp_path / "v.npy"),
            "-k",
            "3",
            "--sparseness-w",
            "0.5",
            "--no-progress",
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    with np.load(out, allow_pickle=False) as z:
        assert z["W"].dtype == np.float32 and z["H"].dtype == np.float32
        assert json.loads(str(z["record"]))["dtype"] == "float32"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        direct = nmfsc.nmf_sc(V, 3, sparseness_w=0.5, random_state=0)
    assert direct.W.dtype == np.float32  # the library keeps it too
