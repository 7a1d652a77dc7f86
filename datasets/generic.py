"""Load any benchmark written in polysql's generic layout: no loader code per benchmark.

Layout::

    PATH/questions.jsonl           one JSON object per line (blank lines are skipped)
    PATH/databases/<db_id>.sqlite  one SQLite file per database

Fields of a line (anything else is an error, so a misspelt field is never silently dropped):

    question_id      string or integer, unique in the file (required)
    db_id            the database, PATH/databases/<db_id>.sqlite (required)
    question         the natural-language question (required)
    gold_sql         the reference gold SQL, written for SQLite (required)
    gold_sql_<d>     gold SQL written natively for dialect <d> (lower-case letters and digits,
                     e.g. gold_sql_mysql, gold_sql_postgresql), run by the native-gold predictor
    evidence         hint text shown to models (optional)
    difficulty       a label such as simple / moderate / challenging (optional)
    tags             a list of strings for slicing scores (optional)

Spec: ``jsonl:PATH``, or a bare PATH holding ``questions.jsonl``. ``questions=FILE`` reads another
file under PATH, ``databases=FOLDER`` another database folder, ``name=NAME`` names the dataset
(default: the folder's name), as results and run folders are keyed by it.
"""

from __future__ import annotations

import re
from pathlib import Path

from polysql.core.errors import DatasetError
from polysql.datasets.base import GOLD_DIALECT, Question
from polysql.datasets.folder import FolderDataset, locate_databases
from polysql.datasets.options import check_options
from polysql.datasets.records import EntryReader, SeenIds, read_json_lines

QUESTION_FILE = "questions.jsonl"
DATABASE_FOLDER = "databases"
NATIVE_PREFIX = "gold_sql_"

OPTIONS = {
    "questions": f"question file under PATH (default {QUESTION_FILE})",
    "databases": f"folder under PATH holding <db_id>.sqlite files (default {DATABASE_FOLDER})",
    "name": "the dataset's name in results and run folders (default jsonl-<folder name>)",
}

FIELDS = ("question_id", "db_id", "question", "gold_sql", "evidence", "difficulty", "tags")
_DIALECT_WORD = re.compile(r"[a-z][a-z0-9]*")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _native_golds(reader: EntryReader) -> tuple[tuple[str, str], ...]:
    natives: list[tuple[str, str]] = []
    for field in reader.entry:
        if not field.startswith(NATIVE_PREFIX):
            continue
        dialect = field[len(NATIVE_PREFIX):]
        if not _DIALECT_WORD.fullmatch(dialect):
            raise reader.fail(field, f"names no dialect: write {NATIVE_PREFIX}<dialect> with the "
                              f"dialect in lower-case letters and digits")
        if dialect == GOLD_DIALECT:
            raise reader.fail(field, f"repeats the reference: gold_sql is the {GOLD_DIALECT} gold, "
                              f"so give only the other dialects as {NATIVE_PREFIX}<dialect>")
        natives.append((dialect, reader.text(field)))
    return tuple(sorted(natives))


def _check_fields(reader: EntryReader) -> None:
    for field in reader.entry:
        if field not in FIELDS and not field.startswith(NATIVE_PREFIX):
            raise reader.fail(field, f"is not a field of this layout (known: {', '.join(FIELDS)}, "
                              f"and {NATIVE_PREFIX}<dialect>); remove it or fix its spelling")


def read_generic_questions(question_file: Path) -> tuple[list[Question], list[int]]:
    """The questions of a JSON-lines file and, for each, its line number (for messages)."""
    questions: list[Question] = []
    lines: list[int] = []
    seen = SeenIds(unit="line")
    for index, (line, value) in enumerate(read_json_lines(question_file)):
        reader = EntryReader(question_file, index, value, line=line)
        _check_fields(reader)
        question_id = reader.identifier("question_id")
        seen.add(reader, "question_id", question_id, line)
        questions.append(Question(
            id=question_id,
            db_id=reader.text("db_id"),
            question=reader.text("question"),
            gold_sql=reader.text("gold_sql"),
            evidence=reader.text("evidence", required=False),
            difficulty=reader.text("difficulty", required=False) or None,
            tags=reader.text_list("tags"),
            native_golds=_native_golds(reader),
        ))
        lines.append(line)
    if not questions:
        raise DatasetError(f"{question_file}: holds no questions (expected one JSON object per "
                           f"line)")
    return questions, lines


def dataset_name(path: Path, options: dict[str, str]) -> str:
    name = options.get("name") or f"jsonl-{path.resolve().name}"
    if not _NAME.fullmatch(name):
        raise DatasetError(
            f"dataset name {name!r} is not usable as a folder name (results go to runs/<name>): "
            f"give one of letters, digits, '.', '_' and '-' with the option name=NAME"
        )
    return name


def load_generic(path: Path, options: dict[str, str]) -> FolderDataset:
    check_options(options, OPTIONS, kind="jsonl")
    question_file = path / options.get("questions", QUESTION_FILE)
    database_dir = path / options.get("databases", DATABASE_FOLDER)
    name = dataset_name(path, options)
    questions, lines = read_generic_questions(question_file)
    databases = locate_databases(questions, question_file, database_dir, flat=True,
                                 where=lambda index: f"{question_file}:{lines[index]}")
    return FolderDataset(name=name, questions=questions, question_file=question_file,
                         database_dir=database_dir, databases=databases)
