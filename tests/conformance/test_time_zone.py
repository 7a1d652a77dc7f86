"""Naive timestamps are read as UTC on every engine, wherever polysql runs.

The suite runs in a time zone far from UTC (tests/conftest.py sets ``TZ``), so an engine that takes
its session zone from the machine -- DuckDB does, and so does a driver decoding zone-less values
in local time -- answers these queries with another instant and fails here. The server engines'
own defaults are moved away from UTC in their backend tests (PostgreSQL and MySQL), since their
zone is the server's, not the machine's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from polysql.backends.base import Backend

# '2021-03-02 08:00:00' (the fixture's "PlacedAt" of order 11) as UTC seconds since 1970
PLACED_AT_EPOCH = int(datetime(2021, 3, 2, 8, 0, tzinfo=UTC).timestamp())

# Each engine's own way to turn the naive "PlacedAt" into an instant and count its seconds: the
# step that reads a naive timestamp in the session's time zone.
EPOCH_OF_NAIVE = {
    "sqlite": 'SELECT CAST(strftime(\'%s\', "PlacedAt") AS INTEGER) FROM "order items" '
              'WHERE "OrderID" = 11',
    "duckdb": 'SELECT CAST(epoch(CAST("PlacedAt" AS TIMESTAMPTZ)) AS BIGINT) FROM "order items" '
              'WHERE "OrderID" = 11',
    "postgres": 'SELECT CAST(EXTRACT(EPOCH FROM CAST("PlacedAt" AS TIMESTAMPTZ)) AS BIGINT) '
                'FROM "order items" WHERE "OrderID" = 11',
    "mysql": "SELECT UNIX_TIMESTAMP(`PlacedAt`) FROM `order items` WHERE `OrderID` = 11",
    "spark": "SELECT unix_timestamp(CAST(`PlacedAt` AS TIMESTAMP)) FROM `order items` "
             "WHERE `OrderID` = 11",
    "clickhouse": "SELECT toUnixTimestamp(`PlacedAt`) FROM `order items` WHERE `OrderID` = 11",
    "bigquery": "SELECT UNIX_SECONDS(TIMESTAMP(`PlacedAt`)) FROM `order items` "
                "WHERE `OrderID` = 11",
    "snowflake": 'SELECT DATE_PART(epoch_second, CAST("PlacedAt" AS TIMESTAMP_LTZ)) '
                 'FROM "order items" WHERE "OrderID" = 11',
}


def test_the_suite_runs_away_from_utc() -> None:
    """Without this the tests below would pass on a machine in UTC whatever the engines do."""
    assert time.localtime().tm_gmtoff != 0, "tests/conftest.py should set a non-UTC TZ"


def test_a_naive_timestamp_is_read_as_utc(backend: Backend) -> None:
    result = backend.execute(EPOCH_OF_NAIVE[backend.name])
    assert result.ok, result.error
    assert [tuple(int(v) for v in row) for row in result.rows] == [(PLACED_AT_EPOCH,)]


def test_a_naive_timestamp_comes_back_unchanged(backend: Backend,
                                                q: Callable[[str], str]) -> None:
    """Read back as it was loaded: naive, or (where an engine's driver zones every timestamp)
    the same wall-clock time in UTC -- not shifted into the machine's zone."""
    result = backend.execute(q('SELECT "PlacedAt" FROM "order items" WHERE "OrderID" = 11'))
    assert result.ok, result.error
    (value,), = result.rows
    if isinstance(value, str):  # SQLite keeps the text it was given
        assert value == "2021-03-02 08:00:00"
        return
    assert value.replace(tzinfo=None) == datetime(2021, 3, 2, 8, 0)
    assert value.tzinfo is None or value.utcoffset().total_seconds() == 0
