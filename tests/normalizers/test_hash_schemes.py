"""Hash schemes for columns holding NULL, or ints against floats: which scheme a column gets, and
that verdicts stay right around the values those schemes reserve or convert."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest

from polysql import Result, compare
from polysql.normalizers.hashing import _rows_holding, hash_columns
from polysql.normalizers.policy import DEFAULT_POLICY
from polysql.normalizers.values import column_keys, column_types, materialize


def scheme(*columns: tuple[Any, ...]) -> str:
    keys = [column_keys(c, DEFAULT_POLICY) for c in columns]
    types = [column_types(materialize(k)) for k in keys]
    return hash_columns(keys, lambda i: types[i])[0]


@pytest.mark.parametrize(("gold", "pred", "expected"), [
    ((1.5, None), (None, 2.5), "float64"),
    ((1, None), (None, 2), "int64"),
    ((1, None), (3, 2), "int64"),
    ((1, None, True), (1.5, None), "float64"),  # ints exact as floats join a float column
    ((None, None), (1.5, 2.5), "float64"),
    ((2**53, 1), (1.5, 2.5), "checked"),  # an int a float cannot hold exactly
    ((-(2**63), None), (1, 2), "checked"),  # a key equal to the int64 standing for NULL
    ((2**64, None), (1, 2), "checked"),  # beyond 64 bits
    ((math.nan, None), (1.0, 2.5), "checked"),  # NaN keys are not floats
])
def test_scheme(gold: tuple[Any, ...], pred: tuple[Any, ...], expected: str) -> None:
    assert scheme(gold, pred) == expected


def one_column(values: tuple[Any, ...]) -> Result:
    return Result(["v"], [(v,) for v in values])


@pytest.mark.parametrize(("gold", "pred", "same"), [
    ((1.5, None, 0.1 + 0.2, None), (None, 0.3, None, 1.5), True),
    ((1.5, None, None, None), (1.5, math.nan, None, None), False),  # NULL is not NaN
    ((math.nan, None), (math.nan, None), True),
    ((1, None, 3, None), (None, 1, None, 3), True),
    ((1, None, 3, None), (1, 0, 3, None), False),  # NULL is not 0
    ((-(2**63), None), (-(2**63), None), True),
    ((-(2**63), None), (-(2**63), -(2**63)), False),  # the value NULL hashes to, yet not NULL
    ((-(2**63), None), (None, None), False),
    ((2**53 + 1, None), (2**53, None), False),
    ((-0.0, None, 2.0), (0.0, None, 2), True),
    ((True, None, 1), (1, None, True), True),
    ((1, None, 3), (3.0, 1.0000000001, None), True),  # ints against floats, within tolerance
    ((1, None, 3), (3.0, 1.5, None), False),
    ((0, None), (None, 0.0), True),
    ((None, None), (None, 0.0), False),
    ((2**60 + 1, None), (float(2**60), None), True),  # a float is approximate
])
def test_verdicts_around_null(gold: tuple[Any, ...], pred: tuple[Any, ...], same: bool) -> None:
    assert compare(one_column(gold), one_column(pred)).match is same
    assert compare(one_column(pred), one_column(gold)).match is same


@pytest.mark.parametrize("seed", range(10))
def test_rows_holding_is_membership(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Small hash values on purpose: membership must not depend on the hashes being well mixed.
    hashes = rng.integers(0, 50, size=int(rng.integers(1, 300))).astype(np.uint64)
    values = np.unique(rng.integers(0, 60, size=int(rng.integers(1, 20))).astype(np.uint64))
    assert _rows_holding(hashes, values).tolist() == np.flatnonzero(np.isin(hashes, values)).tolist()
    big = np.array([random.Random(seed).getrandbits(64) for _ in range(100)], dtype=np.uint64)
    picked = np.unique(big[::7])
    assert _rows_holding(big, picked).tolist() == np.flatnonzero(np.isin(big, picked)).tolist()


@pytest.mark.parametrize(("gold", "pred", "same"), [
    ((1.5, None, -0.0, 3), (1.5, None, 0.0, 3.0), True),  # compared through float bits
    ((1.5, None, 2.5), (None, 1.5, 2.5), False),  # same bag, other order
    ((1, None, 2**40), (1, None, 2**40), True),  # compared through int64 bits
    ((1, None, 2), (1, 0, 2), False),
    ((0.1 + 0.2, None), (0.3, None), True),  # different bits, same key
    ((1.0, None), (1.0000000001, None), True),  # different keys, within tolerance
    ((1.0, None), (1.5, None), False),
])
def test_ordered_verdicts_through_hashes(gold: tuple[Any, ...], pred: tuple[Any, ...],
                                         same: bool) -> None:
    assert compare(one_column(gold), one_column(pred), ordered=True).match is same
    assert compare(one_column(pred), one_column(gold), ordered=True).match is same
