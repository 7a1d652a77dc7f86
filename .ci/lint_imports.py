"""Check the import contracts of pyproject's ``[tool.importlinter]`` (docs/architecture.md).


import-linter builds its graph with grimp, which finds a package's modules by walking the one
folder the package is imported from. pyproject maps ``backends/``, ``datasets/``, ... into the
``polysql`` namespace from folders beside ``polysql/`` (``[tool.setuptools.package-dir]``), so
grimp would see only ``polysql/`` itself. This script lays out a temporary view the way the wheel
ships the namespace, one symlink per mapped folder, and runs ``lint-imports`` there.

Usage: ``python .ci/lint_imports.py [lint-imports options]``; the exit status is lint-imports'.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_view(view: Path) -> None:
    """Symlink every folder of ``[tool.setuptools.package-dir]`` to its place in the namespace."""
    mapping: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["package-dir"]
    # Parents before children: ``polysql`` is a real folder whose entries are links, so that
    # ``polysql.backends`` can be linked inside it.
    for package in sorted(mapping, key=lambda name: name.count(".")):
        source = ROOT / mapping[package]
        target = view.joinpath(*package.split("."))
        if "." not in package:
            target.mkdir()
            for entry in source.iterdir():
                if entry.name != "__pycache__":
                    (target / entry.name).symlink_to(entry)
        else:
            target.symlink_to(source, target_is_directory=True)


def lint_imports() -> str:
    """The ``lint-imports`` command installed beside this interpreter, else the one on PATH."""
    beside = Path(sys.executable).with_name("lint-imports")
    found = str(beside) if beside.exists() else shutil.which("lint-imports")
    if found is None:
        raise SystemExit("lint-imports is not installed: pip install -e '.[dev]'")
    return found


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="polysql-imports-") as tmp:
        view = Path(tmp)
        build_view(view)
        # lint-imports reads the contracts from ./pyproject.toml and puts the working directory
        # first on sys.path, so ``polysql`` resolves to the view
        (view / "pyproject.toml").symlink_to(ROOT / "pyproject.toml")
        return subprocess.call([lint_imports(), *argv], cwd=view)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
