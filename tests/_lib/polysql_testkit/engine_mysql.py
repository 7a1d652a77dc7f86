"""MySQL/MariaDB for the shared conformance suite: load a SQLite file into a fresh database on the
local server and hand back a read-only evaluation backend; drop it all again afterwards.

The server is POLYSQL_MYSQL_URL (default mysql://root@127.0.0.1:3306/), used as the administrator
login for loading. Each tag gets its own database, and every loaded database its own reader login,
so suites running side by side never share state and cleanup removes everything it made.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pymysql
from sqlalchemy.engine import URL, make_url

from polysql.backends.base import Backend
from polysql.backends.mysql.backend import MySQLBackend, evaluation_database_name
from polysql.core.errors import EngineUnavailableError
from polysql.engines.registry import connect

NAME = "mysql"
DEFAULT_URL = "mysql://root@127.0.0.1:3306/"


class ServerUnavailable(Exception):
    """The MySQL/MariaDB server cannot be reached; the message says where and why."""


def admin_url() -> URL:
    return make_url(os.environ.get("POLYSQL_MYSQL_URL", DEFAULT_URL))


def database_url(tag: str) -> URL:
    return admin_url().set(database=evaluation_database_name("conformance", tag))


def provision(sqlite_path: Path, tag: str) -> Backend:
    """Load ``sqlite_path`` into the database for ``tag`` (replacing any earlier copy) and return
    an evaluation backend that logs in as that database's SELECT-only reader."""
    url = database_url(tag)
    try:
        with connect(f"sqlite:///{Path(sqlite_path).resolve()}") as source, \
                connect(url, read_only=False) as target:
            target.load(source, replace=True)
        return connect(url)
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc


def cleanup(tag: str) -> None:
    """Drop the tag's database, its reader and its load record (nothing to do if absent)."""
    try:
        MySQLBackend.drop(database_url(tag))
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc


# -- load lifecycle targets (tests/conformance/test_load_lifecycle.py) -------------------------

#: conformance behaviours that do not apply to MySQL/MariaDB, each with the reason
NOT_APPLICABLE: dict[str, str] = {}


def unreachable_url() -> tuple[str, str]:
    """A URL nothing answers at (port 1), and what the refusal to connect says."""
    return "mysql://root@127.0.0.1:1/?connect_timeout=2", "cannot connect"


def fresh_target(tag: str, workdir: Path) -> tuple[str, dict[str, Any]]:
    """(URL, connect options) of a database no load has touched."""
    return database_url(tag).render_as_string(hide_password=False), {}


def _admin_rows(sql: str, *args: Any) -> list[tuple[Any, ...]]:
    url = admin_url()
    try:
        conn = pymysql.connect(host=url.host or "127.0.0.1", port=url.port or 3306,
                               user=url.username or "root", password=url.password or "",
                               autocommit=True, charset="utf8mb4", connect_timeout=5)
    except pymysql.err.OperationalError as exc:
        raise ServerUnavailable(f"MySQL at {url.host}:{url.port}: {exc}") from exc
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args or None)
            return list(cur.fetchall())
    finally:
        conn.close()


def drop_target(url: str, options: dict[str, Any]) -> None:
    """Drop the target's database, its reader, its load record and any staging leftovers."""
    MySQLBackend.drop(make_url(url))


def staging_leftovers(url: str) -> list[str]:
    """The staging and old-copy databases a load of this target builds beside it."""
    from polysql.backends.mysql.load import OLD_PREFIX, STAGE_PREFIX, auxiliary_name

    database = make_url(url).database
    assert database is not None
    ours = {auxiliary_name(STAGE_PREFIX, database), auxiliary_name(OLD_PREFIX, database)}
    found = {r[0] for r in _admin_rows("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")}
    return sorted(found & ours)


def make_foreign(url: str) -> None:
    """Create the database holding a table ``precious`` that polysql did not load."""
    database = make_url(url).database
    _admin_rows(f"CREATE DATABASE `{database}`")
    _admin_rows(f"CREATE TABLE `{database}`.precious (x INT)")


def foreign_tables(url: str) -> list[str]:
    """The database's tables, read on an administrator connection."""
    return sorted(r[0] for r in _admin_rows(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
        make_url(url).database))
