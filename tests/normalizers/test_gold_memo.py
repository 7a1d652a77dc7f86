"""A gold compared with many predictions is read once: its columns, types and keys are kept in its
GoldRuns' memo, and every verdict is the one a fresh comparison gives.

Results come from real engines: the gold on SQLite, predictions on DuckDB over the same rows.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from polysql_testkit.column_reads import count_column_reads

import polysql
from polysql.backends.base import Backend
from polysql.core.model import Result
from polysql.normalizers.gold import GoldRuns, judge, run_gold
from polysql.normalizers.policy import DEFAULT_POLICY

ROWS = 3000
SETUP = [
    "CREATE TABLE t (id INTEGER, price DOUBLE, note VARCHAR(20), doc VARCHAR(40))",
    "INSERT INTO t SELECT i, i * 0.1, CASE WHEN i % 7 = 0 THEN NULL ELSE 'n' || i END, "
    "'{\"k\": ' || (i % 5) || '}' "
    f"FROM (WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {ROWS}) "
    "SELECT i FROM s) AS s",
]

GOLD = "SELECT id, price, note FROM t"
# (prediction on DuckDB, whether it answers the gold)
PREDICTIONS = [
    ("SELECT id, price, note FROM t ORDER BY note DESC", True),
    ("SELECT id, price + 1e-12, note FROM t ORDER BY price DESC", True),
    ("SELECT id, price * 2, note FROM t", False),
    ("SELECT id, price, note FROM t WHERE id > 1", False),
    ("SELECT note, id, price FROM t", True),
]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times each side's columns were read from its rows, by side label."""
    return count_column_reads(monkeypatch)


def fresh(gold_sql: str, lite: Backend, pred: Result, **policy: object) -> polysql.Verdict:
    """The verdict of a comparison with a gold nothing was compared with before."""
    return judge(run_gold(gold_sql, "sqlite", lite.execute), pred, lite.execute, **policy)


def test_the_gold_is_read_once_for_every_prediction(lite: Backend, duck: Backend,
                                                    reads: dict[str, int]) -> None:
    preds = [(duck.execute(sql), answers) for sql, answers in PREDICTIONS]
    expected = [fresh(GOLD, lite, pred) for pred, _ in preds]
    reads.clear()
    gold = run_gold(GOLD, "sqlite", lite.execute)
    verdicts = [judge(gold, pred, lite.execute) for pred, _ in preds]
    assert [v.match for v in verdicts] == [answers for _, answers in preds]
    assert [(v.match, v.reason, v.details) for v in verdicts] == \
        [(v.match, v.reason, v.details) for v in expected]
    assert reads == {"gold": 1, "predicted": len(preds)}


def test_each_policy_reads_the_gold_for_itself(lite: Backend, duck: Backend,
                                               reads: dict[str, int]) -> None:
    pred = duck.execute("SELECT id, price + 1e-12, note FROM t")
    gold = run_gold(GOLD, "sqlite", lite.execute)
    assert judge(gold, pred, lite.execute).match
    exact = judge(gold, pred, lite.execute, numeric_tolerance=False)
    assert not exact.match
    assert judge(gold, pred, lite.execute).match
    assert reads["gold"] == 2  # once per policy


def test_text_read_as_json_for_one_prediction_stays_text_for_the_next(
        lite: Backend, duck: Backend) -> None:
    # Against a JSON column the gold's text is read as JSON; against plain text it is text, so
    # '{"k": 1}' and '{"k":1}' differ there. The memo must not carry the first reading over.
    gold_sql = "SELECT id, doc FROM t"
    as_json = duck.execute("SELECT id, replace(doc, ' ', '')::JSON FROM t")
    as_text = duck.execute("SELECT id, replace(doc, ' ', '') FROM t")
    gold = run_gold(gold_sql, "sqlite", lite.execute)
    first = judge(gold, as_json, lite.execute)
    assert first.match, first.reason
    kept = gold.memo.of(gold.compared, DEFAULT_POLICY).keys
    assert kept and all(column != 1 for column, _reading in kept)  # doc's keys were its own
    second = judge(gold, as_text, lite.execute)
    assert not second.match
    assert second.reason == fresh(gold_sql, lite, as_text).reason


def test_a_gold_with_hidden_order_keys_is_split_and_read_once(lite: Backend, duck: Backend,
                                                              reads: dict[str, int]) -> None:
    gold_sql = "SELECT note FROM t WHERE note IS NOT NULL ORDER BY price DESC LIMIT 500"
    gold = run_gold(gold_sql, "sqlite", lite.execute)
    assert gold.hidden == 1  # compared through the keyed re-run, its key column hidden
    preds = [duck.execute(gold_sql),
             duck.execute("SELECT note FROM t WHERE note IS NOT NULL ORDER BY id DESC LIMIT 500"),
             duck.execute("SELECT note FROM t WHERE note IS NOT NULL ORDER BY price LIMIT 500")]
    expected = [fresh(gold_sql, lite, pred).match for pred in preds]
    reads.clear()
    assert [judge(gold, pred, lite.execute).match for pred in preds] == expected == \
        [True, True, False]
    assert reads["gold"] == 1


def test_predictions_judged_side_by_side_get_the_verdicts_judged_one_by_one(
        lite: Backend, duck: Backend, reads: dict[str, int]) -> None:
    preds = [duck.execute(sql) for sql, _ in PREDICTIONS] * 4
    expected = [fresh(GOLD, lite, pred).reason for pred in preds]
    reads.clear()
    gold: GoldRuns = run_gold(GOLD, "sqlite", lite.execute)
    with ThreadPoolExecutor(max_workers=4) as pool:
        reasons = list(pool.map(lambda pred: judge(gold, pred).reason, preds))
    assert reasons == expected
    assert reads["gold"] == 1
