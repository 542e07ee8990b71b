"""
The sparseness measure on example vectors
=========================================

Hoyer's sparseness of a vector ``x`` of length ``n``,

.. math::

   \\mathrm{sparseness}(x) = \\frac{\\sqrt{n} - \\lVert x\\rVert_1 / \\lVert x\\rVert_2}
   {\\sqrt{n} - 1},

is 1 for a single non-zero entry, 0 when all entries are equal, and depends only
on the shape of ``x``, not its scale. Here it is on seven hand-picked vectors of
length 10.
"""

import matplotlib.pyplot as plt
import numpy as np

from nmfsc import sparseness
from nmfsc.plotting import plot_sparseness_bars

n = 10
spike = np.zeros(n)
spike[3] = 1.0
two_spikes = np.zeros(n)
two_spikes[[2, 7]] = [1.0, 0.6]
vectors = {
    "one spike": spike,
    "two spikes": two_spikes,
    "decay 0.5^i": 0.5 ** np.arange(n),
    "decay 0.8^i": 0.8 ** np.arange(n),
    "uniform noise": np.random.default_rng(0).random(n),
    "constant": np.ones(n),
    "constant x 1000": 1000 * np.ones(n),
}
values = {name: sparseness(v) for name, v in vectors.items()}
for name, value in values.items():
    print(f"{name:<16s} {value:.3f}")

# What the text claims, checked.
assert np.isclose(values["one spike"], 1.0), "one non-zero entry scores 1"
assert np.isclose(values["constant"], 0.0), "equal entries score 0"
assert values["constant x 1000"] == values["constant"], "the scale does not matter"
assert values["decay 0.5^i"] > values["decay 0.8^i"], "a fast decay is sparser than a slow one"

# %%
# One spike scores 1, a constant vector 0, whatever its scale; a fast decay is
# sparser than a slow one.

fig, axes = plt.subplots(1, len(vectors), figsize=(13, 2.4), layout="constrained")
plot_sparseness_bars(list(vectors.values()), list(values.values()), axes=axes)
for ax, (name, value) in zip(axes, values.items(), strict=True):
    ax.set_title(f"{name}\n{value:.2f}", fontsize=9)
plt.show()
