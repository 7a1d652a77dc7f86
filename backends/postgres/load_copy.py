"""Create and fill tables in a PostgreSQL schema from a load source, then add its keys.

Rows travel as Arrow batches from the source and enter PostgreSQL through ``COPY ... FROM STDIN``
as CSV (binary for tables with bytes); nothing is inserted row by row. Keys are added after the
rows: a key the source data violates (SQLite allows NULL and duplicate primary keys and dangling
foreign keys) is left out and the reason recorded as a coercion, never by dropping rows.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
from psycopg import sql

from polysql.backends._common.prefetch import prefetched
from polysql.backends.postgres.errors import connection_lost
from polysql.backends.postgres.types import check_identifier, copy_type, physical_type
from polysql.core.errors import LoadError
from polysql.core.naming import NameMode, plan_names
from polysql.core.schema import Coercion, Column, ForeignKey, Index, Table, TablePlan

if TYPE_CHECKING:
    from polysql.backends.base import Backend

_NUL = "\x00"


@dataclass(slots=True)
class CopyResult:
    counts: dict[str, int] = field(default_factory=dict)  # target table -> rows loaded
    coercions: list[Coercion] = field(default_factory=list)


def plan_tables(tables: list[Table], mode: NameMode) -> list[TablePlan]:
    """Target names for every table and column; a LoadError for a name PostgreSQL cannot keep."""
    plans, found = plan_names(tables, mode, check_identifier)
    if found:
        raise LoadError("cannot load into PostgreSQL with exact names: " + "; ".join(found)
                        + ". Rename the source objects or load with names='snake'")
    if not all(plan.columns for plan in plans):
        empty = next(plan.name for plan in plans if not plan.columns)
        raise LoadError(f"table {empty!r} has no columns; PostgreSQL cannot hold it faithfully")
    return plans


def _qualified(schema: str, table: str) -> sql.Composed:
    return sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table))


def _column_list(names: list[str] | tuple[str, ...]) -> sql.Composed:
    return sql.SQL(", ").join(sql.Identifier(n) for n in names)


def create_table(conn: psycopg.Connection, schema: str, plan: TablePlan) -> None:
    columns = sql.SQL(", ").join(
        sql.SQL("{} {}{}").format(
            sql.Identifier(plan.columns[c.name]), sql.SQL(physical_type(c.type)),
            sql.SQL("" if c.nullable else " NOT NULL"))
        for c in plan.source.columns)
    conn.execute(sql.SQL("CREATE TABLE {} ({})").format(_qualified(schema, plan.name), columns))


class _NulCounter:
    """Counts text values that held NUL characters, which PostgreSQL text cannot store."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def clean(self, array: pa.Array, column: Column) -> pa.Array:
        if column.type.kind != "text" or array.null_count == len(array):
            return array
        has_nul = pc.match_substring(array, _NUL)
        found = pc.sum(has_nul).as_py() or 0
        if not found:
            return array
        self.counts[column.name] = self.counts.get(column.name, 0) + found
        return pc.replace_substring(array, _NUL, "")

    def clean_batch(self, batch: pa.RecordBatch, columns: list[Column]) -> pa.RecordBatch:
        arrays = [self.clean(batch.column(i), column) for i, column in enumerate(columns)]
        if all(a is batch.column(i) for i, a in enumerate(arrays)):
            return batch
        return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


# Arrow's CSV writer quotes every string and leaves NULL as an empty unquoted field: exactly
# PostgreSQL's CSV convention (unquoted empty = NULL, "" = empty string), and a quoted field is
# never read as the end-of-data marker. Floats are written in shortest round-trip form.
_CSV_OPTIONS = pa_csv.WriteOptions(include_header=False, quoting_style="needed")


def csv_carries(table: Table) -> bool:
    """Whether every column of ``table`` can travel as CSV text. Bytes cannot: Arrow would
    write them raw, while bytea input wants an escaped form, so such tables go binary."""
    return all(column.type.kind != "blob" for column in table.columns)


def csv_bytes(batch: pa.RecordBatch) -> pa.Buffer:
    """``batch`` as CSV in PostgreSQL's ``COPY ... (FORMAT csv)`` dialect."""
    sink = pa.BufferOutputStream()
    pa_csv.write_csv(batch, sink, _CSV_OPTIONS)
    return sink.getvalue()


