"""Snowflake connections: URL to connector parameters, opening, and the evaluation pool.

URL forms (see docs/engines-snowflake.md)::

    snowflake://user@account/database/schema?warehouse=WH&role=ROLE&reader_role=READER
    snowflake://fake:snow@127.0.0.1:PORT/database/schema?emulator=fakesnow

The first reaches a real account: the host is the account identifier, the password comes from the
URL or POLYSQL_SNOWFLAKE_PASSWORD, or a key pair from POLYSQL_SNOWFLAKE_PRIVATE_KEY_PATH (with
POLYSQL_SNOWFLAKE_PRIVATE_KEY_PASSPHRASE when the key is encrypted). The second reaches a fakesnow
server over plain HTTP. Secrets never appear in messages: URLs are rendered with the password
hidden and connector parameters are described without them.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import snowflake.connector
from snowflake.connector import SnowflakeConnection
from sqlalchemy.engine import URL

from polysql.backends._common.pool import ConnectionPool
from polysql.core.errors import ConfigError, EngineUnavailableError

PASSWORD_ENV = "POLYSQL_SNOWFLAKE_PASSWORD"
PRIVATE_KEY_PATH_ENV = "POLYSQL_SNOWFLAKE_PRIVATE_KEY_PATH"
PRIVATE_KEY_PASSPHRASE_ENV = "POLYSQL_SNOWFLAKE_PRIVATE_KEY_PASSPHRASE"

EMULATOR_PARAM = "emulator"
EMULATOR_VERSION_PARAM = "emulator_version"
KNOWN_EMULATORS = ("fakesnow",)
DEFAULT_SCHEMA = "PUBLIC"
LOGIN_TIMEOUT = 20  # seconds
QUERY_TAG = "polysql"

# URL query keys polysql reads; anything else is refused so a typo is never silently ignored.
_PASSTHROUGH = ("warehouse", "role", "authenticator", "host", "port", "protocol")
_OWN = ("reader_role", EMULATOR_PARAM, EMULATOR_VERSION_PARAM)
_SIMPLE_UPPER = re.compile(r"[A-Z_][A-Z0-9_$]*\Z")


@dataclass(frozen=True, slots=True)
class Location:
    """The database and schema a URL names (either may be missing on a server URL)."""

    database: str | None
    schema: str | None


def query_value(url: URL, key: str) -> str | None:
    value = url.query.get(key)
    if value is None:
        return None
    return value if isinstance(value, str) else value[-1]


def emulator_of(url: URL) -> str | None:
    """The emulator ``url`` names (``?emulator=fakesnow``), or None for a real account."""
    name = query_value(url, EMULATOR_PARAM)
    if name is not None and name not in KNOWN_EMULATORS:
        raise ConfigError(f"unknown Snowflake emulator {name!r} in the URL; known: "
                          f"{', '.join(KNOWN_EMULATORS)}")
    return name


def location(url: URL) -> Location:
    """``/database/schema`` from the URL path; the schema defaults to PUBLIC."""
    path = (url.database or "").strip("/")
    if not path:
        return Location(None, None)
    parts = path.split("/")
    if len(parts) > 2 or not all(parts):
        raise ConfigError(f"a Snowflake URL path is /database or /database/schema, got {path!r}")
    return Location(parts[0], parts[1] if len(parts) == 2 else DEFAULT_SCHEMA)


def login_identifier(name: str) -> str:
    """A database or schema name as the login request wants it: names Snowflake would upper-case
    anyway go plain, anything else double-quoted so its case is kept."""
    return name if _SIMPLE_UPPER.match(name) else '"' + name.replace('"', '""') + '"'


def check_query(url: URL) -> None:
    unknown = sorted(set(url.query) - set(_PASSTHROUGH) - set(_OWN))
    if unknown:
        raise ConfigError(f"unknown Snowflake URL parameter(s) {', '.join(unknown)}; supported: "
                          f"{', '.join(_PASSTHROUGH + _OWN)}")


def connection_params(url: URL, *, role: str | None = None, with_location: bool = True,
                      environ: dict[str, str] | None = None) -> dict[str, Any]:
    """snowflake.connector.connect() keyword arguments for ``url``; ``role`` overrides the URL's
    role. ``with_location=False`` leaves the database and schema out (a load creates them)."""
    check_query(url)
    env = os.environ if environ is None else environ
    params: dict[str, Any] = {"login_timeout": LOGIN_TIMEOUT}
    where = location(url)
    if with_location and where.database:
        params["database"] = login_identifier(where.database)
        params["schema"] = login_identifier(where.schema or DEFAULT_SCHEMA)
    if emulator_of(url):
        if not url.host or not url.port:
            raise ConfigError("an emulator URL names the server's host and port: "
                              "snowflake://fake:snow@127.0.0.1:PORT/db/schema?emulator=fakesnow")
        params.update(user=url.username or "fake", password=url.password or "snow",
                      account="fakesnow", host=url.host, port=url.port, protocol="http",
                      # the emulator drops its telemetry; there is no point in sending it
                      session_parameters={"CLIENT_OUT_OF_BAND_TELEMETRY_ENABLED": False})
        return params
    if not url.host or not url.username:
        raise ConfigError("a Snowflake URL names the user and account: "
                          "snowflake://user@account/database/schema?warehouse=WH")
    params.update(user=url.username, account=url.host,
                  # ABORT_DETACHED_QUERY: a statement whose client went away (our backstop gave
                  # up on it) is stopped by the server instead of running on. TIMEZONE: naive
                  # timestamps turned into TIMESTAMP_LTZ are read as UTC, as on every other
                  # engine, not in the account's zone (America/Los_Angeles unless changed).
                  session_parameters={"QUERY_TAG": QUERY_TAG, "ABORT_DETACHED_QUERY": True,
                                      "TIMEZONE": "UTC"})
    for key in _PASSTHROUGH:
        value = query_value(url, key)
        if value is not None:
            params[key] = int(value) if key == "port" else value
    if role is not None:
        params["role"] = role
    key_path = env.get(PRIVATE_KEY_PATH_ENV)
    password = url.password or env.get(PASSWORD_ENV)
    if key_path:
        params["private_key_file"] = key_path
        params.setdefault("authenticator", "SNOWFLAKE_JWT")
        passphrase = env.get(PRIVATE_KEY_PASSPHRASE_ENV)
        if passphrase:
            params["private_key_file_pwd"] = passphrase
    elif password:
        params["password"] = password
    return params


def describe(params: dict[str, Any]) -> str:
    """``user@account/database/schema`` (emulator: ``host:port``) for messages; never a secret."""
    where = f"{params.get('host')}:{params.get('port')}" if params.get("protocol") == "http" \
        else str(params.get("account"))
    path = "/".join(str(params[k]) for k in ("database", "schema") if params.get(k))
    role = f" (role {params['role']})" if params.get("role") else ""
    return f"{params.get('user')}@{where}{'/' + path if path else ''}{role}"


def open_connection(params: dict[str, Any]) -> SnowflakeConnection:
    """A new connection, or EngineUnavailableError saying where and why (without secrets)."""
    try:
        return snowflake.connector.connect(**params)
    except snowflake.connector.errors.Error as exc:
        raise EngineUnavailableError(
            f"cannot connect to Snowflake as {describe(params)}: {_first_line(exc)}") from exc
    except OSError as exc:  # a key file that cannot be read, a refused socket
        raise EngineUnavailableError(
            f"cannot connect to Snowflake as {describe(params)}: {exc}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def quietly_close(conn: SnowflakeConnection) -> None:
    # the connection is being thrown away; a failure to say goodbye changes nothing
    with contextlib.suppress(Exception):
        conn.close()


def usable(conn: SnowflakeConnection) -> bool:
    return not conn.is_closed()


def connection_pool(open_one: Callable[[], SnowflakeConnection],
                    size: int) -> ConnectionPool[SnowflakeConnection]:
    """The pool an evaluation backend draws its connections from (see
    :mod:`polysql.backends._common.pool`). Logging in to Snowflake is slow, so a caller waits
    longer for a free connection than on other servers."""
    return ConnectionPool(open_one, quietly_close, size=size, engine="Snowflake",
                          usable=usable, wait=120.0)
