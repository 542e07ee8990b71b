"""Every Python code block of the Markdown guides runs, in order, as written."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
GUIDES = ["README.md", "docs/tutorial.md", "docs/solvers.md"]


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("name", GUIDES)
def test_code_blocks_run(name, tmp_path, monkeypatch):
    path = ROOT / name
    blocks = python_blocks(path)
    assert blocks, f"{path} has no python code blocks"
    monkeypatch.chdir(tmp_path)  # the guides write their outputs to the working folder
    namespace = {"__name__": f"docs_{path.stem}"}
    for k, block in enumerate(blocks):
        exec(compile(block, f"{name}, python block {k}", "exec"), namespace)
