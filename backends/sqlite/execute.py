"""Run one untrusted statement on a SQLite connection: time-limited, row-capped, classified.

The timeout is a progress handler that aborts the statement once its deadline has passed (or a
cancel arrived); ``Backend.cancel`` also calls ``Connection.interrupt``.
"""

from __future__ import annotations

import functools
import operator
import sqlite3
import time
from typing import Any

from polysql.backends._common.cancel import Flight, cancelled
from polysql.backends.sqlite.errors import classify
from polysql.core.model import Result

# SQLite calls the progress handler every this many virtual-machine instructions; small enough
# that a runaway query stops within milliseconds of its deadline, large enough to cost nothing.
_PROGRESS_INTERVAL = 10_000

# Whether a value is not NULL, as a C-level predicate: is_not(None, value).
_PRESENT = functools.partial(operator.is_not, None)

# Storage-class names reported in Result.types (SQLite has no static result types).
_STORAGE_CLASS = {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB"}


def result_types(rows: list[tuple[Any, ...]], width: int) -> list[str]:
    """Per column, the storage class of its first non-NULL value, or "" if it has none (each
    column searched by one C-level pass, which a column of NULLs runs to its end)."""
    types = []
    for index in range(width):
        value = next(filter(_PRESENT, map(operator.itemgetter(index), rows)), None)
        types.append("" if value is None
                     else _STORAGE_CLASS.get(type(value), type(value).__name__.upper()))
    return types


def run_statement(conn: sqlite3.Connection, sql: str, *, timeout: float, max_rows: int,
                  flight: Flight, engine: str) -> Result:
    """Run ``sql`` on ``conn`` (the caller holds the connection's lock and has armed
    ``flight``); never raises for an error in the statement."""
    started = time.perf_counter()
    deadline = started + timeout
    stop = flight.cancelled
    conn.set_progress_handler(lambda: int(stop.is_set() or time.perf_counter() > deadline),
                              _PROGRESS_INTERVAL)
    cursor = conn.cursor()
    try:
        cursor.execute(sql)
        columns = [d[0] for d in cursor.description or ()]
        rows = cursor.fetchmany(max_rows + 1) if cursor.description else []
    except (sqlite3.Error, MemoryError, OverflowError, ValueError) as exc:
        elapsed = time.perf_counter() - started
        if stop.is_set():
            return cancelled(engine, elapsed, str(exc))
        kind = classify(exc, deadline_passed=time.perf_counter() > deadline)
        message = str(exc)
        if kind == "timeout":
            message = f"statement exceeded the {timeout:g}s timeout ({message})"
        return Result.failed(kind, message, elapsed=elapsed, engine=engine)
    finally:
        cursor.close()
        conn.set_progress_handler(None, 0)
    if stop.is_set():
        return cancelled(engine, time.perf_counter() - started)
    truncated = len(rows) > max_rows
    rows = rows[:max_rows]
    return Result(columns=columns, rows=rows, types=result_types(rows, len(columns)),
                  elapsed=time.perf_counter() - started, truncated=truncated, engine=engine)
