"""Run one screened statement on a Snowflake connection: time-limited and row-capped.

Three layers stop a statement that runs too long:

1. the server: ``STATEMENT_TIMEOUT_IN_SECONDS`` is set on the session (rounded up to whole seconds;
   the emulator does not implement it, which is remembered per connection);
2. the connector: ``cursor.execute(timeout=...)`` sends an abort request for the statement when the
   timeout passes (fakesnow acknowledges the abort and does nothing);
3. the client backstop: the statement runs in a worker thread; if it has not finished shortly
   after the timeout, the caller gets a ``timeout`` result at once and the connection is
   abandoned -- the worker closes it when the statement finally returns.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import snowflake.connector.errors as sf_errors
from snowflake.connector import SnowflakeConnection
from snowflake.connector.constants import FIELD_ID_TO_NAME

from polysql.backends._common.cancel import Flight, cancelled
from polysql.backends.snowflake.connect import quietly_close
from polysql.backends.snowflake.errors import classify, message_of
from polysql.backends.snowflake.types import result_type_name
from polysql.core.model import Result

# Seconds the server and the connector get to stop the statement before the backstop gives up.
BACKSTOP_GRACE = 1.0
# STATEMENT_TIMEOUT_IN_SECONDS set on each live connection's session; None: not implemented there.
_SESSION_TIMEOUT: weakref.WeakKeyDictionary[SnowflakeConnection, int | None] = \
    weakref.WeakKeyDictionary()
_SESSION_LOCK = threading.Lock()


@dataclass(slots=True)
class Outcome:
    """A statement's result, whether the connection was abandoned (still busy; the statement's
    worker closes it) and whether it is broken (the connection itself failed)."""

    result: Result
    abandoned: bool = False
    broken: bool = False


@dataclass(slots=True)
class _Run:
    """What the worker thread hands back."""

    columns: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)
    abandoned: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    cursor: Any = None  # the statement's cursor once it exists, for an abort from outside

    def abort(self, sql: str) -> None:
        """What the connector does when ``execute(timeout=...)`` runs out: an abort request for
        the statement (its request id and text). Before the statement is sent it does nothing,
        which is why a cancel repeats it."""
        cursor = self.cursor
        if cursor is not None:
            # the connector's private timeout path (name-mangled; no public call sends it)
            cursor._SnowflakeCursor__cancel_query(sql)


def _plain(value: Any) -> Any:
    # BINARY comes back as bytearray; results carry immutable bytes
    return bytes(value) if isinstance(value, bytearray) else value


def _set_statement_timeout(conn: SnowflakeConnection, seconds: int, *, no_retry: bool) -> None:
    """Set the session's server-side statement timeout when it differs from what is set."""
    with _SESSION_LOCK:
        current = _SESSION_TIMEOUT.get(conn, 0)
    if current is None or current == seconds:
        return
    cursor = conn.cursor()
    try:
        cursor.execute(f"ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = {seconds}",
                       _no_retry=no_retry)
        remembered: int | None = seconds
    except sf_errors.ProgrammingError as exc:
        if exc.errno != 9999:  # only "not implemented" (the emulator) is remembered as n/a
            raise
        remembered = None
    finally:
        cursor.close()
    with _SESSION_LOCK:
        _SESSION_TIMEOUT[conn] = remembered


def _work(conn: SnowflakeConnection, sql: str, run: _Run, *, timeout: float, max_rows: int,
          server_timeout: bool, no_retry: bool) -> None:
    try:
        if server_timeout:
            _set_statement_timeout(conn, max(1, math.ceil(timeout)), no_retry=no_retry)
        cursor = conn.cursor()
        run.cursor = cursor
        try:
            # timeout=: the connector sends an abort request when it runs out (None: never)
            cursor.execute(sql, timeout=timeout if server_timeout else None, _no_retry=no_retry)
            description = cursor.description or []
            run.columns = [d.name for d in description]
            run.types = [result_type_name(FIELD_ID_TO_NAME.get(d.type_code, str(d.type_code)),
                                          d.precision, d.scale) for d in description]
            fetched = cursor.fetchmany(max_rows + 1) if description else []
            run.rows = [tuple(_plain(v) for v in row) for row in fetched]
        finally:
            cursor.close()
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a Result
        run.error = exc
    finally:
        with run.lock:
            run.done.set()
            abandoned = run.abandoned
        if abandoned:
            quietly_close(conn)


