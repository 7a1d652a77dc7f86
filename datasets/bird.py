"""Load BIRD (https://bird-bench.github.io/) from its release layouts.

The dev release (the train release is the same with ``train``)::

    PATH/dev.json                          [{question_id, db_id, question, evidence, SQL, difficulty}]
    PATH/dev_databases/<db_id>/<db_id>.sqlite

The mini-dev release: the same 500 questions with gold SQL written for SQLite, MySQL and
PostgreSQL, one question file per dialect (entries in the same order), ``SQL<TAB>db_id`` gold files
beside them and the dev databases::

    PATH/mini_dev_sqlite.json              the questions; its SQL is the reference gold
    PATH/mini_dev_mysql.json               the same entries, SQL written for MySQL
    PATH/mini_dev_postgresql.json          ... and for PostgreSQL
    PATH/mini_dev_<dialect>_gold.sql       one 'SQL<TAB>db_id' line per question, same order
    PATH/dev_databases/<db_id>/<db_id>.sqlite

Spec: ``bird:PATH`` reads ``dev.json``, or ``mini_dev_sqlite.json`` in a folder that has it and no
``dev.json``; ``?split=NAME`` reads ``NAME.json``. A question file named ``<prefix>sqlite.json``
brings along every ``<prefix><dialect>.json`` next to it as gold written natively for that dialect
(``Question.native_golds``, run by the ``native-gold`` predictor); ``gold_<dialect>=FILE`` options
give those files explicitly instead. ``databases=FOLDER`` (relative to PATH) overrides the
database folder. Question ids are BIRD's ``question_id`` (the entry's index where a split has none,
as train does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from polysql.core.errors import DatasetError
from polysql.datasets.base import GOLD_DIALECT, Question
from polysql.datasets.folder import FolderDataset, locate_databases
from polysql.datasets.options import check_options
from polysql.datasets.records import EntryReader, SeenIds, read_gold_lines, read_json_list

#: the prefix of the option that names a dialect's gold file (``gold_mysql=FILE``)
GOLD_OPTION = "gold_"

OPTIONS = {
    "split": "question file PATH/<split>.json (default dev, or mini_dev_sqlite in a folder that "
             "has it and no dev.json)",
    "databases": "database folder under PATH (default <split>_databases, dev_databases for the "
                 "mini-dev files)",
    f"{GOLD_OPTION}<dialect>": "a file under PATH with gold SQL written for that dialect: a "
                               "*_gold.sql file (one 'SQL<TAB>db_id' line per question) or a "
                               "question file such as mini_dev_mysql.json; giving any of these "
                               "replaces the files found next to the question file",
}

MINI_DEV_SPLIT = f"mini_dev_{GOLD_DIALECT}"
MINI_DEV_DATABASES = "dev_databases"
#: a dialect as a file or option name spells it: lower-case letters and digits
_DIALECT_WORD = re.compile(r"[a-z][a-z0-9]*")


@dataclass(frozen=True, slots=True)
class NativeGoldFile:
    """A file of gold SQL written for ``dialect``, for the questions of the reference file."""

    dialect: str
    path: Path


def read_bird_questions(question_file: Path) -> list[Question]:
    """The questions of one BIRD question file, without any native gold attached."""
    return _read_questions(question_file)[0]


def _read_questions(question_file: Path) -> tuple[list[Question], bool]:
    """The questions, and whether every entry carries its own ``question_id``."""
    questions: list[Question] = []
    seen = SeenIds()
    all_have_ids = True
    for index, entry in enumerate(read_json_list(question_file)):
        reader = EntryReader(question_file, index, entry)
        has_id = reader.has("question_id")
        all_have_ids = all_have_ids and has_id
        question_id = reader.identifier("question_id") if has_id else str(index)
        question = Question(
            id=question_id,
            db_id=reader.text("db_id"),
            question=reader.text("question"),
            gold_sql=reader.text("SQL"),
            evidence=reader.text("evidence", required=False),
            difficulty=reader.text("difficulty", required=False) or None,
        )
        earlier = seen.first(question_id)
        same = (" (an identical copy of it: delete one of the two)"
                if earlier is not None and question == questions[earlier] else "")
        seen.add(reader, "question_id", question_id, index, detail=same)
        questions.append(question)
    return questions, all_have_ids


def default_split(path: Path) -> str:
    """``dev``, or the mini-dev question file in a folder that has it and no ``dev.json``."""
    if not (path / "dev.json").is_file() and (path / f"{MINI_DEV_SPLIT}.json").is_file():
        return MINI_DEV_SPLIT
    return "dev"


def default_database_dir(path: Path, split: str) -> Path:
    # mini-dev ships the dev databases under their dev name, next to mini_dev_<dialect>.json
    if split.startswith("mini_dev") and not (path / f"{split}_databases").is_dir():
        return path / MINI_DEV_DATABASES
    return path / f"{split}_databases"


def sibling_gold_files(question_file: Path) -> list[NativeGoldFile]:
    """``<prefix><dialect>.json`` next to a question file named ``<prefix>sqlite.json``."""
    stem = question_file.stem
    prefix = stem[:-len(GOLD_DIALECT)]
    if not stem.endswith(GOLD_DIALECT) or not prefix.endswith("_"):
        return []
    found: list[NativeGoldFile] = []
    for candidate in sorted(question_file.parent.glob(f"{prefix}*.json")):
        dialect = candidate.stem[len(prefix):]
        if dialect != GOLD_DIALECT and _DIALECT_WORD.fullmatch(dialect):
            found.append(NativeGoldFile(dialect, candidate))
    return found


def gold_files_from_options(path: Path, options: dict[str, str]) -> list[NativeGoldFile]:
    """The ``gold_<dialect>=FILE`` options, each checked to name a readable kind of file."""
    found: list[NativeGoldFile] = []
    for name, value in options.items():
        if not name.startswith(GOLD_OPTION):
            continue
        dialect = name[len(GOLD_OPTION):].lower()
        if not _DIALECT_WORD.fullmatch(dialect):
            raise DatasetError(
                f"the bird dataset's option {name!r} names no dialect: write "
                f"{GOLD_OPTION}<dialect>=FILE with the dialect in letters and digits, e.g. "
                f"'{GOLD_OPTION}mysql=mini_dev_mysql_gold.sql'"
            )
        if dialect == GOLD_DIALECT:
            raise DatasetError(
                f"the bird dataset's option {name!r}: the question file's own SQL is the "
                f"{GOLD_DIALECT} gold; give gold files for the other dialects only"
            )
        if not value.strip():
            raise DatasetError(f"the bird dataset's option {name!r} is empty: give it a file")
        file = path / value
        if file.suffix not in (".sql", ".json"):
            raise DatasetError(
                f"the bird dataset's option {name!r} names {file}, which is neither a *_gold.sql "
                f"file ('SQL<TAB>db_id' per line) nor a .json question file"
            )
        if not file.is_file():
            raise DatasetError(
                f"the bird dataset's option {name!r}: file not found: {file} (paths are relative "
                f"to the dataset folder {path})"
            )
        found.append(NativeGoldFile(dialect, file))
    return found


def _shown(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _same_text(a: str, b: str) -> bool:
    # Files converted per dialect may re-wrap a question; whitespace alone is no mismatch.
    return a.split() == b.split()


def _check_lines_up(where: str, reference_file: Path, index: int, question: Question,
                    db_id: str, text: str | None) -> None:
    """DatasetError when a dialect file's entry is not the reference question it stands for."""
    what = f"{reference_file.name} entry {index} (question {question.id})"
    fix = "; both files must come from the same release and list the same questions"
    if db_id != question.db_id:
        raise DatasetError(f"{where} does not line up with {what}: its db_id is {db_id!r} where "
                           f"the question file has {question.db_id!r}{fix}")
    if text is not None and not _same_text(text, question.question):
        raise DatasetError(f"{where} does not line up with {what}: its question is {_shown(text)} "
                           f"where the question file has {_shown(question.question)}{fix}")


