"""The ``nmfsc`` command line: compare NMF methods on your data, or fit nmf_sc.

Usage::

    nmfsc compare DATA [--n-components K] [--sparseness-w S] [--sparseness-h S]
                       [--methods M ...] [--seeds N ...] [--max-iter N] [--tol T]
                       [--image-shape H W] [--samples-as-rows] [--out DIR]
    nmfsc fit DATA --n-components K [--sparseness-w S] [--sparseness-h S] [--average-sparseness]
                   [--solver {hoyer,accelerated}] ... --out FILE.npz
    nmfsc --version

(also ``python -m nmfsc``). DATA is a ``.npy``, ``.npz``, ``.csv``, ``.tsv`` or
``.mtx`` file or a folder of images, read by :func:`nmfsc.readers.read_matrix`.
Results go to stdout and the output files, messages and progress bars to
stderr. Exit status: 0 on success, 2 for bad input or usage (one line on
stderr; ``--debug`` shows the traceback instead), 1 when the results cannot be
written, 130 when interrupted. The subcommands run in :mod:`nmfsc._commands`.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import shutil
import signal
import sys
import textwrap
import threading
import warnings
from pathlib import Path

from nmfsc import _commands
from nmfsc._commands import CommandError, version
from nmfsc._parameters import parse
from nmfsc.readers import FORMATS, IMAGE_SUFFIXES, DataFileError
from nmfsc.solvers.registry import variants

__all__ = ["build_parser", "main", "version"]

PROG = "nmfsc"

FORMATS_HELP = (
    f"DATA is a {', '.join(FORMATS)} file or a folder of images "
    f"({', '.join(IMAGE_SUFFIXES)}); it holds one sample per column (features x samples, "
    "as in Hoyer 2004) unless --samples-as-rows is given."
)

COMPARE_EXAMPLE = """\
examples:
  nmfsc compare faces/ --n-components 25 --sparseness-w 0.75
  nmfsc compare counts.csv --samples-as-rows --n-components 5 --sparseness-h 0.6 \\
      --methods nmf_sc nmf_euclidean --seeds 0 1 --max-iter 500 --out results/counts
  nmfsc compare ratings.csv --missing-values nan --holdout 0.1 --sparseness-w 0.5
"""

FIT_EXAMPLE = """\
example:
  nmfsc fit faces/ --n-components 25 --sparseness-w 0.75 --out faces-fit.npz

then, in Python:
  z = np.load("faces-fit.npz")          # no pickles: allow_pickle=False works
  W, H = z["W"], z["H"]                 # V ~ W @ H, V features x samples
  record = json.loads(str(z["record"]))  # n_iter, stop_reason, params, ...
"""


def main(argv=None):
    """Run the ``nmfsc`` command line.

    Parameters
    ----------
    argv : list of str or None
        The arguments after the program name (``sys.argv[1:]`` when None).

    Returns
    -------
    status : int
        0 on success; 2 for a usage error or bad input (one line on stderr, or
        the traceback with ``--debug``); 1 when the results cannot be written;
        130 when interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # --help, --version, or argparse's usage error (2)
        return 0 if done.code is None else done.code
    prog = f"{PROG} {args.command}"
    with warnings.catch_warnings(), _terminate_as_interrupt() as terminated:
        warnings.simplefilter("default")
        warnings.showwarning = _warning_printer(prog)
        try:
            status = args.run(args)
            sys.stdout.flush()  # a closed pipe fails here, inside the handler below
            return status
        except (DataFileError, CommandError) as error:
            if args.debug:
                raise
            _error(prog, error)
            status = getattr(error, "status", 2)
            return TERMINATED if status == 130 and terminated else status
        except KeyboardInterrupt:
            if args.debug:
                raise
            _error(prog, "terminated" if terminated else "interrupted")
            return TERMINATED if terminated else 130
        except MemoryError as error:
            if args.debug:
                raise
            own = "--sparse-zeros" in str(error)  # nmfsc's own, with what to do
            _error(
                prog,
                str(error) if own else "out of memory; use fewer components or a smaller data set",
            )
            return 1
        except BrokenPipeError:
            # The reader went away (``| head``): stop quietly, with stdout on devnull
            # so that the interpreter's last flush cannot fail.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1


#: The exit status after SIGTERM (128 + 15, as a shell reports a process it ended).
TERMINATED = 143


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM (``kill``) raises KeyboardInterrupt, as Ctrl-C does, so that a
    killed command stops the same way: the solver saves its checkpoint, every
    temporary file is removed, no partial output replaces a finished one.
    Yields a list that is non-empty once SIGTERM arrived (the exit status is
    then 143)."""
    received = []  # the signals that arrived
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def interrupt(signum, frame):
        received.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)


def build_parser():
    """The argument parser of ``nmfsc`` with its ``compare`` and ``fit`` subcommands.

    Returns
    -------
    parser : argparse.ArgumentParser
        Each subcommand sets ``args.run``, the function that runs it.
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Non-negative matrix factorization with sparseness constraints "
        "(Hoyer 2004) on your own data. " + FORMATS_HELP,
        epilog="Run 'nmfsc compare --help' or 'nmfsc fit --help' for the options and an example.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{compare,fit}")
    _add_compare(commands)
    _add_fit(commands)
    return parser


