"""Read a ClickHouse database's tables back as engine-neutral descriptions (what a model is
shown: ``polysql.engines.ddl`` renders the schema from here, never from the source)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from polysql.backends.clickhouse.screen import identifier, tokenize
from polysql.backends.clickhouse.types import logical_type, quote_string, unwrap
from polysql.core.schema import Column, Table

Query = Callable[[str], list[dict[str, Any]]]


def key_columns(expression: str) -> tuple[str, ...]:
    """Column names of a sorting-key expression such as ``CustomerID, `order id```."""
    names = []
    for token in tokenize(expression):
        name = identifier(token)
        if name is not None:
            names.append(name)
    return tuple(names)


def _json_rows(conn: Any, sql: str) -> list[dict[str, Any]]:
    result = conn.query(sql, "JSONEachRow")
    data = result.bytes() if hasattr(result, "bytes") else result
    text = data.decode("utf-8") if isinstance(data, bytes) else str(data)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def read_tables(conn: Any, database: str, order: list[str] | None = None,
                rows: Query | None = None) -> list[Table]:
    """The data tables of ``database`` (views left out), in ``order`` where given. ``rows``
    runs a query returning JSON rows (defaults to a chdb connection's ``query``)."""
    fetch: Query = rows or (lambda sql: _json_rows(conn, sql))
    where = f"database = {quote_string(database)}"
    described = fetch(f"SELECT name, total_rows, sorting_key FROM system.tables WHERE {where} "
                      f"AND engine != 'View' AND NOT is_temporary")
    columns: dict[str, list[Column]] = {}
    for row in fetch(f"SELECT table, name, type FROM system.columns WHERE {where} "
                     f"ORDER BY table, position"):
        _, nullable = unwrap(row["type"])
        columns.setdefault(row["table"], []).append(
            Column(row["name"], logical_type(row["type"]), nullable=nullable,
                   declared_type=row["type"]))
    rank = {name: i for i, name in enumerate(order or [])}
    described.sort(key=lambda r: (rank.get(r["name"], len(rank)), r["name"]))
    tables = []
    for row in described:
        total = row.get("total_rows")
        tables.append(Table(row["name"], columns.get(row["name"], []),
                            primary_key=key_columns(row.get("sorting_key") or ""),
                            row_count=int(total) if total is not None else None))
    return tables
