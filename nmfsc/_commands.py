"""What ``nmfsc compare`` and ``nmfsc fit`` do once their arguments are parsed.

``compare`` is a thin layer over :func:`nmfsc.compare`: read the data, call it,
print the table, save the reports. ``fit`` runs :func:`nmfsc.nmf_sc` and saves
an ``.npz`` file. Both turn the library's one-line ``ValueError`` and
``TypeError`` about the input into a :class:`CommandError` (exit status 2).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import stat
import sys
import tempfile
import time
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from nmfsc._array_api import to_host
from nmfsc.atomic import SET_JOURNAL, SetJournalError, atomic_writer, check_set, replaced_set
from nmfsc.backends import backend_named
from nmfsc.observed import Observed
from nmfsc.readers import check_n_components, describe_available, memory_limit, read_matrix

__all__ = [
    "CommandError",
    "DEFAULT_COMPONENTS",
    "check_compare_out",
    "COMPARE_FILES",
    "check_factor_memory",
    "check_not_input",
    "check_writable",
    "fit_record",
    "known_methods",
    "run_compare",
    "run_fit",
    "save_compare",
    "save_fit",
    "version",
]

#: ``nmfsc compare``'s number of components when ``--n-components`` is not given
#: (fewer when the data has fewer features or samples).
DEFAULT_COMPONENTS = 10

#: The ``format`` entry of the record in an ``nmfsc fit`` file.
FIT_FORMAT = "nmfsc-fit-1"


class CommandError(Exception):
    """A one-line error of a subcommand; ``status`` is its exit status.

    Parameters
    ----------
    message : str
        What went wrong, on one line.
    status : int, default 2
        2 for bad input or usage, 1 for a failure that is not the input's fault.
    """

    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


def version():
    """The installed nmfsc's version, or ``nmfsc.__version__`` when not installed.

    Returns
    -------
    version : str
    """
    try:
        return metadata.version("nmfsc")
    except metadata.PackageNotFoundError:
        from nmfsc import __version__

        return __version__


def known_methods():
    """The method names ``nmfsc compare`` knows (``nmfsc.comparison.METHODS``).

    Returns
    -------
    methods : tuple of str
        Empty when this nmfsc has no :mod:`nmfsc.comparison`.
    """
    try:
        from nmfsc.comparison import METHODS
    except ImportError:
        return ()
    return tuple(METHODS)


def run_compare(args):
    """``nmfsc compare``: compare methods on DATA; print the table, save the reports.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments (see :func:`nmfsc.cli.build_parser`).

    Returns
    -------
    status : int
        0.
    """
    import nmfsc

    if not hasattr(nmfsc, "compare"):
        raise CommandError("this nmfsc has no nmfsc.compare; update nmfsc", status=1)
    methods = _methods(args.methods)
    if args.out is not None:
        check_not_input(args.out, args.data, folder=True)
    missing = np.nan if args.missing_values == "nan" else None
    V, image_shape, name = read_matrix(
        args.data, key=args.key, samples_as_rows=args.samples_as_rows, missing_values=missing
    )
    K = args.n_components or min(DEFAULT_COMPONENTS, *V.shape)
    check_n_components(V, K, source=args.data)
    check_factor_memory(V, K, source=args.data)
    check_holdout_memory(V, args.holdout, args.sparse_zeros, source=args.data)
    options = {
        "methods": methods,
        "sparseness_w": args.sparseness_w,
        "sparseness_h": args.sparseness_h,
        "seeds": None if args.seeds is None else tuple(args.seeds),
        "max_iter": args.max_iter,
        "tol": args.tol,
        "max_time": args.max_time,
        "image_shape": tuple(args.image_shape) if args.image_shape else image_shape,
        "holdout": args.holdout,
        "holdout_seed": args.holdout_seed,
        "missing_values": missing,
        "sparse_zeros": args.sparse_zeros,
    }
    options = {key: value for key, value in options.items() if value is not None}
    out = args.out if args.out is not None else Path("nmfsc-compare") / _folder_name(name)
    if args.out is None:  # the default: known once the data is read
        check_not_input(out, args.data, folder=True, label=f"the default --out {out}")
    check_writable(out, folder=True)
    check_compare_out(out)
    try:
        comparison = nmfsc.compare(V, K, progress=not args.no_progress, name=name, **options)
    except (ValueError, TypeError, ImportError) as error:  # ImportError: scikit-learn missing
        raise CommandError(f"{args.data}: {error}") from error
    print(comparison.to_markdown())
    paths = _write(lambda: save_compare(comparison, out), out)
    files = "1 file" if len(paths) == 1 else f"{len(paths)} files"
    default = " (the default; choose with --n-components)" if args.n_components is None else ""
    _say(
        f"{args.data} ({V.shape[0]} x {V.shape[1]}, features x samples), {K} components"
        f"{default}: wrote {files} to {out}"
    )
    failed = [row for row in comparison.rows if row["stop_reason"] == "failed"]
    if failed:
        _say(
            f"{len(failed)} of {len(comparison.rows)} runs failed "
            f"({', '.join(dict.fromkeys(row['method'] for row in failed))}); the report "
            'says why ("Failed runs")'
        )
    return 0


#: Bytes a held-out comparison of a sparse V whose zeros are observed holds
#: at its peak per hidden entry: the draw, the hidden entries' pattern and
#: values, the filled V that the methods without a mask fit, and their
#: temporaries. 67-104 were measured on a 5000 x 3000 count matrix hiding
#: 5 % and 20 % of its entries, one method at a time.
HIDDEN_ENTRY_BYTES = 110


def check_holdout_memory(V, holdout, sparse_zeros, *, source):
    """Refuse, before any fitting, a held-out comparison of a sparse V whose
    zeros are observed that would not fit in memory: its hidden entries are
    drawn from all N x T entries, so it holds about
    :data:`HIDDEN_ENTRY_BYTES` per hidden entry (never a dense copy of V).

    Raises
    ------
    CommandError
        One line, status 2: the entries hidden, the size needed, what is
        available, and what to do.
    """
    if holdout is None or not sp.issparse(V) or sparse_zeros == "missing":
        return
    N, T = V.shape
    hidden = holdout * N * T
    need = HIDDEN_ENTRY_BYTES * (hidden + V.nnz)
    available, limit = memory_limit()
    if available is not None and need > available:
        raise CommandError(
            f"{source}: --holdout {holdout} hides about {hidden:,.0f} of the {N} x {T} "
            f"entries of this sparse matrix (its zeros are observed), about "
            f"{need / 2**30:.3g} GiB in all, but {describe_available(available, limit)}; "
            "hide a smaller fraction, or use --sparse-zeros missing if its unstored entries "
            "are truly unknown (ratings)"
        )


def check_compare_out(out):
    """Make ``out`` ready for :func:`save_compare` before any fitting
    (:func:`nmfsc.atomic.check_set`): a replacement of its reports that a
    killed run left cut short is completed, a damaged journal refused.

    Parameters
    ----------
    out : pathlib.Path
        The folder of ``nmfsc compare --out``.

    Raises
    ------
    CommandError
        ``<out>/.nmfsc-set.swap.json is damaged (...)`` with what to do, status
        2; ``cannot write ...``, status 1, when completing the replacement fails.
    """

    def check():
        try:
            check_set(out)
        except SetJournalError as error:
            if error.journal.name != SET_JOURNAL:  # not a journal: the message says it all
                raise CommandError(
                    str(error).replace("write to another folder", "choose another --out")
                ) from error
            raise CommandError(
                f"{error.journal} is damaged ({error.reason}), so the reports in {out} may mix "
                f"two runs; delete {error.journal.name} and the reports and figures in {out}, "
                f"or choose another --out"
            ) from error

    _write(check, out)


def save_compare(comparison, out):
    """Write the comparison's reports and figures into ``out`` as one set
    (:func:`nmfsc.atomic.replaced_set`): a full disk or a concurrent run on the
    same folder leaves the old set or a new one, and so does a kill where the
    file system has symbolic links (elsewhere a kill can leave a mix that the
    next write completes).

    Returns
    -------
    paths : list of pathlib.Path
        The files of the new set, in ``out``.

    Raises
    ------
    nmfsc.atomic.SetJournalError
        ``out`` holds a damaged journal; raised before ``comparison`` is saved.
    """
    with replaced_set(out) as staging:
        names = [Path(path).name for path in comparison.save(staging)]
    return [Path(out) / name for name in names]


def run_fit(args):
    """``nmfsc fit``: fit nmf_sc to DATA and save W, H and the record in an .npz file.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments (see :func:`nmfsc.cli.build_parser`).

    Returns
    -------
    status : int
        0.
    """
    from nmfsc import CheckpointMismatchError, ConvergenceWarning, nmf_sc
    from nmfsc.solvers.checkpoint import CheckpointReadError

    out = args.out
    if out.suffix.lower() != ".npz":
        raise CommandError(f"--out must name an .npz file, got {str(out)!r}")
    check_not_input(out, args.data)
    checkpoint = fit_checkpoint(out)
    check_not_input(checkpoint, args.data, label=f"the checkpoint of --out {out}, {checkpoint},")
    check_writable(out)
    _write(lambda: out.parent.mkdir(parents=True, exist_ok=True), out)
    missing = np.nan if args.missing_values == "nan" else None
    V, image_shape, name = read_matrix(
        args.data, key=args.key, samples_as_rows=args.samples_as_rows, missing_values=missing
    )
    check_n_components(V, args.n_components, source=args.data)
    check_factor_memory(V, args.n_components, source=args.data)
    stopping = {
        "max_iter": args.max_iter,
        "tol": args.tol,
        "stationarity_tol": args.stationarity_tol,
        "max_time": args.max_time,
    }
    V, observed = _observed(V, args)
    device = getattr(args, "device", "cpu")
    if getattr(args, "explore", None) is not None:
        result = _explore(args, V, device)
        return _write_fit(args, result, V, observed, image_shape, name, out, checkpoint=None)
    if device == "gpu" and args.average_sparseness:
        raise CommandError(
            "--average-sparseness does not run with --device gpu yet; drop --device gpu"
        )
    data_on_device = V
    if device != "cpu":
        backend = backend_named(device)
        if backend.from_host is None:
            raise CommandError(f"--device {device}: that backend takes no data from the host")
        try:
            data_on_device = backend.from_host(V)
        except (ImportError, RuntimeError) as error:
            raise CommandError(f"--device {device}: {error}") from None
    options = {
        "sparseness_w": args.sparseness_w,
        "sparseness_h": args.sparseness_h,
        "mask": observed,
        "solver": args.solver,
        "average_sparseness": args.average_sparseness,
        "random_state": args.seed,
        "progress": not args.no_progress,
        # saved only when the run stops (Ctrl-C included): the next run resumes it
        "checkpoint": checkpoint,
        "checkpoint_every": 2**62,
        **{key: value for key, value in stopping.items() if value is not None},
    }
    try:
        with warnings.catch_warnings():
            # The library's advice on an interrupt (checkpoint=..., resume=True) is
            # for Python; the command says how to resume it below.
            warnings.filterwarnings(
                "ignore", message=".*interrupted by KeyboardInterrupt", category=ConvergenceWarning
            )
            try:
                result = nmf_sc(data_on_device, args.n_components, resume=True, **options)
            except CheckpointMismatchError:
                _say(f"{checkpoint} holds a run with other options or data: starting afresh")
                result = nmf_sc(data_on_device, args.n_components, resume=False, **options)
    except CheckpointReadError as error:  # its message advises resume=False, for Python
        raise CommandError(
            f"checkpoint {error.path} {error.problem}; delete it (or move it away) and run "
            "the command again to start afresh"
        ) from error
    except (ValueError, TypeError) as error:
        raise CommandError(f"{args.data}: {error}") from error
    except OSError as error:  # the checkpoint could not be saved (a full disk)
        where = error.filename or checkpoint
        raise CommandError(f"cannot write {where}: {error.strerror or error}", status=1) from error
    if device != "cpu":
        result = dataclasses.replace(result, W=to_host(result.W), H=to_host(result.H))
    if result.stop_reason == "interrupted":
        raise CommandError(
            f"interrupted at iteration {result.n_iter}; {out} was not written; "
            f"{checkpoint} keeps the run, and the same command resumes it",
            status=130,
        )
    return _write_fit(args, result, V, observed, image_shape, name, out, checkpoint)


def _explore(args, V, device):
    """``nmfsc fit --explore SECONDS``: :func:`~nmfsc.solvers.explore.explore_nmf_sc`
    on V, after refusing the options it does not take (one line each)."""
    from nmfsc import nmf_sc
    from nmfsc.solvers.explore import explore_nmf_sc
    from nmfsc.solvers.registry import variants

    refused = {
        "--solver": args.solver != variants(nmf_sc)[0],  # other than the default
        "--max-iter": args.max_iter is not None,
        "--max-time": args.max_time is not None,
        "--device gpu": device != "cpu",
        "--missing-values": args.missing_values is not None,
        "--average-sparseness": args.average_sparseness,
    }
    for option, given in refused.items():
        if given:
            raise CommandError(
                f"--explore does not take {option}: it runs the accelerated solver in "
                f"memory on complete data, for its own time budget; drop {option}"
            )
    loop = {"tol": args.tol} if args.tol is not None else {}
    try:
        return explore_nmf_sc(
            V,
            args.n_components,
            sparseness_w=args.sparseness_w,
            sparseness_h=args.sparseness_h,
            max_time=args.explore,
            random_state=args.seed,
            stationarity_tol=args.stationarity_tol,
            progress=not args.no_progress,
            **loop,
        )
    except (ValueError, TypeError) as error:
        raise CommandError(f"{args.data}: {error}") from error


def _write_fit(args, result, V, observed, image_shape, name, out, checkpoint):
    """Write ``out`` (W, H and the record of ``result``) and remove the
    checkpoint; an explored fit stopped by Ctrl-C is written (the best so
    far), then the command exits with 130."""
    data = {
        "path": str(args.data),
        "name": name,
        "key": args.key,
        "samples_as_rows": args.samples_as_rows,
        "shape": list(V.shape),
        "image_shape": None if image_shape is None else list(image_shape),
        "missing_values": args.missing_values,
        "observed_entries": None if observed is None else observed.count(),
    }
    record = fit_record(result, data=data, seed=args.seed, masked=observed is not None)
    _write(lambda: save_fit(out, result, record), out)
    if checkpoint is not None:
        checkpoint.unlink(missing_ok=True)
    print(_fit_summary(result, name))
    _say(f"wrote {out}")
    if result.stop_reason == "interrupted":
        hops = result.params.get("explore", {}).get("hops", 0)
        raise CommandError(
            f"interrupted after {hops} hops; {out} holds the best fit so far", status=130
        )
    return 0


def check_factor_memory(V, n_components, *, source):
    """Refuse, before the run, K components whose W and H cannot fit in memory.

    W (N x K) and H (K x T) in float64, each with its update beside it: a
    lower bound of what any method holds, so that a run that cannot even
    start is one line (status 2) instead of a MemoryError.

    Raises
    ------
    CommandError
        Naming the shape, the memory needed and the memory available
        (:func:`nmfsc.readers.memory_limit`: the process's and its control
        group's limits count, and the message names the one that binds).
    """
    N, T = V.shape
    needed = 2 * (N + T) * n_components * 8
    available, limit = memory_limit()
    if available is not None and needed > available:
        raise CommandError(
            f"{source}: V is {N} x {T}; W and H of {n_components} components need about "
            f"{needed / 2**30:.3g} GiB of memory, and {describe_available(available, limit)}"
        )


def fit_checkpoint(out):
    """The checkpoint of ``nmfsc fit --out out``: ``<out stem>.checkpoint.npz`` beside it.

    Parameters
    ----------
    out : pathlib.Path
        The ``.npz`` file of the fit.

    Returns
    -------
    checkpoint : pathlib.Path
    """
    return out.with_name(f"{out.stem}.checkpoint.npz")


#: The files ``nmfsc compare`` writes into its ``--out`` folder (its reports and
#: figures; the set's own bookkeeping files start with ``.nmfsc-``).
COMPARE_FILES = frozenset(
    {"report.md", "report.json", "report.csv"}
    | {
        f"{figure}.{ext}"
        for figure in ("bases", "error_vs_time", "error_vs_iteration", "sparseness")
        for ext in ("png", "pdf")
    }
)


def check_not_input(out, data, *, folder=False, label=None):
    """Refuse, before the data is read, an output that would write into the data.

    ``out`` must not be the data (the same file by any path: through a
    symbolic link, or a hard link to it) nor lie inside the data's folder (an
    image folder, whose own files or subfolders nmfsc never writes). With
    ``folder=True`` (``nmfsc compare``'s ``--out``, a folder of reports), the
    data may lie in ``out``, but not as a file that compare writes there
    (:data:`COMPARE_FILES`, or a name starting with ``.nmfsc-``). Paths are
    compared after resolving links, and by device and inode where they exist
    (bind mounts and case-insensitive file systems included).

    Parameters
    ----------
    out : pathlib.Path
        The file (``folder=False``) or folder (``folder=True``) to be written.
    data : pathlib.Path
        The data file or image folder to be read. When it does not exist, the
        reader names the problem and nothing is checked here.
    folder : bool, default False
    label : str or None
        How the message names ``out``; default ``"--out <out>"``.

    Raises
    ------
    CommandError
        One line naming both, status 2.
    """
    out, data = Path(out), Path(data)
    label = label or f"--out {out}"
    try:
        data_stat = os.stat(data)
    except OSError:
        return
    data_is_folder = stat.S_ISDIR(data_stat.st_mode)
    kind = "folder" if data_is_folder else "file"
    advice = "nmfsc writes nothing into the data it reads"
    target = _resolved(out)
    for place in (target, *target.parents):
        if place != target and not data_is_folder:
            break  # a file cannot hold out (check_writable says so)
        try:
            same = os.path.samestat(os.stat(place), data_stat)
        except OSError:
            continue
        if same and place == target:
            alias = "" if target == _resolved(data) else " (the same file under another name)"
            raise CommandError(
                f"{label} is the data {kind} {data}{alias}; {advice}: choose another --out"
            )
        if same:
            raise CommandError(
                f"{label} is inside the data folder {data}; {advice}: choose an --out outside it"
            )
    if folder:
        source = _resolved(data)
        name = source.name.lower()
        if name in COMPARE_FILES or name.startswith(".nmfsc-"):
            try:
                holds = os.path.samestat(os.stat(target), os.stat(source.parent))
            except OSError:
                holds = False
            if holds:
                raise CommandError(
                    f"{label} holds the data {kind} {data}, and compare writes its "
                    f"{source.name} there; choose another --out, or move the data"
                )


def _resolved(path):
    """``path`` absolute, with its links resolved as far as it exists."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):  # a loop of links
        return Path(os.path.abspath(path))


def check_writable(out, *, folder=False):
    """Refuse, before any work, an ``--out`` that cannot be written.

    The nearest existing folder on the way to ``out`` must be a writable
    folder (a file in the way, a read-only folder or a missing permission
    fail here, not after the run); where ``out``'s folder exists, a
    temporary file is made and removed in it. A broken symbolic link at
    ``out`` or on the way to it is refused: nmfsc neither writes through it
    nor replaces it.

    Parameters
    ----------
    out : pathlib.Path
        The file (``folder=False``) or folder (``folder=True``) to be written.
    folder : bool, default False

    Raises
    ------
    CommandError
        ``--out <out> ...: <link> is a broken symbolic link (to <target>);
        remove the link or choose another --out``, status 2; ``cannot write
        <out>: <why>``, status 1.
    """
    out = Path(out)
    for place in (out, *out.parents):
        if place.is_symlink() and not place.exists():  # a link to nowhere (or a loop)
            where = "is" if place == out else f"cannot be written: {place} is"
            raise CommandError(
                f"--out {out} {where} a broken symbolic link (to {os.readlink(place)}); "
                "remove the link or choose another --out"
            )
    if not folder and out.is_dir():
        raise CommandError(f"cannot write {out}: it is a folder", status=1)
    if folder and out.exists() and not out.is_dir():
        raise CommandError(f"cannot write {out}: it is a file, not a folder", status=1)
    directory = out if folder else out.parent
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise CommandError(f"cannot write {out}: {existing} is not a folder", status=1)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise CommandError(f"cannot write {out}: {existing} is not writable", status=1)
    if existing == directory:
        try:
            fd, probe = tempfile.mkstemp(dir=directory, prefix=".nmfsc-probe-")
            os.close(fd)
            os.unlink(probe)
        except OSError as error:
            reason = error.strerror or error
            raise CommandError(f"cannot write {out}: {reason}", status=1) from error


def _observed(V, args):
    """V with zeros where missing, and its observed entries
    (:class:`~nmfsc.observed.Observed`; None without --missing-values or when
    nothing is missing)."""
    if args.missing_values is None:
        return V, None
    try:
        return Observed.from_nan(V, str(args.data))
    except (TypeError, ValueError) as error:
        raise CommandError(str(error)) from error


def fit_record(result, *, data, seed, masked=False):
    """The JSON-ready record of an nmf_sc run, as ``nmfsc fit`` stores it.

    Parameters
    ----------
    result : NMFResult
        The run.
    data : dict
        What was factorized (path, name, key, orientation, shape, image
        shape, missing values and the count of observed entries).
    seed : int
        The seed of the random start.
    masked : bool
        Whether the run fitted the observed entries only (missing values):
        its objective and relative error are then over those entries, and
        ``objective_definition`` says so.

    Returns
    -------
    record : dict
        Plain JSON types only; NaN and infinities become None. Besides the
        run's settings and stop: ``objective`` (the final value) with its
        ``objective_units`` and ``objective_definition``, ``dead_samples``
        and ``unused_components`` (:class:`nmfsc.DegenerateFitWarning`) and
        the ``dtype`` of the saved W and H.
    """
    record = {
        "format": FIT_FORMAT,
        "nmfsc_version": version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "solver": result.solver,
        "params": {**result.params, "random_state": seed},
        "data": data,
        "n_iter": result.n_iter,
        "stop_reason": result.stop_reason,
        "converged": result.converged,
        "relative_error": result.relative_error,
        "stationarity": result.stationarity,
        "objective": result.objective[-1],
        "objective_units": result.objective_units,
        "objective_definition": _OBJECTIVE_DEFINITION[result.objective_units]
        + (_OBSERVED_ONLY if masked else ""),
        "time_s": result.times[-1],
        "sparseness_W_mean": _nanmean(result.sparseness_W),
        "sparseness_H_mean": _nanmean(result.sparseness_H),
        "scale": result.scale,
        "step_sizes": None if result.step_sizes is None else list(result.step_sizes),
        "dead_samples": result.dead_samples,
        "unused_components": result.unused_components,
        "dtype": str(result.W.dtype),
    }
    return _plain(record)


#: The end of ``objective_definition`` for a fit of the observed entries only.
_OBSERVED_ONLY = "; over the observed entries only (missing values: the relative error too)"
#: What the record's ``objective`` is, by its ``objective_units``.
_OBJECTIVE_DEFINITION = {
    "V": "1/2 ||V - W H||_F^2, in the units of V squared",
    "V / scale": "1/2 ||V / scale - W H / scale||_F^2 (scale = max(V)): V's own would "
    "overflow or underflow float64",
}


def save_fit(path, result, record):
    """Write W, H, the histories, the sparseness and the record into ``path`` atomically.

    Parameters
    ----------
    path : pathlib.Path
        The ``.npz`` file; its folder is created if needed.
    result : NMFResult
        The run.
    record : dict
        From :func:`fit_record`, stored as a JSON string (a 0-d str array), so
        that ``np.load(path, allow_pickle=False)`` reads the whole file.

    Returns
    -------
    paths : list of pathlib.Path
        ``[path]``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {
        "W": result.W,
        "H": result.H,
        "objective": result.objective,
        "times": result.times,
        "sparseness_W": result.sparseness_W,
        "sparseness_H": result.sparseness_H,
        "record": np.array(json.dumps(record, allow_nan=False)),
    }
    with atomic_writer(path) as handle:
        np.savez_compressed(handle, **arrays)
    return [path]


def _methods(given):
    """``--methods`` as a tuple of known names (None when not given)."""
    if given is None:
        return None
    names = tuple(name for item in given for name in item.split(",") if name)
    if not names:
        raise CommandError("--methods names no method")
    known = known_methods()
    for name in names:
        if known and name not in known:
            raise CommandError(f"unknown method {name!r}; known methods: {', '.join(known)}")
    return names


def _write(save, out):
    """Run ``save()``; a failure to write is a one-line error with status 1."""
    try:
        return save()
    except OSError as error:
        reason = error.strerror or str(error)
        where = error.filename or out
        raise CommandError(f"cannot write {where}: {reason}", status=1) from error


def _fit_summary(result, name):
    N, M = result.W.shape
    sparseness = (
        f"sparseness W {_nanmean(result.sparseness_W):.3f}, H {_nanmean(result.sparseness_H):.3f}"
    )
    return (
        f"{result.solver} on {name} ({N} x {result.H.shape[1]}), {M} components: "
        f"{result.n_iter} iterations in {result.times[-1]:.2f} s, stop reason "
        f"{result.stop_reason}, relative error {result.relative_error:.4g}, {sparseness}"
        + ("" if result.stationarity is None else f", stationarity {result.stationarity:.2g}")
    )


def _nanmean(values):
    values = np.asarray(values, dtype=float)
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else float("nan")


def _plain(value):
    """``value`` with numpy scalars as Python ones and non-finite floats as None."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _folder_name(name):
    """``name`` made safe as one folder name."""
    return re.sub(r"[^\w.-]+", "_", name).strip("._") or "data"


def _say(message):
    print(message, file=sys.stderr)