def _golds_from_json(gold: NativeGoldFile, reference: list[Question], by_id: bool,
                     reference_file: Path) -> list[str | None]:
    entries = read_json_list(gold.path)
    readers = [EntryReader(gold.path, index, entry) for index, entry in enumerate(entries)]
    golds: list[str | None] = [None] * len(reference)
    if by_id and all(reader.has("question_id") for reader in readers):
        position = {question.id: index for index, question in enumerate(reference)}
        seen = SeenIds()
        for reader in readers:
            question_id = reader.identifier("question_id")
            seen.add(reader, "question_id", question_id, reader.index)
            if question_id not in position:
                raise reader.fail("question_id", f"is {question_id!r}, which no entry of "
                                  f"{reference_file.name} has; the two files must hold the same "
                                  f"questions")
            index = position[question_id]
            _check_lines_up(f"{gold.path}: entry {reader.index}", reference_file, index,
                            reference[index], reader.text("db_id"), reader.text("question"))
            golds[index] = reader.text("SQL")
        return golds
    # No ids to match on: entry i is question i, which only holds if the files list the same
    # questions in the same order, so check every one of them.
    for index, (reader, question) in enumerate(zip(readers, reference, strict=False)):
        _check_lines_up(f"{gold.path}: entry {index}", reference_file, index, question,
                        reader.text("db_id"), reader.text("question"))
        golds[index] = reader.text("SQL")
    _check_counts(gold.path, "entries", len(readers), reference_file, len(reference))
    return golds


