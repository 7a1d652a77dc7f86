"""BigQuery for the shared conformance suite: load a SQLite file into a fresh dataset and hand
back a read-only evaluation backend; delete the dataset afterwards.

Where: POLYSQL_BIGQUERY_URL when set (``bigquery://project`` for the real service -- the dataset
part is replaced per tag -- or one with ``?emulator=...`` for an emulator started elsewhere, as
.ci/run may do); otherwise a bqemulator this process starts itself (see bigquery_emulator).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

from polysql.backends.base import Backend
from polysql.core.errors import EngineUnavailableError
from polysql_testkit import bigquery_emulator
from polysql_testkit.availability import client_problem

NAME = "bigquery"
PROJECT = "polysql-test"
# Four billion rows from a cross join: minutes on the emulator's DuckDB, tens of seconds or more on
# BigQuery, and no table bytes read (so nothing billed beyond the slot time).
SLOW_QUERY = ("SELECT COUNT(*) FROM UNNEST(GENERATE_ARRAY(1, 200000)) AS a "
              "CROSS JOIN UNNEST(GENERATE_ARRAY(1, 200000)) AS b WHERE MOD(a * b, 7) = 3")


class ServerUnavailable(Exception):
    """Neither a configured BigQuery nor the emulator can be used; the message says why."""


def base_url() -> URL:
    """The project URL (dataset still to be chosen); starts the emulator when nothing is set."""
    configured = os.environ.get("POLYSQL_BIGQUERY_URL", "").strip()
    if configured:
        return make_url(configured)
    problem = client_problem(NAME)  # no emulator is built for a client that is not there
    if problem is not None:
        raise ServerUnavailable(problem)
    try:
        endpoint = bigquery_emulator.shared_endpoint()
    except bigquery_emulator.EmulatorUnavailable as exc:
        raise ServerUnavailable(str(exc)) from exc
    return make_url(f"bigquery://{PROJECT}?emulator={endpoint}")


def dataset_url(tag: str, *, base: URL | None = None) -> URL:
    return (base or base_url()).set(database=f"polysql_conformance_{tag.lower()}")


def _backend_class() -> type[Backend]:
    problem = client_problem(NAME)
    if problem is not None:
        raise ServerUnavailable(problem)
    from polysql.backends.bigquery.backend import BigQueryBackend

    return BigQueryBackend


def provision(sqlite_path: Path, tag: str) -> Backend:
    """Load ``sqlite_path`` into the dataset for ``tag`` (replacing any earlier copy) and return
    an evaluation backend on it."""
    backend_class = _backend_class()
    url = dataset_url(tag)
    try:
        with _sqlite(sqlite_path) as source, \
                backend_class.connect(url, read_only=False) as target:
            target.load(source, replace=True)
        return backend_class.connect(url)
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc


def _sqlite(path: Path) -> Backend:
    from polysql.engines.registry import connect

    return connect(f"sqlite:///{Path(path).resolve()}")


def cleanup(tag: str) -> None:
    """Delete the tag's dataset (nothing to do if it does not exist)."""
    backend_class = _backend_class()
    try:
        backend_class.drop(dataset_url(tag))  # type: ignore[attr-defined]
    except EngineUnavailableError as exc:
        raise ServerUnavailable(str(exc)) from exc
    except Exception as exc:  # the emulator may already be gone at session end
        raise ServerUnavailable(f"cannot delete the dataset for {tag}: {exc}") from exc



# -- load lifecycle targets (tests/conformance/test_load_lifecycle.py) -------------------------

#: conformance behaviours that do not apply to BigQuery, each with the reason
NOT_APPLICABLE: dict[str, str] = {}


def unreachable_url() -> tuple[str, str]:
    """An emulator URL on a loopback port nothing listens on, and what the refusal names."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    return f"bigquery://{PROJECT}/d?emulator=http://127.0.0.1:{port}", f"127.0.0.1:{port}"


def fresh_target(tag: str, workdir: Path) -> tuple[str, dict[str, Any]]:
    """(URL, connect options) of a dataset no load has touched."""
    return dataset_url(tag).render_as_string(hide_password=False), {}


def _client(url: str) -> Any:
    """The plain google client on the target's project (administration only)."""
    _backend_class()
    from polysql.backends.bigquery.connect import make_client, parse_target

    return make_client(parse_target(make_url(url)))


def drop_target(url: str, options: dict[str, Any]) -> None:
    _backend_class().drop(make_url(url))  # type: ignore[attr-defined]


def staging_leftovers(url: str) -> list[str]:
    """The staging datasets a load of this dataset builds (``<dataset>_polysql_staging_*``)."""
    dataset = make_url(url).database
    client = _client(url)
    try:
        return sorted(d.dataset_id for d in client.list_datasets()
                      if d.dataset_id.startswith(f"{dataset}_polysql_staging"))
    finally:
        client.close()


def make_foreign(url: str) -> None:
    """The dataset, holding a table ``precious`` that polysql did not load."""
    from google.cloud import bigquery

    parsed = make_url(url)
    client = _client(url)
    try:
        client.create_dataset(f"{parsed.host}.{parsed.database}")
        client.create_table(bigquery.Table(f"{parsed.host}.{parsed.database}.precious",
                                           schema=[bigquery.SchemaField("k", "INT64")]))
    finally:
        client.close()


def foreign_tables(url: str) -> list[str]:
    """The dataset's tables, listed with the plain client."""
    parsed = make_url(url)
    client = _client(url)
    try:
        return sorted(t.table_id for t in client.list_tables(f"{parsed.host}.{parsed.database}"))
    finally:
        client.close()
