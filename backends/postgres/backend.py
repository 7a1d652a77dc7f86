"""PostgreSQL backend (psycopg 3): an evaluation engine and a load target.

URLs: ``postgresql://user:password@host:port/database`` (also ``postgres://`` and any ``+driver``
suffix such as ``postgresql+psycopg://``; the driver is always psycopg 3). Defaults: host
127.0.0.1, port 5432, user postgres. A URL without a database is a server URL (the ``postgres``
maintenance database is used). Other query parameters go to libpq (``?sslmode=require``).

Evaluation connections (``read_only=True``, the default) never log in as the URL's user: they log
in as a least-privilege reader role created by the load (``polysql_reader``), whose generated
password is looked up in the ``polysql_meta`` database with the URL's administrator login -- or
used directly when the URL names the reader itself. Each statement runs in a read-only
transaction that is always rolled back, under ``SET LOCAL statement_timeout`` plus a client-side
cancel as backstop. See docs/engines-postgres.md.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import psycopg
from sqlalchemy.engine import URL

from polysql.backends._common.cancel import Flights
from polysql.backends._common.guard import screen
from polysql.backends._common.load_files import load_stopped
from polysql.backends._common.pool import ConnectionPool
from polysql.backends._common.readers import not_loaded, privileged_login_refusal
from polysql.backends._common.statement_text import refuse_text
from polysql.backends.base import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    Backend,
    EngineInfo,
    SetupScript,
)
from polysql.backends.postgres import INFO
from polysql.backends.postgres.connect import (
    MAINTENANCE_DATABASE,
    closed_on_failure,
    connection_params,
    connection_pool,
    describe,
    open_connection,
)
from polysql.backends.postgres.errors import connection_lost, message_of
from polysql.backends.postgres.execute import is_query, run_statement
from polysql.backends.postgres.introspect import change_marker, read_tables
from polysql.backends.postgres.load import load_into_postgres
from polysql.backends.postgres.load_views import FOLD_SCHEMA, FOLD_SEARCH_PATH
from polysql.backends.postgres.setup import (
    DEFAULT_READER,
    META_DATABASE,
    broad_rights,
    build_from_script,
    create_team_reader,
    drop_team_reader,
    loaded_reader,
)
from polysql.backends.postgres.types import MAX_IDENTIFIER_BYTES
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError
from polysql.core.model import Result
from polysql.core.schema import LoadReport, Table
from polysql.core.urls import parse_url

DEFAULT_POOL_SIZE = 4
_OPTIONS = ("read_only", "pool_size", "reader_role", "screen", "server_timeout")
_T = TypeVar("_T")


def evaluation_database_name(dataset: str, db_id: str) -> str:
    """``polysql_<dataset>_<db_id>``: lower-case letters, digits and underscores, at most 63
    bytes. A short hash of the original names is appended whenever characters had to be replaced
    or the name shortened, so two different databases never share a name."""
    raw = f"polysql_{dataset}_{db_id}"
    clean = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", raw.lower())).rstrip("_")
    lossy = clean != re.sub(r"_+", "_", raw.lower()).rstrip("_")
    if not lossy and len(clean) <= MAX_IDENTIFIER_BYTES:
        return clean
    suffix = hashlib.sha256(raw.encode("utf-8")).hexdigest()[:8]
    return f"{clean[:MAX_IDENTIFIER_BYTES - len(suffix) - 1].rstrip('_')}_{suffix}"


def format_version(server_version: int) -> str:
    """libpq's integer server version (150020) as PostgreSQL prints it (15.20)."""
    major = server_version // 10000
    if major >= 10:
        return f"PostgreSQL {major}.{server_version % 10000}"
    return f"PostgreSQL {major}.{server_version // 100 % 100}.{server_version % 100}"


def _check_not_privileged(conn: psycopg.Connection) -> None:
    row = conn.execute(
        "SELECT rolname, rolsuper OR rolcreaterole OR rolcreatedb OR rolreplication OR "
        "rolbypassrls FROM pg_roles WHERE rolname = current_user").fetchone()
    if row is None or row[1]:
        conn.close()
        raise EngineError(
            f"refusing to evaluate SQL as PostgreSQL role {row[0] if row else '?'!r}: it has "
            f"administrative attributes. Evaluation must log in as the reader role a load creates")


# undefined_table, undefined_column: what a name in the other layout fails with
_UNDEFINED_NAME = frozenset({"42P01", "42703"})


