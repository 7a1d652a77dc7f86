"""Run one untrusted statement on a PostgreSQL connection: read-only, time-limited, row-capped.

Every statement runs inside ``BEGIN READ ONLY`` with ``SET LOCAL statement_timeout`` and is
always rolled back. A client-side timer is the backstop for a server that does not stop the
statement itself: it sends a cancel request and the result is recorded as a timeout.

Queries (SELECT, WITH, VALUES, TABLE) are read through a server-side cursor in chunks, so a huge
result never reaches the client beyond ``max_rows + 1`` rows. Anything else is sent as one
extended-protocol message, which the server refuses if it holds more than one statement.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from typing import Any

import psycopg

from polysql.backends._common.cancel import Flight, cancelled
from polysql.backends.postgres.connect import restore_settings
from polysql.backends.postgres.errors import QUERY_CANCELED, classify, message_of
from polysql.core.model import Result

# Rows per FETCH from the server-side cursor.
FETCH_CHUNK = 10_000
# Extra seconds the server gets to enforce the timeout before the client cancels.
BACKSTOP_GRACE = 0.5
CURSOR_NAME = "polysql_result"

_LEADING_NOISE = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/|\()*", re.S)
_QUERY_KEYWORDS = ("select", "with", "values", "table")


def is_query(sql: str) -> bool:
    """Whether ``sql`` starts (after comments and parentheses) with a query keyword."""
    rest = sql[_LEADING_NOISE.match(sql).end():]  # type: ignore[union-attr]
    word = re.match(r"[A-Za-z]+", rest)
    return word is not None and word.group(0).lower() in _QUERY_KEYWORDS


def _timeout_ms(seconds: float) -> int:
    # statement_timeout = 0 means "no limit": never round a small positive timeout down to it
    return max(1, round(seconds * 1000))


def run_statement(conn: psycopg.Connection, sql: str, *, timeout: float, max_rows: int,
                  server_timeout: bool = True, engine: str = "postgres",
                  flight: Flight | None = None, search_path: str | None = None) -> Result:
    """Run ``sql`` once on ``conn`` (autocommit mode, idle) and roll back whatever it did.

    ``server_timeout=False`` leaves the server without a statement timeout so tests can prove the
    client backstop works on its own; evaluation always keeps it on. ``flight``: how
    ``Backend.cancel`` reaches the statement; it sends the backstop's cancel request, and the
    connection of a cancelled statement is closed rather than reused. ``search_path``: the
    statement's search path (a trusted constant, never user input), for this transaction only.
    """
    started = time.perf_counter()
    cancelled_by_timer = threading.Event()

    def send_cancel() -> None:
        # an unreachable server makes the blocked call fail with a connection error anyway
        with contextlib.suppress(psycopg.Error):
            conn.cancel_safe(timeout=5.0)

    def backstop() -> None:
        cancelled_by_timer.set()
        send_cancel()

    if flight is not None and not flight.arm(send_cancel):
        return cancelled(engine, time.perf_counter() - started)
    delay = timeout + BACKSTOP_GRACE if server_timeout else timeout
    timer = threading.Timer(delay, backstop)
    timer.daemon = True
    try:
        conn.execute("BEGIN TRANSACTION READ ONLY")
        limit = _timeout_ms(timeout) if server_timeout else 0
        conn.execute(f"SET LOCAL statement_timeout = {limit}")
        if search_path is not None:
            conn.execute(f"SET LOCAL search_path = {search_path}")
        timer.start()
        columns, types, rows = (_fetch_query(conn, sql, max_rows) if is_query(sql)
                                else _fetch_other(conn, sql, max_rows))
    except (psycopg.Error, MemoryError, ValueError, OverflowError, NotImplementedError) as exc:
        # ValueError/OverflowError: a value the driver cannot turn into a Python object;
        # NotImplementedError: one in a format it does not read (an IntervalStyle other than
        # 'postgres', set by a URL's own options over polysql's)
        if flight is not None and flight.cancelled.is_set():
            return cancelled(engine, time.perf_counter() - started, message_of(exc))
        kind, sqlstate = classify(exc)
        message = message_of(exc)
        elapsed = time.perf_counter() - started
        if sqlstate == QUERY_CANCELED and not cancelled_by_timer.is_set() and elapsed < timeout:
            # Cancelled before the server's statement_timeout could fire and not by our
            # backstop: another session (or the statement itself) asked for it. Not a timeout;
            # only the engine can say why, as MySQL's KILL QUERY from elsewhere.
            kind = "runtime"
            message = f"{message} (cancelled before the {timeout:g}s timeout, not by polysql)"
        elif kind == "timeout" or cancelled_by_timer.is_set():
            kind = "timeout"
            who = ("cancelled by the client" if cancelled_by_timer.is_set()
                   else "stopped by the server")
            message = f"statement exceeded the {timeout:g}s timeout ({who}: {message})"
        return Result.failed(kind, message, sqlstate=sqlstate, elapsed=elapsed, engine=engine)
    finally:
        if flight is not None:
            flight.disarm()
        timer.cancel()
        if timer.is_alive():
            # A cancel request already on its way must land before the connection goes back to
            # the pool, or it could stop the next caller's statement instead of this one.
            timer.join()
        if flight is not None and flight.cancelled.is_set():
            # a cancel request the server has not acted on yet must not stop the next caller's
            # statement: the pool replaces a closed connection
            with contextlib.suppress(psycopg.Error):
                conn.close()
        else:
            _roll_back(conn)
    if flight is not None and flight.cancelled.is_set():
        return cancelled(engine, time.perf_counter() - started)
    truncated = len(rows) > max_rows
    return Result(columns=columns, rows=rows[:max_rows], types=types,
                  elapsed=time.perf_counter() - started, truncated=truncated, engine=engine)


def _describe(cursor: psycopg.Cursor[Any]) -> tuple[list[str], list[str]]:
    description = cursor.description or []
    return [c.name for c in description], [c.type_display for c in description]


def _fetch_query(conn: psycopg.Connection, sql: str,
                 max_rows: int) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
    # WITHOUT HOLD: the cursor dies with the transaction, which is always rolled back.
    with conn.cursor(name=CURSOR_NAME, withhold=False) as cursor:
        cursor.execute(sql)
        columns, types = _describe(cursor)
        rows: list[tuple[Any, ...]] = []
        wanted = max_rows + 1
        while len(rows) < wanted:
            chunk = cursor.fetchmany(min(FETCH_CHUNK, wanted - len(rows)))
            rows.extend(chunk)
            if not chunk:
                break
    return columns, types, rows


def _fetch_other(conn: psycopg.Connection,
                 sql: str, max_rows: int) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
    cursor = conn.cursor()
    try:
        # binary=True forces the extended protocol, where the server accepts one statement only.
        cursor.execute(sql, binary=True)
        columns, types = _describe(cursor)
        rows = cursor.fetchmany(max_rows + 1) if cursor.description else []
    finally:
        cursor.close()
    return columns, types, rows


def _roll_back(conn: psycopg.Connection) -> None:
    """End whatever the statement left open; a broken connection is dropped by the pool."""
    if conn.closed or conn.broken:
        return
    try:
        conn.execute("ROLLBACK")
        # Session state that survives a rollback (advisory locks, prepared statements, LISTEN)
        # must not leak into the next query on this pooled connection.
        conn.execute("DISCARD ALL")
        restore_settings(conn)  # what the user's environment would have put back
    except psycopg.Error:
        # already unusable; the pool discards closed connections
        with contextlib.suppress(psycopg.Error):
            conn.close()
