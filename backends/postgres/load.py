"""Load a source into a PostgreSQL evaluation database: idempotent, atomic, fingerprinted.

Tables are built in a fresh staging schema, which nothing but the loading administrator can see
(a new schema grants nothing to PUBLIC, and the reader role gets no USAGE on it): created empty,
then filled over several connections at once, each table in a transaction of its own. Keys,
indexes and the fold schema of views under pgloader's names (``load_views.py``) follow, and
then one transaction renames the old ``public`` schema away and drops it, makes the staging
schema ``public`` and grants the reader role SELECT on it. Until that COMMIT, evaluation
connections keep seeing the previous content, so a half-loaded evaluation database cannot exist.
An error or interrupt drops the staging schemas; one a crash left behind is dropped by the next
load into the database (loads into one database never overlap: they hold its lock).

The fingerprint and report live in ``polysql_meta`` (see ``setup.py``). The record is first
marked "in progress" (empty fingerprint) and completed after COMMIT, so a crash between the two
can only cause a reload, never a skip over content that does not match.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from polysql.backends._common.lanes import load_lanes
from polysql.backends._common.load_files import source_coercions, source_name, timed
from polysql.backends.postgres.connect import (
    MAINTENANCE_DATABASE,
    connection_params,
    open_connection,
)
from polysql.backends.postgres.load_copy import (
    add_indexes,
    add_keys,
    copy_tables,
    create_tables,
    plan_tables,
)
from polysql.backends.postgres.load_views import FOLD_SCHEMA, add_fold_views
from polysql.backends.postgres.setup import (
    MetaStore,
    create_database,
    database_exists,
    foreign_content,
)
from polysql.backends.postgres.types import check_identifier
from polysql.core.errors import LoadError
from polysql.core.naming import check_mode
from polysql.core.schema import Coercion, LoadReport, rename_coercions
from polysql.core.version import __version__

if TYPE_CHECKING:
    from polysql.backends.base import Backend
    from polysql.backends.postgres.backend import PostgresBackend

EVALUATION_SCHEMA = "public"
_IN_PROGRESS = ""  # the fingerprint recorded while a load runs
_STAGING_PREFIX = "polysql_staging_"
_STAGING_LIKE = r"polysql\_staging\_%"  # the prefix as a LIKE pattern (its _ taken literally)
# What a load builds beyond the rows; a copy recorded under an older format is reloaded once.
# 2: secondary indexes and UNIQUE constraints are carried.
# 3: the fold schema (load_views.py).
LOAD_FORMAT = 3


def _polysql_version() -> str:
    return __version__


def _skipped(store: MetaStore, server: psycopg.Connection, database: str, fingerprint: str,
             reader: str, origin: str, target: str) -> LoadReport | None:
    record = store.load_record(database)
    if (record is None or record["fingerprint"] != fingerprint or record["reader"] != reader
            or (record["report"] or {}).get("load_format") != LOAD_FORMAT
            or not database_exists(server, database)):
        return None
    role = server.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (reader,)).fetchone()
    if role is None:
        return None
    saved: dict[str, Any] = record["report"] or {}
    return LoadReport(source=origin, target=target, fingerprint=fingerprint, skipped=True,
                      tables=dict(saved.get("tables", {})),
                      coercions=[Coercion(**c) for c in saved.get("coercions", [])])


def _replace_schema(conn: psycopg.Connection, staging: str | None, name: str) -> None:
    """Put ``staging`` (None: nothing) in place of the schema ``name``, dropping the old one."""
    old = f"polysql_old_{uuid.uuid4().hex[:12]}"
    exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()
    if exists:
        conn.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
            sql.Identifier(name), sql.Identifier(old)))
    if staging is not None:
        conn.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
            sql.Identifier(staging), sql.Identifier(name)))
    if exists:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(old)))


def _swap_in(conn: psycopg.Connection, staging: str, fold: str | None, database: str,
             reader: str) -> None:
    """Make ``staging`` the evaluation schema and ``fold`` (None: none) the fold schema, readable
    by ``reader`` only (inside the load's transaction, so the swap is atomic)."""
    # the old fold schema first: its views depend on the old evaluation schema's tables
    _replace_schema(conn, fold, FOLD_SCHEMA)
    _replace_schema(conn, staging, EVALUATION_SCHEMA)
    role, db = sql.Identifier(reader), sql.Identifier(database)
    # The new schemas grant nothing to PUBLIC; the database keeps no PUBLIC CONNECT or TEMP.
    for name in (EVALUATION_SCHEMA, FOLD_SCHEMA) if fold is not None else (EVALUATION_SCHEMA,):
        schema = sql.Identifier(name)
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, role))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(schema, role))
    conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(db))
    conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(db, role))


