"""A PostgreSQL server whose disk is full, for real: a statement that needs space fails as an
outage of the engine (it would fail a correct prediction just the same), never as the
statement's own error, and the connection stays usable for statements that need none.

The full disk is a 1 MiB file system mounted for the test, holding the tablespace the
evaluation database's temporary files go to; a sort that spills then fails with SQLSTATE 53100.
Mounting needs root on the machine the server runs on; elsewhere these tests skip.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from polysql_testkit import pg_fixtures
from sqlalchemy.engine import URL

from polysql.engines.registry import connect

pytestmark = pytest.mark.postgres

fx = pg_fixtures
admin_url, make_sqlite = fx.admin_url, fx.make_sqlite


@pytest.fixture(scope="module")
def full_disk_url(admin_url: URL, make_sqlite: fx.SqliteBuilder) -> Iterator[str]:
    """An evaluation database loaded as ``polysql load`` loads one (so the CLI evaluates on it
    with its usual reader) whose temporary files have no room; dropped afterwards."""
    source = make_sqlite("disk_full", "CREATE TABLE item (id INTEGER PRIMARY KEY);"
                                      "INSERT INTO item VALUES (1), (2);")
    with fx.evaluation_copy(admin_url, source, "polysql_disk_full") as (target_url, database), \
            fx.full_temp_tablespace(admin_url) as tablespace:
        fx.spill_to(admin_url, database, tablespace)
        yield target_url
        with fx.admin_connection(admin_url, "postgres") as admin:
            admin.execute(f'ALTER DATABASE "{database}" RESET ALL')


def test_a_statement_the_full_disk_stops_is_an_outage(full_disk_url: str) -> None:
    with connect(full_disk_url) as backend:
        spilled = backend.execute(fx.SPILLING_QUERY, timeout=30)
        assert spilled.error is not None, spilled.rows
        assert (spilled.error.kind, spilled.error.sqlstate) == ("unavailable", "53100")
        assert "No space left on device" in spilled.error.message
        assert spilled.unavailable
        # the server itself is fine: the next statement on the same backend answers
        after = backend.execute("SELECT count(*) FROM item", timeout=30)
        assert after.ok and after.rows == [(2,)]


def test_compare_says_the_engine_could_not_run_it_rather_than_mismatch(full_disk_url: str,
                                                                       tmp_path) -> None:
    gold = tmp_path / "gold.sqlite"
    fx.build_sqlite(gold, "CREATE TABLE item (id INTEGER PRIMARY KEY);")
    done = subprocess.run(
        [sys.executable, "-m", "polysql.cli", "compare", "--db", f"sqlite:///{gold}",
         "--gold", "SELECT 299999", "--pred-db", full_disk_url, "--pred", fx.SPILLING_QUERY],
        capture_output=True, text=True, timeout=120)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 3, output
    assert "could not run the predicted query" in output and "No space left on device" in output
    assert "mismatch" not in output
