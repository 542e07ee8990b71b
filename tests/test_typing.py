"""The public API's type annotations: the TypedDict of the loop keywords agrees
with LoopSettings, every public function of ``nmfsc`` is annotated, and mypy
uses the annotations to catch a misspelt or mistyped loop keyword."""

import inspect
import textwrap

import pytest

import nmfsc
from nmfsc.solvers._settings import LoopOptions, LoopSettings


def test_loop_options_keys_are_the_loop_settings():
    """``**loop: Unpack[LoopOptions]`` types the keywords LoopSettings defines:
    the same names, in the same order, so that the two cannot drift apart."""
    assert tuple(LoopOptions.__annotations__) == LoopSettings.names()
    assert LoopOptions.__required_keys__ == frozenset()  # every keyword is optional


def _own_parameters(func):
    """The parameter names of ``func``'s own ``def`` (not the ``__signature__``
    that takes_loop_settings gives the solvers), with ``*args`` / ``**kw``."""
    code = func.__code__
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return code.co_varnames[:count]


PUBLIC_FUNCTIONS = [name for name in nmfsc.__all__ if inspect.isfunction(getattr(nmfsc, name))]
PUBLIC_METHODS = [
    (cls, name)
    for cls in (nmfsc.SparseNMF, nmfsc.Comparison)
    for name, member in vars(cls).items()
    if inspect.isfunction(member) and not name.startswith("_")
]


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_public_functions_are_annotated(name):
    func = getattr(nmfsc, name)
    annotations = func.__annotations__
    missing = [p for p in _own_parameters(func) if p not in annotations]
    assert not missing, f"nmfsc.{name}: parameters without annotation: {missing}"
    assert "return" in annotations, f"nmfsc.{name} has no return annotation"


@pytest.mark.parametrize("cls, name", PUBLIC_METHODS, ids=lambda x: getattr(x, "__name__", x))
def test_public_methods_are_annotated(cls, name):
    func = inspect.unwrap(getattr(cls, name))  # scikit-learn wraps transform for set_output
    missing = [p for p in _own_parameters(func)[1:] if p not in func.__annotations__]
    assert not missing, f"{cls.__name__}.{name}: parameters without annotation: {missing}"
    assert "return" in func.__annotations__, f"{cls.__name__}.{name}: no return annotation"


@pytest.mark.slow
def test_mypy_checks_the_loop_keywords(tmp_path):
    """A misspelt loop keyword and a wrong type are mypy errors; a good call is not."""
    api = pytest.importorskip("mypy.api")
    snippet = tmp_path / "user.py"
    snippet.write_text(
        textwrap.dedent(
            """
            import numpy as np
            import nmfsc

            V = np.ones((4, 5))
            good = nmfsc.nmf_sc(V, 2, sparseness_w=0.5, max_iter=10, tol=1e-3)
            reveal_type(good)
            nmfsc.nmf_sc(V, 2, max_iters=10)
            nmfsc.nmf_euclidean(V, 2, max_iter="10")
            s = nmfsc.sparseness(np.ones(4))
            reveal_type(s)
            """
        )
    )
    out, err, status = api.run(
        [str(snippet), "--cache-dir", str(tmp_path / "cache"), "--no-error-summary"]
    )
    lines = out.splitlines()
    assert status == 1, out + err
    assert any('Revealed type is "nmfsc.solvers._result.NMFResult"' in x for x in lines), out
    assert any(":11:" in x and 'Revealed type is "' in x and 'float"' in x for x in lines), out
    assert any(":8:" in x and '"max_iters"' in x for x in lines), out
    assert any(":9:" in x and "max_iter" in x and "str" in x for x in lines), out
    errors = [x for x in lines if ": error:" in x]
    assert len(errors) == 2, out
