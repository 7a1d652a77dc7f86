"""The deterministic first pass of the error taxonomy: a label for every failed prediction, read
off execution signals alone (no model).

Execution errors are sorted by the engine's message, which names the problem on every engine, and
by SQLSTATE where the message says nothing recognisable; result mismatches by the shape
the comparison recorded (``details["mismatch"]``, see :mod:`polysql.normalizers.shape`), with a
fallback for records written before shapes existed.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from polysql.backends import catalog
from polysql.core.errors import ConfigError

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

# Messages, checked label by label in this order: the first label with a matching pattern
# decides. These are the wordings several engines share; each engine adds its own
# (EngineInfo.error_vocabulary), so engines without SQLSTATE are sorted the same way.
_SHARED_MESSAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ambiguous_column", (r"ambiguous column", r"is ambiguous")),
    ("unknown_column", (r"unknown column", r"column .* does not exist", r"column .* not found",
                        r"could not find column", r"has no column")),
    ("unknown_table", (r"table .* does(n't| not) exist", r"unknown table")),
    ("unknown_function", (r"function .* does not exist", r"unknown function",
                          r"is not a recognized built-in function")),
    ("grouping_error", (r"must appear in the group by", r"not in group by",
                        r"aggregate function calls cannot be nested")),
    ("type_error", (r"cannot be cast", r"cannot compare", r"type mismatch")),
    ("syntax_error", (r"syntax error",)),
)

_ERROR_KINDS: dict[str, str] = {
    "timeout": "timeout", "too_large": "too_large", "forbidden": "forbidden",
    "unavailable": "engine_unavailable",
}

_SHAPES: dict[str, str] = {
    "columns": "wrong_columns", "row_count": "wrong_row_count",
    "order": "same_rows_different_order", "numeric_drift": "numeric_drift",
    "numbers": "wrong_numbers", "values": "wrong_values",
}


@functools.cache
def _vocabularies() -> dict[str, tuple[str, ...]]:
    """Every installed engine's own wordings, by label (``EngineInfo.error_vocabulary``)."""
    known = [label for label, _ in _SHARED_MESSAGES]
    found: dict[str, tuple[str, ...]] = {}
    for info in catalog.infos():
        for label, pattern in info.error_vocabulary:
            if label not in known:
                raise ConfigError(f"engine {info.name!r}: error_vocabulary names the signal "
                                  f"{label!r}; use one of {', '.join(known)}")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"engine {info.name!r}: error_vocabulary pattern {pattern!r} "
                                  f"for {label} is not a regular expression: {exc}") from exc
            found[label] = (*found.get(label, ()), pattern)
    return found


def _alternatives(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)


@functools.cache
def _messages() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The shared wordings with every engine's own, one pattern per label, in label order."""
    vocabularies = _vocabularies()
    compiled = ((label, _alternatives((*shared, *vocabularies.get(label, ()))))
                for label, shared in _SHARED_MESSAGES)
    return tuple((label, pattern) for label, pattern in compiled if pattern is not None)


@functools.cache
def _engine_messages() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Only the engines' own wordings, one pattern per label, in label order."""
    vocabularies = _vocabularies()
    compiled = ((label, _alternatives(vocabularies.get(label, ()))) for label, _ in _SHARED_MESSAGES)
    return tuple((label, pattern) for label, pattern in compiled if pattern is not None)


def _by_message(message: str, patterns: tuple[tuple[str, re.Pattern[str]], ...]) -> str | None:
    return next((label for label, pattern in patterns if pattern.search(message)), None)


def error_signal(kind: str, message: str, sqlstate: str | None) -> str:
    """The label of one execution error."""
    if kind == "forbidden":
        # An engine may refuse what is really a mistake in the statement, and its own
        # vocabulary says so (MariaDB checks EXECUTE before it looks a routine up: an unknown
        # function called by the evaluation login reads as a refusal).
        label = _by_message(message or "", _engine_messages())
        if label is not None:
            return label
    if kind in _ERROR_KINDS:
        return _ERROR_KINDS[kind]
    # The message first: SQLSTATE classes are coarse and engines disagree on them (MySQL's 42000
    # and 23000 are catch-alls, Snowflake files an unknown function under 42601, emulators borrow
    # whatever their host engine says), while every engine names the problem in its message.
    label = _by_message(message or "", _messages())
    if label is not None:
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
