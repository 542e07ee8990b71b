"""Numba's CUDA target loads beside numpy 2.5 (nmfsc.gpu_backend.cuda_target),
and the fused projection's kernels compile with the real CUDA compiler.

numba-cuda 0.30 registers an overload of ``np.row_stack`` when its array
registry is first imported; numpy 2.5 removed ``row_stack``. The first tests
stand a module in for that registry (a module that reads ``np.row_stack``
when imported) on a numpy without ``row_stack``, as numpy 2.5 is. The last
compiles the kernels to PTX for an H100 (sm_90) where numba-cuda and its
compiler (NVVM) are installed, with and without numpy's ``row_stack``; it
needs no GPU, and CI (which installs neither) skips it.
"""

import importlib
import importlib.util
import sys
import types
import warnings

import numpy as np
import pytest

from nmfsc.gpu_backend import cuda_target
from nmfsc.gpu_backend import device_projection as projection
from nmfsc.gpu_backend.cuda_target import import_with_row_stack


def has_row_stack():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return hasattr(np, "row_stack")


@pytest.fixture
def numpy_25(monkeypatch):
    """numpy without ``row_stack``, as numpy 2.5 is (restored after)."""
    if has_row_stack():
        monkeypatch.delattr(np, "row_stack")
    assert not has_row_stack()


@pytest.fixture
def registry_like(tmp_path, monkeypatch):
    """A factory of fresh modules that, like numba-cuda 0.30's
    ``numba/cuda/np/arrayobj.py``, read ``np.row_stack`` when imported."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made = []

    def make():
        name = f"registry_like_{len(made)}"
        (tmp_path / f"{name}.py").write_text(
            "import numpy as np\nREGISTERED = np.row_stack\n", encoding="utf-8"
        )
        made.append(name)
        importlib.invalidate_caches()
        return name

    yield make
    for name in made:
        sys.modules.pop(name, None)


def test_the_registry_fails_on_numpy_25_without_the_stand_in(numpy_25, registry_like):
    """The failure the stand-in prevents (what numba-cuda 0.30 does)."""
    with pytest.raises(AttributeError, match="row_stack"):
        importlib.import_module(registry_like())


def test_the_registry_imports_on_numpy_25_and_numpy_is_left_as_it_was(numpy_25, registry_like):
    module = import_with_row_stack(registry_like())
    assert module is not None
    stacked = module.REGISTERED((np.ones(2), np.zeros(2)))  # the stand-in is vstack
    np.testing.assert_array_equal(stacked, [[1.0, 1.0], [0.0, 0.0]])
    assert not has_row_stack()  # removed again after the import


def test_the_stand_in_is_removed_when_the_import_fails(numpy_25, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "broken_registry.py").write_text(
        "import numpy as np\nnp.row_stack\nraise RuntimeError('broken')\n", encoding="utf-8"
    )
    importlib.invalidate_caches()
    with pytest.raises(RuntimeError, match="broken"):
        import_with_row_stack("broken_registry")
    assert not has_row_stack()
    sys.modules.pop("broken_registry", None)


def test_numpys_own_row_stack_is_left_alone(registry_like):
    if not has_row_stack():
        pytest.skip("this numpy has no row_stack")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        before = np.row_stack  # noqa: NPY201 (numpy's own, the one kept)
        module = import_with_row_stack(registry_like())
        assert module.REGISTERED is before and np.row_stack is before  # noqa: NPY201


def test_a_missing_registry_is_nothing_to_do():
    assert import_with_row_stack("no_such_package_here.np.arrayobj") is None
    assert import_with_row_stack("no_such_module_here") is None


def test_a_cuda_target_that_fails_to_load_switches_the_fused_kernels_off(monkeypatch):
    """An error inside Numba's code while its CUDA target loads means the
    array code projects, with one warning; an error of nmfsc's is a bug."""
    inside_numba = {"__name__": "numba.cuda.np.arrayobj", "np": np}
    exec("def load():\n    raise AttributeError('numpy has no attribute x')\n", inside_numba)
    monkeypatch.setattr(projection, "_FUSED", [])
    monkeypatch.setattr(projection, "load_cuda_target", inside_numba["load"])
    with pytest.warns(RuntimeWarning, match=r"fused CUDA projection failed \(AttributeError"):
        assert projection.fused_kernels() is None
    assert projection._FUSED == [None]

    def bug():
        raise IndexError("a bug of nmfsc's")

    monkeypatch.setattr(projection, "_FUSED", [])
    monkeypatch.setattr(projection, "load_cuda_target", bug)
    with pytest.raises(IndexError, match="a bug"):
        projection.fused_kernels()


