"""Render a loaded database's schema as CREATE TABLE statements in the engine's own dialect.

This is the text a model is shown in its prompt, so it is always read back from the engine that
holds the data (``Backend.tables()``), never from the source: names, types and keys are what a
query against that engine will meet.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from polysql.backends.base import Backend
from polysql.core.schema import Table

_PLAIN = re.compile(r"^[a-z_][a-z0-9_]*$")
# Words reserved by at least one common engine. Quoting a word that a given engine does not
# reserve is harmless (a quoted lower-case name means the same thing), so the list errs wide.
_RESERVED = frozenset("""
all alter analyze and any array as asc asymmetric authorization between binary both by call case
cast check collate column constraint create cross current_catalog current_date current_role
current_schema current_time current_timestamp current_user database databases default deferrable
delete desc describe distinct do drop else end escape except exists explain false fetch for
foreign freeze from full glob grant group having ilike in index initially inner insert intersect
interval into is isnull join key keys lateral leading left like limit localtime localtimestamp
match natural not notnull null offset on only or order outer over overlaps partition placing
primary qualify range read references regexp rename returning right rlike row rows select
session_user show similar some symmetric system_user table tablesample then to trailing true
union unique update usage user using values variadic verbose when where window with write xor
""".split())


def quote(name: str, dialect: str) -> str:
    """Quote ``name`` unless it is a plain lower-case word that no common engine reserves."""
    if _PLAIN.match(name) and name not in _RESERVED:
        return name
    return exp.to_identifier(name, quoted=True).sql(dialect=dialect)


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(bytes(value))} bytes>"
    text = str(value).replace("'", "''")
    return f"'{text}'"


def create_table(table: Table, dialect: str) -> str:
    lines = []
    for col in table.columns:
        physical = col.declared_type or str(col.type)
        lines.append(f"  {quote(col.name, dialect)} {physical}{'' if col.nullable else ' NOT NULL'}")
    if table.primary_key:
        lines.append(f"  PRIMARY KEY ({', '.join(quote(c, dialect) for c in table.primary_key)})")
    for fk in table.foreign_keys:
        lines.append(
            f"  FOREIGN KEY ({', '.join(quote(c, dialect) for c in fk.columns)}) REFERENCES "
            f"{quote(fk.ref_table, dialect)} ({', '.join(quote(c, dialect) for c in fk.ref_columns)})"
        )
    statement = f"CREATE TABLE {quote(table.name, dialect)} (\n" + ",\n".join(lines) + "\n);"
    for index in table.indexes:
        statement += (f"\nCREATE {'UNIQUE ' if index.unique else ''}INDEX {quote(index.name, dialect)} "
                      f"ON {quote(table.name, dialect)} "
                      f"({', '.join(quote(c, dialect) for c in index.columns)});")
    return statement


def sample_rows_comment(backend: Backend, table: Table, rows: int) -> str:
    """A comment with a few example rows, fetched through the normal read-only execute path."""
    cols = ", ".join(quote(c.name, backend.dialect) for c in table.columns)
    result = backend.execute(f"SELECT {cols} FROM {quote(table.name, backend.dialect)} LIMIT {int(rows)}",
                             timeout=30.0, max_rows=rows)
    if result.error is not None or not result.rows:
        return ""
    body = "\n".join("   " + ", ".join(_literal(v) for v in row) for row in result.rows)
    return f"/* {len(result.rows)} example row(s) from {table.name}:\n{body}\n*/"


def render_schema(backend: Backend, *, sample_rows: int = 0) -> str:
    parts = []
    for table in backend.tables():
        parts.append(create_table(table, backend.dialect))
        if sample_rows > 0:
            comment = sample_rows_comment(backend, table, sample_rows)
            if comment:
                parts.append(comment)
    return "\n\n".join(parts) + "\n"
