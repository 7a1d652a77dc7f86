"""MySQL/MariaDB for the shared conformance suite: load a SQLite file into a fresh database on the
local server and hand back a read-only evaluation backend; drop it all again afterwards.

The server is POLYSQL_MYSQL_URL (default mysql://root@127.0.0.1:3306/), used as the administrator
login for loading. Each tag gets its own database, and every loaded database its own reader login,
so suites running side by side never share state and cleanup removes everything it made.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import URL, make_url

from polysql.backends.base import Backend
from polysql.backends.mysql import MySQLBackend, evaluation_database_name
from polysql.errors import EngineUnavailableError
from polysql.registry import connect

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
