"""Held-out comparison of a sparse V whose zeros are observed (issue 45). A
script, not a test.

    python benchmarks/bench_sparse_holdout.py [--words N] [--docs T]
                                              [--holdout F] [--repeats R]

Data: a words x documents count matrix drawn from a topic model (20 topics,
each a Dirichlet(0.05) distribution over the words; each document a
Dirichlet(0.1) mixture of them and Poisson(150) words long), 5,000 x 3,000
by default, about 2.7 % stored: the shape of a small text collection, with
the low-rank structure a held-out error can find. No text data set ships
with the project, so the counts are drawn; the seed is fixed.

Three measures, each against the same comparison on V's dense copy (what
``compare(holdout=)`` ran before it kept V sparse), in one process:

1. Agreement: ``compare(V, 20, holdout=F)`` on the sparse V and on its
   dense copy hide the same entries and give the same table (held-out and
   relative errors of every row to 1e-7 relative).
2. Time: each masked solver (``nmf_sc`` with ``sparseness_w=0.8``, its
   ``solver="accelerated"``, ``nmf_euclidean``) run to its tolerance on
   the training entries, sparse (``Observed.all_but``) against dense (the
   boolean mask of the same entries), best of R; the same iterations and
   objective.
3. Memory: the peak of numpy's allocations (tracemalloc) of a whole
   ``compare`` with one method, sparse against dense, and the bytes per
   hidden entry of the sparse one.

Ends in lines starting ``PASS`` or ``FAIL``: the tables agree; every
sparse solver is no slower than the dense; the sparse comparison's peak is
below the dense one's.
"""

import argparse
import time
import tracemalloc
import warnings

import numpy as np
import scipy.sparse as sp
from bench_compare import machine  # benchmarks/ is on the path of a script run from it

import nmfsc
from nmfsc.observed import Observed

METHODS = ("nmf_sc", "nmf_sc_accelerated", "nmf_euclidean")


def topic_counts(n_words, n_docs, n_topics=20, length=150, seed=0):
    """Words x documents counts from a topic model (module docstring)."""
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(n_words, 0.05), size=n_topics)
    rows, cols, values = [], [], []
    for d in range(n_docs):
        mixture = rng.dirichlet(np.full(n_topics, 0.1))
        counts = rng.multinomial(rng.poisson(length), mixture @ topics)
        words = np.flatnonzero(counts)
        rows.append(words)
        cols.append(np.full(words.size, d))
        values.append(counts[words])
    data = np.concatenate(values).astype(np.float64)
    return sp.csr_array((data, (np.concatenate(rows), np.concatenate(cols))), (n_words, n_docs))


def verdict(ok, text):
    print(f"{'PASS' if ok else 'FAIL'} {text}")
    return ok


def agreement(V, holdout):
    kw = {"methods": [*METHODS, "nmf_divergence"], "sparseness_w": 0.8, "seeds": (0,)}
    kw |= {"holdout": holdout, "max_iter": 200, "progress": False}
    sparse = nmfsc.compare(V, 20, **kw)
    dense = nmfsc.compare(V.toarray(), 20, **kw)
    worst = 0.0
    print("| method | held-out error, sparse | dense | relative error, sparse | dense |")
    print("|---|---:|---:|---:|---:|")
    for a, b in zip(sparse.rows, dense.rows, strict=True):
        for key in ("holdout_error", "relative_error"):
            worst = max(worst, abs(a[key] - b[key]) / abs(b[key]))
        print(
            f"| {a['method']} | {a['holdout_error']:.6f} | {b['holdout_error']:.6f} "
            f"| {a['relative_error']:.6f} | {b['relative_error']:.6f} |"
        )
    return verdict(worst <= 1e-7, f"the sparse table is the dense copy's (worst {worst:.1e})")


def timing(V, holdout, repeats):
    N, T = V.shape
    drawn = np.random.default_rng(0).choice(N * T, size=round(holdout * N * T), replace=False)
    observed = Observed.all_but(*np.divmod(drawn, T), V.shape)
    mask, dense = observed.to_mask(), V.toarray()
    options = {"random_state": 0, "max_iter": 5000}
    calls = {
        "nmf_sc": lambda data, m: nmfsc.nmf_sc(data, 20, sparseness_w=0.8, mask=m, **options),
        "nmf_sc_accelerated": lambda data, m: nmfsc.nmf_sc(
            data, 20, sparseness_w=0.8, mask=m, solver="accelerated", **options
        ),
        "nmf_euclidean": lambda data, m: nmfsc.nmf_euclidean(data, 20, mask=m, **options),
    }
    print("\n| solver | sparse (s) | dense (s) | dense / sparse | iterations | stop | objective |")
    print("|---|---:|---:|---:|---:|---|---:|")
    ok = True
    for name, call in calls.items():
        best = {}
        for _ in range(repeats):
            for label, data, m in (("sparse", V, observed), ("dense", dense, mask)):
                start = time.perf_counter()
                result = call(data, m)
                elapsed = time.perf_counter() - start
                if elapsed < best.get(label, (np.inf,))[0]:
                    best[label] = (elapsed, result)
        (ts, rs), (td, rd) = best["sparse"], best["dense"]
        same = rs.n_iter == rd.n_iter and abs(rs.objective[-1] / rd.objective[-1] - 1) < 1e-9
        ok &= same and ts <= td
        print(
            f"| {name} | {ts:.2f} | {td:.2f} | {td / ts:.1f}x | {rs.n_iter} | "
            f"{rs.stop_reason} | {rs.objective[-1]:.6g} ({'same' if same else 'differs'}) |"
        )
    return verdict(ok, "every masked solver on the sparse V: the dense iterates, no slower")


def memory(V, holdout):
    N, T = V.shape
    hidden = holdout * N * T
    print("\n| compare with | sparse peak (MiB) | dense peak (MiB) | sparse bytes per hidden |")
    print("|---|---:|---:|---:|")
    ok = True
    for method in (*METHODS, "nmf_divergence"):
        peaks = []
        for data in (V, V.toarray()):
            kw = {"methods": [method], "sparseness_w": 0.8, "seeds": (0,), "progress": False}
            tracemalloc.start()
            nmfsc.compare(data, 20, holdout=holdout, max_iter=3, **kw)
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
            del data
        ok &= peaks[0] < peaks[1]
        print(
            f"| {method} | {peaks[0] / 2**20:.0f} | {peaks[1] / 2**20:.0f} | "
            f"{peaks[0] / hidden:.0f} |"
        )
    return verdict(ok, "every sparse comparison's peak below its dense copy's")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=5000)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--holdout", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
    V = topic_counts(args.words, args.docs)
    print(f"{machine()}, nmfsc {nmfsc.__version__}")
    print(
        f"V {V.shape[0]} x {V.shape[1]}, {V.nnz} stored ({V.nnz / np.prod(V.shape):.1%}), "
        f"holdout {args.holdout}: {round(args.holdout * np.prod(V.shape)):,} hidden entries, "
        f"dense copy {np.prod(V.shape) * 8 / 2**20:.0f} MiB\n"
    )
    results = [agreement(V, args.holdout), timing(V, args.holdout, args.repeats)]
    results.append(memory(V, args.holdout))
    raise SystemExit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
