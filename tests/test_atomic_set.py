"""A set of files replaced together (:func:`nmfsc.atomic.replaced_set`, what
``nmfsc compare --out`` writes) and its journal (issue 42, points 5 and 6).

Point 5: a reader of the folder sees the whole old set or the whole new one
after every step of the swap, and a process killed outright at any step
leaves one whole set. On the code before the fix the set was moved in file by
file (one ``os.replace`` per file), so the first rename already showed a mix.

Point 6: a damaged journal is refused before any work, in one line; on the
code before the fix every compare fitted first and then failed with a
``JSONDecodeError`` traceback, results not written.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import nmfsc
from nmfsc import atomic
from nmfsc._commands import save_compare
from nmfsc.cli import main

OLD = [f"f{i:02d}.txt" for i in range(6)]
NEW = [f"f{i:02d}.txt" for i in range(4)] + ["g.txt"]
USER = "notes.txt"  # the user's own file in the folder: never touched

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
needs_links = pytest.mark.skipif(os.name != "posix", reason="an atomic swap needs symbolic links")


def write_set(folder, names, tag):
    with atomic.replaced_set(folder) as staging:
        for name in names:
            atomic.write_atomic(staging / name, tag)


def legacy_set(folder, names, tag):
    """A set as an nmfsc without links leaves it: plain files and a manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(tag)
    (folder / atomic.SET_MANIFEST).write_text(json.dumps({"files": names}))


def view(folder):
    """What a reader sees: the set's names that open, and the tags they hold."""
    names = sorted(
        p.name
        for p in folder.iterdir()
        if not p.name.startswith(".") and p.name != USER and p.exists()
    )
    return names, {(folder / name).read_text() for name in names}


def assert_one_set(folder, *sets):
    names, tags = view(folder)
    assert (names, tags) in [(sorted(n), {t}) for n, t in sets], (names, tags)
    assert (folder / USER).read_text() == "mine"


def leftovers(folder):
    """Staging folders, temporary files and links, unused set folders (all but
    the current and the previous one), dangling links, a journal."""
    keep = set()
    for name in (".nmfsc-set.current", ".nmfsc-set.previous"):
        with contextlib.suppress(OSError):
            keep.add(os.readlink(folder / name))
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.name.startswith((".nmfsc-set.new.", ".nmfsc-set.link."))
        or p.name.endswith(".tmp")
        or (p.name.startswith(".nmfsc-set.v.") and p.name not in keep)
        or (p.is_symlink() and not p.exists())
        or p.name == ".nmfsc-set.swap.json"
    )


MUTATIONS = ("replace", "rename", "unlink", "symlink", "link", "rmdir")


def hook(monkeypatch, *, before=None, after=None):
    """Call ``before()`` and ``after()`` around every call of the os functions
    that change a folder."""
    for name in MUTATIONS:
        real = getattr(os, name)

        def hooked(*args, _real=real, **kwargs):
            if before is not None:
                before()
            result = _real(*args, **kwargs)
            if after is not None:
                after()
            return result

        monkeypatch.setattr(os, name, hooked)


