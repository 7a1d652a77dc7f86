"""Snowflake (snowflake-connector-python): an evaluation engine and load target, or the fakesnow
emulator.

URLs: ``snowflake://user@account/DATABASE/SCHEMA?warehouse=WH&role=ROLE`` (a real account),
``snowflake://fake:snow@HOST:PORT/DATABASE/SCHEMA?emulator=fakesnow`` (results labelled
emulated). Safety: every evaluated statement is screened (``screen.py``: queries, SHOW, DESCRIBE
and EXPLAIN only) and runs as the reader role when one is given, under the server's statement
timeout, the connector's abort and a client backstop. No ``setup.py``: the engine builds no
database from a setup script.

Importing the package is cheap and never imports the engine's client library: the backend class
is loaded on first attribute access (the ``polysql.backends`` entry point names it here).
"""

from __future__ import annotations

from typing import Any

from polysql.backends._common.statement_text import CommentSyntax
from polysql.backends.base import EngineInfo

INFO = EngineInfo(
    name="snowflake",
    dialect="snowflake",
    display_name="Snowflake",
    schemes=("snowflake",),
    aliases={"snowflake": ""},
    text_names=("snowflake",),
    url_env="POLYSQL_SNOWFLAKE_URL",
    extra="snowflake",
    client_modules=("snowflake.connector",),
    comments=CommentSyntax(double_slash=True),
)

__all__ = ["INFO", "SnowflakeBackend"]


def __getattr__(name: str) -> Any:
    if name == "SnowflakeBackend":
        from polysql.backends.snowflake.backend import SnowflakeBackend

        return SnowflakeBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
