"""Shared machinery of the figure scripts: options, experiments, caching, output.

Each figure script lists its experiments (data set, solver, settings), and the
harness runs them with a real stopping rule and a time guard, caches every
result under ``<out>/.cache/`` keyed on (code version, parameters, data
fingerprint), checkpoints long runs so an interrupted ``all`` resumes where it
stopped, and writes ``<out>/<figure>.json`` with the numbers behind each figure
(see :mod:`reproduce._output` for how a figure's files are replaced), never
caching a run stopped by its time guard (:mod:`reproduce._invocation`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import platform
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import nmfsc
from nmfsc.atomic import atomic_writer, write_atomic
from nmfsc.datasets.catalog import DATASETS
from nmfsc.solvers.registry import SOLVERS, solver
from reproduce._invocation import RESULTS, checkpoint_seconds, run_line, suite_advance
from reproduce.import_graph import module_path, reachable

# Iteration budget of --quick runs: enough to exercise every code path.
QUICK_MAX_ITER = 5
# Where --quick writes instead of figures/ (git-ignored): smoke tests never
# overwrite the committed figures.
QUICK_OUT = "quick-output"
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Options:
    """Command-line options shared by every figure script."""

    quick: bool = False
    seed: int = 0
    out: str = "figures"
    max_time: float | None = None
    force: bool = False
    progress: bool = True

    @property
    def out_dir(self) -> Path:
        """Where outputs go: ``out``, except that ``--quick`` never writes into the
        committed ``figures/`` (the default ``out``): it goes to ``quick-output/``."""
        out = Path(self.out)
        if self.quick and (out == Path("figures") or _inside(out, REPO_ROOT / "figures")):
            return Path(QUICK_OUT)
        return out

    @property
    def cache_dir(self) -> Path:
        return self.out_dir / ".cache"


@dataclass(frozen=True)
class Experiment:
    """One factorisation run: a data set, a solver and its settings."""

    name: str
    dataset: str
    solver: str
    n_components: int
    params: dict = field(default_factory=dict)
    max_time: float = 120.0
    max_iter: int = 20000

    def key_fields(self, options: Options) -> dict:
        return {
            "name": self.name,
            "dataset": self.dataset,
            "solver": self.solver,
            "n_components": self.n_components,
            "params": self.params,
            "max_iter": QUICK_MAX_ITER if options.quick else self.max_iter,
            "seed": options.seed,
            "quick": options.quick,
        }

    def budget(self, options: Options) -> float:
        return float(options.max_time if options.max_time is not None else self.max_time)


@dataclass
class RunResult:
    """What an experiment produced: the factors and the numbers about the run."""

    experiment: Experiment
    W: np.ndarray
    H: np.ndarray
    stats: dict
    V: np.ndarray | None = None


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


# --------------------------------------------------------------------------
# Fingerprints
# --------------------------------------------------------------------------
def _hash_files(paths) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.relative_to(REPO_ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def code_files() -> list[Path]:
    """The source files whose bytes make :func:`code_version`: the modules of the
    solvers reproduce runs (each public solver's row of
    :data:`nmfsc.solvers.registry.SOLVERS`, its default variant for nmf_sc)
    and of the data-set table, with every module of the repository they
    import (:func:`reproduce.import_graph.reachable`), the solvers' table
    itself (which decides the steps each name runs; not what it imports, the
    opt-in variants among them), and this file."""
    starts = {"nmfsc.datasets.catalog"}
    for spec in SOLVERS:
        if spec is solver(spec.name):
            starts |= {spec.function.__module__, spec.steps.__module__}
    names = reachable(starts, REPO_ROOT) | {solver.__module__}
    return [*(module_path(name, REPO_ROOT) for name in sorted(names)), Path(__file__).resolve()]


@functools.cache
def code_version() -> str:
    """Hash of the source that decides a run's W and H: a change recomputes.

    Only what the runs import is hashed (:func:`code_files`): the drawing, the
    scores, the estimator, the comparison, the command line, the Dask backend
    and the solvers reproduce does not run (such as ``nmf_sc``'s opt-in
    variants) are not, so changing them reuses the cached factorisations and
    keeps the figures' version.
    """
    return f"{nmfsc.__version__}+{_hash_files(code_files())}"


@functools.cache
def data_fingerprint() -> str:
    """Hash of the data registry: every data file is verified against it."""
    from importlib import resources

    text = resources.files("nmfsc.datasets").joinpath("data_registry.txt").read_bytes()
    return hashlib.sha256(text).hexdigest()[:16]


def versions() -> dict:
    import matplotlib
    import numba
    import scipy

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "scipy": scipy.__version__,
        "matplotlib": matplotlib.__version__,
        "nmfsc": nmfsc.__version__,
        "code_version": code_version(),
        "platform": platform.platform(),
    }


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def load_dataset(name: str, seed: int) -> np.ndarray:
    """The data matrix V of SPEC.md for ``name``, a key of the data-set table (cached
    in this process); ``seed`` draws the data sets that are sampled at random."""
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}")
    dataset = DATASETS[name]
    return dataset.load(random_state=seed) if dataset.seeded else dataset.load()


# (height, width) of one column of V (of its ON half for natural patches), per data set.
IMAGE_SHAPES = {name: dataset.tile_shape for name, dataset in DATASETS.items()}


# --------------------------------------------------------------------------
# Running with cache and checkpoints
# --------------------------------------------------------------------------
def cache_key(exp: Experiment, options: Options) -> str:
    payload = {
        "experiment": exp.key_fields(options),
        "code": code_version(),
        "data": data_fingerprint(),
    }
    text = json.dumps(payload, sort_keys=True, default=str)
    return f"{exp.name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _log(options: Options, message: str) -> None:
    if options.progress:
        from tqdm import tqdm

        tqdm.write(message, file=sys.stderr)
    else:
        print(message, file=sys.stderr)


class Interrupted(KeyboardInterrupt):
    """A run was stopped by Ctrl-C: its checkpoint is kept and nothing is cached."""


class CacheWarning(UserWarning):
    """A cache entry or checkpoint could not be read; it is recomputed."""


def run_experiment(exp: Experiment, options: Options) -> RunResult:
    """Run ``exp`` (or load its cached result) and return W, H and its numbers.

    A run stopped by its time guard (stop reason ``"max_time"``) is returned
    (its stats say so) but not cached: its checkpoint is kept and the next
    invocation continues it with a fresh guard. Within one invocation an
    experiment runs once: a second request returns the first result.

    A run stopped by Ctrl-C (the solver returns with stop reason
    ``"interrupted"``) raises :class:`Interrupted`: its checkpoint is kept, no
    cache entry is written, and the next call resumes from the checkpoint.
    An unreadable cache entry or checkpoint is recomputed with a
    :class:`CacheWarning`. Cache entries are written atomically, the ``.json``
    (the entry's commit mark) after the ``.npz``.
    """
    key = cache_key(exp, options)
    memo_key = f"{options.cache_dir.resolve()}/{key}"
    if memo_key in RESULTS:
        _log(options, f"[{exp.name}] already run in this invocation")
        suite_advance()
        return RESULTS[memo_key]
    result = _run_or_read(exp, options, key)
    RESULTS[memo_key] = result
    return result


def _run_or_read(exp, options, key):
    """:func:`run_experiment`'s work: the cache entry, or a (resumed) run."""
    import warnings

    V = load_dataset(exp.dataset, options.seed)
    options.cache_dir.mkdir(parents=True, exist_ok=True)
    result_path = options.cache_dir / f"{key}.npz"
    stats_path = options.cache_dir / f"{key}.json"
    checkpoint = options.cache_dir / f"{key}.checkpoint.npz"
    if result_path.exists() and stats_path.exists() and not options.force:
        cached = _read_cache_entry(exp, V, result_path, stats_path)
        if cached is not None:
            _log(options, f"[{exp.name}] cached result {result_path.name}")
            suite_advance()
            return RunResult(exp, *cached, V)
    if options.force and checkpoint.exists():
        checkpoint.unlink()

    fields = {**exp.key_fields(options), "max_time": exp.budget(options)}
    _log(
        options,
        f"[{exp.name}] {exp.solver} on {exp.dataset} {V.shape[0]}x{V.shape[1]}, "
        f"M={exp.n_components}, {exp.params}, time guard {fields['max_time']:.0f} s",
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nmfsc.ConvergenceWarning)  # the stats have the stop
        warnings.simplefilter("ignore", nmfsc.DegenerateFitWarning)  # and the dead samples
        result = _solve(exp, V, options, fields, checkpoint)
    wall = time.perf_counter() - t0
    if result.stop_reason == "interrupted":
        raise Interrupted(
            f"{exp.name} stopped at iteration {result.n_iter}; its checkpoint {checkpoint} "
            "is kept and the same command resumes from it"
        )
    stats = run_stats(exp, V, result, wall)
    if result.stop_reason == "max_time":  # machine-dependent: never a final result
        stats["checkpoint"] = checkpoint.name
    else:
        with atomic_writer(result_path) as handle:
            np.savez_compressed(handle, W=result.W, H=result.H)
        write_atomic(stats_path, json.dumps(stats, indent=2, default=_json_default))
        if checkpoint.exists():
            checkpoint.unlink()
    _log(options, f"[{exp.name}] {run_line(stats, wall)}")
    suite_advance()
    return RunResult(exp, result.W, result.H, stats, V)


def _solve(exp, V, options, fields, checkpoint):
    """Call the solver, resuming from ``checkpoint`` when it is there and readable."""
    import warnings

    def call(resume):
        # The guard is per invocation: a resumed run's clock includes the
        # checkpoint's seconds, so it gets them on top of a fresh budget.
        before = checkpoint_seconds(checkpoint) if resume else 0.0
        return solver(exp.solver).run(
            V,
            exp.n_components,
            random_state=options.seed,
            max_iter=fields["max_iter"],
            max_time=before + fields["max_time"],
            progress=options.progress,
            checkpoint=checkpoint,
            resume=resume,
            **exp.params,
        )

    if not checkpoint.exists():
        return call(False)
    try:
        return call(True)
    except ValueError as error:  # damaged, or written for other data or settings
        if not (checkpoint.is_file() and str(error).startswith(f"checkpoint {str(checkpoint)!r}")):
            raise  # not about the file: a bad setting
        message = " ".join(str(error).split())
        warnings.warn(f"{message}; starting {exp.name} afresh", CacheWarning, stacklevel=3)
        checkpoint.unlink()
        return call(False)


def _read_cache_entry(exp, V, result_path, stats_path):
    """``(W, H, stats)`` of a cache entry, or None (with a CacheWarning, the entry
    removed) when it is truncated, damaged or of the wrong shape."""
    import warnings

    try:
        with open(result_path, "rb") as handle:  # np.load leaks its own on a non-zip file
            saved = np.load(handle, allow_pickle=False)
            if not isinstance(saved, np.lib.npyio.NpzFile):
                raise ValueError("not an .npz archive")
            with saved:
                W, H = saved["W"], saved["H"]
        stats = json.loads(stats_path.read_text(encoding="utf-8"))
        (N, T), M = V.shape, exp.n_components
        if W.shape != (N, M) or H.shape != (M, T) or not isinstance(stats, dict):
            raise ValueError(f"W {W.shape} and H {H.shape}, expected {(N, M)} and {(M, T)}")
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        detail = " ".join(str(error).split()) or type(error).__name__
        warnings.warn(
            f"cache entry {result_path.name} of {exp.name} is unreadable ({detail}); "
            "recomputing it",
            CacheWarning,
            stacklevel=3,
        )
        for path in (stats_path, result_path):
            path.unlink(missing_ok=True)
        return None
    stats["cached"] = True
    return W, H, stats


def _summary(values) -> dict:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return {"mean": None, "min": None, "max": None}
    return {"mean": float(values.mean()), "min": float(values.min()), "max": float(values.max())}


def run_stats(exp: Experiment, V: np.ndarray, result, wall: float) -> dict:
    """The numbers every figure's JSON reports for one run."""
    W, H = result.W, result.H
    residual = np.linalg.norm(V - W @ H)
    history = np.asarray(result.objective, dtype=float)
    return {
        "experiment": exp.name,
        "dataset": exp.dataset,
        "shape": list(V.shape),
        "solver": exp.solver,
        "n_components": exp.n_components,
        "params": exp.params,
        "n_iter": int(result.n_iter),
        "converged": bool(result.converged),
        "stop_reason": result.stop_reason,
        "run_time_s": float(wall),
        "final_objective": float(history[-1]) if history.size else None,
        "objective_every_10": history[::10].tolist(),
        "relative_error": float(residual / np.linalg.norm(V)),
        "stationarity": result.stationarity,
        "sparseness_W_columns": _summary(result.sparseness_W),
        "sparseness_H_rows": _summary(result.sparseness_H),
        "dead_samples": result.dead_samples,
        "unused_components": result.unused_components,
        "cached": False,
    }


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if dataclasses.is_dataclass(obj):
        return dataclasses.asdict(obj)
    raise TypeError(f"cannot write {type(obj).__name__} to JSON")


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------
def figure_json(options: Options, figure: str, caption: str, payload: dict) -> str:
    """The text of ``<out>/<figure>.json``: the caption, options, versions and payload."""
    document = {
        "figure": figure,
        "caption": caption,
        "quick": options.quick,
        "seed": options.seed,
        "max_time_override": options.max_time,
        "versions": versions(),
        **payload,
    }
    return json.dumps(document, indent=2, default=_json_default) + "\n"
