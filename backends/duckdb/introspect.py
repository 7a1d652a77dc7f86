"""Read a DuckDB database's tables back as engine-neutral descriptions and Arrow batches.

This is what a model is shown (``polysql.engines.ddl`` renders the schema from here, never from the
source), and what lets a DuckDB file serve as a load source.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import duckdb
import pyarrow as pa

from polysql.backends._common.arrow import arrow_schema
from polysql.backends.duckdb.types import logical_type, quote_ident
from polysql.core.errors import LoadError
from polysql.core.schema import Column, Index, Table


def introspect(conn: duckdb.DuckDBPyConnection) -> list[Table]:
    names = [r[0] for r in conn.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT internal AND NOT temporary ORDER BY table_oid").fetchall()]
    tables = []
    for name in names:
        columns = [
            Column(col, logical_type(data_type), nullable=bool(nullable), declared_type=data_type)
            for col, data_type, nullable in conn.execute(
                "SELECT column_name, data_type, is_nullable FROM duckdb_columns() "
                "WHERE database_name = current_database() AND schema_name = 'main' "
                "AND table_name = ? ORDER BY column_index", [name]).fetchall()]
        keys = conn.execute(
            "SELECT constraint_column_names FROM duckdb_constraints() "
            "WHERE database_name = current_database() AND schema_name = 'main' "
            "AND table_name = ? AND constraint_type = 'PRIMARY KEY'", [name]).fetchall()
        count = conn.execute(f"SELECT count(*) FROM {quote_ident(name)}").fetchone()
        tables.append(Table(name, columns, primary_key=tuple(keys[0][0]) if keys else (),
                            row_count=int(count[0]) if count else 0,
                            indexes=_indexes(conn, name, {c.name for c in columns})))
    return tables


def _index_columns(expressions: str, known: set[str]) -> tuple[str, ...] | None:
    """Column names of an index from duckdb_indexes().expressions (a printed list such as
    ``['"A b"', c]``); None when an entry is an expression rather than a plain column."""
    names = []
    for item in expressions.strip().removeprefix("[").removesuffix("]").split(", "):
        text = item.strip().strip("'")
        if len(text) >= 2 and text[0] == text[-1] == '"':
            text = text[1:-1].replace('""', '"')
        if text not in known:
            return None
        names.append(text)
    return tuple(names) or None


def _indexes(conn: duckdb.DuckDBPyConnection, table: str, known: set[str]) -> list[Index]:
    found = []
    for index_name, unique, expressions in conn.execute(
            "SELECT index_name, is_unique, expressions FROM duckdb_indexes() "
            "WHERE database_name = current_database() AND schema_name = 'main' "
            "AND table_name = ? ORDER BY index_name", [table]).fetchall():
        columns = _index_columns(str(expressions), known)
        if columns is not None:
            found.append(Index(index_name, columns, bool(unique)))
    return found


def read_batches(conn: duckdb.DuckDBPyConnection, table: Table, *, batch_size: int,
                 lock: threading.Lock) -> Iterator[pa.RecordBatch]:
    schema = arrow_schema(table)
    select = ", ".join(
        f"CAST({quote_ident(c.name)} AS VARCHAR)" if c.type.kind == "text"
        else quote_ident(c.name) for c in table.columns)
    # A separate cursor, so queries on the backend meanwhile do not consume this stream.
    with lock:
        cursor = conn.cursor()
        reader = cursor.sql(f"SELECT {select} FROM {quote_ident(table.name)}").to_arrow_reader(batch_size)
    try:
        for batch in reader:
            try:
                columns = [column.cast(field.type)
                           for column, field in zip(batch.columns, schema, strict=True)]
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise LoadError(f"cannot convert table {table.name!r} from DuckDB: {exc}") from exc
            yield pa.RecordBatch.from_arrays(columns, schema=schema)
    finally:
        cursor.close()
