"""Load a source into a Snowflake evaluation schema: idempotent, atomic, fingerprinted.

Where the load lands is the URL's ``/database/schema`` (evaluation URLs use PUBLIC). How it
becomes visible at once depends on what the engine offers:

* ``swap`` (Snowflake): the tables are built in a fresh staging schema of the same database,
  the reader role is granted SELECT there, and ``ALTER SCHEMA staging SWAP WITH schema`` exchanges
  old and new in one step; the old content, now under the staging name, is dropped;
* ``transaction`` (the emulator, which has neither SWAP nor schema RENAME): the tables are built in
  a staging schema likewise, then the schema is dropped, recreated and the tables copied over
  inside one transaction; DuckDB underneath has transactional DDL, so evaluation sessions keep
  seeing the old content until COMMIT and an error rolls everything back.

What was loaded is recorded in ``<database>.POLYSQL_META.LOADS`` (never in the evaluation schema,
which must hold exactly the source's tables): fingerprint, load format, reader role and the report.
The record says "in progress" (empty fingerprint) while a load runs, so a crash can only cause a
reload, never a skip over content that does not match.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import snowflake.connector.errors as sf_errors

from polysql.backends._common.load_files import source_coercions, source_name
from polysql.backends.snowflake.load_copy import (
    Filled,
    Session,
    TablePlan,
    fill_tables,
    plan_tables,
)
from polysql.backends.snowflake.load_keys import declare_keys
from polysql.backends.snowflake.types import check_identifier, qualified, quote_ident
from polysql.core.errors import LoadError
from polysql.core.naming import check_mode
from polysql.core.schema import Coercion, LoadReport, rename_coercions
from polysql.core.version import __version__

if TYPE_CHECKING:
    from polysql.backends.base import Backend
    from polysql.backends.snowflake.backend import SnowflakeBackend

META_SCHEMA = "POLYSQL_META"
META_TABLE = "LOADS"
_IN_PROGRESS = ""
# What a load builds beyond the rows; a copy recorded under another format is reloaded once.
LOAD_FORMAT = 1


@dataclass(slots=True)
class SnowflakeLoadReport(LoadReport):
    """A LoadReport that also says how the rows got in and how the copy was made visible."""

    bulk: dict[str, str] = field(default_factory=dict)  # table -> put_copy | insert (...)
    publish: str = ""  # swap | transaction


def _polysql_version() -> str:
    return __version__


def _role_identifier(role: str) -> str:
    """A role name as written in GRANT: plain names are left for Snowflake to upper-case, as in
    the URL's ``role=``; anything else quoted."""
    return role if role.replace("_", "").replace("$", "").isalnum() and not role[0].isdigit() \
        else quote_ident(role)


class _Meta:
    """The load record of one evaluation schema."""

    def __init__(self, session: Session, database: str, schema: str) -> None:
        self.session = session
        self.schema = schema
        self.table = qualified(database, META_SCHEMA, META_TABLE)
        session.run(f"CREATE SCHEMA IF NOT EXISTS {qualified(database, META_SCHEMA)}")
        session.run(f"CREATE TABLE IF NOT EXISTS {self.table} (SCHEMA_NAME VARCHAR, "
                    f"FINGERPRINT VARCHAR, LOAD_FORMAT NUMBER(38,0), READER VARCHAR, "
                    f"REPORT VARCHAR, ENGINE_VERSION VARCHAR, POLYSQL_VERSION VARCHAR, "
                    f"LOADED_AT VARCHAR)")

    def read(self) -> dict[str, Any] | None:
        rows = self.session.run(f"SELECT FINGERPRINT, LOAD_FORMAT, READER, REPORT FROM "
                                f"{self.table} WHERE SCHEMA_NAME = ?", [self.schema])
        if not rows:
            return None
        fingerprint, load_format, reader, report = rows[0]
        try:
            saved = json.loads(report) if report else {}
        except ValueError:
            saved = {}
        return {"fingerprint": fingerprint, "load_format": load_format, "reader": reader or "",
                "report": saved if isinstance(saved, dict) else {}}

    def write(self, *, fingerprint: str, reader: str, report: dict[str, Any],
              engine_version: str) -> None:
        self.session.run(f"DELETE FROM {self.table} WHERE SCHEMA_NAME = ?", [self.schema])
        self.session.run(
            f"INSERT INTO {self.table} VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [self.schema, fingerprint, LOAD_FORMAT, reader,
             json.dumps(report, ensure_ascii=False), engine_version, _polysql_version(),
             time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())])


