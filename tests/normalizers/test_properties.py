"""Properties the contract promises for any input: bags are order-blind, and equality is
symmetric where the rules are symmetric."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from polysql import Result, compare


def random_value(rng: random.Random, column: int) -> Any:
    if rng.random() < 0.1:
        return None
    kind = column % 6
    if kind == 0:
        return rng.randrange(-5, 5)
    if kind == 1:
        return rng.choice([1.5, 2.25, 0.1 + 0.2, -0.0, 3.0])
    if kind == 2:
        return Decimal(rng.randrange(0, 400)) / 100
    if kind == 3:
        return rng.choice(["a", "b ", "c", "10"])
    if kind == 4:
        return date(2024, 1, 1) + timedelta(days=rng.randrange(3))
    return rng.choice([True, False])


def random_result(rng: random.Random, rows: int, width: int) -> Result:
    return Result([f"c{j}" for j in range(width)],
                  [tuple(random_value(rng, j) for j in range(width)) for _ in range(rows)])


def respelled(value: Any) -> Any:
    """The same value as another engine's driver might return it."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        return value.rstrip() + "  "
    return value


@pytest.mark.parametrize("seed", range(25))
def test_shuffling_a_bag_never_changes_the_verdict(seed: int) -> None:
    rng = random.Random(seed)
    gold = random_result(rng, rng.randrange(0, 40), rng.randrange(1, 6))
    pred = Result(gold.columns, [tuple(respelled(v) for v in row) for row in gold.rows])
    shuffled = list(pred.rows)
    rng.shuffle(shuffled)
    assert compare(gold, pred).match
    assert compare(gold, Result(pred.columns, shuffled)).match
    # A changed row stays a mismatch however the rows are shuffled.
    if gold.rows:
        broken = list(shuffled)
        broken[0] = ("changed",) + broken[0][1:]
        verdicts = set()
        for _ in range(3):
            rng.shuffle(broken)
            verdicts.add(compare(gold, Result(pred.columns, list(broken))).match)
        assert verdicts == {False}


@pytest.mark.parametrize("seed", range(25))
def test_bag_comparison_is_symmetric(seed: int) -> None:
    rng = random.Random(1000 + seed)
    width = rng.randrange(1, 5)
    a = random_result(rng, rng.randrange(0, 12), width)
    # Half the time b is a respelled permutation of a, otherwise an unrelated result.
    if rng.random() < 0.5:
        b = Result(a.columns, [tuple(respelled(v) for v in row) for row in reversed(a.rows)])
    else:
        b = random_result(rng, rng.randrange(0, 12), width)
    assert compare(a, b).match == compare(b, a).match


def test_ordered_comparison_is_symmetric_for_equal_widths() -> None:
    rng = random.Random(7)
    for _ in range(30):
        a = random_result(rng, 6, 3)
        b = Result(a.columns, sorted(a.rows, key=lambda r: repr(r[0])))
        sql = "SELECT c0, c1, c2 FROM t ORDER BY c0"
        assert compare(a, b, gold_sql=sql).match == compare(b, a, gold_sql=sql).match
