"""Values of structured, semi-structured and zoned types in one canonical form per column.

Each driver hands back JSON, arrays, structs, maps, zoned timestamps and intervals in its own
shape: parsed or as text, list or tuple or numpy array, dict or Row, aware or naive datetime,
timedelta or a count of some unit. Before keys are built, a column whose values or whose engine
type name call for it is rewritten once, value by value, into one form:

* JSON (the engine type says JSON: json, jsonb, JSON, VARIANT/OBJECT/ARRAY) -- text is parsed;
  objects, arrays and scalars become :class:`Nested` values (object key order free, arrays
  ordered, numbers as numbers). Text in a column whose own type is not JSON is parsed only when
  the column it is compared with is JSON (:meth:`ResultColumns.read_as_json`), never by guessing.
* arrays (list, tuple, numpy array) -- ordered :class:`Nested` arrays of canonical elements, or
  sorted ones under the ``array_order="unordered"`` policy; structs and maps (dict, Spark Row,
  a map handed back as key/value pairs) -- :class:`Nested` objects keyed by field name.
* aware timestamps -- the same instant as a naive UTC datetime, so two zones at one instant are
  equal; a naive timestamp is read as UTC (policy ``naive_timestamps``; the verdict says when
  that decided a match).
* intervals -- a fixed duration (:class:`datetime.timedelta`) where the engine's interval is one:
  a count of one unit (named by the type), a day-time relativedelta; one with months or years
  is kept as (months, timedelta), since a month is not a fixed number of days.
* a time of day handed back as a duration since midnight becomes that :class:`datetime.time`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np

from polysql.normalizers.policy import ComparePolicy
from polysql.normalizers.values import off_integer_one, written_number

# Type names (lowercased) of semi-structured columns, whose text holds JSON.
_JSON_TYPE = re.compile(r"^(json|jsonb|variant|object|array|object\('json'\))$|^json\b")
_MAP_TYPE = re.compile(r"^map\b|^map[(<]")
_INTERVAL_UNIT = re.compile(r"^interval(nanosecond|microsecond|millisecond|second|minute|hour|"
                            r"day|week|month|quarter|year)$")
_TIME_TYPE = re.compile(r"^time(64)?(\(\d+\))?$")
# A sum of intervals of several units, handed over as a tuple of counts (one per unit).
_INTERVAL_TUPLE = re.compile(r"^tuple\((interval[a-z]+)(,interval[a-z]+)*\)$")
_FIXED_UNITS = ("microsecond", "millisecond", "second", "minute", "hour", "day", "week")
_MONTHS_PER_UNIT = {"month": 1, "quarter": 3, "year": 12}
_EXACT_FLOAT_INT = 2**53


@dataclass(frozen=True, slots=True)
class Nested:
    """A canonical JSON value, array, struct or map: ``kind`` is "object" (items: sorted
    (name, value) pairs), "array" (items: the elements in order) or "bool" (items: (flag,),
    kept apart from 1 and 0, which JSON tells from true and false)."""

    kind: str
    items: tuple[Any, ...]

    def __repr__(self) -> str:
        if self.kind == "object":
            return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self.items) + "}"
        if self.kind == "bool":
            return "true" if self.items[0] else "false"
        return "[" + ", ".join(repr(v) for v in self.items) + "]"


# Engine type names of 32-bit floats (PostgreSQL float4; DuckDB, MySQL and Spark FLOAT;
# ClickHouse Float32). Engines whose FLOAT is 64 bits name it otherwise in results (BigQuery
# FLOAT64, Snowflake DOUBLE); SQLite's REAL is 64 bits and not listed.
_FLOAT32_TYPES = frozenset({"float4", "float", "float32"})


def is_float32_type(type_name: str | None) -> bool:
    """Whether an engine type name is a 32-bit float (see _FLOAT32_TYPES)."""
    if not type_name:
        return False
    name = type_name.strip().lower().replace(" ", "")
    if name.startswith("nullable(") and name.endswith(")"):
        name = name[len("nullable("):-1]
    return name in _FLOAT32_TYPES


def type_family(type_name: str | None) -> str | None:
    """The family an engine type name puts a column in, if it needs one: "json", "map",
    "interval:<unit>" or "time"."""
    if not type_name:
        return None
    name = type_name.strip().lower().replace(" ", "")
    if name.startswith("nullable(") and name.endswith(")"):
        name = name[len("nullable("):-1]
    if _JSON_TYPE.search(name):
        return "json"
    if _MAP_TYPE.search(name):
        return "map"
    unit = _INTERVAL_UNIT.match(name)
    if unit:
        return f"interval:{unit.group(1)}"
    if _TIME_TYPE.match(name):
        return "time"
    if _INTERVAL_TUPLE.match(name):
        return "interval:" + "+".join(part[len("interval"):]
                                      for part in name[len("tuple("):-1].split(","))
    return None


class _Canonical:
    """Turns one value into its canonical form under ``policy``."""

    def __init__(self, policy: ComparePolicy) -> None:
        self.policy = policy

    def number(self, value: float) -> Any:
        if math.isnan(value) or math.isinf(value):
            return value
        if value == math.trunc(value) and abs(value) < _EXACT_FLOAT_INT:
            return int(value)
        if not self.policy.tolerant:
            return value
        written = written_number(value) if self.policy.short_numbers_exact else None
        if written is not None:
            return written  # written out in full (as top-level numbers, see values.py)
        # nested numbers: the bucket of the usual significant digits, off the integers as
        # top-level buckets are (see values.off_integer)
        digits = self.policy.significant_digits
        bucket = float(f"{value:.{digits}g}")
        return off_integer_one(bucket, digits) if self.policy.short_numbers_exact else bucket

    def nested(self, value: Any) -> Any:
        """A value inside a JSON document, array, struct or map."""
        if value is None or isinstance(value, str | bytes):
            return value
        if isinstance(value, bool | np.bool_):
            return Nested("bool", (bool(value),))
        if isinstance(value, int | np.integer):
            return int(value)
        if isinstance(value, float | np.floating | Decimal):
            return self.number(float(value))
        if isinstance(value, dict):
            return self.object(value.items())
        as_dict = getattr(value, "asDict", None)  # a Spark Row: a tuple that knows its fields
        if callable(as_dict) and isinstance(value, tuple):
            return self.object(as_dict().items())
        if isinstance(value, list | tuple | np.ndarray):
            return self.array(list(value))
        return self.scalar(value)

    def object(self, items: Any) -> Nested:
        pairs = [(str(k), self.nested(v)) for k, v in items]
        return Nested("object", tuple(sorted(pairs, key=lambda kv: kv[0])))

    def array(self, elements: list[Any]) -> Nested:
        items = [self.nested(e) for e in elements]
        if self.policy.array_order == "unordered":
            items.sort(key=_order_key)
        return Nested("array", tuple(items))

    def scalar(self, value: Any) -> Any:
        if isinstance(value, datetime):
            return self.timestamp(value)
        relative = _relative_delta(value)
        if relative is not None:
            return relative
        return value

    def timestamp(self, value: datetime) -> datetime:
        if value.tzinfo is None or self.policy.naive_timestamps == "strict":
            return value
        return value.astimezone(UTC).replace(tzinfo=None)

    def json_text(self, value: Any) -> Any:
        """A value of a JSON column: text is parsed (text that is not JSON stays as it is)."""
        if isinstance(value, str):
            try:
                parsed = json.loads(value, parse_float=Decimal, parse_int=int)
            except ValueError:
                return value
            return self.nested(parsed)
        if isinstance(value, bytes | bytearray):
            return self.json_text(bytes(value).decode("utf-8", errors="replace"))
        return self.nested(value)


def _order_key(value: Any) -> tuple[str, str]:
    """A total order over canonical values of any type, for unordered arrays."""
    return type(value).__name__, repr(value)


def _relative_delta(value: Any) -> Any:
    """A relativedelta (BigQuery's intervals) as a duration, or (months, duration) when it
    counts months or years. Found by its fields, so dateutil need not be imported."""
    fields = ("years", "months", "days", "hours", "minutes", "seconds", "microseconds")
    if type(value).__name__ != "relativedelta" or not all(hasattr(value, f) for f in fields):
        return None
    duration = timedelta(days=value.days, hours=value.hours, minutes=value.minutes,
                         seconds=value.seconds, microseconds=value.microseconds)
    months = value.years * 12 + value.months
    return duration if months == 0 else (months, duration)


def _needs_values(kinds: frozenset[type]) -> bool:
    return any(issubclass(k, dict | list | tuple | np.ndarray) or k.__name__ == "relativedelta"
               for k in kinds)


@dataclass(frozen=True, slots=True)
class Zones:
    """Whether a column held timestamps with a zone, without one, or both."""

    aware: bool = False
    naive: bool = False


NO_ZONES = Zones()


def zones_of(values: Sequence[Any], kinds: frozenset[type]) -> Zones:
    if datetime not in kinds:
        return NO_ZONES
    zoned = {v.tzinfo is not None for v in values if type(v) is datetime}
    return Zones(aware=True in zoned, naive=False in zoned)


def canonical_column(values: Sequence[Any], kinds: frozenset[type], type_name: str | None,
                     policy: ComparePolicy, zones: Zones) -> Sequence[Any] | None:
    """``values`` in canonical form; None when the column needs nothing (the common case,
    decided from ``kinds``, ``type_name`` and ``zones`` alone)."""
    family = type_family(type_name)
    if family is None and not zones.aware and not _needs_values(kinds):
        return None
    canon = _Canonical(policy)
    if family == "json":
        return [None if v is None else canon.json_text(v) for v in values]
    if family == "map":
        return [None if v is None else _map(v, canon) for v in values]
    if family is not None and family.startswith("interval:"):
        unit = family.split(":", 1)[1]
        return [None if v is None else _interval(v, unit) for v in values]
    if family == "time":
        return [_time_of_day(v) for v in values]
    if not _needs_values(kinds):  # only the zones to settle
        if policy.naive_timestamps == "strict":
            return None
        return [canon.timestamp(v) if type(v) is datetime else v for v in values]
    return [None if v is None else canon.timestamp(v) if isinstance(v, datetime)
            else canon.nested(v) for v in values]


def json_column(values: Sequence[Any], policy: ComparePolicy) -> list[Any]:
    """A column read as JSON because the column it is compared with is JSON."""
    canon = _Canonical(policy)
    return [None if v is None else canon.json_text(v) if isinstance(v, str) else v
            for v in values]


def _map(value: Any, canon: _Canonical) -> Any:
    """A map as an object: some drivers hand it back as a list of (key, value) pairs."""
    if isinstance(value, list | tuple) and all(isinstance(p, tuple | list) and len(p) == 2
                                                for p in value):
        return canon.object(value)
    if isinstance(value, str):
        return canon.json_text(value)
    return canon.nested(value)


def _interval(value: Any, unit: str) -> Any:
    """A count of one unit (the type names it) as a duration, or months for calendar units; a
    tuple of counts of several units (``day+hour``) as their sum."""
    if "+" in unit:
        units = unit.split("+")
        if not isinstance(value, tuple | list) or len(value) != len(units):
            return value
        parts = [_interval(count, one) for count, one in zip(value, units, strict=True)]
        months = sum(p[0] for p in parts if isinstance(p, tuple))
        duration = sum((p if isinstance(p, timedelta) else p[1] for p in parts), timedelta(0))
        return duration if months == 0 else (months, duration)
    if not isinstance(value, int | np.integer):
        return value
    count = int(value)
    if unit == "nanosecond":  # below a timedelta's resolution: microseconds, rounded
        return timedelta(microseconds=count / 1000)
    if unit in _FIXED_UNITS:
        return timedelta(**{f"{unit}s": count})
    return (count * _MONTHS_PER_UNIT[unit], timedelta(0))


def _time_of_day(value: Any) -> Any:
    if isinstance(value, timedelta) and timedelta(0) <= value < timedelta(days=1):
        return (datetime.min + value).time()
    return value


