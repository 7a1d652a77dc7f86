"""Logical column types (polysql.core.schema) as MySQL/MariaDB physical types, and back.

Text is ``utf8mb4`` throughout. A text column that is part of a key must have a length to be
indexed, so it becomes ``VARCHAR(n)`` with ``n`` its longest value; so does a short one (see
:func:`short_text_columns`); other text columns become the smallest of TEXT/MEDIUMTEXT/LONGTEXT
that holds their longest value. Blobs become ``VARBINARY(n)`` when keyed, else LONGBLOB. Trailing
spaces are kept: neither VARCHAR nor TEXT strips them (only CHAR would).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from polysql.backends._common.timestamps import MOST_FRACTION_DIGITS, fraction_digits
from polysql.core.schema import ColumnType

# InnoDB (DYNAMIC/COMPRESSED rows, the default on MySQL 8 and MariaDB 10.3+) indexes at most
# 3072 bytes per key; utf8mb4 reserves 4 bytes per character.
MAX_KEY_BYTES = 3072
BYTES_PER_CHAR = 4
MAX_DECIMAL_PRECISION = 65
MAX_DECIMAL_SCALE = 30
# An empty keyed text column has no longest value to size it by.
EMPTY_KEY_LENGTH = 255
_TEXT_SIZES = ((65_535, "TEXT"), (16_777_215, "MEDIUMTEXT"))
# Text no longer than this (in characters) becomes VARCHAR even outside keys: GROUP BY, DISTINCT
# and ORDER BY over a TEXT column make MariaDB/MySQL put their temporary table on disk, over
# VARCHAR they keep it in memory (a GROUP BY on a 1M-row table's status column: 3.4 s as TEXT,
# 1.2 s as VARCHAR). At 4 bytes per character such a column (at most 252 bytes) always stays in
# the row, so the choice is bounded by INLINE_ROW_BYTES.
SHORT_TEXT_CHARS = 63
# Bytes of a row InnoDB must hold in its page, at most, once short text is VARCHAR: InnoDB refuses
# a table whose widest possible row passes about half a 16 KiB page (8126 bytes), and the rest of
# a row (headers, the NULL bitmap) needs room too.
INLINE_ROW_BYTES = 6_000
# What a column InnoDB may move off the page (TEXT, BLOB, a VARCHAR above 255 bytes) counts in
# that check (MariaDB 10.11 refuses 400 TEXT columns: 8126 / 400 is about 20).
_OFF_PAGE_BYTES = 20
_FIXED = {"boolean": "BOOLEAN", "integer": "BIGINT", "float": "DOUBLE", "date": "DATE"}
# Bytes an index entry takes for each fixed-width kind (for the 3072-byte key limit).
_KEY_BYTES = {"boolean": 1, "integer": 8, "float": 8, "date": 3, "timestamp": 8}


@dataclass(slots=True)
class ColumnStats:
    """What the data says about one column, gathered before its table is created."""

    max_chars: int = 0  # text: longest value in characters
    max_bytes: int = 0  # text/blob: longest value in bytes
    non_finite: int = 0  # float: NaN/Infinity values, which MySQL cannot store
    fraction_digits: int = 0  # timestamp: most fractional-second digits a value needs

    def update(self, array: pa.Array, kind: str) -> None:
        if kind == "text":
            self.max_chars = max(self.max_chars, _max(pc.utf8_length(array)))
            self.max_bytes = max(self.max_bytes, _max(pc.binary_length(array)))
        elif kind == "blob":
            self.max_bytes = max(self.max_bytes, _max(pc.binary_length(array)))
        elif kind == "float":
            finite = pc.is_finite(array)
            self.non_finite += int(pc.sum(pc.invert(finite)).as_py() or 0)
        elif kind == "timestamp" and self.fraction_digits < MOST_FRACTION_DIGITS:
            # DATETIME writes out every declared digit when a value becomes text (_common.timestamps)
            self.fraction_digits = max(self.fraction_digits, fraction_digits(array))


def _max(lengths: pa.Array) -> int:
    value = pc.max(lengths).as_py()
    return int(value or 0)


@dataclass(frozen=True, slots=True)
class Physical:
    """The column type a logical type becomes, and what that choice costs."""

    sql: str
    indexable: bool  # may be part of a key
    key_bytes: int  # bytes per index entry (for the key length limit)
    note: str | None = None  # why a value or the column changed, for the load report


def physical_type(column_type: ColumnType, stats: ColumnStats, *, keyed: bool,
                  short_text: bool = False) -> Physical:
    """``short_text``: a text column :func:`short_text_columns` chose for VARCHAR."""
    kind = column_type.kind
    if kind in _FIXED:
        return Physical(_FIXED[kind], True, _KEY_BYTES[kind])
    if kind == "timestamp":
        digits = stats.fraction_digits
        return Physical(f"DATETIME({digits})" if digits else "DATETIME", True, _KEY_BYTES[kind])
    if kind == "decimal":
        return _decimal(column_type)
    if kind == "text":
        if keyed and stats.max_chars * BYTES_PER_CHAR <= MAX_KEY_BYTES:
            length = stats.max_chars or EMPTY_KEY_LENGTH
            return Physical(f"VARCHAR({length})", True, length * BYTES_PER_CHAR)
        if short_text and stats.max_chars <= SHORT_TEXT_CHARS:
            length = max(stats.max_chars, 1)
            return Physical(f"VARCHAR({length})", True, length * BYTES_PER_CHAR)
        return Physical(_text_type(stats.max_bytes), False, 0)
    if kind == "blob":
        if keyed and stats.max_bytes <= MAX_KEY_BYTES:
            length = stats.max_bytes or EMPTY_KEY_LENGTH
            return Physical(f"VARBINARY({length})", True, length)
        return Physical("LONGBLOB", False, 0)
    raise ValueError(f"no MySQL type for logical type {column_type}")


def short_text_columns(types: list[ColumnType], stats: list[ColumnStats],
                       keyed: list[bool]) -> set[int]:
    """The positions of a table's text columns outside keys that become VARCHAR: those whose
    longest value has at most SHORT_TEXT_CHARS characters, shortest first, as long as the widest
    row InnoDB could have to hold in its page stays within INLINE_ROW_BYTES."""
    inline = 0
    candidates: list[tuple[int, int]] = []
    for index, (column_type, column_stats, is_keyed) in enumerate(
            zip(types, stats, keyed, strict=True)):
        if (column_type.kind == "text" and not is_keyed
                and column_stats.max_chars <= SHORT_TEXT_CHARS):
            candidates.append((max(column_stats.max_chars, 1), index))
        # every candidate counted as the TEXT it would otherwise be
        inline += _inline_bytes(physical_type(column_type, column_stats, keyed=is_keyed))
    chosen: set[int] = set()
    for length, index in sorted(candidates):
        grown = inline - _OFF_PAGE_BYTES + length * BYTES_PER_CHAR + 1
        if grown > INLINE_ROW_BYTES:
            break
        inline = grown
        chosen.add(index)
    return chosen


def _inline_bytes(physical: Physical) -> int:
    """The most bytes a column of this type takes in the row InnoDB keeps in its page."""
    if not physical.indexable:  # TEXT, LONGBLOB
        return _OFF_PAGE_BYTES
    if physical.sql.startswith(("VARCHAR", "VARBINARY")):
        # a length byte or two; above 255 bytes InnoDB may move the value off the page
        return physical.key_bytes + 2 if physical.key_bytes <= 255 else _OFF_PAGE_BYTES
    return physical.key_bytes  # fixed width


def _text_type(max_bytes: int) -> str:
    for limit, name in _TEXT_SIZES:
        if max_bytes <= limit:
            return name
    return "LONGTEXT"


def _decimal(column_type: ColumnType) -> Physical:
    precision = column_type.precision or 18
    scale = column_type.scale or 0
    if scale > MAX_DECIMAL_SCALE or precision > MAX_DECIMAL_PRECISION:
        return Physical("DOUBLE", True, 8, note=(
            f"decimal({precision},{scale}) exceeds MySQL's DECIMAL limits (precision 65, scale "
            f"30); column loaded as DOUBLE, values rounded to about 16 significant digits"))
    # DECIMAL stores 9 digits in 4 bytes, on each side of the point.
    size = 4 * (-(-(precision - scale) // 9) + -(-scale // 9))
    return Physical(f"DECIMAL({precision},{scale})", True, size)


# -- values as SQL literals ------------------------------------------------------------------

def _quoted(strings: pa.Array) -> pa.Array:
    # The loading session runs with NO_BACKSLASH_ESCAPES, so a quote is the only character a
    # string literal needs escaped; every other byte (backslash, NUL, newline) stands for itself.
    return pc.binary_join_element_wise("'", pc.replace_substring(strings, "'", "''"), "'", "")


def literals(array: pa.Array, kind: str) -> pa.Array:
    """One column of Arrow values as SQL literal text, NULL included (never a null entry)."""
    if kind == "integer" or kind == "decimal":
        text = pc.cast(array, pa.string())
    elif kind == "float":
        # NaN/Infinity have no MySQL value; they load as NULL and the load report counts them.
        text = pc.cast(pc.if_else(pc.is_finite(array), array, None), pa.string())
    elif kind == "boolean":
        text = pc.if_else(array, "TRUE", "FALSE")
    elif kind == "text":
        text = _quoted(array)
    elif kind in ("date", "timestamp"):
        text = _quoted(pc.cast(array, pa.string()))
    elif kind == "blob":
        text = pa.array([None if v is None else f"X'{v.hex()}'" for v in array.to_pylist()],
                        pa.string())
    else:
        raise ValueError(f"no literal form for logical type {kind!r}")
    return pc.fill_null(text, "NULL")


def row_literals(batch: pa.RecordBatch, kinds: list[str]) -> list[str]:
    """Each row of ``batch`` as ``(v1,v2,...)`` text for a multi-row INSERT."""
    columns = [literals(batch.column(i), kind) for i, kind in enumerate(kinds)]
    joined = pc.binary_join_element_wise(*columns, ",") if len(columns) > 1 else columns[0]
    return pc.binary_join_element_wise("(", joined, ")", "").to_pylist()


# -- physical types back to logical ---------------------------------------------------------

_INTEGERS = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year", "bit"}
_FLOATS = {"float", "double", "real", "double precision"}
_BLOBS = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}


def logical_type(data_type: str, column_type: str, precision: int | None,
                 scale: int | None) -> ColumnType:
    """The logical type of a column as information_schema describes it."""
    data_type = data_type.lower()
    if data_type == "tinyint" and column_type.lower().startswith("tinyint(1)"):
        return ColumnType("boolean")  # BOOLEAN is stored as TINYINT(1)
    if data_type in _INTEGERS:
        return ColumnType("integer")
    if data_type in ("decimal", "numeric"):
        return ColumnType("decimal", precision, scale or 0)
    if data_type in _FLOATS:
        return ColumnType("float")
    if data_type in _BLOBS:
        return ColumnType("blob")
    if data_type == "date":
        return ColumnType("date")
    if data_type in ("datetime", "timestamp"):
        return ColumnType("timestamp")
    return ColumnType("text")  # char, varchar, *text, enum, set, json, time, ...
