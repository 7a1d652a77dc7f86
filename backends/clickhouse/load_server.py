"""Load a source into a database on a ClickHouse server (clickhouse-connect over HTTP).

A load builds every table in a staging database and swaps it in with two ``RENAME DATABASE``
statements; loads are recorded in ``polysql_meta.loads`` (append-only: database, fingerprint,
report), written as "in progress" before the swap and completed after it, so a crash in between
can only cause a reload, never a skip.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import uuid
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from polysql.backends._common.load_files import source_coercions, source_name, timed
from polysql.backends.clickhouse.load import (
    WRITER_SETTINGS,
    create_table_sql,
    index_notes,
    scratch_spec,
    settle,
)
from polysql.backends.clickhouse.types import quote_ident, quote_string
from polysql.core.errors import LoadError
from polysql.core.naming import check_mode, rename_tables
from polysql.core.schema import Coercion, LoadReport

if TYPE_CHECKING:
    from polysql.backends.base import Backend
    from polysql.backends.clickhouse.connect_server import ServerSession

META_DATABASE = "polysql_meta"
# 2: a DateTime64 declares the fractional digits its values need (it was always 6); databases
# loaded before are loaded again.
LOAD_FORMAT = 2
_IN_PROGRESS = ""


def load_on_server(session: ServerSession, source: Backend, *, fingerprint: str | None,
                   replace: bool, names: str, target_name: str) -> LoadReport:
    """Copy ``source`` into ``session``'s database, unless the recorded load of the same
    fingerprint is still there (``replace`` forces a new one)."""
    database = session.database
    if not database:
        raise LoadError("a ClickHouse server URL names no database to load into: use "
                        "clickhouse://user@host:8123/<database>")
    mode = check_mode(names)
    fingerprint = fingerprint or source.fingerprint()
    if mode != "exact":
        fingerprint = f"{fingerprint}+names={mode}"
    origin = source_name(source)
    _ensure_meta(session)
    latest = _latest(session, database)
    if not replace and latest is not None and latest["fingerprint"] == fingerprint \
            and latest["load_format"] == LOAD_FORMAT and _exists(session, database):
        saved = json.loads(latest["report"] or "{}")
        return LoadReport(origin, target_name, fingerprint, skipped=True,
                          tables=dict(saved.get("tables", {})),
                          coercions=[Coercion(**c) for c in saved.get("coercions", [])])
    if latest is None and _exists(session, database) and not replace:
        raise LoadError(f"database {database!r} already exists and polysql did not load it; "
                        f"pass replace=True (polysql load --replace) to replace it, or choose "
                        f"another database")
    report = LoadReport(origin, target_name, fingerprint)
    timed_report = timed(lambda: _build(session, source, database, mode, report))
    _record(session, database, fingerprint,
            {**asdict(timed_report), "load_format": LOAD_FORMAT})
    return timed_report


def _ensure_meta(session: ServerSession) -> None:
    session.client.command(f"CREATE DATABASE IF NOT EXISTS {META_DATABASE}")
    session.client.command(f"CREATE TABLE IF NOT EXISTS {META_DATABASE}.loads (database String, "
                           f"fingerprint String, load_format UInt32, report String, "
                           f"loaded_at DateTime64(6, 'UTC')) ENGINE = MergeTree "
                           f"ORDER BY (database, loaded_at)")


def _record(session: ServerSession, database: str, fingerprint: str,
            report: dict[str, Any]) -> None:
    session.client.insert(f"{META_DATABASE}.loads",
                          [[database, fingerprint, LOAD_FORMAT, json.dumps(report),
                            datetime.datetime.now(datetime.UTC)]],
                          column_names=["database", "fingerprint", "load_format", "report",
                                        "loaded_at"])


def _latest(session: ServerSession, database: str) -> dict[str, Any] | None:
    rows = session.json_rows(
        f"SELECT fingerprint, load_format, report FROM {META_DATABASE}.loads "
        f"WHERE database = {quote_string(database)} ORDER BY loaded_at DESC LIMIT 1")
    return rows[0] if rows else None


def _exists(session: ServerSession, database: str) -> bool:
    return bool(session.json_rows(
        f"SELECT name FROM system.databases WHERE name = {quote_string(database)}"))


def _build(session: ServerSession, source: Backend, database: str, mode: Any,
           report: LoadReport) -> LoadReport:
    command = session.client.command
    source_tables = source.tables()
    tables = rename_tables(source_tables, mode)
    staging = f"polysql_staging_{uuid.uuid4().hex[:12]}"
    command(f"CREATE DATABASE {quote_ident(staging)}")
    notes: list[Coercion] = []
    try:
        for origin, table in zip(source_tables, tables, strict=True):
            scratch, measured = scratch_spec(table)
            command(create_table_sql(staging, scratch, disk=None))
            count = 0
            names = [name for name, _ in scratch.columns]
            for batch in source.read_table(origin):
                # rows are read by the source's names and inserted by position
                renamed = measured.update(pa.RecordBatch.from_arrays(batch.columns, names=names))
                session.client.insert_arrow(scratch.name, pa.Table.from_batches([renamed]),
                                            database=staging, settings=WRITER_SETTINGS)
                count += batch.num_rows
            spec = settle(command, staging, scratch, table, measured, disk=None)
            if table.row_count is not None and count != table.row_count:
                raise LoadError(f"table {table.name!r}: the source reported "
                                f"{table.row_count} rows but {count} arrived")
            report.tables[spec.name] = count
            notes.extend(index_notes(table))
        _record(session, database, _IN_PROGRESS, {})
        old = f"polysql_old_{uuid.uuid4().hex[:12]}"
        existed = _exists(session, database)
        if existed:
            command(f"RENAME DATABASE {quote_ident(database)} TO {quote_ident(old)}")
        command(f"RENAME DATABASE {quote_ident(staging)} TO {quote_ident(database)}")
        if existed:
            command(f"DROP DATABASE {quote_ident(old)} SYNC")
    except Exception:
        with contextlib.suppress(Exception):
            command(f"DROP DATABASE IF EXISTS {quote_ident(staging)} SYNC")
        raise
    report.coercions = source_coercions(source) + notes
    return report
