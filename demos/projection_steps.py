"""Demo: the projection operator step by step, in three dimensions.

    python -m demos.projection_steps [--out demos_output] [--sparseness 0.8]

For n = 3 every vector with sum(s) = L1 lies in a plane; its non-negative part
is a triangle, and the vectors with ||s||_2 = L2 in that plane form a circle
around the triangle's centre. The paper's algorithm (Hoyer 2004, Section 3.2)
goes: project x onto the plane; move out from the centre along the line
through that point until the circle is reached; if an entry went negative, set
it to zero, restore the sum on the others, and go out to the circle again
(now within the edge of the triangle). The figure shows the plane seen
face-on, with the triangle, the circle and every step, next to a 3-D view; the
script prints each step and checks that the end point equals
``nmfsc.project(x, L1, L2, method="hoyer")``.
"""

import argparse
from pathlib import Path

import numpy as np

from nmfsc import l1_for_sparseness, project, sparseness

X = np.array([0.15, 0.45, 1.0])


def hoyer_steps(x, l1, l2):
    """The paper's algorithm in plain NumPy, recording every intermediate point."""
    n = x.size
    steps = [("x", x.copy())]
    v = x + (l1 - x.sum()) / n
    steps.append(("onto the plane sum = L1", v.copy()))
    zero = np.zeros(n, dtype=bool)
    while True:
        mid = np.where(zero, 0.0, l1 / (n - zero.sum()))
        w = v - mid
        a, b, c = w @ w, 2 * w @ v, v @ v - l2**2
        alpha = (-b + np.sqrt(b * b - 4 * a * c)) / (2 * a)
        v = v + alpha * w
        steps.append(("out to the circle ||s|| = L2", v.copy()))
        if np.all(v >= 0):
            return steps
        zero |= v <= 0
        v[zero] = 0.0
        v[~zero] += (l1 - v.sum()) / (n - zero.sum())
        steps.append(("negative entry set to 0, sum restored", v.copy()))


def plane_coordinates(points, l1):
    """2-D coordinates of points in the plane sum = L1 (centre at the origin)."""
    e1 = np.array([1.0, -1.0, 0.0]) / np.sqrt(2)
    e2 = np.array([1.0, 1.0, -2.0]) / np.sqrt(6)
    centred = np.atleast_2d(points) - l1 / 3
    return np.column_stack([centred @ e1, centred @ e2])


def draw(steps, l1, l2):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 5), layout="constrained")
    ax = fig.add_subplot(1, 2, 1)
    corners = plane_coordinates(l1 * np.eye(3), l1)
    ax.fill(*corners.T, color="0.92", label="s >= 0 in the plane")
    radius = np.sqrt(l2**2 - l1**2 / 3)
    angle = np.linspace(0, 2 * np.pi, 400)
    ax.plot(radius * np.cos(angle), radius * np.sin(angle), "k--", lw=1, label="||s|| = L2")
    path = plane_coordinates(np.array([p for _, p in steps[1:]]), l1)
    ax.plot(*path.T, "-o", color="tab:red", ms=4, label="steps")
    ax.plot(*path[-1], "*", color="tab:blue", ms=14, label="result")
    zoom = ax.inset_axes([0.62, 0.62, 0.36, 0.36])
    zoom.fill(*corners.T, color="0.92")
    zoom.plot(radius * np.cos(angle), radius * np.sin(angle), "k--", lw=1)
    zoom.plot(*path.T, "-o", color="tab:red", ms=4)
    zoom.plot(*path[-1], "*", color="tab:blue", ms=14)
    for i, xy in enumerate(path):
        zoom.annotate(f"{i + 1}", xy, textcoords="offset points", xytext=(4, 4), fontsize=8)
    pad = 0.15 * np.ptp(path, axis=0).max()
    zoom.set_xlim(path[:, 0].min() - pad, path[:, 0].max() + pad)
    zoom.set_ylim(path[:, 1].min() - pad, path[:, 1].max() + pad)
    zoom.set_aspect("equal")
    zoom.set_xticks([])
    zoom.set_yticks([])
    zoom.set_title("zoom", fontsize=8)
    ax.set_aspect("equal")
    ax.set_title("the plane sum(s) = L1, seen face-on")
    ax.legend(loc="lower left", fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])

    ax3 = fig.add_subplot(1, 2, 2, projection="3d")
    tri = np.vstack([l1 * np.eye(3), [l1, 0, 0]])
    ax3.plot(*tri.T, color="0.5")
    pts = np.array([p for _, p in steps])
    ax3.plot(*pts.T, "-o", color="tab:red", ms=4)
    ax3.scatter(*pts[-1], marker="*", s=150, color="tab:blue")
    ax3.set_xlabel("s1")
    ax3.set_ylabel("s2")
    ax3.set_zlabel("s3")
    ax3.set_title("the same path in 3-D (from x)")
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="demos_output", help="output folder")
    parser.add_argument("--sparseness", type=float, default=0.8, help="target sparseness")
    args = parser.parse_args(argv)
    from nmfsc.plotting import save_figure

    l2 = 1.0
    l1 = l1_for_sparseness(args.sparseness, 3, l2)
    steps = hoyer_steps(X, l1, l2)
    print(f"x = {X}, target sparseness {args.sparseness} (L1 = {l1:.4f}, L2 = {l2})")
    for i, (name, p) in enumerate(steps):
        print(f"  {i}. {name:<40s} {np.array2string(p, precision=4)}")
    result, passes = project(X, l1, l2, method="hoyer", return_passes=True)
    gap = float(np.max(np.abs(result - steps[-1][1])))
    print(f"nmfsc.project gives {np.array2string(result, precision=4)} in {passes} pass(es);")
    print(f"  difference from the step-by-step path {gap:.1e}, sparseness {sparseness(result):.4f}")
    paths = save_figure(draw(steps, l1, l2), Path(args.out) / "projection_steps")
    print("wrote", ", ".join(map(str, paths)))
    return steps, result


if __name__ == "__main__":
    main()
