"""Where a run starts: SPEC's random start, replaced by W_init / H_init where
given, and the description of that start that a checkpoint is matched on."""

from __future__ import annotations

import numpy as np

from nmfsc.solvers.checkpoint import array_digest

__all__ = ["fresh_start", "random_start", "start_description"]


def random_start(random_state, N, M, T):
    """SPEC's random start: ``W = |randn(N, M)|`` then ``H = |randn(M, T)|``.

    ``random_state`` is anything :func:`numpy.random.default_rng` takes: None,
    an int (or a SeedSequence) or a Generator (which is advanced).
    """
    try:
        rng = np.random.default_rng(random_state)
    except (TypeError, ValueError) as err:
        raise type(err)(
            "random_state must be None, a non-negative int or a numpy.random.Generator, "
            f"got {random_state!r} ({err})"
        ) from None
    W = np.abs(rng.standard_normal((N, M)))
    H = np.abs(rng.standard_normal((M, T)))
    return W, H


def fresh_start(steps, settings, scale, shape):
    """The solver's start state for a run that does not resume.

    Both random factors are drawn (so that W_init alone leaves H as it would
    have been); W_init (divided by ``scale``, max(V)) and H_init replace them,
    and ``steps.initialize`` applies the solver's own start-up. ``settings``
    are validated :class:`~nmfsc.solvers._settings.LoopSettings`, ``shape``
    is (N, M, T).
    """
    W0, H0 = random_start(settings.random_state, *shape)
    if settings.W_init is not None:
        W0 = settings.W_init / scale
    if settings.H_init is not None:
        H0 = settings.H_init.copy()
    return steps.initialize(np.ascontiguousarray(W0), np.ascontiguousarray(H0))


def start_description(random_state, W_init, H_init):
    """What determines the start, for checkpoint matching (None: not comparable)."""
    seed = None
    if W_init is None or H_init is None:
        if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
            seed = int(random_state)
        else:
            return None
    return {"seed": seed, "W_init": array_digest(W_init), "H_init": array_digest(H_init)}
