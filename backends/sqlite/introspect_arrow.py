"""Read a whole SQLite table straight into Arrow through ADBC's SQLite driver (C, no Python rows).

The same per-column SELECT expressions as the row reader (:mod:`.introspect_rows`) put every value
in the form its logical type wants, so a column normally arrives with one storage class. The
driver infers each column's Arrow type from its first rows; a later value of another class is
refused (a real or text where it inferred integers) or converted by the driver (an integer where
it inferred doubles, exact up to 2^53). A refusal, text that is not valid UTF-8, or an integer a
float column could hold only approximately (flagged per row by the query itself) all make this
reader answer None, and the caller reads the table the slower way, which repairs and reports
such values. This reader never passes silently over what the slow one would report.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from polysql.backends._common.arrow import arrow_schema, arrow_type, number_scalar
from polysql.backends.sqlite.introspect_parts import read_whole_table
from polysql.backends.sqlite.introspect_rows import MICROSECOND_TEXT_LENGTH, select_expression
from polysql.backends.sqlite.types import ColumnStats, quote_ident
from polysql.core.arrow_buffers import primitive_values, valid_mask
from polysql.core.schema import Column, Table

# The driver decides a column's type from its first batch; a larger first batch means a column
# whose leading values are NULL is typed by real values more often (otherwise: the slow path).
_BATCH_ROWS = 65_536
_EXACT_FLOAT_INT = 2**53
# Significant digits SQLite prints a real with (CAST AS TEXT), and within which a decimal is
# told apart from its neighbours by its double.
_MOST_EXACT_DIGITS = 15

# How each logical type may arrive from the SELECT before the cast to its Arrow type; ``null``
# is a column the driver saw only NULLs in.
_ACCEPTED: dict[str, tuple[pa.DataType, ...]] = {
    "boolean": (pa.int64(),), "integer": (pa.int64(),), "float": (pa.float64(), pa.int64()),
    "decimal": (pa.string(),), "text": (pa.string(),), "blob": (pa.binary(),),
    "date": (pa.string(),), "timestamp": (pa.string(),),
}


def _column(array: pa.ChunkedArray, kind: str, target: pa.DataType) -> pa.ChunkedArray | None:
    """``array`` cast to ``target``, or None when only the slow path may convert it."""
    if array.type == pa.null():
        return pa.chunked_array([pa.nulls(len(array), target)], type=target)
    if array.type not in _ACCEPTED[kind]:
        return None
    if array.type == pa.string():
        try:
            array.validate(full=True)  # SQLite stores text unchecked; bad UTF-8 is repaired elsewhere
        except pa.ArrowInvalid:
            return None
    if array.type == target:
        return array
    if kind == "boolean":
        return pc.not_equal(array, number_scalar(0, array.type))
    try:
        return array.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None  # e.g. a decimal that does not fit: the slow path says which table


def read_table(path: Path, table: Table, *, parts: int = 1) -> pa.Table | None:
    """``table`` of the SQLite file at ``path`` as one Arrow table of its logical types, or None
    when the driver is missing or a value needs the row reader's care; ``parts``: rowid ranges
    read at once (see :mod:`.introspect_parts`)."""
    if not table.columns:
        return None
    floats = [quote_ident(c.name) for c in table.columns if c.type.kind == "float"]
    # one flag per float column: an integer a double cannot hold exactly (the slow path rounds
    # it and reports the count; the driver would round it silently)
    inexact = [f"(typeof({col}) = 'integer' AND ({col} > {_EXACT_FLOAT_INT} "
               f"OR {col} < -{_EXACT_FLOAT_INT}))" for col in floats]
    select = ", ".join([*(select_expression(c) for c in table.columns), *inexact])
    try:
        # NOT INDEXED: the table's own order, whatever columns are asked for, so columns
        # read apart (see complete_table) line up row for row.
        fetched = read_whole_table(path, table.name, select, parts=parts, batch_rows=_BATCH_ROWS)
    except Exception:  # noqa: BLE001 - no driver, or any driver failure (type mismatch): slow path
        return None
    for flag in fetched.columns[len(table.columns):]:
        if pc.max(flag).as_py():
            return None
    schema = arrow_schema(table)
    columns = []
    for index, column in enumerate(table.columns):
        converted = _column(fetched.column(index), column.type.kind, arrow_type(column.type))
        if converted is None:
            return None
        columns.append(converted)
    return pa.Table.from_arrays(columns, schema=schema)


def from_scan(values: pa.ChunkedArray, column: Column, stats: ColumnStats) -> pa.ChunkedArray | None:
    """``column`` as :func:`read_table` would give it, from the stored values the columnar type
    scan read (one storage class, or integers beside reals read as doubles), or None when only
    a read with the column's own SELECT expression gives it exactly: decimals whose doubles
    are not exactly a decimal of at most 15 digits at the column's scale (see
    :func:`_decimals_from_doubles`), numbers or blobs in a text column and the like."""
    kind, target = column.type.kind, arrow_type(column.type)
    if stats.non_null == 0:
        return pa.chunked_array([pa.nulls(len(values), target)], type=target)
    if kind == "decimal":
        return _decimals_from_doubles(values, target)
    # Integers may have been read as doubles (beside reals, or in an undeclared column): the
    # scan read them so only when each fits a double exactly.
    numbers = (pa.int64(), pa.float64())
    plain = {"integer": (numbers, stats.integers), "boolean": (numbers, stats.integers),
             "float": ((pa.float64(),), stats.numbers), "text": ((pa.string(),), stats.texts),
             "date": ((pa.string(),), stats.texts), "timestamp": ((pa.string(),), stats.texts),
             "blob": ((pa.binary(),), stats.blobs)}.get(kind)
    if plain is None or values.type not in plain[0] or plain[1] != stats.non_null:
        return None
    try:
        if kind == "boolean":
            return pc.not_equal(values, number_scalar(0, values.type))
        if kind == "timestamp":
            values = pc.utf8_slice_codeunits(values, 0, MICROSECOND_TEXT_LENGTH)
        return values if values.type == target else values.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _decimals_from_doubles(values: pa.ChunkedArray,
                           target: pa.Decimal128Type) -> pa.ChunkedArray | None:
    """The decimals the row reader makes of these doubles, or None where that takes SQLite.

    The row reader parses the text SQLite prints for a number, CAST AS TEXT: an integer whole,
    a real rounded to 15 significant digits. When a decimal D of at most 15 significant digits
    at the target scale converts back to exactly the stored double, D is the only such decimal
    that does (15-digit decimals lie further apart than the double's rounding), so it is what
    SQLite prints; and an integer below 10**15 is its own double. Both hold when the unscaled
    integer u = round(x * 10**scale) stays below 10**15 (also below 2**53, so u / 10**scale is
    one correctly rounded division) and that division gives x back. Any value where it does not
    hold (more digits, a scale above 15, an integer beyond 2**53 read as a double, infinity)
    leaves the whole column to the row reader's expression; printing every value in SQLite
    costs the scan about a third more.
    """
    precision, scale = target.precision, target.scale
    if values.type != pa.float64() or not 0 <= scale <= _MOST_EXACT_DIGITS:
        return None
    limit = 10.0 ** min(precision, _MOST_EXACT_DIGITS)
    power = 10.0 ** scale
    chunks = []
    for chunk in values.chunks:
        doubles = primitive_values(chunk, np.float64)
        valid = valid_mask(chunk)
        with np.errstate(invalid="ignore", over="ignore"):
            unscaled = np.rint(doubles * power)
            exact = (np.abs(unscaled) < limit) & (unscaled / power == doubles)
        if not exact[valid].all():
            return None
        # decimal128: the unscaled integer as 128-bit two's complement, low word first; laid
        # out from the chunk's offset so its validity bitmap serves as it is
        words = np.zeros((chunk.offset + len(chunk), 2), "<i8")
        low = np.where(valid, unscaled, 0).astype("<i8")
        words[chunk.offset:, 0] = low
        words[chunk.offset:, 1] = low >> 63
        chunks.append(pa.Array.from_buffers(target, len(chunk),
                                            [chunk.buffers()[0], pa.py_buffer(words)],
                                            null_count=chunk.null_count, offset=chunk.offset))
    return pa.chunked_array(chunks, type=target)


def complete_table(path: Path, table: Table, known: dict[str, pa.ChunkedArray], *,
                   parts: int = 1) -> pa.Table | None:
    """``table`` as :func:`read_table` gives it, reading only the columns not in ``known``."""
    missing = [c for c in table.columns if c.name not in known]
    read: dict[str, pa.ChunkedArray] = {}
    if missing:
        rest = read_table(path, Table(table.name, missing), parts=parts)
        if rest is None:
            return None
        read = {c.name: rest.column(i) for i, c in enumerate(missing)}
    columns = [known[c.name] if c.name in known else read[c.name] for c in table.columns]
    if any(len(c) != len(columns[0]) for c in columns):
        return None
    return pa.Table.from_arrays(columns, schema=arrow_schema(table))
