"""The README's Python code runs as written, pasted into a file in an empty folder, and prints
what the README says it prints.

The code is read from README.md itself (every ```` ```python ```` block), never copied here, so
the test and the README cannot drift apart. A block followed by a ```` ```text ```` block (only
prose in between) must print exactly that text.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from polysql_testkit.doc_examples import Block, fenced_blocks, python_blocks

from polysql.core.paths import CACHE_ENV

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _documented_output(block: Block) -> str | None:
    """The text block right after ``block`` (prose may stand between), if there is one."""
    later = [b for b in fenced_blocks(README, ROOT) if b.line > block.line]
    if later and later[0].language == "text":
        return later[0].text
    return None


def test_the_readme_has_python_code() -> None:
    blocks = python_blocks(README, ROOT)
    assert blocks, "README.md shows no ```python block"
    assert any(_documented_output(block) is not None for block in blocks), \
        "no README Python example says what it prints"


@pytest.mark.parametrize("block", python_blocks(README, ROOT), ids=lambda b: f"README.md:{b.line}")
def test_readme_python_runs_as_written(block: Block, tmp_path: Path, docs_cache: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(block.text, encoding="utf-8")
    env = {**os.environ, CACHE_ENV: str(docs_cache)}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (f"README.md:{block.line}: the example exits "
                                  f"{done.returncode}:\n{done.stderr}")
    expected = _documented_output(block)
    if expected is not None:
        assert done.stdout == expected, (
            f"README.md:{block.line}: the example prints\n{done.stdout}\nbut the README says\n"
            f"{expected}")
    # run again in the same folder: pasting it twice must work too (the copy and load are
    # idempotent), and print the same
    again = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert again.stdout == done.stdout