def make_old_set(out, kind):
    """``out`` afresh: the user's file and the old set, written as ``kind`` says."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    (out / USER).write_text("mine")
    if kind == "written by replaced_set":
        write_set(out, OLD, "old")
    else:
        legacy_set(out, OLD, "old")
    assert_one_set(out, (OLD, "old"))
    return out


@pytest.fixture(params=["written by replaced_set", "legacy files and manifest"])
def kind(request):
    return request.param


@pytest.fixture
def old_set(kind, tmp_path):
    return make_old_set(tmp_path / "out", kind)


# --- point 5: one whole set at every instant ------------------------------------------


@needs_links
def test_a_reader_sees_one_whole_set_after_every_step_of_the_swap(old_set, monkeypatch):
    steps = []

    def check():
        steps.append(view(old_set))
        assert_one_set(old_set, (OLD, "old"), (NEW, "new"))

    hook(monkeypatch, after=check)
    write_set(old_set, NEW, "new")  # before the fix: f00.txt new beside f01.txt old
    monkeypatch.undo()
    assert_one_set(old_set, (NEW, "new"))
    assert len(steps) > 10 and leftovers(old_set) == []


def in_a_killed_process(write, *, kill_when):
    """Run ``write()`` in a forked process that ends with ``os._exit(137)`` (as
    by SIGKILL: no cleanup runs) after the call of an os function that changes
    a folder for which ``kill_when(name, args)`` is true; its exit code."""
    with warnings.catch_warnings():  # Python 3.12+ warns of BLAS threads; the writer has none
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the writer
        status = 1
        try:
            for name in MUTATIONS:

                def hooked(*args, _name=name, _real=getattr(os, name), **kwargs):  # noqa: B008
                    result = _real(*args, **kwargs)
                    if kill_when(_name, args):
                        os._exit(137)
                    return result

                setattr(os, name, hooked)
            write()
            status = 0
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@needs_links
@needs_fork
def test_a_kill_at_any_step_of_the_swap_leaves_one_whole_set(kind, tmp_path):
    """A writer killed after its k-th change to the file system, for every k
    until it finishes."""
    out = tmp_path / "out"
    for k in range(1, 500):
        make_old_set(out, kind)
        count = [0]

        def kth(name, args, count=count, k=k):
            count[0] += 1
            return count[0] == k

        code = in_a_killed_process(lambda k=k: write_set(out, NEW, f"new{k}"), kill_when=kth)
        assert code in (0, 137)
        # what a reader sees before anything cleans up after the killed writer
        assert_one_set(out, (OLD, "old"), (NEW, f"new{k}"))
        if code == 0:
            break
        # the next write finishes the job: the folder holds its set and no leftover
        write_set(out, NEW[:2], "next")
        assert_one_set(out, (NEW[:2], "next"))
        assert leftovers(out) == []
    assert code == 0 and k > 10
    assert_one_set(out, (NEW, f"new{k}"))


@needs_links
def test_the_set_is_links_into_the_current_set_folder_and_other_files_stay(old_set):
    (old_set / "f09.txt").write_text("also mine")  # not a name of any set: left alone
    write_set(old_set, NEW, "new")
    for name in NEW:
        assert os.readlink(old_set / name) == f"{atomic.SET_CURRENT}/{name}"
    current = old_set / os.readlink(old_set / atomic.SET_CURRENT)
    assert sorted(p.name for p in current.iterdir()) == sorted(NEW)
    assert (old_set / "f09.txt").read_text() == "also mine" and not (old_set / "f05.txt").exists()
    assert not (old_set / atomic.SET_MANIFEST).exists() and leftovers(old_set) == []
    # a set folder is readable as a folder made by mkdir is (not mkdtemp's 0700)
    umask = os.umask(0)
    os.umask(umask)
    assert current.stat().st_mode & 0o777 == 0o777 & ~umask


@needs_links
def test_a_failure_at_any_step_leaves_one_whole_set(kind, tmp_path, monkeypatch):
    """A full disk at the n-th change to the file system, for every n until the
    write succeeds: the old set stays (or the new one, where the switch was made)."""
    out = tmp_path / "out"
    for n in range(1, 500):
        make_old_set(out, kind)
        count = [0]

        def nth(count=count, n=n):
            count[0] += 1
            if count[0] == n:
                raise OSError(errno.ENOSPC, "No space left on device")

        hook(monkeypatch, before=nth)
        try:
            write_set(out, NEW, f"new{n}")
        except OSError as error:
            assert error.errno == errno.ENOSPC
            assert_one_set(out, (OLD, "old"), (NEW, f"new{n}"))
        else:  # the failure came after the switch, in the cleanup, or not at all
            assert_one_set(out, (NEW, f"new{n}"))
            if count[0] < n:
                break
        finally:
            monkeypatch.undo()
        write_set(out, NEW[:2], "next")
        assert_one_set(out, (NEW[:2], "next"))
        assert leftovers(out) == []
    assert n > 10


@needs_fork
def test_without_links_a_kill_between_two_renames_is_completed_by_the_next_write(
    tmp_path, monkeypatch
):
    """Where the file system has no symbolic links, the files are moved in one by
    one after a journal: a kill among the moves leaves a mix, and the journal,
    which the next write (or :func:`check_set`) completes, as docs/cli.md says."""
    monkeypatch.setattr(atomic, "_links_work", lambda folder: False)
    out = make_old_set(tmp_path / "out", "written by replaced_set")
    assert not any(p.is_symlink() for p in out.iterdir())
    moved = []

    def second_move(name, args):  # of a file from the staging folder into out
        if name == "replace" and Path(args[1]).parent == out:
            moved.append(Path(args[0]).parent.name.startswith(atomic.STAGING_PREFIX))
        return moved.count(True) == 2 and moved[-1]

    code = in_a_killed_process(lambda: write_set(out, NEW, "new"), kill_when=second_move)
    assert code == 137
    _, tags = view(out)
    assert tags == {"old", "new"} and (out / atomic.SET_JOURNAL).exists()  # the documented mix
    atomic.check_set(out)
    assert_one_set(out, (NEW, "new"))
    assert not (out / atomic.SET_JOURNAL).exists()


@needs_links
def test_a_set_written_with_links_is_rewritten_without_them(old_set, monkeypatch):
    write_set(old_set, NEW, "new")
    monkeypatch.setattr(atomic, "_links_work", lambda folder: False)
    write_set(old_set, OLD[:2], "plain")
    assert_one_set(old_set, (OLD[:2], "plain"))
    assert not any(p.is_symlink() for p in old_set.iterdir())
    assert not any(p.name.startswith(atomic.VERSION_PREFIX) for p in old_set.iterdir())


# --- point 6: the journal is checked before any work ----------------------------------


class _Saved:
    """A stand-in comparison: its save writes report.md and records the call."""

    def __init__(self, calls):
        self.calls = calls
        self.rows = [{"method": "nmf_sc", "stop_reason": "tol"}]

    def to_markdown(self):
        return "| method | error |\n"

    def save(self, folder):
        self.calls.append(("save", Path(folder)))
        return [atomic.write_atomic(Path(folder) / "report.md", "new")]


@pytest.fixture
def data(tmp_path):
    V = np.abs(np.random.default_rng(3).standard_normal((20, 30))) + 0.01
    np.save(tmp_path / "v.npy", V)
    return tmp_path / "v.npy"


@pytest.fixture
def fake_compare(monkeypatch):
    calls = []

    def compare(V, n_components, **kwargs):
        calls.append("fit")
        return _Saved(calls)

    monkeypatch.setattr(nmfsc, "compare", compare, raising=False)
    return calls


DAMAGED = {
    "not JSON": "{not json\n",
    "not a journal of nmfsc's": json.dumps(
        {"staging": "../../elsewhere", "files": ["/etc/passwd"], "remove": [".."]}
    ),
}


@pytest.mark.parametrize("reason", DAMAGED)
def test_compare_refuses_a_damaged_journal_in_one_line_before_fitting(
    reason, data, tmp_path, fake_compare, capsys
):
    out = tmp_path / "out"
    legacy_set(out, ["report.md"], "old")
    (out / atomic.SET_JOURNAL).write_text(DAMAGED[reason])
    before = sorted(p.name for p in out.iterdir())
    assert main(["compare", str(data), "-k", "2", "--out", str(out), "--no-progress"]) == 2
    assert fake_compare == []  # before the fix: every fit ran, then a JSONDecodeError
    err = capsys.readouterr().err
    journal = out / atomic.SET_JOURNAL
    assert err == (
        f"nmfsc compare: error: {journal} is damaged ({reason}), so the reports in {out} may "
        f"mix two runs; delete {atomic.SET_JOURNAL} and the reports and figures in {out}, or "
        f"choose another --out\n"
    )
    assert sorted(p.name for p in out.iterdir()) == before
    assert (out / "report.md").read_text() == "old"


def test_compare_completes_a_journal_of_a_killed_run_before_fitting(
    data, tmp_path, fake_compare, monkeypatch, capsys
):
    """A run killed between two renames (by an nmfsc that moved the files in one
    by one) left a mix and its journal: the next compare completes it first."""
    out = tmp_path / "out"
    legacy_set(out, ["report.md", "report.json", "a.png"], "old")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    staging = out / f"{atomic.STAGING_PREFIX}{int(dead.stdout)}.abc"
    staging.mkdir()
    (staging / "report.md").write_text("killed")
    (out / "report.json").write_text("killed")  # moved in before the kill
    journal = {"staging": staging.name, "files": ["report.json", "report.md"], "remove": ["a.png"]}
    (out / atomic.SET_JOURNAL).write_text(json.dumps(journal))
    seen = []
    real = nmfsc.compare

    def compare(*args, **kwargs):
        seen.append(view(out))  # before the fix: the mix, the journal still there
        return real(*args, **kwargs)

    monkeypatch.setattr(nmfsc, "compare", compare)
    assert main(["compare", str(data), "-k", "2", "--out", str(out), "--no-progress"]) == 0
    assert seen == [(["report.json", "report.md"], {"killed"})]
    assert view(out) == (["report.md"], {"new"}) and not (out / atomic.SET_JOURNAL).exists()
    capsys.readouterr()


@pytest.mark.parametrize("reason", DAMAGED)
def test_saving_into_a_folder_with_a_damaged_journal_is_one_line_before_saving(reason, tmp_path):
    out = tmp_path / "out"
    legacy_set(out, ["report.md"], "old")
    (out / atomic.SET_JOURNAL).write_text(DAMAGED[reason])
    calls = []
    with pytest.raises(OSError) as raised:  # before the fix: a JSONDecodeError, after saving
        save_compare(_Saved(calls), out)
    message = str(raised.value)
    assert isinstance(raised.value, atomic.SetJournalError) and "\n" not in message
    assert message.startswith(f"{out / atomic.SET_JOURNAL} is damaged ({reason})")
    assert "delete .nmfsc-set.swap.json" in message
    assert calls == []  # refused before the comparison is saved
    assert (out / "report.md").read_text() == "old"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["report.md", atomic.SET_MANIFEST, atomic.SET_JOURNAL]
    )


@needs_links
def test_compare_refuses_a_copy_that_followed_the_links_before_fitting(
    data, tmp_path, fake_compare, capsys
):
    """cp -rL (or shutil.copytree) makes .nmfsc-set.current a folder, over which
    no link can be renamed: refused in one line before any fit, not after."""
    import shutil

    first = tmp_path / "first"
    write_set(first, NEW, "new")
    out = tmp_path / "copy"
    shutil.copytree(first, out)  # follows the links
    assert (out / atomic.SET_CURRENT).is_dir() and not (out / atomic.SET_CURRENT).is_symlink()
    assert main(["compare", str(data), "-k", "2", "--out", str(out), "--no-progress"]) == 2
    assert fake_compare == []
    err = capsys.readouterr().err
    assert err.startswith(f"nmfsc compare: error: {out / atomic.SET_CURRENT} is a folder")
    assert err.endswith("or choose another --out\n") and err.count("\n") == 1
