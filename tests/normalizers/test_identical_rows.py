"""The shortcut for a prediction whose rows equal the gold's as they came (or, unordered, in
another order): whenever it answers, its verdict is the full comparison's, word for word and
detail for detail."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import pytest

import polysql.normalizers.compare as compare_module
from polysql import Result, Verdict, compare
from polysql.core.errors import ComparisonError
from polysql.normalizers import identical
from polysql.normalizers.align import align_by_position
from polysql.normalizers.columns import ResultColumns
from polysql.normalizers.policy import ComparePolicy

_NAN = float("nan")  # one object: a row holding it equals itself under Python's ==


def _twin(value: Any, rng: random.Random) -> Any:
    """A value Python finds equal to ``value``, often of another type, as another engine's
    driver would return it."""
    kind = type(value)
    if kind is bool:
        return rng.choice([value, int(value), float(value), Decimal(int(value))])
    if kind is int:
        choices: list[Any] = [value, Decimal(value)]
        if float(value) == value:
            choices.append(float(value))
        if value in (0, 1):
            choices.append(bool(value))
        return rng.choice(choices)
    if kind is float:
        if value != value or value in (float("inf"), float("-inf")):
            return value  # the same NaN object; infinity has no other exact form
        choices = [value, -value if value == 0 else value]
        if value == int(value) and abs(value) < 2**70:
            choices.append(int(value))
        choices.append(Decimal(value))
        return rng.choice(choices)
    if kind is Decimal:
        return rng.choice([value, Decimal(str(value)) + Decimal("0.000"), float(value)
                           if float(value) == value else value])
    if kind is str:
        return "".join(list(value))  # another str object, the same text
    return value


def _value(kind: str, rng: random.Random) -> Any:
    if kind == "int":
        return rng.choice([0, 1, -7, 42, 2**53, 2**53 + 1, -(2**63), 2**70, rng.randrange(10**6)])
    if kind == "float":
        return rng.choice([0.0, -0.0, 0.5, 1.0, 22979.630000000005, 1e300, 5e-324, float("inf"),
                           _NAN, 2.0**60, rng.random() * 1e6, 0.1 + 0.2])
    if kind == "decimal":
        return rng.choice([Decimal("1.10"), Decimal("0"), Decimal("-3.5"), Decimal(2**60),
                           Decimal("123456789012345678.25"), Decimal("0.1")])
    if kind == "bool":
        return rng.choice([True, False])
    if kind == "str":
        return rng.choice(["", "a", "a  ", "3.50", "2020-01-01", "true", "Łódź", "NULL"])
    if kind == "other":
        return rng.choice([b"\x00x", date(2020, 1, 1), time(13, 5), timedelta(days=2, seconds=3),
                           uuid.UUID(int=5)])
    raise AssertionError(kind)


_KINDS = ["int", "float", "decimal", "bool", "str", "other"]
_TYPE_NAMES = [None, "INTEGER", "DOUBLE", "FLOAT", "float4", "TEXT", "json", "interval", "TIME"]


def _case(rng: random.Random) -> tuple[Result, Result, dict[str, Any]]:
    width = rng.randint(1, 3)
    height = rng.randint(1, 6)
    kinds = [rng.sample(_KINDS, rng.randint(1, 2)) for _ in range(width)]
    gold_rows = [tuple(None if rng.random() < 0.15 else _value(rng.choice(kinds[j]), rng)
                       for j in range(width)) for _ in range(height)]
    pred_rows = [tuple(_twin(v, rng) for v in row) for row in gold_rows]
    if rng.random() < 0.3:
        rng.shuffle(pred_rows)  # a bag in another order; an ordered gold decides otherwise
    names = [f"c{j}" for j in range(width)]
    gold_types = [rng.choice(_TYPE_NAMES) or "" for _ in range(width)]
    pred_types = [rng.choice(_TYPE_NAMES) or "" for _ in range(width)]
    options: dict[str, Any] = {}
    if rng.random() < 0.5:
        options["gold_sql"] = rng.choice(["SELECT * FROM t", "SELECT * FROM t ORDER BY c0",
                                          "SELECT * FROM t ORDER BY c0 DESC LIMIT 3"])
    if rng.random() < 0.2:
        options[rng.choice(["bool_as_int", "nan_equals_nan", "numeric_tolerance",
                            "trim_trailing_spaces", "numeric_strings"])] = False
    return (Result(names, gold_rows, types=gold_types),
            Result(list(names), pred_rows, types=pred_types), options)


def _full(gold: Result, pred: Result, monkeypatch: pytest.MonkeyPatch,
          **options: Any) -> Verdict:
    with monkeypatch.context() as patched:
        patched.setattr(compare_module, "identical_rows", lambda *_, **__: False)
        return compare(gold, pred, **options)


def test_the_shortcut_gives_the_full_comparisons_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20261205)
    taken = 0
    original = identical.identical_rows

    def counting(*args: Any, **options: Any) -> bool:
        nonlocal taken
        answer = original(*args, **options)
        taken += answer
        return answer

    for _ in range(3000):
        gold, pred, options = _case(rng)
        with monkeypatch.context() as patched:
            patched.setattr(compare_module, "identical_rows", counting)
            fast = compare(gold, pred, **options)
        full = _full(gold, pred, monkeypatch, **options)
        assert (fast.match, fast.reason, fast.details) == (full.match, full.reason, full.details), (
            gold.rows, pred.rows, gold.types, pred.types, options)
    assert taken > 300  # the shortcut did answer, so the equality above tested it


def _shortcut(gold: list[tuple[Any, ...]], pred: list[tuple[Any, ...]], *, width: int,
              ordered: bool = True, **policy: Any) -> bool:
    """What the shortcut answers for two results of ``width`` columns lined up by position."""
    names = [f"c{j}" for j in range(width)]
    pol = ComparePolicy(**policy)
    alignment = align_by_position(width, width)
    assert alignment is not None
    return identical.identical_rows(ResultColumns(Result(names, gold), "gold", pol),
                                    ResultColumns(Result(names, pred), "predicted", pol),
                                    alignment, ordered=ordered)


@pytest.mark.parametrize(("gold", "pred", "width", "policy", "why"), [
    ([(2**70,)], [(float(2**70),)], 1, {}, "an integer beyond 2**53 and its float: tolerance"),
    ([([True, 2],)], [([1, 2],)], 1, {}, "a nested True is not a nested 1"),
    ([(datetime(2020, 1, 1, tzinfo=UTC),)], [(datetime(2020, 1, 1, tzinfo=UTC),)], 1, {},
     "datetimes: the zones are read"),
    ([(1, "x")], [(1, "x", 3)], 2, {}, "a row wider than the header: malformed"),
    ([(True,)], [(1,)], 1, {"bool_as_int": False}, "bool_as_int off: True is not 1"),
])
def test_the_shortcut_stays_out_of_what_it_cannot_settle(gold: list[tuple[Any, ...]],
                                                        pred: list[tuple[Any, ...]], width: int,
                                                        policy: dict[str, Any], why: str) -> None:
    assert not _shortcut(gold, pred, width=width, **policy), why


def test_equal_rows_of_the_wrong_width_are_still_refused_as_malformed() -> None:
    rows = [(1, "x", 3)]
    with pytest.raises(ComparisonError, match="malformed"):
        compare(Result(["a", "b"], rows), Result(["a", "b"], list(rows)))


def test_the_full_comparison_still_judges_what_the_shortcut_leaves() -> None:
    big = compare(Result(["n"], [(2**70,)]), Result(["n"], [(float(2**70),)]))
    assert big.match and big.details["tolerance_pairs"] == 1
    nested = compare(Result(["a"], [([True, 2],)]), Result(["a"], [([1, 2],)]))
    assert not nested.match
    strict = compare(Result(["b"], [(True,)]), Result(["b"], [(1,)]), bool_as_int=False)
    assert not strict.match


def test_a_small_bag_in_another_order_is_settled_and_an_ordered_one_is_not() -> None:
    def shortcut(height: int, *, ordered: bool) -> bool:
        gold = [(i, f"n{i}", i / 4) for i in range(height)]
        return _shortcut(gold, list(reversed(gold)), width=3, ordered=ordered)

    assert shortcut(50, ordered=False)
    assert not shortcut(50, ordered=True)
    assert not shortcut(identical.SMALL_BAG_ROWS + 1, ordered=False)  # left to the keyed path
