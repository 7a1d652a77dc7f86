"""Copy a load source into an embedded ClickHouse evaluation directory: idempotent and atomic.

The whole database is built in a hidden sibling directory: a staging database in the engine
whose MergeTree tables live on a local disk rooted there, filled from the source's Arrow batches
(``INSERT ... FORMAT ArrowStream``), merged down to one part per table, and then detached, so the
directory holds finished, immutable parts and nothing else. A manifest (``polysql.json``) records
how to attach each table, the source fingerprint and the load report; it is written last, then
the directory replaces the target with a rename. A crash leaves either the old copy or none, never
a half-loaded one.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import sqlglot
import sqlglot.errors

from polysql.backends._common.load_files import source_coercions, source_name, timed
from polysql.backends._common.timestamps import MOST_FRACTION_DIGITS, FractionDigits
from polysql.backends.clickhouse.connect_embedded import (
    MANIFEST,
    MANIFEST_FORMAT,
    Engine,
    new_directory_name,
    read_manifest,
    replace_directory,
)
from polysql.backends.clickhouse.types import (
    TableSpec,
    clickhouse_type,
    disk_clause,
    quote_ident,
    quote_string,
)
from polysql.core.errors import LoadError
from polysql.core.naming import NameMode, check_mode, rename_tables
from polysql.core.schema import Coercion, LoadReport, Table
from polysql.core.version import __version__

if TYPE_CHECKING:
    from polysql.backends.base import Backend

# Writer sessions: a NULL bound for a NOT NULL column must fail, not become 0 or '', and a
# column missing from the inserted batches must fail, not be filled with defaults.
WRITER_SETTINGS = {"input_format_null_as_default": 0,
                   "input_format_arrow_allow_missing_columns": 0}
# Rows are inserted into a table of this prefix first, until the timestamp digits are known.
SCRATCH_PREFIX = "polysql_scratch_"
# What a copy's layout promises beyond the manifest format: a copy without it is loaded again.
# "datetime digits as used": a DateTime64 declares the fractional digits its values need.
LAYOUT = "datetime digits as used"


def _polysql_version() -> str:
    return __version__


def table_spec(table: Table, fraction_digits: Mapping[int, int] | None = None) -> TableSpec:
    """How ``table`` is declared, its timestamp columns (by position) with the fractional digits
    in ``fraction_digits`` (six where it says nothing)."""
    digits = fraction_digits or {}
    columns = tuple((c.name, clickhouse_type(c.type, nullable=c.nullable,
                                             fraction_digits=digits.get(i, MOST_FRACTION_DIGITS)))
                    for i, c in enumerate(table.columns))
    return TableSpec(name=table.name, uuid=str(uuid.uuid4()), columns=columns,
                     order_by=tuple(table.primary_key), primary_key=tuple(table.primary_key))


def scratch_spec(table: Table) -> tuple[TableSpec, FractionDigits]:
    """The table the rows are first inserted into, under a name of its own, its timestamps with
    six digits; and the measure of the digits they need, to update as the rows pass."""
    spec = table_spec(table)
    scratch = replace(spec, name=f"{SCRATCH_PREFIX}{spec.uuid.replace('-', '')}")
    stamps = [i for i, c in enumerate(table.columns) if c.type.kind == "timestamp"]
    return scratch, FractionDigits(stamps)


def create_table_sql(database: str, spec: TableSpec, *, disk: str | None) -> str:
    """CREATE TABLE for ``spec`` in ``database``; on a ``disk`` (embedded) with its UUID, so
    that it can be attached again from its directory."""
    uuid_clause = f" UUID '{spec.uuid}'" if disk else ""
    return (f"CREATE TABLE {quote_ident(database)}.{quote_ident(spec.name)}{uuid_clause} "
            f"({spec.columns_sql()}) {spec.engine_sql(disk=disk)}")


def settle(run: Callable[[str], object], database: str, scratch: TableSpec, table: Table,
           measured: FractionDigits, *, disk: str | None) -> TableSpec:
    """The filled ``scratch`` table as ``table``: renamed when six timestamp digits are what its
    values need, else copied into a table declaring only the digits they need (ClickHouse will
    not change the type of a sorting-key column in place) and dropped."""
    final = table_spec(table, measured.digits)
    here, there = (f"{quote_ident(database)}.{quote_ident(name)}"
                   for name in (scratch.name, final.name))
    if final.columns == scratch.columns:
        run(f"RENAME TABLE {here} TO {there}")
        return replace(scratch, name=final.name)
    run(create_table_sql(database, final, disk=disk))
    run(f"INSERT INTO {there} SELECT * FROM {here}")
    run(f"DROP TABLE {here} SYNC")
    return final


def index_notes(table: Table) -> list[Coercion]:
    """ClickHouse has no secondary row indexes and enforces no uniqueness: say so per index."""
    notes = []
    for index in table.indexes:
        what = "UNIQUE index" if index.unique else "index"
        notes.append(Coercion(table.name, ", ".join(index.columns),
                              f"{what} {index.name!r} not created: ClickHouse has no secondary "
                              f"row indexes" + (" and enforces no uniqueness" if index.unique
                                                 else "")))
    return notes


def _arrow_stream(batches: Iterable[pa.RecordBatch]) -> Iterable[tuple[bytes, int]]:
    """Arrow IPC stream bytes, piece by piece, with the rows each piece carries."""
    sink = io.BytesIO()
    writer: pa.ipc.RecordBatchStreamWriter | None = None
    for batch in batches:
        if writer is None:
            writer = pa.ipc.new_stream(sink, batch.schema)
        writer.write_batch(batch)
        yield sink.getvalue(), batch.num_rows
        sink.seek(0)
        sink.truncate()
    if writer is not None:
        writer.close()
        yield sink.getvalue(), 0


def _insert(conn: Any, target: str, batches: Iterable[pa.RecordBatch]) -> int:
    inserted = 0
    inserter = None
    try:
        for data, rows in _arrow_stream(batches):
            if inserter is None:
                inserter = conn.send_insert(f"INSERT INTO {target}", "ArrowStream")
            if data:
                inserter.append(data)
            inserted += rows
        if inserter is not None:
            inserter.finish()
            inserter = None
    finally:
        if inserter is not None:
            with contextlib.suppress(Exception):
                inserter.cancel()
    return inserted


def _rows(conn: Any, sql: str) -> list[dict[str, Any]]:
    result = conn.query(sql, "JSONEachRow")
    return [json.loads(line) for line in result.bytes().decode("utf-8").splitlines()
            if line.strip()]


def _compact(conn: Any, database: str, spec: TableSpec, table_dir: Path) -> None:
    """Merge the table to one part and remove the parts the merge replaced, so that attaching
    the directory later finds nothing to merge or clean up (it is never written again)."""
    where = (f"database = {quote_string(database)} AND table = {quote_string(spec.name)} "
             f"AND active")
    target = f"{quote_ident(database)}.{quote_ident(spec.name)}"
    if len(_rows(conn, f"SELECT name FROM system.parts WHERE {where}")) > 1:
        conn.query(f"OPTIMIZE TABLE {target} FINAL", "TabSeparated")
    active = {r["name"] for r in _rows(conn, f"SELECT name FROM system.parts WHERE {where}")}
    conn.query(f"DETACH TABLE {target} PERMANENTLY SYNC", "TabSeparated")
    if table_dir.is_dir():
        for entry in table_dir.iterdir():
            if entry.is_dir() and entry.name not in active and entry.name != "detached":
                shutil.rmtree(entry)


def _remove_empty_folders(store: Path) -> None:
    """Drop the folders dropped scratch tables leave behind (``store/<uuid[:3]>``)."""
    if store.is_dir():
        for folder in store.iterdir():
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()


def _view_select(sql: str, dialect: str) -> str:
    """The query of a ``CREATE VIEW name AS <query>`` statement, rendered for ClickHouse."""
    parsed = sqlglot.parse_one(sql, read=dialect)
    query = parsed.expression if isinstance(parsed, sqlglot.exp.Create) else parsed
    if query is None:
        raise ValueError("no query in the view definition")
    return query.sql(dialect="clickhouse")


def _copy_views(conn: Any, source: Backend, database: str) -> tuple[list[dict[str, str]],
                                                                     list[Coercion]]:
    """The source's views, translated by sqlglot and created once to check they work; a view
    that cannot be translated or created is reported, not fatal. Retried until no more
    succeed, so one defined on another is created after it."""
    views = getattr(source, "views", None)
    pending = list(views()) if callable(views) else []
    created: list[dict[str, str]] = []
    failures: dict[str, str] = {}
    conn.query(f"USE {quote_ident(database)}", "TabSeparated")
    while pending:
        remaining = []
        for name, sql in pending:
            try:
                select = _view_select(sql, source.dialect)
                conn.query(f"CREATE VIEW {quote_ident(name)} AS {select}", "TabSeparated")
                created.append({"name": name, "sql": select})
            except (sqlglot.errors.SqlglotError, RuntimeError, ValueError) as exc:
                failures[name] = str(exc).strip().splitlines()[0] if str(exc).strip() else "?"
                remaining.append((name, sql))
        if len(remaining) == len(pending):
            break
        pending = remaining
    notes = [Coercion(name, "", f"view not created in ClickHouse: {failures[name]}", 1)
             for name, _ in pending]
    return created, notes


def build_directory(engine: Engine, source: Backend, directory: Path, *, mode: NameMode,
                    report: LoadReport) -> dict[str, Any]:
    """Fill ``directory`` (new, empty) with every source table; the manifest to write."""
    source_tables = source.tables()
    tables = rename_tables(source_tables, mode)
    database = f"polysql_load_{uuid.uuid4().hex[:12]}"
    disk = disk_clause(f"{directory}/")
    conn = engine.connect(WRITER_SETTINGS)
    specs: list[TableSpec] = []
    notes: list[Coercion] = []
    try:
        conn.query(f"CREATE DATABASE {quote_ident(database)} ENGINE = Atomic", "TabSeparated")
        try:
            for origin, table in zip(source_tables, tables, strict=True):
                scratch, measured = scratch_spec(table)
                try:
                    conn.query(create_table_sql(database, scratch, disk=disk), "TabSeparated")
                    names = [name for name, _ in scratch.columns]
                    # rows are read by the source's names and inserted by position
                    batches = (measured.update(pa.RecordBatch.from_arrays(b.columns, names=names))
                               for b in source.read_table(origin))
                    count = _insert(conn, f"{quote_ident(database)}.{quote_ident(scratch.name)}",
                                    batches)
                    spec = settle(lambda sql: conn.query(sql, "TabSeparated"), database, scratch,
                                  table, measured, disk=disk)
                except RuntimeError as exc:
                    raise LoadError(f"cannot load table {table.name!r} into ClickHouse: "
                                    f"{exc}") from exc
                if table.row_count is not None and count != table.row_count:
                    raise LoadError(f"table {table.name!r}: the source reported "
                                    f"{table.row_count} rows but {count} arrived")
                report.tables[spec.name] = count
                specs.append(spec)
                notes.extend(index_notes(table))
            views, view_notes = _copy_views(conn, source, database)
            notes.extend(view_notes)
            for spec in specs:
                _compact(conn, database, spec,
                         directory / "store" / spec.uuid[:3] / spec.uuid)
            _remove_empty_folders(directory / "store")
        finally:
            # Tables still attached here are the failed load's: detach, never drop, then
            # remove the (then empty) staging database; the directory itself is discarded.
            with contextlib.suppress(RuntimeError):
                for row in _rows(conn, f"SELECT name FROM system.tables WHERE database = "
                                       f"{quote_string(database)} AND engine != 'View'"):
                    conn.query(f"DETACH TABLE {quote_ident(database)}."
                               f"{quote_ident(row['name'])} PERMANENTLY SYNC", "TabSeparated")
                conn.query(f"DROP DATABASE IF EXISTS {quote_ident(database)} SYNC",
                           "TabSeparated")
    finally:
        conn.close()
    report.coercions = source_coercions(source) + notes
    return {"tables": [s.to_json() for s in specs], "views": views}


def skipped_report(directory: Path, origin: str, fingerprint: str) -> LoadReport | None:
    manifest = read_manifest(directory)
    if manifest is None or manifest.get("fingerprint") != fingerprint \
            or manifest.get("layout") != LAYOUT:
        return None
    return LoadReport(source=origin, target=str(manifest.get("target", directory)),
                      fingerprint=fingerprint, skipped=True,
                      tables=dict(manifest.get("report_tables", {})),
                      coercions=[Coercion(**c) for c in manifest.get("coercions", [])])


def load_directory(engine: Engine, source: Backend, directory: Path, *, target_name: str,
                   fingerprint: str | None, replace: bool, names: str) -> LoadReport:
    """The embedded side of ``polysql.load`` into ``directory``."""
    mode = check_mode(names)
    fingerprint = fingerprint or source.fingerprint()
    if mode != "exact":  # a copy under other names is a different copy: never skip into it
        fingerprint = f"{fingerprint}+names={mode}"
    origin = source_name(source)
    directory = directory.resolve()
    if not replace:
        skipped = skipped_report(directory, origin, fingerprint)
        if skipped is not None:
            return skipped
    if directory.exists() and not directory.is_dir():
        raise LoadError(f"{str(directory)!r} is a file; a ClickHouse evaluation database is a "
                        f"directory")
    if directory.is_dir() and any(directory.iterdir()) and read_manifest(directory) is None \
            and not replace:
        raise LoadError(f"{str(directory)!r} is not empty and holds no polysql ClickHouse "
                        f"database; pass replace=True (polysql load --replace) to replace it, "
                        f"or choose another directory")
    directory.parent.mkdir(parents=True, exist_ok=True)
    built = new_directory_name(directory, "tmp")
    built.mkdir()
    report = LoadReport(origin, target_name, fingerprint)
    try:
        def build() -> LoadReport:
            started = time.perf_counter()
            layout = build_directory(engine, source, built, mode=mode, report=report)
            manifest = {
                "format": MANIFEST_FORMAT,
                "layout": LAYOUT,
                "load_id": uuid.uuid4().hex,
                "fingerprint": fingerprint,
                "source": origin,
                "target": target_name,
                "engine": "clickhouse",
                "engine_version": engine.version,
                "chdb_version": engine.chdb_version,
                "polysql_version": _polysql_version(),
                "loaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "elapsed": round(time.perf_counter() - started, 3),
                "report_tables": report.tables,
                "coercions": [asdict(c) for c in report.coercions],
                **layout,
            }
            (built / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False)
                                          + "\n", encoding="utf-8")
            # nothing in this process may keep reading the old copy once it is replaced
            engine.detach(directory)
            replace_directory(built, directory)
            return report

        return timed(build)
    except OSError as exc:
        raise LoadError(f"cannot write the ClickHouse load target {str(directory)!r}: "
                        f"{exc}") from exc
    finally:
        shutil.rmtree(built, ignore_errors=True)
