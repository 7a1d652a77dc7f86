"""PostgreSQL for the shared conformance suite: load a SQLite file into a fresh database on the
local server and hand back a read-only evaluation backend; drop it all again afterwards.

The server is POLYSQL_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/), used as the
administrator login for loading. Each tag gets its own database and its own reader role, so
suites running side by side never share state and cleanup removes everything it made.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import URL, make_url

from polysql.backends._postgres_meta import drop_evaluation_database, drop_reader
from polysql.backends.base import Backend
from polysql.backends.postgres import evaluation_database_name
from polysql.errors import EngineUnavailableError
from polysql.registry import connect

NAME = "postgres"
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/"


class ServerUnavailable(Exception):
    """The PostgreSQL server cannot be reached; the message says where and why."""


def admin_url() -> URL:
    return make_url(os.environ.get("POLYSQL_POSTGRES_URL", DEFAULT_URL))


def names(tag: str) -> tuple[str, str]:
    """(database, reader role) for ``tag``: lower-case, at most 63 bytes, distinct per tag."""
    return evaluation_database_name("conformance", tag), evaluation_database_name("reader", tag)


def provision(sqlite_path: Path, tag: str) -> Backend:
    """Load ``sqlite_path`` into the database for ``tag`` (replacing any earlier copy) and return
    an evaluation backend that logs in as the tag's reader role."""
    database, reader = names(tag)
    target_url = admin_url().set(database=database)
    try:
        with connect(f"sqlite:///{Path(sqlite_path).resolve()}") as source, \
                connect(target_url, read_only=False, reader_role=reader) as target:
            target.load(source, replace=True)
        return connect(target_url, reader_role=reader)
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc


def cleanup(tag: str) -> None:
    """Drop the tag's database and reader role (nothing to do if they do not exist)."""
    database, reader = names(tag)
    try:
        drop_evaluation_database(admin_url(), database)
        drop_reader(admin_url(), reader)
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc
