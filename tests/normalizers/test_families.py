"""Structured and zoned values compare as values, whatever shape the driver handed them over in.

Results here are built by hand in the shapes drivers return (the conformance type matrix runs the
same families on the real engines); each rule also has its near miss.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from dateutil.relativedelta import relativedelta

import polysql
from polysql.core.model import Result
from polysql.normalizers.families import type_family


def _one(value: Any, type_name: str) -> Result:
    return Result(columns=["v"], rows=[(value,)], types=[type_name])


def _match(gold: tuple[Any, str], pred: tuple[Any, str], **policy: Any) -> bool:
    return polysql.compare(_one(*gold), _one(*pred), **policy).match


@pytest.mark.parametrize(("gold", "pred", "same"), [
    # parsed (psycopg) against text from another engine's JSON type, keys in another order
    (({"a": 1, "b": [1, 2]}, "jsonb"), ('{"b": [1,2], "a": 1}', "JSON"), True),
    (({"a": 1, "b": [1, 2]}, "jsonb"), ('{"b": [2,1], "a": 1}', "JSON"), False),
    # text against a JSON column is read as JSON (MariaDB reports JSON as text)
    (({"a": 1}, "jsonb"), ('{"a":1}', "VARCHAR"), True),
    (({"a": 1}, "jsonb"), ('{"a":2}', "VARCHAR"), False),
    # numbers are numbers: 1 and 1.0 agree, true and 1 do not
    (('{"n": 1.0}', "JSON"), ('{"n": 1}', "json"), True),
    (('{"n": true}', "JSON"), ('{"n": 1}', "json"), False),
    (('{"x": 0.30000000000000004}', "JSON"), ('{"x": 0.3}', "VARIANT"), True),
    (('{"x": 0.31}', "JSON"), ('{"x": 0.3}', "VARIANT"), False),
    # Snowflake's semi-structured ARRAY is JSON text; other engines hand back a list
    (([1, 2, 3], "INTEGER[]"), ("[\n  1,\n  2,\n  3\n]", "ARRAY"), True),
    (([1, 2, 3], "INTEGER[]"), ("[1, 3, 2]", "ARRAY"), False),
])
def test_json_documents(gold: tuple[Any, str], pred: tuple[Any, str], same: bool) -> None:
    assert _match(gold, pred) is same
    assert _match(pred, gold) is same


def test_text_is_never_guessed_to_be_json() -> None:
    assert not _match(('{"a": 1}', "VARCHAR"), ('{"a":1}', "TEXT"))
    assert _match(('{"a":1}', "VARCHAR"), ('{"a":1}', "TEXT"))
    # text in a JSON column that is not JSON stays text
    assert _match(("not json", "JSON"), ("not json", "VARCHAR"))


@pytest.mark.parametrize(("gold", "pred", "same"), [
    (([1, 2, 3], "INTEGER[]"), (np.array([1, 2, 3]), "Array(Int64)"), True),
    (([1, 2, 3], "INTEGER[]"), ((1, 2, 3), "array<int>"), True),
    (([1, 2, 3], "INTEGER[]"), ([1, 3, 2], "array<int>"), False),
    (([Decimal("1.10")], "NUMERIC[]"), ([1.1], "DOUBLE[]"), True),
    ((["a", None], "TEXT[]"), (["a", None], "VARCHAR[]"), True),
    ((["a", None], "TEXT[]"), (["a", ""], "VARCHAR[]"), False),
])
def test_arrays(gold: tuple[Any, str], pred: tuple[Any, str], same: bool) -> None:
    assert _match(gold, pred) is same
    assert _match(pred, gold) is same


def test_unordered_arrays_are_a_policy() -> None:
    gold, pred = ([1, 2, 2], "INTEGER[]"), ([2, 1, 2], "INTEGER[]")
    assert not _match(gold, pred)
    assert _match(gold, pred, array_order="unordered")
    assert not _match(gold, ([2, 1, 1], "INTEGER[]"), array_order="unordered")


def test_structs_and_maps() -> None:
    duck_struct = ({"a": 1, "b": "x"}, "STRUCT(a INTEGER, b VARCHAR)")
    assert _match(duck_struct, ({"b": "x", "a": 1}, "Tuple(a Int64, b String)"))
    assert _match(duck_struct, ('{"a": 1, "b": "x"}', "OBJECT"))
    assert not _match(duck_struct, ({"a": 1, "b": "y"}, "struct<a:int,b:string>"))
    assert not _match(duck_struct, ({"a": 1, "c": "x"}, "struct<a:int,c:string>"))
    # a map handed over as (key, value) pairs
    duck_map = ({"k1": 1, "k2": 2}, "MAP(VARCHAR, INTEGER)")
    assert _match(duck_map, ([("k2", 2), ("k1", 1)], "map<string,int>"))
    assert not _match(duck_map, ([("k2", 3), ("k1", 1)], "map<string,int>"))


def test_aware_timestamps_are_instants() -> None:
    plus_two = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    utc = datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC)
    assert _match((plus_two, "timestamptz"), (utc, "TIMESTAMP WITH TIME ZONE"))
    assert not _match((plus_two, "timestamptz"), (utc + timedelta(seconds=1), "TIMESTAMPTZ"))


def test_naive_timestamps_are_read_as_utc_and_the_verdict_says_so() -> None:
    utc = datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC)
    naive = datetime(2024, 1, 2, 1, 4, 5)
    verdict = polysql.compare(_one(utc, "timestamptz"), _one(naive, "DateTime('UTC')"))
    assert verdict.match
    assert verdict.details["naive_timestamps_read_as_utc"] == ["v"]
    assert "read as UTC" in verdict.reason
    assert not _match((utc, "timestamptz"), (naive + timedelta(hours=1), "DateTime"))
    assert not _match((utc, "timestamptz"), (naive, "DateTime"), naive_timestamps="strict")
    both_naive = polysql.compare(_one(naive, "TIMESTAMP"), _one(naive, "DateTime"))
    assert both_naive.match and "naive_timestamps_read_as_utc" not in both_naive.details


@pytest.mark.parametrize(("gold", "pred", "same"), [
    ((timedelta(days=1, hours=2), "interval"), (26, "IntervalHour"), True),
    ((timedelta(days=1, hours=2), "interval"), (25, "IntervalHour"), False),
    ((timedelta(days=1, hours=2), "interval"), ((1, 2), "Tuple(IntervalDay, IntervalHour)"), True),
    ((timedelta(days=1, hours=2), "interval"), ((2, 1), "Tuple(IntervalDay, IntervalHour)"), False),
    ((timedelta(days=1, hours=2), "INTERVAL"), (relativedelta(days=1, hours=2), "INTERVAL"), True),
    ((timedelta(days=1, hours=2), "INTERVAL"), (relativedelta(days=1, hours=3), "INTERVAL"), False),
    # a month is not a fixed number of days
    ((relativedelta(months=1), "INTERVAL"), (1, "IntervalMonth"), True),
    ((relativedelta(months=1), "INTERVAL"), (timedelta(days=30), "interval"), False),
])
def test_intervals(gold: tuple[Any, str], pred: tuple[Any, str], same: bool) -> None:
    assert _match(gold, pred) is same
    assert _match(pred, gold) is same


def test_a_time_of_day_handed_over_as_a_duration() -> None:
    assert _match((time(12, 34, 56, 789000), "time"),
                  (timedelta(hours=12, minutes=34, seconds=56, milliseconds=789), "Time64(3)"))
    assert not _match((time(12, 34, 56, 789000), "time"),
                      (timedelta(hours=12, minutes=34, seconds=56, milliseconds=788), "Time64(3)"))


def test_type_names_map_to_families() -> None:
    assert [type_family(t) for t in ("jsonb", "JSON", "VARIANT", "Nullable(JSON)", "VARCHAR",
                                     "Map(String, UInt8)", "map<string,int>", "IntervalHour",
                                     "Time64(3)", "TIMESTAMP", None)] == [
        "json", "json", "json", "json", None, "map", "map", "interval:hour", "time", None, None]
