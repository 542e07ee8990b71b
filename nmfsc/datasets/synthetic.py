"""Synthetic data with known parts, and a score of how well a basis recovers them.

Each generator returns the data matrix ``V`` (one image per column, flattened
row-major) and the true parts (one per column, same pixel order), with ``V`` an exact
non-negative combination of the parts.
"""

from __future__ import annotations

import itertools
import numbers

import numpy as np

from nmfsc._parameters import check
from nmfsc._validation import as_float_array, check_random_state

SWIMMER_SHAPE = (32, 32)
"""(height, width) of a swimmer image."""

# Swimmer geometry (row, column), 0-based, on a 32 x 32 canvas. The torso is a vertical
# line of 14 pixels. Each limb hangs from a joint beside an end of the torso: a straight
# 8-connected line of 6 pixels (unit steps, so diagonals have 6 pixels too) starting
# one step from the joint, in one of 4 directions. No two parts share a pixel, and no
# two limbs cross.
_TORSO = [(row, 15) for row in range(9, 23)]
_LIMBS = (
    # (joint, the 4 unit steps the limb can point in)
    ((9, 14), [(-1, 0), (-1, -1), (0, -1), (1, -1)]),  # left arm: up .. down-left
    ((9, 16), [(-1, 0), (-1, 1), (0, 1), (1, 1)]),  # right arm
    ((22, 14), [(1, 0), (1, -1), (0, -1), (-1, -1)]),  # left leg: down .. up-left
    ((22, 16), [(1, 0), (1, 1), (0, 1), (-1, 1)]),  # right leg
)
_LIMB_LENGTH = 6


def _part_image(pixels) -> np.ndarray:
    image = np.zeros(SWIMMER_SHAPE)
    rows, cols = zip(*pixels, strict=True)
    image[list(rows), list(cols)] = 1.0
    return image.ravel()


def swimmer() -> tuple[np.ndarray, np.ndarray]:
    """The swimmer data set of Donoho & Stodden (2004), redrawn.

    A stick figure on a 32 x 32 canvas: a torso (a vertical line of 14 pixels) that is
    always present, and four limbs (lines of 6 pixels), each in one of four positions,
    giving 4 ** 4 = 256 images. No two parts overlap, so every image is the sum of its
    five parts. This follows the construction of Donoho & Stodden ("When does
    non-negative matrix factorization give a correct decomposition into parts?",
    NIPS 2003); it is drawn here, not read from their file, so the pixels differ.

    Returns
    -------
    V : ndarray of float64, shape (1024, 256)
        Binary images, one per column, flattened row-major:
        ``V[:, j].reshape(32, 32)`` is upright. Column ``j`` has limb ``l`` in
        position ``(j // 4 ** (3 - l)) % 4`` (limbs: left arm, right arm, left leg,
        right leg).
    parts : ndarray of float64, shape (1024, 17)
        The torso (column 0), then limb ``l`` in position ``p`` at column
        ``1 + 4 * l + p``. The torso is in every image, so no factorization can tell
        it apart from a constant offset of the limbs; score limb recovery with
        ``parts[:, 1:]``.

    See Also
    --------
    bars : Another synthetic data set with known parts.
    part_recovery : Scores a basis against the known parts.

    References
    ----------
    D. Donoho and V. Stodden, "When does non-negative matrix factorization
    give a correct decomposition into parts?", NIPS 16, 2004.

    Examples
    --------
    >>> from nmfsc.datasets import SWIMMER_SHAPE, swimmer
    >>> V, parts = swimmer()
    >>> V.shape, parts.shape, SWIMMER_SHAPE
    ((1024, 256), (1024, 17), (32, 32))
    >>> pose = V[:, 0].reshape(SWIMMER_SHAPE)  # the first of the 256 stick figures
    """
    limbs = [
        [
            _part_image([(r0 + k * dr, c0 + k * dc) for k in range(1, _LIMB_LENGTH + 1)])
            for dr, dc in steps
        ]
        for (r0, c0), steps in _LIMBS
    ]
    parts = np.column_stack([_part_image(_TORSO)] + [p for limb in limbs for p in limb])
    columns = [
        parts[:, 0] + sum(limbs[limb][p] for limb, p in enumerate(pose))
        for pose in itertools.product(range(4), repeat=4)
    ]
    return np.column_stack(columns), parts


