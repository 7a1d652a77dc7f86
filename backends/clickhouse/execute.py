"""Run one screened statement on the embedded engine: read-only, time-limited, row-capped.

Each evaluation connection is a chdb connection whose session has ``readonly=1`` (no writes, no
DDL, no settings changes, not even in a ``SETTINGS`` clause) and ``max_execution_time`` with
``timeout_overflow_mode = 'throw'``, so ClickHouse stops the statement itself. Because readonly
sessions cannot change their own limits, a backend keeps one connection per timeout value.

chdb cannot interrupt a statement from outside between its own checks, so the client backstop
runs the statement on a worker thread: if the engine has not answered ``BACKSTOP_GRACE`` seconds
after the timeout, the result is recorded as a timeout and the connection is retired (closed once
the engine lets go of it); the next statement gets a fresh one. ``Backend.cancel`` stops the
statement with ``KILL QUERY`` from the engine's administrative connection -- each evaluation
connection carries a ``log_comment`` of its own, which names its running query in
``system.processes`` -- and otherwise takes the same path as the backstop.

Rows stream in Native blocks; reading stops (and the query is cancelled) once ``max_rows + 1``
rows have arrived. An empty result carries no block at all, so its columns come from
``DESCRIBE TABLE (<query>)``, which analyses the query without running it.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from polysql.backends._common.cancel import Flight, cancelled
from polysql.backends.clickhouse.errors import classify, clean_message
from polysql.backends.clickhouse.screen import Screened
from polysql.backends.clickhouse.types_values import decode_native
from polysql.core.model import Result

# Extra seconds the engine gets to enforce max_execution_time before the client gives up.
BACKSTOP_GRACE = 1.0

Rows = tuple[list[str], list[str], list[tuple[Any, ...]], bool]
_NOT_STREAMABLE = "Streaming query is not supported"


class Handle:
    """One evaluation connection and the database its session is on; ``tag`` is the
    connection's ``log_comment``, by which its running statement can be found and killed."""

    def __init__(self, conn: Any, tag: str) -> None:
        self.conn = conn
        self.tag = tag
        self.database: str | None = None
        self._state = threading.Lock()
        self._busy = False
        self._retired = False

    def use(self, database: str) -> None:
        if self.database != database:
            self.conn.query(f"USE `{database}`", "TabSeparated")
            self.database = database

    @property
    def retired(self) -> bool:
        return self._retired

    def begin(self) -> None:
        with self._state:
            self._busy = True

    def end(self) -> None:
        """The engine let go of this connection; close it now if it was retired meanwhile."""
        with self._state:
            self._busy = False
            retired = self._retired
        if retired:
            self._close()

    def retire(self) -> None:
        """Close now if idle, else as soon as the running statement ends."""
        with self._state:
            self._retired = True
            busy = self._busy
        if not busy:
            self._close()

    def _close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


def read_rows(conn: Any, sql: str, max_rows: int) -> Rows:
    """Stream ``sql``'s result; at most ``max_rows`` rows, and whether more were there."""
    try:
        stream = conn.send_query(sql + "\n", "Native")
    except RuntimeError as exc:
        if _NOT_STREAMABLE not in str(exc):
            raise
        # Only statements other than queries do not stream; they reach the engine only when
        # the screen is off, and readonly=1 refuses them here.
        data = conn.query(sql + "\n", "Native").bytes()
        columns, types, rows = decode_native(data) if data else ([], [], [])
        return columns, types, rows[:max_rows], len(rows) > max_rows
    columns: list[str] = []
    types: list[str] = []
    rows: list[tuple[Any, ...]] = []
    try:
        for chunk in stream:
            data = chunk.bytes()
            if not data:
                continue
            names, kinds, block = decode_native(data)
            if not columns:
                columns, types = names, kinds
            rows.extend(block)
            if len(rows) > max_rows:
                break
    finally:
        with contextlib.suppress(Exception):
            stream.close()
    if not columns:
        columns, types = describe(conn, sql)
    return columns, types, rows[:max_rows], len(rows) > max_rows


