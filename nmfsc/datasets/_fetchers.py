"""The pooch gate: registry, data folder, downloads, and errors that say what to do.

Every data file nmfsc uses goes through :class:`Gate.fetch`, which wraps one
``pooch.create`` gate. A file is used only after its sha256 matches the registry
(``data_registry.txt``, shipped in this package). Downloads go to a temporary file
that pooch moves into place only once its hash matches, so an interrupted or wrong
download never leaves a file that passes as valid.

This module knows files, not data sets: which files make up each data set, and how
they are read and preprocessed, is the table in :mod:`nmfsc.datasets.catalog`.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import re
import shlex
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pooch

ENV_VAR = "NMFSC_DATA_DIR"
REGISTRY_FILE = "data_registry.txt"

# pooch says what it downloads at INFO level; library users get warnings only.
# The command line (``python -m nmfsc.datasets``) turns the messages back on.
pooch.get_logger().setLevel("WARNING")


class DataError(RuntimeError):
    """A data file is missing, corrupt or cannot be downloaded.

    The message names the file, where it should be, the URL(s) to get it from and
    what to do.

    See Also
    --------
    DataWarning : Warned when a corrupt cached file is fetched again.
    download_all : Downloads every data set.
    nmfsc.DataFileError : The error for a data file of your own.

    Examples
    --------
    >>> from nmfsc.datasets import DataError
    >>> issubclass(DataError, RuntimeError)
    True

    A loader raises it when its file is not in the data folder and cannot be
    downloaded. Showing that needs the file absent and the network down, so
    this part is not run:

    >>> from nmfsc.datasets import load_cbcl
    >>> try:  # doctest: +SKIP
    ...     V = load_cbcl()
    ... except DataError as error:
    ...     print(str(error).splitlines()[0])
    The data file 'face.train.tar.gz' is not in ... and could not be downloaded.
    """


class DataWarning(UserWarning):
    """A cached data file was found corrupt and is being fetched again.

    See Also
    --------
    DataError : Raised when a file cannot be fetched.
    download_all : Downloads every data set.

    Examples
    --------
    >>> import warnings
    >>> from nmfsc.datasets import DataWarning
    >>> issubclass(DataWarning, UserWarning)
    True

    To refuse a download that would replace a corrupt file, turn the warning
    into an error. A corrupt file in the data folder and the network are
    needed to see it, so this part is not run:

    >>> from nmfsc.datasets import load_cbcl
    >>> with warnings.catch_warnings():  # doctest: +SKIP
    ...     warnings.simplefilter("error", DataWarning)  # raised instead of downloading
    ...     V = load_cbcl()
    """


@dataclass(frozen=True)
class RegistryEntry:
    """One file of the registry.

    Attributes
    ----------
    name : str
        Path of the file under the data folder, with ``/`` separators.
    sha256 : str
        Its SHA-256 digest, lower-case hex.
    urls : tuple of str
        Where to download it: the registry's URL first, then its ``#mirror`` URLs.
    """

    name: str
    sha256: str
    urls: tuple[str, ...]


@dataclass(frozen=True)
class Registry:
    """The parsed registry: files (pooch lines plus ``#mirror``) and ``#origin`` URLs."""

    entries: dict[str, RegistryEntry]
    origins: dict[str, tuple[str, ...]] = field(default_factory=dict)


def registry_text() -> str:
    """Return the text of the registry shipped inside the package.

    Returns
    -------
    text : str
        The contents of ``nmfsc/datasets/data_registry.txt``.
    """
    resource = importlib.resources.files("nmfsc.datasets").joinpath(REGISTRY_FILE)
    return resource.read_text(encoding="utf-8")


def parse_registry(text: str, base_url: str = "") -> Registry:
    """Parse a registry in pooch's format, with nmfsc's ``#mirror`` and ``#origin`` lines.

    Parameters
    ----------
    text : str
        Registry text: ``<name> <sha256> [<url>]`` lines (plain SHA-256 hex digests
        only, not pooch's ``alg:digest`` form), ``#`` comments,
        ``#mirror <name> <url>`` and ``#origin <dataset> <url>`` lines.
    base_url : str, default ""
        URL prefix for entries that name no URL of their own (as in pooch).

    Returns
    -------
    registry : Registry
    """
    # pooch.Pooch.load_registry reads the same file lines, but skips every "#" line and
    # so the mirrors and origins; hence this parser (a test checks both agree).
    hashes: dict[str, str]
    urls: dict[str, str]
    mirrors: dict[str, list[str]]
    origins: dict[str, list[str]]
    hashes, urls, mirrors, origins = {}, {}, {}, {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith(("#mirror ", "#origin ")):
            words = line.split()
            if len(words) != 3:
                raise ValueError(f"registry line {number}: expected '{words[0]} NAME URL': {raw!r}")
            target = mirrors if words[0] == "#mirror" else origins
            target.setdefault(words[1], []).append(words[2])
        elif line and not line.startswith("#"):
            words = shlex.split(line)  # as pooch reads it
            if len(words) not in (2, 3):
                raise ValueError(f"registry line {number}: expected 'NAME SHA256 [URL]': {raw!r}")
            if not re.fullmatch(r"[0-9a-fA-F]{64}", words[1]):
                raise ValueError(
                    f"registry line {number}: {words[1]!r} is not a sha256 digest (64 hex digits)"
                )
            hashes[words[0]] = words[1].lower()
            urls[words[0]] = words[2] if len(words) == 3 else base_url.rstrip("/") + "/" + words[0]
    unknown = sorted(set(mirrors) - set(hashes))
    if unknown:
        raise ValueError(f"registry: '#mirror' lines for files not in the registry: {unknown}")
    entries = {
        name: RegistryEntry(name, digest, (urls[name], *mirrors.get(name, ())))
        for name, digest in hashes.items()
    }
    return Registry(entries, {key: tuple(value) for key, value in origins.items()})


class Gate:
    """A pooch gate: fetch registry files into one data folder, hash-checked.

    Build one with :func:`make_gate`; nmfsc's own is :func:`default_gate`.

    Parameters
    ----------
    pup : pooch.Pooch
        The pooch instance (its path is the data folder).
    registry : Registry
        The parsed registry, including mirrors.
    env : str or None
        The environment variable that can override the folder (for messages).
    """

    def __init__(self, pup: pooch.Pooch, registry: Registry, env: str | None = None):
        self.pooch = pup
        self.registry = registry
        self.env = env

    @property
    def path(self) -> Path:
        """The data folder (not created until something is downloaded)."""
        return Path(self.pooch.abspath)

    def entry(self, name: str) -> RegistryEntry:
        """Return the registry entry of ``name``; raise :class:`DataError` if unknown."""
        try:
            return self.registry.entries[name]
        except KeyError:
            known = ", ".join(sorted(self.registry.entries))
            message = f"'{name}' is not in the nmfsc data registry (it has: {known})"
            raise DataError(message) from None

    def status(self, name: str) -> str:
        """Say whether ``name`` is in the data folder and intact, without downloading.

        Returns
        -------
        status : {"ok", "missing", "corrupt"}
            ``"corrupt"`` means the file is there but its sha256 is not the registry's.
        """
        entry = self.entry(name)
        target = self.path / name
        if not target.is_file():
            return "missing"
        return "ok" if pooch.file_hash(str(target)) == entry.sha256 else "corrupt"

    def fetch(
        self,
        name: str,
        processor: Callable[[str, str, pooch.Pooch], object] | None = None,
        progressbar: bool = False,
    ):
        """Return the local path of a registry file, downloading it if needed.

        A file already in the data folder with the right sha256 is used as it is, and
        nothing is written. A file with the wrong sha256 is reported with a
        :class:`DataWarning` and downloaded again. Every download is checked against the
        registry hash before it replaces anything.

        Parameters
        ----------
        name : str
            The file's name in the registry.
        processor : callable or None
            A pooch processor (e.g. ``pooch.Unzip``), run after the file is verified,
            with the action pooch would pass (``"download"``, ``"update"`` or ``"fetch"``).
        progressbar : bool, default False
            Show a tqdm progress bar on stderr while downloading.

        Returns
        -------
        path : str or object
            The file's absolute path, or what ``processor`` returns.

        Raises
        ------
        DataError
            If the file cannot be downloaded from any of its URLs, or the downloads do
            not match the registry hash. Nothing invalid is left under its name.
        """
        entry = self.entry(name)
        check_flag(progressbar, "progressbar")
        target = self.path / name
        # pooch would also see a corrupt file and download it again, but only say so in
        # its log: the hash is checked here first, to warn, and to name the corrupt file
        # if the new download fails too.
        action = {"missing": "download", "corrupt": "update", "ok": "fetch"}[self.status(name)]
        if action == "update":
            warnings.warn(
                f"The data file {target} is corrupt: its sha256 does not match the "
                f"registry ({entry.sha256}). It will be fetched again from {entry.urls[0]}.",
                DataWarning,
                stacklevel=2,
            )
        if action != "fetch":
            self._download(entry, target, progressbar, corrupt=action == "update")
        if processor is None:
            return str(target)
        return processor(str(target), action, self.pooch)

    def _download(self, entry: RegistryEntry, target: Path, progressbar: bool, corrupt: bool):
        import requests  # pooch's own dependency; imported lazily, as pooch does

        failures = []
        # pooch knows one URL per file, so the registry's mirrors are tried here, in
        # turn: each URL through a pooch of its own on the same folder and hash, which
        # downloads it (its downloader for the URL's protocol, its retries, its progress
        # bar) to a temporary file and moves that into place only if the hash matches.
        for url in entry.urls:
            pup = pooch.create(
                path=self.path,
                base_url="",
                registry={entry.name: entry.sha256},
                urls={entry.name: url},
                retry_if_failed=self.pooch.retry_if_failed,
            )
            try:
                pup.fetch(entry.name, progressbar=progressbar)
                return
            except ValueError as error:  # pooch: downloaded file's hash mismatch
                failures.append(
                    f"{url}\n      the downloaded bytes do not match the registry "
                    f"sha256, so they were discarded ({_one_line(error)})"
                )
            except (requests.exceptions.RequestException, OSError) as error:
                failures.append(f"{url}\n      {type(error).__name__}: {_one_line(error)}")
        raise DataError(self._failure_message(entry, target, failures, corrupt))

    def _failure_message(self, entry, target, failures, corrupt) -> str:
        if corrupt:
            head = (
                f"The data file {target} is corrupt (its sha256 does not match the "
                f"registry) and could not be fetched again. It was not used."
            )
        else:
            head = (
                f"The data file '{entry.name}' is not in {self.path} and could not be downloaded."
            )
        tried = "\n".join(f"  - {failure}" for failure in failures)
        where = (
            f"\nor set {self.env} to a folder that already holds '{entry.name}'" if self.env else ""
        )
        return (
            f"{head}\nTried:\n{tried}\n"
            f"To install it by hand, download it from one of the URLs above and save it as\n"
            f"  {target}\n(its sha256 must be {entry.sha256}){where}."
        )


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def make_gate(
    path: str | os.PathLike,
    base_url: str = "",
    registry: str | None = None,
    *,
    env: str | None = None,
    retry_if_failed: int = 0,
) -> Gate:
    """Build a :class:`Gate` on a data folder.

    Parameters
    ----------
    path : str or path-like
        The data folder (created on the first download).
    base_url : str, default ""
        URL prefix for registry entries that name no URL.
    registry : str or None
        Registry text in pooch's format (see :func:`parse_registry`); the registry
        shipped with nmfsc when None.
    env : str or None
        Name of an environment variable that, when set, overrides ``path``.
    retry_if_failed : int, default 0
        How many times pooch retries a failed download of one URL.

    Returns
    -------
    gate : Gate
    """
    parsed = parse_registry(registry_text() if registry is None else registry, base_url)
    pup = pooch.create(
        path=path,
        base_url=base_url,
        env=env,
        registry={name: entry.sha256 for name, entry in parsed.entries.items()},
        urls={name: entry.urls[0] for name, entry in parsed.entries.items()},
        retry_if_failed=retry_if_failed,
    )
    return Gate(pup, parsed, env)


def default_gate() -> Gate:
    """Return nmfsc's gate: the OS cache folder, or ``$NMFSC_DATA_DIR`` when it is set.

    Returns
    -------
    gate : Gate
        Rebuilt whenever ``NMFSC_DATA_DIR`` changes.
    """
    return _gate_for(os.environ.get(ENV_VAR))


@functools.lru_cache(maxsize=4)
def _gate_for(env_value: str | None) -> Gate:
    # Every entry of the shipped registry names its own URL, so no base URL is needed.
    return make_gate(pooch.os_cache("nmfsc"), env=ENV_VAR, retry_if_failed=2)


def resolve_gate(gate: Gate | None) -> Gate:
    """Return ``gate``, or :func:`default_gate` when it is None.

    Raises
    ------
    TypeError
        If ``gate`` is neither a :class:`Gate` nor None (a folder name, say).
    """
    if gate is None:
        return default_gate()
    if not isinstance(gate, Gate):
        raise TypeError(
            f"gate must be a Gate (nmfsc.datasets._fetchers.make_gate(folder)) or None, got "
            f"{gate!r}; to read the data from a folder, set {ENV_VAR} to it"
        )
    return gate


def check_flag(value, name: str) -> bool:
    """``value`` as a bool; TypeError naming ``name`` unless it is True or False."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def data_dir() -> Path:
    """Return the folder nmfsc reads its data from and downloads it to.

    Returns
    -------
    path : pathlib.Path
        ``$NMFSC_DATA_DIR`` when that variable is set, else the OS cache folder for
        nmfsc (e.g. ``~/.cache/nmfsc`` on Linux). It may not exist yet.

    See Also
    --------
    download_all : Fills it for offline use.

    Examples
    --------
    >>> import os
    >>> import tempfile
    >>> from pathlib import Path
    >>> from unittest import mock
    >>> from nmfsc.datasets import ENV_VAR, data_dir
    >>> data_dir().is_absolute()  # the folder depends on the machine
    True
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     with mock.patch.dict(os.environ, {ENV_VAR: folder}):  # NMFSC_DATA_DIR set
    ...         print(data_dir() == Path(folder))
    True
    """
    return default_gate().path
