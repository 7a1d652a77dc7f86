"""Load a source (any backend with ``tables``/``read_table``) into a Spark database.

Tables keep their exact names (see ``types.py`` for names the catalog cannot hold) and
columns their exact names; logical types map to Spark types one to one (integers BIGINT, floats
DOUBLE, decimals DECIMAL(p,s), text STRING, blobs BINARY, dates DATE, date-times TIMESTAMP_NTZ,
booleans BOOLEAN). Spark has no primary keys or indexes on these tables; the primary key is kept
in the manifest and reported by ``tables()``. The source's views are translated by sqlglot and
become temporary views of every evaluation session; a view Spark rejects is reported.

A driver in this process writes Parquet with pyarrow straight into a staging folder of the
warehouse and swaps it in; Spark Connect sends the rows to the server as Arrow and writes managed
tables there (see ``load_store.py``). Either way a load whose source fingerprint matches the
manifest is skipped.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import sqlglot
import sqlglot.errors

from polysql.backends._common.arrow import arrow_type
from polysql.backends._common.load_files import source_coercions, source_name
from polysql.backends.spark import introspect as catalog
from polysql.backends.spark.load_store import (
    FileWarehouse,
    Manifest,
    TableEntry,
    read_marker,
    remove_marker,
    write_marker,
)
from polysql.backends.spark.types import column_list, physical_names, quote, spark_type
from polysql.core.errors import LoadError
from polysql.core.naming import check_mode, rename_tables
from polysql.core.schema import Coercion, LoadReport, Table
from polysql.core.version import __version__

if TYPE_CHECKING:
    from polysql.backends.base import Backend
    from polysql.backends.spark.backend import SparkBackend

# Rows sent to a Spark Connect server per request.
_CONNECT_CHUNK_ROWS = 200_000


def _polysql_version() -> str:
    return __version__


def plan_entries(tables: list[Table]) -> list[TableEntry]:
    """Manifest entries (exact name, physical name, Spark types) for tables under their final
    names."""
    physical = physical_names([t.name for t in tables])
    return [TableEntry(
        name=t.name, physical=physical[t.name],
        columns=[{"name": c.name, "spark": spark_type(c.type), "kind": c.type.kind,
                  "precision": c.type.precision, "scale": c.type.scale,
                  "declared": c.declared_type} for c in t.columns],
        primary_key=list(t.primary_key)) for t in tables]


def _target_schema(table: Table) -> pa.Schema:
    return pa.schema([pa.field(c.name, arrow_type(c.type), nullable=True)
                      for c in table.columns])


def _batches(source: Backend, origin: Table, schema: pa.Schema) -> Any:
    """The source's batches of ``origin`` under the target's column names and types."""
    for batch in source.read_table(origin):
        columns = [column if column.type == field.type else column.cast(field.type)
                   for column, field in zip(batch.columns, schema, strict=True)]
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


def _check_count(table: Table, loaded: int) -> None:
    if table.row_count is not None and loaded != table.row_count:
        raise LoadError(f"table {table.name!r}: the source reported {table.row_count} rows but "
                        f"{loaded} arrived")


def translate_views(source: Backend) -> tuple[list[dict[str, str]], list[Coercion]]:
    """The source's views as (name, SELECT in Spark SQL); those sqlglot cannot translate are
    reported."""
    views = getattr(source, "views", None)
    translated: list[dict[str, str]] = []
    notes: list[Coercion] = []
    for name, text in (views() if callable(views) else []):
        try:
            created = sqlglot.parse_one(text, read=source.dialect)
            query = created.expression if isinstance(created, sqlglot.exp.Create) else None
            if query is None:
                raise ValueError("not a CREATE VIEW statement")
            translated.append({"name": name, "sql": query.sql(dialect="spark")})
        except (sqlglot.errors.SqlglotError, ValueError) as exc:
            notes.append(Coercion(name, "", f"view not created in Spark: "
                                            f"{str(exc).splitlines()[0]}", 1))
    return translated, notes


def _check_views(session: Any, database: str, entries: list[TableEntry],
                 views: list[dict[str, str]]) -> tuple[list[dict[str, str]], list[Coercion]]:
    """Create the views once in ``session`` (current database ``database``); keep those Spark
    accepts, report the others."""
    failed = dict(catalog.expose(session, database, entries, views))
    kept = [v for v in views if v["name"] not in failed]
    notes = [Coercion(name, "", f"view not created in Spark: {why}", 1)
             for name, why in failed.items()]
    return kept, notes


def _fingerprint(source: Backend, fingerprint: str | None, mode: str) -> str:
    value = fingerprint or source.fingerprint()
    # a copy under other names is a different copy: never skip into it
    return value if mode == "exact" else f"{value}+names={mode}"


def _skipped(manifest: Manifest | None, fingerprint: str, origin: str,
             target: str) -> LoadReport | None:
    if manifest is None or manifest.fingerprint != fingerprint:
        return None
    saved = manifest.report
    return LoadReport(source=origin, target=target, fingerprint=fingerprint, skipped=True,
                      tables=dict(saved.get("tables", {})),
                      coercions=[Coercion(**c) for c in saved.get("coercions", [])])


def _manifest(database: str, fingerprint: str, entries: list[TableEntry],
              views: list[dict[str, str]], report: LoadReport, version: str) -> Manifest:
    return Manifest(database=database, fingerprint=fingerprint, generation=uuid.uuid4().hex,
                    tables=entries, views=views, report=asdict(report), engine_version=version,
                    polysql_version=_polysql_version())


def load_into_spark(target: SparkBackend, source: Backend, *, fingerprint: str | None,
                    replace: bool, names: str) -> LoadReport:
    """The Spark side of ``polysql.load``."""
    if target.read_only:
        raise LoadError(f"{target!r} was opened read-only; connect with read_only=False to load")
    database = target.target.database
    if database is None:
        raise LoadError(f"{target!r} names no database to load into: add one to the URL path, "
                        f"e.g. spark://local[2]/my_database")
    mode = check_mode(names)
    fingerprint = _fingerprint(source, fingerprint, mode)
    if target.target.connect:
        return _load_connect(target, source, database, fingerprint, replace, mode)
    return _load_files(target, source, database, fingerprint, replace, mode)


def _load_files(target: SparkBackend, source: Backend, database: str, fingerprint: str,
                replace: bool, mode: Any) -> LoadReport:
    warehouse = target.warehouse
    assert warehouse is not None
    origin, destination = source_name(source), source_name(target)
    with warehouse.locked(database):
        if not replace:
            manifest = warehouse.read_manifest(database)
            skipped = _skipped(manifest, fingerprint, origin, destination)
            if skipped is not None:
                assert manifest is not None
                catalog.register(target.session, warehouse, manifest)
                return skipped
        started = time.perf_counter()
        source_tables = source.tables()
        tables = rename_tables(source_tables, mode)
        entries = plan_entries(tables)
        report = LoadReport(origin, destination, fingerprint)
        with warehouse.staging(database) as folder:
            for origin_table, table, entry in zip(source_tables, tables, entries, strict=True):
                entry.rows = _write_parquet(source, origin_table, table,
                                            folder / entry.physical)
                _check_count(table, entry.rows)
                report.tables[table.name] = entry.rows
            views, view_notes = translate_views(source)
            views, checked_notes = _check_staged_views(target, folder, entries, views)
            # asked last: reading the rows may have found more (text that was not valid UTF-8)
            report.coercions = source_coercions(source) + view_notes + checked_notes
            report.elapsed = time.perf_counter() - started
            manifest = _manifest(database, fingerprint, entries, views, report,
                                 target.version())
            warehouse.write_manifest(folder, manifest)
            warehouse.swap_in(folder, database)
        catalog.register(target.session, warehouse, manifest, force=True)
        report.elapsed = time.perf_counter() - started
        return report


def _write_parquet(source: Backend, origin: Table, table: Table, folder: Path) -> int:
    folder.mkdir(parents=True)
    schema = _target_schema(table)
    loaded = 0
    with pq.ParquetWriter(folder / "part-00000.parquet", schema) as writer:
        for batch in _batches(source, origin, schema):
            writer.write_batch(batch)
            loaded += batch.num_rows
    return loaded


def _check_staged_views(target: SparkBackend, folder: Path, entries: list[TableEntry],
                        views: list[dict[str, str]]) -> tuple[list[dict[str, str]],
                                                              list[Coercion]]:
    """Views are checked against the staged tables, registered under a throwaway database in a
    session of their own, before the build is swapped in."""
    if not views:
        return views, []
    staging = f"polysql_staging_{uuid.uuid4().hex[:12]}"
    session = target.session.newSession()
    try:
        catalog.register_folder(session, staging, entries, folder)
        return _check_views(session, staging, entries, views)
    finally:
        catalog.forget(session, None, staging)


def _load_connect(target: SparkBackend, source: Backend, database: str, fingerprint: str,
                  replace: bool, mode: Any) -> LoadReport:
    session = target.session
    origin, destination = source_name(source), source_name(target)
    if not replace:
        skipped = _skipped(read_marker(session, database), fingerprint, origin, destination)
        if skipped is not None:
            return skipped
    started = time.perf_counter()
    source_tables = source.tables()
    tables = rename_tables(source_tables, mode)
    entries = plan_entries(tables)
    report = LoadReport(origin, destination, fingerprint)
    remove_marker(session, database)  # from here on the database counts as not loaded
    session.sql(f"DROP DATABASE IF EXISTS {quote(database)} CASCADE")
    session.sql(f"CREATE DATABASE {quote(database)}")
    for origin_table, table, entry in zip(source_tables, tables, entries, strict=True):
        entry.rows = _send_rows(session, source, origin_table, table, database, entry)
        _check_count(table, entry.rows)
        report.tables[table.name] = entry.rows
    views, view_notes = translate_views(source)
    check_session = session.newSession()
    try:
        views, checked_notes = _check_views(check_session, database, entries, views)
    finally:
        check_session.stop()
    report.coercions = source_coercions(source) + view_notes + checked_notes
    report.elapsed = time.perf_counter() - started
    write_marker(session, _manifest(database, fingerprint, entries, views, report,
                                    target.version()))
    report.elapsed = time.perf_counter() - started
    return report


def _send_rows(session: Any, source: Backend, origin: Table, table: Table, database: str,
               entry: TableEntry) -> int:
    name = f"{quote(database)}.{quote(entry.physical)}"
    columns = [(c["name"], c["spark"]) for c in entry.columns]
    session.sql(f"CREATE TABLE {name} {column_list(columns)} USING parquet")
    ddl = ", ".join(f"{quote(n)} {kind}" for n, kind in columns)
    schema = _target_schema(table)
    loaded, chunk, chunk_rows = 0, [], 0

    def flush() -> None:
        if chunk:
            frame = session.createDataFrame(pa.Table.from_batches(chunk, schema=schema),
                                            schema=ddl)
            frame.write.insertInto(f"{database}.{entry.physical}")

    for batch in _batches(source, origin, schema):
        chunk.append(batch)
        chunk_rows += batch.num_rows
        loaded += batch.num_rows
        if chunk_rows >= _CONNECT_CHUNK_ROWS:
            flush()
            chunk, chunk_rows = [], 0
    flush()
    return loaded


def drop_database(target: SparkBackend) -> None:
    """Remove a loaded database: its catalog entries and its data (folder or server tables)."""
    database = target.target.database
    if database is None:
        return
    session = target.session
    if target.target.connect:
        remove_marker(session, database)
        session.sql(f"DROP DATABASE IF EXISTS {quote(database)} CASCADE")
        return
    warehouse = target.warehouse
    assert warehouse is not None
    with warehouse.locked(database):
        catalog.forget(session, warehouse.root, database)
        warehouse.remove(database)


__all__ = ["FileWarehouse", "drop_database", "load_into_spark", "plan_entries"]