def run_statement(conn: SnowflakeConnection, sql: str, *, timeout: float, max_rows: int,
                  engine: str, emulated: bool, server_timeout: bool = True,
                  flight: Flight | None = None) -> Outcome:
    """Run ``sql`` on ``conn`` and read at most ``max_rows + 1`` rows. Never raises for the
    statement's own failure. ``server_timeout=False`` sets no session timeout and sends no abort,
    so tests can prove the client backstop holds on its own. ``flight``: how ``Backend.cancel``
    reaches the statement -- the connector's abort, then the backstop's abandon; the connection
    of a cancelled statement is not reused."""
    started = time.perf_counter()
    run = _Run()
    if flight is not None:
        if not flight.arm(lambda: run.abort(sql)):
            return Outcome(cancelled(engine, time.perf_counter() - started))
        try:
            return _run(conn, sql, run, started, timeout=timeout, max_rows=max_rows,
                        engine=engine, emulated=emulated, server_timeout=server_timeout,
                        flight=flight)
        finally:
            flight.disarm()
    return _run(conn, sql, run, started, timeout=timeout, max_rows=max_rows, engine=engine,
                emulated=emulated, server_timeout=server_timeout, flight=None)


def _run(conn: SnowflakeConnection, sql: str, run: _Run, started: float, *, timeout: float,
         max_rows: int, engine: str, emulated: bool, server_timeout: bool,
         flight: Flight | None) -> Outcome:
    worker = threading.Thread(
        target=_work, args=(conn, sql, run),
        kwargs={"timeout": timeout, "max_rows": max_rows, "server_timeout": server_timeout,
                # the emulator answers HTTP 500 for statements it cannot handle; retrying them
                # (as the connector does for a real service) would only repeat the failure
                "no_retry": emulated},
        name="polysql-snowflake-statement", daemon=True)
    worker.start()
    if flight is None:
        finished = run.done.wait(timeout + BACKSTOP_GRACE)
    else:
        finished = flight.wait(run.done, timeout + BACKSTOP_GRACE)
        if flight.cancelled.is_set():
            # the abort is on its way (and repeated); give it the backstop's grace to land
            finished = run.done.wait(BACKSTOP_GRACE)
    with run.lock:
        if not run.done.is_set():
            run.abandoned = True
    elapsed = time.perf_counter() - started
    if flight is not None and flight.cancelled.is_set():
        detail = message_of(run.error) if run.error is not None else None
        return Outcome(cancelled(engine, elapsed, detail), abandoned=run.abandoned,
                       broken=not run.abandoned)
    if not finished and run.abandoned:
        return Outcome(Result.failed(
            "timeout", f"statement exceeded the {timeout:g}s timeout (abandoned by the client; "
                       f"the connection is closed once the server lets go of it)",
            elapsed=elapsed, engine=engine), abandoned=True)
    if run.error is not None:
        kind, sqlstate = classify(run.error, emulated=emulated)
        message = message_of(run.error)
        if emulated and isinstance(run.error, sf_errors.InternalServerError):
            message = (f"the emulator failed on this statement ({message}): usually a feature "
                       f"fakesnow or DuckDB lacks; its server log has the details")
        if kind == "timeout":
            message = f"statement exceeded the {timeout:g}s timeout ({message})"
        return Outcome(Result.failed(kind, message, sqlstate=sqlstate, elapsed=elapsed,
                                     engine=engine), broken=kind == "unavailable")
    truncated = len(run.rows) > max_rows
    return Outcome(Result(columns=run.columns, rows=run.rows[:max_rows], types=run.types,
                          elapsed=elapsed, truncated=truncated, engine=engine))
