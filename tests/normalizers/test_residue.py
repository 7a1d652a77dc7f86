"""The tolerance pass on rows the hashed comparison left unpaired: vectorized rank pairing, its
fallback, and the exactness rules it must keep."""

from __future__ import annotations

import random
from decimal import Decimal

import numpy as np

from polysql import Result, compare
from polysql.backends.base import Backend
from polysql.normalizers import residue
from polysql.normalizers.policy import DEFAULT_POLICY
from polysql.normalizers.side import Side
from polysql.normalizers.values import PLAIN_READING, column_keys


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


def test_right_keys_with_wrong_numbers_are_rejected_without_the_general_pass(monkeypatch) -> None:
    # Every row's key pairs and every number is wrong (a NULL among them against a number): each
    # row is alone in its group on both sides, so no pairing in Python is needed to reject it.
    general: list[int] = []
    real = residue.pair_within_tolerance

    def recorded(gold_rows: list, pred_rows: list, policy: object) -> tuple[list[int], list[int]]:
        general.append(len(gold_rows))
        return real(gold_rows, pred_rows, policy)  # type: ignore[arg-type]

    monkeypatch.setattr(residue, "pair_within_tolerance", recorded)
    rng = random.Random(8)
    gold_rows = [(i, rng.random() * 1000, None if i % 5 == 0 else rng.random()) for i in range(5000)]
    pred_rows = [(i, x * 1.5, 0.25 if y is None else y) for i, x, y in gold_rows]
    verdict = compare(Result(["i", "x", "y"], gold_rows), Result(["i", "x", "y"], pred_rows))
    assert not verdict.match and "5000 gold rows missing" in verdict.reason
    assert general == []


def test_float_columns_with_nulls_read_as_the_general_path_reads_them(monkeypatch) -> None:
    """The float-array and homogeneous readings of a column give the general path's numbers."""
    class Column:  # the things _numbers asks of a Side
        floats_at = Side.floats_at

        def __init__(self, values: list) -> None:
            self.raw = [values]
            self.lazy_keys = [column_keys(values, DEFAULT_POLICY)]
            self.reading = [PLAIN_READING]
            self.policy = DEFAULT_POLICY

        def raw_values(self, j: int, rows: list[int]) -> list:
            return [self.raw[j][i] for i in rows]

    for values in ([1.5, None, 2.25, None, 22979.630000000005], [0.1, 2.5e300, -0.0, 7.0],
                   [1, None, 2**40, None], [Decimal("1.10"), None, Decimal("3")],
                   [None, None, None]):
        side = Column(values)
        for rows in (np.arange(len(values)), np.arange(len(values))[::-1].copy(),
                     np.array([1, len(values) - 1], dtype=np.intp)):
            readings = [residue._numbers(side, 0, rows)]  # type: ignore[arg-type]
            monkeypatch.setattr(residue, "_float_numbers", lambda *args: None)
            readings.append(residue._numbers(side, 0, rows))  # type: ignore[arg-type]
            monkeypatch.setattr(residue, "_homogeneous_numbers", lambda *args: None)
            general = residue._numbers(side, 0, rows)  # type: ignore[arg-type]
            monkeypatch.undo()
            for fast in readings:
                for part in ("approx", "exact", "is_number", "other"):
                    assert np.array_equal(getattr(fast, part), getattr(general, part)), part
                assert np.array_equal(fast.written, general.written, equal_nan=True)
                assert [fast.fine[k] for k in range(len(rows))] == [values[i] for i in rows]


def test_float_columns_read_from_their_key_arrays() -> None:
    """A column of floats is read off the array its keys were made from; a NaN in it, or a
    column of other numbers, is read from the values."""
    side_keys = column_keys([1.5, None, 2.0], DEFAULT_POLICY)
    assert side_keys.floats is not None  # type: ignore[attr-defined]
    assert column_keys([Decimal("1.5"), Decimal("2")], DEFAULT_POLICY).floats is None  # type: ignore[attr-defined]

    class Column:
        floats_at = Side.floats_at

        def __init__(self, values: list) -> None:
            self.raw = [values]
            self.lazy_keys = [column_keys(values, DEFAULT_POLICY)]
            self.reading = [PLAIN_READING]

    assert residue._float_numbers(Column([1.5, None]), 0, np.arange(2)) is not None  # type: ignore[arg-type]
    assert residue._float_numbers(Column([1.5, float("nan")]), 0, np.arange(2)) is None  # type: ignore[arg-type]
    assert residue._float_numbers(Column([1, 2]), 0, np.arange(2)) is None  # type: ignore[arg-type]
