"""The type scan of one SQLite table from a single columnar read, when the values allow it.

:func:`polysql.backends.sqlite.types.scan_table` measures a table with SQL aggregates; the date
shapes and decimal digits in them cost SQLite a string function per value. Here the same table is
read once into Arrow through ADBC's SQLite driver (C, no Python rows), together with each value's
storage class, and the measures are taken with Arrow and NumPy kernels.

The answer is exactly the aggregate scan's or nothing:

* every column must hold one storage class (plus NULL), seen in the class codes read alongside,
  and arrive as the Arrow type of that class -- so the driver converted nothing;
* text must be valid UTF-8 without NUL characters (SQLite's string functions stop at a NUL);
* fractional digits of reals that are not already at the declared scale are measured by SQLite
  itself, over just those distinct values, with the aggregate scan's own expression; the largest
  and smallest number are printed by SQLite too.

Any other column is answered None, for the caller to measure with the aggregate scan; a table
the driver cannot read at all is answered None as a whole.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from polysql.backends.sqlite.introspect_parts import read_whole_table
from polysql.backends.sqlite.types import (
    ColumnStats,
    Declared,
    digits_before_point,
    fraction_digits_expression,
    parse_declared,
    quote_ident,
)
from polysql.core.arrow_buffers import primitive_values, valid_mask

# Storage classes as the first letter of typeof() -- integer, real, text, blob, null -- seven
# bits per column, nine columns packed into one integer per row: one function call per value.
_CODE_BITS = 7
_COLUMNS_PER_CODE = 63 // _CODE_BITS
_INTEGER, _REAL, _TEXT, _BLOB = 1, 2, 3, 4
_CLASS_OF_LETTER = np.zeros(1 << _CODE_BITS, np.int64)
for _letter, _class in (("i", _INTEGER), ("r", _REAL), ("t", _TEXT), ("b", _BLOB)):
    _CLASS_OF_LETTER[ord(_letter)] = _class
_EXACT_FLOAT_INT = 2**53
# Declared families whose integers and reals are read together as doubles: NUMERIC affinity
# keeps 12 as an integer beside 12.5, and an undeclared column keeps whatever it was given. (The
# driver types a column by its first values and refuses a real after integers.)
_AS_DOUBLES = frozenset({"decimal", None})
_BATCH_ROWS = 65_536
# By table lookup, cheaper than arithmetic over every row: the days of month 0-99 in a common
# year (0: no such month), and whether each year 0-9999 is a leap year.
_DAYS_IN_MONTH = np.zeros(100, np.int16)
_DAYS_IN_MONTH[1:13] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
_YEARS = np.arange(10_000)
_LEAP_YEAR = (_YEARS % 4 == 0) & ((_YEARS % 100 != 0) | (_YEARS % 400 == 0))


@dataclass(frozen=True, slots=True)
class ColumnarScan:
    """A table measured from one columnar read, and the values that read brought."""

    rows: int
    # None: a column this read cannot measure exactly (mixed classes, text that is not UTF-8...);
    # the caller measures it with the aggregate scan, and its values here are not to be used
    stats: list[ColumnStats | None]
    values: pa.Table  # the stored values, one column per table column (see _select_expression)


class _NotExact(Exception):
    """A value this scan cannot measure exactly as the aggregate scan would."""


def _select_expression(name: str, declared: Declared, *, as_doubles: bool) -> str:
    col = quote_ident(name)
    if as_doubles and declared.family not in ("text", "blob", "date", "timestamp"):
        return f"CASE typeof({col}) WHEN 'integer' THEN CAST({col} AS REAL) ELSE {col} END"
    return col


def _class_code_columns(columns: list[str]) -> list[str]:
    """SELECT expressions packing every column's storage class, _COLUMNS_PER_CODE per integer
    (each shift parenthesised: SQLite's << and | share one precedence level)."""
    expressions = []
    for start in range(0, len(columns), _COLUMNS_PER_CODE):
        parts = [f"(unicode(typeof({quote_ident(name)})) << {offset * _CODE_BITS})"
                 for offset, name in enumerate(columns[start:start + _COLUMNS_PER_CODE])]
        expressions.append(" | ".join(parts))
    return expressions


def _column_codes(codes: list[np.ndarray], index: int) -> np.ndarray:
    """The storage-class code of every row of ``index``'s column."""
    packed = codes[index // _COLUMNS_PER_CODE]
    letters = (packed >> ((index % _COLUMNS_PER_CODE) * _CODE_BITS)) & ((1 << _CODE_BITS) - 1)
    return _CLASS_OF_LETTER[letters]


def _is_digit(values: np.ndarray) -> np.ndarray:
    return (values >= ord("0")) & (values <= ord("9"))


def _real_days(head: np.ndarray) -> np.ndarray:
    """Per row of ten bytes shaped YYYY-MM-DD in ASCII digits: whether they name a real day
    (year 0001 or later, proleptic Gregorian, as SQLite's date() reads them)."""
    # int16 holds every value below: a year is at most 9999
    digits = head.astype(np.int16) - ord("0")
    year = digits[:, 0] * 1000 + digits[:, 1] * 100 + digits[:, 2] * 10 + digits[:, 3]
    month = digits[:, 5] * 10 + digits[:, 6]
    day = digits[:, 8] * 10 + digits[:, 9]
    longest = _DAYS_IN_MONTH[month] + (_LEAP_YEAR[year] & (month == 2))
    return (year >= 1) & (day >= 1) & (day <= longest)


class _StringBytes:
    """Bytes at fixed positions of some strings of one array, one row per string.

    When the strings all have one length and lie back to back (a column of dates or of
    timestamps written alike, the common case), they are a matrix over the data buffer and
    every read is a slice of it; otherwise each read gathers the bytes string by string."""

    def __init__(self, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> None:
        self.data, self.starts = data, starts
        self.matrix: np.ndarray | None = None
        if starts.size and (lengths == lengths[0]).all():
            width = int(lengths[0])
            if (np.diff(starts) == width).all():
                first = int(starts[0])
                self.matrix = data[first:first + width * starts.size].reshape(-1, width)

    def at(self, which: np.ndarray | None, first: int, stop: int) -> np.ndarray:
        """Bytes ``first`` to ``stop`` (exclusive) of the strings numbered ``which`` (None:
        all), each at least ``stop`` bytes long."""
        if self.matrix is not None and stop <= self.matrix.shape[1]:  # else: no string is asked
            return self.matrix[:, first:stop] if which is None else self.matrix[which, first:stop]
        starts = self.starts if which is None else self.starts[which]
        return self.data[starts[:, None] + np.arange(first, stop)]


def _chunk_date_counts(chunk: pa.Array) -> tuple[int, int]:
    """:func:`_date_counts` of one string array, read from its buffers.

    The shapes the aggregate scan's GLOB patterns accept are ASCII, so a string's bytes are its
    characters wherever a shape can match, and a non-ASCII byte fails every test below as a
    non-ASCII character fails the pattern."""
    width = np.int64 if chunk.type == pa.large_string() else np.int32
    _, offsets_buffer, data_buffer = chunk.buffers()
    if not len(chunk) or data_buffer is None:
        return 0, 0
    offsets = np.frombuffer(offsets_buffer, width)[chunk.offset:chunk.offset + len(chunk) + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(data_buffer, np.uint8)
    lengths = np.diff(offsets)
    rows = np.flatnonzero(valid_mask(chunk) & (lengths >= 10))
    starts, lengths = offsets[rows], lengths[rows]
    strings = _StringBytes(data, starts, lengths)
    head = strings.at(None, 0, 10)
    day_like = (_is_digit(head[:, [0, 1, 2, 3, 5, 6, 8, 9]]).all(axis=1)
                & (head[:, 4] == ord("-")) & (head[:, 7] == ord("-")))
    day_like[day_like] = _real_days(head[day_like])
    dates = int(np.count_nonzero(day_like & (lengths == 10)))
    # YYYY-MM-DD HH:MM, YYYY-MM-DD HH:MM:SS or YYYY-MM-DD HH:MM:SS.fff... (digits only)
    stamp = np.flatnonzero(day_like & ((lengths == 16) | (lengths == 19) | (lengths >= 21)))
    starts, lengths = starts[stamp], lengths[stamp]
    clock = strings.at(stamp, 10, 16)
    hours = (clock[:, 1].astype(np.int64) - ord("0")) * 10 + clock[:, 2] - ord("0")
    fits = (((clock[:, 0] == ord(" ")) | (clock[:, 0] == ord("T")))
            & _is_digit(clock[:, [1, 2, 4, 5]]).all(axis=1) & (clock[:, 1] <= ord("2"))
            & (hours < 24) & (clock[:, 3] == ord(":")) & (clock[:, 4] <= ord("5")))
    with_seconds = np.flatnonzero(lengths >= 19)
    seconds = strings.at(stamp[with_seconds], 16, 19)
    fits[with_seconds] &= ((seconds[:, 0] == ord(":")) & _is_digit(seconds[:, 1:]).all(axis=1)
                           & (seconds[:, 1] <= ord("5")))
    with_fraction = np.flatnonzero(lengths >= 21)
    if with_fraction.size:
        point = strings.at(stamp[with_fraction], 19, 20)[:, 0] == ord(".")
        # Non-digits counted by a running total: none between byte 20 and the string's end.
        others = np.concatenate([[0], np.cumsum(~_is_digit(data), dtype=np.int64)])
        ends = starts[with_fraction] + lengths[with_fraction]
        fits[with_fraction] &= point & (others[ends] == others[starts[with_fraction] + 20])
    return dates, int(np.count_nonzero(fits))


def _date_counts(text: pa.ChunkedArray) -> tuple[int, int]:
    """(valid ISO dates, valid ISO date-times) among the non-null texts, as the aggregate scan
    counts them."""
    counts = [_chunk_date_counts(chunk) for chunk in text.chunks]
    return sum(d for d, _ in counts), sum(t for _, t in counts)


def _count(mask: pa.Array | pa.ChunkedArray) -> int:
    return int(pc.sum(mask).as_py() or 0)


def _printed_digits(probe: sqlite3.Connection, number: int | float | None) -> int:
    """Digits before the point of ``number`` as SQLite prints it (the aggregate scan's rule)."""
    if number is None:
        return 0
    (printed,) = probe.execute("SELECT CAST(? AS TEXT)", (number,)).fetchone()
    return digits_before_point(printed)


def _fraction_digits(probe: sqlite3.Connection, reals: np.ndarray, declared: Declared) -> int:
    """Most fractional digits among the reals, as the aggregate scan measures them."""
    values = reals
    if declared.scale is not None:
        # Reals whose NumPy rounding to the scale gives them back are the nearest double to a
        # decimal of at most that scale, which SQLite's round() gives back too: they count 0.
        # The rest (usually none) go to SQLite.
        with np.errstate(over="ignore", invalid="ignore"):
            factor = 10.0 ** declared.scale
            at_scale = np.rint(values * factor) / factor == values
        values = values[~at_scale]
    if len(values) == 0:
        return 0
    distinct = np.unique(values)
    probe.execute("CREATE TEMP TABLE IF NOT EXISTS polysql_reals (v REAL)")
    probe.execute("DELETE FROM polysql_reals")
    probe.executemany("INSERT INTO polysql_reals VALUES (?)", ((float(v),) for v in distinct))
    expression = fraction_digits_expression('"v"', declared)
    (most,) = probe.execute(f"SELECT max({expression}) FROM polysql_reals").fetchone()
    return int(most or 0)


def _text_stats(values: pa.ChunkedArray, family: str | None) -> dict[str, int]:
    if values.type not in (pa.string(), pa.large_string()):
        raise _NotExact("text converted by the driver")
    try:
        values.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise _NotExact("text that is not UTF-8") from exc
    if pc.any(pc.match_substring(values, "\x00")).as_py():
        raise _NotExact("text with a NUL character")
    measured = {"texts": len(values) - values.null_count}
    if family != "text":
        measured["dates"], measured["datetimes"] = _date_counts(values)
    if family == "boolean":
        # ASCII case only, as SQLite's lower() folds it
        measured["bool_like"] = _count(pc.match_substring_regex(pc.ascii_lower(values),
                                                                "^(?:true|false)$"))
    return measured


def _beyond_exact_doubles(values: pa.ChunkedArray, integer_rows: np.ndarray) -> bool:
    """Whether an integer read as a double may have been rounded: every integer up to 2^53
    becomes exactly itself, and anything larger becomes a double of at least 2^53 (2^53 + 1
    rounds to 2^53, so 2^53 itself is doubted too)."""
    doubles = primitive_values(values, np.float64)  # NULL slots are never integer rows
    with np.errstate(invalid="ignore"):
        return bool(np.any(integer_rows & (np.abs(doubles) >= _EXACT_FLOAT_INT)))


def _number_stats(probe: sqlite3.Connection, values: pa.ChunkedArray, codes: np.ndarray,
                  family: str | None, declared: Declared) -> dict[str, int]:
    integer_rows, real_rows = codes == _INTEGER, codes == _REAL
    integers, reals = int(np.count_nonzero(integer_rows)), int(np.count_nonzero(real_rows))
    if values.type == pa.int64():
        if reals:
            raise _NotExact("reals read as integers")
    elif values.type != pa.float64():
        raise _NotExact("numbers converted by the driver")
    elif integers and _beyond_exact_doubles(values, integer_rows):
        raise _NotExact("an integer beyond 2^53 read as a double")
    measured = {"integers": integers, "reals": reals}
    if family == "boolean":
        numbers = primitive_values(values, np.int64 if values.type == pa.int64() else np.float64)
        measured["bool_like"] = int(np.count_nonzero(integer_rows & ((numbers == 0)
                                                                     | (numbers == 1))))
    if family == "decimal":
        # The largest and smallest, printed by SQLite as the integer or real each row holds.
        numbers = values.combine_chunks()
        extremes = [int(pc.index(numbers, pc.max(numbers)).as_py()),
                    int(pc.index(numbers, pc.min(numbers)).as_py())]
        printed = [numbers[i].as_py() for i in extremes]
        printed = [int(v) if codes[i] == _INTEGER else v for i, v in zip(extremes, printed,
                                                                           strict=True)]
        measured["int_digits"] = max(_printed_digits(probe, v) for v in printed)
        if reals:
            real_values = primitive_values(numbers, np.float64)[real_rows]
            measured["frac_digits"] = _fraction_digits(probe, real_values, declared)
    return measured


def _column_stats(probe: sqlite3.Connection, values: pa.ChunkedArray, codes: np.ndarray,
                  declared: Declared) -> ColumnStats:
    counts = np.bincount(codes, minlength=_BLOB + 1)
    numbers = int(counts[_INTEGER] + counts[_REAL])
    texts, blobs = int(counts[_TEXT]), int(counts[_BLOB])
    if sum(1 for n in (numbers, texts, blobs) if n) > 1:
        raise _NotExact("numbers, text and blobs mixed")
    family = declared.family
    if numbers:
        return ColumnStats(**_number_stats(probe, values, codes, family, declared))
    if texts:
        return ColumnStats(**_text_stats(values, family))
    if blobs:
        if values.type not in (pa.binary(), pa.large_binary()):
            raise _NotExact("blobs converted by the driver")
        return ColumnStats(blobs=blobs)
    return ColumnStats()


def _coded(declared: list[Declared], as_doubles: set[str | None]) -> list[int]:
    """The columns whose storage classes are read beside their values. An integer column read
    as it is can do without: the driver hands over an int64 column only when every value is an
    integer (it refuses anything else after integers), so its classes show in its validity."""
    return [index for index, dec in enumerate(declared)
            if dec.family != "integer" or dec.family in as_doubles]


@dataclass(frozen=True, slots=True)
class _Fetched:
    """One columnar read: the values, then the packed class codes of the ``coded`` columns."""

    table: pa.Table
    coded: list[int]


def _fetch(path: Path, table: str, names: list[str], declared: list[Declared], *,
           as_doubles: set[str | None], parts: int) -> _Fetched | None:
    coded = _coded(declared, as_doubles)
    select = ", ".join([*(_select_expression(n, d, as_doubles=d.family in as_doubles)
                          for n, d in zip(names, declared, strict=True)),
                        *_class_code_columns([names[i] for i in coded])])
    try:
        # NOT INDEXED: the table's own order, as the row reader reads it (see
        # introspect_arrow.complete_table)
        fetched = read_whole_table(path, table, select, parts=parts, batch_rows=_BATCH_ROWS)
    except Exception:  # noqa: BLE001 - no driver, or a driver failure (a real after integers...)
        return None
    return _Fetched(fetched, coded)


def _class_codes(fetched: pa.Table, width: int, coded: list[int]) -> list[np.ndarray | None] | None:
    """Per column, the storage-class code of every row; None for a column that needs its codes
    but came without (an uncoded column the driver did not read as integers). None as a whole
    when the packed codes are not integers."""
    packed = []
    packs = -(-len(coded) // _COLUMNS_PER_CODE)  # as _class_code_columns packs them
    for column in fetched.columns[width:width + packs]:
        if column.type not in (pa.int64(), pa.null()) or column.null_count:
            return None
        packed.append(primitive_values(column, np.int64) if column.type == pa.int64()
                      else np.zeros(len(column), np.int64))
    codes: list[np.ndarray | None] = [None] * width
    for position, index in enumerate(coded):
        codes[index] = _column_codes(packed, position)
    for index in set(range(width)) - set(coded):
        values = fetched.column(index)
        if values.type == pa.int64():
            codes[index] = np.where(valid_mask(values), _INTEGER, 0)
        elif values.type == pa.null():
            codes[index] = np.zeros(len(values), np.int64)
    return codes


def scan_table_columnar(path: Path, table: str, columns: list[tuple[str, str]], *,
                        parts: int = 1) -> ColumnarScan | None:
    """Row count and per-column stats of ``table`` in the SQLite file at ``path``
    (``columns``: name, declared type), each equal to the aggregate scan's or None where it could
    not be measured exactly this way; None when the table could not be read this way at all.
    ``parts``: rowid ranges read at once (see :mod:`.introspect_parts`)."""
    if not columns:
        return None
    names = [name for name, _ in columns]
    declared = [parse_declared(d) for _, d in columns]
    fetched = _fetch(path, table, names, declared, as_doubles=set(_AS_DOUBLES), parts=parts)
    if fetched is None:  # once more with every numeric family's integers read as doubles
        fetched = _fetch(path, table, names, declared,
                         as_doubles={"decimal", None, "integer", "float", "boolean"}, parts=parts)
    if fetched is None:
        return None
    values, coded = fetched.table, fetched.coded
    codes = _class_codes(values, len(names), coded)
    if codes is None:
        return None
    probe = sqlite3.connect(":memory:")
    stats: list[ColumnStats | None] = []
    try:
        for index, (dec, column_codes) in enumerate(zip(declared, codes, strict=True)):
            try:
                if column_codes is None:
                    raise _NotExact("an integer column that did not arrive as integers")
                stats.append(_column_stats(probe, values.column(index), column_codes, dec))
            except (_NotExact, pa.ArrowException):
                stats.append(None)
    finally:
        probe.close()
    return ColumnarScan(values.num_rows, stats, values.select(list(range(len(names)))))
