"""The example rows of mismatch reasons ("e.g. (...)") do not depend on the order rows arrived in,
on hash randomization or on set iteration: the same two results give the same reason in every run
and every process."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import UTC, date, datetime, time
from decimal import Decimal

import pytest

import polysql
from polysql.core.model import Result
from polysql.normalizers.describe import example_position, value_order

# Run in a child process: rows are inserted into real SQLite and DuckDB tables in the order a
# set of strings iterates, which follows PYTHONHASHSEED, so each process's engines return the
# rows in another order. Gold and prediction differ in many rows (values, missing, extra) and
# hold text, reals, Decimals, NULLs and dates.
CHILD = r"""
import json
import polysql

names = {f"customer-{i:03d}" for i in range(300)}  # iteration order follows PYTHONHASHSEED
gold = polysql.connect("sqlite://", read_only=False)
pred = polysql.connect("duckdb:///:memory:", read_only=False)
gold.execute("CREATE TABLE t (name TEXT, grp INTEGER, amount REAL, note TEXT, day TEXT)")
pred.execute("CREATE TABLE t (name VARCHAR, grp INTEGER, amount DECIMAL(10,2), note VARCHAR, "
             "day DATE)")
for name in names:
    i = int(name[-3:])
    day = f"2024-01-{1 + i % 28:02d}"
    note = "NULL" if i % 7 == 0 else f"'n{i % 5}'"
    gold.execute(f"INSERT INTO t VALUES ('{name}', {i % 4}, {i * 1.25}, {note}, '{day}')")
    amount = i * 1.25 + (1 if i % 3 == 0 else 0)  # every third amount is off by one
    note = "'changed'" if i % 11 == 5 else note  # and some notes differ
    pred.execute(f"INSERT INTO t VALUES ('{name}', {i % 4}, {amount}, {note}, DATE '{day}')")
out = {"first_gold_row": gold.execute("SELECT name FROM t").rows[0][0], "reasons": []}
for sql in ("SELECT name, amount, note, day FROM t",  # a bag
            "SELECT grp, amount, note FROM t ORDER BY grp",  # tie groups of 75 rows
            "SELECT grp, note, day FROM t"):  # duplicates, NULLs, no unique column
    gold_result, pred_result = gold.execute(sql), pred.execute(sql)
    assert gold_result.ok and pred_result.ok, (gold_result.error, pred_result.error)
    verdict = polysql.compare(gold_result, pred_result, gold_sql=sql, dialect="sqlite")
    out["reasons"].append(verdict.reason)
