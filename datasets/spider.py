"""Load Spider (https://yale-lily.github.io/spider) from its release layout.

Layout::

    PATH/dev.json                  [{db_id, question, query, ...}]
    PATH/train_spider.json         (split=train)
    PATH/test.json                 (split=test; databases in PATH/test_database when present)
    PATH/database/<db_id>/<db_id>.sqlite

Spec: ``spider:PATH`` or ``spider:PATH?split=train``; any other split name reads
``PATH/<split>.json`` (e.g. ``split=train_others``); ``databases=FOLDER`` overrides the database
folder. Question ids are the entry's index in the file (Spider has no ids of its own).
"""

from __future__ import annotations

from pathlib import Path

from polysql.datasets.base import Question
from polysql.datasets.folder import FolderDataset, locate_databases
from polysql.datasets.options import check_options
from polysql.datasets.records import EntryReader, read_json_list

OPTIONS = {
    "split": "dev (dev.json, default), train (train_spider.json), test (test.json) or NAME (NAME.json)",
    "databases": "database folder under PATH (default database, or test_database for test)",
}

SPLIT_FILES = {"dev": "dev.json", "train": "train_spider.json", "test": "test.json"}


def read_spider_questions(question_file: Path) -> list[Question]:
    questions: list[Question] = []
    for index, entry in enumerate(read_json_list(question_file)):
        reader = EntryReader(question_file, index, entry)
        questions.append(Question(
            id=str(index),
            db_id=reader.text("db_id"),
            question=reader.text("question"),
            gold_sql=reader.text("query"),
        ))
    return questions


def default_database_dir(path: Path, split: str) -> Path:
    # The Spider test release keeps its (partly different) databases in a folder of their own.
    if split == "test" and (path / "test_database").is_dir():
        return path / "test_database"
    return path / "database"


def load_spider(path: Path, options: dict[str, str]) -> FolderDataset:
    check_options(options, OPTIONS, kind="spider")
    split = options.get("split", "dev")
    question_file = path / SPLIT_FILES.get(split, f"{split}.json")
    database_dir = (path / options["databases"] if "databases" in options
                    else default_database_dir(path, split))
    questions = read_spider_questions(question_file)
    databases = locate_databases(questions, question_file, database_dir)
    return FolderDataset(name=f"spider-{split}", questions=questions, question_file=question_file,
                         database_dir=database_dir, databases=databases)