def _add_compare(commands):
    compare = _library_compare()
    parser = commands.add_parser(
        "compare",
        help="run several NMF methods on DATA; print and save the comparison",
        description=_wrap(
            "Run NMF methods (nmf_sc and its baselines) on DATA with several "
            "seeds, print the comparison table and write report.md, report.json, report.csv "
            "and the figures (PNG and PDF) into --out. " + FORMATS_HELP
        ),
        epilog=COMPARE_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_data_options(parser)
    parser.add_argument(
        "--n-components",
        "-k",
        type=_option("n_components"),
        metavar="K",
        help=f"number of components (default: {_commands.DEFAULT_COMPONENTS}, "
        "or min(N, T) if that is smaller)",
    )
    _add_sparseness(parser, "none; nmf_sc needs at least one of the two")
    parser.add_argument(
        "--methods",
        nargs="+",
        metavar="METHOD",
        help="methods to run, by name, separated by spaces or commas (default: all that "
        "can run here; "
        f"known: {', '.join(_commands.known_methods()) or 'see nmfsc.comparison.METHODS'})",
    )
    parser.add_argument(
        "--seeds",
        nargs="+",
        type=_option("seed"),
        metavar="SEED",
        help=f"random starts, one run per seed (default: {_default(compare, 'seeds')})",
    )
    _add_stopping(parser, compare)
    parser.add_argument(
        "--holdout",
        type=_option("holdout"),
        metavar="F",
        help="hide a fraction F of the observed entries (the same for every method, drawn "
        "with --holdout-seed), fit every method to the rest and report its error on them: "
        "nmf_sc, nmf_sc_accelerated and nmf_euclidean fit the rest only, the other methods "
        "the data with the hidden entries filled by their row's mean; the report ranks "
        "them against predicting zero and predicting each row's mean (default: none)",
    )
    parser.add_argument(
        "--sparse-zeros",
        choices=("observed", "missing"),
        help="with --holdout or --missing-values on a sparse .mtx or .npz file: 'observed' "
        "(its zeros are data, as in counts or TF-IDF: they are hidden and fitted like any "
        "entry) or 'missing' (only the stored entries are observed, as in ratings); either "
        "way the matrix stays sparse (default: "
        f"{_default(compare, 'sparse_zeros')})",
    )
    parser.add_argument(
        "--holdout-seed",
        type=_option("holdout_seed"),
        metavar="SEED",
        help=f"seed of the hidden entries' draw (default: {_default(compare, 'holdout_seed')})",
    )
    _add_missing_values(
        parser,
        "the masked methods (nmf_sc, nmf_sc_accelerated, nmf_euclidean) fit the observed "
        "entries only, the others the data with missing entries filled by their row's mean",
    )
    parser.add_argument(
        "--image-shape",
        nargs=2,
        type=_option("image_shape"),
        metavar=("H", "W"),
        help="height and width of an image sample, to draw the basis vectors as images "
        "(default: the images' size for an image folder, else none)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="folder for the reports and figures, outside an image folder DATA "
        "(default: ./nmfsc-compare/<data name>/)",
    )
    _add_flags(parser)
    parser.set_defaults(run=_commands.run_compare)


def _add_fit(commands):
    from nmfsc import nmf_sc

    parser = commands.add_parser(
        "fit",
        help="fit nmf_sc to DATA and save W, H and the run's record in an .npz file",
        description=_wrap(
            "Fit nmf_sc (Hoyer 2004) to DATA and save W, H, the objective "
            "history, times, per-component sparseness and a JSON record of the run (n_iter, "
            "stop_reason, converged, relative_error, stationarity, params, data, nmfsc "
            "version) in an .npz file that np.load reads without pickles. " + FORMATS_HELP
        ),
        epilog=FIT_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_data_options(parser)
    parser.add_argument(
        "--n-components",
        "-k",
        type=_option("n_components"),
        required=True,
        metavar="K",
        help="number of components (columns of W, rows of H)",
    )
    _add_sparseness(parser, "unconstrained")
    parser.add_argument(
        "--solver",
        choices=variants(nmf_sc),
        default=inspect.signature(nmf_sc).parameters["solver"].default,
        help="the algorithm: hoyer, the paper's (the figures', and the library's default), "
        "or accelerated, the same problem from the same start by block coordinate descent, "
        "sooner to the same objective (benchmarks/README.md); use accelerated when hoyer "
        "warns that it left samples with all-zero coefficients "
        f"(default: {_default(nmf_sc, 'solver')})",
    )
    parser.add_argument(
        "--seed",
        type=_option("seed"),
        default=0,
        help="seed of the random start (default: 0)",
    )
    parser.add_argument(
        "--device",
        choices=("cpu", "gpu"),
        default="cpu",
        help="where to run: cpu, or gpu (CuPy, pip install 'nmfsc[gpu]'; either solver; "
        "V copied to the GPU once, W and H back at the end) (default: cpu)",
    )
    parser.add_argument(
        "--average-sparseness",
        action="store_true",
        help="hold --sparseness-w (--sparseness-h) on average over W's columns (H's rows), "
        "each free to differ, as Ohib, Gillis et al. (2022) do: one shared threshold "
        "(not with --missing-values or --device gpu)",
    )
    _add_stopping(parser, nmf_sc)
    parser.add_argument(
        "--stationarity-tol",
        type=_option("stationarity_tol"),
        metavar="S",
        help="converged only where the fit is stationary to S (its projected gradient "
        "relative to the gradient's terms, 0 at a stationary point; checked every 10 "
        "iterations), not where it merely slows down; the run goes on until then or "
        "--max-iter (default: none, the rate rule of --tol)",
    )
    _add_missing_values(parser, "the fit uses the observed entries only (nmf_sc's mask)")
    parser.add_argument(
        "--explore",
        type=_option("max_time"),
        metavar="SECONDS",
        help="spend SECONDS looking for a lower local minimum (explore_nmf_sc: the "
        "accelerated solver, then restarts from perturbed copies of the best fit so far, "
        "the lowest kept; --tol and --stationarity-tol stop each run; not with --solver, "
        "--max-iter, --max-time, --device gpu, --missing-values or --average-sparseness); "
        "Ctrl-C writes the best fit so far",
    )
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="FILE.npz",
        help="the .npz file to write (replaced atomically if it exists; not the data file)",
    )
    _add_flags(parser)
    parser.set_defaults(run=_commands.run_fit)


def _add_data_options(parser):
    parser.add_argument("data", type=Path, metavar="DATA", help="the data file or image folder")
    parser.add_argument("--key", help="the array to read from an .npz archive that holds several")
    parser.add_argument(
        "--samples-as-rows",
        action="store_true",
        help="DATA holds one sample per row (scikit-learn's orientation): use its transpose",
    )


def _add_missing_values(parser, use):
    """``--missing-values``; ``use``: what the command does with the missing entries."""
    parser.add_argument(
        "--missing-values",
        choices=["nan"],
        help=f"nan: NaN entries and empty CSV cells are missing; {use} (default: none, a NaN "
        "is an error)",
    )


def _add_sparseness(parser, default):
    for factor, what in (("w", "every column of W"), ("h", "every row of H")):
        parser.add_argument(
            f"--sparseness-{factor}",
            type=_option(f"sparseness_{factor}"),
            metavar="S",
            help=f"target sparseness in [0, 1] of {what} for nmf_sc (default: {default})",
        )


def _add_stopping(parser, solver):
    parser.add_argument(
        "--max-iter",
        type=_option("max_iter"),
        metavar="N",
        help=f"iteration limit of each run (default: {_default(solver, 'max_iter')})",
    )
    parser.add_argument(
        "--tol",
        type=_option("tol"),
        metavar="T",
        help="stop when the objective's relative decrease over 10 iterations is below T "
        f"(default: {_default(solver, 'tol')})",
    )
    parser.add_argument(
        "--max-time",
        type=_option("max_time"),
        metavar="SECONDS",
        help=f"time limit of each run (default: {_default(solver, 'max_time')})",
    )


def _add_flags(parser):
    parser.add_argument(
        "--no-progress", action="store_true", help="do not show progress bars on stderr"
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error instead of one line"
    )


def _library_compare():
    """``nmfsc.compare`` when this nmfsc has it, else None (its help shows no defaults)."""
    import nmfsc

    return getattr(nmfsc, "compare", None)


def _default(function, name):
    """The default of ``function``'s parameter ``name``, as help text shows it."""
    parameter = None if function is None else inspect.signature(function).parameters.get(name)
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return "the library's"
    value = parameter.default
    if value is None:
        return "none"
    if isinstance(value, tuple | list):
        return " ".join(str(v) for v in value)
    return str(value)


def _option(name):
    """The argparse ``type`` of an option that sets the public parameter
    ``name``: its text read and checked against the parameter's one
    declaration (:data:`nmfsc._parameters.PARAMETERS`)."""

    def read(text):
        try:
            return parse(name, text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    read.__name__ = name
    return read


def _wrap(text):
    """Wrap a description to the width argparse uses (its epilog stays as written)."""
    width = min(shutil.get_terminal_size().columns, 100) - 2
    return textwrap.fill(text, width=max(width, 40))


def _error(prog, message):
    text = " ".join(str(message).split())
    print(f"{prog}: error: {text}", file=sys.stderr)


def _warning_printer(prog):
    """A ``warnings.showwarning`` that prints one line: ``nmfsc fit: warning: ...``."""

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        print(f"{prog}: {category.__name__}: {text}", file=sys.stderr)

    return show
