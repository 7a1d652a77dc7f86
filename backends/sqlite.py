"""SQLite backend: the source engine of most datasets, and an evaluation engine in its own right.

URLs: ``sqlite:///relative/path.sqlite``, ``sqlite:////absolute/path.sqlite``, ``sqlite://``
(in-memory). Evaluation connections (``read_only=True``, the default) open the file with
``mode=ro`` and install an authorizer that refuses writes, ATTACH/DETACH and state-changing
pragmas; extension loading stays disabled. The timeout is a progress handler that aborts the
statement once its deadline has passed.
"""

from __future__ import annotations

import copy
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

import pyarrow as pa
from sqlalchemy.engine import URL

from polysql.backends._cancel import Flight, Flights, cancelled
from polysql.backends._sqlite_safety import classify, read_only_authorizer
from polysql.backends._statement_text import refuse_text
from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Backend
from polysql.errors import ConfigError, EngineError, EngineUnavailableError
from polysql.model import Result
from polysql.registry import parse_url
from polysql.schema import Coercion, LoadReport, Table

if TYPE_CHECKING:
    from polysql.backends._sqlite_types import SourceTable

# SQLite calls the progress handler every this many virtual-machine instructions; small enough
# that a runaway query stops within milliseconds of its deadline, large enough to cost nothing.
_PROGRESS_INTERVAL = 10_000

