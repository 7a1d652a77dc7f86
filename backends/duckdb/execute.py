"""Run one screened statement on a DuckDB connection: time-limited, row-capped, classified.

The timeout is a timer that calls ``DuckDBPyConnection.interrupt()``; ``Backend.cancel`` makes the
same call.
"""

from __future__ import annotations

import threading
import time

import duckdb

from polysql.backends._common.cancel import Flight, cancelled
from polysql.backends.duckdb.errors import classify
from polysql.core.model import Result


def run_statement(conn: duckdb.DuckDBPyConnection, sql: str, *, timeout: float, max_rows: int,
                  flight: Flight, engine: str, started: float) -> Result:
    """Run ``sql`` on ``conn`` (the caller holds the connection's lock); never raises for an
    error in the statement. ``started``: when the caller began, for ``elapsed``."""
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
        cursor = conn.execute(sql)
        description = cursor.description or []
        rows = cursor.fetchmany(max_rows + 1) if description else []
    except (duckdb.Error, MemoryError, ValueError, OverflowError) as exc:
        # ValueError/OverflowError: a value the Python client cannot represent.
        if flight.cancelled.is_set():
            return cancelled(engine, time.perf_counter() - started, str(exc))
        kind = classify(exc, interrupted=fired.is_set())
        message = str(exc)
        if kind == "timeout":
            message = f"statement exceeded the {timeout:g}s timeout ({message})"
        return Result.failed(kind, message, elapsed=time.perf_counter() - started,
                             engine=engine)
    finally:
        with running:
            finished = True
        flight.disarm()
        timer.cancel()
    if flight.cancelled.is_set():
        return cancelled(engine, time.perf_counter() - started)
    truncated = len(rows) > max_rows
    return Result(columns=[d[0] for d in description], rows=rows[:max_rows],
                  types=[str(d[1]) for d in description],
                  elapsed=time.perf_counter() - started, truncated=truncated, engine=engine)
