"""Run one screened statement on a ClickHouse server (clickhouse-connect over HTTP).

Evaluated statements pass the same screen as on the embedded engine and run with ``readonly=1``,
``max_execution_time`` and ``timeout_overflow_mode = 'throw'`` as per-query settings
(``readonly`` last, so it does not refuse the settings sent with it; once applied, the
statement's own ``SETTINGS`` clause cannot loosen any of them). ``session_timezone = 'UTC'`` is
one of them: naive timestamps are read as UTC, as on the embedded engine and every other engine,
whatever the server's own zone (the setting needs ClickHouse 23.6 or later). Rows stream in
Native blocks, zone-less values decoded as naive UTC, and the stream is closed after
``max_rows + 1`` rows. The client backstop is the HTTP read timeout. Each statement gets a query
id of its own, so ``Backend.cancel`` can ``KILL QUERY`` it.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from polysql.backends._common.cancel import Flight, cancelled
from polysql.backends.clickhouse.errors import classify
from polysql.backends.clickhouse.execute import BACKSTOP_GRACE
from polysql.backends.clickhouse.screen import Screened
from polysql.backends.clickhouse.types_values import QUERY_FORMATS, python_value
from polysql.core.model import Result

if TYPE_CHECKING:
    from polysql.backends.clickhouse.connect_server import ServerSession

Rows = tuple[list[str], list[str], list[tuple[Any, ...]], bool]


def client_error(exc: Exception) -> tuple[str, int | None]:
    """The message and ClickHouse error code of a clickhouse-connect exception."""
    return str(exc).strip() or type(exc).__name__, getattr(exc, "code", None)


def query_settings(session: ServerSession, timeout: float) -> dict[str, Any]:
    """The settings every evaluated statement runs under (``readonly`` last)."""
    return {**session.settings, "max_execution_time": round(max(timeout, 0.001), 3),
            "timeout_overflow_mode": "throw", "session_timezone": "UTC", "readonly": 1}


def run_on_server(session: ServerSession, screened: Screened, *, timeout: float, max_rows: int,
                  engine: str, started: float, flight: Flight | None = None) -> Result:
    """Run ``screened`` on ``session``'s server; never raises for an error in the statement."""
    if not screened.query:
        return _refuse(session, screened, timeout, engine, started)
    query_id = f"polysql-{uuid.uuid4().hex}"
    if flight is None:
        return _run(session, screened, query_id, timeout, max_rows, engine, started, None)
    if not flight.arm(lambda: session.kill(query_id), exclusive=False):
        return cancelled(engine, time.perf_counter() - started)
    try:
        return _run(session, screened, query_id, timeout, max_rows, engine, started, flight)
    finally:
        flight.disarm()


def _run(session: ServerSession, screened: Screened, query_id: str, timeout: float,
         max_rows: int, engine: str, started: float, flight: Flight | None) -> Result:
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def worker() -> None:
        try:
            outcome["rows"] = _read(session, screened.sql, timeout, max_rows, query_id)
        except Exception as exc:  # noqa: BLE001 - reported as a failed Result
            outcome["error"] = exc
        finally:
            done.set()

    # The client backstop: the server should stop the statement at max_execution_time; if it
    # has not answered shortly after, stop waiting (the HTTP client is thread-safe, so the
    # abandoned request does not block the next statement).
    threading.Thread(target=worker, name="polysql-clickhouse-http", daemon=True).start()
    finished = (done.wait(timeout + BACKSTOP_GRACE) if flight is None
                else flight.wait(done, timeout + BACKSTOP_GRACE))
    if flight is not None and flight.cancelled.is_set():
        done.wait(BACKSTOP_GRACE)  # the kill is on its way; a request still open is left
        error = outcome.get("error")
        return cancelled(engine, time.perf_counter() - started,
                         client_error(error)[0] if error is not None else None)
    if not finished:
        return Result.failed(
            "timeout", f"statement exceeded the {timeout:g}s timeout (the client stopped "
                       f"waiting {BACKSTOP_GRACE:g}s after it)",
            elapsed=time.perf_counter() - started, engine=engine)
    if "error" in outcome:
        exc = outcome["error"]
        message, code = client_error(exc)
        kind = classify(message, code)
        if "timed out" in message.lower() or "read timeout" in message.lower():
            kind = "timeout"
        elif code is None and kind == "runtime" and "connect" in message.lower():
            kind = "unavailable"
        if kind == "timeout":
            message = f"statement exceeded the {timeout:g}s timeout ({message})"
        return Result.failed(kind, message, elapsed=time.perf_counter() - started,
                             engine=engine)
    columns, types, rows, truncated = outcome["rows"]
    return Result(columns=columns, rows=rows, types=types, truncated=truncated,
                  elapsed=time.perf_counter() - started, engine=engine)


def _read(session: ServerSession, sql: str, timeout: float, max_rows: int,
          query_id: str) -> Rows:
    rows: list[tuple[Any, ...]] = []
    settings = query_settings(session, timeout)
    # query_tz: clickhouse-connect would otherwise decode a zone-less DateTime in the server's
    # default zone (or the machine's) as an aware datetime, not in the session's UTC
    stream = session.client.query_row_block_stream(sql + "\n",
                                                   settings={"query_id": query_id, **settings},
                                                   query_formats=QUERY_FORMATS, query_tz="UTC")
    with stream:
        columns = list(stream.source.column_names)
        types = [t.name for t in stream.source.column_types]
        for block in stream:
            rows.extend(tuple(python_value(v) for v in row) for row in block)
            if len(rows) > max_rows:
                break
    if not columns:
        described = session.client.query(f"DESCRIBE TABLE (\n{sql}\n)", settings=settings)
        columns = [r[0] for r in described.result_rows]
        types = [r[1] for r in described.result_rows]
    return columns, types, rows[:max_rows], len(rows) > max_rows


def _refuse(session: ServerSession, screened: Screened, timeout: float, engine: str,
            started: float) -> Result:
    """A statement that is no query: a syntax error if the server cannot parse it (as every
    engine reports one), refused otherwise."""
    try:
        session.client.query(f"EXPLAIN AST {screened.sql}\n",
                             settings=query_settings(session, timeout))
    except Exception as exc:  # noqa: BLE001
        message, code = client_error(exc)
        if classify(message, code) == "syntax":
            return Result.failed("syntax", message, elapsed=time.perf_counter() - started,
                                 engine=engine)
    return Result.failed("forbidden", f"only queries may run; this is a "
                                      f"{screened.first_word} statement",
                         elapsed=time.perf_counter() - started, engine=engine)
