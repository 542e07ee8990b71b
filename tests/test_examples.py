"""Every gallery example runs as a plain script, from any folder, and writes nothing.

The examples in ``examples/`` are executed by sphinx-gallery when the site is
built; here each one runs as a user would run a downloaded copy: ``python
plot_x.py`` in a fresh temporary folder, with a non-interactive matplotlib
backend (so ``plt.show()`` must return at once). The example may write
nothing into the source tree (no output folders, no stray files): an audit
hook (:func:`sys.addaudithook`, installed by a ``sitecustomize`` module in the
example's process and every Python process it starts) records every file
they open for writing, create, rename or remove, so another process writing
into the checkout at the same time (a ``python -m reproduce all``) cannot
fail the test. No run has a wall-clock limit: a loaded machine makes
an example slower, not wrong. The examples on the paper's data are skipped
with a reason when that data is absent (failed under ``CI=true``), like the
other real-data tests.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))
REAL_DATA = {"plot_orl_sparseness_sweep.py", "plot_natural_on_off.py", "plot_orl_missing_pixels.py"}


# A sitecustomize module: on PYTHONPATH, Python imports it at the start of every
# process, so the example and every Python process it starts (the nmfsc command
# line in plot_command_line.py) record, one per line appended to the file named
# by NMFSC_WRITES_TO, the absolute path of everything they write to.
TRACER = r"""
import atexit, os, sys

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
PATH_EVENTS = {"os.mkdir": (0,), "os.remove": (0,), "os.rmdir": (0,), "os.truncate": (0,),
               "os.rename": (0, 1), "os.replace": (0, 1), "os.symlink": (1,), "os.link": (1,),
               "os.chmod": (0,), "shutil.rmtree": (0,)}
_trace = os.environ.get("NMFSC_WRITES_TO")
_written = set() if _trace else None


def _target(path):
    if _written is not None and isinstance(path, (str, bytes, os.PathLike)):
        _written.add(os.path.abspath(os.fsdecode(path)))


def _hook(event, args):
    if event == "open":
        path, mode, flags = args
        if (mode and any(c in mode for c in "wax+")) or (flags or 0) & WRITE_FLAGS:
            _target(path)
    elif event in PATH_EVENTS:
        for i in PATH_EVENTS[event]:
            _target(args[i])


def _report():
    global _written
    report, _written = sorted(_written), None  # stop recording: the report is ours
    with open(_trace, "a") as handle:
        handle.write("".join(path + "\n" for path in report))


if _trace:
    sys.addaudithook(_hook)
    atexit.register(_report)
"""


def traced_env(tmp_path, env):
    """``env`` with the write tracer installed (:data:`TRACER`); returns it and
    a function that reads every path the processes wrote to."""
    tracer = tmp_path / "tracer"
    tracer.mkdir()
    (tracer / "sitecustomize.py").write_text(TRACER)
    trace = tmp_path / "written.txt"
    env = dict(env, NMFSC_WRITES_TO=str(trace))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tracer), env.get("PYTHONPATH")]))
    return env, lambda: set(trace.read_text().splitlines()) if trace.exists() else set()


@pytest.fixture(scope="module")
def numba_cache(tmp_path_factory):
    # Compiled kernels go to one folder outside the tree, shared by the examples.
    return tmp_path_factory.mktemp("numba-cache")


def test_every_example_is_listed():
    assert len(EXAMPLES) >= 8
    assert REAL_DATA <= {p.name for p in EXAMPLES}


def test_gallery_is_ordered_as_a_course():
    # docs/_ext/gallery_order.py gives the gallery's order; each example has a place.
    sys.path.insert(0, str(ROOT / "docs/_ext"))
    try:
        from gallery_order import COURSE, CourseOrder
    finally:
        sys.path.remove(str(ROOT / "docs/_ext"))
    assert sorted(COURSE) == [p.name for p in EXAMPLES]
    key = CourseOrder(str(ROOT / "examples"))
    assert sorted((p.name for p in EXAMPLES), key=key) == list(COURSE)
    assert COURSE[0] == "plot_sparseness_measure.py"


def test_every_example_asserts_its_claims():
    # The build fails the day an example's prose stops being true only if the
    # example checks what it says.
    for path in EXAMPLES:
        assert "\nassert " in path.read_text(encoding="utf-8"), f"{path.name} asserts nothing"


@pytest.mark.parametrize(
    "example",
    [
        pytest.param(p, id=p.stem, marks=[pytest.mark.realdata] if p.name in REAL_DATA else [])
        for p in EXAMPLES
    ],
)
@pytest.mark.slow  # each example is a full script run in a fresh process
def test_example_runs_as_a_script_and_writes_nothing(example, tmp_path, numba_cache):
    env = dict(os.environ)
    env.update(MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", NUMBA_CACHE_DIR=str(numba_cache))
    # One BLAS thread, as the docs build uses (see docs/conf.py): on shared cores
    # BLAS threads slow the ORL example several times over.
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    # The examples import nmfsc as a user would; make this checkout importable
    # even when it is not installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    work = tmp_path / "work"
    work.mkdir()
    env, written = traced_env(tmp_path, env)
    proc = subprocess.run(
        [sys.executable, str(example)], cwd=work, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, f"{example.name} failed:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip(), f"{example.name} printed nothing"
    assert "Traceback" not in proc.stderr
    inside = sorted(p for p in written() if Path(p).resolve().is_relative_to(ROOT.resolve()))
    assert not inside, f"{example.name} wrote into the source tree: {inside}"
    assert not list(work.iterdir()), f"{example.name} wrote into its working folder"


def test_the_write_trace_sees_every_kind_of_write(tmp_path):
    # The trace is what the tree check reads; it must see what an example could
    # do, in its own process and in a Python process it starts.
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "old.txt").write_text("old")
    script = tmp_path / "plot_writer.py"
    script.write_text(
        "import os, subprocess, sys\n"
        "import numpy as np\n"
        f"tree = {str(tree)!r}\n"
        "open(os.path.join(tree, 'a.txt'), 'w').close()\n"
        "np.save(os.path.join(tree, 'b.npy'), np.zeros(2))\n"
        "os.mkdir(os.path.join(tree, 'c'))\n"
        "os.replace(os.path.join(tree, 'old.txt'), os.path.join(tree, 'd.txt'))\n"
        "fd = os.open(os.path.join(tree, 'e.txt'), os.O_WRONLY | os.O_CREAT)\n"
        "os.close(fd)\n"
        "open(os.path.join(tree, 'a.txt')).read()\n"
        "child = \"open(r'\" + os.path.join(tree, 'f.txt') + \"', 'w').close()\"\n"
        "subprocess.run([sys.executable, '-c', child], check=True)\n"
        "print('done')\n"
    )
    env, written = traced_env(tmp_path, os.environ)
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "done\n", proc.stderr
    names = {"a.txt", "b.npy", "c", "old.txt", "d.txt", "e.txt", "f.txt"}
    assert {str(tree / n) for n in names} <= written()
    assert str(tree / "a.txt") in written()  # read later, still written once
