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
from typing import Any

from sqlalchemy.engine import URL, make_url

from polysql.backends.base import Backend
from polysql.core.errors import EngineUnavailableError
from polysql.engines.registry import connect

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
        from polysql.backends.clickhouse.backend import evaluation_database_name

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
    from polysql.backends.clickhouse.connect_embedded import engine

    try:
        engine().detach(directory(tag))
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc
    shutil.rmtree(directory(tag), ignore_errors=True)


# -- load lifecycle targets (tests/conformance/test_load_lifecycle.py) -------------------------

#: conformance behaviours that do not apply to ClickHouse, each with the reason
NOT_APPLICABLE: dict[str, str] = {}
#: the object make_foreign() creates: a file (embedded) or a table (server)
FOREIGN_OBJECT = "precious"


def unreachable_url() -> tuple[str, str]:
    """A server URL nothing answers at (port 9), and what the refusal names (the address)."""
    return "clickhouse://default@127.0.0.1:9/db", "127.0.0.1:9"


def fresh_target(tag: str, workdir: Path) -> tuple[str, dict[str, Any]]:
    """(URL, connect options) of a database no load has touched: a directory not yet created in
    the test's own directory (embedded), or a database on the server."""
    server = server_url()
    if server is not None:
        from polysql.backends.clickhouse.backend import evaluation_database_name

        database = evaluation_database_name("conformance", tag)
        return server.set(database=database).render_as_string(hide_password=False), {}
    return f"clickhouse:///{workdir / tag}", {}


def _directory(url: str) -> Path:
    return Path(url.removeprefix("clickhouse:///"))


def _client() -> Any:
    """A plain clickhouse-connect client on the configured server (administration only)."""
    import clickhouse_connect

    server = server_url()
    assert server is not None
    try:
        return clickhouse_connect.get_client(host=server.host or "127.0.0.1",
                                             port=server.port or 8123,
                                             username=server.username or "default",
                                             password=server.password or "")
    except Exception as exc:
        raise ServerUnavailable(f"ClickHouse server at {server.host}:{server.port}: {exc}") from exc


def drop_target(url: str, options: dict[str, Any]) -> None:
    """Forget the embedded database (its directory goes with the test's), or drop it on the
    server."""
    if server_url() is not None:
        database = make_url(url).database
        client = _client()
        try:
            client.command(f"DROP DATABASE IF EXISTS `{database}` SYNC")
            if client.command("EXISTS TABLE polysql_meta.loads"):
                client.command("DELETE FROM polysql_meta.loads WHERE database = {d:String}",
                               parameters={"d": database})
        finally:
            client.close()
        return
    from polysql.backends.clickhouse.connect_embedded import engine

    try:
        engine().detach(_directory(url))
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc


def staging_leftovers(url: str) -> list[str]:
    """Hidden sibling directories a load builds in (embedded), or staging databases (server)."""
    if server_url() is not None:
        client = _client()
        try:
            rows = client.query("SELECT name FROM system.databases "
                                "WHERE name LIKE 'polysql\\\\_staging\\\\_%'").result_rows
        finally:
            client.close()
        return sorted(r[0] for r in rows)
    directory = _directory(url)
    return sorted(p.name for p in directory.parent.iterdir()
                  if p.name.startswith(f".{directory.name}."))


def make_foreign(url: str) -> None:
    """A directory holding a file of someone else's (embedded), or a database polysql did not
    make holding a table (server)."""
    if server_url() is not None:
        database = make_url(url).database
        client = _client()
        try:
            client.command(f"CREATE DATABASE `{database}`")
            client.command(f"CREATE TABLE `{database}`.{FOREIGN_OBJECT} (a Int8) "
                           f"ENGINE = MergeTree ORDER BY a")
        finally:
            client.close()
        return
    directory = _directory(url)
    directory.mkdir()
    (directory / FOREIGN_OBJECT).write_text("keep", encoding="utf-8")


def foreign_tables(url: str) -> list[str]:
    """What the target holds, seen from outside polysql: the directory's top-level entries
    (embedded) or the database's tables (server)."""
    if server_url() is not None:
        client = _client()
        try:
            rows = client.query("SELECT name FROM system.tables WHERE database = {d:String}",
                                parameters={"d": make_url(url).database}).result_rows
        finally:
            client.close()
        return sorted(r[0] for r in rows)
    return sorted(p.name for p in _directory(url).iterdir())
