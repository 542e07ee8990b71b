"""
The projection, step by step
============================

NMF with sparseness constraints keeps every basis vector at its target sparseness
by projecting it, after each gradient step, onto the non-negative vectors with a
given L1 and L2 norm (Hoyer 2004, Section 3.2). In three dimensions the whole
algorithm can be watched:

* every vector with ``sum(s) = L1`` lies in a plane, whose non-negative part is a
  triangle;
* the vectors of that plane with ``||s||_2 = L2`` form a circle around the
  triangle's centre.

The algorithm projects ``x`` onto the plane, then moves out from the centre,
along the line through that point, to the circle. If an entry went negative, it
is set to zero, the sum is restored on the others, and the point goes out to the
circle again, now along the edge of the triangle. Each such round is a *pass*;
Figure 6 of the paper counts them.
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.animation import FuncAnimation

from nmfsc import l1_for_sparseness, project, sparseness

x = np.array([0.15, 0.45, 1.0])
target = 0.8
l2 = 1.0
l1 = l1_for_sparseness(target, 3, l2)


def hoyer_steps(x, l1, l2):
    """The paper's algorithm in plain NumPy, recording every intermediate point."""
    n = x.size
    steps = [("x", x.copy())]
    v = x + (l1 - x.sum()) / n
    steps.append(("onto the plane sum(s) = L1", v.copy()))
    zero = np.zeros(n, dtype=bool)
    while True:
        mid = np.where(zero, 0.0, l1 / (n - zero.sum()))
        w = v - mid
        a, b, c = w @ w, 2 * w @ v, v @ v - l2**2
        v = v + (-b + np.sqrt(b * b - 4 * a * c)) / (2 * a) * w
        steps.append(("out to the circle ||s|| = L2", v.copy()))
        if np.all(v >= 0):
            return steps
        zero |= v <= 0
        v[zero] = 0.0
        v[~zero] += (l1 - v.sum()) / (n - zero.sum())
        steps.append(("negative entry set to 0, sum restored", v.copy()))


steps = hoyer_steps(x, l1, l2)
print(f"x = {x}, target sparseness {target} (L1 = {l1:.4f}, L2 = {l2})")
for i, (name, point) in enumerate(steps):
    print(f"  {i}. {name:<40s} {np.array2string(point, precision=4)}")

# %%
# The library's compiled kernel lands on the same point, and counts the passes:

result, passes = project(x, l1, l2, method="hoyer", return_passes=True)
print(f"nmfsc.project: {np.array2string(result, precision=4)} after {passes} pass(es)")
print(f"largest difference from the steps above: {np.max(np.abs(result - steps[-1][1])):.1e}")
print(f"sparseness of the result: {sparseness(result):.4f}")

# What the text claims, checked: the same point, at the target sparseness, after
# one pass per trip out to the circle (here one entry had to be clipped).
assert np.max(np.abs(result - steps[-1][1])) < 1e-12
assert np.isclose(sparseness(result), target) and np.all(result >= 0)
assert passes == sum(name.startswith("out to the circle") for name, _ in steps) == 2

# %%
# The path in three dimensions: from ``x`` onto the plane, out to the circle,
# an entry clipped to zero, out to the circle again along the triangle's edge.

fig3d = plt.figure(figsize=(5, 5), layout="constrained")
ax3 = fig3d.add_subplot(projection="3d")
triangle = np.vstack([l1 * np.eye(3), [l1, 0, 0]])
ax3.plot(*triangle.T, color="0.5", label="s >= 0, sum(s) = L1")
points = np.array([point for _, point in steps])
ax3.plot(*points.T, "-o", color="tab:red", ms=4, label="steps")
ax3.scatter(*points[-1], marker="*", s=150, color="tab:blue", label="result")
ax3.set_xlabel("s1")
ax3.set_ylabel("s2")
ax3.set_zlabel("s3")
ax3.legend(loc="upper left", fontsize=8)

# %%
# Now watch it. The plane ``sum(s) = L1`` is drawn face-on: the grey triangle is
# its non-negative part, the dashed circle the points with ``||s||_2 = L2``;
# each frame adds one step (the first point is ``x`` itself, seen from the front).


def plane_coordinates(points):
    """2-D coordinates in the plane sum(s) = L1, centred on the triangle's centre."""
    e1 = np.array([1.0, -1.0, 0.0]) / np.sqrt(2)
    e2 = np.array([1.0, 1.0, -2.0]) / np.sqrt(6)
    centred = np.atleast_2d(points) - l1 / 3
    return np.column_stack([centred @ e1, centred @ e2])


path = plane_coordinates(np.array([point for _, point in steps]))
corners = plane_coordinates(l1 * np.eye(3))
radius = np.sqrt(l2**2 - l1**2 / 3)
angle = np.linspace(0, 2 * np.pi, 200)

fig, ax = plt.subplots(figsize=(6, 5.5), layout="constrained")
ax.fill(*corners.T, color="0.9", label="s >= 0 in the plane")
ax.plot(radius * np.cos(angle), radius * np.sin(angle), "k--", lw=1, label="||s||_2 = L2")
(line,) = ax.plot([], [], "-o", color="tab:red", ms=5, label="steps")
(star,) = ax.plot([], [], "*", color="tab:blue", ms=16, label="current point")
pad = 0.15
ax.set_xlim(min(corners[:, 0].min(), path[:, 0].min()) - pad, corners[:, 0].max() + pad)
ax.set_ylim(min(corners[:, 1].min(), path[:, 1].min()) - pad, corners[:, 1].max() + pad)
ax.set_aspect("equal")
ax.set_xticks([])
ax.set_yticks([])
ax.legend(loc="lower left", fontsize=8)


def show_step(k):
    line.set_data(path[: k + 1, 0], path[: k + 1, 1])
    star.set_data(path[k : k + 1, 0], path[k : k + 1, 1])
    ax.set_title(f"step {k}: {steps[k][0]}\n{np.array2string(steps[k][1], precision=3)}")
    return line, star


animation = FuncAnimation(fig, show_step, frames=len(steps), interval=1200, repeat_delay=2000)
# sphinx_gallery_thumbnail_number = 1
fig.canvas.draw()  # starts the animation (without a window, this draws its first frame)
plt.show()
