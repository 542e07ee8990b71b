"""Command line: download, check and list nmfsc's data sets.

Usage::

    python -m nmfsc.datasets download          # fetch everything, with progress bars
    python -m nmfsc.datasets download --check  # re-verify every file, download nothing
    python -m nmfsc.datasets download --list   # data sets, sizes, sources, credits

The data folder is ``$NMFSC_DATA_DIR`` when that variable is set, else the OS cache.
"""

from __future__ import annotations

import argparse
import os
import sys

import pooch

from ._archives import unpacked_mismatches
from ._fetchers import ENV_VAR, DataError, Gate, default_gate
from .catalog import DATASETS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m nmfsc.datasets",
        description=(
            "Download and verify the data sets of Hoyer (2004): MIT CBCL faces, ORL faces "
            f"and Olshausen's natural images. Files go to ${ENV_VAR} when it is set, "
            "else to the OS cache folder."
        ),
    )
    parser.add_argument(
        "command",
        nargs="?",
        choices=["download"],
        default="download",
        help="download every data set (the default)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="re-verify the sha256 of every file and the unpacked folders; "
        "download nothing; exit 1 on any problem",
    )
    mode.add_argument(
        "--list",
        action="store_true",
        help="show each data set, its size, its source and its credit line",
    )
    return parser


def _megabytes(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:.1f} MB"


def _list(gate: Gate) -> int:
    print(f"Data folder: {gate.path}")
    for key, dataset in DATASETS.items():
        statuses = {gate.status(name) for name in dataset.files}
        state = (
            "corrupt"
            if "corrupt" in statuses
            else "not downloaded"
            if "missing" in statuses
            else "downloaded and verified"
        )
        more = f" (and {len(dataset.files) - 1} more like it)" if len(dataset.files) > 1 else ""
        print(f"\n{key}: {dataset.title}")
        print(f"  contents: {dataset.description}")
        print(
            f"  download: {_megabytes(dataset.download_bytes)} in {len(dataset.files)} "
            f"file(s), {state}"
        )
        print(f"  source:   {gate.registry.entries[dataset.files[0]].urls[0]}{more}")
        for origin in gate.registry.origins.get(key, ()):
            print(f"  original: {origin}")
        print(f"  credit:   {dataset.credit}")
    print("\nnmfsc does not redistribute these data sets; cite them as above when you use them.")
    return 0


def _check(gate: Gate) -> int:
    print(f"Checking {gate.path}")
    problems = 0
    for dataset in DATASETS.values():
        for name in dataset.files:
            status = gate.status(name)
            print(f"  {status:8s} {name}")
            problems += status != "ok"
        archive = dataset.archive
        if archive is not None and gate.status(archive.name) == "ok":
            mismatches = unpacked_mismatches(archive, gate)
            label = "ok" if not mismatches else "damaged"
            print(f"  {label:8s} {archive.extract_dir}/ (unpacked from {archive.name})")
            for line in mismatches[:5]:
                print(f"           {line}")
            if len(mismatches) > 5:
                print(f"           ... and {len(mismatches) - 5} more")
            problems += bool(mismatches)
    if problems:
        print(
            f"{problems} problem(s). Corrupt or missing files are fetched again by "
            f"'python -m nmfsc.datasets download'; a damaged unpacked folder is unpacked "
            f"again by the next load (or delete it)."
        )
        return 1
    print("Every file matches the registry.")
    return 0


def _download(gate: Gate) -> int:
    pooch.get_logger().setLevel("INFO")
    try:
        for key, dataset in DATASETS.items():
            folder = dataset.fetch(gate, progressbar=True)
            place = dataset.archive.extract_dir if dataset.archive else dataset.files[0]
            where = folder / place if dataset.archive else (folder / place).parent
            print(f"{key}: ready in {where}")
    except DataError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        pooch.get_logger().setLevel("WARNING")
    print(f"All data sets are in {gate.path}")
    return 0


def main(argv: list[str] | None = None, gate: Gate | None = None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : list of str or None
        Arguments (``sys.argv[1:]`` when None).
    gate : Gate or None
        The gate to use; nmfsc's default (``$NMFSC_DATA_DIR`` or the OS cache) when None.

    Returns
    -------
    status : int
        0 on success, 1 on a failed download or check.
    """
    args = _parser().parse_args(argv)
    gate = default_gate() if gate is None else gate
    try:
        if args.list:
            status = _list(gate)
        elif args.check:
            status = _check(gate)
        else:
            status = _download(gate)
        sys.stdout.flush()  # a closed pipe then fails here, not at interpreter exit
        return status
    except BrokenPipeError:
        # The reader went away (``--list | head``): stop quietly, as cat does,
        # with stdout pointed at devnull so the interpreter's last flush cannot fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
