"""The table of nmfsc's real data sets: one :class:`DataSet` entry each, in :data:`DATASETS`.

An entry says everything nmfsc knows about a data set: its registry files (their
hashes and URLs stay in ``data_registry.txt``), the archive they are unpacked from,
its reader (files to raw images) and preprocessing (raw images to the data matrix V),
its shapes, its loader's name, its size, and how to credit it. Everything else reads
this table: the loaders (``load_cbcl()`` and the others are one-line wrappers of
:meth:`DataSet.load`), :func:`download_all`, the command line
(``python -m nmfsc.datasets``), the docs check (``tests/test_catalog.py`` checks that
``docs/datasets.md`` names every entry) and ``reproduce/``.

To add a data set: its files in ``data_registry.txt`` (and an ``#origin`` line for it),
a reader (below; a new file format also gets a function in ``_readers.py``), its
preprocessing (in ``_preprocess.py``), one entry in :data:`DATASETS`, a one-line loader
in ``_loaders.py`` exported by ``__init__.py``, and a row in ``docs/datasets.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _preprocess
from ._archives import Archive
from ._fetchers import Gate, check_flag, resolve_gate
from ._readers import read_float32_image, read_unpacked_pgms


@dataclass(frozen=True)
class DataSet:
    """One real data set: its files, how it is read and preprocessed, and its credit.

    Attributes
    ----------
    key : str
        Its short name: the key of :data:`DATASETS`, of its ``#origin`` line in the
        registry, and of ``reproduce``'s experiments.
    title, description : str
        What it is, as ``python -m nmfsc.datasets --list`` shows it.
    credit : str
        How its owners ask to be credited.
    files : tuple of str
        Its registry names (the files downloaded), in reading order.
    download_bytes : int
        Their total size.
    loader : str
        The name of the function of :mod:`nmfsc.datasets` that returns its V.
    image_shape : tuple of int
        (height, width) of a raw image as :meth:`images` returns it.
    tile_shape : tuple of int
        (height, width) of one column of V (for ON/OFF data, of its ON half):
        ``V[:, j].reshape(tile_shape)`` is sample j upright.
    matrix_shape : tuple of int
        The shape of V with the default options.
    reader : callable
        ``reader(dataset, data_folder)`` returns the raw images, an array of shape
        (n_images, *image_shape), from files already fetched.
    preprocess : callable
        ``preprocess(images, **options)`` returns V (features x samples).
    archive : Archive or None
        The archive that :attr:`files` includes and that is unpacked beside itself.
    seeded : bool, default False
        Whether V is drawn at random, so that :meth:`load` takes ``random_state``.
    """

    key: str
    title: str
    description: str
    credit: str
    files: tuple[str, ...]
    download_bytes: int
    loader: str
    image_shape: tuple[int, int]
    tile_shape: tuple[int, int]
    matrix_shape: tuple[int, int]
    reader: Callable[[DataSet, Path], np.ndarray]
    preprocess: Callable[..., np.ndarray]
    archive: Archive | None = None
    seeded: bool = False

    def fetch(self, gate: Gate | None = None, progressbar: bool = False) -> Path:
        """Make its files ready in the data folder: downloaded, verified, unpacked.

        Takes the arguments of :func:`download_all`, which does this for every data
        set, and returns the data folder (archives are unpacked beside themselves).
        """
        gate = resolve_gate(gate)
        check_flag(progressbar, "progressbar")
        for name in self.files:
            archive = self.archive
            processor = archive.processor() if archive and archive.name == name else None
            gate.fetch(name, processor=processor, progressbar=progressbar)
        return gate.path

    def images(self, gate: Gate | None = None) -> np.ndarray:
        """Fetch it and return its raw images, shape (n_images, *image_shape)."""
        return self.reader(self, self.fetch(gate))

    def load(self, gate: Gate | None = None, **options) -> np.ndarray:
        """Fetch it and return its data matrix V; ``options`` go to :attr:`preprocess`."""
        return self.preprocess(self.images(gate), **options)


def _read_cbcl(dataset: DataSet, folder: Path) -> np.ndarray:
    """Image j is ``train/face/face{j+1:05d}.pgm``."""
    names = [f"train/face/face{j:05d}.pgm" for j in range(1, 2429 + 1)]
    return read_unpacked_pgms(folder, dataset.archive, names, dataset.image_shape)


def _read_orl(dataset: DataSet, folder: Path) -> np.ndarray:
    """Image ``10 * (s - 1) + (i - 1)`` is ``s{s}/{i}.pgm``: s1/1 ... s1/10, s2/1 ... s40/10."""
    names = [f"s{s}/{i}.pgm" for s in range(1, 40 + 1) for i in range(1, 10 + 1)]
    return read_unpacked_pgms(folder, dataset.archive, names, dataset.image_shape)


def _read_float32_images(dataset: DataSet, folder: Path) -> np.ndarray:
    """One headerless big-endian float32 image per registry file."""
    shape = dataset.image_shape
    return np.stack([read_float32_image(folder / name, shape) for name in dataset.files])


# The tarball also holds 4548 train/non-face/*.pgm, which are not unpacked. The folder
# is passed as the member (everything under it is unpacked; see _archives.Unpacker).
_CBCL_ARCHIVE = Archive("face.train.tar.gz", "cbcl", ("train/face",))
_ORL_ARCHIVE = Archive("att_faces.zip", "orl-faces")

DATASETS: dict[str, DataSet] = {
    dataset.key: dataset
    for dataset in [
        DataSet(
            key="cbcl",
            title="MIT CBCL Face Database #1, training faces",
            description="2429 faces, 19 x 19, 8-bit PGM",
            credit=(
                "CBCL Face Database #1, MIT Center For Biological and Computational "
                "Learning, http://www.ai.mit.edu/projects/cbcl"
            ),
            files=(_CBCL_ARCHIVE.name,),
            download_bytes=2_421_251,
            loader="load_cbcl",
            image_shape=(19, 19),
            tile_shape=(19, 19),
            matrix_shape=(361, 2429),
            reader=_read_cbcl,
            preprocess=_preprocess.cbcl_matrix,
            archive=_CBCL_ARCHIVE,
        ),
        DataSet(
            key="orl",
            title="ORL / AT&T The Database of Faces",
            description="40 subjects x 10 images, 92 wide x 112 high, 8-bit PGM",
            credit=(
                "AT&T Laboratories Cambridge (Olivetti Research Laboratory); F. Samaria "
                "and A. Harter, Parameterisation of a stochastic model for human face "
                "identification, 2nd IEEE Workshop on Applications of Computer Vision, 1994"
            ),
            files=(_ORL_ARCHIVE.name,),
            download_bytes=3_792_905,
            loader="load_orl",
            image_shape=(112, 92),
            tile_shape=(56, 46),
            matrix_shape=(2576, 400),
            reader=_read_orl,
            preprocess=_preprocess.orl_matrix,
            archive=_ORL_ARCHIVE,
        ),
        DataSet(
            key="natural",
            title="Olshausen's whitened natural images (sparsenet)",
            description="10 whitened scenes, 512 x 512, big-endian float32",
            credit=(
                "B. A. Olshausen and D. J. Field, Emergence of simple-cell receptive field "
                "properties by learning a sparse code for natural images, Nature 381, "
                "1996; sparsenet, http://www.rctn.org/bruno/sparsenet/"
            ),
            files=tuple(f"natural/sparsenet-trainset/image{k}" for k in range(10)),
            download_bytes=10 * 512 * 512 * 4,
            loader="load_natural",
            image_shape=(512, 512),
            tile_shape=(12, 12),
            matrix_shape=(288, 10000),
            reader=_read_float32_images,
            preprocess=_preprocess.natural_matrix,
            seeded=True,
        ),
    ]
}
"""Every real data set, by key, in the order they are downloaded and listed."""


def download_all(gate: Gate | None = None, progressbar: bool = False) -> Path:
    """Download, verify and unpack every data set, for later offline use.

    Files already in the data folder with the right hash are not downloaded again.

    Parameters
    ----------
    gate : Gate or None
        The gate to use; nmfsc's data folder (``$NMFSC_DATA_DIR`` when set, else the OS
        cache folder) when None.
    progressbar : bool, default False
        Show download progress bars.

    Returns
    -------
    folder : pathlib.Path
        The data folder.

    See Also
    --------
    data_dir : Where the data goes.
    DataError : The error when a download fails.

    Examples
    --------
    The first call downloads the files (it needs the network); later calls
    only check the files already in the data folder, offline:

    >>> from nmfsc.datasets import data_dir, download_all
    >>> folder = download_all()
    >>> folder == data_dir(), (folder / "face.train.tar.gz").is_file()
    (True, True)
    """
    gate = resolve_gate(gate)
    check_flag(progressbar, "progressbar")
    for dataset in DATASETS.values():
        dataset.fetch(gate, progressbar)
    return gate.path
