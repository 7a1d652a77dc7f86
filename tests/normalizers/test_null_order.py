"""Where NULLs sort is an engine convention: an ordered prediction that follows its own engine's
convention matches the gold re-run with NULLs placed that way (policy null_order="either").

The gold runs on SQLite (NULLs smallest); predictions run on DuckDB (NULLs last).
"""

from __future__ import annotations

from polysql_testkit.counted_runs import counting

from polysql.backends.base import Backend
from polysql.core.model import Verdict
from polysql.normalizers.gold import judge, run_gold
from polysql.normalizers.ordering import null_order_variants, replaced_nulls
from polysql.normalizers.policy import ComparePolicy

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


# -- the gold re-sorted in process instead of re-run -------------------------------------------

RESORTABLE = [
    "SELECT name, score FROM t ORDER BY score, name",
    "SELECT name, score FROM t ORDER BY score DESC, name",
    "SELECT score, name FROM t ORDER BY 1 DESC, 2",
    "SELECT name, score AS s FROM t ORDER BY s, name DESC",
]


def test_resorted_rows_are_what_the_engine_returns(lite: Backend) -> None:
    """Moving the NULL block gives, for every convention, exactly the rows of the gold re-run
    with that convention spelled out -- so the re-run can be skipped."""
    for sql in RESORTABLE:
        gold = lite.execute(sql)
        moved = replaced_nulls(sql, "sqlite", gold.columns, gold.rows)
        assert moved is not None, sql
        variants = dict(null_order_variants(sql, "sqlite"))
        assert set(moved) == set(variants), sql
        for label, variant_sql in variants.items():
            assert moved[label] == lite.execute(variant_sql).rows, (sql, label)


def test_only_a_re_run_can_tell(lite: Backend) -> None:
    for sql in ["SELECT name FROM t ORDER BY score LIMIT 2",  # other rows would be picked
                "SELECT name, score FROM t ORDER BY score LIMIT 10 OFFSET 1",
                "SELECT name FROM t ORDER BY score",  # the key is not an output column
                "SELECT name, score FROM t ORDER BY name, score",  # NULLs in a later key
                ]:
        gold = lite.execute(sql)
        assert replaced_nulls(sql, "sqlite", gold.columns, gold.rows) is None, sql


def test_an_output_key_order_is_judged_without_re_running_the_gold(lite: Backend,
                                                                   duck: Backend) -> None:
    counted, runs = counting(lite)
    sql = "SELECT name, score FROM t ORDER BY score"
    gold = run_gold(sql, "sqlite", counted)
    runs.clear()
    v = judge(gold, duck.execute(sql), counted)
    assert v.match, v.reason
    assert "null_order" in v.details
    assert runs == []
    wrong = judge(gold, duck.execute("SELECT name, score FROM t ORDER BY score DESC"), counted)
    assert not wrong.match
    assert runs == []
    # without a LIMIT-free output key, the gold is re-run as before
    limited = "SELECT name, score FROM t ORDER BY score LIMIT 3"
    gold = run_gold(limited, "sqlite", counted)
    runs.clear()
    assert judge(gold, duck.execute(limited), counted).match
    assert runs


def test_a_prediction_of_another_length_makes_no_null_order_re_run(lite: Backend,
                                                                    duck: Backend) -> None:
    counted, runs = counting(lite)
    limited = "SELECT name, score FROM t ORDER BY score LIMIT 3"  # only a re-run can move NULLs
    gold = run_gold(limited, "sqlite", counted)
    runs.clear()
    wrong = judge(gold, duck.execute("SELECT name, score FROM t ORDER BY score LIMIT 2"), counted)
    assert not wrong.match and runs == []
    assert not judge(gold, duck.execute("SELECT name, score FROM t ORDER BY score DESC LIMIT 3"),
                     counted).match
    assert runs  # the same length: the NULL-order re-runs decide, as before


def test_the_public_compare_moves_the_nulls_where_no_re_run_is_needed(lite: Backend,
                                                                      duck: Backend) -> None:
    """``polysql.compare`` has no engine to re-run the gold on, but moving the NULL block of
    the gold's own rows needs none: it gives the verdict the sweep gives."""
    import polysql

    sql = "SELECT name, score FROM t ORDER BY score"
    gold, pred = lite.execute(sql), duck.execute(sql)
    v = polysql.compare(gold, pred, gold_sql=sql)
    assert v.match, v.reason
    assert v.details["null_order"] in ("nulls_largest", "nulls_last")
    assert "convention" in v.reason
    assert not polysql.compare(gold, pred, gold_sql=sql, null_order="strict").match
    assert not polysql.compare(gold, pred, gold_sql=sql,
                               policy=ComparePolicy(null_order="strict")).match
    assert polysql.compare(gold, pred, gold_sql=sql, policy=ComparePolicy()).match
    assert not polysql.compare(gold, duck.execute(f"{sql} DESC"), gold_sql=sql).match
    # a LIMIT picks other rows under another convention: only a re-run could tell
    limited = "SELECT name FROM t ORDER BY score LIMIT 2"
    assert not polysql.compare(lite.execute(limited), duck.execute(limited), gold_sql=limited).match
