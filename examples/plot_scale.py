"""
Scale: sparse matrices and float32, same answers in less memory
===============================================================

Large data sets are often mostly zeros (counts, bag-of-words, images of thin
strokes), or need not be stored in double precision. nmfsc takes both as they
are:

* a ``scipy.sparse`` CSR or CSC ``V`` is never made dense: the updates need only
  ``W.T @ V`` and ``V @ H.T``, and the iterates are those of the dense run up to
  rounding;
* a float32 ``V`` gives float32 factors (half the memory), with the
  constraints still held to float32 precision.

Here on Foldiak's bars (16 x 16 images, each the sum of a few horizontal and
vertical bars, so about 88 % of the pixels are zero). For data that do not fit
one machine at all, the same solvers run on Dask arrays: see
:doc:`/distributed`.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse

import nmfsc
from nmfsc.datasets import bars
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
with warnings.catch_warnings():
    # A fixed number of iterations (tol=0): hitting max_iter is intended here.
    warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
    for name, data in [
        ("dense float64", V),
        ("CSR float64", V_sparse),
        ("dense float32", V_float32),
    ]:
        runs[name] = nmfsc.nmf_sc(data, 32, sparseness_w=0.8, random_state=0, max_iter=100, tol=0)

dense, sparse, single = runs["dense float64"], runs["CSR float64"], runs["dense float32"]
gap = np.max(np.abs(sparse.objective - dense.objective) / dense.objective)
print(f"CSR against dense: largest relative gap between the objectives {gap:.1e}")
print(
    f"float32: W is {single.W.dtype}, sparseness of W within "
    f"{np.max(np.abs(single.sparseness_W - 0.8)):.1e} of 0.8, "
    f"relative error {single.relative_error:.4f} (float64: {dense.relative_error:.4f})"
)
# (float32's iterates leave float64's by rounding, so after 100 iterations the
# two fits differ; both reconstruct the bars to within a few percent.)

# What the text claims, checked.
assert memory["CSR float64"] < memory["dense float64"] / 2
assert memory["dense float32"] == memory["dense float64"] / 2
assert gap < 1e-10, "the sparse run's iterates are the dense run's"
assert single.W.dtype == np.float32 and single.H.dtype == np.float32
assert np.allclose(single.sparseness_W, 0.8, atol=1e-5)
assert max(single.relative_error, dense.relative_error) < 0.05

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
