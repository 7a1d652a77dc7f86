"""Policy ``set_semantics``: results compared as sets of distinct rows, order ignored, as BIRD's
execution accuracy compares them -- with every other rule of the contract kept (tolerance,
column alignment, the engine conventions on NULL placement and on rows a LIMIT cuts from a tie).

Results come from real SQLite and DuckDB engines; the gold runs on SQLite.
"""

from __future__ import annotations

import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import polysql
from polysql.analysis.reports.sweep import markdown, policy_note
from polysql.analysis.summary import summarize
from polysql.backends.base import Backend
from polysql.core.columnar import ArrowRows
from polysql.core.errors import ComparisonError
from polysql.core.model import Result, Verdict
from polysql.normalizers.gold import judge, run_gold
from polysql.normalizers.policy import preset_options
from polysql.normalizers.values import FloatKeys

SETUP = [
    "CREATE TABLE visits (id INTEGER, city TEXT, score INTEGER, ratio DOUBLE)",
    "INSERT INTO visits VALUES (1, 'Oslo', 3, 0.1), (2, 'Oslo', NULL, 0.2), (3, 'Lima', 1, 0.3), "
    "(4, 'Lima', NULL, 0.3), (5, 'Pune', 2, 0.1), (6, 'Oslo', 5, 0.7)",
]


def judged(lite: Backend, gold_sql: str, engine: Backend, pred_sql: str,
           **policy: object) -> Verdict:
    """The verdict a sweep gives: the gold with its re-runs on SQLite, the prediction on
    ``engine``."""
    gold = run_gold(gold_sql, "sqlite", lite.execute)
    return judge(gold, engine.execute(pred_sql), lite.execute, **policy)


def test_duplicates_do_not_count(lite: Backend, duck: Backend) -> None:
    gold_sql = "SELECT city FROM visits"  # Oslo three times, Lima twice, Pune once
    pred_sql = "SELECT DISTINCT city FROM visits"
    assert not judged(lite, gold_sql, duck, pred_sql).match  # as a bag: 6 rows against 3
    verdict = judged(lite, gold_sql, duck, pred_sql, set_semantics=True)
    assert verdict.match, verdict.reason
    assert verdict.reason == "same 3 distinct rows as sets"
    assert verdict.details["order_source"] == "set_semantics"
    assert (verdict.details["gold_distinct_rows"], verdict.details["pred_distinct_rows"]) == (3, 3)
    assert (verdict.details["gold_rows"], verdict.details["pred_rows"]) == (6, 3)


def test_order_does_not_count(lite: Backend, duck: Backend) -> None:
    gold_sql = "SELECT id, city FROM visits ORDER BY id"
    pred_sql = "SELECT id, city FROM visits ORDER BY id DESC"
    assert not judged(lite, gold_sql, duck, pred_sql).match
    verdict = judged(lite, gold_sql, duck, pred_sql, set_semantics=True)
    assert verdict.match, verdict.reason
    assert verdict.details["ordered"] is False
    assert verdict.details["order_keys"] is None


def test_other_rows_still_differ(lite: Backend, duck: Backend) -> None:
    verdict = judged(lite, "SELECT city FROM visits", duck,
                     "SELECT city FROM visits WHERE city <> 'Pune'", set_semantics=True)
    assert not verdict.match
    assert verdict.reason == ("gold has 3 distinct rows, predicted 2; 1 gold row missing from "
                              "prediction, e.g. ('Pune')")
    assert verdict.details["mismatch"] == "row_count"
    extra = judged(lite, "SELECT city FROM visits WHERE city <> 'Pune'", duck,
                   "SELECT city FROM visits", set_semantics=True)
    assert not extra.match
    assert "1 predicted row not in gold, e.g. ('Pune')" in extra.reason


def test_numbers_keep_the_tolerance(lite: Backend, duck: Backend) -> None:
    # The same sums in another order, and one of them repeated: equal as sets within tolerance.
    gold_sql = "SELECT city, SUM(ratio) FROM visits GROUP BY city"
    pred_sql = ("SELECT city, SUM(ratio) * (1 + 1e-12) FROM visits GROUP BY city "
                "UNION ALL SELECT 'Lima', 0.6 * (1 + 1e-12)")
    verdict = judged(lite, gold_sql, duck, pred_sql, set_semantics=True)
    assert verdict.match, verdict.reason
    off = judged(lite, gold_sql, duck, pred_sql.replace("0.6", "0.61"), set_semantics=True)
    assert not off.match


