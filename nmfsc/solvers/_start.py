r"""Where a run starts: the paper's random start or an SVD-based start (NNDSVD),
replaced by W_init / H_init where given, and the description of that start
that a checkpoint is matched on.

NNDSVD (Boutsidis & Gallopoulos 2008), in the paper's orientation
(:math:`\tilde V \approx W H`, :math:`\tilde V = V / \max V` N x T): from the
M leading singular triplets :math:`(\sigma_j, u_j, v_j)` of :math:`\tilde V`,
:math:`W_{:,1} = \sqrt{\sigma_1} |u_1|`, :math:`H_{1,:} = \sqrt{\sigma_1} |v_1|`,
and for j > 1 the larger (by :math:`\lVert x_+\rVert \lVert y_+\rVert` against
:math:`\lVert x_-\rVert \lVert y_-\rVert`) of the positive and negative parts
of :math:`(u_j, v_j)`, normalised and scaled by
:math:`\sqrt{\sigma_j \lVert x\rVert \lVert y\rVert}`; entries below 1e-6 are
set to 0. ``"nndsvda"`` fills those zeros with the mean of
:math:`\tilde V`, ``"nndsvdar"`` with :math:`|\mathrm{mean} \cdot n| / 100`,
n standard normal. This follows scikit-learn's ``_initialize_nmf``
(transposed). The SVD is LAPACK's for dense data with at most
``FULL_SVD_ENTRIES`` entries; otherwise (sparse, memory-mapped or larger
data) a randomized range finder (Halko, Martinsson & Tropp 2011: M + 10
Gaussian probes, 4 power iterations with QR re-orthonormalisation) that
touches V only through the data object's products, so V is never copied or
made dense.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from nmfsc.solvers.checkpoint import array_digest

__all__ = ["INITS", "fresh_start", "nndsvd", "random_start", "start_description"]

#: The accepted values of ``init``.
INITS = ("random", "nndsvd", "nndsvda", "nndsvdar", "custom")
#: Dense data with at most this many entries gets an exact SVD.
FULL_SVD_ENTRIES = 10_000_000
#: Entries of an NNDSVD factor below this are set to 0 (as scikit-learn).
NNDSVD_ZERO = 1e-6


def _generator(random_state):
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError) as err:
        raise type(err)(
            "random_state must be None, a non-negative int or a numpy.random.Generator, "
            f"got {random_state!r} ({err})"
        ) from None


def random_start(random_state, N, M, T):
    """The random start of Hoyer's MATLAB code: ``W = |randn(N, M)|``, then
    ``H = |randn(M, T)|``.

    ``random_state`` is anything :func:`numpy.random.default_rng` takes: None,
    an int (or a SeedSequence) or a Generator (which is advanced).
    """
    rng = _generator(random_state)
    W = np.abs(rng.standard_normal((N, M)))
    H = np.abs(rng.standard_normal((M, T)))
    return W, H


def _leading_svd(data, M, rng):
    """U (N x M), s (M,), Vt (M x T) of the normalised data (module docstring)."""
    N, T = data.shape
    dense = getattr(data, "V", None)  # in-memory dense data only
    if dense is not None and N * T <= FULL_SVD_ENTRIES:
        U, s, Vt = scipy.linalg.svd(np.asarray(dense, dtype=np.float64), full_matrices=False)
        return U[:, :M], s[:M], Vt[:M]

    def orthonormal(X):  # products in the data's dtype, QR in float64
        return np.linalg.qr(np.asarray(X, dtype=np.float64))[0].astype(data.dtype)

    probes = min(M + 10, N, T)
    Q = orthonormal(data.vht(rng.standard_normal((probes, T)).astype(data.dtype)))
    for _ in range(4):
        Z = orthonormal(data.wtv(Q).T)  # T x probes
        Q = orthonormal(data.vht(np.ascontiguousarray(Z.T)))  # N x probes
    B = np.asarray(data.wtv(Q), dtype=np.float64)  # probes x T
    Ub, s, Vt = scipy.linalg.svd(B, full_matrices=False)
    return (Q.astype(np.float64) @ Ub)[:, :M], s[:M], Vt[:M]


def nndsvd(data, M, variant, rng):
    """The NNDSVD start (``variant`` "nndsvd", "nndsvda" or "nndsvdar") of the
    normalised data, as float64 W (N x M) and H (M x T)."""
    N, T = data.shape
    if M > min(N, T):
        raise ValueError(
            f"init={variant!r} needs n_components <= min(N, T) = {min(N, T)}, got {M}; "
            "use init='random'"
        )
    U, s, Vt = _leading_svd(data, M, rng)
    W, H = np.zeros((N, M)), np.zeros((M, T))
    W[:, 0] = np.sqrt(s[0]) * np.abs(U[:, 0])
    H[0] = np.sqrt(s[0]) * np.abs(Vt[0])
    for j in range(1, M):
        x, y = U[:, j], Vt[j]
        parts = [(np.maximum(x, 0), np.maximum(y, 0)), (np.maximum(-x, 0), np.maximum(-y, 0))]
        norms = [(np.linalg.norm(a), np.linalg.norm(b)) for a, b in parts]
        pick = 0 if norms[0][0] * norms[0][1] > norms[1][0] * norms[1][1] else 1
        (a, b), (na, nb) = parts[pick], norms[pick]
        if na * nb > 0:
            scale = np.sqrt(s[j] * na * nb)
            W[:, j] = scale * a / na
            H[j] = scale * b / nb
    W[W < NNDSVD_ZERO] = 0.0
    H[H < NNDSVD_ZERO] = 0.0
    if variant == "nndsvda":
        avg = data.mean()
        W[W == 0] = avg
        H[H == 0] = avg
    elif variant == "nndsvdar":
        avg = data.mean()
        W[W == 0] = np.abs(avg * rng.standard_normal(int(np.sum(W == 0))) / 100)
        H[H == 0] = np.abs(avg * rng.standard_normal(int(np.sum(H == 0))) / 100)
    return W, H


#: A given start whose scale, max(W0) * max(H0) against max(V / max V) = 1, is
#: beyond 1e+-START_EXPONENT_LIMIT is refused. The multiplicative updates add
#: eps = 1e-9 to their denominators, so a start far below the data's scale
#: shrinks to W H = 0 (measured on 12 x 15 data: nmf_euclidean from W_init at
#: 1e-16 times, nmf_sc at 1e-20), and far above it they overflow or collapse
#: (nmf_euclidean at 1e25 times); within 1e+-12 every solver recovered.
START_EXPONENT_LIMIT = 12


def refuse_dead_components(solver, W=None, H=None):
    """Refuse a start with an all-zero column of ``W`` or row of ``H`` (those given).

    A multiplicative update multiplies every entry, so such a component stays
    zero for good (and the divergence updates divide by its sum: NaN); the run
    would quietly lose it.
    """
    for name, factor, axis, what in (("W", W, 0, "column"), ("H", H, 1, "row")):
        if factor is None:
            continue
        zero = np.flatnonzero(~np.any(factor != 0, axis=axis))
        if zero.size:
            raise ValueError(
                f"{solver}: the starting {name} (from {name}_init or init) has {zero.size} "
                f"all-zero {what}(s), the first is {what} {zero[0]}; the multiplicative "
                f"updates keep a zero {what} at zero (and divide by its sum), so that "
                f"component is lost: give every {what} of {name}_init a positive entry "
                f"(init='nndsvd' leaves zeros: use 'nndsvda')"
            )


def refuse_far_start(W0, H0):
    """Refuse given factors (in V / max(V)'s units) whose product is absurdly far
    from the data's scale (see :data:`START_EXPONENT_LIMIT`)."""
    with np.errstate(over="ignore", under="ignore"):
        size = float(np.max(W0, initial=0.0)) * float(np.max(H0, initial=0.0))
    if size == 0.0 or not np.isfinite(size):
        return  # all-zero or non-finite starts are refused elsewhere
    exponent = np.log10(size)
    if abs(exponent) > START_EXPONENT_LIMIT:
        raise ValueError(
            f"W_init and H_init are about 1e{exponent:+.0f} times V's scale "
            f"(max(W_init) * max(H_init) / max(V)), more than 1e{START_EXPONENT_LIMIT} off; "
            f"from such a start the updates collapse to W H = 0: "
            f"scale W_init (it is in V's units) or H_init so that W_init @ H_init is near V"
        )


def fresh_start(steps, settings, scale, shape):
    """The solver's start state for a run that does not resume.

    ``init="random"`` draws both random factors (so that W_init alone leaves
    H as it would have been; ``"custom"`` draws nothing); the NNDSVD variants compute
    them from ``steps.data``. W_init (divided by ``scale``, max(V)) and H_init
    then replace them, the factors take the data's dtype, and
    ``steps.initialize`` applies the solver's own start-up (nmf_sc: the
    projection onto the constraints). ``settings`` are validated
    :class:`~nmfsc.solvers._settings.LoopSettings`, ``shape`` is (N, M, T).
    """
    init = settings.init
    if init == "custom":  # both given: nothing to draw
        W0, H0 = None, None
    elif init == "random":
        W0, H0 = random_start(settings.random_state, *shape)
    else:
        W0, H0 = nndsvd(steps.data, shape[1], init, _generator(settings.random_state))
    if settings.W_init is not None:
        W0 = settings.W_init / scale
    if settings.H_init is not None:
        H0 = settings.H_init.copy()
    if settings.W_init is not None or settings.H_init is not None:
        refuse_far_start(W0, H0)
    dtype = steps.data.dtype
    W0 = np.ascontiguousarray(W0, dtype=dtype)
    H0 = np.ascontiguousarray(H0, dtype=dtype)
    return steps.initialize(W0, H0)


def start_description(settings):
    """What determines the start, for checkpoint matching (None: not comparable)."""
    random_state, W_init, H_init = settings.random_state, settings.W_init, settings.H_init
    seed = None
    if W_init is None or H_init is None:
        if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
            seed = int(random_state)
        else:
            return None
    description = {"seed": seed, "W_init": array_digest(W_init), "H_init": array_digest(H_init)}
    if settings.init not in ("random", "custom"):
        description["init"] = settings.init
    return description
