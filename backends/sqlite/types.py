"""Decide the logical type of every column of a SQLite database.

SQLite stores each *value* with its own storage class; the declared column type is only a hint
(an "affinity"). A faithful copy into a statically typed engine therefore needs both: the declared
type says what the author meant, one aggregate scan per table says what is actually stored. When
the two disagree the stored values win, and every value that cannot keep its natural form is
recorded as a :class:`~polysql.core.schema.Coercion` -- no row is ever dropped.
:mod:`polysql.backends.sqlite.introspect` applies this to every table of a database.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from polysql.core.schema import Coercion, ColumnType

MAX_DECIMAL_PRECISION = 38
# Undeclared precision: 18 digits fit a 64-bit integer in every target engine.
DEFAULT_DECIMAL_PRECISION = 18


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# -- declared types --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Declared:
    """What a declared column type asks for: a family and, for decimals, precision/scale."""

    family: str | None  # a TypeKind, or None when only the stored values can tell
    precision: int | None = None
    scale: int | None = None


_PRECISION_SCALE = re.compile(r"\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)")


def parse_declared(declared: str) -> Declared:
    """Read a declared type the way SQLite's affinity rules do, plus the names SQLite has no
    affinity for but authors use with a clear meaning (BOOLEAN, DATE, DATETIME, DECIMAL)."""
    text = declared.upper()
    if not text.strip():
        return Declared(None)
    if "BOOL" in text:
        return Declared("boolean")
    if "TIMESTAMP" in text or "DATETIME" in text:
        return Declared("timestamp")
    if "DATE" in text:
        return Declared("date")
    # The remaining checks follow SQLite's affinity order (INT first, then text, blob, real).
    if "INT" in text:
        return Declared("integer")
    if any(word in text for word in ("CHAR", "CLOB", "TEXT")):
        return Declared("text")
    if "BLOB" in text:
        return Declared("blob")
    if any(word in text for word in ("REAL", "FLOA", "DOUB")):
        return Declared("float")
    if "DEC" in text or "NUMERIC" in text:
        match = _PRECISION_SCALE.search(text)
        if match:
            return Declared("decimal", int(match.group(1)), int(match.group(2) or 0))
        return Declared("decimal")
    return Declared(None)


# -- stored values ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Counts and measures of one column's stored values, from one aggregate scan."""

    integers: int = 0
    reals: int = 0
    texts: int = 0
    blobs: int = 0
    bool_like: int = 0  # integers 0/1 and texts 'true'/'false' (any case)
    dates: int = 0  # texts that are valid ISO dates YYYY-MM-DD
    datetimes: int = 0  # texts that are valid ISO date-times YYYY-MM-DD[ T]HH:MM[:SS[.f]]
    int_digits: int = 0  # most digits before the decimal point among numbers
    # most significant fractional digits among numbers (as SQLite prints them); under a declared
    # scale only values with digits beyond it are measured, the rest count 0
    frac_digits: int = 0

    @property
    def non_null(self) -> int:
        return self.integers + self.reals + self.texts + self.blobs

    @property
    def numbers(self) -> int:
        return self.integers + self.reals


_DIGIT = "[0-9]"
_DATE_GLOB = f"{_DIGIT * 4}-{_DIGIT * 2}-{_DIGIT * 2}"


def _lazy(*conditions: str) -> str:
    """1 if every condition holds, else 0 -- testing them in order and stopping at the first
    that fails. (SQLite evaluates both sides of AND outside WHERE; CASE stops early, which keeps
    date parsing off values that are not even text.)"""
    expression = "1"
    for condition in reversed(conditions):
        expression = f"CASE WHEN {condition} THEN {expression} ELSE 0 END"
    return expression


# Families whose values are numbers or bytes when they fit: date measures only matter for them
# when text turns up, which the first pass tells, so they are measured in a second pass if at all.
_DATES_ONLY_FOR_TEXT = frozenset({"integer", "float", "decimal", "blob", "boolean"})


def _valid_day(col: str) -> str:
    """The first ten characters (already known to look like YYYY-MM-DD) are a real day. A day
    of month up to 28 in months 01-12 always is; only the rest pay for date(), which normalises
    Feb 30 to Mar 2, so equality proves validity."""
    return (f"substr({col}, 1, 4) >= '0001' AND CASE WHEN substr({col}, 6, 2) BETWEEN '01' AND "
            f"'12' AND substr({col}, 9, 2) BETWEEN '01' AND '28' THEN 1 ELSE "
            f"date(substr({col}, 1, 10), '+0 days') = substr({col}, 1, 10) END")


