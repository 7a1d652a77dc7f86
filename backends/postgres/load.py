"""Load a source into a PostgreSQL evaluation database: idempotent, atomic, fingerprinted.

The whole load is one transaction on the target database. Tables are built in a fresh staging
schema; at the end, in the same transaction, the old ``public`` schema is renamed away and dropped,
the staging schema becomes ``public``, and the reader role is granted SELECT on it. Until COMMIT,
evaluation connections keep seeing the previous content; a crash or error anywhere rolls
everything back, so a half-loaded evaluation database cannot exist.

The fingerprint and report live in ``polysql_meta`` (see ``setup.py``). The record is first
marked "in progress" (empty fingerprint) and completed after COMMIT, so a crash between the two
can only cause a reload, never a skip over content that does not match.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

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
    plan_tables,
)
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
# What a load builds beyond the rows; a copy recorded under an older format is reloaded once.
# 2: secondary indexes and UNIQUE constraints are carried.
LOAD_FORMAT = 2


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


def _swap_in(conn: psycopg.Connection, staging: str, database: str, reader: str) -> None:
    """Make ``staging`` the evaluation schema, readable by ``reader`` only (inside the load's
    transaction, so the swap is atomic)."""
    old = f"polysql_old_{uuid.uuid4().hex[:12]}"
    exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                          (EVALUATION_SCHEMA,)).fetchone()
    if exists:
        conn.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
            sql.Identifier(EVALUATION_SCHEMA), sql.Identifier(old)))
    conn.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
        sql.Identifier(staging), sql.Identifier(EVALUATION_SCHEMA)))
    if exists:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(old)))
    role, schema, db = (sql.Identifier(reader), sql.Identifier(EVALUATION_SCHEMA),
                        sql.Identifier(database))
    # The new schema grants nothing to PUBLIC; the database keeps no PUBLIC CONNECT or TEMP.
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, role))
    conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(schema, role))
    conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(db))
    conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(db, role))


def _build(conn: psycopg.Connection, source: Backend, *, database: str, reader: str,
           names: str, report: LoadReport) -> LoadReport:
    tables = source.tables()
    plans = plan_tables(tables, check_mode(names))
    staging = f"polysql_staging_{uuid.uuid4().hex[:12]}"
    with conn.transaction():
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(staging)))
        copied = copy_tables(conn, staging, plans, source)
        key_coercions = add_keys(conn, staging, plans) + add_indexes(conn, staging, plans)
        for plan in plans:
            conn.execute(sql.SQL("ANALYZE {}.{}").format(sql.Identifier(staging),
                                                          sql.Identifier(plan.name)))
        _swap_in(conn, staging, database, reader)
    report.tables = copied.counts
    report.coercions = (rename_coercions(source_coercions(source), plans)
                        + copied.coercions + key_coercions)
    return report


def load_into_postgres(target: PostgresBackend, source: Backend, *, fingerprint: str | None,
                       replace: bool, names: str) -> LoadReport:
    """The PostgreSQL side of ``polysql.load``, run on an administrator's connection."""
    if target.read_only:
        raise LoadError(f"{target!r} was opened read-only; connect with read_only=False to load")
    check_mode(names)
    database = target.url.database
    if not database:
        raise LoadError(f"{target!r} names no database to load into: use "
                        f"postgresql://user@host:port/<database>")
    problem = check_identifier(database, "database")
    if problem:
        raise LoadError(f"cannot load into PostgreSQL: {problem}")
    fingerprint = fingerprint or source.fingerprint()
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
                        f"pass replace=True to replace its public schema, or choose another "
                        f"database")
                store.record(database, fingerprint=_IN_PROGRESS, reader=reader, report={},
                             engine_version=target.version(), polysql_version=_polysql_version())
                timed_report = timed(lambda: _build(conn, source, database=database,
                                                    reader=reader, names=names, report=report))
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

