"""Stream a SQLite table as Arrow batches typed per its resolved logical types.

Each column is selected through a SQL expression that already puts its values in the form the
logical type wants (numbers rendered as text for a text column, 'true'/'false' as 0/1 for a
boolean, ...), so Python only hands whole columns to Arrow.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from operator import itemgetter
from typing import Any

import pyarrow as pa

from polysql.backends._common.arrow import arrow_schema, arrow_type
from polysql.backends.sqlite.errors import source_problem
from polysql.backends.sqlite.types import quote_ident
from polysql.core.errors import LoadError
from polysql.core.schema import Coercion, Column, Table

# Arrow parses ISO timestamps up to microseconds; SQLite text may carry more digits.
MICROSECOND_TEXT_LENGTH = 26


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
        return f"substr({col}, 1, {MICROSECOND_TEXT_LENGTH})"
    if kind == "blob":
        return (f"CASE WHEN {col} IS NULL OR typeof({col}) = 'blob' THEN {col} "
                f"ELSE CAST(CAST({col} AS TEXT) AS BLOB) END")
    return col


# How each logical type arrives from the SELECT (see select_expression), before the cast that
# gives it its logical Arrow type.
_FETCHED = {"boolean": pa.int64(), "integer": pa.int64(), "float": pa.float64(),
            "decimal": pa.string(), "text": pa.string(), "blob": pa.binary(),
            "date": pa.string(), "timestamp": pa.string()}


def fetched_struct(table: Table) -> pa.StructType:
    return pa.struct([pa.field(str(i), _FETCHED[c.type.kind]) for i, c in enumerate(table.columns)])


def rows_to_arrow(rows: list[tuple[Any, ...]], table: Table,
                  fetched: pa.StructType) -> list[pa.Array] | None:
    """Fetched rows as one Arrow array per column, converted in one C++ pass over the row
    tuples (no Python transpose); None when a value does not have the fetched type (a blob in
    a text column), which the per-column path handles."""
    try:
        packed = pa.array(rows, type=fetched)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None
    arrays = []
    for index, column in enumerate(table.columns):
        array = packed.field(index)
        target = arrow_type(column.type)
        arrays.append(array if array.type == target else array.cast(target))
    return arrays


def _to_text(value: Any) -> Any:
    # Blobs in a text column: keep every byte that is text, mark the rest visibly.
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


_EXACT_FLOAT_INT = 2**53


def _floats(values: list[Any], column: Column, rounded: dict[str, int]) -> pa.Array:
    """A float column may hold integers too large for a double (SQLite keeps whatever it is
    given): they become the nearest double, and each such value is counted for the report."""
    try:
        return pa.array(values, pa.float64())
    except (pa.ArrowInvalid, OverflowError):
        inexact = sum(1 for v in values if isinstance(v, int) and abs(v) > _EXACT_FLOAT_INT
                      and int(float(v)) != v)
        rounded[column.name] = rounded.get(column.name, 0) + inexact
        return pa.array([float(v) if isinstance(v, int) else v for v in values], pa.float64())


def to_arrow(values: list[Any], column: Column, rounded: dict[str, int] | None = None) -> pa.Array:
    """One fetched column as an Arrow array of the column's logical type (``rounded`` counts,
    per column, integers that a float column could only hold approximately)."""
    target = arrow_type(column.type)
    kind = column.type.kind
    if kind == "float":
        return _floats(values, column, rounded if rounded is not None else {})
    if kind == "boolean":
        return pa.array(values, pa.int64()).cast(target)
    if kind in ("date", "timestamp", "decimal"):
        # Arrow parses the text SQLite printed; it refuses (rather than rounds) a decimal that
        # would not fit the chosen scale.
        return pa.array(values, pa.string()).cast(target)
    if kind == "text":
        try:
            return pa.array(values, target)
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            return pa.array([_to_text(v) for v in values], target)
    return pa.array(values, target)


class LenientText:
    """A sqlite3 ``text_factory`` that keeps going past text that is not valid UTF-8 (SQLite does
    not validate what it stores), replacing bad bytes with U+FFFD and counting the values it
    repaired so the load can report them."""

    def __init__(self) -> None:
        self.repaired = 0

    def __call__(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.repaired += 1
            return raw.decode("utf-8", errors="replace")


@contextmanager
def _decoding(conn: sqlite3.Connection, factory: LenientText | None) -> Iterator[None]:
    if factory is None:  # the C decoder: fast, but raises on text that is not UTF-8
        yield
        return
    previous = conn.text_factory
    conn.text_factory = factory
    try:
        yield
    finally:
        conn.text_factory = previous


class _NotUtf8(Exception):
    """The fast pass met text that is not valid UTF-8."""


def _repaired_per_column(columns: list[tuple[Any, ...]], table: Table) -> dict[str, int]:
    return {column.name: sum(isinstance(v, str) and "\ufffd" in v for v in values)
            for values, column in zip(columns, table.columns, strict=True)}


def _fetch(cursor: sqlite3.Cursor, size: int, table: Table, lenient: bool) -> list[Any]:
    try:
        return cursor.fetchmany(size)
    except sqlite3.OperationalError as exc:
        if not lenient and "decode to UTF-8" in str(exc):
            raise _NotUtf8 from exc
        raise LoadError(f"cannot read table {table.name!r} from SQLite: "
                        f"{source_problem(exc)}") from exc
    except sqlite3.Error as exc:
        raise LoadError(f"cannot read table {table.name!r} from SQLite: "
                        f"{source_problem(exc)}") from exc


def _stream(conn: sqlite3.Connection, table: Table, *, batch_size: int, lock: threading.Lock,
            decoder: LenientText | None, skip: int,
            repaired: dict[str, int], rounded: dict[str, int]) -> Iterator[pa.RecordBatch]:
    """One pass over ``table``, leaving out its first ``skip`` rows."""
    select = ", ".join(select_expression(c) for c in table.columns)
    schema = arrow_schema(table)
    fetched = fetched_struct(table)
    cursor = conn.cursor()
    try:
        with lock, _decoding(conn, decoder):
            try:
                cursor.execute(f"SELECT {select} FROM {quote_ident(table.name)}")
            except sqlite3.Error as exc:
                raise LoadError(f"cannot read table {table.name!r} from SQLite: "
                                f"{source_problem(exc)}") from exc
            while skip > 0:
                skipped = len(_fetch(cursor, min(skip, batch_size), table, decoder is not None))
                if not skipped:
                    raise LoadError(f"table {table.name!r} changed while it was being read")
                skip -= skipped
        while True:
            before = decoder.repaired if decoder else 0
            with lock, _decoding(conn, decoder):
                rows = _fetch(cursor, batch_size, table, decoder is not None)
            if not rows:
                return
            try:
                arrays = rows_to_arrow(rows, table, fetched) if decoder is None else None
                if arrays is None:
                    # per column, not zip(*rows): an iterator per row wakes the garbage collector
                    columns = [list(map(itemgetter(j), rows)) for j in range(len(table.columns))]
                    if decoder is not None and decoder.repaired > before:
                        for name, count in _repaired_per_column(columns, table).items():
                            repaired[name] = repaired.get(name, 0) + count
                    arrays = [to_arrow(values, column, rounded)
                              for values, column in zip(columns, table.columns, strict=True)]
            except (pa.ArrowInvalid, pa.ArrowTypeError, ArithmeticError) as exc:
                raise LoadError(
                    f"cannot convert table {table.name!r} to its resolved types: {exc}") from exc
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
    finally:
        cursor.close()


def read_batches(conn: sqlite3.Connection, table: Table, *, batch_size: int,
                 lock: threading.Lock,
                 on_coercion: Callable[[Coercion], None]) -> Iterator[pa.RecordBatch]:
    """Yield ``table`` in batches; the lock is held per fetch, not for the whole stream.

    The first pass decodes text in C. If it meets text that is not UTF-8 it stops, and a second,
    slower pass repairs such text and resumes after the rows already yielded (a read-only scan
    of an unchanged table returns rows in the same order every time).
    """
    yielded = 0
    repaired: dict[str, int] = {}
    rounded: dict[str, int] = {}
    try:
        for batch in _stream(conn, table, batch_size=batch_size, lock=lock, decoder=None,
                             skip=0, repaired=repaired, rounded=rounded):
            yielded += batch.num_rows
            yield batch
    except _NotUtf8:
        yield from _stream(conn, table, batch_size=batch_size, lock=lock, decoder=LenientText(),
                           skip=yielded, repaired=repaired, rounded=rounded)
    for name, count in rounded.items():
        if count:
            on_coercion(Coercion(table.name, name, "integers beyond 2^53 in a float column: "
                                                   "stored as the nearest double", count))
    for name, count in repaired.items():
        if count:
            on_coercion(Coercion(table.name, name, "text that is not valid UTF-8: invalid bytes "
                                                   "replaced by U+FFFD", count))