def _date_expressions(col: str) -> list[str]:
    """Aggregate SQL counting valid ISO dates and valid ISO date-times among the texts."""
    minutes = f"{_DATE_GLOB}[ T][0-2][0-9]:[0-5][0-9]"
    seconds = f"{minutes}:[0-5][0-9]"
    is_date = _lazy(f"typeof({col}) = 'text'", f"length({col}) = 10",
                    f"{col} GLOB '{_DATE_GLOB}'", _valid_day(col))
    # YYYY-MM-DD HH:MM, YYYY-MM-DD HH:MM:SS or YYYY-MM-DD HH:MM:SS.fff... (digits only)
    shape = (f"CASE length({col}) WHEN 19 THEN {col} GLOB '{seconds}' "
             f"WHEN 16 THEN {col} GLOB '{minutes}' "
             f"ELSE length({col}) > 20 AND {col} GLOB '{seconds}.*' "
             f"AND NOT substr({col}, 21) GLOB '*[^0-9]*' END")
    is_datetime = _lazy(f"typeof({col}) = 'text'", f"length({col}) >= 16", shape,
                        f"substr({col}, 12, 2) < '24'", _valid_day(col))
    return [f"sum({is_date})", f"sum({is_datetime})"]


_CLASSES = ("integer", "real", "text", "blob")
_SUM_BITS = 62  # sum() is a signed 64-bit integer; keep clear of its overflow error