def test_rows_whose_python_hashes_collide_stay_apart() -> None:
    # hash(-1) == hash(-2) in Python; a column mixing Decimal and int is checked value by value.
    gold = Result(["n", "tag"], [(-1, "x"), (-2, "x"), (-1, "x"), (Decimal("1.5"), "y")])
    both = Result(["n", "tag"], [(-2, "x"), (1.5, "y"), (-1, "x")])
    assert polysql.compare(gold, both, set_semantics=True).match
    one = Result(["n", "tag"], [(-2, "x"), (-2, "x"), (1.5, "y")])
    verdict = polysql.compare(gold, one, set_semantics=True)
    assert not verdict.match
    assert "e.g. (-1, 'x')" in verdict.reason


def test_arrow_results(duck: Backend) -> None:
    columns = {"id": [3, 1, 2, 1, None], "name": ["c", "a", "b", "a", None],
               "price": [0.5, 1.25, None, 1.25, 2.0]}
    gold = Result(list(columns), ArrowRows(pa.table(columns)))
    pred = duck.execute("SELECT * FROM (VALUES (NULL, NULL, 2.0), (1, 'a', 1.25), (2, 'b', NULL), "
                        "(3, 'c', 0.5)) AS v(id, name, price)")
    verdict = polysql.compare(gold, pred, set_semantics=True)
    assert verdict.match, verdict.reason
    assert not polysql.compare(gold, pred).match


def test_ordered_true_contradicts_set_semantics() -> None:
    rows = Result(["a"], [(1,)])
    with pytest.raises(ComparisonError, match="set_semantics"):
        polysql.compare(rows, rows, ordered=True, set_semantics=True)
    assert polysql.compare(rows, rows, ordered=False, set_semantics=True).match


def test_columns_still_align_by_value(lite: Backend, duck: Backend) -> None:
    # Other names, other order, and duplicates only on the gold side: the value sets align.
    verdict = judged(lite, "SELECT city, score FROM visits WHERE score IS NOT NULL", duck,
                     "SELECT DISTINCT score AS s, city AS c FROM visits WHERE score IS NOT NULL "
                     "UNION ALL SELECT 3, 'Oslo'", set_semantics=True)
    assert verdict.match, verdict.reason
    assert verdict.details["alignment"] == "value"


# -- BIRD's own comparison ----------------------------------------------------------------------

#: the preset for BIRD's verdicts (Python's == on fetched tuples): ``--policy bird``
BIRD_OPTIONS = preset_options("bird")


def test_the_bird_options_agree_with_bird_on_generated_results(lite: Backend,
                                                               duck: Backend) -> None:
    """Random results of SQLite's own value types (mixed within a column too, as SQLite allows),
    the prediction drawn partly from the gold's rows, sometimes with its columns reversed:
    the verdict is BIRD's ``set(pred) == set(gold)`` every time."""
    rng = random.Random(20240601)
    values = [0, 1, -1, 2, 1.0, 0.5, 0.1 + 0.2, 0.3, 1 / 3, "a", "a ", "1", "2024-01-01", None]
    disagreements = []
    for _ in range(2000):
        width = rng.randrange(1, 4)
        choices = [rng.sample(values, 3) for _ in range(width)]

        def row(choices: list[list[object]] = choices) -> tuple[object, ...]:
            return tuple(rng.choice(column) for column in choices)

        gold_rows = [row() for _ in range(rng.randrange(0, 6))]
        pred_rows = [rng.choice(gold_rows) if gold_rows and rng.random() < 0.7 else row()
                     for _ in range(rng.randrange(0, 6))]
        if pred_rows and rng.random() < 0.2:
            pred_rows = [tuple(reversed(r)) for r in pred_rows]
        names = [f"c{j}" for j in range(width)]
        verdict = polysql.compare(Result(names, gold_rows), Result(names, pred_rows),
                                  **BIRD_OPTIONS)
        if verdict.match != (set(gold_rows) == set(pred_rows)):
            disagreements.append((gold_rows, pred_rows, verdict.reason))
    assert not disagreements, disagreements[:5]
    # and on results a real engine returned
    gold = lite.execute("SELECT city, score FROM visits")
    assert polysql.compare(gold, lite.execute("SELECT DISTINCT city, score FROM visits"),
                           **BIRD_OPTIONS).match
    assert not polysql.compare(gold, lite.execute("SELECT score, city FROM visits"),
                               **BIRD_OPTIONS).match
    # BIRD makes no allowance for the rows a LIMIT keeps among ties or NULLs, nor do these
    tied_sql = "SELECT id, city FROM visits ORDER BY city LIMIT 3"  # Lima x2, then 1 of 3 Oslo
    other_tied = "SELECT id, city FROM visits WHERE id IN (3, 4, 6)"
    assert judged(lite, tied_sql, lite, other_tied, set_semantics=True).match
    assert not judged(lite, tied_sql, lite, other_tied, **BIRD_OPTIONS).match
    nulls_sql = "SELECT id FROM visits ORDER BY score LIMIT 2"
    assert not judged(lite, nulls_sql, duck, nulls_sql, **BIRD_OPTIONS).match


