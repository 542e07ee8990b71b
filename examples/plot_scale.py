"""
Scale: sparse matrices and float32, same answers in less memory
===============================================================

Large data sets are often mostly zeros (counts, bag-of-words, images of thin
strokes), or need not be stored in double precision. nmfsc takes both as they
are:

* a ``scipy.sparse`` CSR or CSC ``V`` is never made dense: the updates need only
  ``W.T @ V`` and ``V @ H.T``, and the fit is the dense run's up to rounding;
* a float32 ``V`` gives float32 factors (half the memory), with the
  constraints still held to float32 precision.

Here on Foldiak's bars (16 x 16 images, each the sum of a few horizontal and
vertical bars, so about 88 % of the pixels are zero). Every fit runs to
convergence with ``solver="accelerated"`` (the paper's problem from the
paper's start, solved faster), until the objective changes by less than
``tol = 1e-5`` (relative) over 10 iterations. For data that do not fit one
machine at all, the same solvers run on Dask arrays: see :doc:`/distributed`.
"""

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse

import nmfsc
from nmfsc.datasets import bars, part_recovery
from nmfsc.plotting import plot_basis

V, parts = bars(n_samples=2000, size=16, random_state=0)  # 256 x 2000, values 0..2
V_sparse = scipy.sparse.csr_array(V)
V_float32 = V.astype(np.float32)
memory = {
    "dense float64": V.nbytes,
    "CSR float64": V_sparse.data.nbytes + V_sparse.indices.nbytes + V_sparse.indptr.nbytes,
    "dense float32": V_float32.nbytes,
}
print(f"{V_sparse.nnz / V.size:.1%} of the entries are non-zero")
for name, size in memory.items():
    print(f"V as {name:<14s} {size / 2**20:6.2f} MiB")

runs = {}
for name, data in [("dense float64", V), ("CSR float64", V_sparse), ("dense float32", V_float32)]:
    runs[name] = nmfsc.nmf_sc(data, 32, sparseness_w=0.8, solver="accelerated", random_state=0)
    result = runs[name]
    print(
        f"{name:<14s} {result.n_iter:4d} iterations (stop: {result.stop_reason}), "
        f"relative error {result.relative_error:.1e}, bars found "
        f"{part_recovery(result.W, parts):.4f}"
    )

dense, sparse, single = runs["dense float64"], runs["CSR float64"], runs["dense float32"]
gap = np.max(np.abs(sparse.W - dense.W)) / np.max(dense.W)
print(f"CSR against dense: largest difference between the two W {gap:.1e} (of W's largest entry)")
print(
    f"float32: W is {single.W.dtype}, sparseness of W within "
    f"{np.max(np.abs(single.sparseness_W - 0.8)):.1e} of 0.8"
)

# What the text claims, checked: every run converged; the CSR fit is the dense
# one up to rounding; float32 gives float32 factors held at the target to
# float32 precision; every fit reconstructs the bars (relative error below
# 1e-5) and finds each of the 32 (part_recovery 1 up to rounding).
assert round(1 - V_sparse.nnz / V.size, 2) == 0.88, "about 88 % of the pixels are zero"
assert memory["CSR float64"] < memory["dense float64"] / 2
assert memory["dense float32"] == memory["dense float64"] / 2
assert all(result.stop_reason == "tol" for result in runs.values())
assert gap < 1e-10, "the sparse run's fit is the dense run's"
assert single.W.dtype == np.float32 and single.H.dtype == np.float32
assert np.allclose(single.sparseness_W, 0.8, atol=1e-5)
assert all(result.relative_error < 1e-5 for result in runs.values())
assert all(part_recovery(result.W, parts) > 0.999 for result in runs.values())

# %%
# The 32 bars, learned from the sparse matrix (the data have 32 bars: 16
# horizontal and 16 vertical ones), and the memory of V in each form.

fig, (ax_basis, ax_memory) = plt.subplots(
    1, 2, figsize=(10, 4.2), layout="constrained", width_ratios=(1.2, 1)
)
plot_basis(sparse.W, (16, 16), ax=ax_basis, n_cols=8, normalize="max", title="basis from CSR V")
ax_memory.barh(list(memory), [size / 2**20 for size in memory.values()], color="C0")
ax_memory.set(xlabel="MiB", title="memory of V")
ax_memory.invert_yaxis()
plt.show()