def _drop_staging_left_behind(conn: psycopg.Connection) -> None:
    """Staging schemas of loads that crashed; no other load of this database is running."""
    rows = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                        (_STAGING_LIKE,)).fetchall()
    for (name,) in rows:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


def _build(conn: psycopg.Connection, connect: Callable[[], psycopg.Connection], source: Backend,
           *, database: str, reader: str, names: str, report: LoadReport) -> LoadReport:
    tables = source.tables()
    mode = check_mode(names)
    plans = plan_tables(tables, mode)
    _drop_staging_left_behind(conn)
    staging = f"{_STAGING_PREFIX}{uuid.uuid4().hex[:12]}"
    # exact names only: a copy under converted names is read in that one layout
    fold = f"{staging}_fold" if mode == "exact" else None
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(staging)))
    try:
        create_tables(conn, staging, plans)
        copied = copy_tables(connect, staging, plans, source, workers=load_lanes(source))
        with conn.transaction():
            key_coercions = add_keys(conn, staging, plans) + add_indexes(conn, staging, plans)
            if fold is not None:
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(fold)))
                add_fold_views(conn, fold, staging, plans)
            _swap_in(conn, staging, fold, database, reader)
    except BaseException:
        with contextlib.suppress(psycopg.Error):
            for schema in (fold, staging):
                if schema is not None:
                    conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                        sql.Identifier(schema)))
        raise
    report.tables = copied.counts
    report.coercions = (rename_coercions(source_coercions(source), plans)
                        + copied.coercions + key_coercions)
    return report


def load_into_postgres(target: PostgresBackend, source: Backend, *, fingerprint: str | None,
                       replace: bool, names: str) -> LoadReport:
    """The PostgreSQL side of ``polysql.load``, run on an administrator's connection."""
    if target.read_only:
        raise LoadError(f"{target!r} was opened read-only; connect with read_only=False to load")
    mode = check_mode(names)
    database = target.url.database
    if not database:
        raise LoadError(f"{target!r} names no database to load into: use "
                        f"postgresql://user@host:port/<database>")
    problem = check_identifier(database, "database")
    if problem:
        raise LoadError(f"cannot load into PostgreSQL: {problem}")
    fingerprint = fingerprint or source.fingerprint()
    if mode != "exact":  # a copy under other names is a different copy: never skip into it
        fingerprint = f"{fingerprint}+names={mode}"
    origin, destination = source_name(source), source_name(target)
    admin = target.url
    store = MetaStore.open(admin, create=True)
    assert store is not None
    server = open_connection(connection_params(admin, database=MAINTENANCE_DATABASE))
    try:
        with store.locked(database):
            if not replace:
                skipped = _skipped(store, server, database, fingerprint, target.reader_role,
                                   origin, destination)
                if skipped is not None:
                    return skipped
            ours = store.load_record(database) is not None
            reader = target.reader_role
            store.ensure_reader(reader)
            create_database(server, database)
            report = LoadReport(origin, destination, fingerprint)
            conn = open_connection(connection_params(admin, database=database), autocommit=True)
            try:
                if not ours and not replace and foreign_content(conn):
                    raise LoadError(
                        f"database {database!r} already holds tables that polysql did not load; "
                        f"pass replace=True (polysql load --replace) to replace its public "
                        f"schema, or choose another database")
                store.record(database, fingerprint=_IN_PROGRESS, reader=reader, report={},
                             engine_version=target.version(), polysql_version=_polysql_version())
                def connect() -> psycopg.Connection:
                    return open_connection(connection_params(admin, database=database),
                                           autocommit=True)

                timed_report = timed(lambda: _build(conn, connect, source, database=database,
                                                    reader=reader, names=mode, report=report))
            finally:
                conn.close()
            store.record(database, fingerprint=fingerprint, reader=reader,
                         report={**asdict(timed_report), "load_format": LOAD_FORMAT},
                         engine_version=target.version(),
                         polysql_version=_polysql_version())
            return timed_report
    finally:
        server.close()
        store.close()

