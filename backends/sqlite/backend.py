"""SQLite backend: the source engine of most datasets, and an evaluation engine in its own right.

URLs: ``sqlite:///relative/path.sqlite``, ``sqlite:////absolute/path.sqlite``, ``sqlite://``
(in-memory). Evaluation connections (``read_only=True``, the default) open the file with
``mode=ro`` and install an authorizer that refuses writes, ATTACH/DETACH and state-changing
pragmas; extension loading stays disabled. The timeout is a progress handler that aborts the
statement once its deadline has passed.
"""

from __future__ import annotations

import contextlib
import copy
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
from sqlalchemy.engine import URL

from polysql.backends._common.arrow import arrow_schema
from polysql.backends._common.cancel import Flights, cancelled
from polysql.backends._common.interruptible import interruptibly
from polysql.backends._common.statement_text import refuse_text
from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Backend, EngineInfo
from polysql.backends.sqlite import INFO, introspect_arrow
from polysql.backends.sqlite.connect import database_path, open_backup_reader, open_connection
from polysql.backends.sqlite.errors import source_problem
from polysql.backends.sqlite.execute import run_statement
from polysql.backends.sqlite.introspect import fingerprint, introspect
from polysql.backends.sqlite.introspect_cache import SOURCES, CachedRows, fits, table_key
from polysql.backends.sqlite.introspect_rows import read_batches
from polysql.backends.sqlite.load import load_into_sqlite
from polysql.backends.sqlite.setup import build_from_script
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError, LoadError
from polysql.core.model import Result
from polysql.core.schema import Coercion, LoadReport, Table
from polysql.core.urls import parse_url

if TYPE_CHECKING:
    from polysql.backends.base import SetupScript
    from polysql.backends.sqlite.introspect import SourceTable

