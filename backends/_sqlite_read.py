"""Stream a SQLite table as Arrow batches typed per its resolved logical types.

Each column is selected through a SQL expression that already puts its values in the form the
logical type wants (numbers rendered as text for a text column, 'true'/'false' as 0/1 for a
boolean, ...), so Python only hands whole columns to Arrow.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pyarrow as pa
from polysql.backends._arrow import arrow_schema, arrow_type
from polysql.backends._sqlite_types import quote_ident

from polysql.errors import LoadError
from polysql.schema import Column, Table

# Arrow parses ISO timestamps up to microseconds; SQLite text may carry more digits.
_MICROSECOND_TEXT_LENGTH = 26


def select_expression(column: Column) -> str:
    col = quote_ident(column.name)
    kind = column.type.kind
    if kind == "text":
        return f"CASE WHEN typeof({col}) IN ('integer', 'real') THEN CAST({col} AS TEXT) ELSE {col} END"
    if kind == "decimal":
        return f"CAST({col} AS TEXT)"
    if kind == "boolean":
        return (f"CASE WHEN {col} IS NULL THEN NULL WHEN typeof({col}) = 'text' "
                f"THEN lower({col}) = 'true' ELSE {col} <> 0 END")
    if kind == "timestamp":
        return f"substr({col}, 1, {_MICROSECOND_TEXT_LENGTH})"
    if kind == "blob":
        return (f"CASE WHEN {col} IS NULL OR typeof({col}) = 'blob' THEN {col} "
                f"ELSE CAST(CAST({col} AS TEXT) AS BLOB) END")
    return col


def _to_text(value: Any) -> Any:
    # Blobs in a text column: keep every byte that is text, mark the rest visibly.
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


def to_arrow(values: list[Any], column: Column) -> pa.Array:
    """One fetched column as an Arrow array of the column's logical type."""
    target = arrow_type(column.type)
    kind = column.type.kind
    if kind == "boolean":
        return pa.array(values, pa.int64()).cast(target)
    if kind in ("date", "timestamp"):
        return pa.array(values, pa.string()).cast(target)
    if kind == "decimal":
        return pa.array([None if v is None else Decimal(v) for v in values], target)
    if kind == "text":
        try:
            return pa.array(values, target)
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            return pa.array([_to_text(v) for v in values], target)
    return pa.array(values, target)


def read_batches(conn: sqlite3.Connection, table: Table, *, batch_size: int,
                 lock: threading.Lock) -> Iterator[pa.RecordBatch]:
    select = ", ".join(select_expression(c) for c in table.columns)
    schema = arrow_schema(table)
    with lock:
        cursor = conn.execute(f"SELECT {select} FROM {quote_ident(table.name)}")
    try:
        while True:
            with lock:
                try:
                    rows = cursor.fetchmany(batch_size)
                except sqlite3.Error as exc:
                    raise LoadError(f"cannot read table {table.name!r} from SQLite: {exc}") from exc
            if not rows:
                return
            columns = list(zip(*rows, strict=True))
            try:
                arrays = [to_arrow(list(values), column)
                          for values, column in zip(columns, table.columns, strict=True)]
            except (pa.ArrowInvalid, pa.ArrowTypeError, ArithmeticError) as exc:
                raise LoadError(
                    f"cannot convert table {table.name!r} to its resolved types: {exc}") from exc
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
    finally:
        cursor.close()
