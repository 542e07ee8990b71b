"""
Your own data in ten lines
==========================

Anything non-negative arranged as one sample per **column** (features x samples)
can be factorised. Here the "own data" are scikit-learn's handwritten digits
(1797 images of 8 x 8 pixels, shipped with scikit-learn, no download); swap in
your array, your image shape and your number of components.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

import nmfsc
from nmfsc.plotting import plot_basis

X = load_digits().data  # samples x features: 1797 x 64, values 0..16
V = X.T  # nmfsc's orientation: features x samples
result = nmfsc.nmf_sc(V, 16, sparseness_w=0.7, solver="accelerated", random_state=0)
print(result)  # iterations, why it stopped, relative error, achieved sparseness
assert result.converged and result.stop_reason == "tol", "run to convergence, not to a cap"
assert np.allclose(result.sparseness_W, 0.7, atol=1e-6), "every basis image at exactly 0.7"

fig, ax = plt.subplots(figsize=(5, 5), layout="constrained")
plot_basis(result.W, (8, 8), ax=ax, n_cols=4, normalize="max", title="16 basis images, sW = 0.7")
plt.show()

# %%
# That is the whole recipe. ``solver="accelerated"`` solves the paper's
# problem from the paper's start, faster than the paper's algorithm, and
# ``result.stop_reason`` ("tol") says the run converged: its objective changed
# by less than ``tol = 1e-5`` (relative) over 10 iterations, before the
# iteration limit. ``result.H`` (16 x 1797) holds each image's coefficients on
# the 16 basis images; ``result.sparseness_W`` confirms the constraint (every
# column exactly at 0.7). For scikit-learn's orientation
# (samples x features) and a ``fit``/``transform`` interface, use
# :class:`nmfsc.SparseNMF` instead:
#
# .. code-block:: python
#
#    model = nmfsc.SparseNMF(
#        n_components=16, sparseness_components=0.7, solver="accelerated", random_state=0
#    )
#    codes = model.fit_transform(X)  # 1797 x 16
