"""Every gallery example runs as a plain script, from any folder, and writes nothing.

The examples in ``examples/`` are executed by sphinx-gallery when the site is
built; here each one runs as a user would run a downloaded copy: ``python
plot_x.py`` in a fresh temporary folder, with a non-interactive matplotlib
backend (so ``plt.show()`` must return at once). The source tree must be the
same afterwards (no output folders, no stray files), and the examples on the
paper's data are skipped with a reason when that data is absent (failed under
``CI=true``), like the other real-data tests.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))
REAL_DATA = {"plot_orl_sparseness_sweep.py", "plot_natural_on_off.py", "plot_orl_missing_pixels.py"}


def _tree(root):
    """Every file under root (tracked, untracked and ignored), but .git."""
    return {p.relative_to(root) for p in root.rglob("*") if ".git" not in p.parts}


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
    before = _tree(ROOT)
    proc = subprocess.run(
        [sys.executable, str(example)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"{example.name} failed:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip(), f"{example.name} printed nothing"
    assert "Traceback" not in proc.stderr
    new = sorted(map(str, _tree(ROOT) - before))
    assert not new, f"{example.name} wrote into the source tree: {new}"
    assert not list(tmp_path.iterdir()), f"{example.name} wrote into its working folder"
