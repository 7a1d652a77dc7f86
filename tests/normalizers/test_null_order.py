"""Where NULLs sort is an engine convention: an ordered prediction that follows its own engine's
convention matches the gold re-run with NULLs placed that way (policy null_order="either").

The gold runs on SQLite (NULLs smallest); predictions run on DuckDB (NULLs last).
"""

from __future__ import annotations

from polysql.backends.base import Backend
from polysql.core.model import Verdict
from polysql.normalizers.gold import judge, run_gold

SETUP = ["CREATE TABLE t (name TEXT, score INTEGER)",
         "INSERT INTO t VALUES ('a', 3), ('b', NULL), ('c', 1), ('d', NULL), ('e', 2)"]


def verdict(lite: Backend, gold_sql: str, duck: Backend, pred_sql: str, **policy: object) -> Verdict:
    gold = run_gold(gold_sql, "sqlite", lite.execute)
    return judge(gold, duck.execute(pred_sql), lite.execute, **policy)


def test_engine_null_placement_is_accepted(lite: Backend, duck: Backend) -> None:
    sql = "SELECT name, score FROM t ORDER BY score"
    v = verdict(lite, sql, duck, sql)
    assert v.match, v.reason
    assert v.details["null_order"] in ("nulls_largest", "nulls_last")  # the same for one ASC key
    strict = verdict(lite, sql, duck, sql, null_order="strict")
    assert not strict.match


def test_a_limit_that_picks_different_rows_because_of_nulls(lite: Backend, duck: Backend) -> None:
    sql = "SELECT name FROM t ORDER BY score LIMIT 2"  # SQLite: b, d (NULLs); DuckDB: c, e
    v = verdict(lite, sql, duck, sql)
    assert v.match, v.reason


def test_wrong_order_still_fails(lite: Backend, duck: Backend) -> None:
    v = verdict(lite, "SELECT name, score FROM t ORDER BY score", duck,
                "SELECT name, score FROM t ORDER BY score DESC")
    assert not v.match


def test_null_placement_inside_the_rows_must_still_be_consistent(lite: Backend, duck: Backend) -> None:
    # NULLs in the middle are no engine's convention
    v = verdict(lite, "SELECT name, score FROM t ORDER BY score", duck,
                "SELECT name, score FROM t ORDER BY CASE WHEN score IS NULL THEN 2 ELSE score END")
    assert not v.match
