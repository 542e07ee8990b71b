"""The Examples sections of the public docstrings run, and print what they show.

Every public name of ``nmfsc``, ``nmfsc.datasets``, ``nmfsc.plotting`` and
``nmfsc.scores`` is searched for doctests (``>>>``), which run here with NumPy's
print options of the docs. The examples of the paper's data-set loaders need the
real data: they are skipped with a reason when it is absent (failed under
``CI=true``), like the other real-data tests.
"""

import doctest
import importlib
import warnings

import numpy as np
import pytest

MODULES = ("nmfsc", "nmfsc.datasets", "nmfsc.plotting", "nmfsc.scores")
# Loaders whose examples read the paper's data sets.
REAL_DATA = {"load_cbcl", "load_orl", "load_natural", "cbcl_images", "orl_images", "natural_images"}


def _doctests():
    finder = doctest.DocTestFinder(recurse=True, exclude_empty=True)
    seen = set()
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (callable(obj) or isinstance(obj, type)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            for test in finder.find(obj, f"{module_name}.{name}", globs={"np": np}):
                if test.examples:
                    marks = [pytest.mark.realdata] if name in REAL_DATA else []
                    yield pytest.param(test, id=test.name, marks=marks)


DOCTESTS = list(_doctests())


def test_the_reference_has_examples():
    names = {param.values[0].name for param in DOCTESTS}
    required = (
        "nmfsc.project_batch",
        "nmfsc.l1_for_sparseness",
        "nmfsc.compare",
        "nmfsc.nmf_sc",
        "nmfsc.nmf_euclidean",
        "nmfsc.nmf_divergence",
        "nmfsc.local_nmf",
        "nmfsc.sparse_nmf",
        "nmfsc.datasets.bars",
        "nmfsc.datasets.swimmer",
        *(f"nmfsc.datasets.{name}" for name in sorted(REAL_DATA)),
    )
    missing = [name for name in required if name not in names]
    assert missing == [], f"no Examples section: {missing}"


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
