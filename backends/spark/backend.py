"""Spark SQL backend (PySpark): an evaluation engine and a load target.

URLs (see ``connect_url.py``): ``spark://local[N]/DATABASE`` runs an embedded session in this
process, ``spark://HOST:PORT/DATABASE`` drives a standalone cluster, ``sc://HOST:PORT/DATABASE``
talks to a Spark Connect server. Query parameters: ``warehouse=PATH``, ``ansi=true|false``,
``partitions=N``.

Each loaded database is one Spark database (schema). Evaluation sessions (``read_only=True``, the
default) are sessions of their own with that database current; Spark has no read-only mode, so
every statement is screened (``screen.py``) and file access through SQL is switched off. The
timeout cancels the statement's job group, with a client-side backstop (``execute.py``).
``version()`` says whether ANSI mode is on, as it changes results (overflow, division by zero,
invalid casts): Spark 4 enables it by default, Spark 3.5 does not; ``ansi=`` in the URL decides
for the session. See docs/engines-spark.md.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy.engine import URL

from polysql.backends._common.cancel import Flight, Flights
from polysql.backends._common.statement_text import refuse_text
from polysql.backends.base import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    Backend,
    EngineInfo,
    SetupScript,
)
from polysql.backends.spark import INFO
from polysql.backends.spark import connect as sessions
from polysql.backends.spark import introspect as catalog
from polysql.backends.spark.connect_url import (
    SparkTarget,
    default_warehouse,
    evaluation_database_name,
    parse_target,
)
from polysql.backends.spark.execute import StatementRunner
from polysql.backends.spark.execute_settle import engine_key
from polysql.backends.spark.load import load_into_spark
from polysql.backends.spark.load_store import FileWarehouse, Manifest, read_marker
from polysql.backends.spark.screen import screen_statement
from polysql.backends.spark.setup import build_from_script
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError
from polysql.core.model import Result
from polysql.core.schema import LoadReport, Table
from polysql.core.urls import parse_url

_OPTIONS = ("read_only",)


class SparkBackend(Backend):
    """One Spark database in a session of its own."""

    info: ClassVar[EngineInfo] = INFO
    name: ClassVar[str] = INFO.name
    dialect: ClassVar[str] = INFO.dialect
    capabilities: ClassVar[frozenset[str]] = frozenset({"read_only", "timeout", "load_target"})

    def __init__(self, url: URL, target: SparkTarget, session: Any, *, read_only: bool) -> None:
        self.url = url
        self.target = target
        self.session = session
        self.read_only = read_only
        self.warehouse = FileWarehouse(target.warehouse) if target.warehouse else None
        self.manifest: Manifest | None = None
        self._runner = self._new_runner()
        # the driver this session belongs to (a restart ends it: see _reopen)
        self._driver = sessions.driver_generation()
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._closed = False
        self._version: str | None = None
        self._flights = Flights()

    @classmethod
    def evaluation_url(cls, base: URL, *, dataset: str, db_id: str, cache_dir: Path) -> URL:
        url = base.set(database=evaluation_database_name(dataset, db_id))
        if base.get_backend_name() != "sc" and "warehouse" not in base.query:
            url = url.update_query_dict({"warehouse": str(cache_dir / "engines" / "spark")})
        return url

    @classmethod
    def connect(cls, url: URL | str, *, read_only: bool = True, **options: Any) -> SparkBackend:
        """``read_only=True``: an evaluation session on a loaded database (the URL's path).
        ``read_only=False``: a session for loading, which runs statements unscreened."""
        if options:
            raise ConfigError(f"unknown option(s) for the spark backend: "
                              f"{', '.join(sorted(options))}; supported: {', '.join(_OPTIONS)}")
        parsed = parse_url(url)
        target = parse_target(parsed)
        session = sessions.new_session(target)
        backend = cls(parsed, target, session, read_only=read_only)
        try:
            if read_only:
                backend._open_evaluation()
        except BaseException:
            backend.close()
            raise
        return backend

    def _open_evaluation(self) -> None:
        sessions.lock_down(self.session, self.target)
        database = self.target.database
        if database is None:
            return  # a server URL: only statements that need no loaded table
        manifest = self._read_manifest()
        if manifest is None:
            raise EngineUnavailableError(
                f"Spark database {database!r} has not been loaded at {self._where()}: load it "
                f"first (polysql load SOURCE {self.url.render_as_string(hide_password=True)})")
        if self.warehouse is not None:
            catalog.register(self.session, self.warehouse, manifest)
        failed = catalog.expose(self.session, database, manifest.tables, manifest.views)
        if failed:
            raise EngineError(f"cannot recreate the views of {database!r}: {failed}")
        self.manifest = manifest

    def _read_manifest(self) -> Manifest | None:
        assert self.target.database is not None
        if self.warehouse is not None:
            return self.warehouse.read_manifest(self.target.database)
        return read_marker(self.session, self.target.database)

    def _where(self) -> str:
        if self.warehouse is not None:
            return f"warehouse {str(self.warehouse.root)!r}"
        return f"Spark Connect server {self.url.host}:{self.url.port}"

    # -- evaluation --------------------------------------------------------------------------
    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        refused = refuse_text(sql, comments=self.info.comments, engine=self.name)
        if refused is not None:
            return refused
        started = time.perf_counter()
        with self._flights.track() as flight, self._lock:
            if self._closed:
                return Result.failed("unavailable", f"{self!r} is closed", engine=self.name)
            if self._driver_restarted():
                failed = self._reopen()
                if failed is not None:
                    return failed
            result = self._screen_and_run(sql, timeout, max_rows, started, flight)
            if (result.unavailable and self._driver_restarted()
                    and not flight.cancelled.is_set()):
                # The runner restarted the driver to end a cancelled statement's tasks (see
                # execute_settle.py): the statement never ran, so it runs on the new driver.
                failed = self._reopen()
                if failed is not None:
                    return failed
                result = self._screen_and_run(sql, timeout, max_rows, time.perf_counter(),
                                              flight)
            return result

    def _screen_and_run(self, sql: str, timeout: float, max_rows: int, started: float,
                        flight: Flight) -> Result:
        statement = sql
        if self.read_only:
            refusal, statement = screen_statement(self.session, sql, connect=self.target.connect)
            if refusal is not None:
                return Result.failed(refusal.kind, refusal.message, sqlstate=refusal.sqlstate,
                                     elapsed=time.perf_counter() - started, engine=self.name)
        return self._runner.run(statement, timeout=timeout, max_rows=max_rows, started=started,
                                flight=flight)

    def _new_runner(self) -> StatementRunner:
        return StatementRunner(self.session, connect=self.target.connect, engine=self.name,
                               engine_key=engine_key(connect=self.target.connect,
                                                     master=self.target.master))

    def _driver_restarted(self) -> bool:
        """Whether the process's driver was restarted since this session was opened."""
        return not self.target.connect and self._driver != sessions.driver_generation()

    def _reopen(self) -> Result | None:
        """A session of the current driver in place of one whose driver was restarted, its
        database registered again; None, or the outage that prevented it."""
        self._runner.close()
        driver = sessions.driver_generation()
        try:
            self.session = sessions.new_session(self.target)
            self._runner = self._new_runner()
            if self.read_only:
                self._open_evaluation()
        except Exception as exc:  # the new driver failed too: tried again next statement
            return Result.failed("unavailable", f"cannot reopen the Spark session after the "
                                                f"driver restarted: {exc}", engine=self.name)
        self._driver = driver
        return None

    def cancel(self) -> bool:
        """Cancels the statement's job group (``cancelJobGroup`` / ``interruptTag`` on Spark
        Connect), as its timeout does, with the same backstop."""
        return self._flights.cancel()

    def version(self) -> str:
        with self._lock:
            if self._driver_restarted():  # the session below belongs to a driver that is gone
                failed = self._reopen()
                if failed is not None:
                    assert failed.error is not None
                    raise EngineUnavailableError(failed.error.message)
        if self._version is None:
            via = " via Spark Connect" if self.target.connect else ""
            self._version = f"Spark {self.session.version}{via}"
        ansi = "on" if sessions.ansi_enabled(self.session) else "off"
        return f"{self._version} (ANSI {ansi})"

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._runner.close()
            sessions.close_session(self.session, self.target)

    # -- introspection -----------------------------------------------------------------------
    def tables(self) -> list[Table]:
        """The loaded database's tables under their exact names, from its manifest."""
        manifest = self.manifest or (self._read_manifest() if self.target.database else None)
        if manifest is None:
            raise EngineError(f"{self!r}: no loaded database to describe")
        return [entry.to_table() for entry in manifest.tables]

    # -- load target -------------------------------------------------------------------------
    def load(self, source: Backend, *, fingerprint: str | None = None, replace: bool = False,
             names: str = "exact") -> LoadReport:
        """Copy ``source`` into this database; see :mod:`polysql.backends.spark.load`."""

        with self._load_lock:
            report = load_into_spark(self, source, fingerprint=fingerprint, replace=replace,
                                     names=names)
        self.manifest = None
        return report

    @classmethod
    def build_from_script(cls, target: URL, script: SetupScript, **options: Any) -> LoadReport:
        """Build ``target``'s database from ``script`` in a writable session of its own; see
        :mod:`polysql.backends.spark.setup`."""

        with cls.connect(target, read_only=False, **options) as writer, writer._load_lock:
            return build_from_script(writer, script)


__all__ = ["SparkBackend", "default_warehouse", "evaluation_database_name"]