def numba_cuda_compiler():
    """Whether numba-cuda (not numba's own CUDA target) and NVVM are here."""
    if importlib.util.find_spec("numba_cuda") is None:
        return False
    try:
        from numba.cuda.cudadrv import nvvm

        nvvm.NVVM()
    except Exception:
        return False
    return True


@pytest.mark.skipif(
    not numba_cuda_compiler(), reason="needs numba-cuda and its compiler (numba-cuda[cu12])"
)
@pytest.mark.parametrize("without_row_stack", [False, True])
def test_the_fused_kernels_compile_for_an_h100(monkeypatch, without_row_stack):
    """Every fused kernel of both forms, for float32 and float64 rows, compiles to PTX for
    sm_90 with numba-cuda's compiler (the simulator checks their arithmetic,
    not that CUDA can compile them). Without a GPU, the device functions'
    target (numba-cuda compiles them for the current device) is set to
    sm_90 too. Run in a subprocess: the registry is imported once per
    process."""
    import subprocess

    code = f"""
import types as t
import numpy as np
import nmfsc  # (scipy, which nmfsc imports, lists numpy's names when imported)
if {without_row_stack} and hasattr(np, "row_stack"):
    del np.row_stack  # as numpy 2.5
from nmfsc.gpu_backend.cuda_target import REGISTRY, import_with_row_stack, load_cuda_target
cuda = load_cuda_target()
if not cuda.is_available():  # no GPU: load_cuda_target left the registry alone
    import_with_row_stack(REGISTRY)
    import numba.cuda.dispatcher as dispatcher
    dispatcher.get_current_device = lambda: t.SimpleNamespace(compute_capability=(9, 0))
from numba import types as T
from nmfsc.gpu_backend import cuda_kernels, grid_kernels
kernels = cuda_kernels.pass_kernels(256)
grid = grid_kernels.grid_kernels(256)
f2, i2, f3, i3 = T.float64[:, ::1], T.int64[:, ::1], T.float64[:, :, ::1], T.int64[:, :, ::1]
b, n, i1, h = T.boolean, T.int64, T.int64[::1], T.int32[:, ::1]
for x in (T.float32[:, ::1], T.float64[:, ::1]):
    signatures = dict(
        first_sums=(x, b, b, f2, i2, i3, f3),
        second_sums=(x, b, f2, i2, i3, f3),
        solve_rows=(x, x, b, f2, i2, n),
        scale=(x, b, f2, i2, f2),
        scale_to_rows_dtype=(x, b, f2, i2, x),  # project_rows(dtype=X.dtype)
        project=(x, x, h, b, b, f2, i2, i3, f3, i1, n, f2),  # the grid form's
        project_to_rows_dtype=(x, x, h, b, b, f2, i2, i3, f3, i1, n, x),
        first_step=(x, b, b, f2, i2, i3, f3, i1),
        pass_step=(x, x, h, b, f2, i2, i3, f3, i1, n, n),
        norm_step=(x, x, h, b, f2, i2, i3, f3),
        scale_step=(x, b, f2, i2, f2),
    )
    for name, signature in signatures.items():
        name = name.replace("_to_rows_dtype", "")
        kernel = getattr(grid if hasattr(grid, name) else kernels, name)
        ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0))
        assert ".target sm_90" in ptx, name
        if name == "project":  # the grid's barrier: a cooperative launch
            assert "cudaCGSynchronize" in ptx, name
print("compiled", not hasattr(np, "row_stack"))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"compiled {without_row_stack}" in out.stdout


def test_load_cuda_target_imports_the_registry_only_where_a_target_runs(monkeypatch):
    """With no CUDA device (and no simulator) nothing is compiled, so the
    registry is not imported; with one it is."""
    imported = []
    monkeypatch.setattr(cuda_target, "import_with_row_stack", imported.append)
    fake = types.SimpleNamespace(is_available=lambda: False)
    monkeypatch.setitem(sys.modules, "numba.cuda", fake)
    import numba

    monkeypatch.setattr(numba, "cuda", fake, raising=False)
    assert cuda_target.load_cuda_target() is fake and imported == []
    fake.is_available = lambda: True
    assert cuda_target.load_cuda_target() is fake and imported == [cuda_target.REGISTRY]
