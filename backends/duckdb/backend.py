"""DuckDB backend: an evaluation engine and the usual load target for SQLite sources.

URLs: ``duckdb:///relative/path.duckdb``, ``duckdb:////absolute/path.duckdb``, ``duckdb://`` or
``duckdb:///:memory:`` (in-memory). Evaluation connections (``read_only=True``, the default) open
the file read-only with external access, extension autoloading and configuration changes disabled,
and run exactly one SELECT statement (:mod:`polysql.backends.duckdb.screen`). The timeout is a
timer that calls ``DuckDBPyConnection.interrupt()``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import duckdb
import pyarrow as pa
from sqlalchemy.engine import URL

from polysql.backends._common.cancel import Flights
from polysql.backends._common.fingerprint import file_digest
from polysql.backends._common.interruptible import interruptibly
from polysql.backends._common.statement_text import refuse_text
from polysql.backends.base import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    Backend,
    EngineInfo,
    SetupScript,
)
from polysql.backends.duckdb import INFO
from polysql.backends.duckdb.connect import (
    CONFIG_OPTIONS,
    database_path,
    open_connection,
    url_settings,
)
from polysql.backends.duckdb.execute import run_statement
from polysql.backends.duckdb.introspect import introspect, read_batches
from polysql.backends.duckdb.load import load_into_duckdb
from polysql.backends.duckdb.screen import SAFE_CONFIG, screen
from polysql.backends.duckdb.setup import build_from_script
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError
from polysql.core.model import Result
from polysql.core.schema import LoadReport, Table
from polysql.core.urls import parse_url


class DuckDBBackend(Backend):
    """One DuckDB database (file or in-memory). File connections open lazily, so a load can
    replace the file before anything holds it open."""

    info: ClassVar[EngineInfo] = INFO
    name: ClassVar[str] = INFO.name
    dialect: ClassVar[str] = INFO.dialect
    capabilities: ClassVar[frozenset[str]] = frozenset(
        {"read_only", "timeout", "load_source", "load_target", "parallel_read"})
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
        unknown = sorted(set(options) - set(CONFIG_OPTIONS))
        if unknown:
            raise ConfigError(
                f"unknown option(s) for the duckdb backend: {', '.join(unknown)}; "
                f"supported: read_only, {', '.join(CONFIG_OPTIONS)}")
        parsed = parse_url(url)
        path = database_path(parsed)
        if read_only and path is not None and not path.is_file():
            raise EngineUnavailableError(
                f"DuckDB database file {str(path)!r} does not exist (resolved from the URL path; "
                f"use duckdb:///relative/path or duckdb:////absolute/path)")
        # options given in code win over the same ones in the URL
        backend = cls(parsed, read_only=read_only,
                      config={**SAFE_CONFIG, **url_settings(parsed), **options})
        # Evaluation connections open now, so a bad file fails here. A writable file connection
        # opens on first use: a load replaces the file without opening the old one.
        if read_only or path is None:
            backend._connection()
        return backend

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._closed:
            raise EngineUnavailableError(f"{self!r} is closed")
        if self._conn is None:
            self._conn = open_connection(self.path, read_only=self.read_only,
                                         config=self._config)
        return self._conn

    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        refused = refuse_text(sql, comments=self.info.comments, engine=self.name)
        if refused is not None:
            return refused
        with self._flights.track() as flight, self._lock:
            try:
                conn = self._connection()
            except EngineUnavailableError as exc:
                return Result.failed("unavailable", str(exc), engine=self.name)
            started = time.perf_counter()
            screened = screen(sql, read_only=self.read_only, engine=self.name)
            if screened.refused is not None:
                screened.refused.elapsed = time.perf_counter() - started
                return screened.refused
            return interruptibly(lambda: run_statement(
                conn, sql, timeout=timeout, max_rows=max_rows, flight=flight, engine=self.name,
                started=started, rolled_back=screened.rolled_back), flight)

    def cancel(self) -> bool:
        """``DuckDBPyConnection.interrupt()``, as the timeout's timer does."""
        return self._flights.cancel()

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

        with self._lock:
            try:
                return introspect(self._connection())
            except duckdb.Error as exc:
                raise EngineError(f"cannot read the tables of {self!r}: {exc}") from exc

    def read_table(self, table: Table, *, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
        with self._lock:
            conn = self._connection()
        yield from read_batches(conn, table, batch_size=batch_size, lock=self._lock)

    def fingerprint(self) -> str:
        """Digest of the database file and its write-ahead log (in-memory databases have no
        stable identity and cannot be fingerprinted)."""

        if self.path is None:
            raise EngineError("an in-memory DuckDB database has no fingerprint; load from a file")
        return file_digest(self.path, self.path.with_name(self.path.name + ".wal"))

    # -- load target -------------------------------------------------------------------------
    def load(self, source: Backend, *, fingerprint: str | None = None,
             replace: bool = False, names: str = "exact") -> LoadReport:
        with self._lock:
            return load_into_duckdb(self, source, fingerprint=fingerprint, replace=replace,
                                    names=names)

    @classmethod
    def build_from_script(cls, target: URL, script: SetupScript, **options: Any) -> LoadReport:
        """See :mod:`polysql.backends.duckdb.setup`."""

        with cls.connect(target, read_only=False, **options) as writer, writer._lock:
            return build_from_script(writer, script)
