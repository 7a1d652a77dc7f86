"""Where polysql keeps its PostgreSQL bookkeeping, and the login role evaluated SQL runs as.

Bookkeeping lives in its own database, ``polysql_meta``, closed to everyone but administrators, so
an evaluation database holds exactly the source's tables and a model never sees a metadata table:

* ``readers``: the least-privilege login role(s) evaluation connections use, with the password
  generated for each (trust authentication ignores it; password authentication needs it);
* ``loads``: per evaluation database, the source fingerprint and load report of the last load
  (or of the last build from a setup script, see :func:`build_from_script`).

The reader role can log in, read the tables it is granted, and nothing else: no superuser, no
role or database creation, no inheritance, read-only transactions by default, a statement timeout
of its own, and no CONNECT on ``polysql_meta``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import URL

from polysql.backends.postgres.connect import (
    MAINTENANCE_DATABASE,
    connection_params,
    describe,
    open_connection,
)
from polysql.backends.postgres.introspect import EVALUATION_SCHEMA
from polysql.backends.postgres.types import check_identifier
from polysql.core.errors import EngineError, LoadError
from polysql.core.schema import LoadReport
from polysql.core.version import __version__

if TYPE_CHECKING:
    from polysql.backends.base import SetupScript
    from polysql.backends.postgres.backend import PostgresBackend

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


def configure_reader_role(conn: psycopg.Connection, role: str, password: str) -> None:
    """Create ``role``, or set an existing one, as a login with least privileges and the reader
    session settings; ``conn`` is an administrator's. An existing role with administrative
    attributes is refused, never stripped: it belongs to someone, and evaluated SQL must not run
    as it."""
    existing = conn.execute(
        "SELECT rolsuper OR rolcreaterole OR rolcreatedb OR rolreplication OR rolbypassrls"
        " FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    if existing is not None and existing[0]:
        raise LoadError(
            f"PostgreSQL role {role!r} exists with administrative attributes (superuser, "
            f"CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS); evaluated SQL must not run as it. "
            f"Drop the role or name another (reader_role='<name>' for a load, --login for "
            f"polysql reader create)")
    verb = "CREATE" if existing is None else "ALTER"
    try:
        conn.execute(sql.SQL(
            verb + " ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "
            "NOREPLICATION NOBYPASSRLS PASSWORD {}"
        ).format(sql.Identifier(role), sql.Literal(password)))
        for name, value in READER_SETTINGS.items():
            conn.execute(sql.SQL("ALTER ROLE {} SET {} = {}").format(
                sql.Identifier(role), sql.Identifier(name), sql.Literal(value)))
    except psycopg.errors.InsufficientPrivilege as exc:
        raise LoadError(f"cannot create the evaluation role {role!r}: {exc}. Load as a "
                        f"superuser or a user with CREATEROLE") from exc
    superuser = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if superuser is not None and superuser[0]:
        conn.execute(sql.SQL("ALTER ROLE {} SET temp_file_limit = {}").format(
            sql.Identifier(role), sql.Literal(READER_TEMP_FILE_LIMIT)))


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
            password = self.reader_password(role)
            if password is None:
                password = secrets.token_urlsafe(24)
                self.conn.execute(
                    "INSERT INTO readers (role, password) VALUES (%s, %s)", (role, password))
            configure_reader_role(self.conn, role, password)
        return password

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
            # A lock ends with its session: when the unlock fails, the connection is gone and
            # the lock with it, and the error that ended the load is the one to raise.
            with contextlib.suppress(psycopg.Error):
                self.conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))",
                                  (_SCHEMA_LOCK + 1, database))


# What a login may do beyond reading, in the database it is connected to. Role attributes first,
# then write privileges on tables and views (owning one gives them all), then CREATE rights.
_BROAD_RIGHTS = r"""
SELECT unnest(array_remove(ARRAY[
    CASE WHEN rolsuper THEN 'SUPERUSER' END, CASE WHEN rolcreaterole THEN 'CREATEROLE' END,
    CASE WHEN rolcreatedb THEN 'CREATEDB' END, CASE WHEN rolbypassrls THEN 'BYPASSRLS' END,
    CASE WHEN rolreplication THEN 'REPLICATION' END], NULL))
FROM pg_roles WHERE rolname = current_user
UNION ALL
(SELECT p.privilege || ' on ' || quote_ident(n.nspname) || '.' || quote_ident(c.relname)
 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 CROSS JOIN unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) AS p(privilege)
 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
   AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%'
   AND has_table_privilege(c.oid, p.privilege)
 ORDER BY 1 LIMIT 20)
