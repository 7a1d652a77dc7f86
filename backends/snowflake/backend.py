"""Snowflake backend (snowflake-connector-python): an evaluation engine and a load target.

URLs::

    snowflake://user@account/DATABASE/SCHEMA?warehouse=WH&role=ROLE&reader_role=READER
    snowflake://fake:snow@127.0.0.1:PORT/DATABASE/SCHEMA?emulator=fakesnow&emulator_version=X.Y.Z

The first is a real account (password from the URL or POLYSQL_SNOWFLAKE_PASSWORD, or a key pair
from POLYSQL_SNOWFLAKE_PRIVATE_KEY_PATH [+ _PASSPHRASE]). The second is a fakesnow server -- an
emulator running the SQL on DuckDB -- and everything it produces is labelled emulated: ``emulated``
is True, :meth:`version` says "fakesnow ... (emulated Snowflake ...)" and the engine is reported
as ``snowflake-emulated``.

Evaluation connections (``read_only=True``, the default) screen every statement
(:mod:`polysql.backends.snowflake.screen`: queries, SHOW, DESCRIBE and EXPLAIN only), log in with
the ``reader_role`` when one is given (the role a load grants SELECT to), and run each statement
under a server-side statement timeout, the connector's abort and a client backstop. See
docs/engines-snowflake.md.
"""

from __future__ import annotations

import hashlib
import re
import threading
from pathlib import Path
from typing import Any, ClassVar

import snowflake.connector.errors as sf_errors
from snowflake.connector import SnowflakeConnection
from sqlalchemy.engine import URL

from polysql.backends._common.cancel import Flights
from polysql.backends._common.pool import ConnectionPool
from polysql.backends._common.statement_text import refuse_text
from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Backend, EngineInfo
from polysql.backends.snowflake import INFO
from polysql.backends.snowflake.connect import (
    EMULATOR_VERSION_PARAM,
    Location,
    connection_params,
    connection_pool,
    describe,
    emulator_of,
    location,
    open_connection,
    query_value,
)
from polysql.backends.snowflake.execute import run_statement
from polysql.backends.snowflake.introspect import holds_tables, read_tables
from polysql.backends.snowflake.load import load_into_snowflake
from polysql.backends.snowflake.load_copy import Session
from polysql.backends.snowflake.screen import screen_statement
from polysql.backends.snowflake.types import MAX_IDENTIFIER_LENGTH
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError
from polysql.core.model import Result
from polysql.core.schema import LoadReport, Table
from polysql.core.urls import parse_url

DEFAULT_POOL_SIZE = 4
EVALUATION_SCHEMA = "PUBLIC"
BULK_CHOICES = ("auto", "put_copy", "insert")
_OPTIONS = ("read_only", "pool_size", "reader_role", "screen", "server_timeout", "bulk")


def evaluation_database_name(dataset: str, db_id: str) -> str:
    """``POLYSQL_<DATASET>_<DB_ID>``: upper-case letters, digits and underscores. A short hash of
    the original names is appended whenever characters had to be replaced or the name shortened,
    so two different databases never share a name."""
    raw = f"polysql_{dataset}_{db_id}".upper()
    clean = re.sub(r"_+", "_", re.sub(r"[^A-Z0-9_]", "_", raw)).rstrip("_")
    lossy = clean != re.sub(r"_+", "_", raw).rstrip("_")
    limit = MAX_IDENTIFIER_LENGTH
    if not lossy and len(clean) <= limit:
        return clean
    suffix = hashlib.sha256(f"polysql_{dataset}_{db_id}".encode()).hexdigest()[:8].upper()
    return f"{clean[:limit - len(suffix) - 1].rstrip('_')}_{suffix}"


