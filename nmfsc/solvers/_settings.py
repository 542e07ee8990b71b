"""The loop settings every solver takes: defined, documented and validated once.

The fifteen loop keywords are the fields of :class:`LoopSettings` (names,
order, defaults) and nowhere else; their documentation is
:data:`nmfsc.solvers._docs.OPTIONS`. A public solver is written
``def solver(V, n_components, *, <its own keywords>, **loop)`` and decorated
with :func:`takes_loop_settings`, which gives it the full signature that
``inspect.signature`` and ``help()`` show: its own parameters, then the
fields as keyword-only parameters with their defaults. The solver turns
``loop`` into settings with :meth:`LoopSettings.from_keywords` (an unknown
keyword is the TypeError Python gives for any function) and hands them to
:func:`nmfsc.solvers._loop.solve`, which validates them with
:meth:`LoopSettings.validated`.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from numpy.typing import ArrayLike

from nmfsc._parameters import check
from nmfsc._validation import check_factor
from nmfsc.solvers._docs import OPTIONS
from nmfsc.solvers._start import INITS

if TYPE_CHECKING:
    from nmfsc.solvers._result import IterationState

__all__ = ["LoopOptions", "LoopSettings", "takes_loop_settings"]

F = TypeVar("F", bound=Callable[..., Any])


class LoopOptions(TypedDict, total=False):
    """The types of a solver's ``**loop`` keywords, for type checkers.

    A public solver is annotated ``**loop: Unpack[LoopOptions]``, so that mypy
    checks the keyword names and types of a call. The keys are the fields of
    :class:`LoopSettings` (``tests/test_typing.py`` checks that they agree).
    """

    init: str
    W_init: ArrayLike | None
    H_init: ArrayLike | None
    random_state: Any
    max_iter: int
    tol: float
    window: int
    stationarity_tol: float | None
    max_time: float | None
    callback: Callable[[IterationState], bool | None] | None
    progress: bool
    checkpoint: str | os.PathLike[str] | None
    checkpoint_every: int
    checkpoint_seconds: float | None
    resume: bool


@dataclasses.dataclass(frozen=True)
class LoopSettings:
    init: str = "random"
    W_init: object = None
    H_init: object = None
    random_state: object = None
    max_iter: int = 10000
    tol: float = 1e-5
    window: int = 10
    stationarity_tol: float | None = None
    max_time: float | None = None
    callback: object = None
    progress: bool = False
    checkpoint: object = None
    checkpoint_every: int = 50
    checkpoint_seconds: float | None = None
    resume: bool = False

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The loop keywords, in signature order."""
        return tuple(field.name for field in dataclasses.fields(cls))

    @classmethod
    def from_keywords(cls, solver: str, keywords: Mapping[str, Any]) -> LoopSettings:
        """The settings from a solver's ``**loop`` keywords (the others default).

        A name that is not a field raises the TypeError Python gives for an
        unknown keyword argument of ``solver`` (the function's name).
        """
        for name in keywords:
            if name not in cls.names():
                raise TypeError(f"{solver}() got an unexpected keyword argument '{name}'")
        return cls(**keywords)

    def validated(self, N: int, M: int, T: int) -> LoopSettings:
        """The settings checked and converted, for data N x T and M components.

        init must be one of :data:`~nmfsc.solvers._start.INITS` ("custom"
        needs both W_init and H_init); W_init and H_init become float64
        arrays (shapes (N, M), (M, T)), max_iter an int, tol and the times
        floats, checkpoint a Path (or None).
        Raises TypeError or ValueError naming the offending keyword.
        """
        if not isinstance(self.init, str) or self.init not in INITS:
            allowed = ", ".join(map(repr, INITS))
            raise ValueError(f"init must be one of {allowed}, got {self.init!r}")
        if self.init == "custom" and (self.W_init is None or self.H_init is None):
            raise ValueError("init='custom' needs both W_init and H_init")
        W_init = check_factor(self.W_init, "W_init", (N, M))
        H_init = check_factor(self.H_init, "H_init", (M, T))
        max_iter = check("max_iter", self.max_iter)
        tol = check("tol", self.tol)
        window = check("window", self.window)
        stationarity_tol = check("stationarity_tol", self.stationarity_tol)
        max_time = check("max_time", self.max_time)
        if self.callback is not None and not callable(self.callback):
            raise TypeError(f"callback must be callable or None, got {self.callback!r}")
        checkpoint_every = check("checkpoint_every", self.checkpoint_every)
        checkpoint_seconds = check("checkpoint_seconds", self.checkpoint_seconds)
        checkpoint = self.checkpoint
        if checkpoint is not None and not isinstance(checkpoint, (str, Path)):
            raise TypeError(f"checkpoint must be a path (str or Path) or None, got {checkpoint!r}")
        if self.resume and checkpoint is None:
            raise ValueError("resume=True needs a checkpoint path (checkpoint=...)")
        return dataclasses.replace(
            self,
            W_init=W_init,
            H_init=H_init,
            max_iter=max_iter,
            tol=tol,
            window=window,
            stationarity_tol=stationarity_tol,
            max_time=max_time,
            checkpoint=None if checkpoint is None else Path(checkpoint),
            checkpoint_every=checkpoint_every,
            checkpoint_seconds=checkpoint_seconds,
        )


LoopSettings.__doc__ = f"""The loop keywords of a solver call (start, stopping, callback,
    progress bar and checkpoints), as given.

    Parameters
    ----------
{OPTIONS}
    """


def takes_loop_settings(func: F) -> F:
    """Give a solver ``func(V, n_components, *, ..., **loop)`` the signature with
    the loop keywords spelled out: its own parameters, then every
    :class:`LoopSettings` field as a keyword-only parameter with its default.
    """
    signature = inspect.signature(func)
    own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    loop = [
        inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=field.default)
        for field in dataclasses.fields(LoopSettings)
    ]
    func.__signature__ = signature.replace(parameters=own + loop)  # type: ignore[attr-defined]
    return func