def describe(conn: Any, sql: str) -> tuple[list[str], list[str]]:
    """Result columns of a query, from ClickHouse's analysis of it (nothing is executed)."""
    result = conn.query(f"DESCRIBE TABLE (\n{sql}\n)", "JSONEachRow")
    names, types = [], []
    for line in result.bytes().decode("utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            names.append(row["name"])
            types.append(row["type"])
    return names, types


def explain_refusal(conn: Any, screened: Screened, engine: str, started: float) -> Result:
    """A statement that does not start like a query never runs. ClickHouse's parser (EXPLAIN AST
    executes nothing) says whether it is a syntax error or a statement of another kind."""
    try:
        conn.query(f"EXPLAIN AST {screened.sql}\n", "TabSeparated")
    except Exception as exc:  # noqa: BLE001 - chdb raises plain RuntimeError subclasses
        message = clean_message(str(exc))
        kind = classify(message)
        if kind == "syntax":
            return Result.failed("syntax", message, elapsed=time.perf_counter() - started,
                                 engine=engine)
    return Result.failed("forbidden", f"only queries may run; this is a {screened.first_word} "
                                      f"statement", elapsed=time.perf_counter() - started,
                         engine=engine)


def run_with_backstop(handle: Handle, work: Callable[[], Rows], *, timeout: float,
                      engine: str, started: float, flight: Flight | None = None,
                      interrupt: Callable[[], object] | None = None) -> Result:
    """Run ``work`` on a worker thread; the engine's own limit should stop it at ``timeout``,
    the client stops waiting ``BACKSTOP_GRACE`` seconds later. ``flight`` and ``interrupt``:
    how ``Backend.cancel`` reaches the statement; a cancelled statement that has not stopped
    ``BACKSTOP_GRACE`` seconds later is left behind like one the backstop gave up on."""
    if flight is not None:
        if not flight.arm(interrupt or (lambda: None)):
            return cancelled(engine, time.perf_counter() - started)
        try:
            return _run_on_worker(handle, work, timeout=timeout, engine=engine, started=started,
                                  flight=flight, interrupt=interrupt)
        finally:
            flight.disarm()
    return _run_on_worker(handle, work, timeout=timeout, engine=engine, started=started,
                          flight=None, interrupt=interrupt)


def _stop_before_leaving(handle: Handle, done: threading.Event,
                         interrupt: Callable[[], object] | None) -> None:
    """Ctrl-C (KeyboardInterrupt) while waiting: stop the statement before the interrupt goes
    on. Left running, it holds the engine's threads until its timeout, and an embedded chdb
    statement still running when the interpreter exits crashes the process (SIGSEGV)."""
    if interrupt is not None:
        with contextlib.suppress(Exception):
            interrupt()
    if not done.wait(BACKSTOP_GRACE):
        handle.retire()


def _run_on_worker(handle: Handle, work: Callable[[], Rows], *, timeout: float, engine: str,
                   started: float, flight: Flight | None,
                   interrupt: Callable[[], object] | None) -> Result:
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def worker() -> None:
        try:
            outcome["rows"] = work()
        except BaseException as exc:  # noqa: BLE001 - reported to the caller as a failed Result
            outcome["error"] = exc
        finally:
            done.set()
            handle.end()

    handle.begin()
    thread = threading.Thread(target=worker, name="polysql-clickhouse-statement", daemon=True)
    thread.start()
    try:
        finished = (done.wait(timeout + BACKSTOP_GRACE) if flight is None
                    else flight.wait(done, timeout + BACKSTOP_GRACE))
    except BaseException:
        _stop_before_leaving(handle, done, interrupt)
        raise
    if flight is not None and flight.cancelled.is_set():
        finished = done.wait(BACKSTOP_GRACE)
        if not finished:
            handle.retire()
        error = outcome.get("error")
        return cancelled(engine, time.perf_counter() - started,
                         clean_message(str(error)) if error is not None else None)
    if not finished:
        handle.retire()
        return Result.failed(
            "timeout", f"statement exceeded the {timeout:g}s timeout (the client stopped waiting "
                       f"{BACKSTOP_GRACE:g}s after it; the engine had not stopped the statement)",
            elapsed=time.perf_counter() - started, engine=engine)
    elapsed = time.perf_counter() - started
    if "error" in outcome:
        exc = outcome["error"]
        if isinstance(exc, MemoryError):
            return Result.failed("too_large", "out of memory reading the result",
                                 elapsed=elapsed, engine=engine)
        message = clean_message(str(exc))
        kind = classify(message)
        if kind == "timeout":
            message = f"statement exceeded the {timeout:g}s timeout ({message})"
        return Result.failed(kind, message, elapsed=elapsed, engine=engine)
    columns, types, rows, truncated = outcome["rows"]
    return Result(columns=columns, rows=rows, types=types, elapsed=elapsed, truncated=truncated,
                  engine=engine)
