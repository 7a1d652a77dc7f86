"""Datasets whose databases are SQLite files in a folder.

BIRD, Spider and Archer ship one sub-folder per database (``<databases>/<db_id>/<db_id>.sqlite``);
the generic JSON-lines layout keeps them flat (``<databases>/<db_id>.sqlite``). The loaders differ
only in how they read the question file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from polysql.core.errors import DatasetError
from polysql.datasets.base import Dataset, Question


@dataclass(slots=True)
class FolderDataset(Dataset):
    """Questions over SQLite files in ``database_dir``, all checked to exist at load."""

    question_file: Path = field(default_factory=Path)
    database_dir: Path = field(default_factory=Path)
    databases: dict[str, Path] = field(default_factory=dict)

    def database_path(self, db_id: str) -> Path:
        try:
            return self.databases[db_id]
        except KeyError:
            known = ", ".join(sorted(self.databases)) or "none"
            raise DatasetError(
                f"dataset {self.name!r} has no database {db_id!r} (its databases: {known})"
            ) from None


def sqlite_file(database_dir: Path, db_id: str) -> Path:
    return database_dir / db_id / f"{db_id}.sqlite"


def flat_sqlite_file(database_dir: Path, db_id: str) -> Path:
    return database_dir / f"{db_id}.sqlite"


def locate_databases(questions: list[Question], question_file: Path, database_dir: Path, *,
                     flat: bool = False,
                     where: Callable[[int], str] | None = None) -> dict[str, Path]:
    """Map every db_id the questions use to its SQLite file, failing on the first one missing.

    ``flat`` looks for ``<db_id>.sqlite`` directly in ``database_dir`` instead of in a sub-folder
    of its own. ``questions[i]`` must come from entry ``i`` of ``question_file`` so errors can
    point at it; ``where(i)`` says where that entry is when it is not entry ``i`` of a JSON list
    (``"questions.jsonl:12"``). Only existence is checked (one stat per database), which keeps
    loading cheap.
    """
    file_of = flat_sqlite_file if flat else sqlite_file
    locate = where or (lambda index: f"{question_file}: entry {index}")
    if not database_dir.is_dir():
        raise DatasetError(
            f"database folder not found: {database_dir} (expected next to {question_file.name}, "
            f"holding {file_of(Path(), '<db_id>')} for every database)"
        )
    uses = Counter(q.db_id for q in questions)
    found: dict[str, Path] = {}
    for index, question in enumerate(questions):
        db_id = question.db_id
        if db_id in found:
            continue
        if db_id in (".", "..") or "/" in db_id or "\\" in db_id:
            raise DatasetError(
                f"{locate(index)}: field 'db_id' is {db_id!r}, which is not a plain "
                f"{'file' if flat else 'folder'} name"
            )
        path = file_of(database_dir, db_id)
        if not path.is_file():
            raise DatasetError(
                f"{locate(index)} (question {question.id}) uses database {db_id!r} "
                f"({uses[db_id]} question(s) do), but its file is missing: expected {path}"
            )
        found[db_id] = path
    return found
