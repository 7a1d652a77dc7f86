"""Render values and rows for verdict reasons: short, unambiguous, SQL-flavoured (NULL, 'text')."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

MAX_VALUE_CHARS = 60
MAX_ROW_CHARS = 160


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_value(value: Any) -> str:
    """One value as a reader would write it: NULL, 12.5, 'text', 2020-01-02, b'..'."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return _clip(repr(value), MAX_VALUE_CHARS)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, bytearray | memoryview):
        value = bytes(value)
    return _clip(repr(value), MAX_VALUE_CHARS)


def format_row(row: Sequence[Any]) -> str:
    return _clip("(" + ", ".join(format_value(v) for v in row) + ")", MAX_ROW_CHARS)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def row_span(first: int, last: int) -> str:
    """Human row numbers are 1-based."""
    return f"row {first + 1}" if first == last else f"rows {first + 1}-{last + 1}"
