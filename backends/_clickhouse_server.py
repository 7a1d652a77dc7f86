"""A ClickHouse server over HTTP (clickhouse-connect): evaluation and loading.

Evaluated statements pass the same screen as on the embedded engine and run with
``readonly=1``, ``max_execution_time`` and ``timeout_overflow_mode = 'throw'`` as per-query
settings (``readonly`` last, so it does not refuse the settings sent with it; once applied, the
statement's own ``SETTINGS`` clause cannot loosen any of them). Rows stream in Native blocks and
the stream is closed after ``max_rows + 1`` rows. The client backstop is the HTTP read timeout.
Each statement gets a query id of its own, so ``Backend.cancel`` can ``KILL QUERY`` it.

A load builds every table in a staging database and swaps it in with two ``RENAME DATABASE``
statements; loads are recorded in ``polysql_meta.loads`` (append-only: database, fingerprint,
report), written as "in progress" before the swap and completed after it, so a crash in between
can only cause a reload, never a skip.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import threading
import time
import uuid
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlalchemy.engine import URL

from polysql.backends._cancel import Flight, cancelled
from polysql.backends._clickhouse_exec import BACKSTOP_GRACE
from polysql.backends._clickhouse_introspect import read_tables
from polysql.backends._clickhouse_load import WRITER_SETTINGS, index_notes, table_spec
from polysql.backends._clickhouse_screen import Screened
from polysql.backends._clickhouse_types import quote_ident, quote_string
from polysql.backends._clickhouse_values import QUERY_FORMATS, classify, python_value
from polysql.backends._load_files import source_coercions, source_name, timed
from polysql.errors import EngineUnavailableError, LoadError
from polysql.model import Result
from polysql.naming import check_mode, rename_tables
from polysql.schema import Coercion, LoadReport, Table

if TYPE_CHECKING:
    from polysql.backends.base import Backend

META_DATABASE = "polysql_meta"
LOAD_FORMAT = 1
_IN_PROGRESS = ""
DEFAULT_PORT = 8123


def _client_error(exc: Exception) -> tuple[str, int | None]:
    return str(exc).strip() or type(exc).__name__, getattr(exc, "code", None)


class ServerSession:
    """One clickhouse-connect client on one database of one server."""

    def __init__(self, client: Any, database: str | None, settings: dict[str, str]) -> None:
        self.client = client
        self.database = database
        self.settings = settings

    @classmethod
    def open(cls, url: URL, *, read_only: bool, settings: dict[str, str]) -> ServerSession:
        try:
            import clickhouse_connect
        except ImportError as exc:
            raise EngineUnavailableError(
                "the ClickHouse server backend needs clickhouse-connect: "
                "pip install 'polysql[clickhouse]'") from exc
        secure = str(url.query.get("secure", "0")).lower() in ("1", "true", "yes")
        where = f"{url.host}:{url.port or DEFAULT_PORT}"
        try:
            client = clickhouse_connect.get_client(
                host=url.host, port=url.port or DEFAULT_PORT, username=url.username or "default",
                password=url.password or "", secure=secure, connect_timeout=5,
                database=url.database if read_only and url.database else "default",
                autogenerate_session_id=False)
        except Exception as exc:  # noqa: BLE001 - any failure here means the server is unusable
            raise EngineUnavailableError(
                f"cannot reach the ClickHouse server at {where}: {exc}") from exc
        return cls(client, url.database, settings)

    def version(self) -> str:
        return f"ClickHouse {self.client.server_version}"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()

    # -- evaluation ----------------------------------------------------------------------------
    def _settings(self, timeout: float) -> dict[str, Any]:
        return {**self.settings, "max_execution_time": round(max(timeout, 0.001), 3),
                "timeout_overflow_mode": "throw", "readonly": 1}

    def kill(self, query_id: str) -> None:
        """``KILL QUERY`` for one statement of this client (``ASYNC``: do not wait for it)."""
        self.client.command(f"KILL QUERY WHERE query_id = {quote_string(query_id)} ASYNC")

    def run(self, screened: Screened, *, timeout: float, max_rows: int, engine: str,
            started: float, flight: Flight | None = None) -> Result:
        if not screened.query:
            return self._refuse(screened, timeout, engine, started)
        query_id = f"polysql-{uuid.uuid4().hex}"
        if flight is None:
            return self._run(screened, query_id, timeout, max_rows, engine, started, None)
        if not flight.arm(lambda: self.kill(query_id), exclusive=False):
            return cancelled(engine, time.perf_counter() - started)
        try:
            return self._run(screened, query_id, timeout, max_rows, engine, started, flight)
        finally:
            flight.disarm()

    def _run(self, screened: Screened, query_id: str, timeout: float, max_rows: int, engine: str,
             started: float, flight: Flight | None) -> Result:
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def worker() -> None:
            try:
                outcome["rows"] = self._read(screened.sql, timeout, max_rows, query_id)
            except Exception as exc:  # noqa: BLE001 - reported as a failed Result
                outcome["error"] = exc
            finally:
                done.set()

        # The client backstop: the server should stop the statement at max_execution_time; if
        # it has not answered shortly after, stop waiting (the HTTP client is thread-safe, so
        # the abandoned request does not block the next statement).
        threading.Thread(target=worker, name="polysql-clickhouse-http", daemon=True).start()
        finished = (done.wait(timeout + BACKSTOP_GRACE) if flight is None
                    else flight.wait(done, timeout + BACKSTOP_GRACE))
        if flight is not None and flight.cancelled.is_set():
            done.wait(BACKSTOP_GRACE)  # the kill is on its way; a request still open is left
            error = outcome.get("error")
            return cancelled(engine, time.perf_counter() - started,
                             _client_error(error)[0] if error is not None else None)
        if not finished:
            return Result.failed(
                "timeout", f"statement exceeded the {timeout:g}s timeout (the client stopped "
                           f"waiting {BACKSTOP_GRACE:g}s after it)",
                elapsed=time.perf_counter() - started, engine=engine)
        if "error" in outcome:
            exc = outcome["error"]
            message, code = _client_error(exc)
            kind = classify(message, code)
            if "timed out" in message.lower() or "read timeout" in message.lower():
                kind = "timeout"
            elif code is None and kind == "runtime" and "connect" in message.lower():
                kind = "unavailable"
            if kind == "timeout":
                message = f"statement exceeded the {timeout:g}s timeout ({message})"
            return Result.failed(kind, message, elapsed=time.perf_counter() - started,
                                 engine=engine)
        columns, types, rows, truncated = outcome["rows"]
        return Result(columns=columns, rows=rows, types=types, truncated=truncated,
                      elapsed=time.perf_counter() - started, engine=engine)

    def _read(self, sql: str, timeout: float, max_rows: int,
              query_id: str) -> tuple[list[str], list[str], list[tuple[Any, ...]], bool]:
        rows: list[tuple[Any, ...]] = []
        settings = self._settings(timeout)
        stream = self.client.query_row_block_stream(sql + "\n",
                                                    settings={"query_id": query_id, **settings},
                                                    query_formats=QUERY_FORMATS)
        with stream:
            columns = list(stream.source.column_names)
            types = [t.name for t in stream.source.column_types]
            for block in stream:
                rows.extend(tuple(python_value(v) for v in row) for row in block)
                if len(rows) > max_rows:
                    break
        if not columns:
            described = self.client.query(f"DESCRIBE TABLE (\n{sql}\n)", settings=settings)
            columns = [r[0] for r in described.result_rows]
            types = [r[1] for r in described.result_rows]
        return columns, types, rows[:max_rows], len(rows) > max_rows

    def _refuse(self, screened: Screened, timeout: float, engine: str, started: float) -> Result:
        try:
            self.client.query(f"EXPLAIN AST {screened.sql}\n", settings=self._settings(timeout))
        except Exception as exc:  # noqa: BLE001
            message, code = _client_error(exc)
            if classify(message, code) == "syntax":
                return Result.failed("syntax", message, elapsed=time.perf_counter() - started,
                                     engine=engine)
        return Result.failed("forbidden", f"only queries may run; this is a "
                                          f"{screened.first_word} statement",
                             elapsed=time.perf_counter() - started, engine=engine)

    # -- introspection -------------------------------------------------------------------------
    def _json_rows(self, sql: str) -> list[dict[str, Any]]:
        result = self.client.query(sql)
        return [dict(zip(result.column_names, row, strict=True)) for row in result.result_rows]

    def tables(self) -> list[Table]:
        if not self.database:
            return []
        return read_tables(None, self.database, rows=self._json_rows)

    # -- load ----------------------------------------------------------------------------------
    def _command(self, sql: str) -> None:
        self.client.command(sql)

    def _ensure_meta(self) -> None:
        self._command(f"CREATE DATABASE IF NOT EXISTS {META_DATABASE}")
        self._command(f"CREATE TABLE IF NOT EXISTS {META_DATABASE}.loads (database String, "
                      f"fingerprint String, load_format UInt32, report String, "
                      f"loaded_at DateTime64(6, 'UTC')) ENGINE = MergeTree "
                      f"ORDER BY (database, loaded_at)")

    def _record(self, database: str, fingerprint: str, report: dict[str, Any]) -> None:
        self.client.insert(f"{META_DATABASE}.loads",
                           [[database, fingerprint, LOAD_FORMAT, json.dumps(report),
                             datetime.datetime.now(datetime.UTC)]],
                           column_names=["database", "fingerprint", "load_format", "report",
                                         "loaded_at"])

    def _latest(self, database: str) -> dict[str, Any] | None:
        rows = self._json_rows(
            f"SELECT fingerprint, load_format, report FROM {META_DATABASE}.loads "
            f"WHERE database = {quote_string(database)} ORDER BY loaded_at DESC LIMIT 1")
        return rows[0] if rows else None

    def _exists(self, database: str) -> bool:
        return bool(self._json_rows(
            f"SELECT name FROM system.databases WHERE name = {quote_string(database)}"))

    def load(self, source: Backend, *, fingerprint: str | None, replace: bool, names: str,
             target_name: str) -> LoadReport:
        database = self.database
        if not database:
            raise LoadError("a ClickHouse server URL names no database to load into: use "
                            "clickhouse://user@host:8123/<database>")
        mode = check_mode(names)
        fingerprint = fingerprint or source.fingerprint()
        if mode != "exact":
            fingerprint = f"{fingerprint}+names={mode}"
        origin = source_name(source)
        self._ensure_meta()
        latest = self._latest(database)
        if not replace and latest is not None and latest["fingerprint"] == fingerprint \
                and latest["load_format"] == LOAD_FORMAT and self._exists(database):
            saved = json.loads(latest["report"] or "{}")
            return LoadReport(origin, target_name, fingerprint, skipped=True,
                              tables=dict(saved.get("tables", {})),
                              coercions=[Coercion(**c) for c in saved.get("coercions", [])])
        if latest is None and self._exists(database) and not replace:
            raise LoadError(f"database {database!r} already exists and polysql did not load it; "
                            f"pass replace=True to replace it, or choose another database")
        report = LoadReport(origin, target_name, fingerprint)
        timed_report = timed(lambda: self._build(source, database, mode, report))
        self._record(database, fingerprint, {**asdict(timed_report), "load_format": LOAD_FORMAT})
        return timed_report

    def _build(self, source: Backend, database: str, mode: Any,
               report: LoadReport) -> LoadReport:
        source_tables = source.tables()
        tables = rename_tables(source_tables, mode)
        staging = f"polysql_staging_{uuid.uuid4().hex[:12]}"
        self._command(f"CREATE DATABASE {quote_ident(staging)}")
        notes: list[Coercion] = []
        try:
            for origin, table in zip(source_tables, tables, strict=True):
                spec = table_spec(table)
                target = f"{quote_ident(staging)}.{quote_ident(spec.name)}"
                self._command(f"CREATE TABLE {target} ({spec.columns_sql()}) "
                              f"{spec.engine_sql(disk=None)}")
                count = 0
                names = [name for name, _ in spec.columns]
                for batch in source.read_table(origin):
                    # rows are read by the source's names and inserted by position
                    renamed = pa.RecordBatch.from_arrays(batch.columns, names=names)
                    self.client.insert_arrow(spec.name, pa.Table.from_batches([renamed]),
                                             database=staging,
                                             settings=WRITER_SETTINGS)
                    count += batch.num_rows
                if table.row_count is not None and count != table.row_count:
                    raise LoadError(f"table {table.name!r}: the source reported "
                                    f"{table.row_count} rows but {count} arrived")
                report.tables[spec.name] = count
                notes.extend(index_notes(table))
            self._record(database, _IN_PROGRESS, {})
            old = f"polysql_old_{uuid.uuid4().hex[:12]}"
            existed = self._exists(database)
            if existed:
                self._command(f"RENAME DATABASE {quote_ident(database)} TO {quote_ident(old)}")
            self._command(f"RENAME DATABASE {quote_ident(staging)} TO {quote_ident(database)}")
            if existed:
                self._command(f"DROP DATABASE {quote_ident(old)} SYNC")
        except Exception:
            with contextlib.suppress(Exception):
                self._command(f"DROP DATABASE IF EXISTS {quote_ident(staging)} SYNC")
            raise
        report.coercions = source_coercions(source) + notes
        return report
