"""
The command line: ``nmfsc compare`` and ``nmfsc fit`` on a folder of images
===========================================================================

The ``nmfsc`` command runs the library on files, without writing Python
(:doc:`/cli` lists every option). Here the swimmer data set (256 stick figures
of 32 x 32 pixels, :func:`nmfsc.datasets.swimmer`) is written as a folder of
PNG files, the kind of input you might have, and the two commands run on it,
exactly as typed in a shell (``python -m nmfsc`` is the same program as
``nmfsc``). Everything below is the commands' own output in this build of the
site: the Markdown report that ``compare`` prints (its tables turned on their
side to fit the page), its ``bases.png``, and the summary line of ``fit``. The
times depend on the machine.
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

import nmfsc
from nmfsc.datasets import swimmer

workdir = tempfile.TemporaryDirectory()  # the example writes nothing where it runs
folder = Path(workdir.name) / "swimmer"
folder.mkdir()
V, parts = swimmer()  # 1024 x 256: one 32 x 32 image per column
for j in range(V.shape[1]):
    image = (V[:, j].reshape(32, 32) * 255).astype(np.uint8)
    Image.fromarray(image).save(folder / f"pose{j:03d}.png")

# The commands run with this nmfsc, the one the example imported.
env = dict(os.environ, PYTHONPATH=str(Path(nmfsc.__file__).parents[1]))


def nmfsc_command(*args):
    """Run ``python -m nmfsc ARGS`` in the temporary folder; print the command line."""
    line = "$ nmfsc " + " ".join(args)
    wrapped = textwrap.wrap(line, 76, break_on_hyphens=False, break_long_words=False)
    print(" \\\n      ".join(wrapped))
    return subprocess.run(
        [sys.executable, "-m", "nmfsc", *args],
        cwd=workdir.name,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def show(text):
    """Print a command's output with its long lines wrapped (continued lines indented)."""
    for line in text.strip().splitlines():
        print(textwrap.fill(line, 90, subsequent_indent="    ") if line else "")


def show_markdown(text):
    """Print a Markdown report readably: paragraphs wrapped, and each table turned
    on its side (one column per run, one line per quantity) to fit the page."""
    table = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if not set("".join(cells)) <= set("-:"):  # not the |---| separator row
                table.append(cells)
            continue
        if table:
            for quantity in zip(*table, strict=True):  # the transpose
                print(quantity[0].ljust(20) + "".join(cell.ljust(25) for cell in quantity[1:]))
            table = []
        print(textwrap.fill(line, 90) if line else "")


# %%
# ``nmfsc compare``: three methods from the same start (seed 0), each run until
# its objective falls by less than ``--tol 1e-5`` (relative) over 10 iterations,
# nmf_sc's basis held at sparseness 0.8. The report goes to stdout
# (Markdown), the files to ``--out``, the progress bars and a last line to
# stderr.

compare = nmfsc_command(
    "compare",
    "swimmer/",
    "--n-components",
    "17",
    "--sparseness-w",
    "0.8",
    "--methods",
    "nmf_sc",
    "nmf_euclidean",
    "local_nmf",
    "--seeds",
    "0",
    "--tol",
    "1e-5",
    "--out",
    "swimmer-report",
    "--no-progress",
)
print(f"exit status {compare.returncode}\n")
prose, _, tables = compare.stdout.partition("## ")
show_markdown(prose)

# %%
# The report's tables (here one seed, so the summary and the run agree), then
# the last line on stderr and the files written.

show_markdown("## " + tables)
show(compare.stderr.strip().splitlines()[-1])
report = Path(workdir.name) / "swimmer-report"
written = sorted(p.name for p in report.iterdir() if not p.name.startswith("."))
show("swimmer-report/ holds: " + ", ".join(written))

# What the text claims, checked: the command succeeded, every run stopped by
# its tolerance (none by the iteration limit), nmf_sc's basis is at the
# requested sparseness, and the report holds the bases figure shown below.
assert compare.returncode == 0, compare.stderr
with open(report / "report.csv", newline="", encoding="utf-8") as f:
    runs = {row["method"]: row for row in csv.DictReader(f)}
assert set(runs) == {"nmf_sc", "nmf_euclidean", "local_nmf"}, runs
assert all(row["stop_reason"] == "tol" for row in runs.values()), runs
assert abs(float(runs["nmf_sc"]["sparseness_W"]) - 0.8) < 1e-3, runs["nmf_sc"]
assert (report / "bases.png").is_file() and (report / "report.md").is_file()

# %%
# ``bases.png``: every method's 17 basis images for seed 0, as ``compare``
# wrote it (the image shape, 32 x 32, was taken from the PNG files).

bases = plt.imread(report / "bases.png")
fig, ax = plt.subplots(figsize=(9, 9 * bases.shape[0] / bases.shape[1]), layout="constrained")
ax.imshow(bases)
ax.set_axis_off()
plt.show()

# %%
# ``nmfsc fit``: nmf_sc alone, saved as one ``.npz`` file. The summary line
# goes to stdout (the run converged: stopped by its tolerance, 1e-5 by default);
# ``wrote FILE``, to stderr.

fit = nmfsc_command(
    "fit",
    "swimmer/",
    "--n-components",
    "17",
    "--sparseness-w",
    "0.8",
    "--out",
    "swimmer-fit.npz",
    "--no-progress",
)
show(fit.stdout)
show(fit.stderr)
assert fit.returncode == 0, fit.stderr

with np.load(Path(workdir.name) / "swimmer-fit.npz", allow_pickle=False) as saved:
    W, H = saved["W"], saved["H"]
    record = json.loads(saved["record"][()])  # the run's record, a JSON string
print(f"\nnp.load('swimmer-fit.npz'): W {W.shape}, H {H.shape}, stop {record['stop_reason']!r}")
assert W.shape == (1024, 17) and H.shape == (17, 256)
assert record["stop_reason"] == "tol" and record["converged"], record

# %%
# Bad input stops at once, with one line and exit status 2.

(Path(workdir.name) / "counts.csv").write_text("1,2,3\n4,-5,6\n", encoding="utf-8")
bad = nmfsc_command("compare", "counts.csv", "-k", "2", "--sparseness-w", "0.5")
show(bad.stderr)
print(f"exit status {bad.returncode}")
assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
workdir.cleanup()
