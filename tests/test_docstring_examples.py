"""The Examples sections of the public docstrings run, and print what they show.

Every function and class that the API reference lists (the autosummary lists of
``docs/api/index.rst``) has an Examples section with at least one doctest
(``>>>``); they run here with NumPy's print options of the docs. The examples
that read the paper's data sets need the real data: they are skipped with a
reason when it is absent (failed under ``CI=true``), like the other real-data
tests.
"""

import doctest
import importlib
import inspect
import re
import warnings

import numpy as np
import pytest
from api_reference import api_reference_entries

# Examples that read the paper's data sets (download_all: offline once they are there).
REAL_DATA = {
    "load_cbcl",
    "load_orl",
    "load_natural",
    "cbcl_images",
    "orl_images",
    "natural_images",
    "download_all",
}


def _public_objects():
    """``(dotted name, object)`` of every function and class in the API reference's
    autosummary lists (not its data entries, such as ``SOLVERS``)."""
    for module, name in api_reference_entries():
        obj = getattr(importlib.import_module(module), name)
        if callable(obj):  # functions and classes
            yield f"{module}.{name}", obj


PUBLIC = list(_public_objects())


def _doctests():
    finder = doctest.DocTestFinder(recurse=True, exclude_empty=True)
    seen = set()
    for full_name, obj in PUBLIC:
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        for test in finder.find(obj, full_name, globs={"np": np}):
            if test.examples:
                short = full_name.rpartition(".")[2]
                marks = [pytest.mark.realdata] if short in REAL_DATA else []
                yield pytest.param(test, id=test.name, marks=marks)


DOCTESTS = list(_doctests())


def _examples_section(obj):
    """The text of the numpydoc Examples section of ``obj``'s docstring ("" if none)."""
    doc = inspect.getdoc(obj) or ""
    match = re.search(r"^Examples\n-+\n(.*?)(?=^\S.*\n-+\n|\Z)", doc, flags=re.M | re.S)
    return match.group(1) if match else ""


def test_every_public_function_and_class_has_examples():
    assert len(PUBLIC) > 50, "docs/api/index.rst: no autosummary entries found"
    collected = {param.values[0].name for param in DOCTESTS}
    runs = {id(obj) for name, obj in PUBLIC if name in collected}  # a name listed twice runs once
    missing = [
        name
        for name, obj in PUBLIC
        if not re.search(r"^\s*>>>", _examples_section(obj), flags=re.M) or id(obj) not in runs
    ]
    assert missing == [], f"no Examples section with a '>>>' line: {missing}"


@pytest.mark.parametrize("test", DOCTESTS)
def test_docstring_example(test):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with np.printoptions(precision=8, legacy="1.25"), warnings.catch_warnings():
        warnings.simplefilter("error")
        runner.run(test, out=lambda text: None)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, _report(test)


def _report(test):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    lines = []
    with np.printoptions(precision=8, legacy="1.25"):
        runner.run(test, out=lines.append)
    return "".join(lines)
