"""
Every method on your data: nmfsc.compare
========================================

:func:`nmfsc.compare` runs nmf_sc and the standard NMF methods side by side on
one data matrix, from the same random start and to the same stopping rule, and
returns a :class:`nmfsc.Comparison`: a table (one row per method and seed), every
run's factors and error curves, and writers for Markdown, CSV, JSON and figures
(see :doc:`/compare` for every option and column).

Here on scikit-learn's handwritten digits (shipped with scikit-learn, no
download), 16 components, nmf_sc held at a basis sparseness of 0.85, one seed.
Every run goes to convergence: until its objective falls by less than
``tol = 1e-5`` (relative) over 10 iterations, with an iteration limit (20000)
that no run reaches. The table below is this run's own output. What it shows:

* nmf_sc holds every basis image at exactly 0.85, and its basis is more local
  than those of the unconstrained fits (Lee and Seung's ``nmf_euclidean`` and
  scikit-learn's ``sklearn_cd``), at a somewhat higher reconstruction error;
* ``nmf_sc_accelerated`` solves the same problem from the same start
  (``nmf_sc(solver="accelerated")``): its basis is held at 0.85 too, its error
  is within 0.01 of the paper's algorithm's, and it stops by the same rule in
  fewer iterations;
* the L1-penalised baseline is marked "not matched" at this level: its weights
  switch components off before its mean sparseness reaches 0.85 (the
  :doc:`penalty against constraint <plot_l1_versus_constraint>` example looks at
  this closely);
* a penalty's weight must suit the data: ``sparse_nmf`` (Liu et al.'s L1
  penalty on H, at its default weight ``sparse_nmf_alpha=100``) all but
  switches the fit off here, at a relative error above 0.95.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

import nmfsc
from nmfsc.plotting import plot_basis

V = load_digits().data.T  # 64 pixels x 1797 images, values 0..16
max_iter = 20000
comparison = nmfsc.compare(
    V,
    16,
    sparseness_w=0.85,
    seeds=(0,),
    max_iter=max_iter,
    tol=1e-5,
    image_shape=(8, 8),
    progress=False,
)
rows = {row["method"]: row for row in comparison.rows}
header = ("method", "rel. error", "sparseness W", "locality", "iterations", "stop")
print(
    f"{header[0]:<26s} {header[1]:>10s} {header[2]:>12s} {header[3]:>8s} {header[4]:>10s} "
    f"{header[5]:>5s}"
)
for method, row in rows.items():
    print(
        f"{method:<26s} {row['relative_error']:10.4f} {row['sparseness_W']:12.3f} "
        f"{row['locality']:8.3f} {row['n_iter']:10d} {row['stop_reason']:>5s}"
    )
search = comparison.matched[0]
print(f"sklearn_cd_l1: {search['note'] or 'matched at alpha ' + format(search['alpha'], '.3g')}")

# What the text claims, checked. Every run (the L1 search's too) stopped by tol.
assert all(row["stop_reason"] == "tol" for row in rows.values()), rows
assert max(search["fit_iterations"]) < max_iter
W_sc, _ = comparison.factors("nmf_sc")
assert np.allclose(nmfsc.sparseness(W_sc, axis=0), 0.85, atol=1e-6)
for plain in ("nmf_euclidean", "sklearn_cd"):
    assert rows["nmf_sc"]["locality"] > rows[plain]["locality"], plain
    assert rows["nmf_sc"]["relative_error"] > rows[plain]["relative_error"], plain
W_fast, _ = comparison.factors("nmf_sc_accelerated")
assert np.allclose(nmfsc.sparseness(W_fast, axis=0), 0.85, atol=1e-6)
fast, paper = rows["nmf_sc_accelerated"], rows["nmf_sc"]
assert abs(fast["relative_error"] - paper["relative_error"]) < 0.01
assert fast["stop_reason"] == paper["stop_reason"] == "tol" and fast["n_iter"] < paper["n_iter"]
assert not search["matched"] and any(s is None for _, s in search["path"]), "components off"
assert rows["sparse_nmf"]["relative_error"] > 0.95

# %%
# The bases (white is zero) and the relative error of each run against its
# iterations, from the comparison's factors and curves: every curve flattens
# out before its run stops.

shown = ["nmf_sc", "nmf_euclidean", "sklearn_cd", "local_nmf"]
fig, axes = plt.subplots(2, 2, figsize=(7.5, 8), layout="constrained")
for ax, method in zip(axes.flat, shown, strict=True):
    W, _ = comparison.factors(method)
    title = f"{method}\nlocality {rows[method]['locality']:.2f}"
    plot_basis(W, (8, 8), ax=ax, n_cols=4, normalize="max", title=title)
plt.show()

fig, ax = plt.subplots(figsize=(7.5, 5), layout="constrained")
for curve in comparison.curves:
    # scikit-learn's curves have a point every 10 iterations, nmfsc's every one.
    ax.semilogx(np.maximum(curve["iteration"], 1), curve["relative_error"], label=curve["method"])
ax.set(xlabel="iteration", ylabel="relative error", ylim=(0.2, 1.05))
ax.legend(fontsize="small", ncols=2)
plt.show()

# %%
# The same report as Markdown, CSV or JSON, and the figures as files:
#
# .. code-block:: python
#
#    print(comparison.to_markdown())
#    comparison.save("digits-comparison")  # report.md/.json/.csv and the figures