# Storage-class names reported in Result.types (SQLite has no static result types).
_STORAGE_CLASS = {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB"}


def database_path(url: URL) -> Path | None:
    """The file a ``sqlite://`` URL names, or None for an in-memory database."""
    database = url.database
    if not database or database == ":memory:":
        return None
    return Path(database)


def _open(path: Path | None, *, read_only: bool) -> sqlite3.Connection:
    if path is None:
        target = ":memory:"
        uri = False
    else:
        if read_only and not path.is_file():
            raise EngineUnavailableError(
                f"SQLite database file {str(path)!r} does not exist (resolved from the URL path; "
                f"use sqlite:///relative/path or sqlite:////absolute/path)")
        target = f"file:{quote(str(path))}?mode={'ro' if read_only else 'rwc'}"
        uri = True
    try:
        # isolation_level=None: autocommit, so writes on a load/test connection are visible at
        # once and evaluated SQL never leaves a transaction open. check_same_thread=False lets a
        # runner thread use the connection; the backend's lock serialises access.
        conn = sqlite3.connect(target, uri=uri, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise EngineUnavailableError(f"cannot open SQLite database {str(path)!r}: {exc}") from exc
    # Builds without extension support lack the method; then loading is impossible anyway.
    disable_extensions = getattr(conn, "enable_load_extension", None)
    if disable_extensions is not None:
        disable_extensions(False)
    return conn


def result_types(rows: list[tuple[Any, ...]], width: int) -> list[str]:
    """Per column, the storage class of its first non-NULL value, or "" if it has none."""
    types = [""] * width
    missing = set(range(width))
    for row in rows:
        for index in list(missing):
            value = row[index]
            if value is not None:
                types[index] = _STORAGE_CLASS.get(type(value), type(value).__name__.upper())
                missing.discard(index)
        if not missing:
            break
    return types


class SQLiteBackend(Backend):
    """One SQLite database (file or in-memory)."""

    name: ClassVar[str] = "sqlite"
    dialect: ClassVar[str] = "sqlite"
    capabilities: ClassVar[frozenset[str]] = frozenset(
        {"read_only", "timeout", "load_source", "load_target"})
    file_suffix: ClassVar[str | None] = ".sqlite"

    def __init__(self, url: URL, *, read_only: bool) -> None:
        self.url = url
        self.path = database_path(url)
        self.read_only = read_only
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._flights = Flights()
        self._coercions: list[Coercion] | None = None
        self._introspected: list[SourceTable] | None = None

    @classmethod
    def connect(cls, url: URL | str, *, read_only: bool = True, **options: Any) -> SQLiteBackend:
        if options:
            raise ConfigError(
                f"unknown option(s) for the sqlite backend: {', '.join(sorted(options))}; "
                f"supported: read_only")
        backend = cls(parse_url(url), read_only=read_only)
        # Open now so a missing file fails here -- except a load target that does not exist yet:
        # the load creates it, and an empty file must not appear before it does.
        if read_only or backend.path is None or backend.path.exists():
            backend._connection()
        return backend

    def _connection(self) -> sqlite3.Connection:
        """The open connection, opened on first use; the caller holds the lock."""
        if self._closed:
            raise EngineUnavailableError(f"{self!r} is closed")
        if self._conn is None:
            self._conn = _open(self.path, read_only=self.read_only)
            if self.read_only:
                self._conn.set_authorizer(read_only_authorizer)
        return self._conn

    def _release(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        refused = refuse_text(sql, dialect=self.dialect, engine=self.name)
        if refused is not None:
            return refused
        started = time.perf_counter()
        with self._flights.track() as flight, self._lock:
            try:
                conn = self._connection()
            except EngineUnavailableError as exc:
                return Result.failed("unavailable", str(exc), engine=self.name)
            if not flight.arm(conn.interrupt):
                return cancelled(self.name, time.perf_counter() - started)
            try:
                return self._execute_locked(conn, sql, timeout, max_rows, flight)
            finally:
                flight.disarm()

    def cancel(self) -> bool:
        """The timeout's own path: the progress handler stops the statement at its next check,
        and ``Connection.interrupt`` at once."""
        return self._flights.cancel()

    def _execute_locked(self, conn: sqlite3.Connection, sql: str, timeout: float,
                        max_rows: int, flight: Flight) -> Result:
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
                return cancelled(self.name, elapsed, str(exc))
            kind = classify(exc, deadline_passed=time.perf_counter() > deadline)
            message = str(exc)
            if kind == "timeout":
                message = f"statement exceeded the {timeout:g}s timeout ({message})"
            return Result.failed(kind, message, elapsed=elapsed, engine=self.name)
        finally:
            cursor.close()
            conn.set_progress_handler(None, 0)
        if stop.is_set():
            return cancelled(self.name, time.perf_counter() - started)
        truncated = len(rows) > max_rows
        rows = rows[:max_rows]
        return Result(columns=columns, rows=rows, types=result_types(rows, len(columns)),
                      elapsed=time.perf_counter() - started, truncated=truncated,
                      engine=self.name)

    def version(self) -> str:
        return sqlite3.sqlite_version

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._release()

    # -- load source -------------------------------------------------------------------------
    def tables(self) -> list[Table]:
        """Every user table, with logical types resolved from declared types and a scan of the
        stored values; the coercions behind those choices are kept for :meth:`coercions`.

        A read-only connection scans once and remembers the answer (its database cannot change
        through it), so rendering a schema for every prompt does not rescan large tables.
        """
        from polysql.backends._sqlite_types import introspect

        with self._lock:
            sources: list[SourceTable] | None = self._introspected
            if sources is None:
                try:
                    sources = introspect(self._connection())
                except sqlite3.Error as exc:
                    raise EngineError(f"cannot read the tables of {self!r}: {exc}") from exc
                if self.read_only:
                    self._introspected = sources
        self._coercions = [c for source in sources for c in source.coercions]
        return [copy.deepcopy(source.table) for source in sources]

    def coercions(self) -> list[Coercion]:
        """Values whose stored form disagreed with the type chosen for them (see ``tables``)."""
        if self._coercions is None:
            self.tables()
        return list(self._coercions or [])

    def views(self) -> list[tuple[str, str]]:
        """(name, CREATE VIEW text) of every view, in creation order."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY rowid").fetchall()
        return [(name, sql) for name, sql in rows]

    def read_table(self, table: Table, *, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
        from polysql.backends._sqlite_read import read_batches

        with self._lock:
            conn = self._connection()
        if self._coercions is None:
            self._coercions = []
        # Text repaired while reading is a coercion too; it joins those found by tables().
        yield from read_batches(conn, table, batch_size=batch_size, lock=self._lock,
                                on_coercion=self._coercions.append)

    def fingerprint(self) -> str:
        from polysql.backends._fingerprint import sqlite_fingerprint

        with self._lock:
            return sqlite_fingerprint(self._connection(), self.path)

    # -- load target -------------------------------------------------------------------------
    def load(self, source: Backend, *, fingerprint: str | None = None,
             replace: bool = False, names: str = "exact") -> LoadReport:
        from polysql.backends._sqlite_load import load_into_sqlite

        if names != "exact":
            raise ConfigError(
                f"a SQLite target is a byte-for-byte copy of its SQLite source; names={names!r} "
                "applies to DuckDB, PostgreSQL and MySQL targets only")
        with self._lock:
            return load_into_sqlite(self, source, fingerprint=fingerprint, replace=replace)