class PostgresBackend(Backend):
    """One PostgreSQL database on one server, with a small pool of connections."""

    info: ClassVar[EngineInfo] = INFO
    name: ClassVar[str] = INFO.name
    dialect: ClassVar[str] = INFO.dialect
    capabilities: ClassVar[frozenset[str]] = frozenset({"read_only", "timeout", "load_target"})

    def __init__(self, url: URL, *, read_only: bool, login: dict[str, Any], pool_size: int,
                 reader_role: str, screen_sql: bool, server_timeout: bool) -> None:
        self.url = url
        self.read_only = read_only
        self.reader_role = reader_role
        self.login = login  # libpq parameters of the connections that run statements
        self._screen = screen_sql
        self._server_timeout = server_timeout
        self._pool = connection_pool(self._open, pool_size)
        self._version: str | None = None
        # the search path of the retry in pgloader's names (None: the database has no fold
        # schema, as one polysql did not load); learnt from the first connection
        self._fold_path: str | None = None
        self._fold_checked = False
        self._load_lock = threading.Lock()
        self._flights = Flights()

    @classmethod
    def evaluation_url(cls, base: URL, *, dataset: str, db_id: str, cache_dir: Path) -> URL:
        return base.set(database=evaluation_database_name(dataset, db_id))

    @classmethod
    def connect(cls, url: URL | str, *, read_only: bool = True,
                pool_size: int = DEFAULT_POOL_SIZE, reader_role: str = DEFAULT_READER,
                screen: bool = True, server_timeout: bool = True,
                **options: Any) -> PostgresBackend:
        """``read_only=True``: evaluate as the reader role. ``read_only=False``: the URL's user,
        for loading. ``screen`` and ``server_timeout`` exist so tests can prove the server-side
        barriers and the client-side timeout each hold on their own; leave them on."""
        if options:
            raise ConfigError(
                f"unknown option(s) for the postgres backend: {', '.join(sorted(options))}; "
                f"supported: {', '.join(_OPTIONS)}")
        parsed = parse_url(url)
        login = (cls._reader_login(parsed, reader_role) if read_only
                 else connection_params(parsed))
        backend = cls(parsed, read_only=read_only, login=login, pool_size=pool_size,
                      reader_role=reader_role, screen_sql=screen, server_timeout=server_timeout)
        backend._probe()
        return backend

    def _probe(self) -> None:
        """Connect now, so an unreachable server fails in ``connect``. A load target's database
        may not exist yet (the load creates it): that probe uses the maintenance database."""
        if self.read_only:
            self.version()
            return
        conn = open_connection({**self.login, "dbname": MAINTENANCE_DATABASE})
        try:
            self._version = format_version(conn.info.server_version)
        finally:
            conn.close()

    @staticmethod
    def _reader_login(url: URL, reader_role: str) -> dict[str, Any]:
        """The login evaluated SQL runs as: the URL's own when it names the reader or a login
        that can only read; else the reader polysql created when it loaded this database; else
        a refusal (an administrator's login never runs evaluated SQL)."""
        own = connection_params(url)
        if url.username == reader_role:
            return own
        conn = open_connection(own)  # a database that is not there is unavailable, here
        try:
            rights = broad_rights(conn)
        finally:
            conn.close()
        if not rights:
            return own
        loaded, password = loaded_reader(url, own["dbname"], reader_role)
        if not loaded:
            raise EngineError(privileged_login_refusal(
                own["user"], rights, not_loaded(own["dbname"], f"{META_DATABASE} on this server"),
                own["dbname"]))
        if password is None:
            server = describe(own)
            raise EngineUnavailableError(
                f"no evaluation role {reader_role!r} is recorded on {server}: load the database "
                f"again (polysql load SOURCE {url.render_as_string(hide_password=True)}) or name "
                f"the reader polysql created; evaluated SQL never runs as the URL's own user")
        return connection_params(url, user=reader_role, password=password)

    @classmethod
    def create_reader(cls, admin: URL, login: str, databases: Sequence[str]) -> str:
        return create_team_reader(parse_url(admin), login, databases)

    @classmethod
    def drop_reader(cls, admin: URL, login: str) -> bool:
        return drop_team_reader(parse_url(admin), login)

    def _open(self) -> psycopg.Connection:
        conn = open_connection(self.login)
        if self.read_only:
            with closed_on_failure(conn, f"PostgreSQL connection as {describe(self.login)} "
                                         f"failed at once"):
                _check_not_privileged(conn)
        if self._version is None:
            self._version = format_version(conn.info.server_version)
        if not self._fold_checked:
            try:
                found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                                     (FOLD_SCHEMA,)).fetchone()
            except psycopg.Error:
                found = None
            self._fold_path = FOLD_SEARCH_PATH if found else None
            self._fold_checked = True
        return conn

    # -- evaluation --------------------------------------------------------------------------
    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        refused = refuse_text(sql, comments=self.info.comments, engine=self.name)
        if refused is not None:
            return refused
        reason = screen(sql, self.dialect) if self._screen else None
        if reason is not None:
            return Result.failed("forbidden", reason, engine=self.name)
        with self._flights.track() as flight:
            try:
                conn = self._pool.acquire()
            except EngineError as exc:
                return Result.failed("unavailable", str(exc), engine=self.name)
            try:
                result = run_statement(conn, sql, timeout=timeout, max_rows=max_rows,
                                       server_timeout=self._server_timeout, engine=self.name,
                                       flight=flight)
                if (self._fold_path is None or result.error is None
                        or result.error.sqlstate not in _UNDEFINED_NAME or not is_query(sql)):
                    return result
                # written for pgloader's names (load_views.py): read it in that layout once
                retry = run_statement(conn, sql, timeout=timeout, max_rows=max_rows,
                                      server_timeout=self._server_timeout, engine=self.name,
                                      flight=flight, search_path=self._fold_path)
                retry.elapsed += result.elapsed
                if retry.error is not None and retry.error.sqlstate in _UNDEFINED_NAME:
                    return result  # unknown in both layouts: the error against the loaded names
                # Read in pgloader's layout it ran, or failed past its names (an operator or
                # function that does not exist, a type error, a timeout): that is what is wrong
                # with it, not the names the first reading could not find.
                return retry
            finally:
                self._pool.release(conn)

    def cancel(self) -> bool:
        """A cancel request for each running statement (``cancel_safe``), as the client
        backstop of the timeout sends."""
        return self._flights.cancel()

    def version(self) -> str:
        if self._version is None:
            with self._pool.connection():
                pass  # opening one connection learns the version
        assert self._version is not None
        return self._version

    def close(self) -> None:
        self._pool.close()

    @property
    def pool(self) -> ConnectionPool[psycopg.Connection]:
        return self._pool

    # -- introspection -----------------------------------------------------------------------
    def tables(self) -> list[Table]:
        """The evaluation database's tables as PostgreSQL holds them (``public`` schema)."""
        return self._read_catalog(read_tables, "the tables")

    def change_marker(self) -> str | None:
        """See :func:`polysql.backends.postgres.introspect.change_marker`."""
        return self._read_catalog(change_marker, "the change counters")

    def _read_catalog(self, read: Callable[[psycopg.Connection], _T], what: str) -> _T:
        """``read`` run on a pooled connection inside a read-only transaction."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SET TRANSACTION READ ONLY")
                return read(conn)
        except psycopg.Error as exc:
            raise EngineError(f"cannot read {what} of {self!r}: {exc}") from exc

    # -- load target -------------------------------------------------------------------------
    def load(self, source: Backend, *, fingerprint: str | None = None, replace: bool = False,
             names: str = "exact") -> LoadReport:
        """Copy ``source`` into this database (created if missing) atomically; see
        :mod:`polysql.backends.postgres.load`."""

        with self._load_lock:
            try:
                return load_into_postgres(self, source, fingerprint=fingerprint,
                                          replace=replace, names=names)
            except psycopg.Error as exc:
                raise self._load_failure(exc) from exc

    def _load_failure(self, exc: psycopg.Error) -> EngineError:
        """The error a load the driver stopped raises: the server gone is an outage, anything
        else a failed load. Either way the database keeps its previous copy (the new one was
        still in its staging schema)."""
        return load_stopped("PostgreSQL", f"{self.url.host or 'localhost'}:{self.url.port or 5432}",
                            self.url.database or "", " ".join(message_of(exc).split()),
                            lost=connection_lost(exc))

    @classmethod
    def build_from_script(cls, target: URL, script: SetupScript, **options: Any) -> LoadReport:
        """Build ``target``'s database from ``script`` as its administrator, readable by the
        reader role ``options`` name; see :mod:`polysql.backends.postgres.setup`."""
        with cls.connect(target, read_only=False, **options) as writer, writer._load_lock:
            return build_from_script(writer, script)


__all__ = ["PostgresBackend", "evaluation_database_name", "format_version"]
