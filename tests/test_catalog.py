"""The table of data sets (nmfsc.datasets.catalog) agrees with the registry, the
package's loaders, the docs and reproduce/: adding an entry is checked everywhere."""

import re
from pathlib import Path

import numpy as np
import pytest

from nmfsc import datasets
from nmfsc.datasets import _fetchers
from nmfsc.datasets.catalog import DATASETS

ROOT = Path(__file__).resolve().parent.parent
DOCS = (ROOT / "docs" / "datasets.md").read_text(encoding="utf-8")


def test_every_registry_file_belongs_to_one_entry():
    registry = _fetchers.parse_registry(_fetchers.registry_text())
    files = [name for dataset in DATASETS.values() for name in dataset.files]
    assert sorted(files) == sorted(registry.entries)  # each file in exactly one entry
    assert set(registry.origins) == set(DATASETS)
    for key, dataset in DATASETS.items():
        assert dataset.key == key
        if dataset.archive is not None:
            assert dataset.archive.name in dataset.files


@pytest.mark.parametrize("key", list(DATASETS))
def test_each_entry_has_its_public_loader(key):
    dataset = DATASETS[key]
    assert dataset.loader in datasets.__all__
    assert callable(getattr(datasets, dataset.loader))
    rows, cols = dataset.matrix_shape
    pixels = dataset.tile_shape[0] * dataset.tile_shape[1]
    assert rows in (pixels, 2 * pixels)  # one tile per column, or ON and OFF halves


@pytest.mark.parametrize("key", list(DATASETS))
def test_docs_name_each_data_set(key):
    """docs/datasets.md has a row of the table for it: loader, V's shape, download
    size; and its files (or the folder an archive is unpacked into) in the layout."""
    dataset = DATASETS[key]
    rows, cols = dataset.matrix_shape
    row = re.search(rf"^\|[^|\n]+\| `{dataset.loader}\(\)` \|[^\n]*$", DOCS, flags=re.M)
    assert row, f"docs/datasets.md has no table row for `{dataset.loader}()`"
    assert f"| {rows} x {cols} |" in row.group(0)
    assert f"| {dataset.download_bytes / 1e6:.1f} MB |" in row.group(0)
    assert dataset.files[0] in DOCS
    if dataset.archive is not None:
        assert f"{dataset.archive.extract_dir}/" in DOCS


def test_reproduce_reads_the_table():
    from reproduce._harness import IMAGE_SHAPES
    from reproduce.experiments import EXPERIMENTS

    assert IMAGE_SHAPES == {key: dataset.tile_shape for key, dataset in DATASETS.items()}
    assert {experiment.dataset for experiment in EXPERIMENTS.values()} <= set(DATASETS)


@pytest.mark.realdata
@pytest.mark.parametrize("key", list(DATASETS))
def test_entry_shapes_are_what_the_loaders_return(key):
    dataset = DATASETS[key]
    images = dataset.images()
    assert images.shape[1:] == dataset.image_shape
    options = {"random_state": 0} if dataset.seeded else {}
    V = dataset.load(**options)
    assert V.shape == dataset.matrix_shape
    np.testing.assert_array_equal(V, getattr(datasets, dataset.loader)(**options))
