"""
Missing values: fill, factorise, fill again
===========================================

NMF needs every entry of ``V``: nmfsc refuses a matrix with a NaN (one line
naming the first one) rather than return a silent NaN basis. When some entries
are unknown, a simple and honest recipe is to fill them, factorise, and refill
the unknown entries from the factorisation ``W H``, a few rounds in a row (an
expectation-maximisation scheme for the masked least-squares problem), each
round starting from the last one's factors.

Here 20 % of the pixels of scikit-learn's handwritten digits are hidden. The
first fill is each pixel's mean over the images where it is known; after a few
rounds the hidden pixels are predicted from the structure NMF found, and the
error on them falls well below that of the mean fill.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

import nmfsc
from nmfsc.plotting import plot_basis

V = load_digits().data.T  # features x samples: 64 x 1797, values 0..16
rng = np.random.default_rng(0)
hidden = rng.random(V.shape) < 0.2
V_missing = np.where(hidden, np.nan, V)

try:
    nmfsc.nmf_sc(V_missing, 16, sparseness_w=0.6, random_state=0)
except ValueError as error:
    print(f"nmf_sc refuses it: {error}")
else:
    raise AssertionError("nmf_sc accepted a V with NaN")

# %%
# Fill, factorise, refill. The error is measured on the hidden entries only,
# relative to their norm (the mean fill is round 0).


def hidden_error(V_filled):
    return np.linalg.norm((V_filled - V)[hidden]) / np.linalg.norm(V[hidden])


pixel_means = np.nanmean(V_missing, axis=1, keepdims=True)
V_filled = np.where(hidden, pixel_means, V_missing)
errors = [hidden_error(V_filled)]
W = H = None
with warnings.catch_warnings():
    # A fixed number of iterations per round: hitting max_iter is intended here.
    warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)
    for _ in range(5):
        start = {} if W is None else {"init": "custom", "W_init": W, "H_init": H}
        result = nmfsc.nmf_sc(V_filled, 16, sparseness_w=0.6, random_state=0, max_iter=100, **start)
        W, H = result.W, result.H
        V_filled = np.where(hidden, W @ H, V)
        errors.append(hidden_error(V_filled))
for k, error in enumerate(errors):
    print(f"round {k}: relative error on the hidden pixels {error:.3f}")

# What the text claims, checked: the refilled pixels are much closer to the
# truth than the mean fill, and the rounds improve on the first one.
assert errors[-1] < 0.8 * errors[0], errors
assert errors[-1] < errors[1], errors

# %%
# Two images with their hidden pixels (red), the mean fill, and the refill
# after the last round; and the 16 basis images learned from the incomplete
# data.

fig, axes = plt.subplots(2, 4, figsize=(9, 4.8), layout="constrained")
first_fill = np.where(hidden, pixel_means, V)
for row, image in zip(axes, (0, 1), strict=True):
    shown = np.ma.masked_array(V[:, image], hidden[:, image]).reshape(8, 8)
    panels = [
        ("original", V[:, image].reshape(8, 8)),
        ("20 % hidden", shown),
        ("mean fill", first_fill[:, image].reshape(8, 8)),
        ("refilled from W H", V_filled[:, image].reshape(8, 8)),
    ]
    for ax, (title, pixels) in zip(row, panels, strict=True):
        cmap = plt.get_cmap("gray_r").with_extremes(bad="tab:red")
        ax.imshow(pixels, cmap=cmap, vmin=0, vmax=16)
        ax.set(title=title, xticks=[], yticks=[])
plt.show()

fig, ax = plt.subplots(figsize=(4, 4), layout="constrained")
plot_basis(W, (8, 8), ax=ax, n_cols=4, normalize="max", title="basis, from 80 % of the pixels")
plt.show()
