"""
How many components? Held-out entries of a sparse count matrix
==============================================================

An error measured on the entries a model was fitted to always falls as the
model grows, so it cannot say how many components the data hold. An error
on entries the fit never saw can: :func:`nmfsc.compare` with ``holdout=0.1``
hides 10 % of the entries, the same for every method and seed, fits the
rest and reports each run's error on the hidden ones (:doc:`/compare`,
"Held-out entries and missing values").

Here on a words x documents count matrix, the shape of a small text
collection: 1,500 words, 800 documents of about 200 words each, drawn from
8 topics (each document a mixture of a few; each topic a sparse distribution
over the words), so that the right answer is known. About 8 % of the
entries are stored. The zeros of counts are data, so they may be hidden and
are fitted like any entry (``sparse_zeros="observed"``, the default), and V
stays a scipy.sparse matrix throughout: the masked methods fit every entry
but the hidden ones, never a dense copy (:doc:`/solvers`, "Missing values").

Each rank is fitted by nmf_sc (the accelerated solver, every basis vector at
sparseness 0.8) and by Euclidean NMF without a constraint, from two random
starts, each to its stop by ``tol``. What the figure and the table show:

* the error on the fitted entries falls at every step from 4 to 8 to 16
  components, for both methods: it cannot tell;
* the error on the hidden entries is lowest at 8 components, the number of
  topics, for both methods and both starts: at 16 the fitted entries' error
  is lower still, but the hidden entries' is higher, since the extra
  components fit the counts' noise;
* every fit predicts the hidden entries better than each row's mean of its
  fitted entries does (the dashed line), at every rank.

A run whose held-out error went above 1 (worse than predicting zero, the
dotted line) would be marked failed in the table: a masked fit is free to
put any value where nothing was observed, and that is how it shows.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp

import nmfsc


def topic_counts(n_words, n_docs, n_topics, length, seed):
    """Counts drawn from a topic model: each topic a Dirichlet(0.05) distribution
    over the words, each document a Dirichlet(0.1) mixture of the topics and
    Poisson(``length``) words long. Returns a scipy.sparse words x documents
    matrix."""
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(n_words, 0.05), size=n_topics)
    columns = []
    for _ in range(n_docs):
        mixture = rng.dirichlet(np.full(n_topics, 0.1))
        columns.append(rng.multinomial(rng.poisson(length), mixture @ topics))
    return sp.csr_array(np.column_stack(columns).astype(np.float64))


V = topic_counts(n_words=1500, n_docs=800, n_topics=8, length=200, seed=1)
print(f"V: {V.shape[0]} words x {V.shape[1]} documents, {V.nnz / np.prod(V.shape):.1%} stored")

ranks = (4, 8, 16)
methods = ["nmf_sc_accelerated", "nmf_euclidean"]
rows = {}
for k in ranks:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.DegenerateFitWarning)  # spare components at 16
        result = nmfsc.compare(
            V, k, methods=methods, sparseness_w=0.8, seeds=(0, 1), holdout=0.1,
            max_iter=5000, progress=False,
        )  # fmt: skip
    rows[k] = result.rows
baseline = result.settings["holdout_baselines"]["row_mean_fill"]
print(f"predicting each hidden entry by its row's mean: held-out error {baseline:.3f}\n")
print("| components | method | start | fitted-entries error | held-out error | stop |")
print("|---:|---|---:|---:|---:|---|")
for k in ranks:
    for row in rows[k]:
        print(
            f"| {k} | {row['method']} | {row['seed']} | {row['fitted_error']:.4f} "
            f"| {row['holdout_error']:.4f} | {row['stop_reason']} |"
        )


def values(method, key):
    """``key`` of ``method``'s rows, one list per rank, the seeds in order."""
    return [[row[key] for row in rows[k] if row["method"] == method] for k in ranks]


fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharex=True)
labels = {"nmf_sc_accelerated": "nmf_sc, sW = 0.8", "nmf_euclidean": "Euclidean NMF"}
for method, color in zip(methods, ("C0", "C3"), strict=True):
    for ax, key in zip(axes, ("fitted_error", "holdout_error"), strict=True):
        per_rank = values(method, key)
        for seed in range(2):
            ax.plot(ranks, [runs[seed] for runs in per_rank], "o-", color=color, alpha=0.8,
                    label=labels[method] if seed == 0 else None)  # fmt: skip
axes[1].axhline(baseline, color="gray", ls="--", label="each row's mean")
axes[1].axhline(1.0, color="black", ls=":", label="zero (failed above)")
axes[1].set_ylim(0.5, 1.3)
axes[0].set_title("error on the fitted entries")
axes[1].set_title("error on the hidden entries")
for ax in axes:
    ax.set_xscale("log", base=2)
    ax.set_xticks(ranks, [str(k) for k in ranks])
    ax.set_xlabel("components")
axes[0].set_ylabel("relative error")
axes[1].legend(fontsize=8, loc="upper left")
fig.tight_layout()
plt.show()

# %%
# The claims above, checked on this run:
sc_fit, sc_held = values(methods[0], "fitted_error"), values(methods[0], "holdout_error")
eu_fit, eu_held = values(methods[1], "fitted_error"), values(methods[1], "holdout_error")
for seed in range(2):
    for fitted, held in ((sc_fit, sc_held), (eu_fit, eu_held)):
        assert fitted[0][seed] > fitted[1][seed] > fitted[2][seed]  # falls at every step
        assert held[1][seed] < min(held[0][seed], held[2][seed])  # lowest at 8 topics
        assert max(runs[seed] for runs in held) < baseline
assert all(row["stop_reason"] == "tol" for k in ranks for row in rows[k])
