"""Numbers written out in full compare exactly: the relative tolerance absorbs float noise (the
last of a double's 16-17 digits), never a rounding, truncation or data difference between two
values both engines wrote out in at most 12 significant digits."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from polysql import Result, compare
from polysql.core.columnar import ArrowRows
from polysql.normalizers.values import written_number, written_numbers


def verdicts(gold: list[tuple[Any, ...]], pred: list[tuple[Any, ...]],
             **policy: Any) -> list[bool]:
    """The verdict on Python rows, and on Arrow columns where both sides convert (the form long
    DuckDB results take): each path must say the same."""
    columns = [f"c{j}" for j in range(len(gold[0]))]
    found = [compare(Result(columns, gold), Result(columns, pred), **policy).match]
    try:
        as_arrow = [ArrowRows(pa.Table.from_pylist([dict(zip(columns, row, strict=True))
                                                    for row in rows]))
                    for rows in (gold, pred)]
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return found
    found.append(compare(Result(columns, as_arrow[0]), Result(columns, as_arrow[1]),
                         **policy).match)
    return found


@pytest.mark.parametrize(("gold", "pred"), [
    (22979.63, 22979.6),  # ROUND(x, 1) where the gold rounds to 2 places
    (393599.21, 393599.0),  # ROUND(x) where the gold rounds to 2 places
    (1378778.04, 1378778),  # integer division where the gold divides by 1000.0
    (Decimal("1378778.04"), 1378778),
    ("1962", 1962.01),  # numeric text against a number
    (100000.5, 100001),
    (Decimal("0.333333"), 0.3333333),  # two roundings of 1/3, both written out
    # float noise around a short decimal writes out that decimal
    (22979.630000000005, 22979.6),  # SQLite's AVG, unrounded, against ROUND(x, 1)
    (1378778.0000000002, 1378778.04),  # a SUM of REALs that are integers, against a decimal
    (2328.5999999999985, Decimal("2328.59")),
    (0.1 + 0.2, 0.300001),
])
def test_two_numbers_written_out_in_full_must_be_equal(gold: Any, pred: Any) -> None:
    assert verdicts([(gold,)], [(pred,)]) in ([False], [False, False])
    # the old rule, for whoever wants it back
    assert all(verdicts([(gold,)], [(pred,)], short_numbers_exact=False))


def test_an_integer_beyond_floats_is_a_verdict_not_a_crash() -> None:
    # as a float it is infinite: never within any tolerance of a finite number
    assert verdicts([(10**400,)], [(1.5,)]) == [False]
    assert verdicts([(10**400, "a"), (2, "b")], [(1.5, "a"), (2.0000001, "b")]) == [False]


@pytest.mark.parametrize(("gold", "pred"), [
    (1.990000000000001, Decimal("1.99")),  # SQLite's AVG against an exact numeric
    (1.9899999999999978, 1.99),
    (0.1 + 0.2, Decimal("0.30")),
    (0.10000000149011612, 0.1),  # a REAL (float4) value widened by the driver
    (10 / 3, Decimal("3.333333")),  # an engine that divides to a fixed scale of 6
    (2328.5999999999985, Decimal("2328.60")),  # a SUM of REALs against an exact SUM
    (22979.630000000005, 22979.63),  # noise against a value with more than 6 digits
    (114635014.99000002, Decimal("114635014.99")),  # 11 digits: paired by the tolerance pass
    (1e-12, 0.0),  # absolute tolerance, as before
    (123456789, 123456789.0004),  # 13 significant digits: not written out, tolerant
    (1378778.04, 1378777.984),  # CAST(SUM(ms) AS REAL) / 1000: a 32-bit float, then doubles
    (368231.326, 368231.3125),
    (float(2**60), 2**60 + 1),  # a float beyond 2^53 stays approximate
])
def test_float_noise_on_either_side_is_still_tolerated(gold: Any, pred: Any) -> None:
    assert all(verdicts([(gold,)], [(pred,)]))
    assert all(verdicts([(pred,)], [(gold,)]))


def test_the_rule_holds_in_the_vectorized_and_the_general_tolerance_pass() -> None:
    """Many rows take the vectorized residue pass; a mixed column takes the general one."""
    rng = random.Random(11)
    gold = [(i, round(rng.uniform(1e4, 1e6), 2)) for i in range(2_000)]
    noisy = [(i, x * (1 + 1e-15)) for i, x in gold]  # a few units in the last place
    assert all(verdicts(gold, noisy))  # written out against noise: tolerated
    # ...and paired by the hashed pass (noise is keyed as the number it surrounds), not row by
    # row in the tolerance pass: 10x slower on a large result
    paired = compare(Result(["i", "x"], gold), Result(["i", "x"], noisy))
    assert paired.details["tolerance_pairs"] == 0
    rounded = [(i, round(x, 1)) for i, x in gold]
    assert verdicts(gold, rounded) == [False, False]  # one place fewer: different answers
    assert verdicts(noisy, rounded) == [False, False]  # so is the gold's noise around them
    mixed_gold = [*gold, (-1, "text")]
    assert compare(Result(["i", "x"], mixed_gold),
                   Result(["i", "x"], [*noisy, (-1, "text")])).match
    assert not compare(Result(["i", "x"], mixed_gold),
                       Result(["i", "x"], [*rounded, (-1, "text")])).match


def test_nested_numbers_follow_the_same_rule() -> None:
    gold = Result(["j"], [({"total": 22979.63},)])
    assert not compare(gold, Result(["j"], [({"total": 22979.6},)])).match
    assert compare(gold, Result(["j"], [({"total": 22979.63},)])).match


def test_shortness_is_decided_the_same_way_for_one_value_and_for_an_array() -> None:
    rng = random.Random(5)
    values = [rng.uniform(-1e13, 1e13) / 10 ** rng.randint(0, 20) for _ in range(2_000)]
    values += [round(v, rng.randint(0, 6)) for v in values]
    # noise of a few units in the last place around short decimals
    values += [v * (1 + rng.choice((-3, -1, 1, 2)) * 2.0**-52) for v in values[2_000:]]
    forms = written_numbers(pa.array(values).to_numpy()).tolist()
    assert [written_number(v) for v in values] == [None if f != f else f for f in forms]
    noisy = 0
    for value, form in zip(values, forms, strict=True):
        if value == int(value) or not 1e-11 <= abs(value) < 1e12:
            continue
        if float(f"{value:.12g}") == value:  # shortest spelling of at most 12 digits: itself
            assert form == value, value
        elif abs(float(f"{value:.10g}") - value) < 1e-15 * abs(value):
            noisy += 1  # noise around a decimal of at most 10 digits: that decimal
            assert form == float(f"{value:.10g}"), value
    assert noisy > 500


def test_a_32_bit_float_column_is_never_written_out() -> None:
    """PostgreSQL's float4, DuckDB's and MySQL's FLOAT keep 24 bits: 368231326 comes back as
    368231330 (PostgreSQL's text) or 368231328 (DuckDB's value), both integral."""
    gold = Result(["s"], [(368231326.0,)], types=["REAL"])  # SQLite's REAL is 64 bits
    for name, value in (("float4", 368231330.0), ("FLOAT", 368231328.0),
                        ("Nullable(Float32)", 368231328.0)):
        assert compare(gold, Result(["s"], [(value,)], types=[name])).match, name
        assert not compare(gold, Result(["s"], [(value,)], types=["float8"])).match, name
    # still far from a wrong answer
    assert not compare(gold, Result(["s"], [(368599559.0,)], types=["float4"])).match


def test_noise_around_long_numbers_stays_in_the_hashed_pass() -> None:
    """Two engines' noisy doubles (17 digits, 1e-9 apart) pair by their buckets. A double lands
    near a 12-digit decimal a few times in 1000; keyed as that decimal on one side only, such rows
    went one by one through the tolerance pass (~1.8% of them, 30x the bucket-edge rows)."""
    rng = random.Random(3)
    gold = [(i, rng.random() * 1e6, rng.random()) for i in range(20_000)]
    noisy = [(i, p * (1 + rng.uniform(-1e-9, 1e-9)), r * (1 + rng.uniform(-1e-9, 1e-9)))
             for i, p, r in gold]
    verdict = compare(Result(["i", "p", "r"], gold), Result(["i", "p", "r"], noisy))
    assert verdict.match
    assert verdict.details["tolerance_pairs"] < len(gold) // 200


@pytest.mark.parametrize(("gold", "pred"), [
    (393599.2121039109, 393599),  # AVG against SUM / COUNT in integer division
    (393599.2121039109, 393599.0),  # ...or ROUND(AVG(x)) as a double
    (Decimal("393599.212103910933"), 393599),  # PostgreSQL's numeric AVG
    (393599.2121039109, Decimal("393599")),
    (-393599.2121039109, -393599),
    (0.9999997123456789, 1),  # within 1e-5 below 1, too
    (123456789.51234567, 123456790),  # ROUND half up, beyond the buckets' integer steps
])
def test_an_integer_against_a_long_number_differs_by_more_than_noise(gold: Any, pred: Any) -> None:
    assert verdicts([(gold,)], [(pred,)]) in ([False], [False, False])
    assert verdicts([(pred,)], [(gold,)]) in ([False], [False, False])
    assert all(verdicts([(gold,)], [(pred,)], short_numbers_exact=False))


@pytest.mark.parametrize(("gold", "pred"), [
    (123456789012.00002, 123456789012),  # a long sum's noise around an integer
    (393599.00000000006, 393599),
    (-5.000000000001, -5),  # noise grown past the snap by cancellation
    (2**60 + 1, float(2**60)),  # beyond 2^53 a float is approximate
    (3e-17, 0),  # absolute tolerance
])
def test_an_integer_against_noise_around_it_is_equal(gold: Any, pred: Any) -> None:
    assert all(verdicts([(gold,)], [(pred,)]))
    assert all(verdicts([(pred,)], [(gold,)]))


def test_integers_against_long_numbers_in_every_pass() -> None:
    """The hashed pass (an integer's key is itself, a long number's bucket is moved off the
    integers), the vectorized residue pass (many rows) and the general one (a mixed column)."""
    rng = random.Random(7)
    # all within the relative tolerance of their integer part
    averages = [(i, rng.randint(10**7, 10**9) / rng.choice((3, 7, 9, 11))) for i in range(3_000)]
    averages = [(i, x) for i, x in averages if x != int(x)]
    truncated = [(i, int(x)) for i, x in averages]
    assert verdicts(averages, truncated) == [False, False]
    noisy = [(i, x * (1 + 2.0**-52)) for i, x in averages]
    assert all(verdicts(averages, noisy))  # long against long: the tolerance, as ever
    whole = [(i, float(int(x))) for i, x in averages]  # the integers themselves, with noise
    near = [(i, x * (1 + 1e-13)) for i, x in whole]
    assert all(verdicts(whole, near))
    mixed = [*averages, (-1, "text")]
    assert not compare(Result(["i", "x"], mixed), Result(["i", "x"], [*truncated, (-1, "text")])).match
    assert compare(Result(["i", "x"], mixed), Result(["i", "x"], [*noisy, (-1, "text")])).match


def test_nested_integers_against_long_numbers() -> None:
    gold = Result(["j"], [({"avg": 393599.2121039109},)])
    assert not compare(gold, Result(["j"], [({"avg": 393599},)])).match
    assert compare(gold, Result(["j"], [({"avg": 393599.21210391093},)])).match
