"""The fast paths of column_keys give exactly the keys of the general path (keys_by_type)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import pytest

from polysql.normalizers.policy import DEFAULT_POLICY, ComparePolicy
from polysql.normalizers.values import (
    NAN_KEY,
    PLAIN_READING,
    FloatKeys,
    Reading,
    column_keys,
    column_types,
    keys_by_type,
    materialize,
)

NoneType = type(None)

POLICIES = {
    "default": DEFAULT_POLICY,
    "exact": DEFAULT_POLICY.with_options(numeric_tolerance=False),
    "bool_apart": DEFAULT_POLICY.with_options(bool_as_int=False),
    "nan_apart": DEFAULT_POLICY.with_options(nan_equals_nan=False),
    "no_trim": DEFAULT_POLICY.with_options(trim_trailing_spaces=False),
    "no_temporal_text": DEFAULT_POLICY.with_options(temporal_text=False, midnight_as_date=False),
}

COLUMNS: dict[str, tuple[Any, ...]] = {
    "all NULL": (None, None, None),
    "floats and NULL": (1.5, None, 2.25, None, -0.0, 0.0, math.inf, -math.inf, 3.0, 1e300,
                        5e-324, 0.1 + 0.2, 123456.789012, None),
    "floats, NaN and NULL": (math.nan, None, 1.0, math.nan, None, 2.5),
    "floats without NULL": (1.5, -0.0, math.nan, 7.0, 0.30000000000000004),
    "ints and NULL": (1, None, 2**53 + 1, -(2**63), 2**70, None, 0),
    "huge ints only": (2**64, -(2**80), 2**53 + 1),
    "bools and NULL": (True, None, False, None),
    "bools, ints and NULL": (True, 1, None, False, 0, 2, None),
    "text and NULL": ("abc  ", None, "1.50", "", " x ", "2024-01-05", "true", None),
    "decimals and NULL": (Decimal("1.10"), None, Decimal(2**60), Decimal("-0"), Decimal("NaN"),
                          Decimal("1E+400"), Decimal("0.1"), None),
    "decimals, sNaN and NULL": (Decimal("2.5"), None, Decimal("sNaN")),
    "dates and NULL": (date(2024, 1, 5), None, date(1999, 12, 31)),
    "datetimes and NULL": (datetime(2024, 1, 5), None, datetime(2024, 1, 5, 8, 30, 0, 500000)),
    "times and NULL": (time(8, 30), None, time(0, 0, 0, 1)),
    "bytes and NULL": (b"\x00ab", None, b""),
    "mixed and NULL": (1, 1.5, "x", None, True, Decimal("2"), math.nan, 2**70, "3 ", None),
    "int and float and NULL": (1, None, 1.0, 2.5, -0.0, 0),
}

READINGS = {
    "plain": PLAIN_READING,
    "text as anything": Reading(numbers=True, temporal=True, booleans=True),
}


def comparable(keys: Sequence[Any]) -> list[Any]:
    """Keys in a form where equal means the same key: type and repr (so -0.0 differs from 0.0
    and True from 1), and a private NaN key (NaN never equals NaN) as a marker."""
    out = []
    for key in materialize(keys):
        if type(key) is object:
            out.append("fresh NaN key")
        else:
            out.append((type(key), repr(key)))
    return out


@pytest.mark.parametrize("reading", READINGS.values(), ids=READINGS.keys())
@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
@pytest.mark.parametrize("column", COLUMNS.values(), ids=COLUMNS.keys())
def test_fast_paths_give_the_general_keys(column: tuple[Any, ...], policy: ComparePolicy,
                                          reading: Reading) -> None:
    fast = column_keys(column, policy, reading)
    assert len(fast) == len(column)
    assert comparable(fast) == comparable(keys_by_type(column, policy, reading))
    # Passing the column's types (as ResultColumns does) changes nothing.
    assert comparable(column_keys(column, policy, reading, column_types(column))) == comparable(fast)


def test_nulls_stay_none_and_nan_keeps_its_key() -> None:
    keys = column_keys((math.nan, None, 1.25), DEFAULT_POLICY)
    assert materialize(keys) == [NAN_KEY, None, 1.25]


def test_one_float_type_with_nulls_stays_an_array() -> None:
    keys = column_keys((1.5, None, 2.0, None), DEFAULT_POLICY)
    assert isinstance(keys, FloatKeys)
    parts = keys.nullable_array
    assert parts is not None
    _, nulls = parts
    assert nulls is not None and nulls.tolist() == [False, True, False, True]
    assert keys.array is None  # the float array alone does not describe NULL rows


def test_decimals_with_nulls_are_spread_back_as_an_array() -> None:
    keys = column_keys((Decimal("1.5"), None, Decimal(2**60)), DEFAULT_POLICY)
    assert isinstance(keys, FloatKeys)
    assert materialize(keys) == [1.5, None, 2**60]
    assert keys.nullable_array is None  # the exact big integer is a patch: no array hashing


def test_columns_whose_values_are_their_keys_are_not_copied() -> None:
    ints = (1, None, 2**70)
    assert column_keys(ints, DEFAULT_POLICY) is ints
    text = ("a ", None)
    assert column_keys(text, POLICIES["no_trim"]) is text


def test_long_float_columns_get_the_keys_of_their_pieces() -> None:
    # Longer than one block of the blockwise key arithmetic, with a first stretch of integral
    # floats only (kept as they are) before noisy, NaN, NULL and huge values.
    pieces = [tuple(float(i) for i in range(70_000)),
              tuple(v for i in range(6_000) for v in (i * 0.1, 1e300 / (i + 1), None,
                                                       math.nan, 22979.630000000005, -i / 7.0)),
              tuple(0.1 + 0.2 + i for i in range(50_000))]
    whole = column_keys(sum(pieces, ()), DEFAULT_POLICY)
    assert comparable(whole) == sum((comparable(column_keys(p, DEFAULT_POLICY)) for p in pieces), [])
    assert comparable(whole)[70_000 + 4] == (float, "22979.63")  # noise snapped, past block one
