"""Python values built into Arrow from buffers are exactly what ``pa.array`` builds, for every
covered type, or left to ``pa.array`` (None) when a value is not what a driver returns."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from polysql.backends._common.arrow_from_python import python_array

Draw = Callable[[random.Random], Any]

TYPES: list[tuple[pa.DataType, Draw]] = [
    (pa.int64(), lambda r: r.choice([0, -1, 2**63 - 1, -(2**63), r.randrange(-10**6, 10**6)])),
    (pa.int8(), lambda r: r.randrange(-128, 128)),
    (pa.int32(), lambda r: r.randrange(-(2**31), 2**31)),
    (pa.uint8(), lambda r: r.randrange(0, 256)),
    (pa.uint64(), lambda r: r.choice([0, 2**64 - 1, 2**63, r.randrange(0, 10**9)])),
    (pa.float64(), lambda r: r.choice([0.0, -0.0, math.inf, -math.inf, 5e-324, 1e308,
                                       0.1 + 0.2, r.uniform(-1e6, 1e6)])),
    (pa.float32(), lambda r: r.choice([0.0, -0.0, 1.5, 0.1, 3.4028234663852886e38, 1e-45])),
    (pa.bool_(), lambda r: r.random() < 0.5),
    (pa.string(), lambda r: r.choice(["", " ", "a", "naïve", "日本語", "😀", "a\x00b", "x" * 300])),
    (pa.large_string(), lambda r: r.choice(["", "é", "z" * 70])),
    (pa.binary(), lambda r: r.choice([b"", b"\x00", bytes(range(256)), b"\xff\xfe"])),
    (pa.large_binary(), lambda r: r.choice([b"", b"\x00\x01"])),
    (pa.decimal128(10, 2), lambda r: r.choice([Decimal("0.00"), Decimal("-0.01"),
                                               Decimal("99999999.99"), Decimal("-99999999.99"),
                                               Decimal(r.randrange(-10**9, 10**9)) / 100])),
    (pa.decimal128(38, 10), lambda r: r.choice([Decimal("9" * 28 + "." + "9" * 10),
                                                Decimal("-1E-10"), Decimal("12.5"),
                                                Decimal("1E+20")])),
    (pa.decimal128(5, 0), lambda r: r.choice([Decimal("-99999"), Decimal("7"), Decimal("1E+2")])),
]


def _same(built: pa.Array, expected: pa.Array) -> None:
    built.validate(full=True)
    assert built.type == expected.type and built.null_count == expected.null_count
    # repr tells -0.0 from 0.0 and matches NaN with NaN; Decimals keep their scale in repr
    assert [repr(v) for v in built.to_pylist()] == [repr(v) for v in expected.to_pylist()]


@pytest.mark.parametrize("seed", range(40))
def test_values_build_the_array_pa_array_builds(seed: int) -> None:
    rng = random.Random(seed)
    for type_, draw in TYPES:
        nulls = rng.choice([0.0, 0.2, 1.0])
        values = [None if rng.random() < nulls else draw(rng)
                  for _ in range(rng.choice([0, 1, 7, 8, 9, 100]))]
        built = python_array(values, type_)
        assert built is not None, (type_, values)
        _same(built, pa.array(values, type=type_))


def test_nan_is_kept_bit_for_bit_as_a_float() -> None:
    built = python_array([math.nan, None, 1.0], pa.float64())
    assert built is not None and math.isnan(built[0].as_py()) and built[1].as_py() is None


@pytest.mark.parametrize(("values", "type_"), [
    ([1, True], pa.int64()),  # a bool is not what a driver returns for an integer
    ([1.5], pa.int64()),
    ([1], pa.float64()),
    ([2**64], pa.uint64()),  # beyond the type
    ([-1], pa.uint8()),
    ([1], pa.bool_()),
    ([b"x"], pa.string()),
    (["x"], pa.binary()),
    ([Decimal("1.234")], pa.decimal128(10, 2)),  # more fraction digits than the scale
    ([Decimal("123456")], pa.decimal128(5, 0)),  # beyond the precision
    ([Decimal("NaN")], pa.decimal128(10, 2)),
    ([1.5], pa.decimal128(10, 2)),
    ([1], pa.date32()),  # a type not covered
])
def test_values_a_driver_would_not_return_are_left_to_pa_array(values: list[Any],
                                                              type_: pa.DataType) -> None:
    assert python_array(values, type_) is None
