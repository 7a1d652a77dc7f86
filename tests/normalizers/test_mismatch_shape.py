"""Mismatch shapes in verdict details: the label error analysis counts."""

from __future__ import annotations

from decimal import Decimal

import pytest

from polysql import Result, compare
from polysql.normalizers import shape


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


def test_a_large_result_with_wrong_numbers_is_labelled_by_its_worst_difference() -> None:
    # 20,000 rows whose keys all pair and whose numbers are all off: every row reaches the shape.
    gold = [(i, f"k{i % 13}", i * 1.5, None if i % 7 == 0 else i / 3) for i in range(20_000)]
    pred = [(i, key, value * 1.02, None if third is None else third) for i, key, value, third
            in reversed(gold)]
    verdict = compare(_result(["i", "k", "v", "t"], gold), _result(["i", "k", "v", "t"], pred))
    assert not verdict.match
    assert verdict.details["mismatch"] == "numbers"
    assert verdict.details["max_relative_difference"] == pytest.approx(0.02 / 1.02)


@pytest.mark.parametrize(("gold", "pred"), [(float("inf"), 5.0), (float("nan"), 5.0),
                                            (float("-inf"), float("inf"))])
def test_an_infinity_or_nan_against_a_number_is_other_values(gold: float, pred: float) -> None:
    verdict = compare(_result(["x", "v"], [(1, gold), (2, 2.0)]),
                      _result(["x", "v"], [(1, pred), (2, 2.0)]))
    assert verdict.details["mismatch"] == "values"


def _read_from_values(side, j, rows, at):  # the general reading, from the Python values
    values = side.raw_values(j, rows)
    return shape._floats(values) if shape._all_numbers(values) else None


@pytest.mark.parametrize(("gold", "pred"), [
    # ints (NULLs in some rows, or none) and floats with NULLs, right keys and wrong numbers
    ([(i, None if i % 5 == 0 else i * 3, i / 7) for i in range(3_000)],
     [(i, None if i % 5 == 0 else i * 3, i / 7 * 1.3) for i in range(3_000)]),
    ([(i, None if i % 5 == 0 else i * 3, i / 7) for i in range(3_000)],
     [(i, None if i % 5 == 1 else i * 3, i / 7) for i in range(3_000)]),
    ([(i, -(2**63) + i, float(i)) for i in range(3_000)],
     [(i, -(2**63) + i, float(i) + 0.5) for i in range(3_000)]),
    ([(i, i, None if i % 3 else i / 9) for i in range(3_000)],
     [(i, i + 1, None if i % 3 else i / 9) for i in range(3_000)]),
    ([(i, i * 3, None if i == 5 else i / 9) for i in range(3_000)],  # NULL against NaN
     [(i, i * 4, float("nan") if i == 5 else i / 9) for i in range(3_000)]),
    ([(i, True, i * 1.5) for i in range(3_000)], [(i, False, i * 1.5) for i in range(3_000)]),
    ([(i, 2**53 + i, float("nan") if i == 7 else 1.0) for i in range(3_000)],
     [(i, 2**53 + i + 1, float("nan") if i == 7 else 1.0) for i in range(3_000)]),
])
def test_numbers_read_off_the_comparison_arrays_label_as_the_values_do(gold, pred,
                                                                      monkeypatch) -> None:
    columns = ["a", "b", "c"]
    fast = compare(_result(columns, gold), _result(columns, pred))
    monkeypatch.setattr(shape, "_numbers_at", _read_from_values)
    general = compare(_result(columns, gold), _result(columns, pred))
    assert not fast.match
    assert fast.details["mismatch"] == general.details["mismatch"]
    assert fast.details.get("max_relative_difference") == \
        general.details.get("max_relative_difference")
