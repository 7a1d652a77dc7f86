"""Shared fixtures: one conformance suite, run on every engine.

``backend`` is a session fixture parametrized over ``ENGINES``. Each param carries a pytest marker
named after the engine, so ``pytest -m duckdb`` runs only DuckDB. It yields a read-only
evaluation :class:`~polysql.backends.base.Backend` holding a copy of a small fixture database
(``FIXTURE_SQL`` + ``FIXTURE_ROWS``: mixed-case names, NULLs, dates, NUMERIC money, booleans,
accents, trailing spaces, duplicate rows) built with sqlite3 and loaded with ``polysql.load``.
``writable_backend`` yields an empty scratch database of the same engine opened for writing.

Adding an engine is one entry in ``ENGINES``: a :class:`EngineEntry` that provisions its copy of
the fixture (server engines go through their ``polysql_testkit.engine_<name>`` hook, which also cleans
up). If the engine cannot be reached (client not installed, server down) provisioning raises
``EngineUnavailableError`` and its tests are skipped with the reason (for a missing client, the
``pip install 'polysql[<extra>]'`` that adds it) -- unless the engine is named in
``POLYSQL_REQUIRE`` (comma-separated, e.g. ``POLYSQL_REQUIRE=sqlite,duckdb`` in CI), in which case
they fail. The skip-or-fail rule lives in :mod:`polysql_testkit.availability`.

Gaps are declared on the test, ibis-style::

    @pytest.mark.notimpl(["duckdb"], reason="polysql does not map X yet")
    @pytest.mark.notyet(["mysql"], reason="the engine lacks X")
    @pytest.mark.never(["sqlite"], reason="X makes no sense on SQLite")

For the listed engines the test becomes a strict xfail: once the gap is fixed the run fails until
the marker is removed.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sqlite3
import time
import zoneinfo
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
import sqlglot
import sqlglot.errors
from polysql_testkit import availability

import polysql
from polysql.backends import catalog
from polysql.backends.base import Backend
from polysql.core.errors import EngineUnavailableError


def _far_from_utc() -> str:
    """Pacific/Chatham (UTC+12:45, +13:45 in its summer) where the system's zone database has it;
    else the same offset as a POSIX rule, which the C library reads without one."""
    if any((Path(folder) / "Pacific" / "Chatham").is_file() for folder in zoneinfo.TZPATH):
        return "Pacific/Chatham"
    return "<+1345>-13:45"


# The whole suite runs in a time zone far from UTC, set before any engine starts or a driver is
# imported (polysql imports them lazily): verdicts must not depend on where polysql runs, and an
# engine or driver that reads the machine's zone shows up as a failing test rather than on a
# user's machine only. Subprocesses (the Spark JVM, emulators, the CLI) inherit it.
os.environ["TZ"] = _far_from_utc()
if hasattr(time, "tzset"):
    time.tzset()

GAP_MARKERS = ("notimpl", "notyet", "never")


@dataclass(frozen=True, slots=True)
class EngineEntry:
    """How the suite gets at one engine.

    ``provision(source, workdir)`` loads the SQLite fixture database into the engine and returns
    a read-only evaluation backend; ``cleanup()`` removes what it made (servers). ``scratch_url()``
    is an empty database the tests may write to, for engines where evaluation connections can
    write at all (server engines evaluate as a SELECT-only reader, so they have none). Each raises
    EngineUnavailableError when the engine cannot be reached.
    """

    provision: Callable[[Path, Path], Backend]
    cleanup: Callable[[], None] = lambda: None
    scratch_url: Callable[[], str] | None = None


def _file_engine(scheme: str, suffix: str) -> Callable[[Path, Path], Backend]:
    def provision(source: Path, workdir: Path) -> Backend:
        url = f"{scheme}:///{workdir / ('fixture' + suffix)}"
        polysql.load(f"sqlite:///{source}", url)
        return polysql.connect(url)

    return provision


def _server_engine(module_name: str) -> EngineEntry:
    """A server engine through its polysql_testkit.engine_<name> hook (one database per session)."""
    tag = f"suite{os.getpid()}"

    def hook() -> Any:
        return importlib.import_module(f"polysql_testkit.engine_{module_name}")

    def provision(source: Path, workdir: Path) -> Backend:
        # before the hook: hooks import the backend's client, and emulators are built and
        # started for nothing when the client cannot talk to them
        problem = availability.client_problem(module_name)
        if problem is not None:
            raise EngineUnavailableError(problem)
        engine = hook()
        try:
            return engine.provision(source, tag)
        except engine.ServerUnavailable as exc:
            raise EngineUnavailableError(str(exc)) from exc

    def cleanup() -> None:
        engine = hook()
        with contextlib.suppress(engine.ServerUnavailable):
            engine.cleanup(tag)

    return EngineEntry(provision=provision, cleanup=cleanup)


ENGINES: dict[str, EngineEntry] = {
    "sqlite": EngineEntry(_file_engine("sqlite", ".sqlite"), scratch_url=lambda: "sqlite://"),
    "duckdb": EngineEntry(_file_engine("duckdb", ".duckdb"), scratch_url=lambda: "duckdb://"),
    "postgres": _server_engine("postgres"),
    "mysql": _server_engine("mysql"),
    "spark": _server_engine("spark"),
    "snowflake": _server_engine("snowflake"),
    "bigquery": _server_engine("bigquery"),
    "clickhouse": _server_engine("clickhouse"),
}


def pytest_configure(config: pytest.Config) -> None:
    """One marker per engine, so `pytest -m duckdb` selects its tests; registered from the
    installed engines rather than listed in pyproject, so adding an engine edits nothing here."""
    for info in catalog.infos():
        config.addinivalue_line("markers", f"{info.name}: tests run against the "
                                           f"{info.display_name} backend")


# -- the fixture database --------------------------------------------------------------------

FIXTURE_SQL = """
CREATE TABLE "Customers" (
    "CustomerID" INTEGER PRIMARY KEY,
    "Name" TEXT NOT NULL,
    "City" VARCHAR(40),
    "Joined" DATE,
    "IsActive" BOOLEAN,
    "Balance" NUMERIC(10, 2)
);
CREATE TABLE "order items" (
    "OrderID" INTEGER,
    "CustomerID" INTEGER REFERENCES "Customers" ("CustomerID"),
    "Amount" DECIMAL(8, 2),
    "PlacedAt" DATETIME,
    "qty" INTEGER,
    "Note" TEXT
);
"""

FIXTURE_ROWS: dict[str, list[tuple[Any, ...]]] = {
    "Customers": [
        (1, "Zoë", "Zürich", "2020-01-15", 1, 120.5),
        (2, "José ", "São Paulo", "2021-06-30", 0, 0),
        (3, "Ann  ", None, None, None, None),
        (4, "Bob", "New York", "2019-12-31", 1, -15.25),
    ],
    "order items": [
        (10, 1, 19.99, "2021-03-01 10:15:00", 2, "gift"),
        (10, 1, 19.99, "2021-03-01 10:15:00", 2, "gift"),  # an exact duplicate row
        (11, 2, 5, "2021-03-02 08:00:00", 1, None),
        (12, 4, None, None, None, "  padded  "),
    ],
}

FIXTURE_COLUMNS: dict[str, list[str]] = {
    "Customers": ["CustomerID", "Name", "City", "Joined", "IsActive", "Balance"],
    "order items": ["OrderID", "CustomerID", "Amount", "PlacedAt", "qty", "Note"],
}


def build_fixture_database(path: Path) -> Path:
    """Write the fixture database with plain sqlite3 (independent of the code under test)."""
    conn = sqlite3.connect(path)
    try:
        conn.executescript(FIXTURE_SQL)
        for table, rows in FIXTURE_ROWS.items():
            marks = ", ".join("?" * len(rows[0]))
            conn.executemany(f'INSERT INTO "{table}" VALUES ({marks})', rows)
        conn.commit()
    finally:
        conn.close()
    return path


@pytest.fixture(scope="session")
def fixture_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Path of the SQLite source every engine's copy is loaded from (do not modify)."""
    return build_fixture_database(tmp_path_factory.mktemp("source") / "fixture.sqlite")


