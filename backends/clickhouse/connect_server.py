"""A connection to a ClickHouse server over HTTP (clickhouse-connect).

One :class:`ServerSession` per backend: the client is thread-safe, so statements share it. What
runs on it lives with its part: evaluation in :mod:`.execute_server`, loading in
:mod:`.load_server`, the schema in :mod:`.introspect`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import URL

from polysql.backends._common.cancel import Flight
from polysql.backends.clickhouse.execute_server import run_on_server
from polysql.backends.clickhouse.introspect import read_tables
from polysql.backends.clickhouse.load_server import load_on_server
from polysql.backends.clickhouse.screen import Screened
from polysql.backends.clickhouse.types import quote_string
from polysql.core.errors import EngineUnavailableError
from polysql.core.model import Result
from polysql.core.schema import LoadReport, Table

if TYPE_CHECKING:
    from polysql.backends.base import Backend

DEFAULT_PORT = 8123


class ServerSession:
    """One clickhouse-connect client on one database of one server."""

    def __init__(self, client: Any, database: str | None, settings: dict[str, str]) -> None:
        self.client = client
        self.database = database
        self.settings = settings  # the URL's settings for every evaluated statement

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

    def kill(self, query_id: str) -> None:
        """``KILL QUERY`` for one statement of this client (``ASYNC``: do not wait for it)."""
        self.client.command(f"KILL QUERY WHERE query_id = {quote_string(query_id)} ASYNC")

    def json_rows(self, sql: str) -> list[dict[str, Any]]:
        """The rows of an administrative query, as dicts by column name."""
        result = self.client.query(sql)
        return [dict(zip(result.column_names, row, strict=True)) for row in result.result_rows]

    def run(self, screened: Screened, *, timeout: float, max_rows: int, engine: str,
            started: float, flight: Flight | None = None) -> Result:
        """Run one evaluated statement (see :func:`.execute_server.run_on_server`)."""
        return run_on_server(self, screened, timeout=timeout, max_rows=max_rows, engine=engine,
                             started=started, flight=flight)

    def tables(self) -> list[Table]:
        if not self.database:
            return []
        return read_tables(None, self.database, rows=self.json_rows)

    def load(self, source: Backend, *, fingerprint: str | None, replace: bool, names: str,
             target_name: str) -> LoadReport:
        """Load ``source`` into this session's database (see
        :func:`.load_server.load_on_server`)."""
        return load_on_server(self, source, fingerprint=fingerprint, replace=replace,
                              names=names, target_name=target_name)
