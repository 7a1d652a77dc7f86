"""The tolerance pass on rows the hashed comparison left unpaired: vectorized rank pairing, its
fallback, and the exactness rules it must keep."""

from __future__ import annotations

import random
from decimal import Decimal

from polysql import Result, compare
from polysql.backends.base import Backend


def noisy(value: float, rng: random.Random, scale: float = 3e-6) -> float:
    return value * (1 + rng.uniform(-scale, scale))


def test_many_rows_with_float_noise_across_bucket_boundaries_match() -> None:
    rng = random.Random(3)
    gold_rows = [(i, f"n{i % 7}", rng.random() * 1000) for i in range(2000)]
    pred_rows = [(i, name, noisy(x, rng)) for i, name, x in gold_rows]
    rng.shuffle(pred_rows)
    verdict = compare(Result(["i", "name", "x"], gold_rows), Result(["i", "name", "x"], pred_rows))
    assert verdict.match, verdict.reason
    # The noise really pushed many values into other buckets: the tolerance pass paired them.
    assert verdict.details["tolerance_pairs"] > 500


def test_noise_beyond_tolerance_is_caught_among_many_tolerated_rows() -> None:
    rng = random.Random(4)
    gold_rows = [(i % 10, rng.random() * 1000) for i in range(1000)]
    pred_rows = [(k, noisy(x, rng)) for k, x in gold_rows]
    k, x = pred_rows[123]
    pred_rows[123] = (k, x * 1.001)
    verdict = compare(Result(["k", "x"], gold_rows), Result(["k", "x"], pred_rows))
    assert not verdict.match
    assert "1 gold row missing" in verdict.reason and "1 predicted row not in gold" in verdict.reason


def test_rows_reordered_by_noise_fall_back_to_general_pairing() -> None:
    # Same exact part, two numbers so close that noise swaps their sort order: pairing by rank
    # fails, the general pass still pairs each with its partner.
    # y values straddle a 6-digit bucket boundary, so both rows are left to the tolerance pass.
    # (Digits past the 12th make them long numbers: numbers written out in full, or float
    # noise around a short decimal, compare exactly.)
    gold = Result(["k", "x", "y"], [("a", 1.0000001000012345, 0.12345649000012345),
                                    ("a", 1.0000002000012345, 0.22345649000012345)])
    pred = Result(["k", "x", "y"], [("a", 1.0000002500012345, 0.12345651000012345),
                                    ("a", 1.0000000500012345, 0.22345651000012345)])
    verdict = compare(gold, pred)
    assert verdict.match, verdict.reason
    assert verdict.details["tolerance_pairs"] == 2


def test_integers_stay_exact_in_the_tolerance_pass() -> None:
    # A float column makes the pass run; the integer column must still compare exactly.
    gold = Result(["n", "x"], [(100000, 0.12345649000000122), (2**60, 1.5)])
    pred = Result(["n", "x"], [(100001, 0.12345651000000123), (2**60 + 1, 1.5)])
    verdict = compare(gold, pred)
    assert not verdict.match
    # ...while an integral Decimal against an int is exact, and a long Decimal fraction is
    # tolerant; one written out in full is exact against the int.
    assert compare(Result(["n"], [(Decimal("100000"),)]), Result(["n"], [(100000,)])).match
    assert not compare(Result(["n"], [(Decimal("100000"),)]), Result(["n"], [(100001,)])).match
    assert compare(Result(["n"], [(Decimal("100000.99999999999"),)]),
                   Result(["n"], [(100001,)])).match
    assert not compare(Result(["n"], [(Decimal("100000.5"),)]), Result(["n"], [(100001,)])).match


def test_null_in_a_numeric_column_only_pairs_with_null() -> None:
    gold = Result(["k", "x"], [("a", None), ("b", 0.12345649)])
    pred = Result(["k", "x"], [("a", 0.0), ("b", 0.12345651)])
    verdict = compare(gold, pred)
    assert not verdict.match
    assert "(a, NULL)" in verdict.reason.replace("'", "")


def test_tie_groups_keep_tolerance_pairs_inside_their_group(sqlite: Backend,
                                                           duckdb: Backend) -> None:
    # Real engines: a float aggregate that differs in the last bits between SQLite and DuckDB is
    # matched within its ORDER BY group.
    gold_sql = ("SELECT region, SUM(price) / 3 AS avg_price FROM sales "
                "GROUP BY region ORDER BY region")
    pred_sql = ("SELECT region, SUM(CAST(price AS DECIMAL(10,2))) / 3 AS avg_price FROM sales "
                "GROUP BY region ORDER BY region")
    gold, pred = sqlite.execute(gold_sql), duckdb.execute(pred_sql)
    verdict = compare(gold, pred, gold_sql=gold_sql)
    assert verdict.match, verdict.reason
    swapped = Result(pred.columns, [pred.rows[1], pred.rows[0], *pred.rows[2:]])
    assert not compare(gold, swapped, gold_sql=gold_sql).match