def copy_rows(conn: psycopg.Connection, schema: str, plan: TablePlan,
              source: Backend) -> tuple[int, list[Coercion]]:
    """Stream every row of the source table into the created table; rows and coercions.

    Batches are read one ahead in a worker thread while the current one is encoded and sent.
    CSV is encoded by Arrow in C++ with no Python object per value; tables with bytes use
    psycopg's binary rows instead.
    """
    columns = plan.source.columns
    nuls = _NulCounter()
    as_csv = csv_carries(plan.source)
    # FREEZE: the table was created in this transaction, so its rows can be written already
    # frozen; the first evaluation queries then need not rewrite every page to set hint bits.
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT {}, FREEZE)").format(
        _qualified(schema, plan.name), _column_list(plan.target_columns()),
        sql.SQL("CSV" if as_csv else "BINARY"))
    loaded = 0
    with conn.cursor() as cursor, cursor.copy(statement) as copy:
        if not as_csv:
            copy.set_types([copy_type(c.type) for c in columns])
        for batch in prefetched(source.read_table(plan.source)):
            batch = nuls.clean_batch(batch, columns)
            if as_csv:
                copy.write(memoryview(csv_bytes(batch)))
            else:
                values: list[list[Any]] = [batch.column(i).to_pylist()
                                           for i in range(len(columns))]
                for row in zip(*values, strict=True):
                    copy.write_row(row)
            loaded += batch.num_rows
    coercions = [Coercion(plan.name, plan.columns[name],
                          "NUL characters removed: PostgreSQL text cannot hold them", count)
                 for name, count in nuls.counts.items()]
    return loaded, coercions


def _copy_one(conn: psycopg.Connection, schema: str, plan: TablePlan,
              source: Backend) -> tuple[int, list[Coercion]]:
    """Fill one created, empty table in a transaction of its own."""
    try:
        with conn.transaction():
            # Emptying the table in this transaction is what lets COPY write frozen rows.
            conn.execute(sql.SQL("TRUNCATE {}").format(_qualified(schema, plan.name)))
            loaded, coercions = copy_rows(conn, schema, plan, source)
            # statistics for the planner, gathered here so tables are analysed in parallel too
            conn.execute(sql.SQL("ANALYZE {}").format(_qualified(schema, plan.name)))
    except psycopg.Error as exc:
        if connection_lost(exc):
            raise  # the server is gone, not the table at fault: the load says so
        raise LoadError(f"cannot load table {plan.source.name!r} into PostgreSQL: "
                        f"{str(exc).strip()}") from exc
    expected = plan.source.row_count
    if expected is not None and loaded != expected:
        raise LoadError(f"table {plan.source.name!r}: the source reported {expected} rows "
                        f"but {loaded} arrived")
    return loaded, coercions


def _cancel(conn: psycopg.Connection) -> None:
    """Ask the server to stop ``conn``'s statement; from another thread, never raising."""
    try:
        conn.cancel_safe()
    except (psycopg.Error, AttributeError):  # AttributeError: psycopg before 3.2
        with contextlib.suppress(psycopg.Error):
            conn.cancel()


def create_tables(conn: psycopg.Connection, schema: str, plans: list[TablePlan]) -> None:
    """Create every table, empty, in one committed transaction: the copies that fill them run
    on other connections, which must see them."""
    with conn.transaction():
        for plan in plans:
            try:
                create_table(conn, schema, plan)
            except psycopg.Error as exc:
                if connection_lost(exc):
                    raise
                raise LoadError(f"cannot create table {plan.source.name!r} in PostgreSQL: "
                                f"{str(exc).strip()}") from exc


def copy_tables(connect: Callable[[], psycopg.Connection], schema: str, plans: list[TablePlan],
                source: Backend, *, workers: int) -> CopyResult:
    """Fill the created tables, largest first, over up to ``workers`` connections at once.

    The server parses and writes each COPY on one core; several tables in flight keep more than
    one busy. Should one fail (or the caller be interrupted), the other copies are cancelled on
    the server rather than left to finish.
    """
    order = sorted(plans, key=lambda p: -(p.source.row_count or 0))
    lanes = max(1, min(workers, len(order)))
    opened: list[psycopg.Connection] = []
    guard = threading.Lock()
    local = threading.local()

    def connection() -> psycopg.Connection:
        conn: psycopg.Connection | None = getattr(local, "conn", None)
        if conn is None:
            conn = connect()
            # CSV bytes from Arrow are UTF-8; the server must read them as such.
            conn.execute("SET client_encoding TO 'UTF8'")
            with guard:
                opened.append(conn)
            local.conn = conn
        return conn

    def fill(plan: TablePlan) -> tuple[int, list[Coercion]]:
        return _copy_one(connection(), schema, plan, source)

    result = CopyResult()
    pool = ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="polysql-pg-copy")
    try:
        futures = [pool.submit(fill, plan) for plan in order]
        done = {plan.name: future.result() for plan, future in zip(order, futures, strict=True)}
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        with guard:
            for conn in opened:
                _cancel(conn)
        raise
    finally:
        pool.shutdown(wait=True)
        for conn in opened:
            conn.close()
    for plan in plans:  # the report lists tables in the source's order
        loaded, coercions = done[plan.name]
        result.counts[plan.name] = loaded
        result.coercions.extend(coercions)
    return result


