"""Figure 6: passes of the projection algorithm against dimension.

Caption (Hoyer 2004): "Number of iterations required for the projection
algorithm to converge, in the worst-case scenario tested (desired sparseness 0.9,
initial sparseness 0.1). The solid line shows the average number (over identical
random trials) of iterations required, the dashed lines show the minimum and
maximum iterations. Note that the number of iterations grows very slowly with
the dimensionality of the problem."

Protocol (SPEC.md): for every dimension in {2, 3, 5, 10, 50, 100, 500, 1000,
3000, 5000, 10000} and every (desired, initial) pair from {0.1, 0.3, 0.5, 0.7,
0.9}, 50 trials: a random normal unit vector is projected to the initial
sparseness, then projected to the desired one with the paper's algorithm
(``method="hoyer"``), and the passes of that second projection are recorded.
Every result must meet L1 and L2 within 1e-8 and be non-negative. The claim:
never more than 10 passes. We also check that the fast method returns the same
vectors.
"""

import numpy as np

from nmfsc import l1_for_sparseness, project
from reproduce._harness import figure_json
from reproduce._output import write_figure_set

CAPTION = __doc__.split('"')[1]
DIMS = (2, 3, 5, 10, 50, 100, 500, 1000, 3000, 5000, 10000)
LEVELS = (0.1, 0.3, 0.5, 0.7, 0.9)
TRIALS = 50
QUICK_DIMS = (2, 3, 5, 10, 50, 100, 500, 1000)
QUICK_TRIALS = 5
PAPER_BOUND = 10


def compute(dims, levels, trials, seed):
    """Passes[d, desired, initial, trial] and the worst constraint violations."""
    rng = np.random.default_rng(seed)
    passes = np.zeros((len(dims), len(levels), len(levels), trials), dtype=np.int64)
    worst = {"l1_error": 0.0, "l2_error": 0.0, "min_entry": np.inf, "fast_vs_hoyer": 0.0}
    for d, n in enumerate(dims):
        for t in range(trials):
            x = rng.standard_normal(n)
            x /= np.linalg.norm(x)
            for j, initial in enumerate(levels):
                start = project(x, l1_for_sparseness(initial, n), 1.0)
                for i, desired in enumerate(levels):
                    l1 = l1_for_sparseness(desired, n)
                    s, count = project(start, l1, 1.0, method="hoyer", return_passes=True)
                    passes[d, i, j, t] = count
                    worst["l1_error"] = max(worst["l1_error"], abs(s.sum() - l1))
                    worst["l2_error"] = max(worst["l2_error"], abs(np.linalg.norm(s) - 1.0))
                    worst["min_entry"] = min(worst["min_entry"], float(s.min()))
                    fast = project(start, l1, 1.0, method="fast")
                    worst["fast_vs_hoyer"] = max(
                        worst["fast_vs_hoyer"], float(np.abs(fast - s).max())
                    )
    return passes, worst


def claims(dims, levels, passes, worst):
    """The numbers behind the figure and the paper's claim."""
    mean = passes.mean(axis=3)
    i_worst, j_worst = np.unravel_index(np.argmax(mean.mean(axis=0)), mean.shape[1:])
    hi_index, lo_index = levels.index(0.9), levels.index(0.1)
    case = passes[:, hi_index, lo_index, :]
    largest = int(passes.max())
    return {
        "worst_case_desired_0.9_initial_0.1": {
            "dims": list(dims),
            "mean": case.mean(axis=1).tolist(),
            "min": case.min(axis=1).tolist(),
            "max": case.max(axis=1).tolist(),
        },
        "worst_pair_on_average": {"desired": levels[i_worst], "initial": levels[j_worst]},
        "largest_passes_whole_grid": largest,
        "paper_bound": PAPER_BOUND,
        "bound_holds": largest <= PAPER_BOUND,
        "constraints": {
            "max_l1_error": worst["l1_error"],
            "max_l2_error": worst["l2_error"],
            "min_entry": worst["min_entry"],
            "all_within_1e-8_and_nonnegative": bool(
                worst["l1_error"] <= 1e-8 and worst["l2_error"] <= 1e-8 and worst["min_entry"] >= 0
            ),
        },
        "max_abs_difference_fast_vs_hoyer": worst["fast_vs_hoyer"],
    }


def plot(dims, case_claims):
    from nmfsc.plotting import plot_passes

    return plot_passes(
        np.asarray(dims), case_claims["mean"], case_claims["min"], case_claims["max"]
    ).figure


def main(options):
    dims = QUICK_DIMS if options.quick else DIMS
    trials = QUICK_TRIALS if options.quick else TRIALS
    passes, worst = compute(dims, LEVELS, trials, options.seed)
    numbers = claims(dims, LEVELS, passes, worst)
    fig = plot(dims, numbers["worst_case_desired_0.9_initial_0.1"])
    payload = {
        "parameters": {"dims": list(dims), "levels": list(LEVELS), "trials": trials},
        "claims": numbers,
    }
    return write_figure_set(
        fig, options.out_dir, "fig6", figure_json(options, "fig6", CAPTION, payload)
    )
