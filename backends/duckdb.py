"""DuckDB backend: an evaluation engine and the usual load target for SQLite sources.

URLs: ``duckdb:///relative/path.duckdb``, ``duckdb:////absolute/path.duckdb``, ``duckdb://`` or
``duckdb:///:memory:`` (in-memory). Evaluation connections (``read_only=True``, the default) open
the file read-only with external access, extension autoloading and configuration changes disabled,
and run only SELECT/EXPLAIN statements. The timeout is a timer that calls
``DuckDBPyConnection.interrupt()``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import pyarrow as pa
from sqlalchemy.engine import URL

from polysql.backends._cancel import Flight, Flights, cancelled
from polysql.backends._duckdb_safety import ALLOWED_STATEMENTS, SAFE_CONFIG, classify
from polysql.backends._statement_text import refuse_text
from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Backend
from polysql.errors import ConfigError, EngineError, EngineUnavailableError
from polysql.model import Result
from polysql.registry import parse_url
from polysql.schema import LoadReport, Table

_CONFIG_OPTIONS = ("threads", "memory_limit")


def database_path(url: URL) -> Path | None:
    """The file a ``duckdb://`` URL names, or None for an in-memory database."""
    database = url.database
    if not database or database == ":memory:":
        return None
    return Path(database)


class DuckDBBackend(Backend):
    """One DuckDB database (file or in-memory). File connections open lazily, so a load can
    replace the file before anything holds it open."""

    name: ClassVar[str] = "duckdb"
    dialect: ClassVar[str] = "duckdb"
    capabilities: ClassVar[frozenset[str]] = frozenset(
        {"read_only", "timeout", "load_source", "load_target"})
    file_suffix: ClassVar[str | None] = ".duckdb"

    def __init__(self, url: URL, *, read_only: bool, config: dict[str, Any]) -> None:
        self.url = url
        self.path = database_path(url)
        self.read_only = read_only
        self._config = config
        self._conn: duckdb.DuckDBPyConnection | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._flights = Flights()

    @classmethod
    def connect(cls, url: URL | str, *, read_only: bool = True, **options: Any) -> DuckDBBackend:
        unknown = sorted(set(options) - set(_CONFIG_OPTIONS))
        if unknown:
            raise ConfigError(
                f"unknown option(s) for the duckdb backend: {', '.join(unknown)}; "
                f"supported: read_only, {', '.join(_CONFIG_OPTIONS)}")
        parsed = parse_url(url)
        path = database_path(parsed)
        if read_only and path is not None and not path.is_file():
            raise EngineUnavailableError(
                f"DuckDB database file {str(path)!r} does not exist (resolved from the URL path; "
                f"use duckdb:///relative/path or duckdb:////absolute/path)")
        backend = cls(parsed, read_only=read_only, config={**SAFE_CONFIG, **options})
        # Evaluation connections open now, so a bad file fails here. A writable file connection
        # opens on first use: a load replaces the file without opening the old one.
        if read_only or path is None:
            backend._connection()
        return backend

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._closed:
            raise EngineUnavailableError(f"{self!r} is closed")
        if self._conn is None:
            target = ":memory:" if self.path is None else str(self.path)
            # DuckDB cannot open an in-memory database read-only; the statement filter in
            # execute() keeps such a connection read-only instead.
            file_read_only = self.read_only and self.path is not None
            config = dict(self._config)
            lock = bool(config.pop("lock_configuration", False))
            try:
                conn = duckdb.connect(target, read_only=file_read_only, config=config)
                _quiet_and_lock(conn, lock)
            except duckdb.Error as exc:
                raise EngineUnavailableError(
                    f"cannot open DuckDB database {target!r}: {exc}") from exc
            self._conn = conn
        return self._conn

    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        refused = refuse_text(sql, dialect=self.dialect, engine=self.name)
        if refused is not None:
            return refused
        with self._flights.track() as flight, self._lock:
            try:
                conn = self._connection()
            except EngineUnavailableError as exc:
                return Result.failed("unavailable", str(exc), engine=self.name)
            return self._execute_locked(conn, sql, timeout, max_rows, flight)

    def cancel(self) -> bool:
        """``DuckDBPyConnection.interrupt()``, as the timeout's timer does."""
        return self._flights.cancel()

    def _refusal(self, sql: str) -> Result | None:
        """A failed Result if ``sql`` is not exactly one statement this connection may run."""
        try:
            statements = duckdb.extract_statements(sql)
        except duckdb.Error as exc:
            return Result.failed(classify(exc, interrupted=False), str(exc), engine=self.name)
        if not statements:
            return Result.failed("syntax", "no SQL statement found", engine=self.name)
        if len(statements) > 1:
            return Result.failed(
                "forbidden", f"exactly one statement is evaluated, got {len(statements)}",
                engine=self.name)
        kind = statements[0].type
        if self.read_only and kind not in ALLOWED_STATEMENTS:
            return Result.failed(
                "forbidden", f"{kind.name} statements are not allowed on a read-only connection",
                engine=self.name)
        return None

    def _execute_locked(self, conn: duckdb.DuckDBPyConnection, sql: str, timeout: float,
                        max_rows: int, flight: Flight) -> Result:
        started = time.perf_counter()
        refusal = self._refusal(sql)
        if refusal is not None:
            refusal.elapsed = time.perf_counter() - started
            return refusal
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
            return cancelled(self.name, time.perf_counter() - started)
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
                return cancelled(self.name, time.perf_counter() - started, str(exc))
            kind = classify(exc, interrupted=fired.is_set())
            message = str(exc)
            if kind == "timeout":
                message = f"statement exceeded the {timeout:g}s timeout ({message})"
            return Result.failed(kind, message, elapsed=time.perf_counter() - started,
                                 engine=self.name)
        finally:
            with running:
                finished = True
            flight.disarm()
            timer.cancel()
        if flight.cancelled.is_set():
            return cancelled(self.name, time.perf_counter() - started)
        truncated = len(rows) > max_rows
        return Result(columns=[d[0] for d in description], rows=rows[:max_rows],
                      types=[str(d[1]) for d in description],
                      elapsed=time.perf_counter() - started, truncated=truncated,
                      engine=self.name)

    def version(self) -> str:
        return duckdb.__version__

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._release()

    def _release(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- introspection / load source --------------------------------------------------------
    def tables(self) -> list[Table]:
        """The tables of the ``main`` schema, as loaded (types are DuckDB's own)."""
        from polysql.backends._duckdb_introspect import introspect

        with self._lock:
            try:
                return introspect(self._connection())
            except duckdb.Error as exc:
                raise EngineError(f"cannot read the tables of {self!r}: {exc}") from exc

    def read_table(self, table: Table, *, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
        from polysql.backends._duckdb_introspect import read_batches

        with self._lock:
            conn = self._connection()
        yield from read_batches(conn, table, batch_size=batch_size, lock=self._lock)

    def fingerprint(self) -> str:
        """Digest of the database file and its write-ahead log (in-memory databases have no
        stable identity and cannot be fingerprinted)."""
        from polysql.backends._fingerprint import file_digest

        if self.path is None:
            raise EngineError("an in-memory DuckDB database has no fingerprint; load from a file")
        return file_digest(self.path, self.path.with_name(self.path.name + ".wal"))

    # -- load target -------------------------------------------------------------------------
    def load(self, source: Backend, *, fingerprint: str | None = None,
             replace: bool = False, names: str = "exact") -> LoadReport:
        from polysql.backends._duckdb_load import load_into_duckdb

        with self._lock:
            return load_into_duckdb(self, source, fingerprint=fingerprint, replace=replace,
                                    names=names)


def _quiet_and_lock(conn: duckdb.DuckDBPyConnection, lock: bool) -> None:
    """Turn the progress bar off, then lock the configuration against untrusted SET statements.

    DuckDB draws a progress bar on stdout for statements over ~2 s, which corrupts
    machine-readable output (--json); it is a session setting only, so it is set here. A second
    connection to a file this process already opened shares that database instance, whose
    configuration is locked already: it keeps the lock, and DuckDB refuses the SET (its progress
    bar then stays on, the one thing lost).
    """
    try:
        conn.execute("SET enable_progress_bar = false")
    except duckdb.InvalidInputException as exc:
        if "locked" not in str(exc):
            raise
        return
    if lock:
        conn.execute("SET lock_configuration = true")
