"""Where polysql keeps its PostgreSQL bookkeeping, and the login role evaluated SQL runs as.

Bookkeeping lives in its own database, ``polysql_meta``, closed to everyone but administrators, so
an evaluation database holds exactly the source's tables and a model never sees a metadata table:

* ``readers``: the least-privilege login role(s) evaluation connections use, with the password
  generated for each (trust authentication ignores it; password authentication needs it);
* ``loads``: per evaluation database, the source fingerprint and load report of the last load.

The reader role can log in, read the tables it is granted, and nothing else: no superuser, no
role or database creation, no inheritance, read-only transactions by default, a statement timeout
of its own, and no CONNECT on ``polysql_meta``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import URL

from polysql.backends._postgres_conn import (
    MAINTENANCE_DATABASE,
    connection_params,
    describe,
    open_connection,
)
from polysql.errors import EngineError, LoadError

META_DATABASE = "polysql_meta"
DEFAULT_READER = "polysql_reader"

# Session defaults of the reader role: a second line behind the per-statement settings, for any
# session that does not set its own (for example one opened by hand with the reader's password).
READER_SETTINGS = {
    "default_transaction_read_only": "on",
    "statement_timeout": "10min",
    "idle_in_transaction_session_timeout": "5min",
}
# Only a superuser may set this one; it turns a runaway sort or hash into a too_large error
# instead of a full disk.
READER_TEMP_FILE_LIMIT = "4GB"

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS readers (
           role text PRIMARY KEY,
           password text NOT NULL,
           created_at timestamptz NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS loads (
           database text PRIMARY KEY,
           fingerprint text NOT NULL,
           reader text NOT NULL,
           report jsonb NOT NULL,
           engine_version text NOT NULL,
           polysql_version text NOT NULL,
           loaded_at timestamptz NOT NULL DEFAULT now())""",
]
# Arbitrary constant for pg_advisory_xact_lock while creating the tables above.
_SCHEMA_LOCK = 0x706F6C79


