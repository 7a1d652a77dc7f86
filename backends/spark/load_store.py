"""Where loaded Spark databases live, and the manifest that says what each one holds.

A driver in this process (embedded or standalone) keeps each evaluation database as a folder of
the warehouse: one Parquet folder per table and a ``_polysql.json`` manifest. Its catalog lives in
memory (no Hive metastore, hence no Derby database that only one process may open), so every
process registers the tables from the manifest the first time it connects: the folder is the
truth, the catalog a per-process index of it. A load builds a staging folder and renames it into
place, so readers see the old copy or the new one, never half of one.

A Spark Connect server keeps the data itself, as managed tables of one database, with the
manifest in a one-row marker table ``polysql_meta.<database>`` written after the tables (write,
then mark): a load that stops half-way leaves no marker, and the next one starts over.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from polysql.backends.spark.types import quote, quote_string
from polysql.core.errors import LoadError
from polysql.core.schema import Column, ColumnType, Table

FORMAT = 1
MANIFEST_NAME = "_polysql.json"
META_DATABASE = "polysql_meta"
_STAGING_PREFIX = ".staging-"
_OLD_PREFIX = ".old-"


@dataclass(slots=True)
class TableEntry:
    name: str  # exact name, as evaluated SQL sees it
    physical: str  # name in the catalog (and folder name)
    columns: list[dict[str, Any]]  # name, spark (type), kind, precision, scale, declared
    primary_key: list[str] = field(default_factory=list)
    rows: int = 0

    def to_table(self) -> Table:
        columns = [Column(c["name"], ColumnType(c["kind"], c.get("precision"), c.get("scale")),
                          nullable=True, declared_type=c["spark"]) for c in self.columns]
        return Table(self.name, columns, primary_key=tuple(self.primary_key),
                     row_count=self.rows)


@dataclass(slots=True)
class Manifest:
    database: str
    fingerprint: str
    generation: str
    tables: list[TableEntry]
    views: list[dict[str, str]] = field(default_factory=list)  # name, sql (Spark dialect)
    report: dict[str, Any] = field(default_factory=dict)  # the LoadReport, as a dict
    engine_version: str = ""
    polysql_version: str = ""
    format: int = FORMAT

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Manifest | None:
        """The manifest, or None when it is unreadable or of another format (then reload)."""
        try:
            data = json.loads(text)
            if data.get("format") != FORMAT:
                return None
            data["tables"] = [TableEntry(**t) for t in data["tables"]]
            return cls(**data)
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


# -- a driver in this process: folders of a local (or shared) file system ----------------------

class FileWarehouse:
    """Evaluation databases as folders under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def folder(self, database: str) -> Path:
        return self.root / database

    def table_folder(self, database: str, physical: str) -> Path:
        return self.folder(database) / physical

    def catalog_location(self, database: str) -> Path:
        """Where the catalog entry of ``database`` points: an empty folder of its own, so that
        dropping the entry can never delete loaded data."""
        return self.root / ".spark" / "catalog" / f"{database}.db"

    def read_manifest(self, database: str) -> Manifest | None:
        try:
            text = (self.folder(database) / MANIFEST_NAME).read_text(encoding="utf-8")
        except OSError:
            return None
        return Manifest.from_json(text)

    @contextlib.contextmanager
    def locked(self, database: str) -> Iterator[None]:
        """One loader of ``database`` at a time, across processes."""
        locks = self.root / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        with open(locks / f"{database}.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def staging(self, database: str) -> Iterator[Path]:
        """A fresh folder to build ``database`` in; removed unless :meth:`swap_in` took it."""
        folder = self.root / f"{_STAGING_PREFIX}{database}-{uuid.uuid4().hex[:12]}"
        folder.mkdir(parents=True)
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def write_manifest(self, folder: Path, manifest: Manifest) -> None:
        temporary = folder / f".{MANIFEST_NAME}.{uuid.uuid4().hex}.tmp"
        temporary.write_text(manifest.to_json(), encoding="utf-8")
        os.replace(temporary, folder / MANIFEST_NAME)

    def swap_in(self, staging: Path, database: str) -> None:
        """Make ``staging`` the folder of ``database``. Between the two renames no folder exists
        and a reader finds nothing loaded; a stop there only causes a reload."""
        target = self.folder(database)
        old = self.root / f"{_OLD_PREFIX}{database}-{uuid.uuid4().hex[:12]}"
        try:
            if target.exists():
                os.rename(target, old)
            os.rename(staging, target)
        except OSError as exc:
            raise LoadError(f"cannot move the loaded copy into {str(target)!r}: {exc}") from exc
        shutil.rmtree(old, ignore_errors=True)

    def remove(self, database: str) -> None:
        shutil.rmtree(self.folder(database), ignore_errors=True)
        shutil.rmtree(self.catalog_location(database), ignore_errors=True)


# -- Spark Connect: the server's catalog -------------------------------------------------------

def marker_table(database: str) -> str:
    return f"{quote(META_DATABASE)}.{quote(database)}"


def read_marker(session: Any, database: str) -> Manifest | None:
    """The manifest recorded on the Connect server for ``database``, or None."""
    if not session.catalog.tableExists(f"{META_DATABASE}.{database}"):
        return None
    rows = session.sql(f"SELECT manifest FROM {marker_table(database)}").collect()
    return Manifest.from_json(rows[0][0]) if len(rows) == 1 else None


def write_marker(session: Any, manifest: Manifest) -> None:
    session.sql(f"CREATE DATABASE IF NOT EXISTS {quote(META_DATABASE)}")
    frame = session.createDataFrame([(manifest.to_json(),)], "manifest STRING")
    frame.write.mode("overwrite").saveAsTable(f"{META_DATABASE}.{manifest.database}")


def remove_marker(session: Any, database: str) -> None:
    session.sql(f"DROP TABLE IF EXISTS {marker_table(database)}")


def location_literal(path: Path) -> str:
    return quote_string(str(path))