# -- keys --------------------------------------------------------------------------------------

def _try(conn: psycopg.Connection, statement: sql.Composable) -> psycopg.Error | None:
    """Run ``statement`` in a savepoint; the error that undid it, if any (a lost connection
    is raised: it says nothing about the statement)."""
    try:
        with conn.transaction():
            conn.execute(statement)
    except psycopg.Error as exc:
        if connection_lost(exc):
            raise
        return exc
    return None


def _count(conn: psycopg.Connection, statement: sql.Composable) -> int:
    row = conn.execute(statement).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def add_primary_key(conn: psycopg.Connection, schema: str, plan: TablePlan) -> Coercion | None:
    keys = [plan.columns[c] for c in plan.source.primary_key]
    if not keys:
        return None
    table = _qualified(schema, plan.name)
    error = _try(conn, sql.SQL("ALTER TABLE {} ADD PRIMARY KEY ({})").format(
        table, _column_list(keys)))
    if error is None:
        return None
    any_null = sql.SQL(" OR ").join(sql.SQL("{} IS NULL").format(sql.Identifier(k)) for k in keys)
    nulls = _count(conn, sql.SQL("SELECT count(*) FROM {} WHERE {}").format(table, any_null))
    duplicates = _count(conn, sql.SQL(
        "SELECT sum(n) FROM (SELECT count(*) AS n FROM {} WHERE NOT ({}) GROUP BY {} "
        "HAVING count(*) > 1) AS d").format(table, any_null, _column_list(keys)))
    if nulls or duplicates:
        why = (f"{nulls} rows have a NULL key and {duplicates} rows share a key with another row")
    else:
        why = str(error).strip()
    return Coercion(plan.name, ", ".join(keys), f"primary key not created: {why}",
                    nulls + duplicates or 1)


def _find(names: list[str], wanted: str) -> str | None:
    """``wanted`` among ``names``, exactly or else ignoring case (SQLite names are
    case-insensitive, so a foreign key may spell its target differently)."""
    if wanted in names:
        return wanted
    folded = [n for n in names if n.lower() == wanted.lower()]
    return folded[0] if len(folded) == 1 else None


def add_foreign_key(conn: psycopg.Connection, schema: str, plan: TablePlan, key: ForeignKey,
                    plans: list[TablePlan]) -> Coercion | None:
    where = ", ".join(key.columns)

    def skipped(why: str, count: int = 1) -> Coercion:
        return Coercion(plan.name, where, f"foreign key to {key.ref_table!r} not created: {why}",
                        count)

    parent_name = _find([p.source.name for p in plans], key.ref_table)
    if parent_name is None:
        return skipped("the referenced table does not exist")
    parent = next(p for p in plans if p.source.name == parent_name)
    refs = list(key.ref_columns)
    if not any(refs):
        refs = list(parent.source.primary_key)  # FOREIGN KEY ... REFERENCES t: its primary key
    child_cols = [_find(list(plan.columns), c) for c in key.columns]
    parent_cols = [_find(list(parent.columns), c) for c in refs]
    if len(child_cols) != len(parent_cols) or None in child_cols or None in parent_cols:
        return skipped("its columns do not match the referenced table's columns")
    child = [plan.columns[c] for c in child_cols if c is not None]
    referenced = [parent.columns[c] for c in parent_cols if c is not None]
    table, parent_table = _qualified(schema, plan.name), _qualified(schema, parent.name)
    error = _try(conn, sql.SQL("ALTER TABLE {} ADD FOREIGN KEY ({}) REFERENCES {} ({})").format(
        table, _column_list(child), parent_table, _column_list(referenced)))
    if error is None:
        return None
    if isinstance(error, psycopg.errors.ForeignKeyViolation):
        matches = sql.SQL(" AND ").join(
            sql.SQL("p.{} = c.{}").format(sql.Identifier(r), sql.Identifier(c))
            for c, r in zip(child, referenced, strict=True))
        present = sql.SQL(" AND ").join(
            sql.SQL("c.{} IS NOT NULL").format(sql.Identifier(c)) for c in child)
        orphans = _count(conn, sql.SQL(
            "SELECT count(*) FROM {} AS c WHERE {} AND NOT EXISTS "
            "(SELECT 1 FROM {} AS p WHERE {})").format(table, present, parent_table, matches))
        return skipped(f"{orphans} rows reference a missing row", orphans)
    return skipped(str(error).strip().splitlines()[0])


