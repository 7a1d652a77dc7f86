"""Logical column types (polysql.core.schema) as Snowflake types, and back; identifier quoting.

Snowflake upper-cases unquoted identifiers, so every name polysql writes is double-quoted and
kept exactly as the source spells it.
"""

from __future__ import annotations

from polysql.core.schema import ColumnType

# Snowflake identifiers may be up to 255 characters long.
MAX_IDENTIFIER_LENGTH = 255
MAX_PRECISION = 38


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def qualified(*parts: str) -> str:
    """``"db"."schema"."table"`` from its parts, each quoted."""
    return ".".join(quote_ident(p) for p in parts)


def check_identifier(name: str, what: str) -> str | None:
    """Why ``name`` cannot be a quoted Snowflake identifier exactly as given, or None if it can."""
    if not name:
        return f"{what} has an empty name, which Snowflake does not allow"
    if "\x00" in name:
        return f"{what} {name!r} contains a NUL character"
    if len(name) > MAX_IDENTIFIER_LENGTH:
        return (f"{what} {name!r} is {len(name)} characters long; Snowflake identifiers hold at "
                f"most {MAX_IDENTIFIER_LENGTH}")
    return None


def physical_type(column_type: ColumnType) -> str:
    """The column type a load creates for ``column_type``."""
    if column_type.kind == "decimal":
        precision = min(column_type.precision or MAX_PRECISION, MAX_PRECISION)
        scale = min(column_type.scale or 0, precision)
        return f"NUMBER({precision},{scale})"
    return {
        "boolean": "BOOLEAN",
        "integer": "NUMBER(38,0)",
        "float": "FLOAT",
        "text": "VARCHAR",
        "blob": "BINARY",
        "date": "DATE",
        "timestamp": "TIMESTAMP_NTZ",
    }[column_type.kind]


_LOGICAL_BY_TYPE: dict[str, ColumnType] = {
    "BOOLEAN": ColumnType("boolean"),
    "FLOAT": ColumnType("float"),
    "FLOAT4": ColumnType("float"),
    "FLOAT8": ColumnType("float"),
    "DOUBLE": ColumnType("float"),
    "DOUBLE PRECISION": ColumnType("float"),
    "REAL": ColumnType("float"),
    "BINARY": ColumnType("blob"),
    "VARBINARY": ColumnType("blob"),
    "DATE": ColumnType("date"),
    "DATETIME": ColumnType("timestamp"),
    "TIMESTAMP": ColumnType("timestamp"),
    "TIMESTAMP_NTZ": ColumnType("timestamp"),
    "TIMESTAMP_LTZ": ColumnType("timestamp"),
    "TIMESTAMP_TZ": ColumnType("timestamp"),
}


def logical_type(data_type: str, precision: int | None, scale: int | None) -> ColumnType:
    """The logical type of a column as ``information_schema.columns`` describes it. NUMBER(38,0)
    -- what a load creates for integers -- reads as integer; any other NUMBER as a decimal of its
    precision and scale. Types without a closer logical type (TEXT, VARIANT, TIME, ...) read as
    text."""
    name = data_type.upper()
    if name in ("NUMBER", "DECIMAL", "NUMERIC", "FIXED"):
        if (scale or 0) == 0 and (precision is None or precision == MAX_PRECISION):
            return ColumnType("integer")
        return ColumnType("decimal", precision or MAX_PRECISION, scale or 0)
    if name in ("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "BYTEINT"):
        return ColumnType("integer")
    return _LOGICAL_BY_TYPE.get(name, ColumnType("text"))


def result_type_name(type_name: str, precision: int | None, scale: int | None) -> str:
    """The name a result column's type gets in ``Result.types``: Snowflake's SQL spelling of the
    connector's type (``FIXED`` is NUMBER(p,s), ``TEXT`` is VARCHAR, ``REAL`` is DOUBLE).

    Every Snowflake float is 64 bits, whatever it was declared as; it is named DOUBLE because
    elsewhere (DuckDB, MySQL, Spark) a bare FLOAT is 32 bits, and the comparison reads a column
    of that name with a 32-bit float's precision."""
    if type_name == "FIXED":
        return f"NUMBER({precision},{scale or 0})" if precision is not None else "NUMBER"
    return {"TEXT": "VARCHAR", "REAL": "DOUBLE"}.get(type_name, type_name)
