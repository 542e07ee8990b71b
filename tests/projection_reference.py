"""Slow, obviously-correct references for the L1/L2 projection (tests only).

Both work on the *shape*: the projection of x for targets (rho, 1), rho = l1 / l2,
times l2 (the projection is covariant under a positive scaling of the targets).

``reference_sorted`` -- the closed form by support size. The projection keeps the
k largest entries of x for some k and, on them, is the point of the hyperplane
sum = rho closest to x pushed out from the hyperplane's centre to unit norm:
s = rho / k + t (x - mean), t = sqrt((1 - rho^2 / k) / sum (x - mean)^2). Every k
is tried, each with its own two-pass mean, and among the non-negative candidates
whose first excluded entry would not be positive the closest to x is kept.
O(n^2) work in the worst case, vectorised per k; fine up to a few thousand.

``reference_enumerate`` -- independent of any claim about which entries survive:
every non-empty subset S of the indices (n <= 12) is tried as the support, with
the centred formula on S (the closest point of the circle sum = rho, norm = 1 in
the coordinates S); non-negative candidates are kept and the closest wins. When
x is constant on S every point of that circle is equally close; the distance is
recorded without a point. Returns the minimal distance (and a minimiser when it
is unique).

``slsqp_distances`` -- scipy's SLSQP from several starts, for a third opinion.

``assert_feasible`` -- the constraints, checked without overflow at any scale.
"""

import itertools

import numpy as np

# Below this, 1 - rho^2 / k is rounding noise: the candidate is the flat vector
# rho / k (norm within 5e-16 of 1). The kernels use the same convention.
FLAT = 1e-15


def _spread(dev):
    peak = np.max(np.abs(dev))
    return peak if peak > 0 else 1.0


def _unit_spread(dev):
    """Deviations from the mean, divided by their largest magnitude (so that
    their squares cannot underflow), then re-centred (the rounded mean of
    subnormal values is not their mean)."""
    dev = dev / _spread(dev)
    return dev - dev.mean()


def _rho(l1, l2, n):
    return float(np.clip(l1 / l2, 1.0, np.sqrt(n)))


def reference_sorted(x, l1, l2):
    """The projection of x (non-negative variant) by trying every support size."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    rho = _rho(l1, l2, n)
    peak = np.max(np.abs(x))
    y = x / peak if peak > 0 else x.copy()
    order = np.argsort(-y, kind="stable")
    ys = y[order]
    best = None
    best_dist = np.inf
    for k in range(1, n + 1):
        r2 = 1.0 - rho * rho / k
        if r2 < -1e-12:
            continue
        top = ys[:k]
        mean = top.mean()
        spread = _spread(top - mean)
        dev0 = (top - mean) / spread
        shift = dev0.mean()
        dev = dev0 - shift
        c2 = float(dev @ dev)
        if r2 <= FLAT:
            shape = np.full(k, rho / k)
        elif top.min() == top.max():
            continue  # ties: not unique, no single candidate
        else:
            shape = rho / k + np.sqrt(r2 / c2) * dev
        if shape.min() < 0.0:
            continue
        if k < n and r2 > FLAT:
            # The first excluded entry would not be positive on this support.
            # (With r2 == 0 the support holds a single feasible point and no
            # larger support is feasible at all.)
            nxt = rho / k + np.sqrt(r2 / c2) * ((ys[k] - mean) / spread - shift)
            if nxt > 1e-12:
                continue
        cand = np.zeros(n)
        cand[order[:k]] = shape
        dist = float(np.sum((cand - y) ** 2))
        if dist < best_dist:
            best, best_dist = cand, dist
    if best is None:
        raise ValueError("no support size gives a valid candidate (ties?)")
    return l2 * best


def reference_enumerate(x, l1, l2):
    """(min distance, minimiser or None) over every support (n <= 12)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    assert n <= 12
    rho = _rho(l1, l2, n)
    # Work at unit l2: scale x by 1 / l2, distances scale by l2.
    y = x / l2
    best_dist = np.inf
    best = None
    for k in range(1, n + 1):
        r2 = 1.0 - rho * rho / k
        if r2 < -1e-12:
            continue
        for support in itertools.combinations(range(n), k):
            idx = np.array(support)
            ys = y[idx]
            dev = _unit_spread(ys - ys.mean())
            c2 = float(dev @ dev)
            tied = ys.min() == ys.max()
            rest = np.delete(y, idx)
            off = float(rest @ rest)
            m = rho / k
            if r2 <= FLAT:
                shape = np.full(k, m)
            elif tied:
                # Every point of the circle is as close; one is non-negative
                # (its radius sqrt(r2) is below the simplex's circumradius).
                dist = float(np.sum((ys - m) ** 2)) + r2 + off
                if dist < best_dist - 1e-15:
                    best_dist, best = dist, None
                continue
            else:
                shape = m + np.sqrt(r2 / c2) * dev
            if shape.min() < -1e-14:
                continue
            cand = np.zeros(n)
            cand[idx] = np.maximum(shape, 0.0)
            dist = float(np.sum((cand - y) ** 2))
            if dist < best_dist - 1e-15:
                best_dist, best = dist, cand
    return np.sqrt(best_dist) * l2, (None if best is None else best * l2)


def slsqp_distances(x, l1, l2, starts):
    """Distances to x of the feasible points SLSQP reaches from ``starts``."""
    from scipy.optimize import minimize

    x = np.asarray(x, dtype=np.float64)
    n = x.size
    cons = [
        {"type": "eq", "fun": lambda s: np.sum(s) - l1, "jac": lambda s: np.ones(n)},
        {"type": "eq", "fun": lambda s: s @ s - l2 * l2, "jac": lambda s: 2.0 * s},
    ]
    found = []
    for s0 in starts:
        res = minimize(
            lambda s: 0.5 * np.sum((s - x) ** 2),
            s0,
            jac=lambda s: s - x,
            method="SLSQP",
            bounds=[(0.0, None)] * n,
            constraints=cons,
            options={"ftol": 1e-14, "maxiter": 500},
        )
        s = res.x
        feasible = (
            s.min() >= -1e-12
            and abs(s.sum() - l1) <= 1e-9 * l1
            and abs(np.linalg.norm(s) - l2) <= 1e-9 * l2
        )
        if feasible:
            found.append(float(np.linalg.norm(s - x)))
    return found


def ramp_tie_break(x, l1, l2, tied):
    """The kernels' tie-break: the tied entries become the ramp k-1, ..., 0 in
    index order and the result is that ramp's projection, zero elsewhere."""
    n = len(x)
    tied = np.sort(np.asarray(tied))
    k = tied.size
    ramp = np.arange(k - 1, -1, -1, dtype=np.float64)
    rho = _rho(l1, l2, n)
    s = np.zeros(n)
    s[tied] = reference_sorted(ramp, rho * l2, l2)
    return s


def norm2(s):
    """Euclidean norm without overflow or underflow at any scale."""
    peak = np.max(np.abs(s))
    return 0.0 if peak == 0 else float(peak * np.linalg.norm(s / peak))


def assert_feasible(s, l1, l2, nonneg=True, rtol=1e-10):
    assert s.dtype == np.float64
    assert np.all(np.isfinite(s))
    if nonneg:
        assert s.min() >= 0.0
    l1_got = float(np.sum(np.abs(s)))
    assert abs(l1_got - l1) <= rtol * l1, (l1_got, l1)
    l2_got = norm2(s)
    assert abs(l2_got - l2) <= rtol * l2, (l2_got, l2)
