"""Read question files with errors that point at the file, entry and field.

Every loader goes through here so a malformed file always fails the same way: a
:class:`~polysql.core.errors.DatasetError` saying which file, which entry (0-based index in a JSON
list, or 1-based line of a JSON-lines file) and which field is wrong, and what was expected instead.
Gold files of the ``SQL<TAB>db_id`` kind (BIRD's and Spider's ``*_gold.sql``) are read here too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polysql.core.errors import DatasetError
from polysql.core.json_errors import json_problem


def read_text_file(path: Path, what: str) -> str:
    """The UTF-8 text of ``path``, the ``what`` file of a dataset ("question file", "gold SQL
    file"); DatasetError saying which when it is missing, unreadable or not UTF-8."""
    if not path.is_file():
        raise DatasetError(f"{what} not found: {path}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read {what} ({exc.strerror})") from exc


def read_json_list(path: Path) -> list[Any]:
    """The top-level JSON list in ``path``; DatasetError when it is missing, unreadable or not a list."""
    text = read_text_file(path, "question file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{path}: not valid JSON ({json_problem(exc)})"
        ) from exc
    if not isinstance(data, list):
        raise DatasetError(
            f"{path}: expected a JSON list of question objects at the top level, "
            f"got a JSON {_json_kind(data)}"
        )
    return data


def read_json_lines(path: Path) -> list[tuple[int, Any]]:
    """(line number, value) for every non-blank line of a JSON-lines file; DatasetError naming
    ``path:line`` for a line that is not JSON, or when the file is missing or unreadable."""
    text = read_text_file(path, "question file")
    values: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{path}:{number}: not valid JSON ({json_problem(exc, line=False)}); each line "
                f"must be one JSON object"
            ) from exc
    return values


def _json_kind(value: Any) -> str:
    kinds = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number",
             float: "number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


class EntryReader:
    """Typed access to the fields of entry ``index`` of question file ``path``.

    ``line`` is given for JSON-lines files, whose errors point at ``path:line`` instead of an
    entry index (a reader opens the file at that line directly).
    """

    def __init__(self, path: Path, index: int, entry: Any, *, line: int | None = None) -> None:
        self.path = path
        self.index = index
        self.where = f"{path}:{line}:" if line is not None else f"{path}: entry {index}:"
        if not isinstance(entry, dict):
            raise DatasetError(f"{self.where} expected a JSON object, got a JSON {_json_kind(entry)}")
        self.entry: dict[str, Any] = entry

    def fail(self, field: str, problem: str) -> DatasetError:
        return DatasetError(f"{self.where} field {field!r} {problem}")

    def has(self, field: str) -> bool:
        return self.entry.get(field) is not None

    def text(self, field: str, *, required: bool = True, default: str = "") -> str:
        """A string field; a missing optional field (or JSON null) gives ``default``."""
        value = self.entry.get(field)
        if value is None:
            if required:
                raise self.fail(field, "is missing (expected a non-empty string)")
            return default
        if not isinstance(value, str):
            raise self.fail(field, f"must be a string, got a JSON {_json_kind(value)}: {value!r}")
        if required and not value.strip():
            raise self.fail(field, "is empty")
        return value

    def identifier(self, field: str) -> str:
        """An id given as a string or an integer, returned as a string."""
        value = self.entry.get(field)
        if value is None:
            raise self.fail(field, "is missing (expected a string or an integer id)")
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.fail(field, f"must be a string or an integer, got a JSON {_json_kind(value)}")
        text = str(value)
        if not text.strip():
            raise self.fail(field, "is empty")
        return text

    def text_list(self, field: str) -> tuple[str, ...]:
        """A list of strings; missing means empty."""
        value = self.entry.get(field)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(field, f"must be a list of strings, got {value!r}")
        return tuple(value)


@dataclass(frozen=True, slots=True)
class GoldLine:
    """One line of a ``*_gold.sql`` file: a question's gold SQL and its database."""

    line: int  # 1-based, for messages
    sql: str
    db_id: str


def read_gold_lines(path: Path) -> list[GoldLine]:
    """The lines of a gold file, each ``SQL<TAB>db_id`` (one question per line, in question order).

    The db_id is what follows the last tab, so a tab inside the SQL is kept. Trailing blank lines
    are ignored; a blank line anywhere else is an error, because it would shift every question
    after it by one.
    """
    text = read_text_file(path, "gold SQL file")
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    gold: list[GoldLine] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise DatasetError(
                f"{path}:{number}: empty line; every line is one question's 'SQL<TAB>db_id', "
                f"in question order, so a blank line would shift the questions after it"
            )
        sql, tab, db_id = line.rpartition("\t")
        if not tab:
            raise DatasetError(f"{path}:{number}: expected 'SQL<TAB>db_id', found no tab")
        if not sql.strip():
            raise DatasetError(f"{path}:{number}: the SQL before the tab is empty")
        if not db_id.strip():
            raise DatasetError(f"{path}:{number}: the db_id after the last tab is empty")
        gold.append(GoldLine(line=number, sql=sql.strip(), db_id=db_id.strip()))
    return gold


class SeenIds:
    """The question ids met so far in one question file. Results are keyed by question id, so
    a repeated id would silently merge two questions: the second is refused, naming the first
    (by entry index, or by line for JSON-lines files)."""

    def __init__(self, unit: str = "entry") -> None:
        self.unit = unit
        self._first: dict[str, int] = {}

    def first(self, question_id: str) -> int | None:
        """Where ``question_id`` was first met, if it was."""
        return self._first.get(question_id)

    def add(self, reader: EntryReader, field: str, question_id: str, position: int, *,
            detail: str = "") -> None:
        """Record ``question_id`` at ``position``, or raise the error naming its first place."""
        earlier = self._first.setdefault(question_id, position)
        if earlier != position:
            raise reader.fail(field, f"repeats id {question_id!r} of {self.unit} {earlier}{detail}")
