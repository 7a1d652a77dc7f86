"""Read question files (JSON lists of objects) with errors that point at the file, entry and field.

Every loader goes through here so a malformed file always fails the same way: a
:class:`~polysql.core.errors.DatasetError` saying which file, which entry (0-based index in the list)
and which field is wrong, and what was expected instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from polysql.core.errors import DatasetError


def read_json_list(path: Path) -> list[Any]:
    """The top-level JSON list in ``path``; DatasetError when it is missing, unreadable or not a list."""
    if not path.is_file():
        raise DatasetError(f"question file not found: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from exc
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read question file ({exc.strerror})") from exc
    if not isinstance(data, list):
        raise DatasetError(
            f"{path}: expected a JSON list of question objects at the top level, "
            f"got a JSON {_json_kind(data)}"
        )
    return data


def _json_kind(value: Any) -> str:
    kinds = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number",
             float: "number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


class EntryReader:
    """Typed access to the fields of entry ``index`` of question file ``path``."""

    def __init__(self, path: Path, index: int, entry: Any) -> None:
        self.path = path
        self.index = index
        if not isinstance(entry, dict):
            raise DatasetError(
                f"{path}: entry {index}: expected a JSON object, got a JSON {_json_kind(entry)}"
            )
        self.entry: dict[str, Any] = entry

    def fail(self, field: str, problem: str) -> DatasetError:
        return DatasetError(f"{self.path}: entry {self.index}: field {field!r} {problem}")

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
