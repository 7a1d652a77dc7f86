"""Mismatch shapes in verdict details: the label error analysis counts."""

from __future__ import annotations

from decimal import Decimal

import pytest

from polysql import Result, compare


def _result(columns: list[str], rows: list[tuple]) -> Result:
    return Result(columns=columns, rows=rows)


@pytest.mark.parametrize(
    ("gold", "pred", "sql", "shape"),
    [
        ([(1, "a"), (2, "b")], [(1, "a")], None, "row_count"),
        ([(1, "a"), (2, "b")], [(2, "b"), (1, "a")], "SELECT x, y FROM t ORDER BY x", "order"),
        ([(1.0, "a"), (2.5, "b")], [(1.0, "a"), (2.51, "b")], None, "numeric_drift"),
        ([(Decimal("2.5"), "a")], [(2, "a")], None, "numbers"),
        ([(1, "a"), (2, "b")], [(1, "a"), (2, "c")], None, "values"),
        ([(1, None)], [(1, 5)], None, "values"),
    ],
)
def test_shape_of_row_mismatches(gold, pred, sql, shape) -> None:
    verdict = compare(_result(["x", "y"], gold), _result(["x", "y"], pred), gold_sql=sql)
    assert not verdict.match
    assert verdict.details["mismatch"] == shape


def test_unalignable_columns_are_a_columns_mismatch() -> None:
    verdict = compare(_result(["x", "y"], [(1, "a")]), _result(["z"], [("q",)]))
    assert not verdict.match
    assert verdict.details["mismatch"] == "columns"


def test_drift_records_the_largest_relative_difference() -> None:
    verdict = compare(_result(["v"], [(100.0,), (200.0,)]), _result(["v"], [(100.5,), (200.0,)]))
    assert verdict.details["mismatch"] == "numeric_drift"
    assert verdict.details["max_relative_difference"] == pytest.approx(0.5 / 100.5)


def test_matches_carry_no_shape() -> None:
    verdict = compare(_result(["v"], [(1,)]), _result(["v"], [(1,)]))
    assert verdict.match
    assert "mismatch" not in verdict.details