def test_the_bird_preset_by_name(lite: Backend) -> None:
    """``policy="bird"`` is the preset's options, and options given beside it override them."""
    gold = lite.execute("SELECT city FROM visits")
    extra = lite.execute("SELECT id, city FROM visits")  # an extra column: not BIRD's answer
    assert polysql.compare(gold, extra).match
    assert not polysql.compare(gold, extra, policy="bird").match
    assert polysql.compare(gold, extra, policy="bird", align_by_name=True).match
    same = polysql.compare(gold, lite.execute("SELECT DISTINCT city FROM visits"), policy="bird")
    assert same.match and same.reason == "same 3 distinct rows as sets"
    with pytest.raises(ComparisonError,
                       match="unknown comparison policy preset 'sparc'.*bird, spider"):
        polysql.compare(gold, extra, policy="sparc")


# -- the engine conventions still apply ---------------------------------------------------------

def test_a_limit_that_keeps_other_rows_because_of_nulls(lite: Backend, duck: Backend) -> None:
    # SQLite sorts NULLs first and keeps ids 2 and 4; DuckDB sorts them last and keeps 3 and 5.
    sql = "SELECT id FROM visits ORDER BY score LIMIT 2"
    verdict = judged(lite, sql, duck, sql, set_semantics=True)
    assert verdict.match, verdict.reason
    assert verdict.details["null_order"] in ("nulls_largest", "nulls_last")
    assert not judged(lite, sql, duck, sql, set_semantics=True, null_order="strict").match


def test_a_limit_that_cuts_a_tie_group(lite: Backend, duck: Backend) -> None:
    gold_sql = "SELECT city FROM visits ORDER BY city DESC LIMIT 4"  # Pune, then 3 of 3 Oslo
    verdict = judged(lite, gold_sql, duck, gold_sql, set_semantics=True)
    assert verdict.match, verdict.reason
    tied_sql = "SELECT id, city FROM visits ORDER BY city LIMIT 3"  # Lima x2, then 1 of 3 Oslo
    other_tied = "SELECT id, city FROM visits WHERE id IN (3, 4, 6) UNION ALL SELECT 3, 'Lima'"
    verdict = judged(lite, tied_sql, duck, other_tied, set_semantics=True)
    assert verdict.match, verdict.reason
    assert verdict.details["tie_at_limit"] is True
    foreign = judged(lite, tied_sql, duck, "SELECT id, city FROM visits WHERE id IN (3, 4, 5)",
                     set_semantics=True)
    assert not foreign.match
    assert "is not one of the 3 tied rows" in foreign.reason
    too_many = judged(lite, tied_sql, duck, "SELECT id, city FROM visits WHERE id IN (1, 3, 4, 6)",
                      set_semantics=True)
    assert not too_many.match
    assert "takes 1 row from the tie group" in too_many.reason
    missing = judged(lite, tied_sql, duck, "SELECT id, city FROM visits WHERE id IN (3, 6)",
                     set_semantics=True)
    assert not missing.match
    assert "missing from prediction, e.g. (4, 'Lima')" in missing.reason


# -- what a sweep report says --------------------------------------------------------------------

def test_reports_say_the_policy_changed() -> None:
    run_info = {"polysql": "0", "settings": {"timeout": 1, "max_rows": 1,
                                             "policy": {"set_semantics": True}}}
    note = policy_note(run_info)
    assert note is not None and "set_semantics=true" in note
    assert note in markdown(summarize([]), run_info)
    assert policy_note({"settings": {"policy": {"set_semantics": False}}}) is None  # the default
    assert policy_note({"settings": {"policy": {}}}) is None


def test_distinct_rows_keep_float_keys_and_their_patches() -> None:
    # NaN keys are patches of a float column's key array: the distinct rows carry them along.
    nan = float("nan")
    gold = Result(["x", "n"], [(nan, 1), (nan, 1), (None, 2), (1.5, 3), (None, 2), (2**60, 4)])
    pred = Result(["x", "n"], [(2**60, 4), (1.5 + 1e-12, 3), (nan, 1), (None, 2)])
    verdict = polysql.compare(gold, pred, set_semantics=True)
    assert verdict.match, verdict.reason
    assert verdict.details["gold_distinct_rows"] == 4
    assert not polysql.compare(gold, pred, set_semantics=True, nan_equals_nan=False).match
    keys = FloatKeys(np.array([0.5, np.nan, 7.0, np.nan]), np.array([False, False, False, True]))
    keys.patch(1, "nan-key")
    taken = keys.take(np.array([3, 1, 1, 0]))
    assert taken.as_list() == [None, "nan-key", "nan-key", 0.5]
