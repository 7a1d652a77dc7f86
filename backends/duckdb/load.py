"""Copy a load source (any backend with ``tables``/``read_table``) into DuckDB.

Tables and columns keep their exact source names (quoted, case preserved); logical types map to
DuckDB types one to one; rows arrive as Arrow batches. A primary key is added after the rows are
in, and dropped (and reported) when the source data violates it -- SQLite, for one, allows NULL
keys. Secondary indexes follow; a UNIQUE one the rows violate becomes a plain index, reported.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from polysql.backends._common.lanes import load_lanes
from polysql.backends._common.load_files import (
    atomic_build,
    copy_not_written,
    load_file_once,
    source_coercions,
    source_name,
)
from polysql.backends.duckdb.errors import interrupted_by_user
from polysql.backends.duckdb.load_lanes import fill_in_lanes
from polysql.backends.duckdb.types import duckdb_type, quote_ident
from polysql.core.errors import LoadError
from polysql.core.naming import NameMode, check_mode, rename_tables
from polysql.core.schema import Coercion, LoadReport, Table

if TYPE_CHECKING:
    from polysql.backends.base import Backend
    from polysql.backends.duckdb.backend import DuckDBBackend

# DuckDB keeps its write-ahead log beside the database file.
_COMPANIONS = (".wal",)


def create_table_sql(table: Table) -> str:
    columns = ", ".join(
        f"{quote_ident(c.name)} {duckdb_type(c.type)}{'' if c.nullable else ' NOT NULL'}"
        for c in table.columns)
    return f"CREATE TABLE {quote_ident(table.name)} ({columns})"


def _insert_rows(conn: duckdb.DuckDBPyConnection, source: Backend, table: Table, *, into: str) -> int:
    """Every row of ``table`` in one INSERT that scans the source's batches as an Arrow stream:
    DuckDB pulls them on its own threads, with no statement per batch."""
    view = f"polysql_batch_{uuid.uuid4().hex}"
    loaded = 0

    batches = iter(source.read_table(table))
    first = next(batches, None)
    if first is None:
        return 0

    failed: list[BaseException] = []

    def counted() -> Iterator[pa.RecordBatch]:
        nonlocal loaded
        try:
            for batch in itertools.chain([first], batches):
                loaded += batch.num_rows
                yield batch
        except BaseException as exc:
            failed.append(exc)  # DuckDB would report it only as text inside its own error
            raise

    stream = pa.RecordBatchReader.from_batches(first.schema, counted())
    conn.register(view, stream)
    try:
        conn.execute(f"INSERT INTO {quote_ident(into)} SELECT * FROM {quote_ident(view)}")
    except duckdb.Error:
        if failed:  # the source failed (a LoadError naming its table): that is the error
            raise failed[0] from None
        raise
    finally:
        conn.unregister(view)
    return loaded


def _add_primary_key(conn: duckdb.DuckDBPyConnection, table: Table) -> Coercion | None:
    if not table.primary_key:
        return None
    name = quote_ident(table.name)
    keys = ", ".join(quote_ident(c) for c in table.primary_key)
    try:
        conn.execute(f"ALTER TABLE {name} ADD PRIMARY KEY ({keys})")
    except duckdb.ConstraintException:
        any_null = " OR ".join(f"{quote_ident(c)} IS NULL" for c in table.primary_key)
        null_rows = _count(conn, f"SELECT count(*) FROM {name} WHERE {any_null}")
        duplicate_rows = _count(
            conn, f"SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM {name} "
                  f"WHERE NOT ({any_null}) GROUP BY {keys} HAVING count(*) > 1)")
        return Coercion(
            table.name, ", ".join(table.primary_key),
            f"primary key not created: {null_rows} rows have a NULL key and {duplicate_rows} "
            f"rows share a key with another row", null_rows + duplicate_rows)
    return None


def _duplicates(conn: duckdb.DuckDBPyConnection, table: Table, columns: tuple[str, ...]) -> int:
    """Rows sharing all of ``columns`` (none NULL) with another row."""
    keys = ", ".join(quote_ident(c) for c in columns)
    present = " AND ".join(f"{quote_ident(c)} IS NOT NULL" for c in columns)
    return _count(
        conn, f"SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM "
              f"{quote_ident(table.name)} WHERE {present} GROUP BY {keys} HAVING count(*) > 1)")


def _count(conn: duckdb.DuckDBPyConnection, sql: str) -> int:
    """A one-number answer, read to its end: a result left open makes the connection refuse
    the next register() (DuckDB 2)."""
    rows = conn.execute(sql).fetchall()
    return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def _add_indexes(conn: duckdb.DuckDBPyConnection, table: Table) -> list[Coercion]:
    """Create the table's secondary indexes once its rows are in. A UNIQUE index the rows
    violate is created as a plain index; one DuckDB refuses outright is skipped. Either way the
    report says so and every row stays."""
    notes: list[Coercion] = []
    for index in table.indexes:
        columns = ", ".join(quote_ident(c) for c in index.columns)
        target = f"{quote_ident(index.name)} ON {quote_ident(table.name)} ({columns})"
        where = ", ".join(index.columns)
        if index.unique:
            try:
                conn.execute(f"CREATE UNIQUE INDEX {target}")
                continue
            except duckdb.ConstraintException:
                shared = _duplicates(conn, table, index.columns)
                notes.append(Coercion(
                    table.name, where, f"UNIQUE index {index.name!r} created as a plain index: "
                    f"{shared} rows share a key with another row", shared or 1))
            except duckdb.Error as exc:
                notes.append(Coercion(table.name, where, f"index {index.name!r} not created: "
                                      f"{str(exc).splitlines()[0]}"))
                continue
        try:
            conn.execute(f"CREATE INDEX {target}")
        except duckdb.Error as exc:
            notes.append(Coercion(table.name, where, f"index {index.name!r} not created: "
                                  f"{str(exc).splitlines()[0]}"))
    return notes


def copy_views(conn: duckdb.DuckDBPyConnection, source: Backend, *,
               replace: bool) -> list[Coercion]:
    """Recreate the source's views, their SQL translated by sqlglot; a view that cannot be
    translated or created is reported, not fatal. Views are retried until no more succeed, so
    one defined on another is created after it."""
    views = getattr(source, "views", None)
    pending = list(views()) if callable(views) else []
    if not pending:
        return []
    # imported only for sources that have views: sqlglot costs every other load 40 ms
    import sqlglot
    import sqlglot.errors

    failures: dict[str, str] = {}
    while pending:
        remaining = []
        for name, sql in pending:
            try:
                (translated,) = sqlglot.transpile(sql, read=source.dialect, write="duckdb")
                if replace:
                    conn.execute(f"DROP VIEW IF EXISTS {quote_ident(name)}")
                conn.execute(translated)
            except (sqlglot.errors.SqlglotError, duckdb.Error, ValueError) as exc:
                failures[name] = str(exc).splitlines()[0]
                remaining.append((name, sql))
        if len(remaining) == len(pending):
            break
        pending = remaining
    return [Coercion(name, "", f"view not created in DuckDB: {failures[name]}", 1)
            for name, _ in pending]


def _fill_table(conn: duckdb.DuckDBPyConnection, source: Backend, origin: Table,
                table: Table) -> tuple[int, list[Coercion]]:
    """Rows, primary key and indexes of one created table; its row count and coercions."""
    try:
        # rows are read by the source's names and inserted by position
        loaded = _insert_rows(conn, source, origin, into=table.name)
    except duckdb.Error as exc:
        raise LoadError(f"cannot load table {table.name!r} into DuckDB: {exc}") from exc
    if table.row_count is not None and loaded != table.row_count:
        raise LoadError(f"table {table.name!r}: the source reported {table.row_count} rows "
                        f"but {loaded} arrived")
    notes: list[Coercion] = []
    dropped = _add_primary_key(conn, table)
    if dropped is not None:
        notes.append(dropped)
    notes.extend(_add_indexes(conn, table))
    return loaded, notes


def copy_tables(conn: duckdb.DuckDBPyConnection, source: Backend, *, replace: bool,
                names: NameMode = "exact", lanes: int = 1) -> tuple[dict[str, int], list[Coercion]]:
    """Create and fill every source table in ``conn``, up to ``lanes`` tables at once; row
    counts and coercions."""
    source_tables = source.tables()
    pairs = list(zip(source_tables, rename_tables(source_tables, names), strict=True))
    # Created one after another in the source's order, so the catalog lists them in that order
    # whichever lane fills which table.
    for _, table in pairs:
        try:
            if replace:
                conn.execute(f"DROP TABLE IF EXISTS {quote_ident(table.name)}")
            conn.execute(create_table_sql(table))
        except duckdb.Error as exc:
            raise LoadError(f"cannot load table {table.name!r} into DuckDB: {exc}") from exc
    filled = fill_in_lanes(conn, pairs, lambda lane, pair: _fill_table(lane, source, *pair),
                           lanes=lanes, size=lambda pair: pair[1].row_count or 0)
    counts = {table.name: loaded for (_, table), (loaded, _) in zip(pairs, filled, strict=True)}
    notes = [note for _, table_notes in filled for note in table_notes]
    notes.extend(copy_views(conn, source, replace=replace))
    # Asked last: reading the rows may have found more (text that was not valid UTF-8).
    return counts, source_coercions(source) + notes


def _lanes(target: DuckDBBackend, source: Backend) -> int:
    """Tables filled at once: one per core the source can be read on, within the target's own
    ``threads`` setting (a user who limits DuckDB to one thread means one core)."""
    threads = target._config.get("threads")
    lanes = load_lanes(source)
    return min(lanes, int(threads)) if threads else lanes


def _refuse_if_open_here(path: Path, config: dict[str, Any]) -> None:
    """DuckDB shares one database instance per file within a process: a connection opened after
    the file is replaced would still see the old data while an older connection lives. Opening
    the file for writing fails exactly when such a connection exists, so try it first."""
    if not path.exists():
        return
    try:
        duckdb.connect(str(path), config=dict(config)).close()
    except duckdb.ConnectionException as exc:
        if "different configuration" in str(exc):
            raise LoadError(
                f"{str(path)!r} is open in this process; close its connections before reloading "
                f"it (DuckDB would keep serving the old data to new connections)") from exc
    except duckdb.Error:
        pass  # another process's lock or an unreadable old file: replacing it is still safe


def load_into_duckdb(target: DuckDBBackend, source: Backend, *, fingerprint: str | None,
                     replace: bool, names: str = "exact") -> LoadReport:
    """The DuckDB side of ``polysql.load``; the caller holds ``target``'s lock."""
    if target.read_only:
        raise LoadError(f"{target!r} was opened read-only; connect with read_only=False to load")
    mode = check_mode(names)
    fingerprint = fingerprint or source.fingerprint()
    if mode != "exact":  # a copy under other names is a different copy: never skip into it
        fingerprint = f"{fingerprint}+names={mode}"
    origin = source_name(source)
    path = target.path

    def build() -> LoadReport:
        if path is None:
            counts, coercions = copy_tables(target._connection(), source, replace=replace,
                                            names=mode, lanes=_lanes(target, source))
            return LoadReport(origin, source_name(target), fingerprint, tables=counts,
                              coercions=coercions)
        target._release()  # nothing may hold the old file while it is replaced
        _refuse_if_open_here(path, target._config)
        with atomic_build(path, _COMPANIONS) as temporary:
            try:
                conn = duckdb.connect(str(temporary), config=dict(target._config))
            except duckdb.Error as exc:
                raise copy_not_written("DuckDB", path, exc) from exc
            try:
                counts, coercions = copy_tables(conn, source, replace=False, names=mode,
                                                lanes=_lanes(target, source))
                conn.execute("CHECKPOINT")
            except RuntimeError as exc:
                if interrupted_by_user(exc):  # Ctrl-C during a statement: stop, as anywhere
                    raise KeyboardInterrupt from exc
                raise
            except duckdb.Error as exc:  # the file itself failed (a full disk at the checkpoint)
                raise copy_not_written("DuckDB", path, exc) from exc
            finally:
                # after a failed write DuckDB fails its close too: the first error is the one
                with contextlib.suppress(duckdb.Error):
                    conn.close()
        return LoadReport(origin, source_name(target), fingerprint, tables=counts,
                          coercions=coercions)

    return load_file_once(path, origin=origin, fingerprint=fingerprint, replace=replace,
                          build=build, engine="duckdb", engine_version=duckdb.__version__)