class SQLiteBackend(Backend):
    """One SQLite database (file or in-memory)."""

    info: ClassVar[EngineInfo] = INFO
    name: ClassVar[str] = INFO.name
    dialect: ClassVar[str] = INFO.dialect
    capabilities: ClassVar[frozenset[str]] = frozenset(
        {"read_only", "timeout", "load_source", "load_target", "parallel_read"})
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
        self._fingerprint: str | None = None

    @classmethod
    def connect(cls, url: URL | str, *, read_only: bool = True, **options: Any) -> SQLiteBackend:
        if options:
            raise ConfigError(
                f"unknown option(s) for the sqlite backend: {', '.join(sorted(options))}; "
                f"supported: read_only")
        parsed = parse_url(url)
        if parsed.query:
            # SQLAlchemy-style settings (?mode=ro, ?timeout=5) would be silently ignored: polysql
            # opens evaluation copies read-only and times statements itself
            raise ConfigError(
                f"a sqlite:// URL takes no query parameters, and this one has "
                f"{', '.join(sorted(parsed.query))}: polysql opens evaluation databases read-only "
                f"and sets their timeouts itself; remove everything from '?' on")
        backend = cls(parsed, read_only=read_only)
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
            self._conn = open_connection(self.path, read_only=self.read_only)
        return self._conn

    def _release(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        refused = refuse_text(sql, comments=self.info.comments, engine=self.name)
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
                return interruptibly(lambda: run_statement(
                    conn, sql, timeout=timeout, max_rows=max_rows, flight=flight,
                    engine=self.name), flight)
            finally:
                flight.disarm()

    def cancel(self) -> bool:
        """The timeout's own path: the progress handler stops the statement at its next check,
        and ``Connection.interrupt`` at once."""
        return self._flights.cancel()

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
        through it), so rendering a schema for every prompt does not rescan large tables. When
        the content's fingerprint is already known (a load asks for it first), a file scanned
        before in this process with the same content is not scanned again (a sweep loads each
        source into every engine); the whole file is never hashed just to look that up.
        """

        with self._lock:
            sources: list[SourceTable] | None = self._introspected
            if sources is None:
                conn = self._connection()
                try:
                    if self._shares_content() and self._fingerprint is not None:
                        fingerprint_ = self._fingerprint
                        sources = SOURCES.schema(fingerprint_,
                                                 lambda: _introspect_keeping(conn, fingerprint_))
                    else:
                        sources = introspect(conn)
                except sqlite3.Error as exc:
                    hint = (f"; {str(self.path)!r} is not a SQLite database: point the URL at a "
                            f".sqlite/.db file" if "not a database" in str(exc) else "")
                    raise EngineError(f"cannot read the tables of {self!r}: "
                                      f"{source_problem(exc)}{hint}") from exc
                if self.read_only:
                    self._introspected = sources
        self._coercions = [c for source in sources for c in source.coercions]
        return [copy.deepcopy(source.table) for source in sources]

    def coercions(self) -> list[Coercion]:
        """Values whose stored form disagreed with the type chosen for them (see ``tables``)."""
        if self._coercions is None:
            self.tables()
        return list(self._coercions or [])

    @contextlib.contextmanager
    def backup_reader(self) -> Iterator[sqlite3.Connection]:
        """The connection a verbatim copy of this database (SQLite's backup API) reads it
        through; the caller holds the lock. A file gets one of its own for the copy
        (:func:`open_backup_reader`); an in-memory database, its one connection."""
        if self.path is None:
            yield self._connection()
            return
        conn = open_backup_reader(self.path)
        try:
            yield conn
        finally:
            conn.close()

    def views(self) -> list[tuple[str, str]]:
        """(name, CREATE VIEW text) of every view, in creation order."""
        with self._lock:
            try:
                rows = self._connection().execute(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY rowid"
                ).fetchall()
            except sqlite3.Error as exc:
                raise EngineError(f"cannot read the views of {self!r}: "
                                  f"{source_problem(exc)}") from exc
        return [(name, sql) for name, sql in rows]

    def read_table(self, table: Table, *, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
        with self._lock:
            conn = self._connection()
        if self._coercions is None:
            self._coercions = []
        whole = self._whole_table(conn, table, batch_size) if self._shares_content() else None
        if whole is not None:
            self._coercions.extend(whole.coercions)
            yield from whole.data.to_batches(max_chunksize=batch_size)
            return
        # Text repaired while reading is a coercion too; it joins those found by tables().
        yield from read_batches(conn, table, batch_size=batch_size, lock=self._lock,
                                on_coercion=self._coercions.append)

    def _shares_content(self) -> bool:
        """Whether what this connection reads may be shared with other readers of the same file
        content: only a read-only connection to a file (a writer's data moves under it)."""
        return self.read_only and self.path is not None

    def _content_key(self, conn: sqlite3.Connection) -> str:
        """The fingerprint, computed once per read-only connection; the caller holds the lock."""
        if self._fingerprint is None or not self.read_only:
            self._fingerprint = fingerprint(conn, self.path)
        return self._fingerprint

    def _whole_table(self, conn: sqlite3.Connection, table: Table,
                     batch_size: int) -> CachedRows | None:
        """``table``'s rows read at once -- through ADBC when it can, kept for the next reader of
        the same content -- or None when the table is too large to hold (then it streams)."""
        with self._lock:
            key = table_key(self._content_key(conn), table)
        if not fits(table):
            return None
        with SOURCES.reading(key):
            kept = SOURCES.rows(key)
            if kept is not None and kept.complete:
                return kept
            assert self.path is not None  # _shares_content
            if kept is not None:  # some columns came with the type scan: read only the rest
                known = {name: kept.data.column(name) for name in kept.data.column_names}
                data = introspect_arrow.complete_table(self.path, table, known)
            else:
                data = introspect_arrow.read_table(self.path, table)
            if data is not None:
                kept = CachedRows(data)
            else:
                found: list[Coercion] = []
                batches = list(read_batches(conn, table, batch_size=batch_size, lock=self._lock,
                                            on_coercion=found.append))
                kept = CachedRows(pa.Table.from_batches(batches, schema=arrow_schema(table)),
                                  found)
            SOURCES.keep(key, kept)
            return kept

    def fingerprint(self) -> str:
        with self._lock:
            return self._content_key(self._connection())

    # -- load target -------------------------------------------------------------------------
    def load(self, source: Backend, *, fingerprint: str | None = None,
             replace: bool = False, names: str = "exact") -> LoadReport:
        if names != "exact":
            raise ConfigError(
                f"a SQLite target is a byte-for-byte copy of its SQLite source; names={names!r} "
                "applies to DuckDB, PostgreSQL and MySQL targets only")
        if not isinstance(source, SQLiteBackend):
            raise LoadError(f"a SQLite target loads only from a SQLite source, not {source!r}")
        with self._lock:
            return load_into_sqlite(self, source, fingerprint=fingerprint, replace=replace)

    @classmethod
    def build_from_script(cls, target: URL, script: SetupScript, **options: Any) -> LoadReport:
        """See :mod:`polysql.backends.sqlite.setup`."""

        with cls.connect(target, read_only=False, **options) as writer, writer._lock:
            return build_from_script(writer, script)


def _introspect_keeping(conn: sqlite3.Connection, fingerprint: str) -> list[SourceTable]:
    """Introspect, keeping the tables the type scan read for the loads that follow (tables too
    large to keep are streamed later, as always)."""
    sources = introspect(conn, read_ahead=True)
    for source in sources:
        if source.read_ahead:
            names = list(source.read_ahead)
            SOURCES.keep(table_key(fingerprint, source.table), CachedRows(
                pa.table([source.read_ahead[n] for n in names], names=names),
                complete=len(names) == len(source.table.columns)))
        source.read_ahead = {}  # the schema cache keeps descriptions, never rows
    return sources