def database_exists(conn: psycopg.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    return row is not None


def create_database(conn: psycopg.Connection, name: str) -> None:
    """Create database ``name`` unless it exists (``conn`` in autocommit mode).

    Collation and character classification are ``C``: text sorts and compares by code point, as
    SQLite's default BINARY collation does, and lower()/upper() change ASCII letters only, as
    SQLite's built-ins do.
    """
    if database_exists(conn, name):
        return
    # created concurrently by another loader: just as good
    with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
        conn.execute(sql.SQL(
            "CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"
        ).format(sql.Identifier(name)))


class MetaStore:
    """An administrator's connection to ``polysql_meta``."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, admin_url: URL, *, create: bool) -> MetaStore | None:
        """Connect as the URL's (administrator) user; with ``create``, make the database and its
        tables first. Without ``create``, None when polysql has never loaded on this server."""
        server = open_connection(connection_params(admin_url, database=MAINTENANCE_DATABASE))
        try:
            if not database_exists(server, META_DATABASE):
                if not create:
                    return None
                create_database(server, META_DATABASE)
                # Nobody but administrators may connect, and so nobody else can read passwords.
                server.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(
                    sql.Identifier(META_DATABASE)))
        finally:
            server.close()
        store = cls(open_connection(connection_params(admin_url, database=META_DATABASE)))
        if create:
            store._create_schema()
        return store

    def _create_schema(self) -> None:
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            self.conn.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
            for statement in _SCHEMA:
                self.conn.execute(statement)

    def close(self) -> None:
        self.conn.close()

    # -- the reader role -------------------------------------------------------------------
    def reader_password(self, role: str) -> str | None:
        row = self.conn.execute("SELECT password FROM readers WHERE role = %s", (role,)).fetchone()
        return None if row is None else str(row[0])

    def ensure_reader(self, role: str) -> str:
        """Create (or repair) the login role ``role`` with least privileges; its password."""
        with self.conn.transaction():
            # One role creation at a time across all loaders of this server.
            self.conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                              (_SCHEMA_LOCK, role))
            existing = self.conn.execute(
                "SELECT rolsuper OR rolcreaterole OR rolcreatedb OR rolreplication OR rolbypassrls"
                " FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            if existing is not None and existing[0]:
                raise LoadError(
                    f"PostgreSQL role {role!r} exists with administrative attributes (superuser, "
                    f"CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS); evaluated SQL must not run "
                    f"as it. Drop the role or pass reader_role='<another name>'")
            password = self.reader_password(role)
            if password is None:
                password = secrets.token_urlsafe(24)
                self.conn.execute(
                    "INSERT INTO readers (role, password) VALUES (%s, %s)", (role, password))
            verb = "CREATE" if existing is None else "ALTER"
            try:
                self.conn.execute(sql.SQL(
                    verb + " ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "
                    "NOREPLICATION NOBYPASSRLS PASSWORD {}"
                ).format(sql.Identifier(role), sql.Literal(password)))
                for name, value in READER_SETTINGS.items():
                    self.conn.execute(sql.SQL("ALTER ROLE {} SET {} = {}").format(
                        sql.Identifier(role), sql.Identifier(name), sql.Literal(value)))
            except psycopg.errors.InsufficientPrivilege as exc:
                raise LoadError(
                    f"cannot create the evaluation role {role!r}: {exc}. Load as a superuser or "
                    f"a user with CREATEROLE") from exc
            if self._is_superuser():
                self.conn.execute(sql.SQL("ALTER ROLE {} SET temp_file_limit = {}").format(
                    sql.Identifier(role), sql.Literal(READER_TEMP_FILE_LIMIT)))
        return password

    def _is_superuser(self) -> bool:
        row = self.conn.execute(
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        return bool(row and row[0])

    def drop_reader(self, role: str) -> None:
        """Drop ``role`` and forget its password (its databases must be dropped first)."""
        try:
            with self.conn.transaction():
                self.conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
                self.conn.execute("DELETE FROM readers WHERE role = %s", (role,))
        except psycopg.errors.DependentObjectsStillExist as exc:
            raise EngineError(
                f"cannot drop the reader role {role!r}: databases still grant it access "
                f"({exc.diag.message_detail or exc}); drop those databases first") from exc

    # -- load records ----------------------------------------------------------------------
    def load_record(self, database: str) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT fingerprint, reader, report FROM loads WHERE database = %s",
            (database,)).fetchone()
        if row is None:
            return None
        return {"fingerprint": row[0], "reader": row[1], "report": row[2]}

    def forget(self, database: str) -> None:
        self.conn.execute("DELETE FROM loads WHERE database = %s", (database,))

    def record(self, database: str, *, fingerprint: str, reader: str, report: dict[str, Any],
               engine_version: str, polysql_version: str) -> None:
        self.conn.execute(
            """INSERT INTO loads (database, fingerprint, reader, report, engine_version,
                                  polysql_version)
               VALUES (%s, %s, %s, %s::jsonb, %s, %s)
               ON CONFLICT (database) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,
                   reader = EXCLUDED.reader, report = EXCLUDED.report,
                   engine_version = EXCLUDED.engine_version,
                   polysql_version = EXCLUDED.polysql_version, loaded_at = now()""",
            (database, fingerprint, reader, json.dumps(report, ensure_ascii=False),
             engine_version, polysql_version))

    @contextmanager
    def locked(self, database: str) -> Iterator[None]:
        """Hold a server-wide lock on loading ``database`` (one loader at a time)."""
        self.conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (_SCHEMA_LOCK + 1, database))
        try:
            yield
        finally:
            self.conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))",
                              (_SCHEMA_LOCK + 1, database))


def reader_credentials(admin_url: URL, role: str) -> str | None:
    """The password recorded for ``role``, looked up with the URL's administrator login; None
    when polysql has not created that role on this server."""
    store = MetaStore.open(admin_url, create=False)
    if store is None:
        return None
    try:
        return store.reader_password(role)
    except psycopg.Error as exc:
        raise EngineError(f"cannot read polysql's role records in {META_DATABASE!r} as "
                          f"{describe(connection_params(admin_url))}: {exc}") from exc
    finally:
        store.close()


def drop_evaluation_database(admin_url: URL, database: str) -> None:
    """Drop an evaluation database (disconnecting its sessions) and its load record."""
    store = MetaStore.open(admin_url, create=False)
    server = open_connection(connection_params(admin_url, database=MAINTENANCE_DATABASE))
    try:
        server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(database)))
        if store is not None:
            store.forget(database)
    finally:
        server.close()
        if store is not None:
            store.close()


def drop_reader(admin_url: URL, role: str) -> None:
    """Drop a reader role created by a load, once no database grants it anything."""
    store = MetaStore.open(admin_url, create=False)
    if store is None:
        return
    try:
        store.drop_reader(role)
    finally:
        store.close()
