"""The bundled demo dataset: hand-written questions over the generated retail database."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from polysql.core.errors import DatasetError
from polysql.datasets.base import GOLD_DIALECT, Dataset, Question
from polysql.datasets.demo.build import ensure_demo_database
from polysql.datasets.demo.generate import DB_ID
from polysql.datasets.records import EntryReader, SeenIds, read_json_list
from polysql.datasets.tags import DIFFICULTIES, check_tags

QUESTIONS_FILE = "questions.json"

#: A question's optional object of gold SQL written natively for other dialects: keys are
#: dialect names in lower case, as benchmarks spell them (``postgresql``, as BIRD mini-dev's
#: ``mini_dev_postgresql.json`` does). Which engine a key means is the sweep's business (the
#: native-gold predictor finds each engine's entry under every name of its backend and warns
#: about keys no engine answers to); here a key only has to be such a name.
NATIVE_GOLD_FIELD = "native_gold"
_DIALECT_KEY = re.compile(r"[a-z][a-z0-9_]*")


def questions_path() -> Path:
    """The bundled questions file (inside the installed package)."""
    return Path(str(resources.files("polysql.datasets.demo").joinpath(QUESTIONS_FILE)))


def load_demo_questions(path: Path | None = None) -> list[Question]:
    """Parse and validate a demo-format question file (the bundled one by default)."""
    path = path if path is not None else questions_path()
    questions: list[Question] = []
    seen = SeenIds()
    for index, entry in enumerate(read_json_list(path)):
        reader = EntryReader(path, index, entry)
        question_id = reader.identifier("id")
        seen.add(reader, "id", question_id, index)
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
            native_golds=read_native_golds(path, index, question_id, reader.entry),
        ))
    return questions


def read_native_golds(path: Path, index: int, question_id: str,
                      entry: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The entry's optional ``native_gold`` object as (dialect, SQL) pairs, in file order.

    Every problem is a DatasetError naming the file, the entry and the question id: a typo in a
    dialect key would otherwise leave that engine without its gold and surface only as
    ``missing_prediction`` rows in a sweep."""
    value = entry.get(NATIVE_GOLD_FIELD)
    if value is None:
        return ()
    where = f"{path}: entry {index} ({question_id}): field {NATIVE_GOLD_FIELD!r}"
    known = "dialect names in lower case"
    if not isinstance(value, dict):
        raise DatasetError(f"{where} must be an object mapping a dialect ({known}) to its gold "
                           f"SQL, got {json.dumps(value, ensure_ascii=False)}")
    if not value:
        raise DatasetError(f"{where} is empty; give gold SQL for at least one of {known}, or "
                           "leave the field out")
    golds: list[tuple[str, str]] = []
    for dialect, sql in value.items():
        if dialect == GOLD_DIALECT:
            raise DatasetError(f"{where} has key {dialect!r}, the dialect of 'gold_sql' itself; "
                               f"native golds are for the other dialects ({known})")
        if not _DIALECT_KEY.fullmatch(dialect):
            hint = (f"write it in lower case, {dialect.lower()!r}"
                    if _DIALECT_KEY.fullmatch(dialect.lower()) else "use a dialect name")
            raise DatasetError(f"{where} has key {dialect!r}, which is not a dialect name; {hint}")
        if not isinstance(sql, str):
            raise DatasetError(f"{where}: the {dialect!r} gold must be a string of SQL, got "
                               f"{json.dumps(sql, ensure_ascii=False)}")
        if not sql.strip():
            raise DatasetError(f"{where}: the {dialect!r} gold is empty; write its SQL or "
                               "remove the key")
        golds.append((dialect, sql))
    return tuple(golds)


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