UNION ALL
SELECT 'CREATE on schema ' || quote_ident(nspname) FROM pg_namespace
WHERE nspname NOT IN ('pg_catalog', 'information_schema') AND nspname NOT LIKE 'pg\_%'
  AND has_schema_privilege(oid, 'CREATE')
UNION ALL
SELECT 'CREATE on database ' || quote_ident(current_database())
WHERE has_database_privilege(current_database(), 'CREATE')
"""


def broad_rights(conn: psycopg.Connection) -> list[str]:
    """What ``conn``'s login may do in its database beyond reading; empty for a SELECT-only
    login, the only kind of login evaluated SQL may run as besides polysql's own reader."""
    return [str(row[0]) for row in conn.execute(_BROAD_RIGHTS)]


def loaded_reader(admin_url: URL, database: str, role: str) -> tuple[bool, str | None]:
    """Whether polysql loaded ``database`` on this server, and the password recorded for the
    reader ``role`` (None when polysql never created it). A login that may not read polysql's
    records (they are kept from everyone but administrators) sees no load."""
    try:
        store = MetaStore.open(admin_url, create=False)
    except EngineError:
        return False, None
    if store is None:
        return False, None
    try:
        return store.load_record(database) is not None, store.reader_password(role)
    except psycopg.Error:
        return False, None
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


def foreign_content(conn: psycopg.Connection) -> bool:
    """Whether the evaluation schema holds tables or views although polysql has no record of
    building them (``conn`` is on the evaluation database)."""
    row = conn.execute(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm')",
        (EVALUATION_SCHEMA,)).fetchone()
    return bool(row and row[0])


# -- evaluation databases built from setup scripts -------------------------------------------

def build_from_script(target: PostgresBackend, script: SetupScript) -> LoadReport:
    """Build ``target``'s database (an administrator's writable connection) from ``script``.

    The database is dropped (when polysql built it before) and created afresh; the script runs
    in one transaction that also grants the reader role -- the one loads create and evaluation
    logs in as -- what a load grants it: CONNECT, and SELECT on the evaluation schema. Planner
    statistics are gathered afterwards. The fingerprint goes to ``polysql_meta``, as a load's
    does; a database polysql has no record of is replaced only when it holds nothing.
    """
    database = target.url.database or ""
    problem = check_identifier(database, "database")
    if problem:
        raise LoadError(f"cannot build {script.origin} on PostgreSQL: {problem}")
    store = MetaStore.open(target.url, create=True)
    assert store is not None
    try:
        server = open_connection(connection_params(target.url, database=MAINTENANCE_DATABASE))
        try:
            with store.locked(database):
                return _build(target, script, store, server)
        finally:
            server.close()
    finally:
        store.close()


def _build(target: PostgresBackend, script: SetupScript, store: MetaStore,
           server: psycopg.Connection) -> LoadReport:
    """The build, under the database's lock: skipped when the record matches."""

    admin, reader, database = target.url, target.reader_role, target.url.database or ""
    started = time.perf_counter()
    record = store.load_record(database)
    exists = database_exists(server, database)
    if (record is not None and record["fingerprint"] == script.fingerprint
            and record["reader"] == reader and exists
            and server.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                               (reader,)).fetchone() is not None):
        return script.report(admin, dict((record["report"] or {}).get("tables", {})),
                             skipped=True)
    if exists:
        if record is None:
            _refuse_foreign(admin, database)
        server.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(database)))
    store.ensure_reader(reader)
    create_database(server, database)
    version = target.version()
    # marked in progress: a build that stops half way matches no script and is redone
    store.record(database, fingerprint="", reader=reader, report={}, engine_version=version,
                 polysql_version=__version__)
    conn = open_connection(connection_params(admin, database=database), autocommit=True)
    try:
        with conn.transaction():
            script.run(admin, conn.execute, psycopg.Error)
            _grant_reader(conn, database, reader)
        conn.execute("ANALYZE")
        counts = _table_counts(conn)
    finally:
        conn.close()
    report = script.report(admin, counts, started=started)
    store.record(database, fingerprint=script.fingerprint, reader=reader,
                 report={**asdict(report), "kind": "setup_sql"}, engine_version=version,
                 polysql_version=__version__)
    return report


def _refuse_foreign(admin: URL, database: str) -> None:
    conn = open_connection(connection_params(admin, database=database))
    try:
        foreign = foreign_content(conn)
    finally:
        conn.close()
    if foreign:
        raise LoadError(f"database {database!r} already holds tables polysql did not build; "
                        "drop it or build into another database")


