"""
Missing values: fit the entries you observed, predict the others
================================================================

Data have holes: unmeasured pixels, dropped samples, unrated items. A NaN in
``V`` is an error when nothing says what it means (one line naming the first
one, never a silent NaN basis); say that those entries are *missing* and
nmfsc fits the observed entries only, minimising
½ ‖M ∘ (V − W H)‖², where the mask M is true for an observed entry
(:doc:`/solvers`, "Missing values"):

- ``nmf_sc(V, k, mask=M)`` (and ``nmf_euclidean``) for a matrix, features x
  samples;
- ``SparseNMF(missing_values=np.nan)`` for scikit-learn's orientation (one
  sample per row), where ``transform`` also codes *new* samples with holes.

A hidden entry is never read, so ``W H`` predicts it. Here 20 % of the pixels
of scikit-learn's handwritten digits are hidden; the predictions are set
against the simplest guess, each pixel's mean over the images where it was
observed. The next example does the same on the ORL faces and weighs the
sparseness constraint against plain NMF.
"""

import textwrap
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

import nmfsc
from nmfsc.plotting import plot_basis

V = load_digits().data.T  # features x samples: 64 x 1797, values 0..16
rng = np.random.default_rng(0)
hidden = rng.random(V.shape) < 0.2
observed = ~hidden
V_missing = np.where(hidden, np.nan, V)

try:
    nmfsc.nmf_sc(V_missing, 16, sparseness_w=0.6, random_state=0)
except ValueError as error:
    print("without a mask, NaN is an error:\n" + textwrap.fill(str(error), 88))
else:
    raise AssertionError("nmf_sc accepted a V with NaN and no mask")


def hidden_error(estimate, truth, where):
    """Relative error on the hidden entries: ||(estimate - truth)[where]|| / ||truth[where]||."""
    return float(np.linalg.norm((estimate - truth)[where]) / np.linalg.norm(truth[where]))


pixel_means = np.nanmean(V_missing, axis=1, keepdims=True)  # per pixel, over the images
mean_fill = hidden_error(np.broadcast_to(pixel_means, V.shape), V, hidden)

# %%
# The matrix way: ``mask=``. The fit reads the observed 80 % only; its
# ``relative_error`` is over them, and ``W H`` fills in the rest. It runs to
# convergence (``solver="accelerated"``, the paper's problem solved faster,
# until the objective changes by less than ``tol = 1e-5``, relative, over 10
# iterations).

fit = nmfsc.nmf_sc(
    V_missing, 16, sparseness_w=0.6, mask=observed, solver="accelerated", random_state=0
)
masked_error = hidden_error(fit.W @ fit.H, V, hidden)
print(f"mean fill:          relative error on the hidden pixels {mean_fill:.3f}")
print(
    f"nmf_sc, mask=:      relative error on the hidden pixels {masked_error:.3f} "
    f"(on the observed ones {fit.relative_error:.3f}), {fit.n_iter} iterations "
    f"(stop: {fit.stop_reason})"
)

# What the text claims, checked: the fit converged; it predicts the hidden pixels
# far better than the per-pixel mean, and holds its basis at the requested sparseness.
assert fit.stop_reason == "tol", fit.stop_reason
assert masked_error < 0.8 * mean_fill, (masked_error, mean_fill)
assert np.allclose(fit.sparseness_W, 0.6, atol=1e-6)

# %%
# The estimator way: ``SparseNMF(missing_values=np.nan)`` takes the NaN
# entries of X (samples x features) as missing in ``fit`` and in
# ``transform``. Fitted on the first 1500 images, it codes the other 297, holes
# and all, with its basis fixed, and ``inverse_transform`` fills them in. Both
# ``fit`` and ``transform`` run to convergence.

X_missing = V_missing.T
model = nmfsc.SparseNMF(
    n_components=16,
    sparseness_components=0.6,
    missing_values=np.nan,
    solver="accelerated",
    random_state=0,
)
with warnings.catch_warnings():
    # Checked: fit and transform both run to convergence; a ConvergenceWarning
    # (a run stopped by max_iter) would be an error here.
    warnings.simplefilter("error", nmfsc.ConvergenceWarning)
    model.fit(X_missing[:1500])
    codes = model.transform(X_missing[1500:])
assert model.result_.stop_reason == "tol", model.result_.stop_reason
new_filled = model.inverse_transform(codes)
new_hidden = hidden.T[1500:]
new_error = hidden_error(new_filled, V.T[1500:], new_hidden)
new_means = np.broadcast_to(pixel_means.T, new_filled.shape)
new_mean_fill = hidden_error(new_means, V.T[1500:], new_hidden)
print("new images, relative error on their hidden pixels:")
print(f"mean fill {new_mean_fill:.3f}, SparseNMF.transform {new_error:.3f}")
assert new_error < 0.8 * new_mean_fill, (new_error, new_mean_fill)

# %%
# Two images with their hidden pixels (red), the mean fill, and the masked
# fit's prediction; and the 16 basis images learned from the incomplete data.

fig, axes = plt.subplots(2, 4, figsize=(9, 4.8), layout="constrained")
first_fill = np.where(hidden, pixel_means, V)
predicted = np.where(hidden, fit.W @ fit.H, V)
cmap = plt.get_cmap("gray_r").with_extremes(bad="tab:red")
for row, image in zip(axes, (0, 1), strict=True):
    panels = [
        ("original", V[:, image]),
        ("20 % hidden", V_missing[:, image]),
        ("mean fill", first_fill[:, image]),
        ("predicted by W H", predicted[:, image]),
    ]
    for ax, (title, pixels) in zip(row, panels, strict=True):
        ax.imshow(pixels.reshape(8, 8), cmap=cmap, vmin=0, vmax=16)
        ax.set(title=title, xticks=[], yticks=[])
plt.show()

fig, ax = plt.subplots(figsize=(4, 4), layout="constrained")
plot_basis(fit.W, (8, 8), ax=ax, n_cols=4, normalize="max", title="basis, from 80 % of the pixels")
plt.show()