def _schema_tables(session: Session, database: str, schema: str) -> list[str] | None:
    """The tables of ``database.schema``, or None when the schema does not exist."""
    info = f"{quote_ident(database)}.INFORMATION_SCHEMA"
    exists = session.run(f"SELECT COUNT(*) FROM {info}.SCHEMATA WHERE SCHEMA_NAME = ?",
                         [schema])[0][0]
    if not exists:
        return None
    return [r[0] for r in session.run(
        f"SELECT TABLE_NAME FROM {info}.TABLES WHERE TABLE_SCHEMA = ? "
        f"AND TABLE_TYPE = 'BASE TABLE'", [schema])]


def _skipped(meta: _Meta, session: Session, database: str, schema: str, fingerprint: str,
             reader: str, origin: str, target: str) -> SnowflakeLoadReport | None:
    record = meta.read()
    if (record is None or record["fingerprint"] != fingerprint or record["reader"] != reader
            or record["load_format"] != LOAD_FORMAT):
        return None
    saved = record["report"]
    present = _schema_tables(session, database, schema)
    if present is None or sorted(present) != sorted(saved.get("tables", {})):
        return None
    return SnowflakeLoadReport(
        source=origin, target=target, fingerprint=fingerprint, skipped=True,
        tables=dict(saved.get("tables", {})),
        coercions=[Coercion(**c) for c in saved.get("coercions", [])],
        bulk=dict(saved.get("bulk", {})), publish=str(saved.get("publish", "")))


def _grant_reader(session: Session, database: str, schema: str, reader: str) -> None:
    role = _role_identifier(reader)
    session.run(f"GRANT USAGE ON DATABASE {quote_ident(database)} TO ROLE {role}")
    session.run(f"GRANT USAGE ON SCHEMA {qualified(database, schema)} TO ROLE {role}")
    session.run(f"GRANT SELECT ON ALL TABLES IN SCHEMA {qualified(database, schema)} "
                f"TO ROLE {role}")


@dataclass(slots=True)
class _Built:
    filled: dict[str, Filled]
    key_notes: list[Coercion]


def _staging_name() -> str:
    return f"POLYSQL_STAGING_{uuid.uuid4().hex[:12].upper()}"


def _publish_by_swap(session: Session, database: str, schema: str, plans: list[TablePlan],
                     source: Backend, *, bulk: str, reader: str) -> _Built:
    staging = _staging_name()
    session.run(f"CREATE SCHEMA {qualified(database, staging)}")
    try:
        filled = fill_tables(session, (database, staging), plans, source, bulk=bulk)
        notes = declare_keys(session, (database, staging), plans)
        if reader:
            _grant_reader(session, database, staging, reader)
        if _schema_tables(session, database, schema) is None:
            session.run(f"ALTER SCHEMA {qualified(database, staging)} RENAME TO "
                        f"{qualified(database, schema)}")
        else:
            session.run(f"ALTER SCHEMA {qualified(database, staging)} SWAP WITH "
                        f"{qualified(database, schema)}")
    finally:
        # after the swap the staging name holds the old content
        session.run(f"DROP SCHEMA IF EXISTS {qualified(database, staging)} CASCADE")
    return _Built(filled, notes)


