"""Types and names on BigQuery: logical column types to BigQuery types and back, the names
BigQuery accepts for tables and columns, and the type names reported in results."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from google.cloud import bigquery

from polysql.core.schema import Coercion, Column, ColumnType, Table

# NUMERIC holds up to 29 integer digits and 9 fractional ones; BIGNUMERIC up to 38 of each.
NUMERIC_MAX_SCALE, NUMERIC_MAX_INTEGER_DIGITS = 9, 29
BIGNUMERIC_MAX_SCALE, BIGNUMERIC_MAX_INTEGER_DIGITS = 38, 38
# BigQuery NUMERIC without parameters is NUMERIC(38, 9).
DEFAULT_NUMERIC = (38, 9)
MAX_COLUMN_NAME = 300
MAX_TABLE_NAME_BYTES = 1024

# Characters flexible column names allow besides letters, marks, numbers, connectors, dashes and
# spaces (BigQuery documentation, "Flexible column names").
_COLUMN_EXTRA = frozenset("&%=+:'<>#|")
# Column names BigQuery reserves for itself (compared case-insensitively).
_RESERVED_COLUMN_PREFIXES = ("_table_", "_file_", "_partition", "_row_timestamp", "__root__",
                             "_colidentifier", "_change_sequence_number", "_change_type",
                             "_change_timestamp")
_TABLE_CATEGORIES = ("L", "M", "N", "Pc", "Pd", "Zs")

_LEGACY_NAMES = {"INTEGER": "INT64", "FLOAT": "FLOAT64", "BOOLEAN": "BOOL", "RECORD": "STRUCT"}


def standard_type_name(field: bigquery.SchemaField) -> str:
    """A result column's type in GoogleSQL spelling (the API reports legacy names)."""
    base = _LEGACY_NAMES.get(field.field_type, field.field_type)
    return f"ARRAY<{base}>" if field.mode == "REPEATED" else base


def decimal_type(column_type: ColumnType, *, emulated: bool) -> tuple[str, Coercion | None]:
    """NUMERIC(P,S) when it fits, else BIGNUMERIC(P,S); the emulator has no BIGNUMERIC (its
    DuckDB caps decimals at 38 digits), so there the column becomes FLOAT64 and says so."""
    precision = column_type.precision or 18
    scale = column_type.scale or 0
    integer_digits = precision - scale
    if scale <= NUMERIC_MAX_SCALE and integer_digits <= NUMERIC_MAX_INTEGER_DIGITS:
        return f"NUMERIC({precision}, {scale})", None
    if emulated:
        return "FLOAT64", Coercion("", "", f"decimal({precision},{scale}) needs BIGNUMERIC, which "
                                   "the emulator lacks: stored as FLOAT64", 0)
    if scale <= BIGNUMERIC_MAX_SCALE and integer_digits <= BIGNUMERIC_MAX_INTEGER_DIGITS:
        return f"BIGNUMERIC({precision}, {scale})", None
    return "BIGNUMERIC", Coercion("", "", f"decimal({precision},{scale}) exceeds BIGNUMERIC "
                                  "precision: stored as unparameterized BIGNUMERIC", 0)


def bigquery_type(column_type: ColumnType, *, emulated: bool) -> tuple[str, Coercion | None]:
    """The BigQuery type for a logical type (with parameters), plus a note when it is lossy."""
    if column_type.kind == "decimal":
        return decimal_type(column_type, emulated=emulated)
    return {
        "boolean": "BOOL",
        "integer": "INT64",
        "float": "FLOAT64",
        "text": "STRING",
        "blob": "BYTES",
        "date": "DATE",
        # SQLite/DuckDB timestamps carry no zone: DATETIME is the same thing; TIMESTAMP is UTC.
        "timestamp": "DATETIME",
    }[column_type.kind], None


def schema_field(name: str, type_text: str, nullable: bool) -> bigquery.SchemaField:
    base, _, params = type_text.partition("(")
    precision = scale = None
    if params:
        precision_text, scale_text = params.rstrip(")").split(",")
        precision, scale = int(precision_text), int(scale_text)
    return bigquery.SchemaField(name, base, mode="NULLABLE" if nullable else "REQUIRED",
                                precision=precision, scale=scale)


