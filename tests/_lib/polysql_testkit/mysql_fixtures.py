"""Shared helpers for the MySQL/MariaDB backend tests: the local server, unique names, SQLite
sources built with sqlite3, loaded evaluation databases that are dropped afterwards, and an
administrator-side checksum of a database's content.

The server is the one at POLYSQL_MYSQL_URL (default mysql://root@127.0.0.1:3306/). When it cannot
be reached the tests skip, unless POLYSQL_REQUIRE lists "mysql": then they fail.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
from sqlalchemy.engine import URL, make_url

from polysql.backends.mysql.backend import MySQLBackend
from polysql.core.schema import LoadReport
from polysql.engines.registry import connect

ENGINE = "mysql"
ADMIN_URL = os.environ.get("POLYSQL_MYSQL_URL", "mysql://root@127.0.0.1:3306/")


def required() -> bool:
    wanted = os.environ.get("POLYSQL_REQUIRE", "")
    return ENGINE in {name.strip().lower() for name in wanted.split(",")}


def admin_connection(url: URL, database: str | None = None) -> pymysql.connections.Connection:
    return pymysql.connect(host=url.host or "127.0.0.1", port=url.port or 3306,
                           user=url.username or "root", password=url.password or "",
                           database=database, autocommit=True, charset="utf8mb4",
                           connect_timeout=3)


def server_url() -> URL:
    """The admin URL (no database), after checking the server answers; skip (or fail when
    required) if it does not."""
    url = make_url(ADMIN_URL).set(database=None)
    try:
        admin_connection(url).close()
    except pymysql.Error as exc:
        reason = f"MySQL/MariaDB server at {url.render_as_string(hide_password=True)} unreachable: {exc}"
        if required():
            pytest.fail(f"{reason} (POLYSQL_REQUIRE lists mysql)", pytrace=False)
        pytest.skip(reason)
    return url


def unique(prefix: str = "polysql_t") -> str:
    return f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def build_sqlite(path: Path, script: str) -> Path:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(script)
        conn.commit()
    finally:
        conn.close()
    return path


def checksum(url: URL, database: str, reader: str | None = None) -> dict[str, Any]:
    """Everything a hostile statement could change, seen from a separate administrator
    connection: per table its row count and CHECKSUM TABLE EXTENDED (a row-for-row checksum),
    the table definitions, the reader's grants and a few global settings. (Not the account list:
    other test runs may add and drop their own readers meanwhile.)"""
    conn = admin_connection(url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                        "ORDER BY TABLE_NAME", (database,))
            tables = [r[0] for r in cur.fetchall()]
            state: dict[str, Any] = {}
            for table in tables:
                ref = f"`{database}`.`{table.replace('`', '``')}`"
                cur.execute(f"SELECT count(*) FROM {ref}")
                count = cur.fetchone()[0]
                cur.execute(f"CHECKSUM TABLE {ref} EXTENDED")
                digest = cur.fetchone()[1]
                cur.execute(f"SHOW CREATE TABLE {ref}")
                definition = cur.fetchone()[1]
                state[table] = (count, digest, definition)
            if reader is not None:
                cur.execute("SHOW GRANTS FOR %s@'%%'", (reader,))
                state["<grants>"] = sorted(r[0] for r in cur.fetchall())
            cur.execute("SELECT @@GLOBAL.max_connections, @@GLOBAL.sql_mode, @@GLOBAL.read_only")
            state["<globals>"] = cur.fetchone()
        return state
    finally:
        conn.close()


def database_exists(url: URL, database: str) -> bool:
    conn = admin_connection(url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s",
                        (database,))
            return cur.fetchone() is not None
    finally:
        conn.close()


def account_exists(url: URL, user: str) -> bool:
    conn = admin_connection(url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM mysql.user WHERE User = %s", (user,))
            return cur.fetchone() is not None
    finally:
        conn.close()


@pytest.fixture
def admin_url() -> URL:
    return server_url()


@pytest.fixture
def make_sqlite(tmp_path: Path) -> Callable[[str], Path]:
    counter = iter(range(1_000_000))

    def make(script: str) -> Path:
        return build_sqlite(tmp_path / f"source_{next(counter)}.sqlite", script)

    return make


Loader = Callable[..., tuple[URL, LoadReport]]


@pytest.fixture
def loader(admin_url: URL) -> Iterator[Loader]:
    """``load(sqlite_path, database=None, **load_options)`` -> (database URL, report); every
    database loaded through it is dropped (with its reader and record) afterwards."""
    created: list[URL] = []

    def load(path: Path, database: str | None = None, *, collation: str | None = None,
             **options: Any) -> tuple[URL, LoadReport]:
        url = admin_url.set(database=database or unique())
        if url not in created:
            created.append(url)
        with connect(f"sqlite:///{path}") as source, \
                connect(url, read_only=False, collation=collation) as target:
            report = target.load(source, **options)
        return url, report

    yield load
    for url in created:
        MySQLBackend.drop(url)
