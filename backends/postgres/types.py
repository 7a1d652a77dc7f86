"""Logical column types (polysql.core.schema) as PostgreSQL types, and back.

Loading maps each logical type to one physical type that holds every value exactly; introspection
maps a physical type back to the logical type a model (or another engine) should assume.
"""

from __future__ import annotations

from polysql.core.schema import ColumnType

# Identifiers longer than this many bytes are silently truncated by PostgreSQL (NAMEDATALEN - 1).
MAX_IDENTIFIER_BYTES = 63


def physical_type(column_type: ColumnType) -> str:
    """The column type a load creates for ``column_type``."""
    if column_type.kind == "decimal":
        return f"NUMERIC({column_type.precision or 18},{column_type.scale or 0})"
    return {
        "boolean": "BOOLEAN",
        "integer": "BIGINT",
        "float": "DOUBLE PRECISION",
        "text": "TEXT",
        "blob": "BYTEA",
        "date": "DATE",
        "timestamp": "TIMESTAMP",
    }[column_type.kind]


def copy_type(column_type: ColumnType) -> str:
    """The type name psycopg's binary COPY needs for ``column_type`` (``Copy.set_types``)."""
    return {
        "boolean": "bool",
        "integer": "int8",
        "float": "float8",
        "decimal": "numeric",
        "text": "text",
        "blob": "bytea",
        "date": "date",
        "timestamp": "timestamp",
    }[column_type.kind]


_LOGICAL_BY_TYPNAME: dict[str, ColumnType] = {
    "bool": ColumnType("boolean"),
    "int2": ColumnType("integer"),
    "int4": ColumnType("integer"),
    "int8": ColumnType("integer"),
    "oid": ColumnType("integer"),
    "float4": ColumnType("float"),
    "float8": ColumnType("float"),
    "bytea": ColumnType("blob"),
    "date": ColumnType("date"),
    "timestamp": ColumnType("timestamp"),
    "timestamptz": ColumnType("timestamp"),
}


def logical_type(typname: str, precision: int | None, scale: int | None) -> ColumnType:
    """The logical type of a column of PostgreSQL type ``typname`` (``pg_type.typname``);
    ``precision``/``scale`` from its type modifier for ``numeric``. Everything without a closer
    logical type (text, varchar, uuid, json, intervals, arrays, ...) reads as text."""
    if typname == "numeric":
        # NUMERIC without a modifier holds any precision: a decimal of unstated precision.
        if precision is None:
            return ColumnType("decimal")
        return ColumnType("decimal", precision, scale or 0)
    return _LOGICAL_BY_TYPNAME.get(typname, ColumnType("text"))


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def check_identifier(name: str, what: str) -> str | None:
    """Why ``name`` cannot be a PostgreSQL identifier exactly as given, or None if it can."""
    if not name:
        return f"{what} has an empty name, which PostgreSQL does not allow"
    if "\x00" in name:
        return f"{what} {name!r} contains a NUL character"
    size = len(name.encode("utf-8"))
    if size > MAX_IDENTIFIER_BYTES:
        return (f"{what} {name!r} is {size} bytes long; PostgreSQL keeps only "
                f"{MAX_IDENTIFIER_BYTES} bytes of an identifier and would silently shorten it")
    return None
