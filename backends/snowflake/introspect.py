"""Read an evaluation schema's tables back from Snowflake: names, types, keys and row counts.

Columns and row counts come from the database's INFORMATION_SCHEMA; keys from SHOW PRIMARY KEYS
and SHOW IMPORTED KEYS, whose result columns are found by name (their order differs between
Snowflake releases and the emulator).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from snowflake.connector import SnowflakeConnection

from polysql.backends.snowflake.types import logical_type, qualified, quote_ident
from polysql.core.schema import Column, ForeignKey, Table


def _rows(conn: SnowflakeConnection, sql: str,
          params: tuple[Any, ...] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
    cursor = conn.cursor()
    try:
        cursor.execute(sql, params or None)
        names = [d.name.lower() for d in cursor.description or []]
        return names, list(cursor.fetchall())
    finally:
        cursor.close()


def _records(conn: SnowflakeConnection, sql: str) -> list[dict[str, Any]]:
    names, rows = _rows(conn, sql)
    return [dict(zip(names, row, strict=True)) for row in rows]


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def holds_tables(conn: SnowflakeConnection, database: str, schema: str) -> bool:
    """Whether ``database.schema`` holds a table this login can see. A database that is missing
    or not granted raises the connector's error, which the caller reads as "no". (Existence alone
    proves nothing: the emulator creates a database and schema on connect.)"""
    _, rows = _rows(conn, f"SELECT COUNT(*) FROM {quote_ident(database)}.INFORMATION_SCHEMA.TABLES "
                          f"WHERE TABLE_SCHEMA = {_literal(schema)} AND TABLE_TYPE = 'BASE TABLE'")
    return bool(rows and rows[0][0])


def read_tables(conn: SnowflakeConnection, database: str, schema: str) -> list[Table]:
    info = f"{quote_ident(database)}.INFORMATION_SCHEMA"
    _, table_rows = _rows(
        conn, f"SELECT TABLE_NAME, ROW_COUNT FROM {info}.TABLES WHERE TABLE_SCHEMA = "
              f"{_literal(schema)} AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME")
    _, column_rows = _rows(
        conn, f"SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE, "
              f"IS_NULLABLE FROM {info}.COLUMNS WHERE TABLE_SCHEMA = {_literal(schema)} "
              f"ORDER BY TABLE_NAME, ORDINAL_POSITION")
    columns: dict[str, list[Column]] = defaultdict(list)
    for table, name, data_type, precision, scale, nullable in column_rows:
        columns[table].append(Column(
            name, logical_type(str(data_type), precision, scale),
            nullable=str(nullable).upper() == "YES", declared_type=str(data_type)))
    where = qualified(database, schema)
    primary: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for rec in _records(conn, f"SHOW PRIMARY KEYS IN SCHEMA {where}"):
        primary[rec["table_name"]].append((int(rec["key_sequence"]), rec["column_name"]))
    foreign: dict[tuple[str, str], list[tuple[int, str, str, str]]] = defaultdict(list)
    for rec in _records(conn, f"SHOW IMPORTED KEYS IN SCHEMA {where}"):
        foreign[(rec["fk_table_name"], rec.get("fk_name") or "")].append(
            (int(rec["key_sequence"]), rec["fk_column_name"], rec["pk_table_name"],
             rec["pk_column_name"]))
    tables = []
    for name, row_count in table_rows:
        keys = [column for _, column in sorted(primary.get(name, []))]
        fks = [ForeignKey(tuple(p[1] for p in sorted(parts)), sorted(parts)[0][2],
                          tuple(p[3] for p in sorted(parts)))
               for (child, _), parts in foreign.items() if child == name]
        tables.append(Table(name, columns.get(name, []), primary_key=tuple(keys),
                            foreign_keys=fks,
                            row_count=None if row_count is None else int(row_count)))
    return tables
