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
import socket
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

from polysql.backends.base import Backend
from polysql.core.errors import EngineUnavailableError
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
    from polysql.backends.spark.connect_url import evaluation_database_name

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
    from polysql.backends.spark.backend import SparkBackend

    return SparkBackend


def provision(sqlite_path: Path, tag: str) -> Backend:
    """Load ``sqlite_path`` into the database for ``tag`` (replacing any earlier copy) and
    return an evaluation backend on it."""
    backend_class = _spark_backend()
    from polysql.engines.registry import connect

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
    from polysql.backends.spark.load import drop_database

    try:
        with backend_class.connect(target_url(tag), read_only=False) as target:
            drop_database(target)
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc
    finally:
        warehouse = _warehouses.pop(tag, None)
        if warehouse is not None:
            shutil.rmtree(warehouse, ignore_errors=True)


# -- load lifecycle targets (tests/conformance/test_load_lifecycle.py) -------------------------

#: conformance behaviours that do not apply to Spark, each with the reason
NOT_APPLICABLE: dict[str, str] = {
    "foreign_target_refused": "a Spark evaluation database is a folder of the warehouse (or, "
                              "over Spark Connect, a database) that polysql manages on its own; "
                              "a load swaps the whole of it in, and there are no tables of "
                              "someone else's in it to protect",
}


def unreachable_url() -> tuple[str, str]:
    """A Spark Connect URL on a loopback port nothing listens on, and what the refusal says."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    return f"sc://127.0.0.1:{port}/db", "no Spark Connect server"


def fresh_target(tag: str, workdir: Path) -> tuple[str, dict[str, Any]]:
    """(URL, connect options) of a database no load has touched, in a warehouse of its own
    (embedded) or on the Connect server."""
    url = base_url().set(database=database_name(tag))
    if url.get_backend_name() != "sc":
        url = url.update_query_dict({"warehouse": str(workdir / "warehouse")})
    return url.render_as_string(hide_password=False), {}


def drop_target(url: str, options: dict[str, Any]) -> None:
    """Drop the database (the embedded warehouse goes with the test's directory)."""
    backend_class = _spark_backend()
    from polysql.backends.spark.load import drop_database

    try:
        with backend_class.connect(make_url(url), read_only=False) as target:
            drop_database(target)
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc


def staging_leftovers(url: str) -> list[str]:
    """Staging and old copies a load leaves in the warehouse (or staging databases on the
    Connect server)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sc":
        backend_class = _spark_backend()
        with backend_class.connect(parsed, read_only=False) as admin:
            rows = admin.session.sql("SHOW DATABASES LIKE 'polysql_staging_*'").collect()
        return sorted(row[0] for row in rows)
    warehouse = Path(str(parsed.query["warehouse"]))
    if not warehouse.exists():
        return []
    return sorted(p.name for p in warehouse.iterdir() if p.name.startswith((".staging-", ".old-")))
