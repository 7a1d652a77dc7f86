"""Real engines holding the same small table, so comparisons are made on results the drivers
actually return (SQLite: dynamic types, text dates, 0/1 booleans; DuckDB: Decimal, date,
datetime, bool)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import polysql
from polysql.backends.base import Backend

# One table, written once, loaded into both engines. Region 'east' has three rows so that
# ORDER BY region has ties and a LIMIT can cut through them.
SALES_DDL = (
    "CREATE TABLE sales (id INTEGER, region VARCHAR(10), amount DECIMAL(10,2), qty INTEGER, "
    "price DOUBLE, day DATE, ts TIMESTAMP, flag BOOLEAN, note VARCHAR(10))"
)
SALES_ROWS = [
    "(1, 'east', 10.50, 2, 0.1, '2024-01-05', '2024-01-05 00:00:00', TRUE, 'a')",
    "(2, 'west', 20.00, 1, 0.1, '2024-01-06', '2024-01-06 12:30:00', FALSE, 'b')",
    "(3, 'east', 10.50, 3, 0.1, '2024-01-07', '2024-01-07 08:00:00.5', TRUE, NULL)",
    "(4, 'north', NULL, 0, 2.5, '2024-01-07', '2024-01-07 09:15:00', NULL, 'c')",
    "(5, 'west', 7.25, 2, 3.75, '2024-01-08', '2024-01-08 00:00:00', FALSE, 'd')",
    "(6, 'east', 20.00, 5, 1.5, '2024-01-09', '2024-01-09 23:59:59', TRUE, 'e')",
]


def _loaded(url: str) -> Backend:
    engine = polysql.connect(url, read_only=False)
    for statement in [SALES_DDL, *(f"INSERT INTO sales VALUES {row}" for row in SALES_ROWS)]:
        result = engine.execute(statement)
        assert result.ok, f"{url}: {statement}: {result.error}"
    return engine


@pytest.fixture(scope="module")
def sqlite() -> Iterator[Backend]:
    engine = _loaded("sqlite://")
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def duckdb() -> Iterator[Backend]:
    engine = _loaded("duckdb:///:memory:")
    yield engine
    engine.close()


def _set_up(url: str, statements: list[str]) -> Backend:
    engine = polysql.connect(url, read_only=False)
    for statement in statements:
        result = engine.execute(statement)
        assert result.ok, f"{url}: {statement}: {result.error}"
    return engine


@pytest.fixture
def lite(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """A scratch SQLite database set up with the test module's ``SETUP`` statements."""
    engine = _set_up("sqlite://", request.module.SETUP)
    yield engine
    engine.close()


@pytest.fixture
def duck(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """A scratch DuckDB database set up with the test module's ``SETUP`` statements."""
    engine = _set_up("duckdb://", request.module.SETUP)
    yield engine
    engine.close()
