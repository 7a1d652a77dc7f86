"""Spark SQL (PySpark): an evaluation engine and load target, in this process or on a cluster.

URLs: ``spark://local[N]/DATABASE`` (embedded), ``spark://HOST:PORT/DATABASE`` (standalone
cluster), ``sc://HOST:PORT/DATABASE`` (Spark Connect). Safety: Spark has no read-only mode, so
every statement is screened (``screen.py``: its text, then Spark's own parse of it) and the
session has file access through SQL switched off (and, in this process, reflection functions
removed); the timeout cancels the statement's job group, with a client backstop.

Importing the package is cheap and never imports the engine's client library: the backend class
is loaded on first attribute access (the ``polysql.backends`` entry point names it here).
"""

from __future__ import annotations

from typing import Any

from polysql.backends.base import EngineInfo

INFO = EngineInfo(
    name="spark",
    dialect="spark",
    display_name="Spark SQL",
    schemes=("spark", "sc"),
    aliases={"spark": "spark://local[2]"},
    text_names=("spark sql", "sparksql", "spark"),
    extra="spark",
    client_modules=("pyspark",),
    setup_template="""\
CREATE TABLE items (
    id INT,
    name STRING,
    price DECIMAL(10, 2)
) USING parquet;""",
)

__all__ = ["INFO", "SparkBackend"]


def __getattr__(name: str) -> Any:
    if name == "SparkBackend":
        from polysql.backends.spark.backend import SparkBackend

        return SparkBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