# -- engines ---------------------------------------------------------------------------------

def required_engines() -> set[str]:
    return availability.required_names()


def unavailable(name: str, reason: str) -> NoReturn:
    """Skip (or, for a required engine, fail) because engine ``name`` cannot be used."""
    availability.unavailable(name, reason)


def _engine_params() -> list[Any]:
    return [pytest.param(name, marks=getattr(pytest.mark, name), id=name) for name in ENGINES]


@pytest.fixture(scope="session")
def engine_backends(fixture_db: Path,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Backend]]:
    """``backend_of(engine)``: a read-only evaluation backend on that engine's copy of the fixture
    database, provisioned once per session. An engine found unavailable is not tried again, so an
    unreachable server costs one connection attempt, not one per test."""
    opened: dict[str, Backend | EngineUnavailableError] = {}

    def backend_of(name: str) -> Backend:
        if name not in opened:
            try:
                opened[name] = ENGINES[name].provision(fixture_db, tmp_path_factory.mktemp(name))
            except EngineUnavailableError as exc:
                opened[name] = exc
        known = opened[name]
        if isinstance(known, EngineUnavailableError):
            raise known
        return known

    yield backend_of
    for name, known in opened.items():
        if isinstance(known, Backend):
            known.close()
            ENGINES[name].cleanup()


