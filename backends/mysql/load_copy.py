"""Create and fill the tables of a load source in one (staging) MySQL/MariaDB database.

Per table: one pass over the source gathers what sizes the columns (longest text, non-finite
floats) and holds the rows in memory, or spools them to a file when they are too many
(:mod:`.load_rows`); then the table is created with its primary key and filled with one LOAD
DATA LOCAL INFILE -- from a pipe the held rows are rendered into as the server reads it
(:mod:`.load_pipe`), or from the spool -- or, where the server refuses LOCAL INFILE, with
multi-row INSERTs of a few megabytes each (:mod:`.load_infile`). SQLite does not enforce keys the
way MySQL does (NULL keys; and under a case- or accent-insensitive collation 'a' and 'A' are one
key), so when the rows violate the key the table is rebuilt without it and the report says why --
rows are never dropped. Foreign keys are added last (:mod:`.load_keys`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pymysql

from polysql.backends.mysql.connect import quietly_close
from polysql.backends.mysql.errors import connection_lost
from polysql.backends.mysql.load_infile import Loading, load_file
from polysql.backends.mysql.load_pipe import PipedRows, pipes_work
from polysql.backends.mysql.load_rows import ReadCancelled, TableRows
from polysql.backends.mysql.load_spool import InsertSpool, Spool, spool_table
from polysql.backends.mysql.setup import quote_ident
from polysql.backends.mysql.types import (
    MAX_KEY_BYTES,
    ColumnStats,
    Physical,
    physical_type,
    short_text_columns,
)
from polysql.core.errors import LoadError
from polysql.core.naming import NameMode, convert_all
from polysql.core.schema import Coercion, ForeignKey, Table

if TYPE_CHECKING:
    from polysql.backends.base import Backend

MAX_IDENTIFIER = 64


def check_identifier(name: str, what: str) -> str:
    if not name or len(name) > MAX_IDENTIFIER or name != name.rstrip(" ") or "\0" in name:
        raise LoadError(
            f"{what} {name!r} cannot be a MySQL identifier (1 to 64 characters, no trailing "
            f"space, no NUL); rename it in the source or load with names='snake'")
    return name


@dataclass(slots=True)
class TablePlan:
    """One source table as it will exist in the target."""

    source: Table
    name: str  # target table name
    columns: dict[str, str]  # source column name -> target column name
    keyed: set[str] = field(default_factory=set)  # source columns that take part in a key
    physical: list[Physical] = field(default_factory=list)
    primary_key: bool = False  # created with its primary key
    rows: int = 0
    # Integer columns on either side of a single-column foreign key: their values are kept as
    # the table is read, so the load checks for orphans without asking the server.
    kept: set[str] = field(default_factory=set)
    key_values: dict[str, pa.ChunkedArray] = field(default_factory=dict)
    # Foreign key number -> the index built for its child columns after the fill
    # (load_keys.prepare_child_indexes); dropped again if the key is not created.
    child_indexes: dict[int, str] = field(default_factory=dict)

    def target(self, column: str) -> str:
        return self.columns[column]


# A table's rows on their way to the server: rendered into a pipe while the server reads it,
# or spooled to a file first.
TableData = PipedRows | Spool
# What a lane runs on its connection once a table is filled: the coercions it implies.
AfterFill = Callable[[pymysql.connections.Connection, TablePlan], list[Coercion]]


def plan_tables(tables: list[Table], mode: NameMode) -> list[TablePlan]:
    table_names = convert_all([t.name for t in tables], mode, where="the table names")
    plans = []
    for table in tables:
        name = check_identifier(table_names[table.name], "table name")
        columns = convert_all([c.name for c in table.columns], mode,
                              where=f"the columns of table {table.name!r}")
        for column in columns.values():
            check_identifier(column, f"column name (table {table.name!r})")
        plans.append(TablePlan(table, name, columns))
    by_source = {p.source.name: p for p in plans}
    for plan in plans:
        plan.keyed.update(plan.source.primary_key)
        for index in plan.source.indexes:  # sized as VARCHAR where the data allows
            plan.keyed.update(index.columns)
        for fk in plan.source.foreign_keys:
            plan.keyed.update(fk.columns)
            parent = by_source.get(fk.ref_table)
            if parent is not None:
                parent.keyed.update(referenced_columns(fk, parent.source))
                _keep_integer_keys(plan, fk, parent)
    return plans


def _kind(table: Table, column: str) -> str | None:
    return next((c.type.kind for c in table.columns if c.name == column), None)


def _keep_integer_keys(child: TablePlan, fk: ForeignKey, parent: TablePlan) -> None:
    """Mark a single-column integer foreign key's columns to keep while reading: integers
    compare the same in the server and in Arrow, whatever the collation."""
    ref_columns = referenced_columns(fk, parent.source)
    if len(fk.columns) != 1 or len(ref_columns) != 1:
        return
    if _kind(child.source, fk.columns[0]) == "integer" == _kind(parent.source, ref_columns[0]):
        child.kept.add(fk.columns[0])
        parent.kept.add(ref_columns[0])


def referenced_columns(fk: ForeignKey, parent: Table) -> tuple[str, ...]:
    """The parent columns ``fk`` points at (SQLite leaves them empty to mean the primary key)."""
    if all(c == "" for c in fk.ref_columns):
        return parent.primary_key
    return fk.ref_columns


def table_ref(database: str, name: str) -> str:
    return f"{quote_ident(database)}.{quote_ident(name)}"


def key_list(plan: TablePlan, columns: tuple[str, ...]) -> str:
    return ", ".join(quote_ident(plan.target(c)) for c in columns)


def create_table_sql(database: str, plan: TablePlan, collation: str, *,
                     nullable: list[bool], with_primary_key: bool) -> str:
    parts = [f"{quote_ident(plan.target(c.name))} {p.sql}{'' if null else ' NOT NULL'}"
             for c, p, null in zip(plan.source.columns, plan.physical, nullable, strict=True)]
    if with_primary_key:
        parts.append(f"PRIMARY KEY ({key_list(plan, plan.source.primary_key)})")
    return (f"CREATE TABLE {table_ref(database, plan.name)} ({', '.join(parts)}) "
            f"ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}")


def key_problem(plan: TablePlan, columns: tuple[str, ...], what: str) -> str | None:
    """Why MySQL cannot index ``columns`` of ``plan`` (None when it can)."""
    index = {c.name: i for i, c in enumerate(plan.source.columns)}
    missing = [c for c in columns if c not in index]
    if missing:
        return f"{what} names column(s) {', '.join(missing)} that the table does not have"
    physical = [plan.physical[index[c]] for c in columns]
    unindexable = [c for c, p in zip(columns, physical, strict=True) if not p.indexable]
    if unindexable:
        return (f"{what} not created: column(s) {', '.join(unindexable)} hold values longer "
                f"than a MySQL index key allows ({MAX_KEY_BYTES} bytes)")
    total = sum(p.key_bytes for p in physical)
    if total > MAX_KEY_BYTES:
        return (f"{what} not created: its columns need {total} bytes per index entry, more "
                f"than MySQL's {MAX_KEY_BYTES}")
    return None


def insert_rows(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
                spool: InsertSpool) -> int:
    prefix = f"INSERT INTO {table_ref(database, plan.name)} VALUES ".encode()
    with conn.cursor() as cur:
        for body in spool.bodies():
            cur.execute(prefix + body)
    return spool.rows


def fill_rows(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
              rows: TableData) -> int:
    """Fill the (empty) table from ``rows``; IntegrityError when the rows break its key."""
    if isinstance(rows, InsertSpool):
        return insert_rows(conn, database, plan, rows)
    columns = [plan.target(c.name) for c in plan.source.columns]
    kinds = [c.type.kind for c in plan.source.columns]
    ref = table_ref(database, plan.name)
    if isinstance(rows, PipedRows):
        with rows.feeding() as path:
            return load_file(conn, ref, columns, kinds, path, rows.rows)
    return load_file(conn, ref, columns, kinds, rows.path, rows.rows)


def key_list_plain(plan: TablePlan, columns: tuple[str, ...]) -> str:
    return ", ".join(plan.columns.get(c, c) for c in columns)


def scalar(conn: pymysql.connections.Connection, sql: str) -> int:
    with conn.cursor() as cur:
        cur.execute(sql)
        row = cur.fetchone()
    return int(row[0] or 0) if row else 0


def _key_violations(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
                    collation: str) -> Coercion:
    table = table_ref(database, plan.name)
    keys = key_list(plan, plan.source.primary_key)
    any_null = " OR ".join(f"{quote_ident(plan.target(c))} IS NULL"
                           for c in plan.source.primary_key)
    nulls = scalar(conn, f"SELECT count(*) FROM {table} WHERE {any_null}")
    shared = scalar(conn, f"SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM {table} "
                           f"WHERE NOT ({any_null}) GROUP BY {keys} HAVING count(*) > 1) AS d")
    return Coercion(plan.name, ", ".join(plan.target(c) for c in plan.source.primary_key), (
        f"primary key not created: {nulls} rows have a NULL key and {shared} rows share a key "
        f"with another row as MySQL compares keys (collation {collation}; *_ci/*_ai "
        f"collations ignore case/accents, PAD SPACE ones trailing spaces); every row loaded"),
        nulls + shared)


def copy_tables(loading: Loading, database: str, plans: list[TablePlan], source: Backend,
                collation: str, *, lanes: int = 1,
                after_fill: AfterFill | None = None) -> tuple[list[Coercion], list[Coercion]]:
    """Create and fill every table; the coercions their load implies, and those ``after_fill``
    reported, each in the plans' order.

    Tables go largest first to up to ``lanes`` loader connections at once; each lane reads its
    next table, then has the server load it, so one lane's reading overlaps another's loading
    and the server fills several tables on several cores. ``after_fill`` runs on the
    lane's connection once its table is filled (indexes: built there, they overlap the other
    lanes' loads). Should one table fail (or the caller be interrupted), no lane starts another,
    the statements still running are killed on the server, and the first failure is raised.
    """
    order = sorted(range(len(plans)), key=lambda i: -(plans[i].source.row_count or 0))
    lanes = max(1, min(lanes, len(plans)))
    cancelled = threading.Event()
    pending = list(reversed(order))  # popped from the end: largest first
    guard = threading.Lock()
    connections = [loading.conn]
    results: dict[int, list[Coercion]] = {}
    afterwards: dict[int, list[Coercion]] = {}

    def fill(conn: pymysql.connections.Connection, index: int) -> None:
        plan = plans[index]
        try:
            stats, data = read_rows(source, plan, infile=loading.infile, cancelled=cancelled)
        except ReadCancelled:
            return  # another lane failed; its error is the one raised
        try:
            results[index] = copy_table(loading, conn, database, plan, (stats, data), collation)
            afterwards[index] = after_fill(conn, plan) if after_fill is not None else []
        except pymysql.err.MySQLError as exc:
            if cancelled.is_set():
                return  # killed because another lane failed
            if connection_lost(exc):
                raise  # the server is gone, not the table at fault: the load says so
            raise LoadError(f"cannot load table {plan.source.name!r} into MySQL: "
                            f"{exc}") from exc

    def lane(conn: pymysql.connections.Connection) -> None:
        try:
            while not cancelled.is_set():
                with guard:
                    if not pending:
                        return
                    index = pending.pop()
                fill(conn, index)
        except BaseException:
            cancelled.set()  # the other lanes start no further table
            raise

    if lanes > 1 and loading.open_more is not None:
        connections += [loading.open_more() for _ in range(lanes - 1)]
    pool = ThreadPoolExecutor(max_workers=len(connections), thread_name_prefix="polysql-fill")
    try:
        futures = [pool.submit(lane, conn) for conn in connections]
        wait(futures, return_when=FIRST_EXCEPTION)
        for future in futures:
            if future.done() and future.exception() is not None:
                raise future.exception()  # type: ignore[misc]
        for future in futures:
            future.result()
        if cancelled.is_set() or len(afterwards) != len(plans):
            raise LoadError("the load stopped before every table was filled")
    except BaseException:
        cancelled.set()
        _kill_running(loading, connections)
        raise
    finally:
        pool.shutdown(wait=True)
        for conn in connections[1:]:
            quietly_close(conn)
    if not loading.infile:
        loading.inserted_rows += sum(plan.rows for plan in plans)
    return ([coercion for index in range(len(plans)) for coercion in results[index]],
            [coercion for index in range(len(plans)) for coercion in afterwards[index]])


def _kill_running(loading: Loading, connections: list[pymysql.connections.Connection]) -> None:
    """Stop on the server whatever the loader connections are running; never raising."""
    if loading.open_more is None:
        return
    with contextlib.suppress(Exception):
        killer = loading.open_more()
        try:
            with killer.cursor() as cur:
                for conn in connections:
                    with contextlib.suppress(pymysql.err.MySQLError):
                        cur.execute(f"KILL QUERY {int(conn.thread_id())}")
        finally:
            killer.close()


def read_rows(source: Backend, plan: TablePlan, *, infile: bool,
              cancelled: threading.Event | None = None) -> tuple[list[ColumnStats], TableData]:
    """One pass over ``plan``'s source table: its column statistics, and its rows held for a
    pipe when it fits in memory and LOAD DATA is used, else spooled. Its kept key values go
    into the plan."""
    rows = TableRows(source, plan.source, cancelled=cancelled, keep=plan.kept)
    try:
        data: TableData
        if infile and pipes_work() and rows.hold():
            data = PipedRows(rows.held, rows.kinds)
        else:
            data = spool_table(rows, infile=infile)
        plan.key_values = rows.kept_values()
    finally:
        rows.close()
    return rows.stats, data


def copy_table(loading: Loading, conn: pymysql.connections.Connection, database: str,
               plan: TablePlan, read: tuple[list[ColumnStats], TableData],
               collation: str) -> list[Coercion]:
    """Create and fill one table on ``conn`` from its rows (let go of here); the coercions its
    load implies."""
    table = plan.source
    coercions: list[Coercion] = []
    stats, data = read
    try:
        _create_and_fill(conn, database, plan, data, stats, collation, coercions)
    finally:
        data.close()
    if table.row_count is not None and plan.rows != table.row_count:
        raise LoadError(f"table {table.name!r}: the source reported {table.row_count} rows but "
                        f"{plan.rows} arrived")
    return coercions


def _create_and_fill(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
                     data: TableData, stats: list[ColumnStats], collation: str,
                     coercions: list[Coercion]) -> None:
    table = plan.source
    nullable = [c.nullable for c in table.columns]
    short = short_text_columns([c.type for c in table.columns], stats,
                               [c.name in plan.keyed for c in table.columns])
    for index, (column, column_stats) in enumerate(zip(table.columns, stats, strict=True)):
        physical = physical_type(column.type, column_stats, keyed=column.name in plan.keyed,
                                 short_text=index in short)
        plan.physical.append(physical)
        target_column = plan.target(column.name)
        if physical.note:
            coercions.append(Coercion(plan.name, target_column, physical.note))
        if column_stats.non_finite:
            nullable[index] = True
            coercions.append(Coercion(
                plan.name, target_column, "NaN/Infinity values cannot be stored in MySQL's "
                "DOUBLE; loaded as NULL", column_stats.non_finite))
    problem = key_problem(plan, table.primary_key, "primary key") if table.primary_key else None
    if problem:
        coercions.append(Coercion(plan.name, key_list_plain(plan, table.primary_key), problem))
    plan.primary_key = bool(table.primary_key) and problem is None
    ref = table_ref(database, plan.name)
    with conn.cursor() as cur:
        cur.execute(create_table_sql(database, plan, collation, nullable=nullable,
                                     with_primary_key=plan.primary_key))
    try:
        plan.rows = fill_rows(conn, database, plan, data)
    except pymysql.err.IntegrityError as exc:
        if not plan.primary_key:
            raise LoadError(f"cannot load table {table.name!r}: {exc}") from exc
        # The rows break the key as MySQL sees it: load them all without it and say why.
        plan.primary_key = False
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE {ref}")
            cur.execute(create_table_sql(database, plan, collation, nullable=nullable,
                                         with_primary_key=False))
        plan.rows = fill_rows(conn, database, plan, data)
        coercions.append(_key_violations(conn, database, plan, collation))
