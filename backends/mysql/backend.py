"""MySQL 8 / MariaDB backend: an evaluation engine and a load target, reached over PyMySQL.

URLs: ``mysql://user:password@host:port/database`` (also ``mysql+pymysql://``, ``mariadb://``);
defaults host 127.0.0.1, port 3306, user root. A URL without a database is a server URL.

Evaluated SQL runs as a SELECT-only login created for its database at load time, inside
``START TRANSACTION READ ONLY`` (always rolled back), under the server's own statement timeout
with a ``KILL QUERY`` backstop; see ``execute.py`` and ``setup.py``. Statements share a
small pool of connections per backend instance.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pymysql
from sqlalchemy.engine import URL

from polysql.backends._common.cancel import Flight, Flights
from polysql.backends._common.pool import ConnectionPool
from polysql.backends._common.statement_text import refuse_text
from polysql.backends.base import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    Backend,
    EngineInfo,
    SetupScript,
)
from polysql.backends.mysql import INFO
from polysql.backends.mysql.connect import (
    Login,
    connection_pool,
    describe_server,
    login_from_url,
    open_connection,
)
from polysql.backends.mysql.errors_routines import RoutineLookup
from polysql.backends.mysql.execute import Backstop, Flavor, run_statement
from polysql.backends.mysql.introspect import change_marker, introspect
from polysql.backends.mysql.load import (
    LoadSettings,
    drop_loaded_database,
    load_failure,
    load_into_mysql,
)
from polysql.backends.mysql.screen import screen_statement
from polysql.backends.mysql.setup import (
    EvaluationLogin,
    build_from_script,
    create_team_reader,
    drop_team_reader,
    evaluation_login,
)
from polysql.backends.mysql.types_values import DECODERS
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError, LoadError
from polysql.core.model import Result
from polysql.core.schema import LoadReport, Table
from polysql.core.urls import parse_url

# MySQL and MariaDB limit database names to 64 characters.
MAX_DATABASE_NAME = 64
_HASH_DIGITS = 8
_UNSAFE = re.compile(r"[^a-z0-9_]+")
DEFAULT_POOL_SIZE = 4
# Seconds past the deadline before the client-side backstop cancels a statement the server
# has not stopped; the server's own timeout normally ends it well before.
DEFAULT_BACKSTOP_GRACE = 2.0
_OPTIONS = ("read_only", "pool_size", "screen", "collation", "reader_host", "backstop_grace")
_T = TypeVar("_T")


def evaluation_database_name(dataset: str, db_id: str) -> str:
    """``polysql_<dataset>_<db_id>``, lower-case, ``[a-z0-9_]`` only, at most 64 characters even
    with its underscores escaped (as the reader's GRANT names it).

    When making the name safe changed it (case, characters) or it had to be shortened, a hash of
    the original text is appended so distinct databases never share a name.
    """
    wanted = f"polysql_{dataset}_{db_id}"
    safe = _UNSAFE.sub("_", wanted.lower()).strip("_")
    if safe == wanted and _granted_length(safe) <= MAX_DATABASE_NAME:
        return safe
    digest = hashlib.sha256(wanted.encode("utf-8")).hexdigest()[:_HASH_DIGITS]
    stem = safe[:MAX_DATABASE_NAME - _HASH_DIGITS - 1]
    while _granted_length(f"{stem.rstrip('_')}_{digest}") > MAX_DATABASE_NAME:
        stem = stem[:-1]
    return f"{stem.rstrip('_')}_{digest}"


def _granted_length(name: str) -> int:
    """The name's length as a database-level GRANT spells it: every ``_`` escaped as ``\\_``
    (the server applies its 64-character limit to that form)."""
    return len(name) + name.count("_")


# Division and AVG results carry div_precision_increment (default 4) extra digits: AVG(7/3) would
# come back as 2.3333 and miss every other engine's 2.333333... by more than the comparison
# tolerance. The widest setting keeps the engine's own semantics (exact DECIMAL arithmetic) while
# not cutting digits off the answer. The session time zone is UTC, as on every other engine:
# UNIX_TIMESTAMP, CONVERT_TZ and TIMESTAMP columns would otherwise read a naive DATETIME in the
# server's zone, and the answer (and verdict) would depend on where the server runs. Month and
# day names (DATE_FORMAT's %M, MONTHNAME) are English, as on the other engines, whatever the
# server's lc_time_names.
EVALUATION_SESSION = ("SET SESSION div_precision_increment = 30, SESSION time_zone = '+00:00', "
                      "SESSION lc_time_names = 'en_US'")


class MySQLBackend(Backend):
    """One database on a MySQL 8 or MariaDB server (or the server itself, for loading)."""

    info: ClassVar[EngineInfo] = INFO
    name: ClassVar[str] = INFO.name
    dialect: ClassVar[str] = INFO.dialect
    capabilities: ClassVar[frozenset[str]] = frozenset({"read_only", "timeout", "load_target"})

    def __init__(self, url: URL, login: Login, *, read_only: bool, pool_size: int,
                 screen_sql: bool, collation: str | None, reader_host: str,
                 backstop_grace: float) -> None:
        self.url = url
        self.login = login
        self.read_only = read_only
        self.pool_size = pool_size
        self.screen_sql = screen_sql
        self.collation = collation
        self.reader_host = reader_host
        self.backstop_grace = backstop_grace
        self.flavor = Flavor("MySQL")
        self.server_version = ""
        self._evaluation: EvaluationLogin | None = None
        self._pool: ConnectionPool[Any] | None = None
        self._backstop: Backstop | None = None
        self._pool_login = login  # the login of the evaluation pool's connections, once made
        self._routines: RoutineLookup | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._flights = Flights()

    # -- connecting ----------------------------------------------------------------------------
    @classmethod
    def evaluation_url(cls, base: URL, *, dataset: str, db_id: str, cache_dir: Path) -> URL:
        return base.set(database=evaluation_database_name(dataset, db_id))

    @classmethod
    def connect(cls, url: URL | str, *, read_only: bool = True,
                pool_size: int = DEFAULT_POOL_SIZE, screen: bool = True,
                collation: str | None = None, reader_host: str = "%",
                backstop_grace: float = DEFAULT_BACKSTOP_GRACE, **options: Any) -> MySQLBackend:
        """Open ``url``. ``read_only=True`` (evaluation) logs evaluated SQL in as the database's
        SELECT-only reader; ``read_only=False`` is for loading as an administrator.

        ``screen=False`` skips the statement screen so tests can prove the server-side barriers
        hold on their own; ``collation`` is the text collation loads use (default: the server's
        default for utf8mb4); ``reader_host`` the host part of the reader accounts loads create.
        """
        if options:
            raise ConfigError(f"unknown option(s) for the mysql backend: "
                              f"{', '.join(sorted(options))}; supported: {', '.join(_OPTIONS)}")
        if backstop_grace <= 0:
            raise ConfigError(f"backstop_grace must be positive seconds, got {backstop_grace}")
        if pool_size < 1:
            raise ConfigError(f"pool_size must be at least 1, got {pool_size}")
        parsed = parse_url(url)
        backend = cls(parsed, login_from_url(parsed), read_only=read_only, pool_size=pool_size,
                      screen_sql=screen, collation=collation, reader_host=reader_host,
                      backstop_grace=backstop_grace)
        backend._probe()
        if read_only and backend.login.database and backend._evaluation is not None:
            if backend._evaluation.login is None:
                raise EngineError(backend._evaluation.refusal or "no evaluation login")
            backend._check_reader()
        return backend

    @classmethod
    def create_reader(cls, admin: URL, login: str, databases: Sequence[str]) -> str:
        return create_team_reader(login_from_url(parse_url(admin)), login, databases)

    @classmethod
    def drop_reader(cls, admin: URL, login: str) -> bool:
        return drop_team_reader(login_from_url(parse_url(admin)), login)

    def _check_reader(self) -> None:
        """Log the reader in once now, so a reader that cannot log in fails ``connect``."""
        evaluation = self._evaluation_pool()
        if isinstance(evaluation, Result):
            raise EngineUnavailableError(evaluation.error.message if evaluation.error else "")
        pool = evaluation[0]
        try:
            pool.release(pool.acquire(wait=self.login.connect_timeout))
        except EngineUnavailableError as exc:
            self.close()
            raise EngineUnavailableError(
                f"{exc}; if the reader account was removed, load the database again "
                f"(replace=True) to recreate it") from exc

    def _probe(self) -> None:
        """Check the server is there, learn what it is, and (read-only) find the reader.

        An evaluation connection needs its database to exist; a load creates it.
        """
        conn = open_connection(self.login if self.read_only else self.login.without_database())
        try:
            flavor, number = describe_server(conn.get_server_info())
            self.flavor = Flavor(flavor)
            self.server_version = number
            if self.read_only:
                self._evaluation = evaluation_login(conn, self.login)
        finally:
            conn.close()

    def _evaluation_pool(self) -> tuple[ConnectionPool[Any], Backstop, Login] | Result:
        """The pool evaluated SQL runs on, its backstop and its login, or a failed Result saying
        why there is none."""
        with self._lock:
            if self._closed:
                return Result.failed("unavailable", f"{self!r} is closed", engine=self.name)
            if self._pool is not None and self._backstop is not None:
                return self._pool, self._backstop, self._pool_login
            if self._evaluation is None:
                try:
                    conn = open_connection(self.login.without_database())
                except EngineUnavailableError as exc:
                    return Result.failed("unavailable", str(exc), engine=self.name)
                try:
                    self._evaluation = evaluation_login(conn, self.login)
                finally:
                    conn.close()
            login = self._evaluation.login
            if login is None:
                # The login, not the statement, is refused: the engine cannot be used as given
                # (a sweep must not count this as the prediction's error, compare exits 3).
                return Result.failed("unavailable",
                                     self._evaluation.refusal or "no evaluation login",
                                     engine=self.name)
            self._pool = connection_pool(login, self.pool_size, conv=DECODERS,
                                         init_command=EVALUATION_SESSION)
            self._pool_login = login
            self._backstop = Backstop(login, self.backstop_grace)
            # the login the backend was opened with looks up routines the reader may not run,
            # unless it is the reader itself (then nobody here can see them)
            admin = self.login if self.login.user != login.user else None
            self._routines = RoutineLookup(admin, login.database)
            return self._pool, self._backstop, login

    @property
    def evaluation_user(self) -> str | None:
        """The login evaluated SQL runs as (None until known)."""
        login = self._evaluation.login if self._evaluation else None
        return login.user if login else None

    @property
    def connections_opened(self) -> int:
        """Server connections the evaluation pool has opened so far."""
        return self._pool.opened if self._pool is not None else 0

    # -- evaluation ----------------------------------------------------------------------------
    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        refused = refuse_text(sql, comments=self.info.comments, engine=self.name)
        if refused is not None:
            return refused
        with self._flights.track() as flight:
            return self._execute(sql, timeout, max_rows, flight)

    def cancel(self) -> bool:
        """``KILL QUERY`` for each running statement from the backstop's own connection (the
        reader may kill its own sessions), as the timeout's backstop does."""
        return self._flights.cancel()

    def _execute(self, sql: str, timeout: float, max_rows: int, flight: Flight) -> Result:
        started = time.perf_counter()
        if self.screen_sql:
            reason = screen_statement(sql, self.dialect)
            if reason is not None:
                return Result.failed("forbidden", reason, elapsed=time.perf_counter() - started,
                                     engine=self.name)
        evaluation = self._evaluation_pool()
        if isinstance(evaluation, Result):
            return evaluation
        pool, backstop, _ = evaluation
        try:
            conn = pool.acquire(wait=timeout + 3 * self.backstop_grace + 10)
        except EngineUnavailableError as exc:
            return Result.failed("unavailable", str(exc), elapsed=time.perf_counter() - started,
                                 engine=self.name)
        try:
            outcome = run_statement(conn, sql, timeout=timeout, max_rows=max_rows,
                                    flavor=self.flavor, backstop=backstop, engine=self.name,
                                    flight=flight, routines=self._routines)
        except Exception as exc:  # execute never raises: e.g. a value the driver cannot decode
            pool.discard(conn)
            return Result.failed("runtime", f"{type(exc).__name__}: {exc}",
                                 elapsed=time.perf_counter() - started, engine=self.name)
        except BaseException:
            # Ctrl-C: the statement was killed mid-way (see run_statement); the session's state
            # is unknown, and a connection never handed back would shrink the pool for good.
            pool.discard(conn)
            raise
        if outcome.reusable:
            pool.release(conn)
        else:
            pool.discard(conn)
        return outcome.result

    def version(self) -> str:
        return f"{self.flavor.name} {self.server_version}"

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
            backstop, self._backstop = self._backstop, None
        if pool is not None:
            pool.close()
        if backstop is not None:
            backstop.close()

    def _reset_evaluation(self) -> None:
        """Forget the evaluation login and its pool (after a load changed who may read)."""
        with self._lock:
            pool, self._pool = self._pool, None
            backstop, self._backstop = self._backstop, None
            self._evaluation = None
        if pool is not None:
            pool.close()
        if backstop is not None:
            backstop.close()

    # -- introspection and loading -------------------------------------------------------------
    def tables(self) -> list[Table]:
        """The loaded database's tables: physical types as declared, logical types, keys."""

        database = self._require_database("introspect")
        return self._read_catalog(database, lambda conn: introspect(conn, database))

    def _read_catalog(self, database: str,
                      read: Callable[[pymysql.connections.Connection], _T]) -> _T:
        """``read`` run on a connection of its own, as the evaluation login on a read-only
        backend."""
        login = self.login
        if self.read_only:
            evaluation = self._evaluation_pool()
            if isinstance(evaluation, Result):
                raise EngineError(f"cannot read the schema of {database!r}: "
                                  f"{evaluation.error.message if evaluation.error else ''}")
            login = evaluation[2]
        conn = open_connection(login, conv=DECODERS)
        try:
            return read(conn)
        finally:
            conn.close()

    def change_marker(self) -> str | None:
        """See :func:`polysql.backends.mysql.introspect.change_marker`."""

        database = self._require_database("read the change times of")
        return self._read_catalog(database, lambda conn: change_marker(conn, database))

    def load(self, source: Backend, *, fingerprint: str | None = None, replace: bool = False,
             names: str = "exact") -> LoadReport:
        """Copy ``source`` into this URL's database; see ``load.py``."""

        if self.read_only:
            raise LoadError(f"{self!r} was opened read-only; connect with read_only=False to load")
        database = self._require_database("load into")
        settings = LoadSettings.create(names=names, collation=self.collation,
                                       reader_host=self.reader_host)
        try:
            return load_into_mysql(self.login, database, source, settings,
                                   fingerprint=fingerprint, replace=replace,
                                   engine_version=self.version(),
                                   target_name=self.url.render_as_string(hide_password=True))
        except pymysql.err.MySQLError as exc:
            raise load_failure(self.login, database, exc) from exc
        finally:
            self._reset_evaluation()

    @classmethod
    def build_from_script(cls, target: URL, script: SetupScript, **options: Any) -> LoadReport:
        """Build ``target``'s database from ``script`` as its administrator; see
        :func:`polysql.backends.mysql.setup.build_from_script`."""
        with cls.connect(target, read_only=False, **options) as writer:
            return build_from_script(writer, script)

    @classmethod
    def drop(cls, url: URL | str) -> None:
        """Remove a database polysql loaded: the database, its staging leftovers, its reader
        login and its record in ``polysql_meta`` (for tests and for cleaning a server)."""

        parsed = parse_url(url)
        login = login_from_url(parsed)
        if not login.database:
            raise ConfigError(f"{parsed.render_as_string(hide_password=True)!r} names no database")
        drop_loaded_database(login, login.database)

    def _require_database(self, action: str) -> str:
        if not self.login.database:
            raise ConfigError(
                f"cannot {action} {self.url.render_as_string(hide_password=True)!r}: the URL "
                f"names no database (use mysql://user@host:port/database)")
        return self.login.database
