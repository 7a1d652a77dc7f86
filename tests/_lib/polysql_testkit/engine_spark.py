"""Spark SQL for the shared conformance suite: load a SQLite file into a database of its own in a
temporary warehouse and hand back an evaluation backend; remove it all again afterwards.

The engine is POLYSQL_SPARK_URL (default ``spark://local[2]``: an embedded session in the test
process, started once and shared by every Spark backend of the process). A Spark Connect URL
(``sc://HOST:PORT``) runs the suite against that server instead; its tables then live on the
server and are dropped by ``cleanup``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from sqlalchemy.engine import URL, make_url

from polysql.backends.base import Backend
from polysql.errors import EngineUnavailableError
from polysql_testkit.availability import client_problem

NAME = "spark"
DEFAULT_URL = "spark://local[2]"
# Far longer than any test timeout, and cancellable: a trillion-row cross join.
SLOW_QUERY = "SELECT count(*) FROM range(1000000) a CROSS JOIN range(1000000) b"

_warehouses: dict[str, Path] = {}


class ServerUnavailable(Exception):
    """Spark cannot be used here (pyspark or Java missing, Connect server down)."""


def base_url() -> URL:
    return make_url(os.environ.get("POLYSQL_SPARK_URL", DEFAULT_URL))


def database_name(tag: str) -> str:
    from polysql.backends._spark_url import evaluation_database_name

    return evaluation_database_name("conformance", tag)


def target_url(tag: str) -> URL:
    url = base_url().set(database=database_name(tag))
    if url.get_backend_name() == "sc":
        return url
    if tag not in _warehouses:
        _warehouses[tag] = Path(tempfile.mkdtemp(prefix=f"polysql-spark-{tag}-"))
    return url.update_query_dict({"warehouse": str(_warehouses[tag])})


def _spark_backend() -> type:
    problem = client_problem(NAME)  # the backend imports pyspark only when it connects
    if problem is not None:
        raise ServerUnavailable(problem)
    from polysql.backends.spark import SparkBackend

    return SparkBackend


def provision(sqlite_path: Path, tag: str) -> Backend:
    """Load ``sqlite_path`` into the database for ``tag`` (replacing any earlier copy) and
    return an evaluation backend on it."""
    backend_class = _spark_backend()
    from polysql.registry import connect

    url = target_url(tag)
    try:
        with connect(f"sqlite:///{Path(sqlite_path).resolve()}") as source, \
                backend_class.connect(url, read_only=False) as target:
            target.load(source, replace=True)
        return backend_class.connect(url)
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc


def cleanup(tag: str) -> None:
    """Drop the tag's database and delete its warehouse."""
    backend_class = _spark_backend()
    from polysql.backends._spark_load import drop_database

    try:
        with backend_class.connect(target_url(tag), read_only=False) as target:
            drop_database(target)
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc
    finally:
        warehouse = _warehouses.pop(tag, None)
        if warehouse is not None:
            shutil.rmtree(warehouse, ignore_errors=True)
