"""
Sparseness by constraint against sparseness by an L1 penalty
============================================================

The usual way to make NMF sparse is a penalty: scikit-learn's ``NMF`` with
``l1_ratio=1`` adds :math:`\\alpha \\lVert W \\rVert_1` to the objective, and a
larger :math:`\\alpha` gives sparser basis vectors. Hoyer's point is that the
penalty is an indirect knob: the sparseness it gives is found only by trying
weights, and it need not be reachable at all. :func:`nmfsc.compare` asks the
fair question directly: it runs nmf_sc at a target sparseness, then searches for
the L1 weight whose fit has the *same* mean sparseness of W (within 0.01), all
from the same start.

On scikit-learn's handwritten digits (shipped with scikit-learn, no download)
with 16 components and a target of 0.8, every fit run to the same stopping
rule, the search finds a weight whose fit has a *mean* sparseness of W within
0.01 of 0.8, at a slightly lower error than nmf_sc's; but its basis vectors
spread around that mean, some much denser and some much sparser, while nmf_sc
holds every one of its 16 basis vectors at exactly 0.8.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

import nmfsc
from nmfsc.plotting import plot_basis

V = load_digits().data.T  # features x samples: 64 x 1797
comparison = nmfsc.compare(
    V,
    16,
    sparseness_w=0.8,
    methods=("nmf_sc", "sklearn_cd", "sklearn_cd_l1"),
    seeds=(0,),
    max_iter=500,
    image_shape=(8, 8),
    progress=False,
)
for row in comparison.rows:
    print(
        f"{row['method']:14s} rel. error {row['relative_error']:.4f}  "
        f"mean sparseness of W {row['sparseness_W']:.3f}  "
        f"all-zero components {row['zero_components']}"
    )
search = comparison.matched[0]
print(search["note"] or f"matched at alpha = {search['alpha']:.3g}")
W_sc, _ = comparison.factors("nmf_sc")
W_l1, _ = comparison.factors("sklearn_cd_l1")
s_sc, s_l1 = nmfsc.sparseness(W_sc, axis=0), nmfsc.sparseness(W_l1, axis=0)
print(f"sparseness of W's columns: nmf_sc {s_sc.min():.3f}-{s_sc.max():.3f}, "
      f"L1 fit {s_l1.min():.3f}-{s_l1.max():.3f}")  # fmt: skip
rows = {row["method"]: row for row in comparison.rows}
assert search["matched"] and np.allclose(s_sc, 0.8)  # what the text above says
assert rows["sklearn_cd_l1"]["relative_error"] < rows["nmf_sc"]["relative_error"]
assert s_l1.max() - s_l1.min() > 0.1

# %%
# The search's path: each L1 weight tried, and the mean sparseness of W that
# scikit-learn's fit reached with it. A cross at the top marks a weight that
# switched at least one component off entirely.

fig, (ax_path, ax_sc, ax_l1) = plt.subplots(
    1, 3, figsize=(11, 3.8), layout="constrained", width_ratios=(1.3, 1, 1)
)
path = [(alpha, s) for alpha, s in search["path"] if alpha > 0]
alphas = np.array([alpha for alpha, _ in path])
reached = np.array([np.nan if s is None else s for _, s in path])
dead = np.isnan(reached)
ax_path.semilogx(alphas[~dead], reached[~dead], "o", label="all components alive")
ax_path.semilogx(alphas[dead], np.full(dead.sum(), 0.85), "x", color="C3", label="components off")
ax_path.axhline(search["target"], color="k", lw=1, ls="--", label="nmf_sc's sparseness")
ax_path.set(xlabel="L1 weight alpha", ylabel="mean sparseness of W", ylim=(0.7, 0.87))
ax_path.set_title("the L1 search")
ax_path.legend(loc="lower left", fontsize="small")

plot_basis(W_sc, (8, 8), ax=ax_sc, n_cols=4, normalize="max", title="nmf_sc, sW = 0.8")
plot_basis(W_l1, (8, 8), ax=ax_l1, n_cols=4, normalize="max", title="matched L1 fit")
plt.show()

# %%
# The constraint is a dial: set 0.8 and every basis vector has sparseness 0.8.
# The penalty is a price: it trades reconstruction error against the L1 norm,
# and it spends it where that is cheapest, so the sparseness of its basis
# vectors is an outcome, spread around the mean the search matched; a larger
# weight switches whole components off (crosses in the search's path, when the
# search needed such weights). For the same comparison on your own data (every method, several
# seeds, reports and figures), see :func:`nmfsc.compare` and the ``nmfsc
# compare`` command line.
