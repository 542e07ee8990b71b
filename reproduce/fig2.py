"""Figure 2: what different degrees of sparseness look like.

Caption (Hoyer 2004): "Illustration of various degrees of sparseness. Four
vectors are shown, exhibiting sparseness levels of 0.1, 0.4, 0.7, and 0.9. Each
bar denotes the value of one element of the vector. At low levels of sparseness
(leftmost), all elements are roughly equally active. At high levels
(rightmost), most coefficients are zero whereas only a few take significant
values."

Here one random non-negative vector of length 40 (|N(0, 1)| entries, seeded) is
projected to unit L2 norm and each of the four sparseness levels, so the four
panels show the same vector at four settings of the knob.
"""

import numpy as np

from nmfsc import l1_for_sparseness, project, sparseness
from reproduce._harness import figure_json
from reproduce._output import write_figure_set

CAPTION = __doc__.split('"')[1]
LEVELS = (0.1, 0.4, 0.7, 0.9)
LENGTH = 40


def compute(seed, levels=LEVELS, length=LENGTH):
    x = np.abs(np.random.default_rng(seed).standard_normal(length))
    return [project(x, l1_for_sparseness(s, length), 1.0) for s in levels]


def main(options):
    from nmfsc.plotting import plot_sparseness_bars

    vectors = compute(options.seed)
    achieved = [sparseness(v) for v in vectors]
    axes = plot_sparseness_bars(vectors, achieved)
    fig = np.ravel(axes)[0].figure
    numbers = {
        "requested": list(LEVELS),
        "achieved": achieved,
        "max_abs_error": float(np.max(np.abs(np.subtract(achieved, LEVELS)))),
        "nonzero_entries": [int(np.count_nonzero(v)) for v in vectors],
    }
    payload = {"parameters": {"length": LENGTH, "levels": list(LEVELS)}, "claims": numbers}
    return write_figure_set(
        fig, options.out_dir, "fig2", figure_json(options, "fig2", CAPTION, payload)
    )
