"""An engine that cannot run a statement at all is an outage, never an answer to score.

The outages here are real: a SQLite backend that was closed answers every statement with an
``unavailable`` result, as a server backend whose server went away does."""

from __future__ import annotations

from pathlib import Path

import pytest
from polysql_testkit.sqlite_files import built_sqlite

import polysql
from polysql.backends.base import Backend
from polysql.core.errors import EngineUnavailableError
from polysql.core.outage import require_available
from polysql.engines.timing import TimingError, time_pair


@pytest.fixture
def database(tmp_path: Path) -> str:
    path = built_sqlite(tmp_path / "db.sqlite", lambda conn: conn.executescript(
        "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);"))
    return f"sqlite:///{path}"


def closed(url: str) -> Backend:
    backend = polysql.connect(url)
    backend.close()
    return backend


def test_answers_and_errors_of_the_sql_pass_through(database: str) -> None:
    with polysql.connect(database) as backend:
        answer = backend.execute("SELECT x FROM t ORDER BY x")
        error = backend.execute("SELECT nope FROM t")
    assert require_available(answer, "the query") is answer
    assert require_available(error, "the query") is error  # the SQL's own fault: scored
    assert not answer.unavailable and not error.unavailable


def test_a_closed_backend_answers_unavailable_and_that_is_raised(database: str) -> None:
    result = closed(database).execute("SELECT x FROM t")
    assert result.unavailable
    with pytest.raises(EngineUnavailableError) as raised:
        require_available(result, "the rewrite of case q1")
    message = str(raised.value)
    assert message.startswith("the rewrite of case q1 could not run on sqlite")
    assert "unavailable" in message and "nothing was scored" in message


def test_timing_on_an_engine_that_went_away_is_an_outage_not_a_timing_error(
        database: str) -> None:
    with pytest.raises(EngineUnavailableError) as raised:
        time_pair(closed(database), "SELECT x FROM t", "SELECT x FROM t WHERE x > 0",
                  warmup=0, runs=1)
    assert not isinstance(raised.value, TimingError)
    assert str(raised.value).startswith("the input (measured timing run) could not run on sqlite")