@pytest.fixture(scope="session", params=_engine_params())
def backend(request: pytest.FixtureRequest,
            engine_backends: Callable[[str], Backend]) -> Backend:
    """A read-only evaluation connection to ``request.param``'s copy of the fixture database."""
    name: str = request.param
    try:
        return engine_backends(name)
    except EngineUnavailableError as exc:
        unavailable(name, str(exc))


@pytest.fixture(params=[p for p in _engine_params() if ENGINES[p.values[0]].scratch_url])
def writable_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """An empty scratch database of ``request.param``'s engine, opened for writing."""
    name: str = request.param
    scratch_url = ENGINES[name].scratch_url
    assert scratch_url is not None
    try:
        conn = polysql.connect(scratch_url(), read_only=False)
    except EngineUnavailableError as exc:
        unavailable(name, str(exc))
    with conn:
        yield conn


@pytest.fixture(autouse=True)
def _declared_gaps(request: pytest.FixtureRequest) -> None:
    """Turn notimpl/notyet/never markers naming this test's engine into strict xfails."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None:
        return
    engine = callspec.params.get("backend", callspec.params.get("writable_backend"))
    if engine is None:
        return
    for marker in request.node.iter_markers():
        if marker.name not in GAP_MARKERS:
            continue
        engines = marker.args[0] if marker.args else marker.kwargs.get("engines", ())
        if engine in engines:
            reason = marker.kwargs.get("reason", "")
            request.applymarker(pytest.mark.xfail(
                strict=True, raises=marker.kwargs.get("raises"),
                reason=f"{marker.name} on {engine}: {reason}".rstrip(": ")))


# -- SQL written once for every engine -------------------------------------------------------

# Engines whose default SQL mode reads "double-quoted" text as an identifier.
_ANSI_QUOTING = {"sqlite", "duckdb", "postgres"}
# A statement that runs far longer than any test timeout. MariaDB stops a runaway recursive CTE
# after max_recursive_iterations rows instead of running on, so servers sleep instead.
SLOW_QUERIES = {
    "postgres": "SELECT pg_sleep(600)",
    "mysql": "SELECT SLEEP(600)",
}
LONG_RECURSION = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@pytest.fixture
def q(backend: Backend) -> Callable[[str], str]:
    """Test SQL is written with "double-quoted" identifiers; this renders it for the engine
    under test (sqlglot, statement by statement). Text sqlglot cannot parse -- the syntax-error
    tests -- is passed through unchanged."""
    if backend.name in _ANSI_QUOTING:
        return lambda text: text

    def render(text: str) -> str:
        try:
            statements = sqlglot.transpile(text, read="postgres", write=backend.dialect)
        except sqlglot.errors.SqlglotError:
            return text
        return "; ".join(statements) + (";" if text.rstrip().endswith(";") else "")

    return render


@pytest.fixture
def slow_query(backend: Backend) -> str:
    """A statement that outlives any test timeout: from SLOW_QUERIES, else the engine hook's
    SLOW_QUERY (polysql_testkit.engine_<name>), else an endless recursive CTE."""
    if backend.name in SLOW_QUERIES:
        return SLOW_QUERIES[backend.name]
    try:
        hook = importlib.import_module(f"polysql_testkit.engine_{backend.name}")
    except ImportError:
        return LONG_RECURSION
    return getattr(hook, "SLOW_QUERY", LONG_RECURSION)
