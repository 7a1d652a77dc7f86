"""ORDER BY keys the gold does not return: ties are seen through a keyed re-run of the gold.

Results come from real engines: the gold on SQLite, predictions on DuckDB over the same rows.
"""

from __future__ import annotations

import polysql
from polysql.backends.base import Backend
from polysql.normalizers.gold import run_gold
from polysql.normalizers.ordering import keyed_order_sql

ROWS = [("ann", 300), ("bob", 200), ("cid", 200), ("dee", 200), ("eve", 100), ("fay", 100)]
SETUP = ["CREATE TABLE emp (name TEXT, salary INTEGER)",
         "INSERT INTO emp VALUES " + ", ".join(f"('{n}', {s})" for n, s in ROWS),
         "CREATE TABLE sale (who TEXT)",
         "INSERT INTO sale VALUES ('x'), ('x'), ('y'), ('y'), ('z'), ('w')"]


def verdict(lite: Backend, gold_sql: str, pred: Backend, pred_sql: str) -> polysql.Verdict:
    gold = run_gold(gold_sql, "sqlite", lite.execute)
    return polysql.compare(gold.compared, pred.execute(pred_sql), **gold.compare_kwargs())


def test_rows_tied_on_a_non_projected_key_may_come_in_any_order(lite: Backend, duck: Backend) -> None:
    gold_sql = "SELECT name FROM emp ORDER BY salary DESC"
    v = verdict(lite, gold_sql, duck, "SELECT name FROM emp ORDER BY salary DESC, name DESC")
    assert v.match, v.reason
    assert v.details["order_keys_from_gold_rerun"] is True
    # ...but rows from different key groups may not swap
    wrong = verdict(lite, gold_sql, duck, "SELECT name FROM emp ORDER BY salary ASC")
    assert not wrong.match


def test_tie_cut_by_limit_on_an_aggregate_key(lite: Backend, duck: Backend) -> None:
    gold_sql = "SELECT who FROM sale GROUP BY who ORDER BY COUNT(*) DESC LIMIT 1"
    # x and y both have the top count; a prediction returning y is as right as one returning x
    for pred_sql in ("SELECT who FROM sale GROUP BY who ORDER BY COUNT(*) DESC, who DESC LIMIT 1",
                     "SELECT who FROM sale GROUP BY who ORDER BY COUNT(*) DESC, who ASC LIMIT 1"):
        v = verdict(lite, gold_sql, duck, pred_sql)
        assert v.match, v.reason
        assert v.details["tie_at_limit"] is True
    wrong = verdict(lite, gold_sql, duck, "SELECT 'z' AS who")
    assert not wrong.match


def test_without_the_rerun_order_must_be_exact(lite: Backend, duck: Backend) -> None:
    gold_sql = "SELECT name FROM emp ORDER BY salary DESC"
    gold = lite.execute(gold_sql)
    pred = duck.execute("SELECT name FROM emp ORDER BY salary DESC, name DESC")
    assert not polysql.compare(gold, pred, gold_sql=gold_sql).match


def test_keyed_sql_only_where_appending_keys_is_safe() -> None:
    keyed = keyed_order_sql("SELECT name FROM emp ORDER BY salary DESC, 1", "sqlite")
    assert keyed is not None and keyed.hidden_columns == 2
    assert "__polysql_tie_key_1" in keyed.sql
    assert keyed_order_sql("SELECT name, salary FROM emp ORDER BY salary", "sqlite") is None
    assert keyed_order_sql("SELECT DISTINCT name FROM emp ORDER BY salary", "sqlite") is None
    assert keyed_order_sql("SELECT name FROM emp UNION SELECT who FROM sale ORDER BY 1", "sqlite") is None


def test_a_position_among_the_keys_is_the_column_it_names(lite: Backend, duck: Backend) -> None:
    """``ORDER BY 1`` names an output column: alone it needs no re-run, and beside a key the gold
    does not return it is appended as that column, not as the constant 1 (which made every
    row tie on it, so rows of different names could swap)."""
    assert keyed_order_sql("SELECT name, salary FROM emp ORDER BY 2 DESC, 1", "sqlite") is None
    keyed = keyed_order_sql("SELECT name FROM emp ORDER BY 1 DESC, salary", "sqlite")
    assert keyed is not None and "name AS __polysql_tie_key_1" in keyed.sql
    assert keyed_order_sql("SELECT * FROM emp ORDER BY 1, length(name)", "sqlite") is None
    gold_sql = "SELECT name FROM emp ORDER BY 1 DESC, salary"
    assert verdict(lite, gold_sql, duck, "SELECT name FROM emp ORDER BY name DESC").match
    # names ascending within each salary: the tie runs of the constant key would let it pass
    swapped = verdict(lite, gold_sql, duck, "SELECT name FROM emp ORDER BY salary, name")
    assert not swapped.match, swapped.reason