def logical_type(field: bigquery.SchemaField) -> ColumnType:
    """A loaded column's logical type (used when BigQuery serves as a load source)."""
    kind = _LEGACY_NAMES.get(field.field_type, field.field_type)
    if kind in ("NUMERIC", "BIGNUMERIC"):
        if field.precision is not None:
            return ColumnType("decimal", int(field.precision), int(field.scale or 0))
        return ColumnType("decimal", *DEFAULT_NUMERIC) if kind == "NUMERIC" \
            else ColumnType("decimal", 38, 9)
    return ColumnType({
        "BOOL": "boolean", "INT64": "integer", "FLOAT64": "float", "STRING": "text",
        "BYTES": "blob", "DATE": "date", "DATETIME": "timestamp", "TIMESTAMP": "timestamp",
    }.get(kind, "text"))


# -- names ---------------------------------------------------------------------------------

def _column_char_ok(ch: str) -> bool:
    return ch in _COLUMN_EXTRA or unicodedata.category(ch)[:1] in ("L", "M", "N") \
        or unicodedata.category(ch) in ("Pc", "Pd", "Zs")


def _table_char_ok(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category in _TABLE_CATEGORIES or category[:1] in ("L", "M", "N")


def legal_column_name(name: str) -> str:
    """``name`` with what BigQuery refuses in a column name replaced."""
    clean = "".join(ch if _column_char_ok(ch) else "_" for ch in name) or "_"
    if clean.lower().startswith(_RESERVED_COLUMN_PREFIXES):
        clean = f"c{clean}"
    return clean[:MAX_COLUMN_NAME]


def legal_table_name(name: str) -> str:
    clean = "".join(ch if _table_char_ok(ch) else "_" for ch in name).strip() or "_"
    while len(clean.encode("utf-8")) > MAX_TABLE_NAME_BYTES:
        clean = clean[:-1]
    return clean


def _unique(name: str, taken: set[str], *, casefold: bool = False) -> str:
    """``name``, or ``name_2``, ``name_3``... whichever is not yet ``taken`` (then taken)."""
    candidate, n = name, 2
    while (candidate.lower() if casefold else candidate) in taken:
        candidate = f"{name}_{n}"
        n += 1
    taken.add(candidate.lower() if casefold else candidate)
    return candidate


@dataclass(slots=True)
class TablePlan:
    """One source table as it will exist on BigQuery."""

    source: Table
    name: str
    columns: dict[str, str]  # source column name -> BigQuery column name
    types: list[str]  # BigQuery type text per column, in order

    def schema(self) -> list[bigquery.SchemaField]:
        return [schema_field(self.columns[c.name], t, c.nullable)
                for c, t in zip(self.source.columns, self.types, strict=True)]

    def target_table(self) -> Table:
        """The table as loaded, in polysql's terms."""
        return Table(
            name=self.name,
            columns=[Column(self.columns[c.name], c.type, c.nullable, c.declared_type)
                     for c in self.source.columns],
            primary_key=tuple(self.columns[c] for c in self.source.primary_key),
            row_count=self.source.row_count,
        )


def plan_tables(tables: list[Table], *, emulated: bool) -> tuple[list[TablePlan], list[Coercion]]:
    """Names and types for every table. Names stay exact where BigQuery allows them; otherwise
    (characters it refuses, two columns differing only in case -- BigQuery column names are
    case-insensitive) the new name is reported as a coercion."""
    plans: list[TablePlan] = []
    notes: list[Coercion] = []
    taken_tables: set[str] = set()
    for table in tables:
        name = _unique(legal_table_name(table.name), taken_tables)
        if name != table.name:
            notes.append(Coercion(name, "", f"table {table.name!r} renamed to {name!r}: "
                                  "BigQuery does not allow that table name", 0))
        taken_columns: set[str] = set()
        columns: dict[str, str] = {}
        types: list[str] = []
        for column in table.columns:
            new = _unique(legal_column_name(column.name), taken_columns, casefold=True)
            if new != column.name:
                notes.append(Coercion(name, new, f"column {column.name!r} renamed to {new!r}: "
                                      "BigQuery column names are case-insensitive and exclude "
                                      "some characters", 0))
            columns[column.name] = new
            type_text, note = bigquery_type(column.type, emulated=emulated)
            if note is not None:
                notes.append(Coercion(name, new, note.message, note.count))
            types.append(type_text)
        plans.append(TablePlan(table, name, columns, types))
    return plans, notes