def _grant_reader(conn: psycopg.Connection, database: str, reader: str) -> None:
    """What a load grants its reader, on the evaluation schema the script filled: nothing for
    PUBLIC, USAGE and SELECT for the reader, and CONNECT on the database."""
    role, schema, db = (sql.Identifier(reader), sql.Identifier(EVALUATION_SCHEMA),
                        sql.Identifier(database))
    conn.execute(sql.SQL("REVOKE ALL ON SCHEMA {} FROM PUBLIC").format(schema))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, role))
    conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(schema, role))
    conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(db))
    conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(db, role))


def _table_counts(conn: psycopg.Connection) -> dict[str, int]:
    names = [row[0] for row in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relkind IN ('r', 'p') ORDER BY 1",
        (EVALUATION_SCHEMA,)).fetchall()]
    counts: dict[str, int] = {}
    for name in names:
        row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
            sql.Identifier(EVALUATION_SCHEMA, name))).fetchone()
        counts[name] = int(row[0]) if row else 0
    return counts


# -- a throwaway server ----------------------------------------------------------------------

def start_container(image: str, stack: ExitStack, password: str) -> str:
    """Start a PostgreSQL server from the Docker ``image`` (``polysql up``), stopped and removed
    when ``stack`` closes; the URL of its superuser. Needs the ``containers`` extra."""
    from testcontainers.postgres import PostgresContainer  # the optional 'containers' extra

    server = stack.enter_context(PostgresContainer(image, username="postgres", password=password,
                                                   dbname=MAINTENANCE_DATABASE))
    host, port = server.get_container_host_ip(), server.get_exposed_port(5432)
    return f"postgresql://postgres:{password}@{host}:{port}/"


# -- reader logins for databases polysql did not load --------------------------------------------

def _user_schemas(conn: psycopg.Connection) -> list[str]:
    return [str(row[0]) for row in conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', "
        "'information_schema') AND nspname NOT LIKE 'pg\\_%' ORDER BY nspname")]


def create_team_reader(admin_url: URL, role: str, databases: Sequence[str]) -> str:
    """Create ``role`` (or give it a new password) as a login that may only read ``databases``:
    CONNECT on each, USAGE and SELECT on every table of their schemas, nothing else. Returns the
    password. Raises EngineError when the login could still do more than read one of them (say,
    PUBLIC may CREATE in a schema), naming what to revoke."""
    password = secrets.token_urlsafe(24)
    server = open_connection(connection_params(admin_url, database=MAINTENANCE_DATABASE))
    try:
        missing = [name for name in databases if not database_exists(server, name)]
        if missing:
            raise EngineError(f"there is no database {missing[0]!r} on "
                              f"{describe(connection_params(admin_url))} to create a reader for")
        if role == (admin_url.username or connection_params(admin_url)["user"]):
            raise EngineError(f"the reader login cannot be {role!r}, the administrator this URL "
                              "logs in as; name another with --login")
        configure_reader_role(server, role, password)
        for name in databases:
            server.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                sql.Identifier(name), sql.Identifier(role)))
    finally:
        server.close()
    for name in databases:
        conn = open_connection(connection_params(admin_url, database=name))
        try:
            for schema in _user_schemas(conn):
                conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {0} TO {1}; "
                                     "GRANT SELECT ON ALL TABLES IN SCHEMA {0} TO {1}").format(
                    sql.Identifier(schema), sql.Identifier(role)))
        finally:
            conn.close()
        reader = open_connection(connection_params(admin_url, user=role, password=password,
                                                   database=name))
        try:
            rights = broad_rights(reader)
        finally:
            reader.close()
        if rights:
            raise EngineError(
                f"the login {role!r} was created but can do more than read {name!r}: "
                f"{', '.join(rights[:5])} (granted to PUBLIC or inherited); revoke that, e.g. "
                f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, and run this again")
    return password


def drop_team_reader(admin_url: URL, role: str) -> bool:
    """Drop the login ``role`` with every grant it holds; False if there is none."""
    server = open_connection(connection_params(admin_url, database=MAINTENANCE_DATABASE))
    try:
        if server.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
            return False
        # grants live in each database: DROP OWNED there revokes them (CONNECT included)
        names = [str(row[0]) for row in server.execute(
            "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate "
            "AND has_database_privilege(%s, oid, 'CONNECT')", (role,))]
        for name in names:
            conn = open_connection(connection_params(admin_url, database=name))
            try:
                conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            finally:
                conn.close()
        server.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
        return True
    finally:
        server.close()
