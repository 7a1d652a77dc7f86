"""Snowflake for the shared conformance suite: load a SQLite file into a fresh database on the
emulator and hand back a read-only evaluation backend; drop the database again afterwards.

The server is POLYSQL_SNOWFLAKE_URL when set (e.g. a ``snowflake_emulator serve`` started by CI,
or a real account: then SLOW_QUERY below does not apply), otherwise a fakesnow server this
process starts on first use (see :mod:`polysql_testkit.snowflake_emulator`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

from polysql.backends.base import Backend
from polysql.core.errors import EngineUnavailableError
from polysql.core.urls import parse_url
from polysql_testkit import snowflake_emulator
from polysql_testkit.availability import client_problem

NAME = "snowflake"
URL_ENV = "POLYSQL_SNOWFLAKE_URL"
# Sleeps 600 s on the emulator (DuckDB's pg_sleep, passed through by fakesnow). A sleep rather than
# a heavy query: should a cancel ever not reach it, it holds no CPU while it runs out.
SLOW_QUERY = "SELECT pg_sleep(600)"


class ServerUnavailable(Exception):
    """The Snowflake server (or its emulator) cannot be reached; the message says why."""


def base_url() -> URL:
    """The server URL (no database), starting the shared emulator if none is configured --
    unless the connector is missing here: then no emulator is built for nothing."""
    configured = os.environ.get(URL_ENV)
    if configured:
        return make_url(configured)
    problem = client_problem(NAME)
    if problem is not None:
        raise ServerUnavailable(problem)
    try:
        return make_url(snowflake_emulator.shared_url())
    except snowflake_emulator.EmulatorUnavailable as exc:
        raise ServerUnavailable(f"fakesnow emulator unavailable: {exc}") from exc


def database_name(tag: str) -> str:
    return f"POLYSQL_CONFORMANCE_{tag.upper()}"


def schema_url(tag: str, schema: str = "PUBLIC") -> URL:
    return base_url().set(database=f"{database_name(tag)}/{schema}")


def _backend_class() -> type[Backend]:
    problem = client_problem(NAME)  # the snowflake extra is not installed
    if problem is not None:
        raise ServerUnavailable(problem)
    from polysql.backends.snowflake.backend import SnowflakeBackend

    return SnowflakeBackend


def provision(sqlite_path: Path, tag: str) -> Backend:
    """Load ``sqlite_path`` into the tag's database (replacing any earlier copy) and return an
    evaluation backend on it."""
    backend = _backend_class()
    from polysql.engines.registry import connect

    url = schema_url(tag)
    try:
        with connect(f"sqlite:///{Path(sqlite_path).resolve()}") as source, \
                backend.connect(url, read_only=False) as target:
            target.load(source, replace=True)
        return backend.connect(url)
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc


def drop_database(url: URL | str, database: str) -> None:
    """Drop ``database`` on the server ``url`` points to (nothing to do if it does not exist)."""
    backend = _backend_class()
    admin = backend.connect(parse_url(url), read_only=False)
    try:
        result = admin.execute(f'DROP DATABASE IF EXISTS "{database}"')
        if result.error is not None and result.error.kind == "unavailable":
            raise ServerUnavailable(result.error.message)
    finally:
        admin.close()


def cleanup(tag: str) -> None:
    try:
        drop_database(base_url(), database_name(tag))
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc


# -- load lifecycle targets (tests/conformance/test_load_lifecycle.py) -------------------------

#: conformance behaviours that do not apply to Snowflake, each with the reason
NOT_APPLICABLE: dict[str, str] = {}


def unreachable_url() -> tuple[str, str]:
    """An emulator URL on a loopback port nothing listens on, and what the refusal names (the
    port)."""
    port = snowflake_emulator.free_port()
    url = snowflake_emulator.polysql_url("127.0.0.1", port).replace("/?", "/DB/PUBLIC?")
    return url, str(port)


def fresh_target(tag: str, workdir: Path) -> tuple[str, dict[str, Any]]:
    """(URL, connect options) of a database (its PUBLIC schema) no load has touched."""
    return schema_url(tag).render_as_string(hide_password=False), {}


def _database(url: str) -> str:
    database = make_url(url).database
    assert database is not None
    return database.split("/")[0]


def _admin_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows read on an administrator connection (no screen), not the evaluation one."""
    backend = _backend_class()
    try:
        with backend.connect(parse_url(url), read_only=False) as admin:
            result = admin.execute(sql)
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc
    assert result.ok, result.error
    return result.rows


def drop_target(url: str, options: dict[str, Any]) -> None:
    drop_database(base_url(), _database(url))


def staging_leftovers(url: str) -> list[str]:
    """The staging schemas a load builds its tables in (``POLYSQL_STAGING_*``)."""
    database = _database(url)
    rows = _admin_rows(url, f'SELECT SCHEMA_NAME FROM "{database}".INFORMATION_SCHEMA.SCHEMATA')
    return sorted(s for (s,) in rows if s.startswith("POLYSQL_STAGING_"))


def make_foreign(url: str) -> None:
    """The schema holding a table ``precious`` that polysql did not load."""
    _admin_rows(url, 'CREATE TABLE "precious" ("a" INTEGER)')


def foreign_tables(url: str) -> list[str]:
    """The schema's tables, read on an administrator connection."""
    database, schema = make_url(url).database.split("/")  # type: ignore[union-attr]
    rows = _admin_rows(url, f"SELECT TABLE_NAME FROM \"{database}\".INFORMATION_SCHEMA.TABLES "
                            f"WHERE TABLE_SCHEMA = '{schema}'")
    return sorted(r[0] for r in rows)
