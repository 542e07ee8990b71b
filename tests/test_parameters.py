"""Each public parameter's constraint is declared once (nmfsc._parameters) and
every boundary (the functions, the estimator, compare, the command line)
checks it there, with the same words."""

import argparse
import inspect
import subprocess
import sys

import numpy as np
import pytest

from nmfsc import SparseNMF, compare, nmf_sc
from nmfsc._parameters import PARAMETERS, Fraction, Integer, Optional, Real, check, parse
from nmfsc.cli import build_parser
from nmfsc.solvers.coefficients import fit_coefficients
from nmfsc.solvers.framework import LoopSettings

# Parameters of the public functions that are not numbers (or not checked as one).
NOT_NUMBERS = {
    "V",
    "X",
    "W",
    "solver",
    "average_sparseness",
    "mask",
    "init",
    "W_init",
    "H_init",
    "random_state",
    "callback",
    "progress",
    "checkpoint",
    "resume",
    "methods",
    "seeds",
    "image_shape",
    "on_off",
    "parts",
    "name",
    "missing_values",
    "sparse_zeros",
}


@pytest.mark.parametrize(
    ("constraint", "good", "bad_type", "bad_value", "message"),
    [
        (Integer(1), (1, 1), 2.5, 0, "must be >= 1, got 0"),
        (Integer(0), (0, 0), "3", -1, "must be >= 0, got -1"),
        (Real(), (0, 0.0), "x", np.nan, "must be finite and >= 0, got nan"),
        (Real(positive=True), (2, 2.0), None, 0.0, "must be finite and > 0, got 0.0"),
        (Fraction(), (1, 1.0), True, 1.5, r"must lie in \[0, 1\], got 1.5"),
        (Fraction(open=True), (0.5, 0.5), "0.1", 1.0, "must lie strictly between 0 and 1"),
    ],
)
def test_a_constraint_converts_what_it_takes_and_names_what_it_refuses(
    constraint, good, bad_type, bad_value, message
):
    value, converted = good
    assert constraint.check(value, "p") == converted
    assert type(constraint.check(value, "p")) is type(converted)
    with pytest.raises(TypeError, match=f"^p must be .*, got {bad_type!r}$"):
        constraint.check(bad_type, "p")
    with pytest.raises(ValueError, match=f"^p {message}"):
        constraint.check(bad_value, "p")
    assert Optional(constraint).check(None, "p") is None


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("n_components", "3", 3),
        ("sparseness_w", "0.75", 0.75),
        ("holdout", "0.1", 0.1),
        ("tol", "0", 0.0),
        ("max_time", "1e3", 1000.0),
    ],
)
def test_parse_reads_what_check_takes(name, text, value):
    assert parse(name, text) == value == check(name, value)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("n_components", "0"),
        ("n_components", "2.5"),
        ("sparseness_w", "1.5"),
        ("sparseness_w", "nan"),
        ("holdout", "0"),
        ("tol", "-1"),
        ("tol", "inf"),
        ("max_time", "0"),
    ],
)
def test_parse_refuses_in_one_line(name, text):
    with pytest.raises(ValueError, match=f"^must be .*, got {text!r}$"):
        parse(name, text)


def _numeric_parameters(function):
    return [
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind is not parameter.VAR_KEYWORD and name not in NOT_NUMBERS
    ]


@pytest.mark.parametrize(
    "function", [nmf_sc, compare, fit_coefficients, SparseNMF], ids=lambda f: f.__name__
)
def test_every_numeric_parameter_of_the_public_api_is_declared(function):
    missing = [name for name in _numeric_parameters(function) if name not in PARAMETERS]
    assert missing == []


def test_every_loop_setting_that_is_a_number_is_declared():
    numbers = [name for name in LoopSettings.names() if name not in NOT_NUMBERS]
    assert numbers and [name for name in numbers if name not in PARAMETERS] == []


def test_every_numeric_option_of_the_command_line_reads_a_declaration():
    """An option whose value is a number is typed by its parameter's declaration."""
    typed = []
    for command in ("fit", "compare"):
        subparsers = next(
            a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
        )
        for action in subparsers.choices[command]._actions:
            if action.type is not None and not isinstance(action.type, type):
                typed.append(action.type.__name__)
    assert typed and all(name in PARAMETERS for name in typed), typed


V = np.abs(np.random.default_rng(0).standard_normal((12, 15)))


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: nmf_sc(V, 2, sparseness_w=1.5), "sparseness_w"),
        (lambda: compare(V, 2, sparseness_w=1.5, methods=["nmf_sc"]), "sparseness_w"),
        (lambda: SparseNMF(2, sparseness_components=1.5).fit(V), "sparseness_components"),
        (lambda: fit_coefficients(V, np.ones((12, 2)), sparseness_h=1.5), "sparseness_h"),
    ],
)
def test_every_boundary_refuses_a_sparseness_with_the_same_words(call, name):
    with pytest.raises(ValueError, match=rf"^{name} must lie in \[0, 1\], got 1.5$"):
        call()


def test_the_command_line_refuses_with_the_declarations_words(tmp_path):
    data = tmp_path / "v.csv"
    np.savetxt(data, V, delimiter=",")
    out = subprocess.run(
        [sys.executable, "-m", "nmfsc", "fit", str(data), "-k", "2", "--sparseness-w", "1.5"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "--sparseness-w: must be a number in [0, 1], got '1.5'" in out.stderr
