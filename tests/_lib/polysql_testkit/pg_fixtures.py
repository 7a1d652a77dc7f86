"""Shared fixtures for the PostgreSQL backend tests: the local server, unique names, SQLite sources
built with sqlite3, loaded evaluation databases that are dropped afterwards, and an admin-side
checksum of a database's content.

The server is the one at POLYSQL_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/).
When it cannot be reached the tests skip, unless POLYSQL_REQUIRE lists "postgres": then they fail.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import URL, make_url

from polysql.backends.postgres.backend import PostgresBackend
from polysql.backends.postgres.setup import drop_evaluation_database, drop_reader
from polysql.engines.registry import connect
from polysql_testkit.file_limits import small_file_system

ENGINE = "postgres"
ADMIN_URL = os.environ.get("POLYSQL_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/")


def required() -> bool:
    wanted = os.environ.get("POLYSQL_REQUIRE", "")
    return ENGINE in {name.strip().lower() for name in wanted.split(",")}


def server_url() -> URL:
    """The admin URL, after checking the server answers; skip (or fail when required) if not."""
    url = make_url(ADMIN_URL)
    try:
        psycopg.connect(host=url.host or "127.0.0.1", port=url.port or 5432,
                        user=url.username or "postgres", password=url.password,
                        dbname=url.database or "postgres", connect_timeout=3).close()
    except psycopg.Error as exc:
        reason = f"PostgreSQL server at {url.render_as_string(hide_password=True)} unreachable: {exc}"
        if required():
            pytest.fail(f"{reason} (POLYSQL_REQUIRE lists postgres)")
        pytest.skip(reason)
    return url


def unique(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def admin_connection(url: URL, database: str) -> psycopg.Connection:
    return psycopg.connect(host=url.host or "127.0.0.1", port=url.port or 5432,
                           user=url.username or "postgres", password=url.password,
                           dbname=database, autocommit=True)


def build_sqlite(path: Path, script: str) -> Path:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(script)
        conn.commit()
    finally:
        conn.close()
    return path


def checksum(url: URL, database: str) -> dict[str, tuple[int, str]]:
    """Per table or view of the database (``public``'s by name, others' as ``schema.name``): row
    count and an order-independent digest of every row, computed on a separate administrator
    connection."""
    with admin_connection(url, database) as conn:
        names = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace "
            "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') "
            "AND c.relkind IN ('r', 'p', 'v', 'm') ORDER BY 1, 2").fetchall()
        result = {}
        for schema, name in names:
            row = conn.execute(sql.SQL(
                "SELECT count(*), coalesce(md5(string_agg(md5(t::text), '' ORDER BY md5(t::text)))"
                ", '') FROM {} AS t").format(sql.Identifier(schema, name))).fetchone()
            assert row is not None
            result[name if schema == "public" else f"{schema}.{name}"] = (int(row[0]), str(row[1]))
        return result


def schemas(url: URL, database: str) -> dict[str, int]:
    """Schema name -> oid, to see whether a load swapped the evaluation schema."""
    with admin_connection(url, database) as conn:
        return {r[0]: int(r[1]) for r in conn.execute(
            "SELECT nspname, oid FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' "
            "AND nspname <> 'information_schema'")}


@contextmanager
def full_temp_tablespace(url: URL) -> Iterator[str]:
    """The name of a tablespace on a 1 MiB file system: a database whose temp_tablespaces names
    it has its sorts and hashes that spill fail with SQLSTATE 53100, "No space left on device",
    as on a server whose disk is full. Skips unless the server runs on this machine (its data
    folder is here) and the test may mount."""
    with admin_connection(url, "postgres") as admin:
        (data_directory,) = admin.execute("SHOW data_directory").fetchone() or ("",)
        try:
            server_user = Path(data_directory).stat().st_uid
        except OSError:
            pytest.skip(f"the PostgreSQL server's data folder {data_directory!r} is not on this "
                        f"machine: its disk cannot be filled from here")
        with small_file_system("1m", owner=server_user) as folder:
            name = unique("polysql_full")
            admin.execute(sql.SQL("CREATE TABLESPACE {} LOCATION {}").format(
                sql.Identifier(name), sql.Literal(str(folder))))
            try:
                admin.execute(sql.SQL("GRANT CREATE ON TABLESPACE {} TO PUBLIC").format(
                    sql.Identifier(name)))
                yield name
            finally:
                admin.execute(sql.SQL("DROP TABLESPACE {}").format(sql.Identifier(name)))


@contextmanager
def evaluation_copy(url: URL, source: Path, prefix: str) -> Iterator[tuple[str, str]]:
    """The SQLite file ``source`` loaded into a new database as ``polysql load`` loads one (so
    the CLI evaluates on it with its usual reader): its URL and name; dropped afterwards."""
    database = unique(prefix)
    target_url = url.set(database=database).render_as_string(hide_password=False)
    try:
        with connect(f"sqlite:///{source}") as reader, \
                connect(target_url, read_only=False) as writer:
            writer.load(reader)
        yield target_url, database
    finally:
        drop_evaluation_database(url, database)


def damage_empty_table(url: URL, database: str, table: str) -> None:
    """Write a page of garbage into the data file of ``database``'s empty ``table``, as a failing
    disk would: reading it then fails with SQLSTATE XX001, "invalid page in block 0". The table
    must be empty, so that none of its pages sits in the server's buffers. Skips unless the
    server's data folder is on this machine and this test may write to it."""
    with admin_connection(url, database) as admin:
        row = admin.execute(
            "SELECT current_setting('data_directory'), pg_relation_filepath(c.oid) "
            "FROM pg_class AS c WHERE c.relname = %s AND c.relkind = 'r'", (table,)).fetchone()
    assert row is not None, f"no table {table!r} in {database!r}"
    path = Path(row[0]) / row[1]
    try:
        with path.open("r+b") as data_file:
            assert data_file.read(1) == b"", f"{table!r} is not empty"
            data_file.write(b"\xff" * 8192)
    except OSError as exc:
        pytest.skip(f"cannot write the PostgreSQL server's data file {str(path)!r} from this "
                    f"test ({exc}): its storage cannot be damaged from here")


