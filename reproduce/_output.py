"""Writing a figure's files (PNG, PDF, JSON) as one set.

A figure's files are replaced together, so that a run killed while writing
leaves the old set or the new one, never a mix:

1. every file is written under a hidden staging name beside its target
   (``.fig3.new.png``, ``.fig3.new.pdf``, ``.fig3.new.json``), each one
   atomically and flushed to disk (:func:`nmfsc.plotting.save_figure`,
   :func:`nmfsc.atomic.write_atomic`);
2. a journal ``.fig3.swap.json`` naming the staged files and their targets is
   written (atomically): from here on the new set is committed;
3. the staged files are renamed over their targets in a row
   (:func:`os.replace`, atomic per file), the folder is synced, and the journal
   is removed.

A kill before step 2 leaves the old set untouched (and staged leftovers, which
the next write of that figure replaces). The renames of step 3 take well under
a millisecond, but a kill between two of them leaves new files beside old ones
on disk; the journal is then still there, and the next ``python -m reproduce``
in that folder first completes every journal it finds
(:func:`finish_pending`), so after any run a figure is all old or all new.

A figure that draws a run stopped by its time guard (not a final result:
:mod:`reproduce._invocation`) is written the same way into the scratch folder
``<out_dir>/unfinished/``, never over the figure in ``out_dir``; a figure
written in ``out_dir`` removes its unfinished copy.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from nmfsc.atomic import sync_folder, write_atomic
from reproduce._invocation import UNFINISHED, UNFINISHED_FOLDER, take_guarded

__all__ = ["finish_pending", "write_figure_set"]

FORMATS = ("png", "pdf")


def write_figure_set(fig, out_dir, name: str, json_text: str) -> list[Path]:
    """Replace ``<out_dir>/<name>.png``, ``.pdf`` and ``.json`` together (see above);
    in ``<out_dir>/unfinished/`` when a run the figure draws was stopped by its
    time guard.

    Returns the paths of the set: PNG, PDF, JSON.
    """
    from nmfsc.plotting import save_figure

    out_dir = Path(out_dir)
    scratch = out_dir / UNFINISHED_FOLDER
    guarded = take_guarded()
    if guarded:
        UNFINISHED[name] = guarded
        out_dir = scratch
    out_dir.mkdir(parents=True, exist_ok=True)
    stage = out_dir / f".{name}.new"
    staged_names = [f"{stage.name}.{fmt}" for fmt in (*FORMATS, "json")]
    try:
        save_figure(fig, stage, formats=FORMATS)
        write_atomic(out_dir / staged_names[-1], json_text)
    except BaseException:
        for staged in staged_names:
            (out_dir / staged).unlink(missing_ok=True)
        raise
    targets = [f"{name}.{fmt}" for fmt in (*FORMATS, "json")]
    journal = out_dir / f".{name}.swap.json"
    write_atomic(
        journal,
        json.dumps({"figure": name, "files": list(zip(staged_names, targets, strict=True))}),
    )
    try:
        _complete(journal)
    except BaseException:
        # Interrupted between two renames: finish them before giving up, so the
        # set is whole; if even that fails, the journal stays for the next run.
        with contextlib.suppress(Exception):
            _complete(journal)
        raise
    if not guarded:  # the final set is in place: its unfinished copy is stale
        for target in targets:
            (scratch / target).unlink(missing_ok=True)
    return [out_dir / target for target in targets]


def finish_pending(out_dir) -> list[str]:
    """Complete every figure swap a killed run left half done in ``out_dir``.

    Returns the names of the figures completed.
    """
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        return []
    journals = [*out_dir.glob(".*.swap.json"), *(out_dir / UNFINISHED_FOLDER).glob(".*.swap.json")]
    return [_complete(journal) for journal in sorted(journals)]


def _complete(journal: Path) -> str:
    """Rename every staged file the journal names that is still there; remove the journal."""
    folder = journal.parent
    entry = json.loads(journal.read_text(encoding="utf-8"))
    for staged, target in entry["files"]:
        if Path(staged).name != staged or Path(target).name != target:
            raise ValueError(f"{journal}: {staged!r} -> {target!r} is not a file of its folder")
        if (folder / staged).exists():
            os.replace(folder / staged, folder / target)
    sync_folder(folder)
    journal.unlink(missing_ok=True)
    return entry["figure"]
