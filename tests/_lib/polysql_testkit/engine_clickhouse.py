"""ClickHouse for the shared conformance suite: load a SQLite file into an evaluation database and
hand back a read-only backend; remove it again afterwards.

By default the engine is embedded chdb, with the database in a directory of its own under the
temporary directory. POLYSQL_CLICKHOUSE_URL (e.g. clickhouse://default@127.0.0.1:8123/) points
the suite at a ClickHouse server instead; each tag then gets its own database there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from sqlalchemy.engine import URL, make_url

from polysql.backends.base import Backend
from polysql.errors import EngineUnavailableError
from polysql.registry import connect

NAME = "clickhouse"
# Hashes every row of a huge generated table: runs far longer than any test timeout, and
# ClickHouse checks max_execution_time between its blocks.
SLOW_QUERY = "SELECT count() FROM numbers(1e13) WHERE NOT ignore(sipHash64(number))"


class ServerUnavailable(Exception):
    """ClickHouse cannot be used (chdb missing, server unreachable); the message says why."""


def server_url() -> URL | None:
    text = os.environ.get("POLYSQL_CLICKHOUSE_URL")
    return make_url(text) if text else None


def target_url(tag: str) -> str:
    server = server_url()
    if server is not None:
        from polysql.backends.clickhouse import evaluation_database_name

        return server.set(database=evaluation_database_name("conformance", tag)) \
            .render_as_string(hide_password=False)
    return f"clickhouse:///{directory(tag)}"


def directory(tag: str) -> Path:
    return Path(tempfile.gettempdir()) / f"polysql-clickhouse-{tag}"


def provision(sqlite_path: Path, tag: str) -> Backend:
    """Load ``sqlite_path`` into the evaluation database for ``tag`` (replacing any earlier
    copy) and return a read-only evaluation backend on it."""
    url = target_url(tag)
    try:
        with connect(f"sqlite:///{Path(sqlite_path).resolve()}") as source, \
                connect(url, read_only=False) as target:
            target.load(source, replace=True)
        return connect(url)
    except (EngineUnavailableError, ImportError) as exc:
        raise ServerUnavailable(str(exc)) from exc


def cleanup(tag: str) -> None:
    """Forget and remove the tag's evaluation database."""
    if server_url() is not None:
        return  # the server keeps it; databases are named per tag, so nothing collides
    from polysql.backends._clickhouse_embedded import engine

    try:
        engine().detach(directory(tag))
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc
    shutil.rmtree(directory(tag), ignore_errors=True)
