"""Logical column types (polysql.core.schema) as DuckDB types, and back; quoting names."""

from __future__ import annotations

import re

from polysql.core.schema import ColumnType


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def duckdb_type(column_type: ColumnType) -> str:
    if column_type.kind == "decimal":
        return f"DECIMAL({column_type.precision or 18},{column_type.scale or 0})"
    return {
        "boolean": "BOOLEAN",
        "integer": "BIGINT",
        "float": "DOUBLE",
        "text": "VARCHAR",
        "blob": "BLOB",
        "date": "DATE",
        "timestamp": "TIMESTAMP",
    }[column_type.kind]


_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")
_KINDS = {
    "BOOLEAN": "boolean",
    "TINYINT": "integer", "SMALLINT": "integer", "INTEGER": "integer", "BIGINT": "integer",
    "HUGEINT": "integer", "UTINYINT": "integer", "USMALLINT": "integer", "UINTEGER": "integer",
    "UBIGINT": "integer",
    "FLOAT": "float", "DOUBLE": "float",
    "VARCHAR": "text", "BLOB": "blob", "DATE": "date",
    "TIMESTAMP": "timestamp", "TIMESTAMP_S": "timestamp", "TIMESTAMP_MS": "timestamp",
    "TIMESTAMP_NS": "timestamp",
}


def logical_type(data_type: str) -> ColumnType:
    """The logical type of a DuckDB column type; anything without one (lists, structs,
    intervals, ...) travels as text."""
    match = _DECIMAL.fullmatch(data_type)
    if match:
        return ColumnType("decimal", int(match.group(1)), int(match.group(2)))
    return ColumnType(_KINDS.get(data_type, "text"))  # type: ignore[arg-type]
