"""PostgreSQL connections: URL to libpq parameters, opening, and a small thread-safe pool.

No pool library is required: an evaluation backend needs a handful of connections reused across
queries, handed out one per thread, and replaced when the server drops them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from sqlalchemy.engine import URL

from polysql.errors import ConfigError, EngineUnavailableError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5432
DEFAULT_USER = "postgres"
# The database every cluster has; used for server-level work and for server URLs (no database).
MAINTENANCE_DATABASE = "postgres"
# Seconds to wait for a connection before calling the server unreachable.
DEFAULT_CONNECT_TIMEOUT = 5
APPLICATION_NAME = "polysql"

# URL query keys that polysql reads itself; every other key goes to libpq unchanged.
_RESERVED_QUERY_KEYS = frozenset({"dbname", "user", "password"})


def connection_params(url: URL, *, user: str | None = None, password: str | None = None,
                      database: str | None = None) -> dict[str, Any]:
    """libpq keyword parameters for ``url``; ``user``/``password``/``database`` override it.

    Query parameters other than polysql's own (``?sslmode=require``, ``?host=/run/postgresql``)
    pass through to libpq, so anything libpq supports can be set from the URL.
    """
    reserved = _RESERVED_QUERY_KEYS & set(url.query)
    if reserved:
        raise ConfigError(
            f"PostgreSQL URL query sets {', '.join(sorted(reserved))}: put the user, password and "
            f"database in the URL itself, e.g. postgresql://user:password@host:5432/database")
    params: dict[str, Any] = {
        "host": url.host or DEFAULT_HOST,
        "port": url.port or DEFAULT_PORT,
        "user": user or url.username or DEFAULT_USER,
        "dbname": database or url.database or MAINTENANCE_DATABASE,
        "connect_timeout": DEFAULT_CONNECT_TIMEOUT,
        "application_name": APPLICATION_NAME,
    }
    chosen_password = password if user is not None else (password or url.password)
    if chosen_password:
        params["password"] = chosen_password
    for key, value in url.query.items():
        params[key] = value if isinstance(value, str) else value[-1]
    return params


def describe(params: dict[str, Any]) -> str:
    """``user@host:port/dbname`` for messages (never the password)."""
    return f"{params['user']}@{params['host']}:{params['port']}/{params['dbname']}"


def open_connection(params: dict[str, Any], *, autocommit: bool = True) -> psycopg.Connection:
    """A new connection, or EngineUnavailableError saying which server refused and why."""
    try:
        # prepare_threshold=None: never prepare statements server-side behind our back; evaluated
        # SQL is run once, and a pooled session must carry nothing from one query to the next.
        return psycopg.connect(autocommit=autocommit, prepare_threshold=None, **params)
    except psycopg.Error as exc:
        raise EngineUnavailableError(
            f"cannot connect to PostgreSQL as {describe(params)}: "
            f"{str(exc).strip() or type(exc).__name__}") from exc


class ConnectionPool:
    """Up to ``size`` connections made by ``factory``, each used by one thread at a time.

    Connections are opened lazily and kept open; a connection returned broken, closed or inside a
    transaction is discarded, so the next caller gets a fresh one (that is how the backend
    reconnects after a server restart).
    """

    def __init__(self, factory: Callable[[], psycopg.Connection], size: int,
                 *, wait: float = 60.0) -> None:
        if size < 1:
            raise ConfigError(f"pool_size must be at least 1, got {size}")
        self._factory = factory
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[psycopg.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self._wait = wait
        self.size = size
        self.opened = 0  # connections opened over the pool's life, for diagnostics and tests

    def acquire(self) -> psycopg.Connection:
        if self._closed:
            raise EngineUnavailableError("the PostgreSQL backend is closed")
        if not self._slots.acquire(timeout=self._wait):
            raise EngineUnavailableError(
                f"no PostgreSQL connection free within {self._wait:g}s (pool of {self.size})")
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is not None and not conn.closed:
            return conn
        try:
            conn = self._factory()
        except BaseException:
            self._slots.release()
            raise
        with self._lock:
            self.opened += 1
        return conn

    def release(self, conn: psycopg.Connection) -> None:
        reusable = (not self._closed and not conn.closed and not conn.broken
                    and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE)
        if reusable:
            with self._lock:
                self._idle.append(conn)
        else:
            _quietly_close(conn)
        self._slots.release()

    def close(self) -> None:
        """Close idle connections now; connections in use close when they are released."""
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            _quietly_close(conn)


def _quietly_close(conn: psycopg.Connection) -> None:
    # the connection is being thrown away; a failure to say goodbye changes nothing
    with contextlib.suppress(psycopg.Error):
        conn.close()
