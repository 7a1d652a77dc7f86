"""The one-namespace layout: every mapped folder imports as polysql.*, and nowhere else."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAPPED = ["polysql.backends", "polysql.datasets", "polysql.normalizers", "polysql.analysis",
          "polysql.leaderboard"]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
LISTED = PYPROJECT["tool"]["setuptools"]["packages"]


def packages_on_disk() -> set[str]:
    """Every folder with an __init__.py under a mapped folder, as its import name."""
    found: set[str] = set()
    for name, folder in PYPROJECT["tool"]["setuptools"]["package-dir"].items():
        root = REPO / folder
        for init in root.rglob("__init__.py"):
            parts = init.parent.relative_to(root).parts
            found.add(".".join([name, *parts]))
    return found


def test_every_package_on_disk_is_listed_for_the_wheel() -> None:
    """setuptools does not discover sub-packages under package-dir: one left out of pyproject's
    list would be missing from the wheel although every test passes from the repository."""
    assert sorted(packages_on_disk() - set(LISTED)) == []
    assert sorted(set(LISTED) - packages_on_disk()) == []


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_mapped_packages_import_from_outside_the_repo(tmp_path: Path) -> None:
    done = run_python("import " + ", ".join(MAPPED) + "; import polysql; print(polysql.__version__)",
                      cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_our_datasets_folder_never_shadows_huggingface_datasets() -> None:
    # From the repository root the current directory comes first on sys.path, so a bare
    # `import datasets` finds our folder (whether or not HuggingFace's package is installed);
    # it must refuse with a message that says what happened and what to do.
    done = run_python("import datasets", cwd=REPO)
    assert done.returncode != 0, done.stdout
    assert "must only be imported as 'polysql.datasets'" in done.stderr
    # the proper name works from the same place
    ok = run_python("import polysql.datasets.base", cwd=REPO)
    assert ok.returncode == 0, ok.stderr


def test_built_wheel_contains_every_mapped_package_and_the_demo_data(tmp_path: Path) -> None:
    # Build from a copy: setuptools builds in-tree and would write build/ into the working tree,
    # where a second test run at the same time would trip over it.
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", "runs", ".pytest_cache", ".ruff_cache"))
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("polysql-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in LISTED:
        assert f"{package.replace('.', '/')}/__init__.py" in names, package
    assert "polysql/datasets/demo/questions.json" in names
    assert "polysql/datasets/reward/data/tasks.yaml" in names
    assert "polysql/datasets/debug/data/tasks.yaml" in names
    assert any(n.startswith("polysql/datasets/rewrite/pools/") and n.endswith("case.yaml")
               for n in names)
    assert "polysql/llm/prompts/text2sql_v1.j2" in names
    assert any(n.startswith("polysql/llm/prompts/") and n.endswith(".j2") for n in names)
    assert not any(n.startswith(("datasets/", "backends/", "tests/")) for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[polysql.backends]" in text and "sqlite = polysql.backends.sqlite:SQLiteBackend" in text

    # importing from the unpacked wheel (not the repo) finds the mapped packages there
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    code = ("import polysql.backends.base as b, polysql.datasets.base as d; "
            "print(b.__file__); print(d.__file__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(unpacked), "PATH": ""}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert all(line.startswith(str(unpacked)) for line in done.stdout.split()), done.stdout