def add_keys(conn: psycopg.Connection, schema: str, plans: list[TablePlan]) -> list[Coercion]:
    """Primary keys first (foreign keys need them), then foreign keys; what could not be added."""
    coercions = [c for plan in plans if (c := add_primary_key(conn, schema, plan)) is not None]
    for plan in plans:
        for key in plan.source.foreign_keys:
            dropped = add_foreign_key(conn, schema, plan, key, plans)
            if dropped is not None:
                coercions.append(dropped)
    return coercions


# -- secondary indexes -------------------------------------------------------------------------

def _duplicates(conn: psycopg.Connection, table: sql.Composable, columns: tuple[str, ...]) -> int:
    """Rows sharing all of ``columns`` (none NULL) with another row."""
    present = sql.SQL(" AND ").join(sql.SQL("{} IS NOT NULL").format(sql.Identifier(c))
                                    for c in columns)
    return _count(conn, sql.SQL(
        "SELECT sum(n) FROM (SELECT count(*) AS n FROM {} WHERE {} GROUP BY {} "
        "HAVING count(*) > 1) AS d").format(table, present, _column_list(columns)))


def _index_statement(schema: str, plan: TablePlan, index: Index, name: str | None, *,
                     unique: bool) -> sql.Composed:
    return sql.SQL("CREATE {}INDEX {}ON {} ({})").format(
        sql.SQL("UNIQUE " if unique else ""),
        sql.SQL("{} ").format(sql.Identifier(name)) if name else sql.SQL(""),
        _qualified(schema, plan.name), _column_list(index.columns))


def _create_index(conn: psycopg.Connection, schema: str, plan: TablePlan, index: Index,
                  taken: set[str], *, unique: bool) -> psycopg.Error | None:
    """Create ``index`` under its own name when PostgreSQL can keep it (index names share the
    schema with tables and key constraints), else under a name PostgreSQL chooses."""
    name: str | None = index.name
    if check_identifier(index.name, "index") is not None or index.name in taken:
        name = None
    error = _try(conn, _index_statement(schema, plan, index, name, unique=unique))
    if isinstance(error, psycopg.errors.DuplicateTable) and name is not None:
        error = _try(conn, _index_statement(schema, plan, index, None, unique=unique))
    elif error is None and name is not None:
        taken.add(name)
    return error


def add_index(conn: psycopg.Connection, schema: str, plan: TablePlan, index: Index,
              taken: set[str]) -> Coercion | None:
    """Create one index after the rows are in; what was changed or skipped, if anything.

    A UNIQUE index the rows violate is created as a plain index; one PostgreSQL refuses
    outright is skipped. No row is ever dropped."""
    where = ", ".join(index.columns)
    note: Coercion | None = None
    if index.unique:
        error = _create_index(conn, schema, plan, index, taken, unique=True)
        if error is None:
            return None
        if not isinstance(error, psycopg.errors.UniqueViolation):
            return Coercion(plan.name, where, f"index {index.name!r} not created: "
                                              f"{str(error).strip().splitlines()[0]}")
        shared = _duplicates(conn, _qualified(schema, plan.name), index.columns)
        note = Coercion(plan.name, where, f"UNIQUE index {index.name!r} created as a plain "
                                          f"index: {shared} rows share a key with another row",
                        shared or 1)
    error = _create_index(conn, schema, plan, index, taken, unique=False)
    if error is not None:
        return Coercion(plan.name, where, f"index {index.name!r} not created: "
                                          f"{str(error).strip().splitlines()[0]}")
    return note


def add_indexes(conn: psycopg.Connection, schema: str, plans: list[TablePlan]) -> list[Coercion]:
    taken = {plan.name for plan in plans}
    notes = []
    for plan in plans:
        for index in plan.indexes:
            note = add_index(conn, schema, plan, index, taken)
            if note is not None:
                notes.append(note)
    return notes
