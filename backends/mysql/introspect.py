"""Read a loaded MySQL/MariaDB database's schema back: the tables a model is shown.

``Column.declared_type`` is the server's own type text (``decimal(10,2)``, ``varchar(12)``,
``bigint(20)`` on MariaDB or ``bigint`` on MySQL 8), so a schema rendered from it matches what the
model's SQL will meet.
"""

from __future__ import annotations

import pymysql

from polysql.backends.mysql.setup import quote_ident
from polysql.backends.mysql.types import logical_type
from polysql.core.schema import Column, ForeignKey, Index, Table


def introspect(conn: pymysql.connections.Connection, database: str) -> list[Table]:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
            "AND TABLE_TYPE IN ('BASE TABLE', 'VIEW') ORDER BY TABLE_NAME", (database,))
        names = [row[0] for row in cur.fetchall()]
        cur.execute(
            "SELECT TABLE_NAME, COLUMN_NAME, IS_NULLABLE, DATA_TYPE, COLUMN_TYPE, "
            "NUMERIC_PRECISION, NUMERIC_SCALE FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME, ORDINAL_POSITION", (database,))
        columns: dict[str, list[Column]] = {}
        for table, column, nullable, data_type, column_type, precision, scale in cur.fetchall():
            columns.setdefault(table, []).append(Column(
                column, logical_type(data_type, column_type, precision, scale),
                nullable=nullable == "YES", declared_type=column_type))
        cur.execute(
            "SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, "
            "REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE "
            "WHERE TABLE_SCHEMA = %s AND (CONSTRAINT_NAME = 'PRIMARY' OR "
            "(REFERENCED_TABLE_NAME IS NOT NULL AND REFERENCED_TABLE_SCHEMA = TABLE_SCHEMA)) "
            "ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION", (database,))
        keys = cur.fetchall()
        cur.execute(
            "SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = %s AND INDEX_NAME <> 'PRIMARY' "
            "ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX", (database,))
        statistics = cur.fetchall()
    indexes: dict[str, dict[str, tuple[list[str], bool]]] = {}
    for table, index_name, non_unique, column in statistics:
        cols, _ = indexes.setdefault(table, {}).setdefault(index_name, ([], not non_unique))
        cols.append(column)  # None for an expression part (MySQL 8 functional indexes)
    primary: dict[str, list[str]] = {}
    foreign: dict[tuple[str, str], tuple[list[str], str, list[str]]] = {}
    for table, constraint, column, ref_table, ref_column in keys:
        if constraint == "PRIMARY":
            primary.setdefault(table, []).append(column)
        else:
            cols, _, refs = foreign.setdefault((table, constraint), ([], ref_table, []))
            cols.append(column)
            refs.append(ref_column)
    fks: dict[str, list[ForeignKey]] = {}
    for (table, _), (cols, ref_table, refs) in foreign.items():
        fks.setdefault(table, []).append(ForeignKey(tuple(cols), ref_table, tuple(refs)))
    return [Table(name, columns.get(name, []), primary_key=tuple(primary.get(name, ())),
                  foreign_keys=fks.get(name, []), row_count=_count(conn, database, name),
                  indexes=[Index(ix, tuple(cols), unique)
                           for ix, (cols, unique) in indexes.get(name, {}).items()
                           if None not in cols])
            for name in names]


def _count(conn: pymysql.connections.Connection, database: str, table: str) -> int:
    # Exact, unlike information_schema.TABLES.TABLE_ROWS, which InnoDB only estimates.
    with conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {quote_ident(database)}.{quote_ident(table)}")
        return int(cur.fetchone()[0])


def change_marker(conn: pymysql.connections.Connection, database: str) -> str:
    """Per table: when the server created it and last changed its rows (InnoDB keeps the latter in
    memory, to the second: a change within the second of the one before it is not told apart,
    and after a restart the time reads NULL until the next change)."""
    with conn.cursor() as cur:
        cur.execute("SELECT TABLE_NAME, CREATE_TIME, UPDATE_TIME FROM information_schema.TABLES "
                    "WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME", (database,))
        rows = cur.fetchall()
    return ";".join(",".join(str(part) for part in row) for row in rows)
