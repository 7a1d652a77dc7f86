"""ClickHouse: an evaluation engine and load target, embedded (chdb) or on a server.

URLs: ``clickhouse:///relative/dir`` or ``clickhouse:////absolute/dir`` (embedded, the database
kept in that directory; ``clickhouse://``: a temporary one) and
``clickhouse://user:password@host:8123/database`` (a server over HTTP). Safety: every statement
passes the screen (``screen.py``) and runs with ``readonly=1`` under ``max_execution_time``, with
a client backstop. The two ways in have their own modules where they differ
(``connect_embedded``/``connect_server``, ``execute_server``, ``load_server``). No ``setup.py``:
the engine builds no database from a setup script.

Importing the package is cheap and never imports the engine's client library: the backend class
is loaded on first attribute access (the ``polysql.backends`` entry point names it here).
"""

from __future__ import annotations

from typing import Any

from polysql.backends._common.statement_text import CommentSyntax
from polysql.backends.base import EngineInfo

INFO = EngineInfo(
    name="clickhouse",
    dialect="clickhouse",
    display_name="ClickHouse",
    schemes=("clickhouse",),
    aliases={"clickhouse": "clickhouse://"},
    text_names=("clickhouse",),
    error_vocabulary=(("unknown_column", r"unknown expression identifier"),),
    extra="clickhouse",
    # embedded (chdb) and servers (clickhouse-connect, whose Native decoder chdb's path uses too)
    client_modules=("chdb", "clickhouse_connect"),
    setup_template="""\
CREATE TABLE items (
    id Int32,
    name String,
    price Decimal(10, 2)
) ENGINE = MergeTree ORDER BY id;""",
    comments=CommentSyntax(hash="space_or_bang", double_slash=True),
    copy_layout="datetime digits as used",
)

__all__ = ["INFO", "ClickHouseBackend"]


def __getattr__(name: str) -> Any:
    if name == "ClickHouseBackend":
        from polysql.backends.clickhouse.backend import ClickHouseBackend

        return ClickHouseBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
