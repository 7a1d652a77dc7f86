"""Value rules on hand-built results: what each driver type equals, and each rule's switch."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from polysql import Result, compare
from polysql.core.errors import ComparisonError
from polysql.normalizers.values import rounded_to


def one(value: Any) -> Result:
    return Result(["v"], [(value,)])


def same(a: Any, b: Any, **policy: Any) -> bool:
    return compare(one(a), one(b), **policy).match


@pytest.mark.parametrize(("a", "b"), [
    (1, 1.0),
    (1, Decimal("1.000")),
    (Decimal("1.10"), 1.1),
    (0.1 + 0.2, 0.3),
    (-0.0, 0),
    (12.5, "12.50"),
    (7, "7"),
    (1e-12, 0),  # within the absolute tolerance
    (123456789, 123456789.0004),  # int vs float: relative tolerance
    (2**60 + 1, float(2**60)),  # a float is approximate: tolerance applies
    (True, 1),
    (False, 0),
    (date(2024, 1, 5), "2024-01-05"),
    (datetime(2024, 1, 5, 8, 30), "2024-01-05T08:30:00"),
    (datetime(2024, 1, 5, 8, 30, 0, 500000), "2024-01-05 08:30:00.500"),
    (datetime(2024, 1, 5), date(2024, 1, 5)),
    (datetime(2024, 1, 5), "2024-01-05 00:00:00"),
    (time(8, 30), "08:30:00"),
    (b"\x00ab", memoryview(b"\x00ab")),
    (b"\x00ab", bytearray(b"\x00ab")),
    ("abc  ", "abc"),
    (None, None),
    (math.nan, math.nan),
    (math.inf, math.inf),
    (datetime(2024, 1, 5, 10, tzinfo=UTC),
     datetime(2024, 1, 5, 12, tzinfo=timezone(timedelta(hours=2)))),
])
def test_equal_values(a: Any, b: Any) -> None:
    assert same(a, b)
    assert same(b, a)


@pytest.mark.parametrize(("a", "b"), [
    (None, 0),
    (None, ""),
    (None, "NULL"),
    (1, 1.001),
    (2**60, 2**60 + 1),  # two integers compare exactly, beyond float precision
    (Decimal(2**60), 2**60 + 1),
    (100000, 100001),
    ("01", "1"),  # two text columns are compared as text
    ("abc", "ABC"),
    ("  abc", "abc"),  # only trailing spaces are trimmed
    (date(2024, 1, 5), "2024-01-06"),
    (datetime(2024, 1, 5, 0, 0, 1), date(2024, 1, 5)),
    (b"ab", "ab"),
    (True, "true"),  # boolean text stays text unless bool_text=True
    (math.inf, -math.inf),
    (math.nan, 0.0),
    (1, "1x"),
])
def test_different_values(a: Any, b: Any) -> None:
    assert not same(a, b)
    assert not same(b, a)


def test_values_straddling_a_rounding_boundary_still_match() -> None:
    # 6 significant digits bucket these differently (0.123456 vs 0.123457); the tolerance pass
    # on the unmatched residue pairs them. (Float noise past the 12th digit: written out in
    # full, 0.12345649 and 0.12345651 would be two different answers.)
    verdict = compare(one(0.12345649000000122), one(0.12345651000000123))
    assert verdict.match, verdict.reason
    assert verdict.details["tolerance_pairs"] == 1
    assert not compare(one(0.12345649), one(0.12345651)).match


def test_residue_pairing_respects_multiplicity() -> None:
    gold = Result(["v"], [(0.12345649000000122,), (0.12345649000000122,), (5,)])
    pred = Result(["v"], [(0.12345651000000123,), (5,), (5,)])
    verdict = compare(gold, pred)
    assert not verdict.match
    assert "1 gold row missing" in verdict.reason


def test_tolerance_is_configurable() -> None:
    assert not same(1.0, 1.001)
    assert same(1.0000000001234567, 1.001, rel_tol=1e-2)  # a long number: tolerant
    assert not same(1.0, 1.001, rel_tol=1e-2)  # both written out in full: no relative tolerance
    assert same(1.0, 1.001, rel_tol=1e-2, short_numbers_exact=False)
    assert not same(1e-12, 0, abs_tol=0.0)
    assert not same(0.1 + 0.2, 0.3, numeric_tolerance=False)
    assert same(Decimal("1.1"), 1.1, numeric_tolerance=False)  # the float's shortest spelling


@pytest.mark.parametrize(("a", "b", "switch"), [
    (True, 1, {"bool_as_int": False}),
    (12.5, "12.5", {"numeric_strings": False}),
    (date(2024, 1, 5), "2024-01-05", {"temporal_text": False}),
    (datetime(2024, 1, 5), date(2024, 1, 5), {"midnight_as_date": False}),
    ("abc  ", "abc", {"trim_trailing_spaces": False}),
    (math.nan, math.nan, {"nan_equals_nan": False}),
    (0.1 + 0.2, 0.3, {"numeric_tolerance": False}),
])
def test_each_value_rule_can_be_switched_off(a: Any, b: Any, switch: dict[str, Any]) -> None:
    assert same(a, b)
    assert not same(a, b, **switch)


def test_boolean_text_is_opt_in() -> None:
    assert not same(True, "true")
    assert same(True, "TRUE", bool_text=True)
    assert same(False, "false", bool_text=True)


def test_mixed_type_column_is_compared_value_by_value() -> None:
    # A SQLite column can hold ints, floats, text and NULL at once.
    gold = Result(["v"], [(1,), (2.5,), ("x",), (None,), ("2024-01-05",)])
    pred = Result(["v"], [(Decimal("2.50"),), ("x",), (1.0,), (None,), (date(2024, 1, 5),)])
    assert compare(gold, pred).match


def test_reason_names_row_column_and_both_values() -> None:
    gold = Result(["id", "total"], [(1, 10.0), (2, 11.0), (3, 12.5)])
    pred = Result(["id", "total"], [(1, 10.0), (2, 11.0), (3, 12.49)])
    verdict = compare(gold, pred, gold_sql="SELECT id, total FROM t ORDER BY id")
    assert verdict.reason == "row 3 differs at column 'total': gold 12.5, predicted 12.49"


@pytest.mark.parametrize(("gold", "pred"), [
    ([(-1, "a")], [(-2, "a")]),  # hash(-1) == hash(-2) in Python
    ([(0.5,), (1,)], [(2**60,), (1,)]),  # hash(0.5) == hash(2**60)
    ([(-1,), ("x",)], [(-2,), ("x",)]),
])
def test_python_hash_collisions_never_make_rows_equal(gold: list[tuple[Any, ...]],
                                                      pred: list[tuple[Any, ...]]) -> None:
    assert hash(gold[0][0]) == hash(pred[0][0])  # the premise: these values collide
    columns = [f"c{j}" for j in range(len(gold[0]))]
    verdict = compare(Result(columns, gold), Result(columns, pred))
    assert not verdict.match
    assert "missing from prediction" in verdict.reason


def test_integral_decimal_beyond_float_precision_equals_the_same_int_only() -> None:
    assert same(Decimal(2**60 + 1), 2**60 + 1)
    assert not same(Decimal(2**60 + 1), 2**60)


def test_all_null_columns_match() -> None:
    gold = Result(["a", "b"], [(None, 1), (None, 2)])
    pred = Result(["a", "b"], [(None, 2), (None, 1)])
    assert compare(gold, pred).match


def test_ordered_rows_may_differ_within_tolerance() -> None:
    gold = Result(["id", "x"], [(1, 0.12345649000000122), (2, 5.0)])
    pred = Result(["id", "x"], [(1, 0.12345651000000123), (2, 5.0)])
    verdict = compare(gold, pred, gold_sql="SELECT id, x FROM t ORDER BY id")
    assert verdict.match, verdict.reason
    assert verdict.details["tolerance_pairs"] == 1
    strict = compare(gold, pred, gold_sql="SELECT id, x FROM t ORDER BY id", rel_tol=1e-9)
    assert not strict.match
    assert "row 1 differs at column 'x'" in strict.reason


def test_malformed_result_is_a_clear_error() -> None:
    with pytest.raises(ComparisonError, match="malformed"):
        compare(Result(["a", "b"], [(1, 2), (3,)]), Result(["a", "b"], [(1, 2), (3, 4)]))


def test_rounding_to_significant_digits_leaves_what_it_cannot_round() -> None:
    """Zeros (signed), infinities and NaN come out as they went in; ordinary numbers round
    half to even, subnormals to zero, and the largest double stays finite."""
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    for rounded in rounded_to(specials, 4, 6):
        assert np.array_equal(rounded.view(np.uint64), specials.view(np.uint64))
    assert np.isfinite(rounded_to(np.array([1.7976931348623157e308]), 1, 4, 6)).all()
    assert rounded_to(np.array([123456.5, 0.000123456789, -98765.4321, 5e-324]), 6)[0].tolist() \
        == [123456.0, 0.000123457, -98765.4, 0.0]