print(json.dumps(out))
"""


def _child(seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.sqlite
@pytest.mark.duckdb
def test_reasons_are_identical_across_processes_and_hash_seeds() -> None:
    runs = [_child(seed) for seed in ("1", "2", "12345")]
    # the engines really returned the rows in different orders in the three processes
    assert len({run["first_gold_row"] for run in runs}) > 1
    first = runs[0]["reasons"]
    for run in runs[1:]:
        assert run["reasons"] == first
    # and the example shown is the smallest row, not the first to arrive
    assert first == [
        "118 gold rows missing from prediction, e.g. ('customer-000', 0.0, NULL, '2024-01-01'); "
        "118 predicted rows not in gold, e.g. ('customer-000', 1.00, NULL, 2024-01-01)",
        "rows 1-75 (tied on the ORDER BY keys) differ: gold row (0, 0.0, NULL) is not among the "
        "predicted rows 1-75",
        "27 gold rows missing from prediction, e.g. (0, NULL, '2024-01-01'); 27 predicted rows "
        "not in gold, e.g. (0, 'changed', 2024-01-01)",
    ]


def _result(rows: list[tuple]) -> Result:
    return Result(columns=["a", "b", "c"], rows=rows, types=["", "", ""])


def test_reason_does_not_change_with_row_order() -> None:
    gold = [(i % 5, f"t{i:03d}", None if i % 4 == 0 else i / 8) for i in range(200)]
    pred = [(i % 5, f"t{i:03d}", None if i % 4 == 0 else i / 8 + (i % 3 == 0))
            for i in range(20, 220)]
    reasons = set()
    shuffle = random.Random(7)
    for _ in range(20):
        shuffle.shuffle(gold)
        shuffle.shuffle(pred)
        reasons.add(polysql.compare(_result(gold), _result(pred)).reason)
    assert len(reasons) == 1, reasons
    (reason,) = reasons
    assert "e.g. (0, 't000', NULL)" in reason  # the smallest missing gold row
    assert "e.g. (0, 't030', 4.75)" in reason  # the smallest extra predicted row


def test_tied_rows_and_cut_tie_groups_show_their_smallest_row() -> None:
    sql = "SELECT g, v FROM t ORDER BY g"
    gold_rows = [(1, "x"), (2, "m"), (2, "c"), (2, "k"), (3, "z")]
    pred_rows = [(1, "x"), (2, "q"), (2, "b"), (2, "k"), (3, "z")]
    reasons = set()
    for order in ([1, 2, 3], [3, 2, 1], [2, 3, 1]):
        gold = Result(columns=["g", "v"], types=["", ""],
                      rows=[gold_rows[0], *(gold_rows[i] for i in order), gold_rows[4]])
        pred = Result(columns=["g", "v"], types=["", ""],
                      rows=[pred_rows[0], *(pred_rows[i] for i in order), pred_rows[4]])
        reasons.add(polysql.compare(gold, pred, gold_sql=sql).reason)
    assert reasons == {"rows 2-4 (tied on the ORDER BY keys) differ: gold row (2, 'c') is not "
                       "among the predicted rows 2-4"}

    # the LIMIT cuts the tie group of 2s: any two of them may be predicted, not (2, 'a') or 'b'
    limited = "SELECT g, v FROM t ORDER BY g LIMIT 3"
    widened = Result(columns=["g", "v"], types=["", ""],
                     rows=[(1, "x"), (2, "m"), (2, "c"), (2, "k"), (3, "z")])
    gold = Result(columns=["g", "v"], types=["", ""], rows=[(1, "x"), (2, "m"), (2, "c")])
    reasons = set()
    for tail in ([(2, "b"), (2, "a")], [(2, "a"), (2, "b")]):
        pred = Result(columns=["g", "v"], types=["", ""], rows=[(1, "x"), *tail])
        reasons.add(polysql.compare(gold, pred, gold_sql=limited, gold_widened=widened).reason)
    assert len(reasons) == 1, reasons
    assert "predicted row (2, 'a') is not one of the 3 tied rows" in reasons.pop()


MIXED = [None, True, False, 0, -0.0, 0.0, 1, 1.0, Decimal("1.00"), Decimal("1.0"), 2.5,
         float("inf"), float("-inf"), float("nan"), Decimal("NaN"), Decimal("sNaN"), "", "a",
         "B", b"\x00", bytearray(b"\x01"), date(2024, 1, 2), datetime(2024, 1, 2, 3, 4),
         datetime(2024, 1, 2, 3, 4, tzinfo=UTC), time(5, 6), 10**30, [1, 2], {"k": 1}]


def test_value_order_is_total_over_mixed_types() -> None:
    expected = [repr(v) for v in sorted(MIXED, key=value_order)]
    shuffle = random.Random(3)
    for _ in range(50):
        values = MIXED[:]
        shuffle.shuffle(values)
        assert [repr(v) for v in sorted(values, key=value_order)] == expected
    ordered = sorted(MIXED, key=value_order)
    assert ordered[0] is None
    assert ordered[1:3] == [float("-inf"), False]  # numbers by value: -inf, then 0s
    assert repr(ordered[-1]) in ("[1, 2]", "{'k': 1}")  # types without an order come last


def test_example_position_breaks_every_tie_by_value_not_position() -> None:
    columns = [[1, 1, 1, 0.0, -0.0], ["b", "a", "a", "z", "z"], [None, 3, 2, 1, 1]]
    assert example_position(columns, [0, 1, 2]) == 2  # (1, 'a', 2) < (1, 'a', 3) < (1, 'b', ..)
    # -0.0 and 0.0 are equal numbers but written differently: the choice must not be positional
    assert example_position(columns, [3, 4]) == example_position(columns, [4, 3]) == 4
    floats = [[0.5, float("nan"), 0.25]]
    assert example_position(floats, [0, 1, 2]) == 2  # NaN after numbers, even in a float column
    with pytest.raises(ValueError):
        example_position(columns, [])