def _class_layout(rows: int) -> tuple[int, int]:
    """(bits per count, counts per sum) to pack the storage-class counts of a table of
    ``rows`` rows: typeof() per row and column is the main cost of the scan, so several counts
    share one sum, each in its own bit field wide enough for any count up to ``rows``.
    (typeof() is also what lets SQLite skip loading large values; count(col) would load them.)"""
    bits = max(rows.bit_length(), 1)
    return bits, max(1, min(len(_CLASSES), _SUM_BITS // bits))


def _class_expressions(col: str, rows: int) -> list[str]:
    """The packed sums counting integer, real, text and blob values (see _class_layout)."""
    bits, per_sum = _class_layout(rows)
    sums = []
    for start in range(0, len(_CLASSES), per_sum):
        weights = " ".join(f"WHEN '{name}' THEN {1 << (bits * i)}"
                           for i, name in enumerate(_CLASSES[start:start + per_sum]))
        sums.append(f"sum(CASE typeof({col}) {weights} ELSE 0 END)")
    return sums


def _class_counts(packed: list[Any], rows: int) -> tuple[int, int, int, int]:
    """(integers, reals, texts, blobs) from what _class_expressions measured."""
    bits, per_sum = _class_layout(rows)
    integers, reals, texts, blobs = (
        ((packed[index // per_sum] or 0) >> (bits * (index % per_sum))) & ((1 << bits) - 1)
        for index in range(len(_CLASSES)))
    return integers, reals, texts, blobs


def fraction_digits_expression(col: str, declared: Declared) -> str:
    """SQL for the significant fractional digits of the real ``col`` as SQLite prints it (15
    significant digits, so binary noise such as 0.30000000000000004 does not count): '12.50' ->
    1, '1.5e-07' -> 8, '1.0e+20' -> 0. Under a declared scale only digits beyond it change the
    decision (the scale is widened to them): a real equal to itself rounded to the scale has
    none, so it counts 0 and skips the text measure."""
    as_text = f"CAST({col} AS TEXT)"
    point, exp = f"instr({as_text}, '.')", f"instr({as_text}, 'e')"
    frac = (f"CASE WHEN {exp} = 0 THEN length(rtrim(substr({as_text}, {point} + 1), '0')) "
            f"ELSE max(0, length(rtrim(substr({as_text}, {point} + 1, {exp} - {point} - 1), '0')) "
            f"- CAST(substr({as_text}, {exp} + 1) AS INTEGER)) END")
    if declared.scale is not None:
        frac = f"CASE WHEN round({col}, {declared.scale}) = {col} THEN 0 ELSE {frac} END"
    return frac


def _scan_expressions(col: str, declared: Declared, *, dates: bool, rows: int) -> list[str]:
    """Aggregate SQL for one column: storage-class counts (packed, see _class_expressions),
    bool-like, dates, datetimes,
    largest and smallest number (as SQLite prints them), most fractional digits.

    Measures the declared family can never use are a constant, so a large TEXT column is not run
    through date parsing and a DATE column is not measured for digits. ``dates=False`` leaves
    the date measures out too (0), for a first pass over a numeric or blob column.
    """
    family = declared.family
    is_number = f"typeof({col}) IN ('integer', 'real')"
    frac = fraction_digits_expression(col, declared)
    wants_dates = family != "text" and dates
    wants_digits = family == "decimal"
    return [
        *_class_expressions(col, rows),
        f"sum(CASE typeof({col}) WHEN 'integer' THEN {col} IN (0, 1) "
        f"WHEN 'text' THEN lower({col}) IN ('true', 'false') ELSE 0 END)"
        if family == "boolean" else "0",
        *(_date_expressions(col) if wants_dates else ["0", "0"]),
        f"CAST(max(CASE WHEN {is_number} THEN {col} END) AS TEXT)" if wants_digits else "NULL",
        f"CAST(min(CASE WHEN {is_number} THEN {col} END) AS TEXT)" if wants_digits else "NULL",
        f"max(CASE WHEN typeof({col}) = 'real' THEN {frac} END)" if wants_digits else "0",
    ]


def digits_before_point(printed: str | None) -> int:
    """Digits before the decimal point of a number as SQLite prints it ('100.0' -> 3)."""
    if printed is None:
        return 0
    number = Decimal(printed)
    return 0 if number == 0 else max(0, number.adjusted() + 1)


def _aggregate(conn: sqlite3.Connection, table: str, expressions: list[str]) -> tuple[Any, ...]:
    return tuple(conn.execute(f"SELECT {', '.join(expressions)} FROM {quote_ident(table)}")
                 .fetchone())


def scan_table(conn: sqlite3.Connection, table: str, columns: list[tuple[str, str]], *,
               rows: int | None = None) -> tuple[int, list[ColumnStats]]:
    """Row count and per-column stats of ``table`` (``columns``: name, declared type;
    ``rows``: the row count, when the caller has counted already).

    One pass measures everything except the date shapes of numeric and blob columns; a second
    pass over just those columns runs only when some of them turn out to hold text.
    """
    if rows is None:
        rows = int(_aggregate(conn, table, ["count(*)"])[0])
    declared = [parse_declared(d) for _, d in columns]
    per_column = [_scan_expressions(quote_ident(name), dec, rows=rows,
                                    dates=dec.family not in _DATES_ONLY_FOR_TEXT)
                  for (name, _), dec in zip(columns, declared, strict=True)]
    row = _aggregate(conn, table, [e for exprs in per_column for e in exprs]) if columns else ()
    width = len(per_column[0]) if per_column else 0
    measured = [list(row[i * width: (i + 1) * width]) for i in range(len(columns))]
    classes = [_class_counts(values[:width - 6], rows) for values in measured]
    late = [i for i, dec in enumerate(declared)
            if dec.family in _DATES_ONLY_FOR_TEXT and classes[i][2]]
    if late:
        dates = _aggregate(conn, table, [e for i in late
                                         for e in _date_expressions(quote_ident(columns[i][0]))])
        for n, i in enumerate(late):
            measured[i][width - 5: width - 3] = dates[2 * n: 2 * n + 2]
    stats = []
    for (integers, reals, texts, blobs), values in zip(classes, measured, strict=True):
        bool_like, dates_, datetimes, largest, smallest, frac = values[width - 6:]
        stats.append(ColumnStats(
            integers=integers, reals=reals, texts=texts, blobs=blobs,
            bool_like=bool_like or 0, dates=dates_ or 0, datetimes=datetimes or 0,
            int_digits=max(digits_before_point(largest), digits_before_point(smallest)), frac_digits=frac or 0))
    return rows, stats


# -- decision --------------------------------------------------------------------------------

@dataclass(slots=True)
class Decision:
    type: ColumnType
    coercions: list[Coercion]


class _Resolver:
    """Resolves one column; collects the coercions its choice implies."""

    def __init__(self, table: str, column: str, declared_text: str, stats: ColumnStats) -> None:
        self.table, self.column, self.declared_text, self.stats = table, column, declared_text, stats
        self.coercions: list[Coercion] = []

    def note(self, count: int, message: str) -> None:
        if count > 0:
            self.coercions.append(Coercion(self.table, self.column, message, count))

    def resolve(self) -> Decision:
        declared = parse_declared(self.declared_text)
        chosen = self._honour(declared) if self.stats.non_null else self._empty(declared)
        if chosen is None:
            chosen = self._from_values()
            if declared.family is not None and self.stats.non_null:
                self.note(self.stats.non_null - self._fitting(declared.family),
                          f"declared {self.declared_text!r} but these values do not fit it; "
                          f"column loaded as {chosen}")
        return Decision(chosen, self.coercions)

    def _fitting(self, family: str) -> int:
        s = self.stats
        return {"boolean": s.bool_like, "date": s.dates, "timestamp": s.dates + s.datetimes,
                "integer": s.integers, "float": s.numbers, "decimal": s.numbers,
                "text": s.texts, "blob": s.blobs}.get(family, 0)

    @staticmethod
    def _empty(declared: Declared) -> ColumnType:
        if declared.family is None:
            return ColumnType("text")
        if declared.family == "decimal":
            return ColumnType("decimal", declared.precision or DEFAULT_DECIMAL_PRECISION,
                              declared.scale or 0)
        return ColumnType(declared.family)  # type: ignore[arg-type]

    def _honour(self, declared: Declared) -> ColumnType | None:
        """The declared family if the stored values allow it, else None."""
        s = self.stats
        family = declared.family
        if family == "boolean" and s.bool_like == s.non_null:
            return ColumnType("boolean")
        if family == "date" and s.dates == s.non_null:
            return ColumnType("date")
        if family in ("date", "timestamp") and s.dates + s.datetimes == s.non_null:
            if family == "date":
                self.note(s.datetimes, "declared DATE but these values carry a time of day; "
                                       "column loaded as timestamp")
            return ColumnType("timestamp")
        if family == "integer" and s.numbers == s.non_null:
            if s.reals:
                self.note(s.reals, "non-integer values in an INTEGER column; column loaded as float")
                return ColumnType("float")
            return ColumnType("integer")
        if family == "float" and s.numbers == s.non_null:
            return ColumnType("float")
        if family == "decimal" and s.numbers == s.non_null:
            return self._decimal(declared)
        if family == "text":
            self.note(s.non_null - s.texts, "non-text values rendered as text")
            return ColumnType("text")
        if family == "blob" and s.blobs == s.non_null:
            return ColumnType("blob")
        return None

    def _decimal(self, declared: Declared) -> ColumnType:
        int_digits, frac_digits = self.stats.int_digits, self.stats.frac_digits
        scale = frac_digits if declared.scale is None else max(declared.scale, frac_digits)
        if declared.scale is not None and frac_digits > declared.scale:
            self.note(self.stats.reals, f"values have up to {frac_digits} fractional digits, more "
                                        f"than the declared scale {declared.scale}; scale widened")
        precision = max(declared.precision or DEFAULT_DECIMAL_PRECISION, int_digits + scale)
        if precision > MAX_DECIMAL_PRECISION:
            self.note(self.stats.numbers, f"values need {int_digits + scale} decimal digits, more "
                                          f"than {MAX_DECIMAL_PRECISION}; column loaded as float")
            return ColumnType("float")
        return ColumnType("decimal", precision, scale)

    def _from_values(self) -> ColumnType:
        """The type the stored values support when the declaration gives no usable answer."""
        s = self.stats
        if s.blobs:
            self.note(s.non_null - s.blobs, "non-blob values stored as their UTF-8 text bytes")
            return ColumnType("blob")
        if s.texts == 0:
            return ColumnType("integer" if s.reals == 0 else "float")
        if s.numbers == 0 and s.dates == s.texts:
            return ColumnType("date")
        if s.numbers == 0 and s.dates + s.datetimes == s.texts:
            return ColumnType("timestamp")
        self.note(s.numbers, "numbers mixed with text rendered as text")
        return ColumnType("text")


def resolve_column(table: str, column: str, declared: str, stats: ColumnStats) -> Decision:
    """The logical type of one column and the coercions that choice implies."""
    return _Resolver(table, column, declared, stats).resolve()


def list_tables(conn: sqlite3.Connection) -> list[str]:
    """The database's user tables, in creation order."""
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
        "ESCAPE '\\' ORDER BY rowid").fetchall()
    return [r[0] for r in rows]
