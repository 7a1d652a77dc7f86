"""ClickHouse backend: an evaluation engine and a load target, embedded (chdb) or on a server.

URLs:

* ``clickhouse:///relative/dir``, ``clickhouse:////absolute/dir`` -- the embedded engine (chdb)
  with the evaluation database kept in that directory (see ``connect_embedded.py``);
  ``clickhouse://`` is a fresh temporary directory, removed on ``close``.
* ``clickhouse://user:password@host:8123/database`` -- a ClickHouse server over HTTP
  (clickhouse-connect); ``?secure=1`` for HTTPS.

Other query parameters are ClickHouse settings for every evaluated statement
(``clickhouse:///dir?join_use_nulls=1``). Evaluated SQL runs with ``readonly=1`` under
``max_execution_time``, after the statement screen of ``screen.py``. ``execute`` is
always read-only; ``read_only=False`` only permits ``load``. See docs/engines-clickhouse.md.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy.engine import URL

from polysql.backends._common.cancel import Flight, Flights
from polysql.backends._common.statement_text import refuse_text
from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Backend, EngineInfo, _safe_name
from polysql.backends.clickhouse import INFO
from polysql.backends.clickhouse.connect import is_server, statement_settings
from polysql.backends.clickhouse.connect_embedded import MANIFEST, engine, read_manifest
from polysql.backends.clickhouse.connect_server import ServerSession
from polysql.backends.clickhouse.errors import classify, clean_message
from polysql.backends.clickhouse.execute import (
    Handle,
    explain_refusal,
    read_rows,
    run_with_backstop,
)
from polysql.backends.clickhouse.introspect import read_tables
from polysql.backends.clickhouse.load import load_directory
from polysql.backends.clickhouse.screen import Screened, screen_statement
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError, LoadError
from polysql.core.model import Result
from polysql.core.schema import LoadReport, Table
from polysql.core.urls import parse_url

_OPTIONS = ("read_only", "screen")
# Evaluation connections kept per backend (one per timeout value in use).
_MAX_HANDLES = 4
MAX_DATABASE_NAME = 200


def evaluation_database_name(dataset: str, db_id: str) -> str:
    """``polysql_<dataset>_<db_id>`` in ``[a-z0-9_]``, with a short hash of the original names
    whenever characters had to be replaced, so two databases never share a name."""
    raw = f"polysql_{dataset}_{db_id}"
    clean = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", raw.lower())).rstrip("_")
    if clean == raw and len(clean) <= MAX_DATABASE_NAME:
        return clean
    suffix = hashlib.sha256(raw.encode("utf-8")).hexdigest()[:8]
    return f"{clean[:MAX_DATABASE_NAME - 9].rstrip('_')}_{suffix}"


class ClickHouseBackend(Backend):
    """One ClickHouse evaluation database: a directory attached to the embedded engine, or a
    database on a server."""

    info: ClassVar[EngineInfo] = INFO
    name: ClassVar[str] = INFO.name
    dialect: ClassVar[str] = INFO.dialect
    capabilities: ClassVar[frozenset[str]] = frozenset({"read_only", "timeout", "load_target"})
    emulated: ClassVar[bool] = False

    def __init__(self, url: URL, *, read_only: bool, screen: bool,
                 settings: dict[str, str]) -> None:
        self.url = url
        self.read_only = read_only
        self._screen = screen
        self._settings = settings
        self._lock = threading.Lock()
        self._closed = False
        self.directory: Path | None = None
        self._owned_directory: Path | None = None
        self._handles: dict[float, Any] = {}
        self._server: Any = None
        self._flights = Flights()

    # -- URLs ----------------------------------------------------------------------------------
    @classmethod
    def evaluation_url(cls, base: URL, *, dataset: str, db_id: str, cache_dir: Path) -> URL:
        if is_server(base):
            return base.set(database=evaluation_database_name(dataset, db_id))
        path = cache_dir / "engines" / cls.name / _safe_name(dataset) / _safe_name(db_id)
        return base.set(database=str(path))

    @classmethod
    def connect(cls, url: URL | str, *, read_only: bool = True, screen: bool = True,
                **options: Any) -> ClickHouseBackend:
        """``screen=False`` leaves only the engine's own barriers (tests use it to show what
        each barrier stops); leave it on."""
        if options:
            raise ConfigError(
                f"unknown option(s) for the clickhouse backend: {', '.join(sorted(options))}; "
                f"supported: {', '.join(_OPTIONS)}")
        parsed = parse_url(url)
        backend = cls(parsed, read_only=read_only, screen=screen,
                      settings=statement_settings(parsed))
        if is_server(parsed):
            backend._server = ServerSession.open(parsed, read_only=read_only,
                                                 settings=backend._settings)
            return backend
        backend._open_directory()
        return backend

    def _open_directory(self) -> None:
        if self.url.database:
            self.directory = Path(self.url.database).resolve()
        else:
            self._owned_directory = Path(tempfile.mkdtemp(prefix="polysql-clickhouse-db-"))
            self.directory = self._owned_directory / "db"
        the_engine = engine()
        if self.read_only:
            if self._owned_directory is None and read_manifest(self.directory) is None:
                raise EngineUnavailableError(
                    f"no ClickHouse evaluation database in {str(self.directory)!r} (resolved "
                    f"from the URL path; use clickhouse:///relative/dir or "
                    f"clickhouse:////absolute/dir, and load a database there first)")
            if self._owned_directory is None:
                the_engine.attach(self.directory)

    @property
    def server(self) -> bool:
        return self._server is not None

    # -- evaluation ----------------------------------------------------------------------------
    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        refused = refuse_text(sql, comments=self.info.comments, engine=self.name)
        if refused is not None:
            return refused
        with self._flights.track() as flight:
            return self._execute(sql, timeout, max_rows, flight)

    def cancel(self) -> bool:
        """``KILL QUERY`` for each running statement (embedded: from the engine's administrative
        connection; server: by its query id), and the client stops waiting as its backstop
        does."""
        return self._flights.cancel()

    def _execute(self, sql: str, timeout: float, max_rows: int, flight: Flight) -> Result:
        started = time.perf_counter()
        if self._screen:
            screened = screen_statement(sql)
            if screened.refusal is not None:
                return Result.failed("forbidden", screened.refusal,
                                     elapsed=time.perf_counter() - started, engine=self.name)
        else:
            screened = Screened(sql=sql)
        if self._closed:
            return Result.failed("unavailable", f"{self!r} is closed", engine=self.name)
        if self._server is not None:
            return self._server.run(screened, timeout=timeout, max_rows=max_rows,
                                    engine=self.name, started=started, flight=flight)
        with self._lock:
            return self._run_embedded(screened, timeout, max_rows, started, flight)

    def _run_embedded(self, screened: Screened, timeout: float, max_rows: int,
                      started: float, flight: Flight) -> Result:
        assert self.directory is not None
        try:
            the_engine = engine()
            if self._owned_directory is not None and not (self.directory / MANIFEST).exists():
                return Result.failed("runtime", "the database is empty: nothing was loaded into "
                                                "this temporary ClickHouse database",
                                     elapsed=time.perf_counter() - started, engine=self.name)
            database = the_engine.database_of(self.directory) or the_engine.attach(self.directory)
            handle = self._handle(timeout)
            handle.use(database)
        except EngineUnavailableError as exc:
            return Result.failed("unavailable", str(exc), engine=self.name)
        except RuntimeError as exc:
            message = clean_message(str(exc))
            return Result.failed(classify(message), message, engine=self.name)
        if not screened.query:
            return explain_refusal(handle.conn, screened, self.name, started)
        return run_with_backstop(
            handle, lambda: read_rows(handle.conn, screened.sql, max_rows), timeout=timeout,
            engine=self.name, started=started, flight=flight,
            interrupt=lambda: the_engine.kill(handle.tag))

    def _handle(self, timeout: float) -> Any:
        key = round(max(timeout, 0.001), 3)
        handle = self._handles.get(key)
        if handle is not None and not handle.retired:
            return handle
        if len(self._handles) >= _MAX_HANDLES:
            oldest = next(iter(self._handles))
            self._handles.pop(oldest).retire()
        # log_comment: names this connection's running statement for KILL QUERY (cancel)
        tag = f"polysql-{uuid.uuid4().hex}"
        handle = Handle(engine().connect({
            **self._settings, "log_comment": tag, "max_execution_time": key,
            "timeout_overflow_mode": "throw", "readonly": 1}), tag)
        self._handles[key] = handle
        return handle

    def version(self) -> str:
        if self._server is not None:
            return self._server.version()

        the_engine = engine()
        return f"ClickHouse {the_engine.version} (chdb {the_engine.chdb_version}, embedded)"

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for handle in self._handles.values():
                handle.retire()
            self._handles.clear()
            if self._server is not None:
                self._server.close()
            if self._owned_directory is not None:
                engine().detach(self._owned_directory / "db")
                shutil.rmtree(self._owned_directory, ignore_errors=True)

    # -- introspection -------------------------------------------------------------------------
    def tables(self) -> list[Table]:
        """The evaluation database's tables as ClickHouse holds them, in load order."""
        if self._server is not None:
            return self._server.tables()

        assert self.directory is not None
        manifest = read_manifest(self.directory)
        if manifest is None:
            return []
        the_engine = engine()
        database = the_engine.database_of(self.directory) or the_engine.attach(self.directory)
        try:
            with the_engine.lock:
                return read_tables(the_engine.admin, database,
                                   [t["name"] for t in manifest["tables"]])
        except RuntimeError as exc:
            raise EngineError(f"cannot read the tables of {self!r}: {exc}") from exc

    # -- load target ---------------------------------------------------------------------------
    def load(self, source: Backend, *, fingerprint: str | None = None, replace: bool = False,
             names: str = "exact") -> LoadReport:
        if self.read_only:
            raise LoadError(f"{self!r} was opened read-only; connect with read_only=False to load")
        if self._server is not None:
            return self._server.load(source, fingerprint=fingerprint, replace=replace,
                                     names=names, target_name=self._target_name())

        assert self.directory is not None
        with self._lock:
            for handle in self._handles.values():
                handle.retire()
            self._handles.clear()
            return load_directory(engine(), source, self.directory,
                                  target_name=self._target_name(), fingerprint=fingerprint,
                                  replace=replace, names=names)

    def _target_name(self) -> str:
        return self.url.render_as_string(hide_password=True)


__all__ = ["ClickHouseBackend", "evaluation_database_name"]
