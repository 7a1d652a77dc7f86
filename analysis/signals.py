"""The deterministic first pass of the error taxonomy: a label for every failed prediction, read
off execution signals alone (no model).

Execution errors are sorted by the engine's message, which names the problem on every engine, and
by SQLSTATE where the message says nothing recognisable; result mismatches by the shape
the comparison recorded (``details["mismatch"]``, see :mod:`polysql.normalizers.shape`), with a
fallback for records written before shapes existed.
"""

from __future__ import annotations

import re
from typing import Any

#: every label, grouped by family; the family is what reports count side by side
SIGNAL_FAMILIES: dict[str, tuple[str, ...]] = {
    "syntax": ("syntax_error", "unknown_function"),
    "schema": ("unknown_column", "unknown_table", "ambiguous_column"),
    "semantics": ("type_error", "grouping_error", "runtime_error"),
    "resource": ("timeout", "too_large"),
    "refused": ("forbidden", "engine_unavailable", "no_sql"),
    "result": ("wrong_columns", "wrong_row_count", "same_rows_different_order", "numeric_drift",
               "wrong_numbers", "wrong_values"),
}
SIGNALS: tuple[str, ...] = tuple(s for group in SIGNAL_FAMILIES.values() for s in group)
FAMILY_OF: dict[str, str] = {s: family for family, group in SIGNAL_FAMILIES.items() for s in group}

# SQLSTATE codes (PostgreSQL's are the standard's where one exists; MySQL's 42S* are its own).
_SQLSTATE: dict[str, str] = {
    "42601": "syntax_error", "42000": "syntax_error",
    "42703": "unknown_column", "42S22": "unknown_column",
    "42P01": "unknown_table", "42S02": "unknown_table",
    "42883": "unknown_function",
    "42702": "ambiguous_column", "23000": "ambiguous_column",
    "42803": "grouping_error",
    "42804": "type_error", "42846": "type_error", "22P02": "type_error", "22007": "type_error",
    "22008": "type_error", "22018": "type_error", "42725": "type_error",
}

# Messages, checked in order: the first pattern that matches decides. Covers SQLite, DuckDB,
# PostgreSQL and MySQL/MariaDB wording, so engines without SQLSTATE are sorted the same way.
_MESSAGES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(pattern, re.IGNORECASE)) for label, pattern in (
        ("ambiguous_column", r"ambiguous column|column reference .* is ambiguous|"
                             r"is ambiguous|ambiguous reference"),
        ("unknown_column", r"no such column|unknown column|column .* does not exist|"
                           r"unknown expression identifier|"
                           r"referenced column .* not found|column .* not found|"
                           r"could not find column|has no column"),
        ("unknown_table", r"no such table|table .* does(n't| not) exist|"
                          r"table with name .* does not exist|relation .* does not exist|"
                          r"unknown table|not found: table"),
        ("unknown_function", r"no such function|function .* does not exist|"
                             r"function with name .* does not exist|"
                             r"unknown function|is not a recognized built-in function|"
                             r"function not found"),
        ("grouping_error", r"must appear in the group by|not in group by|"
                           r"misuse of aggregate|aggregate functions are not allowed|"
                           r"aggregate function calls cannot be nested|isn't in group by|"
                           r"nonaggregated column"),
        ("type_error", r"no function matches|could not convert|conversion error|"
                       r"invalid input syntax|cannot be cast|operator does not exist|"
                       r"cannot compare|type mismatch|datatype mismatch|incorrect .* value"),
        ("syntax_error", r"syntax error|parser error|you have an error in your sql syntax|"
                         r"incomplete input|unrecognized token"),
    ))

_ROUTINE_DENIED = re.compile(r"execute command denied .* for routine", re.IGNORECASE)

_ERROR_KINDS: dict[str, str] = {
    "timeout": "timeout", "too_large": "too_large", "forbidden": "forbidden",
    "unavailable": "engine_unavailable",
}

_SHAPES: dict[str, str] = {
    "columns": "wrong_columns", "row_count": "wrong_row_count",
    "order": "same_rows_different_order", "numeric_drift": "numeric_drift",
    "numbers": "wrong_numbers", "values": "wrong_values",
}


def error_signal(kind: str, message: str, sqlstate: str | None) -> str:
    """The label of one execution error."""
    if kind == "forbidden" and _ROUTINE_DENIED.search(message or ""):
        # MySQL checks EXECUTE before existence: an unknown function called by the evaluation
        # login (which may execute no routine, and the copies hold none) reads as a refusal.
        return "unknown_function"
    if kind in _ERROR_KINDS:
        return _ERROR_KINDS[kind]
    # The message first: SQLSTATE classes are coarse and engines disagree on them (MySQL's 42000
    # and 23000 are catch-alls, Snowflake files an unknown function under 42601, emulators borrow
    # whatever their host engine says), while every engine names the problem in its message.
    for label, pattern in _MESSAGES:
        if pattern.search(message or ""):
            return label
    by_state = _SQLSTATE.get((sqlstate or "").upper())
    if by_state is not None:
        return by_state
    return "syntax_error" if kind == "syntax" else "runtime_error"


def mismatch_signal(record: dict[str, Any]) -> str:
    """The label of one result mismatch."""
    details = record.get("details") or {}
    shape = details.get("mismatch")
    if shape in _SHAPES:
        return _SHAPES[shape]
    # Records from before shapes were recorded: what the counts and the reason still tell.
    if details.get("rule") == "columns":
        return "wrong_columns"
    gold_rows, pred_rows = details.get("gold_rows"), details.get("pred_rows")
    if gold_rows is not None and pred_rows is not None and gold_rows != pred_rows:
        return "wrong_row_count"
    if "same rows but in a different order" in str(record.get("reason") or ""):
        return "same_rows_different_order"
    return "wrong_values"


def signal(record: dict[str, Any]) -> str | None:
    """The deterministic label of a failed record; None for a match or an invalid gold."""
    status = record.get("status")
    if status == "generation_failure":
        return "no_sql"
    if status == "exec_error":
        error = (record.get("pred") or {}).get("error") or {}
        return error_signal(str(error.get("kind") or ""), str(error.get("message") or ""),
                            error.get("sqlstate"))
    if status == "mismatch":
        return mismatch_signal(record)
    return None


def detail(record: dict[str, Any]) -> str:
    """The text a reader (or the classifier) needs next to the label."""
    error = (record.get("pred") or {}).get("error") or {}
    if record.get("status") == "exec_error" and error.get("message"):
        return str(error["message"])
    if record.get("status") == "generation_failure":
        return str(record.get("prediction_failure") or record.get("reason") or "")
    return str(record.get("reason") or "")
