"""Load BIRD (https://bird-bench.github.io/) from its release layout.

Layout (the dev release; the train release is the same with ``train``)::

    PATH/dev.json                          [{question_id, db_id, question, evidence, SQL, difficulty}]
    PATH/dev_databases/<db_id>/<db_id>.sqlite

Spec: ``bird:PATH`` or ``bird:PATH?split=train``; ``databases=FOLDER`` (relative to PATH) overrides
the database folder, e.g. for the mini-dev file ``?split=mini_dev_sqlite&databases=dev_databases``.
Question ids are BIRD's ``question_id`` (the entry's index where a split has none, as train does).
"""

from __future__ import annotations

from pathlib import Path

from polysql.datasets.base import Question
from polysql.datasets.folder import FolderDataset, locate_databases
from polysql.datasets.options import check_options
from polysql.datasets.records import EntryReader, read_json_list

OPTIONS = {
    "split": "question file PATH/<split>.json (default dev)",
    "databases": "database folder under PATH (default <split>_databases)",
}


def read_bird_questions(question_file: Path) -> list[Question]:
    questions: list[Question] = []
    first_seen: dict[str, int] = {}
    for index, entry in enumerate(read_json_list(question_file)):
        reader = EntryReader(question_file, index, entry)
        question_id = reader.identifier("question_id") if reader.has("question_id") else str(index)
        if question_id in first_seen:
            # Results are keyed by question id; a repeat would silently merge two questions.
            raise reader.fail("question_id",
                              f"repeats id {question_id!r} of entry {first_seen[question_id]}")
        first_seen[question_id] = index
        questions.append(Question(
            id=question_id,
            db_id=reader.text("db_id"),
            question=reader.text("question"),
            gold_sql=reader.text("SQL"),
            evidence=reader.text("evidence", required=False),
            difficulty=reader.text("difficulty", required=False) or None,
        ))
    return questions


def load_bird(path: Path, options: dict[str, str]) -> FolderDataset:
    check_options(options, OPTIONS, kind="bird")
    split = options.get("split", "dev")
    question_file = path / f"{split}.json"
    database_dir = path / options.get("databases", f"{split}_databases")
    questions = read_bird_questions(question_file)
    databases = locate_databases(questions, question_file, database_dir)
    return FolderDataset(name=f"bird-{split}", questions=questions, question_file=question_file,
                         database_dir=database_dir, databases=databases)