def spill_to(url: URL, database: str, tablespace: str) -> None:
    """Send ``database``'s temporary files to ``tablespace``, and make its sorts spill early."""
    with admin_connection(url, "postgres") as admin:
        admin.execute(sql.SQL("ALTER DATABASE {} SET temp_tablespaces = {}").format(
            sql.Identifier(database), sql.Literal(tablespace)))
        admin.execute(sql.SQL("ALTER DATABASE {} SET work_mem = '64kB'").format(
            sql.Identifier(database)))


#: a query whose sort spills some megabytes of temporary files, whatever the tables hold
SPILLING_QUERY = ("SELECT count(*) FROM (SELECT md5(g::text) AS m FROM generate_series(1, 300000) "
                  "AS g ORDER BY m OFFSET 1) AS s")


class Loader:
    """Loads SQLite files into fresh databases owned by one test module; drops them afterwards."""

    def __init__(self, url: URL, reader: str) -> None:
        self.url = url
        self.reader = reader
        self.databases: list[str] = []

    def target(self, database: str | None = None) -> str:
        name = database or unique("polysql_test")
        if name not in self.databases:
            self.databases.append(name)
        return self.url.set(database=name).render_as_string(hide_password=False)

    def admin(self, target_url: str) -> PostgresBackend:
        backend = connect(target_url, read_only=False, reader_role=self.reader)
        assert isinstance(backend, PostgresBackend)
        return backend

    def load(self, sqlite_path: Path, *, database: str | None = None, names: str = "exact",
             replace: bool = False) -> tuple[str, object]:
        target_url = self.target(database)
        with connect(f"sqlite:///{sqlite_path}") as source, self.admin(target_url) as target:
            report = target.load(source, names=names, replace=replace)
        return target_url, report

    def evaluation(self, target_url: str, **options: object) -> PostgresBackend:
        backend = connect(target_url, reader_role=self.reader, **options)
        assert isinstance(backend, PostgresBackend)
        return backend

    def cleanup(self) -> None:
        for database in self.databases:
            drop_evaluation_database(self.url, database)
        drop_reader(self.url, self.reader)


@pytest.fixture(scope="module")
def admin_url() -> URL:
    return server_url()


@pytest.fixture(scope="module")
def loader(admin_url: URL) -> Iterator[Loader]:
    loader = Loader(admin_url, unique("polysql_reader_test"))
    try:
        yield loader
    finally:
        loader.cleanup()


SqliteBuilder = Callable[[str, str], Path]


@pytest.fixture(scope="module")
def make_sqlite(tmp_path_factory: pytest.TempPathFactory) -> SqliteBuilder:
    folder = tmp_path_factory.mktemp("pg_sources")

    def make(name: str, script: str) -> Path:
        return build_sqlite(folder / f"{name}.sqlite", script)

    return make
