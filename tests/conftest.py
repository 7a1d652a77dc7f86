"""Shared fixtures: one conformance suite, run on every engine.

``backend`` is a session fixture parametrized over ``ENGINES``. Each param carries a pytest marker
named after the engine, so ``pytest -m duckdb`` runs only DuckDB. It yields a read-only
evaluation :class:`~polysql.backends.base.Backend` holding a copy of a small fixture database
(``FIXTURE_SQL`` + ``FIXTURE_ROWS``: mixed-case names, NULLs, dates, NUMERIC money, booleans,
accents, trailing spaces, duplicate rows) built with sqlite3 and loaded with ``polysql.load``.
``writable_backend`` yields an empty scratch database of the same engine opened for writing.

Adding an engine is one entry in ``ENGINES``: a :class:`EngineEntry` saying where its fixture copy
lives and where a scratch database is. If the engine cannot be reached (client not installed,
server down, URL not configured) the factory raises ``EngineUnavailableError`` and its tests are
skipped with the reason -- unless the engine is named in ``POLYSQL_REQUIRE`` (comma-separated,
e.g. ``POLYSQL_REQUIRE=sqlite,duckdb`` in CI), in which case they fail.

Gaps are declared on the test, ibis-style::

    @pytest.mark.notimpl(["duckdb"], reason="polysql does not map X yet")
    @pytest.mark.notyet(["mysql"], reason="the engine lacks X")
    @pytest.mark.never(["sqlite"], reason="X makes no sense on SQLite")

For the listed engines the test becomes a strict xfail: once the gap is fixed the run fails until
the marker is removed.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

import polysql
from polysql.backends.base import Backend
from polysql.errors import EngineUnavailableError

GAP_MARKERS = ("notimpl", "notyet", "never")


@dataclass(frozen=True, slots=True)
class EngineEntry:
    """How the suite gets at one engine.

    ``copy_url(workdir)`` is the URL the fixture database is loaded into; ``scratch_url()`` an
    empty database the tests may write to. Both raise EngineUnavailableError when the engine
    cannot be reached.
    """

    copy_url: Callable[[Path], str]
    scratch_url: Callable[[], str]


ENGINES: dict[str, EngineEntry] = {
    "sqlite": EngineEntry(lambda workdir: f"sqlite:///{workdir / 'fixture.sqlite'}",
                         lambda: "sqlite://"),
    "duckdb": EngineEntry(lambda workdir: f"duckdb:///{workdir / 'fixture.duckdb'}",
                         lambda: "duckdb://"),
}


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
    return {name.strip() for name in os.environ.get("POLYSQL_REQUIRE", "").split(",") if name.strip()}


def unavailable(name: str, reason: str) -> NoReturn:
    """Skip (or, for a required engine, fail) because engine ``name`` cannot be used."""
    if name in required_engines():
        pytest.fail(f"engine {name!r} is required by POLYSQL_REQUIRE but unavailable: {reason}",
                    pytrace=False)
    pytest.skip(f"engine {name!r} unavailable: {reason}")


def _engine_params() -> list[Any]:
    return [pytest.param(name, marks=getattr(pytest.mark, name), id=name) for name in ENGINES]


@pytest.fixture(scope="session")
def loaded_copies(fixture_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], str]:
    """``url_of(engine)``: the URL of that engine's copy of the fixture database, loaded once per
    session (tests that parametrize ``backend`` indirectly reuse it). An engine found unavailable
    is not tried again, so an unreachable server costs one connection timeout, not one per test."""
    urls: dict[str, str | EngineUnavailableError] = {}

    def url_of(name: str) -> str:
        if name not in urls:
            try:
                url = ENGINES[name].copy_url(tmp_path_factory.mktemp(name))
                polysql.load(f"sqlite:///{fixture_db}", url)
                urls[name] = url
            except EngineUnavailableError as exc:
                urls[name] = exc
        known = urls[name]
        if isinstance(known, EngineUnavailableError):
            raise known
        return known

    return url_of


@pytest.fixture(scope="session", params=_engine_params())
def backend(request: pytest.FixtureRequest, loaded_copies: Callable[[str], str]) -> Iterator[Backend]:
    """A read-only evaluation connection to ``request.param``'s copy of the fixture database."""
    name: str = request.param
    try:
        conn = polysql.connect(loaded_copies(name))
    except EngineUnavailableError as exc:
        unavailable(name, str(exc))
    with conn:
        yield conn


@pytest.fixture(params=_engine_params())
def writable_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """An empty scratch database of ``request.param``'s engine, opened for writing."""
    name: str = request.param
    try:
        conn = polysql.connect(ENGINES[name].scratch_url(), read_only=False)
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
