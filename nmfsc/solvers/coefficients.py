"""The coefficients of data for a fixed basis: nmf_sc's H step alone.

:func:`fit_coefficients` is what :meth:`nmfsc.SparseNMF.transform` runs: the H
step of :class:`~nmfsc.solvers.hoyer.HoyerSteps` (the projected gradient step
when sparseness_h is set, else the multiplicative update) in the shared loop,
with W held fixed. V that a backend running those steps accepts (a CuPy
array: :data:`nmfsc.gpu_backend.GPU_BACKEND` declares
:class:`CoefficientSteps`) is handed to it, as :func:`nmfsc.nmf_sc` hands it V.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from nmfsc._parameters import check
from nmfsc.backends import backend_for
from nmfsc.observed import Observed
from nmfsc.solvers import dispatch
from nmfsc.solvers._loop import solve
from nmfsc.solvers._masked_data import MaskedRun
from nmfsc.solvers._result import NMFResult
from nmfsc.solvers._settings import LoopOptions, LoopSettings
from nmfsc.solvers._start import refuse_dead_components
from nmfsc.solvers.hoyer import HoyerSteps, check_average_sparseness
from nmfsc.solvers.masked import MaskedCoefficientSteps

if TYPE_CHECKING:  # typing.Unpack is Python >= 3.11; only the type checker needs it
    from typing_extensions import Unpack

__all__ = ["CoefficientSteps", "fit_coefficients"]


class CoefficientSteps(HoyerSteps):
    """nmf_sc's H step alone, W fixed: the coefficients of data for a given basis.

    With s_H set, the projected gradient step of :class:`HoyerSteps` (rows of H
    at unit L2 norm and sparseness s_H); otherwise the multiplicative update
    without the row rescaling (which would change W). The start is nmf_sc's:
    rows of H scaled to unit L2 norm (and projected if s_H is set); W is used
    as given (no projection).
    """

    name = "nmf_sc (coefficients, W fixed)"
    degenerate_hint = None  # W is given: counted in the result, no solver to suggest
    measures_stationarity = False  # W is given, not fitted

    def __init__(self, data, n_components, sparseness_h, average_sparseness=False):
        # By keyword and only when set: a backend's steps (DeviceCoefficientSteps)
        # take the four arguments of nmf_sc's steps on its data.
        average = {"average_sparseness": True} if average_sparseness else {}
        super().__init__(data, n_components, None, sparseness_h, **average)

    def refuse_dead(self, W, H):
        """Only H moves: a zero column of the given basis W just gives that
        component zero coefficients."""
        refuse_dead_components(self.name, None, H if self.proj_h is None else None)

    def step(self, state):
        W, H = state["W"], state["H"]
        mu_h = float(state["mu_H"])
        if self.proj_h is None:
            _, H = self.h_multiplicative(W, H, rescale=False)
            energy = None  # h_multiplicative keeps no products: recorded exactly below
        else:
            H, mu_h, energy, _ = self.h_projected(W, H, mu_h)
            if H is None:
                return {**state, "mu_H": mu_h}, None, "step_size"
        new = {"W": W, "H": H, "mu_W": state["mu_W"], "mu_H": mu_h}
        if energy is None:
            return new, self.objective(W, H), None
        return new, self.recorded(energy, W, H), None


def fit_coefficients(
    V: ArrayLike,
    W: ArrayLike,
    *,
    sparseness_h: float | None = None,
    average_sparseness: bool = False,
    mask: ArrayLike | str | Observed | None = None,
    **loop: Unpack[LoopOptions],
) -> NMFResult:
    """H for data V (N x T) with the basis W (N x M, in V's units) held fixed.

    Runs nmf_sc's H step (see :class:`CoefficientSteps`) in the shared loop,
    with its stopping rule, warnings and result; the returned NMFResult's W is
    the given W (up to rounding by ``max(V)``), its H the coefficients. H starts
    from the random draw of ``random_state`` (nmf_sc's ``"random"`` start,
    ``|randn|`` entries; W's draw unused).
    With ``sparseness_h`` set, every row of H -- one component's coefficients
    across the T samples of *this* V -- is kept at unit L2 norm and that
    sparseness, as in nmf_sc (with ``average_sparseness``, their mean is, as
    in :func:`nmfsc.nmf_sc`; in memory, without a mask); T must then be at
    least 2. ``loop`` are nmf_sc's
    loop keywords (:class:`~nmfsc.solvers._settings.LoopSettings`) except
    W_init: the start of W is ``W``. ``mask``: where V was observed, as in
    :func:`nmfsc.nmf_sc` (:class:`nmfsc.solvers.masked.MaskedCoefficientSteps`).

    V as a CuPy array runs on its GPU (the GPU backend declares these steps): H comes back as a
    CuPy array and V never leaves the device. W may be a CuPy or a NumPy
    array (copied to the host and back for the start, as nmf_sc's
    ``W_init``). ``mask`` does not run there.
    """
    settings = LoopSettings.from_keywords("fit_coefficients", loop)
    if settings.W_init is not None:
        raise TypeError("fit_coefficients() takes the basis as W; W_init is not an option")
    s_h = check("sparseness_h", sparseness_h)
    observed = Observed.of(mask)  # the public mask=, made one type here
    backend = backend_for(V)
    if backend is not None and not backend.runs(CoefficientSteps):
        backend = None  # V is read into memory, as any array-like
    if backend is not None and observed is not None:
        raise ValueError(
            f"mask= does not run on {backend.arrays()}: compute V (and the mask) into "
            "memory, or leave mask=None"
        )
    V_arr: Any = V if backend is not None or hasattr(V, "nnz") else np.asarray(V)
    if s_h is not None and getattr(V_arr, "ndim", 0) == 2 and V_arr.shape[1] < 2:
        raise ValueError(
            "sparseness_h is set, but V has a single sample (column): the sparseness of "
            "a row of H across samples needs at least 2 samples"
        )
    # W on V's device stays there; any other W is read as a NumPy array
    W_arr: Any = W if backend is not None and backend.accepts(W) else np.asarray(W)
    if W_arr.ndim != 2:
        raise ValueError(f"W must be 2-D, got an array with ndim={W_arr.ndim}")

    average = check_average_sparseness(average_sparseness, None, s_h, V, observed)

    def make_steps(Vn, M):
        if average:
            return CoefficientSteps(Vn, M, s_h, average_sparseness=True)
        return (CoefficientSteps if observed is None else MaskedCoefficientSteps)(Vn, M, s_h)

    ratio = _basis_ratio(V, W_arr, s_h, observed)
    settings = dataclasses.replace(settings, W_init=W_arr if ratio is None else W_arr * ratio)
    params = {"sparseness_h": s_h, "fixed_W": True}
    if average:
        params["average_sparseness"] = True
    if backend is not None:
        result = dispatch.run_steps(
            CoefficientSteps, V, W_arr.shape[1], params=params, settings=settings
        )
    elif observed is None:
        result = solve(make_steps, V, W_arr.shape[1], solver_params=params, settings=settings)
    else:
        run = MaskedRun(observed, make_steps, V, W_arr.shape[1], params, settings)
        result = run.run(stacklevel=3)
    if ratio is None:
        return result
    with np.errstate(over="ignore"):
        H = result.H * ratio
    if not np.isfinite(H).all():
        raise FloatingPointError(
            f"the coefficients overflow float64: V is about {ratio:.1e} times the scale "
            "of the basis W; rescale V or W"
        )
    return dataclasses.replace(result, W=W_arr.astype(result.W.dtype), H=H)


def _basis_ratio(V, W, sparseness_h, observed=None):
    """``max(V) / max(W)`` when the coefficients are free (no sparseness_h): the
    H step then runs with the basis at the data's scale, ``W * ratio``, and
    the coefficients are multiplied back by ``ratio`` (W H is unchanged), so a
    basis fitted at another scale (transform of data 1e-300 times smaller)
    neither overflows nor drowns in the updates' eps. With sparseness_h the
    rows of H have unit norm and cannot take a scale: None, W as given.
    Invalid V or W: None (the checks of the run report them). With
    ``observed`` entries, max(V) is taken over them."""
    if sparseness_h is not None or not np.issubdtype(W.dtype, np.floating):
        return None
    try:
        V_max = float(V.max()) if observed is None else observed.largest(V)
        W_max = float(np.max(W))
    except (TypeError, ValueError, AttributeError, IndexError):
        return None
    if not (np.isfinite(V_max) and np.isfinite(W_max) and V_max > 0 and W_max > 0):
        return None
    ratio = V_max / W_max
    return ratio if 0.0 < ratio < np.inf else None
