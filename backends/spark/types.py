"""Spark SQL names and types for loaded tables: quoting, physical table names, column types.

Spark's session catalog accepts only ``[A-Za-z0-9_]+`` as a table or database name, and stores
it lower-cased. A source table whose name is not of that form (``order items``, ``Zoë``) is
stored under a *physical* name derived from it and shown to evaluated SQL under its exact name
through a temporary view; column names are kept exactly (Parquet and Spark accept any).
"""

from __future__ import annotations

import hashlib
import re

from polysql.core.schema import ColumnType

# SessionCatalog's rule for table and database names
_VALID_NAME = re.compile(r"[A-Za-z0-9_]+")


def quote(name: str) -> str:
    """A Spark SQL identifier in backticks (a backtick inside is doubled)."""
    return "`" + name.replace("`", "``") + "`"


def quote_string(text: str) -> str:
    """A Spark SQL string literal. Spark reads backslash escapes in literals, so both the
    backslash and the quote are escaped."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def is_catalog_name(name: str) -> bool:
    return bool(_VALID_NAME.fullmatch(name))


def physical_names(names: list[str]) -> dict[str, str]:
    """Each table name -> the name it is stored under in the catalog: itself when the catalog
    accepts it, else its word characters plus a short digest of the exact name (never equal to
    another table's name, compared case-insensitively as the catalog does)."""
    taken = {n.lower() for n in names if is_catalog_name(n)}
    mapping: dict[str, str] = {}
    for name in names:
        if is_catalog_name(name):
            mapping[name] = name
            continue
        stem = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", name)).strip("_")[:60] or "t"
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
        length = 8
        candidate = f"{stem}__{digest[:length]}"
        while candidate.lower() in taken:
            length += 4
            candidate = f"{stem}__{digest[:length]}"
        taken.add(candidate.lower())
        mapping[name] = candidate
    return mapping


def spark_type(column_type: ColumnType) -> str:
    """The Spark SQL type a logical column type is stored as.

    Timestamps are TIMESTAMP_NTZ: SQLite's date-times are wall-clock values without a zone, and
    Spark's plain TIMESTAMP would shift them by the session time zone.
    """
    if column_type.kind == "decimal":
        return f"DECIMAL({column_type.precision or 18},{column_type.scale or 0})"
    return {
        "boolean": "BOOLEAN",
        "integer": "BIGINT",
        "float": "DOUBLE",
        "text": "STRING",
        "blob": "BINARY",
        "date": "DATE",
        "timestamp": "TIMESTAMP_NTZ",
    }[column_type.kind]


def column_list(columns: list[tuple[str, str]]) -> str:
    """``(`a` BIGINT, `b c` STRING)`` from (name, Spark type) pairs."""
    return "(" + ", ".join(f"{quote(name)} {kind}" for name, kind in columns) + ")"