def _publish_in_transaction(session: Session, database: str, schema: str,
                            plans: list[TablePlan], source: Backend, *, bulk: str) -> _Built:
    """The emulator's way: fill a staging schema, then replace the schema in one transaction by
    copying the tables over. (Creating a table with text columns inside a transaction fails on
    fakesnow -- it records their lengths in a second DuckDB database -- but CREATE TABLE AS does
    not; NOT NULL and keys are declared again on the copies.)"""
    staging = _staging_name()
    session.run(f"CREATE SCHEMA {qualified(database, staging)}")
    try:
        filled = fill_tables(session, (database, staging), plans, source, bulk=bulk)
        session.run("BEGIN")
        try:
            session.run(f"DROP SCHEMA IF EXISTS {qualified(database, schema)} CASCADE")
            session.run(f"CREATE SCHEMA {qualified(database, schema)}")
            for plan in plans:
                table = qualified(database, schema, plan.name)
                session.run(f"CREATE TABLE {table} AS SELECT * FROM "
                            f"{qualified(database, staging, plan.name)}")
                for column in plan.source.columns:
                    if not column.nullable:
                        session.run(f"ALTER TABLE {table} ALTER COLUMN "
                                    f"{quote_ident(plan.columns[column.name])} SET NOT NULL")
            notes = declare_keys(session, (database, schema), plans)
            session.run("COMMIT")
        except BaseException:
            # the session is closed after the load anyway; a failed rollback changes nothing
            with contextlib.suppress(sf_errors.Error):
                session.run("ROLLBACK")
            raise
    finally:
        session.run(f"DROP SCHEMA IF EXISTS {qualified(database, staging)} CASCADE")
    return _Built(filled, notes)


def load_into_snowflake(target: SnowflakeBackend, source: Backend, *, fingerprint: str | None,
                        replace: bool, names: str) -> SnowflakeLoadReport:
    """The Snowflake side of ``polysql.load``, on the URL's own (administrator) login."""
    if target.read_only:
        raise LoadError(f"{target!r} was opened read-only; connect with read_only=False to load")
    mode = check_mode(names)
    database, schema = target.location.database, target.location.schema
    if not database or not schema:
        raise LoadError(f"{target!r} names no database to load into: use "
                        f"snowflake://user@account/<database>/<schema>")
    for name, what in ((database, "database"), (schema, "schema")):
        problem = check_identifier(name, what)
        if problem:
            raise LoadError(f"cannot load into Snowflake: {problem}")
    fingerprint = fingerprint or source.fingerprint()
    if mode != "exact":  # a copy under other names is a different copy: never skip into it
        fingerprint = f"{fingerprint}+names={mode}"
    origin, destination = source_name(source), source_name(target)
    reader = target.reader_role or ""
    session = target.load_session()
    try:
        session.run(f"CREATE DATABASE IF NOT EXISTS {quote_ident(database)}")
        meta = _Meta(session, database, schema)
        if not replace:
            skipped = _skipped(meta, session, database, schema, fingerprint, reader, origin,
                               destination)
            if skipped is not None:
                return skipped
            present = _schema_tables(session, database, schema)
            if meta.read() is None and present:
                raise LoadError(
                    f"schema {database}.{schema} already holds tables that polysql did not "
                    f"load; pass replace=True (polysql load --replace) to replace it, or "
                    f"choose another schema")
        meta.write(fingerprint=_IN_PROGRESS, reader=reader, report={},
                   engine_version=target.version())
        started = time.perf_counter()
        plans = plan_tables(source.tables(), mode)
        bulk = target.bulk_path()
        if target.emulated:
            built = _publish_in_transaction(session, database, schema, plans, source, bulk=bulk)
            publish = "transaction"
        else:
            built = _publish_by_swap(session, database, schema, plans, source, bulk=bulk,
                                     reader=reader)
            publish = "swap"
        report = SnowflakeLoadReport(
            source=origin, target=destination, fingerprint=fingerprint,
            tables={name: f.rows for name, f in built.filled.items()},
            coercions=rename_coercions(source_coercions(source), plans) + built.key_notes,
            elapsed=time.perf_counter() - started,
            bulk={name: f.path for name, f in built.filled.items()}, publish=publish)
        meta.write(fingerprint=fingerprint, reader=reader,
                   report={**asdict(report), "load_format": LOAD_FORMAT},
                   engine_version=target.version())
        return report
    except sf_errors.Error as exc:
        raise LoadError(f"cannot load into Snowflake {destination}: "
                        f"{str(exc).strip()}") from exc
    finally:
        session.conn.close()
