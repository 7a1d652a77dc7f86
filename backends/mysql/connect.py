"""Connection settings from a ``mysql://`` URL, opening a connection, and the evaluation pool.

One backend instance keeps a few open connections (the shared pool of
:mod:`polysql.backends._common.pool`) and hands them out one statement at a time, so a runner
firing many statements does not pay a login per statement and the server sees at most ``size``
connections from it.
"""

from __future__ import annotations

import re
import ssl
import threading
from dataclasses import dataclass, field, replace
from typing import Any

import pymysql
from pymysql.constants import CLIENT
from sqlalchemy.engine import URL

from polysql.backends._common.pool import ConnectionPool
from polysql.core.errors import ConfigError, EngineUnavailableError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3306
DEFAULT_USER = "root"
# URL query parameters passed on to the driver (everything else is a mistake worth reporting).
URL_QUERY_OPTIONS = ("unix_socket", "connect_timeout")
# A connection idle this long is pinged before reuse: servers close idle sessions (wait_timeout)
# and a prediction should not fail because its connection died while nobody used it.
_PING_AFTER_IDLE = 30.0
_ACCEPTED_DRIVERS = ("", "pymysql")


@dataclass(frozen=True, slots=True)
class Login:
    """Everything needed to open one connection."""

    host: str
    port: int
    user: str
    password: str = field(repr=False)
    database: str | None = None
    unix_socket: str | None = None
    connect_timeout: float = 10.0

    def as_user(self, user: str, password: str) -> Login:
        return replace(self, user=user, password=password)

    def without_database(self) -> Login:
        return replace(self, database=None)


def login_from_url(url: URL) -> Login:
    """Connection settings for ``mysql[+pymysql]://user:pw@host:port/db`` (also ``mariadb://``)."""
    driver = url.get_driver_name() if "+" in url.drivername else ""
    if driver not in _ACCEPTED_DRIVERS:
        raise ConfigError(
            f"unsupported MySQL driver {driver!r} in {url.render_as_string(hide_password=True)!r}: "
            f"polysql talks to MySQL/MariaDB through PyMySQL; use mysql:// or mysql+pymysql://")
    unknown = sorted(set(url.query) - set(URL_QUERY_OPTIONS))
    if unknown:
        raise ConfigError(
            f"unknown URL parameter(s) {', '.join(unknown)} in a MySQL URL; supported: "
            f"{', '.join(URL_QUERY_OPTIONS)}")
    query: dict[str, Any] = dict(url.query)
    try:
        connect_timeout = float(query.get("connect_timeout", 10))
    except ValueError as exc:
        raise ConfigError(f"connect_timeout must be a number of seconds, got "
                          f"{query['connect_timeout']!r}") from exc
    socket_path = query.get("unix_socket")
    return Login(
        host=url.host or DEFAULT_HOST,
        port=url.port or DEFAULT_PORT,
        user=url.username or DEFAULT_USER,
        password=url.password or "",
        database=url.database or None,
        unix_socket=str(socket_path) if socket_path else None,
        connect_timeout=connect_timeout,
    )


class _Connection(pymysql.connections.Connection):
    """PyMySQL's connection, with the TLS context of its default "preferred" mode built once per
    process, without the certificates it never reads.

    With no TLS option given, PyMySQL (1.2 and later) tries TLS and falls back to plain TCP when
    the server has none, and for that builds a fresh context that verifies nothing -- loading the
    system's certificate store all the same: 25-35 ms of a 27 ms login to a local server. The
    context is the same every time, so one serves every connection (a context is made to be
    shared), and it is built here as PyMySQL builds it minus the store, which a context that
    verifies nothing never consults. Explicit TLS options still get PyMySQL's own context.
    """

    _preferred: ssl.SSLContext | None = None
    _preferred_lock = threading.Lock()

    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        if sslp != {}:
            return super()._create_ssl_ctx(sslp)
        with _Connection._preferred_lock:
            if _Connection._preferred is None:
                _Connection._preferred = _unverified_context()
            return _Connection._preferred


def _unverified_context() -> ssl.SSLContext:
    """PyMySQL's context for TLS without a CA: encrypted, and no certificate or host checked."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.options |= ssl.OP_NO_SSLv2 | ssl.OP_NO_SSLv3
    return context


def open_connection(login: Login, *, local_infile: bool = False,
                    **extra: Any) -> pymysql.connections.Connection:
    """One autocommit utf8mb4 connection; EngineUnavailableError when the server cannot be
    reached or refuses the login.

    ``local_infile`` lets the server read client files named in LOAD DATA LOCAL INFILE (the
    server picks the file name, so only a connection that runs nothing but polysql's own
    statements -- the loader's -- may have it; never one that runs predicted SQL).
    """
    try:
        return _Connection(
            host=login.host, port=login.port, user=login.user, password=login.password,
            database=login.database, unix_socket=login.unix_socket,
            connect_timeout=login.connect_timeout, charset="utf8mb4", autocommit=True,
            # Never CLIENT.MULTI_STATEMENTS: one COM_QUERY is exactly one statement, so a
            # "SELECT 1; DROP TABLE t" is a syntax error on the server, not two statements.
            client_flag=CLIENT.MULTI_RESULTS, local_infile=local_infile, **extra)
    except pymysql.Error as exc:
        where = login.unix_socket or f"{login.host}:{login.port}"
        raise EngineUnavailableError(
            f"cannot connect to MySQL/MariaDB at {where} as {login.user!r}"
            f"{f' (database {login.database!r})' if login.database else ''}: {exc}") from exc


_VERSION = re.compile(r"(\d+\.\d+\.\d+)")


def describe_server(server_info: str) -> tuple[str, str]:
    """("MariaDB" | "MySQL", "10.11.19") from the handshake's version string.

    MariaDB 10+ prefixes its version with "5.5.5-" for old clients; the product name is in the
    remainder.
    """
    text = server_info.removeprefix("5.5.5-")
    flavor = "MariaDB" if "mariadb" in text.lower() else "MySQL"
    match = _VERSION.search(text)
    return flavor, match.group(1) if match else text


def alive(conn: pymysql.connections.Connection) -> bool:
    """A round trip: False when the server no longer answers on this connection."""
    try:
        conn.ping(reconnect=False)
    except pymysql.Error:
        return False
    return True


def connection_pool(login: Login, size: int,
                    **connect_options: Any) -> ConnectionPool[pymysql.connections.Connection]:
    """At most ``size`` connections for one login (see :mod:`polysql.backends._common.pool`);
    ``connect_options`` go to every :func:`open_connection`."""
    return ConnectionPool(lambda: open_connection(login, **connect_options), quietly_close,
                          size=size, engine="MySQL", usable=lambda conn: bool(conn.open),
                          ping=alive, ping_after=_PING_AFTER_IDLE)


def quietly_close(conn: pymysql.connections.Connection) -> None:
    if not conn.open:
        return
    try:
        conn.close()
    except Exception:
        # close() sends COM_QUIT, which fails on a dead socket; drop the socket without it.
        conn._force_close()