def _golds_from_lines(gold: NativeGoldFile, reference: list[Question],
                      reference_file: Path) -> list[str | None]:
    lines = read_gold_lines(gold.path)
    golds: list[str | None] = [None] * len(reference)
    for index, (line, question) in enumerate(zip(lines, reference, strict=False)):
        _check_lines_up(f"{gold.path}:{line.line}", reference_file, index, question,
                        line.db_id, None)
        golds[index] = line.sql
    _check_counts(gold.path, "lines", len(lines), reference_file, len(reference))
    return golds


def _check_counts(path: Path, unit: str, count: int, reference_file: Path, expected: int) -> None:
    if count != expected:
        raise DatasetError(
            f"{path} has {count} {unit} but {reference_file.name} has {expected} entries; they "
            f"are matched by position (the first with the first), so both must list the same "
            f"questions in the same order"
        )


def attach_native_golds(questions: list[Question], has_ids: bool, question_file: Path,
                        gold_files: list[NativeGoldFile]) -> list[Question]:
    """The questions with each gold file's SQL as gold written natively for its dialect.

    A question file's entries are matched by ``question_id`` when both files give one for every
    entry (a dialect file may then leave some questions out), by position otherwise; a gold.sql
    file always by position. Either way each pair is checked to be the same question (db_id and,
    where the file has it, the question text), and the first that is not is an error.
    """
    per_question: list[list[tuple[str, str]]] = [[] for _ in questions]
    for gold in gold_files:
        if gold.path.suffix == ".sql":
            golds = _golds_from_lines(gold, questions, question_file)
        else:
            golds = _golds_from_json(gold, questions, has_ids, question_file)
        for index, sql in enumerate(golds):
            if sql is not None:
                per_question[index].append((gold.dialect, sql))
    return [replace(question, native_golds=tuple(sorted(natives))) if natives else question
            for question, natives in zip(questions, per_question, strict=True)]


def load_bird(path: Path, options: dict[str, str]) -> FolderDataset:
    check_options({name: value for name, value in options.items()
                   if not name.startswith(GOLD_OPTION)}, OPTIONS, kind="bird")
    split = options.get("split") or default_split(path)
    question_file = path / f"{split}.json"
    database_dir = (path / options["databases"] if "databases" in options
                    else default_database_dir(path, split))
    questions, has_ids = _read_questions(question_file)
    gold_files = gold_files_from_options(path, options) or sibling_gold_files(question_file)
    questions = attach_native_golds(questions, has_ids, question_file, gold_files)
    databases = locate_databases(questions, question_file, database_dir)
    return FolderDataset(name=f"bird-{split}", questions=questions, question_file=question_file,
                         database_dir=database_dir, databases=databases)
