"""The process's embedded ClickHouse engine (chdb) and the evaluation databases attached to it.

chdb hosts one engine per process, bound to one data path. polysql gives it a private temporary
home holding nothing but catalog entries, and keeps every evaluation database in a directory of
its own: each table is a MergeTree table on a local disk rooted at that directory
(``SETTINGS disk = disk(type = 'local', path = ...)``). Attaching a directory creates a database
in the engine and ``ATTACH``es its tables by the UUIDs recorded in the directory's manifest, so any
number of directories can be open side by side, in any number of processes, and a directory can be
moved or copied whole.

Detaching is the reverse: tables are detached (never dropped: dropping would delete the data in the
directory) before the engine's database entry is removed.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polysql.backends.clickhouse.types import TableSpec, disk_clause, quote_ident, quote_string
from polysql.core.errors import EngineUnavailableError

MANIFEST = "polysql.json"
# Bump when the directory layout or table declarations change: older copies are then reloaded.
MANIFEST_FORMAT = 1
# Settings every engine connection polysql opens gets. Naive timestamps are loaded as UTC, so
# the session time zone must be UTC for them to read back unchanged.
SESSION_SETTINGS = {"session_timezone": "UTC"}


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """The directory's manifest, or None when there is none or it is unreadable (then reload)."""
    try:
        data = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        return None
    return data


def connection_string(path: Path, settings: dict[str, Any]) -> str:
    """A chdb connection string; settings apply to that connection only (``readonly`` last, so
    it cannot refuse the settings given with it)."""
    ordered = sorted(settings.items(), key=lambda item: item[0] == "readonly")
    params = "&".join(f"{k}={v}" for k, v in ordered)
    return f"{path}?{params}" if params else str(path)


@dataclass(slots=True)
class _Attached:
    database: str
    load_id: str
    tables: list[TableSpec]


