"""Figure 5 run past its stop: does the oriented share grow with iterations?

``python -m reproduce.fig5_longer [--seed 0] [--max-iter 6000]`` runs Figure 5's
experiment (natural ON/OFF patches, nmf_sc, M = 72, sH = 0.85) from the same
start as the figure, with ``tol=0`` so that only ``--max-iter`` stops it, and
prints, at a few iterations, the objective, the mean orientation of the 72
features and the *oriented share* (orientation above 0.5 and above 0.4, as
in :mod:`reproduce.fig5`). It writes nothing. REPRODUCTION.md quotes its output
(issue 18's Figure 5 investigation); it takes about 4 minutes per 6000
iterations on one core.
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np

from reproduce._harness import IMAGE_SHAPES, load_dataset
from reproduce.experiments import EXPERIMENTS
from reproduce.fig5 import shares_above

MARKS = (500, 1000, 2000, 3000, 4000, 5000, 6000, 8000, 10000)


def row(iteration, W, objective):
    """The numbers printed for one iteration."""
    from nmfsc.scores import orientation

    values = orientation(W, IMAGE_SHAPES["natural"], on_off=True)
    return {
        "iteration": int(iteration),
        "objective": float(objective),
        "orientation_mean": round(float(values.mean()), 4),
        **{f"share_above_{t}": round(share, 4) for t, share in shares_above(values).items()},
    }


def main(argv=None):
    import nmfsc

    parser = argparse.ArgumentParser(prog="python -m reproduce.fig5_longer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-iter", type=int, default=6000)
    args = parser.parse_args(argv)
    exp = EXPERIMENTS["fig5"]
    V = load_dataset(exp.dataset, args.seed)

    def report(state):
        if state.iteration in MARKS:
            print(json.dumps(row(state.iteration, np.asarray(state.W), state.objective)))
        return False

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)  # tol=0: the cap stops it
        result = nmfsc.nmf_sc(
            V,
            exp.n_components,
            random_state=args.seed,
            max_iter=args.max_iter,
            tol=0.0,
            callback=report,
            progress=False,
            **exp.params,
        )
    print(json.dumps(row(result.n_iter, result.W, result.objective[-1])))


if __name__ == "__main__":
    main()
