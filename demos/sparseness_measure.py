"""Demo: Hoyer's sparseness measure on example vectors.

    python -m demos.sparseness_measure [--out demos_output]

Prints the sparseness of a few hand-picked vectors of length 10 (one spike,
two spikes, a geometric decay, uniform noise, a constant) and draws each as a
bar plot titled with its value: the measure is 1 for a single non-zero entry, 0
when all entries are equal, and depends only on the shape, not the scale.
"""

import argparse
from pathlib import Path

import numpy as np

from nmfsc import sparseness

N = 10


def examples(seed=0):
    rng = np.random.default_rng(seed)
    spike = np.zeros(N)
    spike[3] = 1.0
    two = np.zeros(N)
    two[[2, 7]] = [1.0, 0.6]
    return {
        "one spike": spike,
        "two spikes": two,
        "geometric decay 0.5^i": 0.5 ** np.arange(N),
        "geometric decay 0.8^i": 0.8 ** np.arange(N),
        "uniform noise": rng.random(N),
        "constant": np.ones(N),
        "constant x 1000": 1000 * np.ones(N),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="demos_output", help="output folder")
    args = parser.parse_args(argv)
    from nmfsc.plotting import plot_sparseness_bars, save_figure

    vectors = examples()
    values = {name: sparseness(v) for name, v in vectors.items()}
    print(f"Hoyer's sparseness of vectors of length {N}:")
    for name, value in values.items():
        print(f"  {name:<24s} {value:.3f}")
    print("1 = a single active entry, 0 = all entries equal; scaling changes nothing.")
    axes = plot_sparseness_bars(list(vectors.values()), list(values.values()))
    for ax, name in zip(np.ravel(axes), vectors, strict=True):
        ax.set_title(f"{name}\n{values[name]:.2f}", fontsize=8)
    paths = save_figure(np.ravel(axes)[0].figure, Path(args.out) / "sparseness_measure")
    print("wrote", ", ".join(map(str, paths)))
    return values


if __name__ == "__main__":
    main()
