"""PostgreSQL connections: URL to libpq parameters, opening, and the evaluation pool.

The pool is the shared one (:mod:`polysql.backends._common.pool`); this module says how a
PostgreSQL connection is opened, checked and closed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from sqlalchemy.engine import URL

from polysql.backends._common.pool import ConnectionPool
from polysql.core.errors import ConfigError, EngineUnavailableError

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
# Session defaults sent at connection start (libpq ``options``), so that an answer does not depend
# on how the server, database or role is configured. They are the session's own defaults, so the
# DISCARD ALL between pooled queries keeps them; a URL's own ``options`` come after, so they win.
# * TimeZone: a naive timestamp cast to timestamptz (or EXTRACT(EPOCH) of one) is read as UTC, as
#   every other engine and the comparison read naive timestamps.
# * DateStyle, IntervalStyle: dates cast to text read '2021-03-02' (not '02/03/2021'), and
#   intervals come in the only style psycopg can parse (any other fails every interval result).
# * lc_time, lc_numeric, lc_monetary: to_char month names, separators and money text are C's
#   (English, '.'), as on the other engines; 'C' exists on every server.
SESSION_OPTIONS = ("-c TimeZone=UTC -c DateStyle=ISO,MDY -c IntervalStyle=postgres "
                   "-c lc_time=C -c lc_numeric=C -c lc_monetary=C")
# Environment variables libpq sends as session settings after ``options``, so that they would win
# over it: a shell with PGDATESTYLE='SQL, DMY' would turn '2021-03-02' into '02/03/2021' in every
# date cast to text. When one is set, the settings are set again once connected, and after every
# DISCARD ALL (which returns a session to what its start-up packet said).
_ENVIRONMENT_SETTINGS = {"PGTZ": "timezone", "PGDATESTYLE": "datestyle"}
# ``-c name=value`` or ``--name=value``; libpq's options escape a space in a value as ``\ ``.
_OPTION = re.compile(r"(?:-c\s*|--)([A-Za-z_.]+)=((?:\\.|\S)+)")
_ESCAPED = re.compile(r"\\(.)")
# The settings to set again on each connection that needs it (none: the environment is quiet).
_PINNED: weakref.WeakKeyDictionary[psycopg.Connection, tuple[tuple[str, str], ...]] = \
    weakref.WeakKeyDictionary()


@functools.cache
def _libpq_keywords() -> frozenset[str]:
    """The connection options the installed libpq knows."""
    return frozenset(option.keyword.decode() for option in psycopg.pq.Conninfo.get_defaults())


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
    unknown = sorted(set(url.query) - _libpq_keywords())
    if unknown:
        # libpq would refuse them too, but at connect time, where it reads as an outage
        raise ConfigError(
            f"unknown PostgreSQL connection option(s) in the URL query: {', '.join(unknown)}; "
            f"the query takes libpq's (sslmode, connect_timeout, options, host, ...)")
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
    params["options"] = f"{SESSION_OPTIONS} {params.get('options', '')}".rstrip()
    return params


def describe(params: dict[str, Any]) -> str:
    """``user@host:port/dbname`` for messages (never the password)."""
    return f"{params['user']}@{params['host']}:{params['port']}/{params['dbname']}"


def open_connection(params: dict[str, Any], *, autocommit: bool = True) -> psycopg.Connection:
    """A new connection, or EngineUnavailableError saying which server refused and why."""
    try:
        # prepare_threshold=None: never prepare statements server-side behind our back; evaluated
        # SQL is run once, and a pooled session must carry nothing from one query to the next.
        conn = psycopg.connect(autocommit=autocommit, prepare_threshold=None, **params)
    except psycopg.Error as exc:
        raise EngineUnavailableError(
            f"cannot connect to PostgreSQL as {describe(params)}: "
            f"{str(exc).strip() or type(exc).__name__}") from exc
    pinned = pinned_over_environment(str(params.get("options", "")))
    if pinned:
        _PINNED[conn] = pinned
        with closed_on_failure(conn, f"cannot set the session of PostgreSQL {describe(params)}"):
            restore_settings(conn)
    return conn


@contextlib.contextmanager
def closed_on_failure(conn: psycopg.Connection, what: str) -> Iterator[None]:
    """Close ``conn`` and raise EngineUnavailableError (``what``: the exception) when the block
    fails on it: a connection that failed its first statements is of no use."""
    try:
        yield
    except psycopg.Error as exc:
        conn.close()
        raise EngineUnavailableError(f"{what}: {exc}") from exc


def pinned_over_environment(options: str) -> tuple[tuple[str, str], ...]:
    """The (setting, value) pairs of ``options`` that a variable of this process's environment
    would override; empty when none of those variables is set."""
    overridden = {setting for variable, setting in _ENVIRONMENT_SETTINGS.items()
                  if os.environ.get(variable)}
    if not overridden:
        return ()
    chosen: dict[str, str] = {}
    for name, value in _OPTION.findall(options):  # the last one of a setting wins, as in libpq
        if name.lower() in overridden:
            chosen[name.lower()] = _ESCAPED.sub(r"\1", value)
    return tuple(chosen.items())


def restore_settings(conn: psycopg.Connection) -> None:
    """Set again what the environment overrode on ``conn`` (nothing when it overrode nothing)."""
    pinned = _PINNED.get(conn)
    if not pinned:
        return
    calls = ", ".join("set_config(%s, %s, false)" for _ in pinned)
    conn.execute(f"SELECT {calls}", [part for pair in pinned for part in pair])
    if not conn.autocommit:
        conn.commit()


def usable(conn: psycopg.Connection) -> bool:
    """A connection fit to run the next statement: open, not broken, not inside a transaction
    (evaluation rolls every statement back; one left open means its state is unknown)."""
    return (not conn.closed and not conn.broken
            and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE)


def connection_pool(open_one: Callable[[], psycopg.Connection],
                    size: int) -> ConnectionPool[psycopg.Connection]:
    """The pool an evaluation backend draws its connections from (see
    :mod:`polysql.backends._common.pool`); ``open_one`` opens and checks one connection."""
    return ConnectionPool(open_one, _quietly_close, size=size, engine="PostgreSQL",
                          usable=usable)


def _quietly_close(conn: psycopg.Connection) -> None:
    # the connection is being thrown away; a failure to say goodbye changes nothing
    with contextlib.suppress(psycopg.Error):
        conn.close()
