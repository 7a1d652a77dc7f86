"""Run one untrusted statement on one pooled connection: read-only, timed, capped, classified.

Three barriers, each enough on its own for what it covers:

* the login: a reader with SELECT on one database and nothing else (see ``setup.py``), which
  is what stops DDL, file access and settings -- DDL commits implicitly, so no transaction can;
* ``START TRANSACTION READ ONLY`` around the statement, always rolled back, which refuses writes
  to tables (1792) whatever the login may do;
* a server-enforced timeout (MariaDB ``max_statement_time`` in seconds, MySQL 8
  ``max_execution_time`` in milliseconds), backed by a client-side timer that sends
  ``KILL QUERY`` from a second connection if the server has not stopped the statement shortly
  after its deadline, and ``KILL CONNECTION`` (or, if the server is unreachable, shuts the socket)
  if even that does not end it.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from dataclasses import dataclass

import pymysql

from polysql.backends._common.cancel import Flight, cancelled
from polysql.backends.mysql.connect import Login, open_connection
from polysql.backends.mysql.errors import CONNECTION_LOST_CODES, classify, error_code
from polysql.backends.mysql.errors_routines import ROUTINE_DENIED, RoutineLookup, denied_routine
from polysql.backends.mysql.types_values import type_name
from polysql.core.model import Result

# Seconds the server-side statement limit runs past polysql's own deadline (see run_statement).
SERVER_LIMIT_MARGIN = 0.05
# Queries that leave state in the session after they end: named locks and user variables.
_SESSION_STATE = re.compile(r"get_lock|:=", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Flavor:
    """What differs between MariaDB and MySQL 8 at execution time."""

    name: str  # "MariaDB" | "MySQL"

    def timeout_statement(self, seconds: float) -> str:
        if self.name == "MariaDB":
            return f"SET SESSION max_statement_time = {max(seconds, 0.001):.3f}"
        # MySQL counts milliseconds and only for SELECT, which is all evaluation runs.
        return f"SET SESSION max_execution_time = {max(round(seconds * 1000), 1)}"


class Backstop:
    """Cancels statements the server did not stop in time, from a separate connection.

    A login may kill its own sessions without any privilege, so the reader cancels the reader's
    statements: the backstop needs no administrator.
    """

    def __init__(self, login: Login, grace: float) -> None:
        self.login = login
        self.grace = grace
        self._conn: pymysql.connections.Connection | None = None
        self._lock = threading.Lock()

    def kill(self, what: str, thread_id: int) -> bool:
        with self._lock:
            for _attempt in range(2):  # a stale connection gets one fresh retry
                try:
                    if self._conn is None:
                        self._conn = open_connection(self.login, read_timeout=10, write_timeout=10)
                    with self._conn.cursor() as cur:
                        cur.execute(f"KILL {what} {int(thread_id)}")
                    return True
                except pymysql.err.OperationalError as exc:
                    if error_code(exc) == 1094:  # unknown thread: it has ended already
                        return True
                    self._drop()
                except Exception:  # unreachable server: the caller falls back
                    self._drop()
            return False

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn._force_close()
            self._conn = None

    def arm(self, conn: pymysql.connections.Connection, timeout: float) -> Watch:
        watch = Watch(self, conn, timeout)
        watch.start()
        return watch

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
            self._drop()


class Watch:
    """One statement's backstop timer.

    ``stop`` and the decision to fire are taken under one lock, so once ``stop`` has returned
    either ``fired`` is set (and the caller must not reuse the connection, since a KILL may still
    be on its way) or the watch will never fire.
    """

    def __init__(self, backstop: Backstop, conn: pymysql.connections.Connection,
                 timeout: float) -> None:
        self.backstop = backstop
        self.conn = conn
        self.thread_id = conn.thread_id()
        self.timeout = timeout
        self.fired = threading.Event()
        self.done = threading.Event()
        self._decision = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"polysql-mysql-backstop-{self.thread_id}")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._decision:
            self.done.set()

    def _run(self) -> None:
        if self.done.wait(self.timeout + self.backstop.grace):
            return
        with self._decision:
            if self.done.is_set():
                return
            self.fired.set()
        self.backstop.kill("QUERY", self.thread_id)
        if self.done.wait(self.backstop.grace):
            return
        # The statement ignored KILL QUERY, or the server cannot be reached: end the session,
        # and if even that is impossible, cut the socket so the waiting read returns.
        if not self.backstop.kill("CONNECTION", self.thread_id) or not self.done.wait(
                self.backstop.grace):
            sock = getattr(self.conn, "_sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


@dataclass(slots=True)
class Outcome:
    result: Result
    reusable: bool  # False: the connection's state is unknown or changed; close it


def _column_types(cursor: pymysql.cursors.SSCursor) -> list[str]:
    result = getattr(cursor, "_result", None)
    fields = getattr(result, "fields", None) or []
    charsets = [getattr(f, "charsetnr", None) for f in fields]
    description = cursor.description or ()
    if len(charsets) != len(description):
        charsets = [None] * len(description)
    return [type_name(d[1], charset) for d, charset in zip(description, charsets, strict=True)]


def run_statement(conn: pymysql.connections.Connection, sql: str, *, timeout: float,
                  max_rows: int, flavor: Flavor, backstop: Backstop,
                  engine: str, flight: Flight | None = None,
                  routines: RoutineLookup | None = None) -> Outcome:
    """Run ``sql`` on ``conn`` inside a read-only transaction that is always rolled back.

    ``flight``: how ``Backend.cancel`` reaches the statement (the backstop's ``KILL QUERY``; the
    connection is not reused afterwards). ``routines``: tells an unknown function from a routine
    the reader may not run (see ``errors_routines.py``).
    """
    started = time.perf_counter()
    thread_id = conn.thread_id()
    if flight is not None and not flight.arm(lambda: backstop.kill("QUERY", thread_id)):
        return Outcome(cancelled(engine, time.perf_counter() - started), True)
    cursor = conn.cursor(pymysql.cursors.SSCursor)
    watch: Watch | None = None
    try:
        # The server's limit lies just past the deadline: a statement it interrupts that still
        # ends "normally" (DO SLEEP answers 1) then always arrives after the deadline, where it
        # is counted a timeout. Level with it, the server's timer may end it a hair early.
        cursor.execute(flavor.timeout_statement(timeout + SERVER_LIMIT_MARGIN))
        cursor.execute("START TRANSACTION READ ONLY")
        watch = backstop.arm(conn, timeout)
        cursor.execute(sql)
        description = cursor.description
        rows = list(cursor.fetchmany(max_rows + 1)) if description else []
        columns = [d[0] for d in description or ()]
        types = _column_types(cursor)
    except pymysql.Error as exc:
        if watch is not None:
            watch.stop()
        if flight is not None:
            flight.disarm()
            if flight.cancelled.is_set():
                return Outcome(cancelled(engine, time.perf_counter() - started, str(exc)), False)
        return _failure(conn, exc, started, timeout, watch, engine, routines)
    except BaseException:
        # Ctrl-C (KeyboardInterrupt) while the server works: unstopped, the statement would run
        # on there until its timeout, holding a server thread (and all the CPU a hostile query
        # can take) after the caller has moved on or exited. psycopg does the same on Ctrl-C.
        # (The watch is stopped in ``finally``.)
        backstop.kill("QUERY", thread_id)
        raise
    finally:
        if watch is not None:
            watch.stop()
        if flight is not None:
            flight.disarm()
    if flight is not None and flight.cancelled.is_set():
        # MariaDB's SLEEP answers 1 when killed: nothing read after a cancel is trusted, and a
        # KILL may still be on its way, so the connection is not reused either
        return Outcome(cancelled(engine, time.perf_counter() - started), False)
    elapsed = time.perf_counter() - started
    truncated = len(rows) > max_rows
    # A statement that returned no result set (SET, DO, ...) may have changed the session, and
    # so may a query taking a named lock or assigning a user variable (both outlive the
    # statement); rows left unread would have to be drained: a fresh connection is cheaper.
    fired = watch is not None and watch.fired.is_set()
    reusable = (description is not None and not truncated and not fired
                and _SESSION_STATE.search(sql) is None and _finish(conn, cursor))
    if fired or elapsed > timeout:
        # Some statements end "normally" when interrupted (SLEEP returns 1 on MySQL): a result
        # that arrived only after the deadline is still a timeout.
        return Outcome(Result.failed("timeout", f"statement exceeded the {timeout:g}s timeout",
                                     elapsed=elapsed, engine=engine), reusable)
    return Outcome(Result(columns=columns, rows=rows[:max_rows], types=types, elapsed=elapsed,
                          truncated=truncated, engine=engine), reusable)


def _finish(conn: pymysql.connections.Connection, cursor: pymysql.cursors.SSCursor) -> bool:
    """Close the cursor and roll back; False when the connection should not be reused."""
    try:
        cursor.close()
        conn.rollback()
    except pymysql.Error:
        return False
    return True


def _failure(conn: pymysql.connections.Connection, exc: pymysql.Error, started: float,
             timeout: float, watch: Watch | None, engine: str,
             routines: RoutineLookup | None) -> Outcome:
    elapsed = time.perf_counter() - started
    code = error_code(exc)
    fired = watch is not None and watch.fired.is_set()
    if isinstance(exc, pymysql.err.InterfaceError):
        # PyMySQL's own complaint about a connection it considers closed (code 0).
        return Outcome(Result.failed("timeout" if fired else "unavailable",
                                     f"connection lost: {exc}", elapsed=elapsed, engine=engine),
                       False)
    message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    kind = classify(code, deadline_passed=fired or elapsed > timeout, message=message)
    if kind == "timeout":
        message = f"statement exceeded the {timeout:g}s timeout ({message})"
    elif code == ROUTINE_DENIED and routines is not None:
        routine = denied_routine(message)
        if routine is not None and routines.missing(routine):
            # an unknown function, reported as every other engine reports one; the server's
            # words are kept, with what they mean here
            kind = "runtime"
            message = (f"{message} (function {routine} does not exist: the server checks the "
                       f"EXECUTE privilege before it looks a function up)")
    reusable = code not in CONNECTION_LOST_CODES and not fired and conn.open
    if reusable:
        try:
            conn.rollback()
        except pymysql.Error:
            reusable = False
    return Outcome(Result.failed(kind, message, sqlstate=getattr(exc, "sqlstate", None),
                                 elapsed=elapsed, engine=engine), reusable)
