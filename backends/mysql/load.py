"""Load a source database into MySQL/MariaDB: fingerprinted, idempotent and atomic.

The whole copy is built in a staging database (``polysql_stage_<hash>``). Only when every table
is in does one ``RENAME TABLE`` statement -- atomic on both servers -- move the old tables out
(to ``polysql_old_<hash>``, dropped afterwards) and the new ones in. A crash mid-load leaves the
evaluation database as it was plus a staging database that the next load removes. The source
fingerprint, load settings and report are recorded in ``polysql_meta``, outside the evaluation
database; an unchanged source with unchanged settings is not loaded again. A named server lock
keeps two processes from loading the same database at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pymysql

from polysql.backends._common.lanes import load_lanes
from polysql.backends._common.load_files import load_stopped, source_coercions, source_name
from polysql.backends.mysql.connect import Login
from polysql.backends.mysql.errors import connection_lost, error_code
from polysql.backends.mysql.load_copy import TablePlan, copy_tables, plan_tables
from polysql.backends.mysql.load_index import add_table_indexes
from polysql.backends.mysql.load_infile import Loading, choose_fill, loader_session
from polysql.backends.mysql.load_keys import add_foreign_keys, prepare_child_indexes
from polysql.backends.mysql.setup import (
    PENDING,
    LoadRecord,
    admin_session,
    database_tables,
    delete_record,
    drop_reader,
    ensure_meta,
    ensure_reader,
    load_lock,
    new_password,
    quote_ident,
    read_record,
    reader_name,
    resolve_collation,
    write_record,
)
from polysql.core.errors import EngineError, LoadError
from polysql.core.naming import NameMode, check_mode
from polysql.core.schema import Coercion, LoadReport

if TYPE_CHECKING:
    from polysql.backends.base import Backend

# 2: secondary indexes are carried; databases loaded without them are reloaded once.
# 3: a DATETIME declares only the fractional digits its values use (it was always 6).
# 4: short text outside keys is VARCHAR (types.SHORT_TEXT_CHARS), so GROUP BY over it is fast.
SETTINGS_FORMAT = 4
STAGE_PREFIX = "polysql_stage_"
OLD_PREFIX = "polysql_old_"
_AUX_HASH_DIGITS = 16


@dataclass(frozen=True, slots=True)
class LoadSettings:
    """Choices that shape the loaded database; a change in any of them forces a reload."""

    names: NameMode
    collation: str | None  # None: the server's default utf8mb4 collation
    reader_host: str

    @classmethod
    def create(cls, *, names: str, collation: str | None, reader_host: str) -> LoadSettings:
        return cls(check_mode(names), collation, reader_host)


def auxiliary_name(prefix: str, database: str) -> str:
    return prefix + hashlib.sha256(database.encode("utf-8")).hexdigest()[:_AUX_HASH_DIGITS]


def _skipped(record: LoadRecord, origin: str) -> LoadReport:
    report = record.report
    return LoadReport(source=origin, target=str(report.get("target", record.database)),
                      fingerprint=record.fingerprint, skipped=True,
                      tables=dict(report.get("tables", {})),
                      coercions=[Coercion(**c) for c in report.get("coercions", [])])


def load_into_mysql(login: Login, database: str, source: Backend, settings: LoadSettings, *,
                    fingerprint: str | None, replace: bool, engine_version: str,
                    target_name: str) -> LoadReport:
    started = time.perf_counter()
    fingerprint = fingerprint or source.fingerprint()
    origin = source_name(source)
    with admin_session(login) as conn, load_lock(conn, database):
        ensure_meta(conn)
        collation = resolve_collation(conn, settings.collation)
        recorded_settings = {"format": SETTINGS_FORMAT, "names": settings.names,
                             "collation": collation}
        record = read_record(conn, database)
        existing = database_tables(conn, database)
        if (not replace and record is not None and existing is not None
                and record.fingerprint == fingerprint and record.settings == recorded_settings
                and record.reader_host == settings.reader_host):
            ensure_reader(conn, database, record.reader_user, record.reader_host,
                          record.reader_password)
            _drop_leftovers(conn, database)
            return _skipped(record, origin)
        if record is None and existing and not replace:
            raise LoadError(
                f"database {database!r} already holds tables polysql did not load; pass "
                f"replace=True (polysql load --replace) to overwrite it, or choose another "
                f"database name")
        user = record.reader_user if record else reader_name(database)
        password = record.reader_password if record else new_password()
        if record is not None and record.reader_host != settings.reader_host:
            drop_reader(conn, record.reader_user, record.reader_host)
        ensure_reader(conn, database, user, settings.reader_host, password)

        def mark_pending() -> None:
            # Written just before the swap: if we stop between the swap and the final record,
            # the next load finds a fingerprint that matches nothing and reloads -- and knows
            # the database as polysql's own, with its reader.
            pending = LoadRecord(database, PENDING, recorded_settings, {}, user,
                                 settings.reader_host, password)
            write_record(conn, pending, engine_version)

        with loader_session(login, conn) as loading:
            counts, coercions = _build_and_swap(conn, loading, database, source, settings.names,
                                                collation, before_swap=mark_pending)
        report = LoadReport(source=origin, target=target_name,
                            fingerprint=fingerprint, tables=counts, coercions=coercions,
                            elapsed=time.perf_counter() - started)
        write_record(conn, LoadRecord(database, fingerprint, recorded_settings,
                                      _report_dict(report), user, settings.reader_host,
                                      password), engine_version)
        return report


def load_failure(login: Login, database: str, exc: pymysql.err.MySQLError) -> EngineError:
    """The error a load that the driver stopped raises: the server gone (a dead or restarted
    server, a dropped connection) is an outage, anything else a failed load. Either way the
    database keeps its previous copy: the new one was still in its staging database."""
    code = error_code(exc)
    said = exc.args[1] if len(exc.args) > 1 else str(exc) or type(exc).__name__
    return load_stopped("MySQL/MariaDB", login.unix_socket or f"{login.host}:{login.port}",
                        database, f"error {code}: {said}" if code else said,
                        lost=connection_lost(exc))


def _drop_leftovers(conn: pymysql.connections.Connection, database: str) -> None:
    """The staging and old databases of a load that was cut off (the server went away before
    it could drop them): a load that skips, as much as one that builds, removes them. Looked
    up first, so the usual skip runs no DDL (a DROP ... IF EXISTS is still written to the
    binary log)."""
    names = [auxiliary_name(prefix, database) for prefix in (STAGE_PREFIX, OLD_PREFIX)]
    with conn.cursor() as cur:
        cur.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN "
                    "(%s, %s)", names)
        for (name,) in cur.fetchall():
            cur.execute(f"DROP DATABASE IF EXISTS {quote_ident(name)}")


def _report_dict(report: LoadReport) -> dict[str, Any]:
    return {"target": report.target, "tables": report.tables,
            "coercions": [asdict(c) for c in report.coercions],
            "elapsed": round(report.elapsed, 3)}


def _build_and_swap(conn: pymysql.connections.Connection, loading: Loading, database: str,
                    source: Backend, names: NameMode, collation: str, *,
                    before_swap: Callable[[], None]) -> tuple[dict[str, int], list[Coercion]]:
    """Build every table in the staging database (filled through ``loading``'s connection)
    and swap them in."""
    stage = auxiliary_name(STAGE_PREFIX, database)
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {quote_ident(stage)}")  # a crashed load's leftovers
        cur.execute(f"CREATE DATABASE {quote_ident(stage)} CHARACTER SET utf8mb4 "
                    f"COLLATE {collation}")
    try:
        choose_fill(loading, stage)
        plans = plan_tables(source.tables(), names)
        renamed = {p.source.name: p for p in plans}

        def index_table(lane: pymysql.connections.Connection, plan: TablePlan) -> list[Coercion]:
            notes = add_table_indexes(lane, stage, plan, names, collation)
            prepare_child_indexes(lane, stage, plan)  # after the source's: they may serve
            return notes

        copied, indexed = copy_tables(loading, stage, plans, source, collation,
                                      lanes=load_lanes(source), after_fill=index_table)
        # Asked after the copy: reading the rows can find more (text that was not UTF-8,
        # integers a float column could only hold approximately).
        coercions = [_renamed(c, renamed) for c in source_coercions(source)] + copied
        note = loading.note()
        if note is not None:
            coercions.append(note)
        coercions.extend(indexed)
        coercions.extend(add_foreign_keys(conn, stage, plans))
        before_swap()
        _swap(conn, database, stage, [p.name for p in plans], collation)
    finally:
        # Never hiding the error that ended the build: a staging database left behind (the
        # server went away) is removed by the next load.
        with contextlib.suppress(pymysql.err.MySQLError), conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {quote_ident(stage)}")
    return {p.name: p.rows for p in plans}, coercions


def _renamed(coercion: Coercion, plans: dict[str, Any]) -> Coercion:
    """A source coercion in the loaded database's names."""
    plan = plans.get(coercion.table)
    if plan is None:
        return coercion
    return Coercion(plan.name, plan.columns.get(coercion.column, coercion.column),
                    coercion.message, coercion.count)


def _swap(conn: pymysql.connections.Connection, database: str, stage: str, tables: list[str],
          collation: str) -> None:
    """Replace ``database``'s tables with ``stage``'s in one atomic RENAME TABLE."""
    old = auxiliary_name(OLD_PREFIX, database)
    target = quote_ident(database)
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {target} CHARACTER SET utf8mb4 "
                    f"COLLATE {collation}")
        cur.execute(f"ALTER DATABASE {target} CHARACTER SET utf8mb4 COLLATE {collation}")
        cur.execute(f"DROP DATABASE IF EXISTS {quote_ident(old)}")
        cur.execute(f"CREATE DATABASE {quote_ident(old)}")
        try:
            current = database_tables(conn, database) or []
            moves = [f"{target}.{quote_ident(t)} TO {quote_ident(old)}.{quote_ident(t)}"
                     for t in current]
            moves += [f"{quote_ident(stage)}.{quote_ident(t)} TO {target}.{quote_ident(t)}"
                      for t in tables]
            if moves:
                try:
                    cur.execute("RENAME TABLE " + ", ".join(moves))
                except pymysql.err.MySQLError as exc:
                    raise LoadError(f"cannot swap the new tables into {database!r} (the old ones "
                                    f"are untouched): {exc}") from exc
        finally:
            cur.execute(f"DROP DATABASE IF EXISTS {quote_ident(old)}")


def drop_loaded_database(login: Login, database: str) -> None:
    """Remove ``database``, its staging leftovers, its reader and its record."""
    with admin_session(login) as conn:
        record = read_record(conn, database)
        with conn.cursor() as cur:
            for name in (database, auxiliary_name(STAGE_PREFIX, database),
                         auxiliary_name(OLD_PREFIX, database)):
                cur.execute(f"DROP DATABASE IF EXISTS {quote_ident(name)}")
        if record is not None:
            drop_reader(conn, record.reader_user, record.reader_host)
            delete_record(conn, database)
