"""nmfsc.observed.Observed: one type for the observed entries of V."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from nmfsc import ConvergenceWarning, nmf_euclidean, nmf_sc
from nmfsc.observed import Observed

V = np.abs(np.random.default_rng(0).standard_normal((15, 20)))
MASK = np.random.default_rng(1).random(V.shape) < 0.8


@pytest.mark.parametrize(
    ("mask", "error", "match"),
    [
        ("all", ValueError, "mask must be a boolean array or 'stored', got 'all'"),
        (MASK.astype(int), TypeError, "mask must be a boolean array .* got dtype int"),
        (sp.csr_matrix(MASK), TypeError, "mask must be a dense boolean array"),
    ],
)
def test_the_public_mask_is_refused_in_one_line(mask, error, match):
    with pytest.raises(error, match=match):
        Observed.of(mask)
    with pytest.raises(error, match=match):
        nmf_sc(V, 3, sparseness_w=0.5, mask=mask)


def test_an_observed_is_the_mask_it_holds():
    """The same fit from a boolean mask and from its Observed, bit for bit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for solver in (nmf_sc, nmf_euclidean):
            a = solver(V, 3, mask=MASK, random_state=0, max_iter=20)
            b = solver(V, 3, mask=Observed.of(MASK), random_state=0, max_iter=20)
            np.testing.assert_array_equal(a.W, b.W)
            np.testing.assert_array_equal(a.H, b.H)
        S = sp.csr_matrix(V * MASK)
        a = nmf_sc(S, 3, sparseness_h=0.5, mask="stored", random_state=0, max_iter=20)
        b = nmf_sc(S, 3, sparseness_h=0.5, mask=Observed.of("stored"), random_state=0, max_iter=20)
        np.testing.assert_array_equal(a.H, b.H)


def test_missing_values_become_an_observed():
    X = V.copy()
    X[~MASK] = np.nan
    filled, observed = Observed.from_nan(X, "X")
    np.testing.assert_array_equal(observed.mask, MASK)
    assert observed.count() == MASK.sum() and not np.isnan(filled).any()
    np.testing.assert_array_equal(observed.T.mask, MASK.T)
    assert Observed.from_nan(V, "X")[1] is None  # nothing missing: the unmasked path


def test_an_observed_is_one_kind_of_entries_never_two():
    with pytest.raises(ValueError, match="one of a dense mask"):
        Observed()
    with pytest.raises(ValueError, match="one of a dense mask"):
        Observed(mask=MASK, stored=True)
    pattern = Observed.all_but([0], [0], MASK.shape).unobserved
    with pytest.raises(ValueError, match="one of a dense mask"):
        Observed(stored=True, unobserved=pattern)
    assert Observed(stored=True).count(sp.csr_matrix(V * MASK)) == MASK.sum()