class Engine:
    """The process-wide chdb engine: its home, one administrative connection, and the registry
    of attached evaluation directories."""

    def __init__(self) -> None:
        import chdb

        self._chdb = chdb
        self.home = Path(tempfile.mkdtemp(prefix="polysql-clickhouse-"))
        (self.home / "user_files").mkdir()
        startup = {
            # dynamic local disks may be rooted anywhere: each evaluation directory is one
            "custom_local_disks_base_directory": "/",
            "user_files_path": f"{self.home}/user_files/",
            **SESSION_SETTINGS,
        }
        try:
            self.admin = chdb.connect(connection_string(self.home, startup))
        except RuntimeError as exc:
            shutil.rmtree(self.home, ignore_errors=True)
            raise EngineUnavailableError(
                f"cannot start the embedded ClickHouse engine (chdb allows one engine per "
                f"process, and polysql needs its own): {exc}") from exc
        self.lock = threading.RLock()
        self._kill_lock = threading.Lock()
        self._killer: Any = None
        self.version = str(chdb.engine_version)
        self.chdb_version = str(chdb.__version__)
        self._attached: dict[Path, _Attached] = {}

    def connect(self, settings: dict[str, Any]) -> Any:
        """A new connection to this engine with ``settings`` for its session."""
        return self._chdb.connect(connection_string(self.home, {**SESSION_SETTINGS, **settings}))

    def kill(self, log_comment: str) -> None:
        """Stop the statements running on connections whose session ``log_comment`` is this
        one (``KILL QUERY`` reaches other connections of the engine; ``ASYNC``: do not wait)."""
        if not log_comment:
            raise ValueError("an empty log_comment would name every untagged statement")
        # a connection of its own: the administrative one may be busy attaching a database
        with self._kill_lock:
            if self._killer is None:
                self._killer = self.connect({})
            self._killer.query(f"KILL QUERY WHERE Settings['log_comment'] = "
                               f"{quote_string(log_comment)} ASYNC", "TabSeparated")

    # -- attaching evaluation directories ------------------------------------------------------
    def attach(self, directory: Path) -> str:
        """The engine database holding ``directory``'s tables, attaching it if needed."""
        directory = directory.resolve()
        with self.lock:
            manifest = read_manifest(directory)
            if manifest is None:
                self.detach(directory)
                raise EngineUnavailableError(
                    f"{str(directory)!r} holds no ClickHouse evaluation database loaded by "
                    f"polysql (no readable {MANIFEST}); load one first")
            known = self._attached.get(directory)
            if known is not None and known.load_id == manifest["load_id"]:
                return known.database
            self.detach(directory)
            tables = [TableSpec.from_json(t) for t in manifest["tables"]]
            database = (f"polysql_{hashlib.sha256(str(directory).encode()).hexdigest()[:12]}_"
                        f"{str(manifest['load_id'])[:8]}")
            self._attach_tables(directory, database, tables, manifest.get("views", []))
            self._attached[directory] = _Attached(database, str(manifest["load_id"]), tables)
            return database

    def _attach_tables(self, directory: Path, database: str, tables: list[TableSpec],
                       views: list[dict[str, str]]) -> None:
        disk = disk_clause(f"{directory}/")
        db = quote_ident(database)
        self.admin.query(f"CREATE DATABASE IF NOT EXISTS {db} ENGINE = Atomic")
        try:
            for spec in tables:
                self.admin.query(
                    f"ATTACH TABLE {db}.{quote_ident(spec.name)} UUID '{spec.uuid}' "
                    f"({spec.columns_sql()}) {spec.engine_sql(disk=disk)}")
            if views:
                self.admin.query(f"USE {db}")
                for view in views:
                    self.admin.query(f"CREATE VIEW {db}.{quote_ident(view['name'])} AS "
                                     f"{view['sql']}")
        except RuntimeError as exc:
            self._drop_catalog_entry(database)
            raise EngineUnavailableError(
                f"cannot attach the ClickHouse evaluation database in {str(directory)!r}: "
                f"{exc}") from exc
        finally:
            with contextlib.suppress(RuntimeError):
                self.admin.query("USE default")

    def detach(self, directory: Path) -> None:
        """Forget ``directory`` in the engine; its files are left exactly as they are."""
        with self.lock:
            known = self._attached.pop(directory.resolve(), None)
            if known is not None:
                self._drop_catalog_entry(known.database)

    def _drop_catalog_entry(self, database: str) -> None:
        db = quote_ident(database)
        for name in self._data_tables(database):
            # PERMANENTLY releases the table's UUID, so the directory can be attached again
            self.admin.query(f"DETACH TABLE {db}.{quote_ident(name)} PERMANENTLY SYNC")
        left = self._data_tables(database)
        if left:
            # Never drop a database that still holds a table: that would delete its data.
            raise EngineUnavailableError(
                f"cannot detach ClickHouse database {database!r}: tables {left} still attached")
        self.admin.query(f"DROP DATABASE IF EXISTS {db} SYNC")

    def _data_tables(self, database: str) -> list[str]:
        result = self.admin.query(
            f"SELECT name FROM system.tables WHERE database = {quote_string(database)} "
            f"AND engine != 'View'", "JSONEachRow")
        return [json.loads(line)["name"] for line in result.bytes().decode().splitlines()
                if line.strip()]

    def database_of(self, directory: Path) -> str | None:
        with self.lock:
            known = self._attached.get(directory.resolve())
            return known.database if known else None

    def close(self) -> None:
        with self.lock:
            for directory in list(self._attached):
                with contextlib.suppress(Exception):
                    self.detach(directory)
            with contextlib.suppress(Exception):
                self.admin.close()
            with self._kill_lock, contextlib.suppress(Exception):
                if self._killer is not None:
                    self._killer.close()
        shutil.rmtree(self.home, ignore_errors=True)


_engine: Engine | None = None
_engine_lock = threading.Lock()


def engine() -> Engine:
    """The process's embedded engine, started on first use."""
    global _engine
    with _engine_lock:
        if _engine is None:
            try:
                import chdb  # noqa: F401
            except ImportError as exc:
                raise EngineUnavailableError(
                    "the embedded ClickHouse backend needs chdb: pip install 'polysql[clickhouse]'"
                ) from exc
            _engine = Engine()
            atexit.register(_engine.close)
        return _engine


def new_directory_name(target: Path, label: str) -> Path:
    """A fresh hidden sibling of ``target`` (same file system, so renames are atomic)."""
    return target.with_name(f".{target.name}.{uuid.uuid4().hex}.{label}")


def replace_directory(built: Path, target: Path) -> None:
    """Move ``built`` onto ``target``. The old directory is renamed away first and removed after;
    if we stop in between, ``target`` is missing and the next load rebuilds it."""
    old = new_directory_name(target, "old") if target.exists() else None
    if old is not None:
        os.replace(target, old)
    os.replace(built, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
