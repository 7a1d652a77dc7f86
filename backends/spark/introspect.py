"""Catalog entries for loaded databases, and what an evaluation session sees of one.

On a driver in this process the catalog is in memory, so each process registers a loaded
database's tables (external Parquet tables over the warehouse folders) once per load generation.
An evaluation session then uses the database as its current one, and sees each table whose name
the catalog cannot hold, and each of the source's views, as a temporary view under its exact name.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from polysql.backends.spark.load_store import FileWarehouse, Manifest, TableEntry, location_literal
from polysql.backends.spark.types import column_list, quote

_lock = threading.Lock()
# (warehouse root, database) -> the load generation this process's catalog holds
_registered: dict[tuple[Path, str], str] = {}


def create_table_sql(database: str, table: TableEntry, location: Path | None = None) -> str:
    columns = column_list([(c["name"], c["spark"]) for c in table.columns])
    where = f" LOCATION {location_literal(location)}" if location is not None else ""
    return (f"CREATE TABLE {quote(database)}.{quote(table.physical)} {columns} USING parquet"
            f"{where}")


def register(session: Any, warehouse: FileWarehouse, manifest: Manifest, *,
             force: bool = False) -> None:
    """Make this process's catalog hold ``manifest``'s tables, over the database's folder in
    ``warehouse``, unless it already holds this generation."""
    database = manifest.database
    key = (warehouse.root, database)
    with _lock:
        if not force and _registered.get(key) == manifest.generation:
            return
        _registered.pop(key, None)
        location = warehouse.catalog_location(database)
        location.mkdir(parents=True, exist_ok=True)
        session.sql(f"CREATE DATABASE IF NOT EXISTS {quote(database)} "
                    f"LOCATION {location_literal(location)}")
        drop_tables(session, database)
        for table in manifest.tables:
            session.sql(create_table_sql(database, table,
                                         warehouse.table_folder(database, table.physical)))
        _registered[key] = manifest.generation


def forget_registrations() -> None:
    """Forget which databases this process's catalog holds: its driver was restarted, with an
    empty catalog."""
    with _lock:
        _registered.clear()


def register_folder(session: Any, database: str, tables: list[TableEntry], folder: Path) -> None:
    """Register tables whose Parquet folders are under ``folder`` (a staging build) in a
    database of their own, for checking views before the build is swapped in."""
    session.sql(f"CREATE DATABASE IF NOT EXISTS {quote(database)}")
    for table in tables:
        session.sql(create_table_sql(database, table, folder / table.physical))


def drop_tables(session: Any, database: str) -> None:
    """Drop every table entry of ``database``. The entries are external tables, so their data
    stays where it is."""
    if not session.catalog.databaseExists(database):
        return
    for row in session.sql(f"SHOW TABLES IN {quote(database)}").collect():
        if not row["isTemporary"]:
            session.sql(f"DROP TABLE IF EXISTS {quote(database)}.{quote(row['tableName'])}")


def forget(session: Any, warehouse_root: Path | None, database: str) -> None:
    """Remove ``database`` from this process's catalog."""
    with _lock:
        if warehouse_root is not None:
            _registered.pop((warehouse_root, database), None)
        if session.catalog.databaseExists(database):
            drop_tables(session, database)
            session.sql(f"DROP DATABASE IF EXISTS {quote(database)} CASCADE")


def expose(session: Any, database: str, tables: list[TableEntry],
           views: list[dict[str, str]]) -> list[tuple[str, str]]:
    """Make ``database`` the session's current one and create the temporary views evaluated SQL
    needs: tables under their exact names where the catalog holds them under another, then the
    source's views (retried while any succeeds, so a view on another view finds it). Returns the
    (view name, error) of views that could not be created."""
    session.catalog.setCurrentDatabase(database)
    for table in tables:
        if table.physical != table.name:
            session.sql(f"CREATE OR REPLACE TEMPORARY VIEW {quote(table.name)} AS "
                        f"SELECT * FROM {quote(database)}.{quote(table.physical)}")
    pending = list(views)
    failures: dict[str, str] = {}
    while pending:
        remaining = []
        for view in pending:
            try:
                session.sql(f"CREATE OR REPLACE TEMPORARY VIEW {quote(view['name'])} AS "
                            f"{view['sql']}")
            except Exception as exc:  # reported, not fatal
                failures[view["name"]] = str(exc).strip().splitlines()[0][:300]
                remaining.append(view)
        if len(remaining) == len(pending):
            break
        pending = remaining
    return [(view["name"], failures[view["name"]]) for view in pending]
