"""PostgreSQL for the shared conformance suite: load a SQLite file into a fresh database on the
local server and hand back a read-only evaluation backend; drop it all again afterwards.

The server is POLYSQL_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/), used as the
administrator login for loading. Each tag gets its own database and its own reader role, so
suites running side by side never share state and cleanup removes everything it made.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import URL, make_url

from polysql.backends.base import Backend
from polysql.backends.postgres.backend import evaluation_database_name
from polysql.backends.postgres.setup import drop_evaluation_database, drop_reader
from polysql.core.errors import EngineUnavailableError
from polysql.engines.registry import connect

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


# -- load lifecycle targets (tests/conformance/test_load_lifecycle.py) -------------------------

#: conformance behaviours that do not apply to PostgreSQL, each with the reason
NOT_APPLICABLE: dict[str, str] = {}


def unreachable_url() -> tuple[str, str]:
    """A URL nothing answers at (port 1), and what the refusal to connect says."""
    return "postgresql://postgres@127.0.0.1:1/x", "cannot connect to PostgreSQL"


def fresh_target(tag: str, workdir: Path) -> tuple[str, dict[str, Any]]:
    """(URL, connect options) of a database no load has touched, with its own reader role."""
    database, reader = names(tag)
    url = admin_url().set(database=database).render_as_string(hide_password=False)
    return url, {"reader_role": reader}


def _admin(database: str) -> psycopg.Connection:
    url = admin_url()
    try:
        return psycopg.connect(host=url.host or "127.0.0.1", port=url.port or 5432,
                               user=url.username or "postgres", password=url.password,
                               dbname=database, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        raise ServerUnavailable(f"PostgreSQL at {url.host}:{url.port}: {exc}") from exc


def drop_target(url: str, options: dict[str, Any]) -> None:
    """Drop the target's database and its reader role."""
    database = make_url(url).database
    assert database is not None
    drop_evaluation_database(admin_url(), database)
    drop_reader(admin_url(), options["reader_role"])


def staging_leftovers(url: str) -> list[str]:
    """Schemas other than the evaluation one and its fold schema (a load builds in
    ``polysql_staging_*``)."""
    database = make_url(url).database
    assert database is not None
    with _admin("postgres") as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone() is None:
            return []  # never created (a connect that failed early): nothing can be left over
    with _admin(database) as conn:
        return sorted(r[0] for r in conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' "
            "AND nspname NOT IN ('information_schema', 'public', 'polysql_fold')"))


def make_foreign(url: str) -> None:
    """Create the database holding a table ``precious`` that polysql did not load."""
    database = make_url(url).database
    assert database is not None
    with _admin("postgres") as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    with _admin(database) as conn:
        conn.execute("CREATE TABLE precious (a int)")


def foreign_tables(url: str) -> list[str]:
    """The tables of the evaluation schema, read on an administrator connection."""
    database = make_url(url).database
    assert database is not None
    with _admin(database) as conn:
        return sorted(r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
