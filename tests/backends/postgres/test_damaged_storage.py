"""A PostgreSQL server whose storage is damaged under the copy (a page of a table's data file
overwritten, as a failing disk leaves it): reading it fails with SQLSTATE XX001, which a correct
prediction would hit just the same, so it is an outage of the engine, never the statement's own
error; the connection stays usable for the tables that are intact.

Damaging a data file needs the server's data folder on this machine and the right to write to
it; elsewhere these tests skip.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from polysql_testkit import pg_fixtures
from sqlalchemy.engine import URL

from polysql.engines.registry import connect

pytestmark = pytest.mark.postgres

fx = pg_fixtures
admin_url, make_sqlite = fx.admin_url, fx.make_sqlite


@pytest.fixture(scope="module")
def damaged_url(admin_url: URL, make_sqlite: fx.SqliteBuilder) -> Iterator[str]:
    """An evaluation database loaded as ``polysql load`` loads one, whose empty table ``blank``
    has a damaged data file; dropped afterwards."""
    source = make_sqlite("damaged", "CREATE TABLE item (id INTEGER PRIMARY KEY);"
                                    "INSERT INTO item VALUES (1), (2);"
                                    "CREATE TABLE blank (id INTEGER);")
    with fx.evaluation_copy(admin_url, source, "polysql_damaged") as (target_url, database):
        fx.damage_empty_table(admin_url, database, "blank")
        yield target_url


def test_a_damaged_page_is_an_outage_and_the_connection_goes_on(damaged_url: str) -> None:
    with connect(damaged_url) as backend:
        damaged = backend.execute("SELECT count(*) FROM blank", timeout=30)
        assert damaged.error is not None, damaged.rows
        assert (damaged.error.kind, damaged.error.sqlstate) == ("unavailable", "XX001")
        assert "invalid page" in damaged.error.message
        after = backend.execute("SELECT count(*) FROM item", timeout=30)
        assert after.ok and after.rows == [(2,)], after
