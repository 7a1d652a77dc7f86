"""The debug task's execution match judges as a sweep does, re-running the reference on its
engine (real SQLite) where the verdict needs it."""

from __future__ import annotations

from pathlib import Path

import pytest
from polysql_testkit.sqlite_files import built_sqlite

import polysql
from polysql.debug.metrics import execution_match

SCHEMA = """
CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER);
INSERT INTO player VALUES (1, 'Ada', 90), (2, 'Bo', 75), (3, 'Cy', 90), (4, 'Di', 60);
"""


@pytest.fixture
def backend(tmp_path: Path):
    path = built_sqlite(tmp_path / "players.sqlite", lambda conn: conn.executescript(SCHEMA))
    with polysql.connect(f"sqlite:///{path}") as engine:
        yield engine


def test_another_row_of_a_tie_group_the_limit_cut_matches(backend) -> None:
    """Ada and Cy share the top score: a fix that returns Cy answers the reference's question;
    comparing the two results alone (the reference keeps Ada) cannot see that."""
    reference = "SELECT name FROM player ORDER BY score DESC LIMIT 1"
    fix = "SELECT name FROM player ORDER BY score DESC, name DESC LIMIT 1"
    assert not polysql.compare(backend.execute(reference), backend.execute(fix),
                               gold_sql=reference).match
    assert execution_match(fix, [reference], backend)
    assert not execution_match("SELECT name FROM player ORDER BY score LIMIT 1", [reference],
                               backend)


def test_any_reference_may_match_and_a_failing_one_matches_nothing(backend) -> None:
    prediction = "SELECT count(*) FROM player"
    assert execution_match(prediction, ["SELECT nope FROM player", prediction], backend)
    assert not execution_match(prediction, ["SELECT nope FROM player"], backend)
    assert not execution_match("SELECT nope FROM player", [prediction], backend)
