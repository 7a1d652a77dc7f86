"""Create and fill the tables of a load source in one (staging) MySQL/MariaDB database.

Per table: one pass over the source writes the rows to a spool file and gathers what sizes the
columns (longest text, non-finite floats); then the table is created with its primary key and
filled from the spool with one LOAD DATA LOCAL INFILE -- or, where the server refuses that, with
multi-row INSERTs of a few megabytes each (:mod:`.load_infile`). SQLite does not enforce keys the
way MySQL does (NULL keys; and under a case- or accent-insensitive collation 'a' and 'A' are one
key), so when the rows violate the key the table is rebuilt without it and the report says why --
rows are never dropped. Foreign keys are added last, each only after a query has shown every
child row has its parent.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pymysql

from polysql.backends.mysql.load_infile import Loading, load_file
from polysql.backends.mysql.load_spool import InsertSpool, Spool, spool_table
from polysql.backends.mysql.setup import quote_ident
from polysql.backends.mysql.types import MAX_KEY_BYTES, ColumnStats, Physical, physical_type
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

    def target(self, column: str) -> str:
        return self.columns[column]


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
    return plans


def referenced_columns(fk: ForeignKey, parent: Table) -> tuple[str, ...]:
    """The parent columns ``fk`` points at (SQLite leaves them empty to mean the primary key)."""
    if all(c == "" for c in fk.ref_columns):
        return parent.primary_key
    return fk.ref_columns


def _table_ref(database: str, name: str) -> str:
    return f"{quote_ident(database)}.{quote_ident(name)}"


def _key_list(plan: TablePlan, columns: tuple[str, ...]) -> str:
    return ", ".join(quote_ident(plan.target(c)) for c in columns)


def create_table_sql(database: str, plan: TablePlan, collation: str, *,
                     nullable: list[bool], with_primary_key: bool) -> str:
    parts = [f"{quote_ident(plan.target(c.name))} {p.sql}{'' if null else ' NOT NULL'}"
             for c, p, null in zip(plan.source.columns, plan.physical, nullable, strict=True)]
    if with_primary_key:
        parts.append(f"PRIMARY KEY ({_key_list(plan, plan.source.primary_key)})")
    return (f"CREATE TABLE {_table_ref(database, plan.name)} ({', '.join(parts)}) "
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
    prefix = f"INSERT INTO {_table_ref(database, plan.name)} VALUES ".encode()
    with conn.cursor() as cur:
        for body in spool.bodies():
            cur.execute(prefix + body)
    return spool.rows


def fill_rows(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
              spool: Spool) -> int:
    """Fill the (empty) table from ``spool``; IntegrityError when the rows break its key."""
    if isinstance(spool, InsertSpool):
        return insert_rows(conn, database, plan, spool)
    columns = [plan.target(c.name) for c in plan.source.columns]
    return load_file(conn, _table_ref(database, plan.name), columns,
                     [c.type.kind for c in plan.source.columns], spool)


def _key_list_plain(plan: TablePlan, columns: tuple[str, ...]) -> str:
    return ", ".join(plan.columns.get(c, c) for c in columns)


def _scalar(conn: pymysql.connections.Connection, sql: str) -> int:
    with conn.cursor() as cur:
        cur.execute(sql)
        row = cur.fetchone()
    return int(row[0] or 0) if row else 0


def _key_violations(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
                    collation: str) -> Coercion:
    table = _table_ref(database, plan.name)
    keys = _key_list(plan, plan.source.primary_key)
    any_null = " OR ".join(f"{quote_ident(plan.target(c))} IS NULL"
                           for c in plan.source.primary_key)
    nulls = _scalar(conn, f"SELECT count(*) FROM {table} WHERE {any_null}")
    shared = _scalar(conn, f"SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM {table} "
                           f"WHERE NOT ({any_null}) GROUP BY {keys} HAVING count(*) > 1) AS d")
    return Coercion(plan.name, ", ".join(plan.target(c) for c in plan.source.primary_key), (
        f"primary key not created: {nulls} rows have a NULL key and {shared} rows share a key "
        f"with another row as MySQL compares keys (collation {collation}; *_ci/*_ai "
        f"collations ignore case/accents, PAD SPACE ones trailing spaces); every row loaded"),
        nulls + shared)


def copy_tables(loading: Loading, database: str, plans: list[TablePlan], source: Backend,
                collation: str) -> list[Coercion]:
    """Create and fill every table; the coercions their load implies.

    While the server loads one table, a worker thread reads and spools the next: the server's
    work and the source's reading overlap instead of taking turns. At most two spools exist at
    a time.
    """
    coercions: list[Coercion] = []
    cancelled = threading.Event()

    def spool(plan: TablePlan) -> tuple[list[ColumnStats], Spool]:
        return spool_table(source, plan.source, infile=loading.infile, cancelled=cancelled)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="polysql-spool") as worker:
        ahead: Future[tuple[list[ColumnStats], Spool]] | None = \
            worker.submit(spool, plans[0]) if plans else None
        try:
            for index, plan in enumerate(plans):
                assert ahead is not None
                spooled = ahead.result()
                ahead = worker.submit(spool, plans[index + 1]) if index + 1 < len(plans) \
                    else None
                try:
                    coercions.extend(copy_table(loading, database, plan, spooled, collation))
                except pymysql.err.MySQLError as exc:
                    raise LoadError(f"cannot load table {plan.source.name!r} into MySQL: "
                                    f"{exc}") from exc
        finally:
            if ahead is not None:  # the load failed: stop the next spool and remove it
                cancelled.set()
                with contextlib.suppress(Exception):
                    ahead.result()[1].close()
    return coercions


def copy_table(loading: Loading, database: str, plan: TablePlan,
               spooled: tuple[list[ColumnStats], Spool], collation: str) -> list[Coercion]:
    """Create and fill one table from its spool (closed here); the coercions its load
    implies."""
    table = plan.source
    coercions: list[Coercion] = []
    stats, spool = spooled
    try:
        _create_and_fill(loading.conn, database, plan, spool, stats, collation, coercions)
    finally:
        spool.close()
    if not loading.infile:
        loading.inserted_rows += plan.rows
    if table.row_count is not None and plan.rows != table.row_count:
        raise LoadError(f"table {table.name!r}: the source reported {table.row_count} rows but "
                        f"{plan.rows} arrived")
    return coercions


def _create_and_fill(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
                     spool: Spool, stats: list[ColumnStats], collation: str,
                     coercions: list[Coercion]) -> None:
    table = plan.source
    nullable = [c.nullable for c in table.columns]
    for index, (column, column_stats) in enumerate(zip(table.columns, stats, strict=True)):
        physical = physical_type(column.type, column_stats, keyed=column.name in plan.keyed)
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
        coercions.append(Coercion(plan.name, _key_list_plain(plan, table.primary_key), problem))
    plan.primary_key = bool(table.primary_key) and problem is None
    ref = _table_ref(database, plan.name)
    with conn.cursor() as cur:
        cur.execute(create_table_sql(database, plan, collation, nullable=nullable,
                                     with_primary_key=plan.primary_key))
    try:
        plan.rows = fill_rows(conn, database, plan, spool)
    except pymysql.err.IntegrityError as exc:
        if not plan.primary_key:
            raise LoadError(f"cannot load table {table.name!r}: {exc}") from exc
        # The rows break the key as MySQL sees it: load them all without it and say why.
        plan.primary_key = False
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE {ref}")
            cur.execute(create_table_sql(database, plan, collation, nullable=nullable,
                                         with_primary_key=False))
        plan.rows = fill_rows(conn, database, plan, spool)
        coercions.append(_key_violations(conn, database, plan, collation))


def _orphans(conn: pymysql.connections.Connection, database: str, child: TablePlan,
             parent: TablePlan, fk: ForeignKey, ref_columns: tuple[str, ...]) -> int:
    """Child rows (all key columns set, as MySQL's MATCH SIMPLE checks) with no parent row."""
    pairs = list(zip(fk.columns, ref_columns, strict=True))
    present = " AND ".join(f"c.{quote_ident(child.target(a))} IS NOT NULL" for a, _ in pairs)
    match = " AND ".join(f"p.{quote_ident(parent.target(b))} = c.{quote_ident(child.target(a))}"
                         for a, b in pairs)
    return _scalar(conn, f"SELECT count(*) FROM {_table_ref(database, child.name)} AS c WHERE "
                         f"{present} AND NOT EXISTS (SELECT 1 FROM "
                         f"{_table_ref(database, parent.name)} AS p WHERE {match})")


def _family(physical: Physical) -> str:
    # VARCHAR/VARBINARY lengths may differ between the two sides of a foreign key.
    return physical.sql.split("(")[0] if physical.sql.startswith(("VARCHAR", "VARBINARY")) \
        else physical.sql


def _type_mismatch(child: TablePlan, columns: tuple[str, ...], parent: TablePlan,
                   ref_columns: tuple[str, ...]) -> str | None:
    child_index = {c.name: i for i, c in enumerate(child.source.columns)}
    parent_index = {c.name: i for i, c in enumerate(parent.source.columns)}
    for a, b in zip(columns, ref_columns, strict=True):
        mine, theirs = child.physical[child_index[a]], parent.physical[parent_index[b]]
        if _family(mine) != _family(theirs):
            return (f"column {a} is {mine.sql} but the referenced column {b} is {theirs.sql}; "
                    f"InnoDB requires matching types")
    return None


def _constraint_name(plan: TablePlan, number: int) -> str:
    digest = hashlib.sha256(plan.name.encode("utf-8")).hexdigest()[:12]
    return f"fk_{digest}_{number}"


def add_foreign_keys(conn: pymysql.connections.Connection, database: str,
                     plans: list[TablePlan]) -> list[Coercion]:
    by_source = {p.source.name: p for p in plans}
    coercions: list[Coercion] = []
    for plan in plans:
        for number, fk in enumerate(plan.source.foreign_keys, start=1):
            reason = _foreign_key(conn, database, plan, by_source, fk, number)
            if reason is not None:
                coercions.append(Coercion(plan.name, _key_list_plain(plan, fk.columns), reason))
    return coercions


def _foreign_key(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
                 by_source: dict[str, TablePlan], fk: ForeignKey, number: int) -> str | None:
    """Add one foreign key; the reason it was skipped, or None."""
    described = f"foreign key ({', '.join(fk.columns)}) -> {fk.ref_table}"
    parent = by_source.get(fk.ref_table)
    if parent is None:
        return f"{described} not created: the source has no table {fk.ref_table!r}"
    ref_columns = referenced_columns(fk, parent.source)
    if len(ref_columns) != len(fk.columns):
        return f"{described} not created: it names {len(ref_columns)} parent columns for " \
               f"{len(fk.columns)} child columns"
    problem = key_problem(plan, fk.columns, described) or key_problem(
        parent, ref_columns, f"{described} (referenced columns)")
    if problem:
        return problem
    mismatch = _type_mismatch(plan, fk.columns, parent, ref_columns)
    if mismatch:
        return f"{described} not created: {mismatch}"
    orphans = _orphans(conn, database, plan, parent, fk, ref_columns)
    if orphans:
        return f"{described} not created: {orphans} rows reference a missing parent row"
    parent_ref = _table_ref(database, parent.name)
    try:
        with conn.cursor() as cur:
            if not (parent.primary_key and tuple(parent.source.primary_key[:len(ref_columns)])
                    == tuple(ref_columns)):
                # InnoDB needs an index on the referenced columns; the primary key is one.
                cur.execute(f"ALTER TABLE {parent_ref} ADD INDEX "
                            f"({_key_list(parent, ref_columns)})")
            # The rows were checked above; skipping InnoDB's own re-check avoids a table copy.
            cur.execute("SET SESSION foreign_key_checks = 0")
            try:
                cur.execute(
                    f"ALTER TABLE {_table_ref(database, plan.name)} ADD CONSTRAINT "
                    f"{quote_ident(_constraint_name(plan, number))} FOREIGN KEY "
                    f"({_key_list(plan, fk.columns)}) REFERENCES {parent_ref} "
                    f"({_key_list(parent, ref_columns)})")
            finally:
                cur.execute("SET SESSION foreign_key_checks = 1")
    except pymysql.err.MySQLError as exc:
        message = exc.args[1] if len(exc.args) > 1 else str(exc)
        return f"{described} not created: MySQL refused it ({message})"
    return None
