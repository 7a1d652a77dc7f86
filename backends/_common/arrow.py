"""Logical column types (polysql.core.schema) as Arrow types: the interchange form between engines."""

from __future__ import annotations

import pyarrow as pa

from polysql.core.schema import ColumnType, Table


def arrow_type(column_type: ColumnType) -> pa.DataType:
    kind = column_type.kind
    if kind == "decimal":
        return pa.decimal128(column_type.precision or 18, column_type.scale or 0)
    return {
        "boolean": pa.bool_(),
        "integer": pa.int64(),
        "float": pa.float64(),
        "text": pa.string(),
        "blob": pa.binary(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us"),
    }[kind]


def arrow_schema(table: Table) -> pa.Schema:
    return pa.schema([pa.field(c.name, arrow_type(c.type), nullable=True) for c in table.columns])