class SnowflakeBackend(Backend):
    """One Snowflake schema (database/schema) on one account or emulator, with a small pool."""

    info: ClassVar[EngineInfo] = INFO
    name: ClassVar[str] = INFO.name
    dialect: ClassVar[str] = INFO.dialect
    capabilities: ClassVar[frozenset[str]] = frozenset({"read_only", "timeout", "load_target"})
    emulated: bool = False

    def __init__(self, url: URL, *, read_only: bool, reader_role: str | None, pool_size: int,
                 screen_sql: bool, server_timeout: bool, bulk: str) -> None:
        self.url = url
        self.read_only = read_only
        self.reader_role = reader_role
        self.emulated = emulator_of(url) is not None
        self.location: Location = location(url)
        self._screen = screen_sql
        self._server_timeout = server_timeout
        self._bulk = bulk
        role = reader_role if read_only else None
        self._params = connection_params(url, role=role)
        self._pool = connection_pool(self._open, pool_size)
        self._version: str | None = None
        self._version_lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._flights = Flights()

    # -- URLs --------------------------------------------------------------------------------
    @classmethod
    def evaluation_url(cls, base: URL, *, dataset: str, db_id: str, cache_dir: Path) -> URL:
        return base.set(database=f"{evaluation_database_name(dataset, db_id)}/{EVALUATION_SCHEMA}")

    @classmethod
    def is_emulated(cls, url: URL) -> bool:
        """True for ``?emulator=fakesnow`` URLs (a fakesnow server, SQL run by DuckDB)."""
        return emulator_of(parse_url(url)) is not None

    @classmethod
    def connect(cls, url: URL | str, *, read_only: bool = True, pool_size: int = DEFAULT_POOL_SIZE,
                reader_role: str | None = None, screen: bool = True, server_timeout: bool = True,
                bulk: str = "auto", **options: Any) -> SnowflakeBackend:
        """``read_only=True``: evaluate (screened; as ``reader_role`` -- the option or the URL's
        ``?reader_role=`` -- when given). ``read_only=False``: the URL's own login, for loading.
        ``bulk``: how a load sends rows (``auto``: PUT + COPY on Snowflake, INSERT on the
        emulator). ``screen`` and ``server_timeout`` exist so tests can prove each barrier on
        its own; leave them on."""
        if options:
            raise ConfigError(
                f"unknown option(s) for the snowflake backend: {', '.join(sorted(options))}; "
                f"supported: {', '.join(_OPTIONS)}")
        if bulk not in BULK_CHOICES:
            raise ConfigError(f"bulk must be one of {', '.join(BULK_CHOICES)}, got {bulk!r}")
        parsed = parse_url(url)
        role = reader_role or query_value(parsed, "reader_role")
        backend = cls(parsed, read_only=read_only, reader_role=role, pool_size=pool_size,
                      screen_sql=screen, server_timeout=server_timeout, bulk=bulk)
        backend.version()  # fail here, not at the first statement, when nothing answers
        if read_only:
            backend._require_tables()
        return backend

    def _require_tables(self) -> None:
        """Evaluating needs the tables a load made: without them every query would fail later
        as a wrong answer ("table does not exist") instead of the engine being unavailable now."""
        database, schema = self.location.database, self.location.schema
        if not database or not schema:
            return  # a server URL: nothing to evaluate against yet, said when a query runs
        try:
            with self._pool.connection() as conn:
                present = holds_tables(conn, database, schema)
        except sf_errors.Error:
            present = False
        if not present:
            self.close()
            raise EngineUnavailableError(
                f"{database}.{schema} holds no tables on {self!r} (or this login may not see "
                f"them): load it first (polysql load SOURCE URL) or name a loaded database")

    def _open(self) -> SnowflakeConnection:
        return open_connection(self._params)

    # -- evaluation --------------------------------------------------------------------------
    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        refused = refuse_text(sql, comments=self.info.comments, engine=self.name)
        if refused is not None:
            return refused
        # Evaluation connections screen every statement; a load's (read_only=False) connection
        # runs what it is given.
        reason = screen_statement(sql) if self._screen and self.read_only else None
        if reason is not None:
            return Result.failed("forbidden", reason, engine=self.name)
        with self._flights.track() as flight:
            try:
                conn = self._pool.acquire()
            except EngineError as exc:
                return Result.failed("unavailable", str(exc), engine=self.name)
            outcome = None
            try:
                outcome = run_statement(conn, sql, timeout=timeout, max_rows=max_rows,
                                        engine=self.name, emulated=self.emulated,
                                        server_timeout=self._server_timeout, flight=flight)
                return outcome.result
            finally:
                if outcome is None or outcome.broken:
                    self._pool.discard(conn)  # a connection that failed is replaced, not reused
                elif outcome.abandoned:
                    self._pool.abandon(conn)  # still busy: the statement's worker closes it
                else:
                    self._pool.release(conn)

    def cancel(self) -> bool:
        """The connector's abort request for each running statement (what its own timeout
        sends); a statement that does not stop is abandoned, as by the client backstop."""
        return self._flights.cancel()

    def version(self) -> str:
        with self._version_lock:
            if self._version is None:
                self._version = self._read_version()
            return self._version

    def _read_version(self) -> str:
        try:
            with self._pool.connection() as conn:
                cursor = conn.cursor()
                try:
                    if self.emulated:
                        # version() is DuckDB's own function, passed through by fakesnow
                        cursor.execute("SELECT version()", _no_retry=True)
                        duckdb_version = str(cursor.fetchone()[0])  # type: ignore[index]
                        fakesnow = query_value(self.url, EMULATOR_VERSION_PARAM)
                        label = f"fakesnow {fakesnow}" if fakesnow else "fakesnow"
                        return f"{label} (emulated Snowflake; DuckDB {duckdb_version})"
                    cursor.execute("SELECT CURRENT_VERSION()")
                    return f"Snowflake {cursor.fetchone()[0]}"  # type: ignore[index]
                finally:
                    cursor.close()
        except sf_errors.Error as exc:
            raise EngineUnavailableError(
                f"Snowflake at {describe(self._params)} did not answer: {exc}") from exc

    def close(self) -> None:
        self._pool.close()

    @property
    def pool(self) -> ConnectionPool[SnowflakeConnection]:
        return self._pool

    # -- introspection -----------------------------------------------------------------------
    def tables(self) -> list[Table]:
        """The evaluation schema's tables as Snowflake holds them."""

        database, schema = self.location.database, self.location.schema
        if not database or not schema:
            raise EngineError(f"{self!r} names no database/schema to describe")
        try:
            with self._pool.connection() as conn:
                return read_tables(conn, database, schema)
        except sf_errors.Error as exc:
            raise EngineError(f"cannot read the tables of {self!r}: {exc}") from exc

    # -- load target -------------------------------------------------------------------------
    def bulk_path(self) -> str:
        """How this load sends rows: the ``bulk`` option, where ``auto`` means PUT + COPY on
        Snowflake and INSERT on the emulator (whose COPY from Parquet is not faithful)."""
        if self._bulk == "auto":
            return "insert" if self.emulated else "put_copy"
        return self._bulk

    def load_session(self) -> Any:
        """A fresh connection for one load, outside the pool, without a current database (the
        load may create it), binding parameters server-side (``?``)."""

        params = connection_params(self.url, with_location=False)
        return Session(open_connection({**params, "paramstyle": "qmark"}), self.emulated)

    def load(self, source: Backend, *, fingerprint: str | None = None, replace: bool = False,
             names: str = "exact") -> LoadReport:
        """Copy ``source`` into this schema atomically; see
        :mod:`polysql.backends.snowflake.load`."""

        with self._load_lock:
            return load_into_snowflake(self, source, fingerprint=fingerprint, replace=replace,
                                       names=names)


__all__ = ["SnowflakeBackend", "evaluation_database_name"]
