"""ORDER BY a number that carries float noise in the gold: rows whose keys are equal only within
tolerance were put in their order by the noise, so a later ORDER BY key cannot be held against
the prediction there. SQLite's AVG gives 1.990000000000001 and 1.9899999999999978 where an
engine with exact decimals ties both at 1.99 and orders them by the next key."""

from __future__ import annotations

from decimal import Decimal

from polysql import Result, compare

SQL = "SELECT name, avg_price FROM genres ORDER BY avg_price DESC, name"
NOISY_GOLD = Result(["name", "avg_price"], [
    ("TV Shows", 1.990000000000001), ("Drama", 1.9899999999999978),
    ("Rock", 0.9900000000000051), ("Latin", 0.99), ("Blues", 0.9899999999999965),
])


def test_rows_ordered_by_noise_may_come_in_the_later_keys_order() -> None:
    exact = Result(["name", "avg_price"], [
        ("Drama", Decimal("1.99")), ("TV Shows", Decimal("1.99")),
        ("Blues", Decimal("0.99")), ("Latin", Decimal("0.99")), ("Rock", Decimal("0.99")),
    ])
    verdict = compare(NOISY_GOLD, exact, gold_sql=SQL)
    assert verdict.match, verdict.reason
    assert compare(NOISY_GOLD, NOISY_GOLD, gold_sql=SQL).match


def test_the_primary_key_order_is_still_checked() -> None:
    ascending = Result(["name", "avg_price"], [
        ("Blues", 0.99), ("Latin", 0.99), ("Rock", 0.99), ("Drama", 1.99), ("TV Shows", 1.99),
    ])
    assert not compare(NOISY_GOLD, ascending, gold_sql=SQL).match


def test_exactly_equal_keys_still_demand_the_later_keys_order() -> None:
    gold = Result(["name", "avg_price"], [("Drama", 1.99), ("TV Shows", 1.99)])
    swapped = Result(["name", "avg_price"], [("TV Shows", 1.99), ("Drama", 1.99)])
    assert not compare(gold, swapped, gold_sql=SQL).match
    assert compare(gold, gold, gold_sql=SQL).match


def test_a_limit_through_a_noise_ordered_run_accepts_any_row_of_the_run() -> None:
    """ORDER BY a key that is not an output column: the gold and its widened re-run carry the
    key as a hidden last column."""
    sql = ("SELECT name FROM genres GROUP BY name ORDER BY avg(price) DESC, name LIMIT 3")
    widened_rows = [("TV Shows", 1.990000000000001), ("Drama", 1.9899999999999978),
                    ("Rock", 0.9900000000000051), ("Latin", 0.99), ("Blues", 0.9899999999999965),
                    ("Jazz", 0.5)]
    gold = Result(["name", "k"], widened_rows[:3])
    widened = Result(["name", "k"], widened_rows)
    by_exact_engine = Result(["name"], [("Drama",), ("TV Shows",), ("Blues",)])
    verdict = compare(gold, by_exact_engine, gold_sql=sql, gold_widened=widened,
                      hidden_columns=1)
    assert verdict.match, verdict.reason
    assert verdict.details["tie_at_limit"]
    outside = Result(["name"], [("Drama",), ("TV Shows",), ("Jazz",)])
    assert not compare(gold, outside, gold_sql=sql, gold_widened=widened,
                       hidden_columns=1).match
