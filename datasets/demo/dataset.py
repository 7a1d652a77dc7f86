"""The bundled demo dataset: hand-written questions over the generated retail database."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from polysql.core.errors import DatasetError
from polysql.datasets.base import Dataset, Question
from polysql.datasets.demo.build import ensure_demo_database
from polysql.datasets.demo.generate import DB_ID
from polysql.datasets.records import EntryReader, read_json_list
from polysql.datasets.tags import DIFFICULTIES, check_tags

QUESTIONS_FILE = "questions.json"


def questions_path() -> Path:
    """The bundled questions file (inside the installed package)."""
    return Path(str(resources.files("polysql.datasets.demo").joinpath(QUESTIONS_FILE)))


def load_demo_questions(path: Path | None = None) -> list[Question]:
    """Parse and validate a demo-format question file (the bundled one by default)."""
    path = path if path is not None else questions_path()
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(read_json_list(path)):
        reader = EntryReader(path, index, entry)
        question_id = reader.identifier("id")
        if question_id in seen:
            raise reader.fail("id", f"repeats id {question_id!r} of entry {seen[question_id]}")
        seen[question_id] = index
        tags = reader.text_list("tags")
        if not tags:
            raise reader.fail("tags", "is empty; tag at least 'portable' or a hazard")
        check_tags(tags, where=f"{path}: entry {index} ({question_id})")
        difficulty = reader.text("difficulty", required=False) or None
        if difficulty is not None and difficulty not in DIFFICULTIES:
            raise reader.fail("difficulty", f"must be one of {', '.join(DIFFICULTIES)}, got {difficulty!r}")
        questions.append(Question(
            id=question_id,
            db_id=reader.text("db_id"),
            question=reader.text("question"),
            gold_sql=reader.text("gold_sql"),
            evidence=reader.text("evidence", required=False),
            tags=tags,
            difficulty=difficulty,
        ))
    return questions


@dataclass(slots=True)
class DemoDataset(Dataset):
    """``get_dataset("demo")``: the retail database is generated into the cache on first use."""

    cache_dir: Path | None = None

    @classmethod
    def load(cls, cache_dir: Path | None = None) -> DemoDataset:
        return cls(name="demo", questions=load_demo_questions(), cache_dir=cache_dir)

    def database_path(self, db_id: str) -> Path:
        if db_id != DB_ID:
            raise DatasetError(f"the demo dataset has one database, {DB_ID!r}; got db_id {db_id!r}")
        return ensure_demo_database(self.cache_dir)
