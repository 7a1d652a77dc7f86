"""Load Archer (https://sig4kg.github.io/archer-bench/) from its release layout.

Archer asks arithmetic, commonsense and hypothetical questions over 20 databases taken from
Spider, and ships them the Spider way: a JSON list per split and one folder per database::

    PATH/dev.json                  [{db_id, question, query or sql, ...}]
    PATH/train.json                (split=train)
    PATH/database/<db_id>/<db_id>.sqlite

What is read of an entry: ``db_id``, ``question``, the gold SQL from ``query`` (Spider's key) or,
when an entry has no ``query`` text, from ``sql`` (a ``sql`` that is Spider's parsed-SQL object
rather than text is not gold SQL and is ignored); ``question_id`` or ``id`` as the question id when
present (else the entry's index); ``evidence`` or, failing that, ``knowledge`` (the commonsense
knowledge some questions come with) as the evidence shown to models. Other fields are ignored.

Spec: ``archer:PATH`` (dev) or ``archer:PATH?split=train``; ``split=NAME`` reads ``PATH/NAME.json``,
``questions=FILE`` (relative to PATH) any other question file, ``databases=FOLDER`` overrides the
database folder. Archer's folder looks like Spider's, so a bare PATH is read as Spider: name the
kind (``archer:PATH``).
"""

from __future__ import annotations

from pathlib import Path

from polysql.core.errors import DatasetError
from polysql.datasets.base import Question
from polysql.datasets.folder import FolderDataset, locate_databases
from polysql.datasets.options import check_options
from polysql.datasets.records import EntryReader, SeenIds, read_json_list

OPTIONS = {
    "split": "question file PATH/<split>.json (default dev; train for the training questions)",
    "questions": "any other question file, relative to PATH (the dataset is named after it)",
    "databases": "database folder under PATH (default database)",
}

#: where an entry's gold SQL may be, in the order tried
GOLD_KEYS = ("query", "sql")
ID_KEYS = ("question_id", "id")
EVIDENCE_KEYS = ("evidence", "knowledge")


def _gold_sql(reader: EntryReader) -> str:
    for key in GOLD_KEYS:
        if isinstance(reader.entry.get(key), str):
            return reader.text(key)
    if any(reader.has(key) for key in GOLD_KEYS):
        shown = ", ".join(f"{key!r}" for key in GOLD_KEYS if reader.has(key))
        raise reader.fail(GOLD_KEYS[0], f"is not gold SQL text (the entry has {shown}, but none "
                          f"of them is a string of SQL)")
    raise reader.fail(GOLD_KEYS[0], f"is missing, and so is {GOLD_KEYS[1]!r} (expected the gold "
                      f"SQL as a string in one of them)")


def _question_id(reader: EntryReader) -> str:
    key = next((key for key in ID_KEYS if reader.has(key)), None)
    return reader.identifier(key) if key is not None else str(reader.index)


def _evidence(reader: EntryReader) -> str:
    key = next((key for key in EVIDENCE_KEYS if reader.has(key)), EVIDENCE_KEYS[0])
    return reader.text(key, required=False)


def read_archer_questions(question_file: Path) -> list[Question]:
    questions: list[Question] = []
    seen = SeenIds()
    for index, entry in enumerate(read_json_list(question_file)):
        reader = EntryReader(question_file, index, entry)
        question_id = _question_id(reader)
        seen.add(reader, next((k for k in ID_KEYS if reader.has(k)), "id"), question_id, index)
        questions.append(Question(
            id=question_id,
            db_id=reader.text("db_id"),
            question=reader.text("question"),
            gold_sql=_gold_sql(reader),
            evidence=_evidence(reader),
        ))
    return questions


def load_archer(path: Path, options: dict[str, str]) -> FolderDataset:
    check_options(options, OPTIONS, kind="archer")
    if "questions" in options and "split" in options:
        raise DatasetError("the archer dataset takes either 'split' or 'questions', not both: "
                           "'questions' names the question file itself")
    if "questions" in options:
        question_file = path / options["questions"]
        name = question_file.stem
    else:
        name = options.get("split", "dev")
        question_file = path / f"{name}.json"
    database_dir = path / options.get("databases", "database")
    questions = read_archer_questions(question_file)
    databases = locate_databases(questions, question_file, database_dir)
    return FolderDataset(name=f"archer-{name}", questions=questions, question_file=question_file,
                         database_dir=database_dir, databases=databases)