def bars(
    n_samples: int = 1000,
    size: int = 8,
    p: float | None = None,
    random_state: int | np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Random superpositions of horizontal and vertical bars (Foldiak 1990).

    Each of the ``2 * size`` bars of a ``size x size`` image is present in a sample
    independently with probability ``p``; a sample is the sum of its bars (pixels where
    two bars cross are 2), so ``V = parts @ H`` exactly for a binary ``H``.

    Parameters
    ----------
    n_samples : int, default 1000
        Number of images (columns).
    size : int, default 8
        Side of the square images; there are ``size`` horizontal and ``size`` vertical
        bars.
    p : float or None
        Probability of each bar; ``1 / size`` (two bars per image on average) when None.
    random_state : int, numpy.random.Generator or None
        Seed or generator (``np.random.default_rng``).

    Returns
    -------
    V : ndarray of float64, shape (size ** 2, n_samples)
        Images flattened row-major; ``V[:, j].reshape(size, size)`` is upright. Values
        in {0, 1, 2}; an image may be empty.
    parts : ndarray of float64, shape (size ** 2, 2 * size)
        Binary bar images: column ``i < size`` is the horizontal bar on row ``i``,
        column ``size + i`` the vertical bar on column ``i``.

    See Also
    --------
    swimmer : Another synthetic data set with known parts.
    part_recovery : Scores a basis against the known parts.

    References
    ----------
    P. Foldiak, "Forming sparse representations by local anti-Hebbian
    learning", Biological Cybernetics 64:165-170, 1990.

    Examples
    --------
    >>> import numpy as np
    >>> from nmfsc.datasets import bars
    >>> V, parts = bars(n_samples=500, size=8, random_state=0)
    >>> V.shape, parts.shape
    ((64, 500), (64, 16))
    >>> H = np.linalg.lstsq(parts, V, rcond=None)[0]  # each image is a sum of bars
    >>> bool(np.allclose(parts @ H, V))
    True
    """
    n_samples = check("n_samples", n_samples)
    size = check("size", size)
    check_random_state(random_state)
    if p is None:
        p = 1.0 / size
    elif isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"p must be a probability in [0, 1] or None, got {p!r}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p}")
    eye = np.eye(size)
    ones = np.ones(size)
    horizontal = [np.outer(eye[i], ones).ravel() for i in range(size)]
    vertical = [np.outer(ones, eye[i]).ravel() for i in range(size)]
    parts = np.column_stack(horizontal + vertical)
    rng = np.random.default_rng(random_state)
    H = (rng.random((2 * size, n_samples)) < p).astype(np.float64)
    return parts @ H, parts


def part_recovery(W: np.ndarray, true_parts: np.ndarray) -> float:
    """How well the columns of a basis recover known parts, from 0 to 1.

    Every true part is matched with a different column of ``W`` so that the sum of
    their cosine similarities (``<w, t> / (||w|| ||t||)``, the correlation without
    centering, which suits non-negative images) is largest
    (:func:`scipy.optimize.linear_sum_assignment`). The score is the mean similarity of the
    matched pairs over all true parts; parts left without a column (when ``W`` has
    fewer columns than there are parts) count as 0, and extra columns of ``W`` are
    ignored. A score of 1 means every part is, up to scale, a column of ``W``.

    Parameters
    ----------
    W : ndarray, shape (n_pixels, n_components)
        Learned basis, one vector per column.
    true_parts : ndarray, shape (n_pixels, n_parts)
        True parts, one per column.

    Returns
    -------
    score : float
        In [0, 1] for non-negative inputs (in [-1, 1] in general). Zero columns have
        similarity 0 with everything.

    Raises
    ------
    ValueError
        If an input is not 2-D, is empty, holds NaN or infinity, the row counts
        differ, or every true part is zero.
    TypeError
        If an input is not numeric, or is a masked array.

    See Also
    --------
    swimmer, bars : Data sets with known parts.
    nmfsc.locality : A score that needs no known parts.

    Examples
    --------
    >>> from nmfsc.datasets import bars, part_recovery
    >>> V, parts = bars(n_samples=200, size=8, random_state=0)
    >>> round(part_recovery(parts, parts), 12)
    1.0
    >>> round(part_recovery(3.0 * parts[:, ::-1], parts), 12)  # order and scale do not matter
    1.0
    >>> round(part_recovery(parts[:, :8], parts), 12)  # the 8 parts without a column count 0
    0.5
    """
    from scipy.optimize import linear_sum_assignment

    W = as_float_array(W, "W", ndim=2)
    T = as_float_array(true_parts, "true_parts", ndim=2)
    if W.shape[0] != T.shape[0]:
        raise ValueError(
            f"W {W.shape} and true_parts {T.shape} must be 2-D with the "
            f"same number of rows (pixels)"
        )
    if not np.any(T):
        raise ValueError(
            "true_parts is all zero: a part must have a non-zero entry to be recovered"
        )
    similarity = _unit_columns(T).T @ _unit_columns(W)
    rows, cols = linear_sum_assignment(similarity, maximize=True)
    return float(similarity[rows, cols].sum() / T.shape[1])


def _unit_columns(A: np.ndarray) -> np.ndarray:
    """A's columns at unit L2 norm (zero columns stay zero), at any scale of A:
    each column is first divided by its largest magnitude, so that the norm
    neither underflows (1e-300) nor overflows (1e300)."""
    peaks = np.max(np.abs(A), axis=0)
    A = np.divide(A, peaks, out=np.zeros_like(A), where=peaks > 0)
    norms = np.linalg.norm(A, axis=0)
    return np.divide(A, norms, out=np.zeros_like(A), where=norms > 0)
