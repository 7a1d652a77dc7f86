"""Render values and rows for verdict reasons: short, unambiguous, SQL-flavoured (NULL, 'text'),
and choose which row a reason shows as its example.

The example must not depend on the order rows arrived in: an engine may return an unordered
result in any order (parallel aggregation, hash partitions), and the comparison's leftover rows
are listed by position. :func:`example_position` picks the smallest row under
:func:`value_order`, a total order over every value type, so the same two results give the
same reason in every run and every process.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date, datetime, time
from decimal import Decimal
from itertools import compress
from typing import Any

from polysql.core.columnar import values_at

NoneType = type(None)
MAX_VALUE_CHARS = 60
MAX_ROW_CHARS = 160

# Ranks of value kinds in :func:`value_order`: NULL first, then numbers, NaN, text, bytes, dates
# and times, anything else.
_NULL, _NUMBER, _NAN, _TEXT, _BYTES, _TEMPORAL, _OTHER = range(7)
# Column types whose own ordering is value_order's within the column (no NaN, no time zones):
# the least of them is found in C.
_NATIVE_ORDER: frozenset[type] = frozenset({int, float, Decimal, str, bytes, date})


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


def value_order(value: Any) -> tuple[Any, ...]:
    """A sort key that orders any mix of values totally and the same way in every process:
    NULL, then numbers by value (int, float, Decimal and bool together), NaN, text, bytes,
    dates and times (by their ISO text: aware and naive ones never raise), anything else by type
    name and repr. Values of equal rank and value are ordered by type name and repr, so two keys
    are equal only when the values are written the same way."""
    if value is None:
        return (_NULL, 0, "", "")
    if isinstance(value, bytearray | memoryview):
        value = bytes(value)
    if isinstance(value, int | float | Decimal):
        if _is_nan(value):  # NaN refuses ordered comparison
            return (_NAN, 0, type(value).__name__, repr(value))
        return (_NUMBER, value, type(value).__name__, repr(value))
    if isinstance(value, str):
        return (_TEXT, value, "", "")
    if isinstance(value, bytes):
        return (_BYTES, value, "", "")
    if isinstance(value, date | time):
        return (_TEMPORAL, value.isoformat(), type(value).__name__, repr(value))
    kind = type(value)
    return (_OTHER, f"{kind.__module__}.{kind.__qualname__}", "", repr(value))


def _least(column: Sequence[Any], candidates: list[int]) -> list[int]:
    """The candidates whose value in ``column`` is least under :func:`value_order`."""
    values = values_at(column, candidates)
    kinds = set(map(type, values))
    if NoneType in kinds:  # NULL comes first, and every NULL is written the same
        return list(compress(candidates, map(NoneType.__instancecheck__, values)))
    if len(kinds) == 1 and kinds <= _NATIVE_ORDER and not _has_nan(values):
        # One plain type: its own order agrees with value_order, so C finds the least; equal
        # values written differently (0.0 and -0.0, Decimal 1.0 and 1.00) are settled below.
        least = min(values)
        candidates = list(compress(candidates, map(least.__eq__, values)))
        if len(candidates) == 1:
            return candidates
        values = values_at(column, candidates)
    keys = list(map(value_order, values))
    least_key = min(keys)
    return [i for i, key in zip(candidates, keys, strict=True) if key == least_key]


def _is_nan(value: int | float | Decimal) -> bool:
    if isinstance(value, Decimal):
        return value.is_nan()  # also a signalling NaN, which raises on any comparison
    return isinstance(value, float) and math.isnan(value)


def _has_nan(values: list[Any]) -> bool:
    first = values[0] if values else None
    if isinstance(first, float):
        return any(map(math.isnan, values))
    if isinstance(first, Decimal):
        return any(map(Decimal.is_nan, values))
    return False


def example_position(columns: Sequence[Sequence[Any]], positions: Sequence[int]) -> int:
    """Of the rows at ``positions`` (``columns`` holds the values column by column), the one a
    reason shows: the smallest under :func:`value_order`, column by column. Rows that tie in
    every column are written identically, so which of them is returned does not show."""
    if not positions:
        raise ValueError("no rows to choose an example from")
    candidates = list(positions)
    for column in columns:
        if len(candidates) == 1:
            break
        candidates = _least(column, candidates)
    return min(candidates)


def format_row(row: Sequence[Any]) -> str:
    return _clip("(" + ", ".join(format_value(v) for v in row) + ")", MAX_ROW_CHARS)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def row_span(first: int, last: int) -> str:
    """Human row numbers are 1-based."""
    return f"row {first + 1}" if first == last else f"rows {first + 1}-{last + 1}"
