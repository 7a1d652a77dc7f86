"""polysql.compare_queries: two queries run on real engines and judged as a sweep judges them.

Each case is one where comparing the two results alone (polysql.compare) cannot reach the
sweep's verdict, because only a re-run of the gold can show it: NULLs placed by the prediction
engine's convention under a LIMIT, a tie group the gold's LIMIT cut, ties among rows ordered by a
key the gold does not return, and results cut by the row cap on both sides. The gold runs on
SQLite, the predictions on SQLite or on a DuckDB copy of the same file (DuckDB sorts NULLs last,
SQLite first).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from polysql_testkit.sqlite_files import built_sqlite

import polysql
from polysql.core.errors import ComparisonError, EngineUnavailableError

SCHEMA = """
CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, team TEXT, score INTEGER);
INSERT INTO player VALUES (1, 'Ada', NULL, 90), (2, 'Bo', 'red', 75), (3, 'Cy', NULL, 90),
                          (4, 'Di', 'blue', 60), (5, 'Ed', 'red', 75), (6, 'Flo', 'green', 50);
"""


@pytest.fixture(scope="module")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("compare_queries")
    path = built_sqlite(folder / "players.sqlite", lambda conn: conn.executescript(SCHEMA))
    return f"sqlite:///{path}"


@pytest.fixture(scope="module")
def duckdb_url(sqlite_url: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"duckdb:///{tmp_path_factory.mktemp('duck') / 'players.duckdb'}"
    polysql.load(sqlite_url, url)
    return url


def results(gold_sql: str, pred_sql: str, gold_url: str, pred_url: str) -> polysql.Verdict:
    """What comparing the two results alone says, for contrast."""
    with polysql.connect(gold_url) as gold_engine, polysql.connect(pred_url) as pred_engine:
        return polysql.compare(gold_engine.execute(gold_sql), pred_engine.execute(pred_sql),
                               gold_sql=gold_sql)


def test_nulls_placed_by_the_prediction_engine_under_a_limit(sqlite_url: str,
                                                             duckdb_url: str) -> None:
    """SQLite puts the NULL teams first, so its first three rows hold both; DuckDB puts them last
    and keeps other rows. The gold re-run with NULLS LAST gives DuckDB's rows."""
    sql = "SELECT name, team FROM player ORDER BY team, name LIMIT 3"
    assert not results(sql, sql, sqlite_url, duckdb_url).match
    verdict = polysql.compare_queries(sql, sql, sqlite_url, duckdb_url)
    assert verdict.match, verdict.reason
    # a prediction that keeps other rows still misses
    wrong = "SELECT name, team FROM player ORDER BY team DESC, name LIMIT 3"
    assert not polysql.compare_queries(sql, wrong, sqlite_url, duckdb_url).match


# (gold, a prediction only a re-run of the gold shows to match, one that still misses, whether
# the match is a tie group cut by the gold's LIMIT)
RERUN_CASES = {
    # Ada and Cy share the top score; the gold keeps Ada, the prediction Cy.
    "tie group cut by the LIMIT": (
        "SELECT name FROM player ORDER BY score DESC LIMIT 1",
        "SELECT name FROM player ORDER BY score DESC, name DESC LIMIT 1",
        "SELECT name FROM player ORDER BY score LIMIT 1", True),
    # Ordered by score, which the gold does not return: Bo and Ed tie, in either order.
    "ties on a key not returned": (
        "SELECT name FROM player WHERE team IS NOT NULL ORDER BY score DESC",
        "SELECT name FROM player WHERE team IS NOT NULL ORDER BY score DESC, name DESC",
        "SELECT name FROM player WHERE team IS NOT NULL ORDER BY score", False),
}


@pytest.mark.parametrize("case", RERUN_CASES)
def test_ties_only_a_gold_rerun_shows(case: str, sqlite_url: str) -> None:
    gold, tied, wrong, cut_by_limit = RERUN_CASES[case]
    assert not results(gold, tied, sqlite_url, sqlite_url).match
    verdict = polysql.compare_queries(gold, tied, sqlite_url)
    assert verdict.match, verdict.reason
    assert verdict.details["tie_at_limit"] is cut_by_limit
    assert not polysql.compare_queries(gold, wrong, sqlite_url).match


def test_results_the_row_cap_cut_on_both_sides_are_read_again(sqlite_url: str) -> None:
    """Without an ORDER BY each engine keeps rows of its own choosing under the cap; the re-run
    under a higher cap holds every row, so the same bag in another order matches."""
    gold = "SELECT id FROM player"
    pred = "SELECT id FROM player ORDER BY id DESC"
    verdict = polysql.compare_queries(gold, pred, sqlite_url, max_rows=2)
    assert verdict.match, verdict.reason
    assert verdict.details["row_cap"] == 20
    assert not verdict.details.get("rests_on_cut_rows")


def test_backends_are_used_as_they_are_and_left_open(sqlite_url: str, duckdb_url: str) -> None:
    with polysql.connect(sqlite_url) as gold_engine, polysql.connect(duckdb_url) as pred_engine:
        verdict = polysql.compare_queries("SELECT count(*) FROM player",
                                          "SELECT count(*) FROM player", gold_engine, pred_engine)
        assert verdict.match
        assert gold_engine.execute("SELECT 1").ok and pred_engine.execute("SELECT 1").ok


def test_failed_gold_and_failed_prediction_are_verdicts(sqlite_url: str) -> None:
    invalid = polysql.compare_queries("SELECT nope FROM player", "SELECT 1", sqlite_url)
    assert not invalid.match and invalid.details["invalid_gold"] is True
    failed = polysql.compare_queries("SELECT 1", "SELECT nope FROM player", sqlite_url)
    assert not failed.match and failed.details["rule"] == "pred_error"


def test_an_engine_that_cannot_run_anything_is_an_outage(sqlite_url: str) -> None:
    """A closed backend answers every statement as unavailable: never a verdict."""
    gone = polysql.connect(sqlite_url)
    gone.close()
    with pytest.raises(EngineUnavailableError, match="could not run the predicted query"):
        polysql.compare_queries("SELECT 1", "SELECT 1", sqlite_url, gone)
    with pytest.raises(EngineUnavailableError, match="could not run the gold query"):
        polysql.compare_queries("SELECT 1", "SELECT 1", gone, sqlite_url)


def test_a_bad_policy_is_refused_before_anything_runs(tmp_path: Path) -> None:
    missing = f"sqlite:///{tmp_path / 'never-opened.sqlite'}"
    with pytest.raises(ComparisonError, match="no_such_option"):
        polysql.compare_queries("SELECT 1", "SELECT 1", missing, no_such_option=True)
    with pytest.raises(ComparisonError, match="set_semantics"):
        polysql.compare_queries("SELECT 1", "SELECT 1", missing, ordered=True,
                                set_semantics=True)
