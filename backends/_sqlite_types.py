"""Decide the logical type of every column of a SQLite database.

SQLite stores each *value* with its own storage class; the declared column type is only a hint
(an "affinity"). A faithful copy into a statically typed engine therefore needs both: the declared
type says what the author meant, one aggregate scan per table says what is actually stored. When
the two disagree the stored values win, and every value that cannot keep its natural form is
recorded as a :class:`~polysql.schema.Coercion` -- no row is ever dropped.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from decimal import Decimal

from polysql.schema import Coercion, Column, ColumnType, ForeignKey, Table

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
    frac_digits: int = 0  # most significant fractional digits among numbers (as SQLite prints them)

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


def _scan_expressions(col: str, family: str | None) -> list[str]:
    """Aggregate SQL for one column: integers, reals, texts, blobs, bool-like, dates, datetimes,
    largest and smallest number (as SQLite prints them), most fractional digits.

    Measures the declared family can never use are a constant, so a large TEXT column is not run
    through date parsing and a DATE column is not measured for digits.
    """
    as_text = f"CAST({col} AS TEXT)"
    valid_day = (  # date(x, '+0 days') normalises Feb 30 to Mar 2, so equality proves validity
        f"substr({col}, 1, 4) >= '0001'",
        f"date(substr({col}, 1, 10), '+0 days') = substr({col}, 1, 10)")
    is_date = _lazy(f"typeof({col}) = 'text'", f"length({col}) = 10",
                    f"{col} GLOB '{_DATE_GLOB}'", *valid_day)
    is_datetime = _lazy(
        f"typeof({col}) = 'text'", f"length({col}) >= 16",
        f"{col} GLOB '{_DATE_GLOB}[ T][0-2][0-9]:[0-5][0-9]*'",
        f"substr({col}, 12, 2) < '24'",
        f"length({col}) = 16 OR (substr({col}, 17, 3) GLOB ':[0-5][0-9]' AND (length({col}) = 19 "
        f"OR (substr({col}, 20, 1) = '.' AND length({col}) > 20 "
        f"AND NOT substr({col}, 21) GLOB '*[^0-9]*')))",
        *valid_day)
    is_number = f"typeof({col}) IN ('integer', 'real')"
    # Fractional digits of a real as SQLite prints it (15 significant digits, so binary noise
    # such as 0.30000000000000004 does not count): '12.50' -> 1, '1.5e-07' -> 8, '1.0e+20' -> 0.
    point, exp = f"instr({as_text}, '.')", f"instr({as_text}, 'e')"
    frac = (f"CASE WHEN {exp} = 0 THEN length(rtrim(substr({as_text}, {point} + 1), '0')) "
            f"ELSE max(0, length(rtrim(substr({as_text}, {point} + 1, {exp} - {point} - 1), '0')) "
            f"- CAST(substr({as_text}, {exp} + 1) AS INTEGER)) END")
    wants_dates = family != "text"
    wants_digits = family == "decimal"
    return [
        f"sum(typeof({col}) = 'integer')",
        f"sum(typeof({col}) = 'real')",
        f"sum(typeof({col}) = 'text')",
        f"sum(typeof({col}) = 'blob')",
        f"sum(CASE typeof({col}) WHEN 'integer' THEN {col} IN (0, 1) "
        f"WHEN 'text' THEN lower({col}) IN ('true', 'false') ELSE 0 END)"
        if family == "boolean" else "0",
        f"sum({is_date})" if wants_dates else "0",
        f"sum({is_datetime})" if wants_dates else "0",
        f"CAST(max(CASE WHEN {is_number} THEN {col} END) AS TEXT)" if wants_digits else "NULL",
        f"CAST(min(CASE WHEN {is_number} THEN {col} END) AS TEXT)" if wants_digits else "NULL",
        f"max(CASE WHEN typeof({col}) = 'real' THEN {frac} END)" if wants_digits else "0",
    ]


def _digits(printed: str | None) -> int:
    """Digits before the decimal point of a number as SQLite prints it ('100.0' -> 3)."""
    if printed is None:
        return 0
    number = Decimal(printed)
    return 0 if number == 0 else max(0, number.adjusted() + 1)


def scan_table(conn: sqlite3.Connection, table: str,
               columns: list[tuple[str, str]]) -> tuple[int, list[ColumnStats]]:
    """Row count and per-column stats of ``table`` (``columns``: name, declared type) in one
    pass."""
    per_column = [_scan_expressions(quote_ident(name), parse_declared(declared).family)
                  for name, declared in columns]
    select = ", ".join(["count(*)"] + [expr for exprs in per_column for expr in exprs])
    row = conn.execute(f"SELECT {select} FROM {quote_ident(table)}").fetchone()
    width = len(per_column[0]) if per_column else 0
    stats = []
    for index in range(len(columns)):
        (integers, reals, texts, blobs, bool_like, dates, datetimes, largest, smallest,
         frac) = row[1 + index * width: 1 + (index + 1) * width]
        stats.append(ColumnStats(
            integers=integers or 0, reals=reals or 0, texts=texts or 0, blobs=blobs or 0,
            bool_like=bool_like or 0, dates=dates or 0, datetimes=datetimes or 0,
            int_digits=max(_digits(largest), _digits(smallest)), frac_digits=frac or 0))
    return int(row[0]), stats


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


# -- whole database --------------------------------------------------------------------------

@dataclass(slots=True)
class SourceTable:
    """A table as introspected: its engine-neutral description plus the coercions behind it."""

    table: Table
    coercions: list[Coercion]


def list_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
        "ESCAPE '\\' ORDER BY rowid").fetchall()
    return [r[0] for r in rows]


def introspect_table(conn: sqlite3.Connection, name: str) -> SourceTable:
    info = conn.execute("SELECT name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?)",
                        (name,)).fetchall()
    # hidden=1 marks virtual-table hidden columns that SELECT * does not return.
    info = [row for row in info if row[4] != 1]
    row_count, stats = scan_table(conn, name, [(row[0], row[1] or "") for row in info])
    columns: list[Column] = []
    coercions: list[Coercion] = []
    for (col_name, declared, notnull, _pk, _hidden), col_stats in zip(info, stats, strict=True):
        decision = resolve_column(name, col_name, declared or "", col_stats)
        coercions.extend(decision.coercions)
        columns.append(Column(col_name, decision.type, nullable=not notnull,
                              declared_type=declared or ""))
    primary_key = tuple(row[0] for row in sorted((r for r in info if r[3]), key=lambda r: r[3]))
    return SourceTable(
        Table(name, columns, primary_key=primary_key, foreign_keys=_foreign_keys(conn, name),
              row_count=row_count),
        coercions)


def _foreign_keys(conn: sqlite3.Connection, table: str) -> list[ForeignKey]:
    rows = conn.execute('SELECT id, "from", "table", "to" FROM pragma_foreign_key_list(?) '
                        "ORDER BY id, seq", (table,)).fetchall()
    grouped: dict[int, tuple[list[str], str, list[str]]] = {}
    for fk_id, src, ref_table, ref_col in rows:
        cols, _, refs = grouped.setdefault(fk_id, ([], ref_table, []))
        cols.append(src)
        refs.append(ref_col or "")  # NULL "to" means the referenced table's primary key
    return [ForeignKey(tuple(c), t, tuple(r)) for c, t, r in grouped.values()]


def introspect(conn: sqlite3.Connection) -> list[SourceTable]:
    """Every user table of the database, logical types resolved."""
    return [introspect_table(conn, name) for name in list_tables(conn)]
