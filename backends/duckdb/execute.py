"""Run one screened statement on a DuckDB connection: time-limited, row-capped, classified.

The timeout is a timer that calls ``DuckDBPyConnection.interrupt()``; ``Backend.cancel`` makes the
same call.

A large result whose every column has a type in :data:`ARROW_TYPES` is fetched as Arrow and
returned as :class:`~polysql.core.columnar.ArrowRows`: for those types Arrow's Python values are
exactly the driver's (tested type by type), and a million rows are fetched four times faster and
compared column by column without a Python object per value. The first
:data:`ARROW_AFTER_ROWS` rows are always fetched as Python rows: a result that ends there (most
do) costs what it always did, Arrow's set-up being dearer than the rows themselves; a longer one
has those rows put into Arrow with the rest. Any other result (HUGEINT comes back as Decimal
through Arrow, UUID as text, INTERVAL as MonthDayNano, infinite dates fail late...) is fetched as
Python rows whatever its length.
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from polysql.backends._common.arrow_from_python import python_array
from polysql.backends._common.cancel import Flight, cancelled
from polysql.backends.duckdb.errors import classify, file_read_refusal
from polysql.core.columnar import ArrowRows
from polysql.core.model import Result

#: DuckDB column types whose Arrow form converts to exactly the Python values fetchall() gives
ARROW_TYPES = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT",
                         "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "VARCHAR", "BLOB"})
#: rows fetched as Python rows before a result of ARROW_TYPES continues as Arrow
ARROW_AFTER_ROWS = 4_096
_ARROW_BATCH_ROWS = 65_536


def _arrow_types(description: list[Any]) -> bool:
    """Whether every column of the result has a type in ARROW_TYPES (or is a DECIMAL)."""
    return all(str(d[1]) in ARROW_TYPES or str(d[1]).startswith("DECIMAL(") for d in description)


def _fetch(cursor: duckdb.DuckDBPyConnection, description: list[Any],
           max_rows: int) -> tuple[list[Any] | ArrowRows, bool]:
    """At most ``max_rows`` rows, and whether more were there: Python rows, or Arrow for a long
    result of ARROW_TYPES."""
    if max_rows < ARROW_AFTER_ROWS or not _arrow_types(description):
        rows = cursor.fetchmany(max_rows + 1)
        return rows[:max_rows], len(rows) > max_rows
    head = cursor.fetchmany(ARROW_AFTER_ROWS)
    if len(head) < ARROW_AFTER_ROWS:
        return head, False
    return _fetch_arrow(cursor, head, max_rows)


def _fetch_arrow(cursor: duckdb.DuckDBPyConnection, head: list[tuple[Any, ...]],
                 max_rows: int) -> tuple[list[Any] | ArrowRows, bool]:
    """``head`` (rows fetched already) and the rest of the result as Arrow, at most ``max_rows``
    rows in all, and whether more were there."""
    with warnings.catch_warnings():
        # DuckDB warns that Arrow from a DB-API result costs one more copy of the rows: still
        # four times cheaper than Python rows, and the statement runs through execute() to
        # stay interruptible like every other.
        warnings.filterwarnings("ignore", message="Arrow output on a DB-API result",
                                category=UserWarning)
        reader = cursor.to_arrow_reader(_ARROW_BATCH_ROWS)
    rest: list[pa.RecordBatch] = []
    fetched = len(head)
    for batch in reader:
        rest.append(batch)
        fetched += batch.num_rows
        if fetched > max_rows:
            break
    tail = pa.Table.from_batches(rest, schema=reader.schema)
    try:
        # The head back into Arrow under the result's own schema: for ARROW_TYPES, Python
        # values and Arrow values map one to one (ints, floats of the column's width, Decimals
        # of its scale, text, bytes), so the round trip changes none.
        columns = list(zip(*head, strict=True)) or [[] for _ in reader.schema]
        first = pa.table([_head_array(values, field.type)
                          for values, field in zip(columns, reader.schema, strict=True)],
                         schema=reader.schema)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        # A value that does not go back (none is known): the rest joins the head as Python
        # rows, which for these types are the driver's own values.
        rows = head + ArrowRows(tail).materialized()
        return rows[:max_rows], fetched > max_rows
    table = pa.concat_tables([first, tail])
    return ArrowRows(table.slice(0, max_rows)), fetched > max_rows


def _head_array(values: Sequence[Any], type_: pa.DataType) -> pa.Array:
    # Built from buffers where it can be: pa.array would import pandas on the first long result.
    built = python_array(values, type_)
    return built if built is not None else pa.array(values, type=type_)


def _roll_back(conn: duckdb.DuckDBPyConnection) -> None:
    """End the transaction a screened statement ran in, undoing whatever it did; after an error
    DuckDB may have ended it already."""
    with contextlib.suppress(duckdb.TransactionException):  # none is active any more
        conn.execute("ROLLBACK")


def run_statement(conn: duckdb.DuckDBPyConnection, sql: str, *, timeout: float, max_rows: int,
                  flight: Flight, engine: str, started: float, rolled_back: bool = False) -> Result:
    """Run ``sql`` on ``conn`` (the caller holds the connection's lock); never raises for an
    error in the statement. ``started``: when the caller began, for ``elapsed``;
    ``rolled_back``: inside a transaction rolled back once the rows are read."""
    fired = threading.Event()
    running = threading.Lock()  # held while this statement may still be interrupted

    def interrupt(reason: threading.Event) -> None:
        # Under ``running`` so an interrupt that fires as the statement finishes can never
        # land on the next statement of this connection.
        with running:
            if not finished:
                reason.set()
                conn.interrupt()

    finished = False
    if not flight.arm(lambda: interrupt(flight.cancelled)):
        return cancelled(engine, time.perf_counter() - started)
    timer = threading.Timer(timeout, interrupt, args=(fired,))
    timer.daemon = True
    timer.start()
    try:
        if rolled_back:
            conn.execute("BEGIN TRANSACTION")
        cursor = conn.execute(sql)
        description = cursor.description or []
        rows, truncated = _fetch(cursor, description, max_rows) if description else ([], False)
    except (duckdb.Error, pa.ArrowException, MemoryError, ValueError, OverflowError) as exc:
        # ValueError/OverflowError: a value the Python client cannot represent; an Arrow error
        # carries DuckDB's own, raised while the rows stream.
        if flight.cancelled.is_set():
            return cancelled(engine, time.perf_counter() - started, str(exc))
        kind = classify(exc, interrupted=fired.is_set())
        message = str(exc)
        refused = file_read_refusal(exc, sql)
        if refused is not None:
            kind, message = "forbidden", refused
        if kind == "timeout":
            message = f"statement exceeded the {timeout:g}s timeout ({message})"
        return Result.failed(kind, message, elapsed=time.perf_counter() - started,
                             engine=engine)
    finally:
        with running:
            finished = True
        flight.disarm()
        timer.cancel()
        if rolled_back:
            _roll_back(conn)
    if flight.cancelled.is_set():
        return cancelled(engine, time.perf_counter() - started)
    return Result(columns=[d[0] for d in description], rows=rows,  # type: ignore[arg-type]
                  types=[str(d[1]) for d in description],
                  elapsed=time.perf_counter() - started, truncated=truncated, engine=engine)
