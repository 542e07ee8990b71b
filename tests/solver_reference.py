"""Slow, obviously-correct NumPy transcriptions of SPEC.md's solvers.

No kernels, no cached products, no tricks: every objective forms the residual
or the quotient explicitly, every projection goes through the pure-NumPy
``reference_sorted`` of projection_reference.py, one vector at a time. Each
function takes the raw start (W0, H0) on the normalised data V / max(V) (as
the solvers draw it: ``random_start``; a W_init in V's units is W0 * max(V))
and returns the list of iterates (W in V's units, H) and the
objective history in V's units, index 0 being the start.
"""

import numpy as np
from projection_reference import reference_sorted

EPS = 1e-9


def random_start(seed, N, M, T):
    rng = np.random.default_rng(seed)
    W = np.abs(rng.standard_normal((N, M)))
    H = np.abs(rng.standard_normal((M, T)))
    return W, H


def euclid(V, W, H):
    return 0.5 * np.sum((V - W @ H) ** 2)


def divergence(V, W, H):
    WH = W @ H
    return np.sum(V * np.log(V / WH) - V + WH)


def _l1(s, n):
    return np.sqrt(n) - (np.sqrt(n) - 1.0) * s


def _project_rows(X, s):
    n = X.shape[1]
    return np.array([reference_sorted(x, _l1(s, n), 1.0) for x in X])


def _project_columns_own_norm(X, s):
    n = X.shape[0]
    cols = []
    for x in X.T:
        norm = np.sqrt(np.sum(x**2))
        cols.append(reference_sorted(x, _l1(s, n) * norm, norm))
    return np.array(cols).T


def nmf_sc(V, W0, H0, n_iter, sparseness_w=None, sparseness_h=None):
    """SPEC "NMF with sparseness constraints"."""
    scale = V.max()
    V = V / scale
    W = W0.copy()
    H = H0 / np.sqrt(np.sum(H0**2, axis=1))[:, None]
    if sparseness_w is not None:
        W = np.array([reference_sorted(w, _l1(sparseness_w, len(w)), 1.0) for w in W.T]).T
    if sparseness_h is not None:
        H = _project_rows(H, sparseness_h)
    mu_w = mu_h = 1.0
    iterates = [(W * scale, H)]
    history = [euclid(V, W, H) * scale**2]
    for _ in range(n_iter):
        if sparseness_h is not None:
            dH = W.T @ (W @ H - V)
            before = euclid(V, W, H)
            while True:
                Hn = _project_rows(H - mu_h * dH, sparseness_h)
                if euclid(V, W, Hn) <= before:
                    break
                mu_h /= 2
                assert mu_h >= 1e-200
            mu_h *= 1.2
            H = Hn
        else:
            H = H * (W.T @ V) / (W.T @ W @ H + EPS)
            norms = np.sqrt(np.sum(H**2, axis=1))
            H = H / norms[:, None]
            W = W * norms[None, :]
        if sparseness_w is not None:
            dW = (W @ H - V) @ H.T
            before = euclid(V, W, H)
            while True:
                Wn = _project_columns_own_norm(W - mu_w * dW, sparseness_w)
                if euclid(V, Wn, H) <= before:
                    break
                mu_w /= 2
                assert mu_w >= 1e-200
            mu_w *= 1.2
            W = Wn
        else:
            W = W * (V @ H.T) / (W @ H @ H.T + EPS)
        iterates.append((W * scale, H))
        history.append(euclid(V, W, H) * scale**2)
    return iterates, history


def nmf_euclidean(V, W0, H0, n_iter):
    """SPEC "Euclidean NMF (nmfmse)"."""
    scale = V.max()
    V = V / scale
    W, H = W0.copy(), H0.copy()
    iterates = [(W * scale, H)]
    history = [euclid(V, W, H) * scale**2]
    for _ in range(n_iter):
        H = H * (W.T @ V) / (W.T @ W @ H + EPS)
        W = W * (V @ H.T) / (W @ H @ H.T + EPS)
        norms = np.sqrt(np.sum(H**2, axis=1))
        H = H / norms[:, None]
        W = W * norms[None, :]
        iterates.append((W * scale, H))
        history.append(euclid(V, W, H) * scale**2)
    return iterates, history


def nmf_divergence(V, W0, H0, n_iter):
    """SPEC "Divergence NMF (nmfdiv)"."""
    scale = V.max()
    V = V / scale
    W, H = W0.copy(), H0.copy()
    iterates = [(W * scale, H)]
    history = [divergence(V, W, H) * scale]
    for _ in range(n_iter):
        W = W * ((V / (W @ H + EPS)) @ H.T) / np.sum(H, axis=1)[None, :]
        H = H * (W.T @ (V / (W @ H + EPS))) / np.sum(W, axis=0)[:, None]
        norms = np.sqrt(np.sum(H**2, axis=1))
        H = H / norms[:, None]
        W = W * norms[None, :]
        iterates.append((W * scale, H))
        history.append(divergence(V, W, H) * scale)
    return iterates, history


def local_nmf(V, W0, H0, n_iter, alpha=1.0, beta=1.0):
    """SPEC "Local NMF": one C = V / (W H) per iteration, no eps."""
    scale = V.max()
    V = V / scale
    W, H = W0.copy(), H0.copy()
    W = W / np.sum(W, axis=0)[None, :]

    def objective(W, H):
        return divergence(V, W, H) + alpha * np.sum(W.T @ W) - beta * np.sum(np.diag(H @ H.T))

    iterates = [(W * scale, H)]
    history = [objective(W, H) * scale]
    for _ in range(n_iter):
        C = V / (W @ H)
        H = np.sqrt(H * (W.T @ C))
        D = np.sum(W, axis=1)[:, None] + np.sum(H, axis=1)[None, :]
        W = W * (C @ H.T) / D
        W = W / np.sum(W, axis=0)[None, :]
        iterates.append((W * scale, H))
        history.append(objective(W, H) * scale)
    return iterates, history


def sparse_nmf(V, W0, H0, n_iter, alpha=1.0):
    """SPEC "Sparse NMF" (nmfpack's snmf.m): C = V / (W H) for the H update, then
    C computed again with the new H for the W update; no eps."""
    scale = V.max()
    V = V / scale
    W, H = W0.copy(), H0.copy()
    W = W / np.sum(W, axis=0)[None, :]

    def objective(W, H):
        return divergence(V, W, H) + alpha * np.sum(H)

    iterates = [(W * scale, H)]
    history = [objective(W, H) * scale]
    for _ in range(n_iter):
        C = V / (W @ H)
        H = H * (W.T @ C) / (1.0 + alpha)
        C = V / (W @ H)
        W = W * (C @ H.T) / np.sum(H, axis=1)[None, :]
        W = W / np.sum(W, axis=0)[None, :]
        iterates.append((W * scale, H))
        history.append(objective(W, H) * scale)
    return iterates, history
