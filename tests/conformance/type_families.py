"""Type families for the cross-engine comparison matrix (tests/conformance/test_type_matrix.py).

Each :class:`Family` spells one logical value as a literal ``SELECT ... AS v`` on every engine
that can express it, plus one or more *near misses*: values a careless canonicalisation could
mistake for it (a JSON document with another value, an array in another order, a timestamp at
another instant, an interval an hour off). ``cannot`` names the engines that have no way to
express the value, with the reason; such engines take no part in that family's pairs.

Every query returns exactly one row and one column named ``v``, so the verdict rests on the one
value alone (alignment and row order play no part).
"""

from __future__ import annotations

from dataclasses import dataclass, field

ENGINE_NAMES: tuple[str, ...] = (
    "sqlite", "duckdb", "postgres", "mysql", "clickhouse", "spark", "snowflake", "bigquery",
)


@dataclass(frozen=True, slots=True)
class Family:
    """One logical value, spelled per engine, and the values that must not be taken for it.

    ``same[engine]`` is the SQL returning the value; ``near[name][engine]`` the SQL returning
    the near miss ``name``; ``cannot[engine]`` why the engine cannot express the value at all.
    """

    name: str
    description: str
    same: dict[str, str]
    near: dict[str, dict[str, str]]
    cannot: dict[str, str] = field(default_factory=dict)

    def engines(self) -> tuple[str, ...]:
        """The engines that express the value, in the suite's engine order."""
        return tuple(e for e in ENGINE_NAMES if e in self.same)


# 100,000 characters: 99,999 'x' and a final letter, so a near miss differs in the last one only
# (a value cut short anywhere, by a driver or by a comparison, shows).
_LONG = 99_999
# SQLite has no repeat(): hex(zeroblob(n)) is 2n zeros, turned into 'x'.
_SQLITE_XS = f"substr(replace(hex(zeroblob({(_LONG + 1) // 2})), '0', 'x'), 1, {_LONG})"

# 38 significant digits, integral: the comparison must keep it exact (two integers compare
# exactly), so a difference in the last digit is a different answer.
_D38 = "12345678901234567890123456789012345678"
_D38_NEAR = "12345678901234567890123456789012345677"

_NO_ARRAYS = "has no array type"
# A NaN must not be taken for NULL (a driver or canonicalisation may turn one into the other).
_NULL_FLOAT: dict[str, str] = {
    "sqlite": "SELECT CAST(NULL AS REAL) AS v",
    "duckdb": "SELECT CAST(NULL AS DOUBLE) AS v",
    "postgres": "SELECT CAST(NULL AS float8) AS v",
    "mysql": "SELECT CAST(NULL AS DOUBLE) AS v",
    "clickhouse": "SELECT CAST(NULL AS Nullable(Float64)) AS v",
    "spark": "SELECT CAST(NULL AS DOUBLE) AS v",
    "snowflake": "SELECT CAST(NULL AS FLOAT) AS v",
    "bigquery": "SELECT CAST(NULL AS FLOAT64) AS v",
}
_UUID = "123e4567-e89b-12d3-a456-426614174000"
_UUID_NEAR = "123e4567-e89b-12d3-a456-426614174001"


def _json_object(a: int) -> dict[str, str]:
    doc = f'{{"a": {a}, "b": [1, 2]}}'
    return {
        "sqlite": f"SELECT json('{doc}') AS v",
        "duckdb": f"SELECT '{doc}'::JSON AS v",
        "postgres": f"SELECT '{doc}'::jsonb AS v",
        "mysql": f"SELECT JSON_OBJECT('a', {a}, 'b', JSON_ARRAY(1, 2)) AS v",
        "clickhouse": f"SELECT '{doc}'::JSON AS v",
        "spark": f"SELECT to_json(named_struct('a', {a}, 'b', array(1, 2))) AS v",
        "snowflake": f"SELECT PARSE_JSON('{doc}') AS v",
        "bigquery": f"SELECT JSON '{doc}' AS v",
    }


def _json_array(items: str) -> dict[str, str]:
    doc = f"[{items}]"
    return {
        "sqlite": f"SELECT json('{doc}') AS v",
        "duckdb": f"SELECT '{doc}'::JSON AS v",
        "postgres": f"SELECT '{doc}'::jsonb AS v",
        "mysql": f"SELECT JSON_ARRAY({items}) AS v",
        "clickhouse": f"SELECT '{{\"v\": {doc}}}'::JSON.v AS v",
        "spark": f"SELECT to_json(array({items})) AS v",
        "snowflake": f"SELECT PARSE_JSON('{doc}') AS v",
        "bigquery": f"SELECT JSON '{doc}' AS v",
    }


def _int_array(items: str) -> dict[str, str]:
    return _array(items, items)


def _text_array(letters: str) -> dict[str, str]:
    return _array(", ".join(f"'{c}'" for c in letters), ", ".join(f'"{c}"' for c in letters))


def _array(items: str, json_items: str) -> dict[str, str]:
    """``items`` as SQL literals, ``json_items`` the same as JSON (for Snowflake)."""
    return {
        "duckdb": f"SELECT [{items}] AS v",
        "postgres": f"SELECT ARRAY[{items}] AS v",
        "clickhouse": f"SELECT [{items}] AS v",
        "spark": f"SELECT array({items}) AS v",
        # ARRAY_CONSTRUCT is the natural spelling, but the fakesnow emulator fails on it (HTTP
        # 500); PARSE_JSON(...)::ARRAY builds the same ARRAY value and runs there.
        "snowflake": f"SELECT PARSE_JSON('[{json_items}]')::ARRAY AS v",
        "bigquery": f"SELECT [{items}] AS v",
    }


def _struct(a: int, b: str) -> dict[str, str]:
    return {
        "duckdb": f"SELECT {{'a': {a}, 'b': '{b}'}} AS v",
        "clickhouse": f"SELECT CAST(({a}, '{b}') AS Tuple(a Int64, b String)) AS v",
        "spark": f"SELECT named_struct('a', {a}, 'b', '{b}') AS v",
        "snowflake": f"SELECT OBJECT_CONSTRUCT('a', {a}, 'b', '{b}') AS v",
        "bigquery": f"SELECT STRUCT({a} AS a, '{b}' AS b) AS v",
    }


def _map(k2: int) -> dict[str, str]:
    return {
        "duckdb": f"SELECT MAP {{'k1': 1, 'k2': {k2}}} AS v",
        "clickhouse": f"SELECT map('k1', 1, 'k2', {k2}) AS v",
        "spark": f"SELECT map('k1', 1, 'k2', {k2}) AS v",
        "snowflake": f"SELECT OBJECT_CONSTRUCT('k1', 1, 'k2', {k2})::MAP(VARCHAR, NUMBER) AS v",
    }


def _timestamptz(text: str, ch_zone: str | None = None) -> dict[str, str]:
    """``text`` is 'YYYY-MM-DD HH:MM:SS+HH:MM'; ClickHouse, which reads no offset in a literal,
    gets the wall clock in ``ch_zone`` (default: the fixed zone of the offset)."""
    wall, offset = text[:19], text[19:]
    if ch_zone is None:
        sign = "-" if offset.startswith("+") else "+"  # Etc/GMT zones count the other way round
        ch_zone = f"Etc/GMT{sign}{int(offset[1:3])}"
    return {
        "duckdb": f"SELECT TIMESTAMPTZ '{text}' AS v",
        "postgres": f"SELECT TIMESTAMPTZ '{text}' AS v",
        "clickhouse": f"SELECT toDateTime64('{wall}', 0, '{ch_zone}') AS v",
        "spark": f"SELECT TIMESTAMP '{text}' AS v",
        "snowflake": f"SELECT '{text}'::TIMESTAMP_TZ AS v",
        "bigquery": f"SELECT TIMESTAMP '{text}' AS v",
    }


def _interval(hours: int) -> dict[str, str]:
    """1 day and ``hours`` hours."""
    return {
        "duckdb": f"SELECT INTERVAL '1 day {hours} hours' AS v",
        "postgres": f"SELECT INTERVAL '1 day {hours} hours' AS v",
        "clickhouse": f"SELECT toIntervalHour({24 + hours}) AS v",
        "spark": f"SELECT INTERVAL '1 {hours:02d}' DAY TO HOUR AS v",
        "bigquery": f"SELECT INTERVAL '1 {hours}' DAY TO HOUR AS v",
    }


def _uuid(text: str) -> dict[str, str]:
    return {
        "sqlite": f"SELECT '{text}' AS v",
        "duckdb": f"SELECT '{text}'::UUID AS v",
        "postgres": f"SELECT '{text}'::uuid AS v",
        "mysql": f"SELECT CAST('{text}' AS UUID) AS v",
        "clickhouse": f"SELECT toUUID('{text}') AS v",
        "spark": f"SELECT '{text}' AS v",
        "snowflake": f"SELECT '{text}' AS v",
        "bigquery": f"SELECT '{text}' AS v",
    }


def _binary(hex_digits: str) -> dict[str, str]:
    pairs = "".join(f"\\x{hex_digits[i:i + 2]}" for i in range(0, len(hex_digits), 2))
    return {
        "sqlite": f"SELECT X'{hex_digits}' AS v",
        "duckdb": f"SELECT '{pairs}'::BLOB AS v",
        "postgres": f"SELECT '\\x{hex_digits}'::bytea AS v",
        "mysql": f"SELECT X'{hex_digits}' AS v",
        "clickhouse": f"SELECT unhex('{hex_digits}') AS v",
        "spark": f"SELECT X'{hex_digits}' AS v",
        "snowflake": f"SELECT TO_BINARY('{hex_digits}', 'HEX') AS v",
        "bigquery": f"SELECT FROM_HEX('{hex_digits}') AS v",
    }


def _date(text: str) -> dict[str, str]:
    return {
        "sqlite": f"SELECT date('{text}') AS v",
        "duckdb": f"SELECT DATE '{text}' AS v",
        "postgres": f"SELECT DATE '{text}' AS v",
        "mysql": f"SELECT DATE '{text}' AS v",
        # DATE '...' is a Date, which silently clamps to 1970-01-01 .. 2149-06-06; Date32 holds
        # 0001-01-01 .. 9999-12-31 in this release.
        "clickhouse": f"SELECT toDate32('{text}') AS v",
        "spark": f"SELECT DATE '{text}' AS v",
        "snowflake": f"SELECT DATE '{text}' AS v",
        "bigquery": f"SELECT DATE '{text}' AS v",
    }


def _time(text: str) -> dict[str, str]:
    return {
        "sqlite": f"SELECT strftime('%H:%M:%f', '{text}') AS v",
        "duckdb": f"SELECT TIME '{text}' AS v",
        "postgres": f"SELECT TIME '{text}' AS v",
        "mysql": f"SELECT CAST('{text}' AS TIME(3)) AS v",
        "clickhouse": f"SELECT toTime64('{text}', 3) AS v",
        "spark": f"SELECT TIME '{text}' AS v",
        "snowflake": f"SELECT TIME '{text}' AS v",
        "bigquery": f"SELECT TIME '{text}' AS v",
    }


def _float(word: str) -> dict[str, str]:
    """``word`` is 'nan', 'inf' or '-inf' (or a finite number)."""
    spark = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}.get(word, word)
    sqlite = {"inf": "9e999", "-inf": "-9e999"}.get(word, word)
    spellings = {
        "sqlite": f"SELECT {sqlite} AS v",
        "duckdb": f"SELECT '{word}'::DOUBLE AS v",
        "postgres": f"SELECT '{spark}'::float8 AS v",
        "clickhouse": f"SELECT toFloat64('{word}') AS v",
        "spark": f"SELECT double('{spark}') AS v",
        "snowflake": f"SELECT '{word}'::FLOAT AS v",
        "bigquery": f"SELECT CAST('{word}' AS FLOAT64) AS v",
    }
    if word == "nan":
        del spellings["sqlite"]  # SQLite has no NaN literal; 0.0/0.0 is NULL
    return spellings


def _decimal38(digits: str) -> dict[str, str]:
    return {
        "duckdb": f"SELECT {digits}::DECIMAL(38, 0) AS v",
        "postgres": f"SELECT {digits}::NUMERIC(38, 0) AS v",
        "mysql": f"SELECT CAST('{digits}' AS DECIMAL(38, 0)) AS v",
        "clickhouse": f"SELECT toDecimal128('{digits}', 0) AS v",
        "spark": f"SELECT CAST('{digits}' AS DECIMAL(38, 0)) AS v",
        "snowflake": f"SELECT {digits}::NUMBER(38, 0) AS v",
        "bigquery": f"SELECT BIGNUMERIC '{digits}' AS v",
    }


def _long_text(last: str) -> dict[str, str]:
    return {
        "sqlite": f"SELECT {_SQLITE_XS} || '{last}' AS v",
        "duckdb": f"SELECT repeat('x', {_LONG}) || '{last}' AS v",
        "postgres": f"SELECT repeat('x', {_LONG}) || '{last}' AS v",
        "mysql": f"SELECT CONCAT(REPEAT('x', {_LONG}), '{last}') AS v",
        "clickhouse": f"SELECT concat(repeat('x', {_LONG}), '{last}') AS v",
        "spark": f"SELECT repeat('x', {_LONG}) || '{last}' AS v",
        "snowflake": f"SELECT REPEAT('x', {_LONG}) || '{last}' AS v",
        "bigquery": f"SELECT REPEAT('x', {_LONG}) || '{last}' AS v",
    }


FAMILIES: tuple[Family, ...] = (
    Family(
        "json_object", 'JSON object {"a": 1, "b": [1, 2]}',
        same=_json_object(1),
        near={"other_value": _json_object(2)},
    ),
    Family(
        "json_array", "JSON array [1, 2, 3]",
        same=_json_array("1, 2, 3"),
        near={"other_order": _json_array("1, 3, 2")},
    ),
    Family(
        "int_array", "array of integers [1, 2, 3]",
        same=_int_array("1, 2, 3"),
        near={"other_order": _int_array("1, 3, 2"), "shorter": _int_array("1, 2")},
        cannot={"sqlite": _NO_ARRAYS, "mysql": _NO_ARRAYS},
    ),
    Family(
        "text_array", "array of text ['a', 'b', 'c']",
        same=_text_array("abc"),
        near={"other_order": _text_array("acb")},
        cannot={"sqlite": _NO_ARRAYS, "mysql": _NO_ARRAYS},
    ),
    Family(
        "struct", "struct with named fields a = 1, b = 'x'",
        same=_struct(1, "x"),
        near={"other_value": _struct(1, "y")},
        cannot={"sqlite": "has no struct type", "mysql": "has no struct type",
                "postgres": "ROW(1, 'x') is an anonymous record: fields have no names without "
                            "a CREATE TYPE, which a read-only evaluation cannot run"},
    ),
    Family(
        "map", "map {'k1': 1, 'k2': 2}",
        same=_map(2),
        near={"other_value": _map(3)},
        cannot={"sqlite": "has no map type", "mysql": "has no map type",
                "postgres": "has no map type (hstore is an extension, text values only)",
                "bigquery": "has no map type"},
    ),
    Family(
        "timestamptz", "timestamp with time zone 2024-01-02 03:04:05+02:00",
        same=_timestamptz("2024-01-02 03:04:05+02:00"),
        near={"one_second_off": _timestamptz("2024-01-02 03:04:06+02:00"),
              "same_wall_clock_other_zone": _timestamptz("2024-01-02 03:04:05+03:00")},
        cannot={"sqlite": "has no time-zone-aware type (timestamps are text)",
                "mysql": "has no time-zone-aware type: TIMESTAMP comes back as a naive value in "
                         "the session time zone"},
    ),
    Family(
        # The same kind of value, in UTC: ClickHouse hands a DateTime64 whose zone is the
        # session's (UTC) over as a naive datetime, any other zone as an aware one.
        "timestamptz_utc", "timestamp with time zone 2024-01-02 01:04:05+00:00",
        same=_timestamptz("2024-01-02 01:04:05+00:00", ch_zone="UTC"),
        near={"one_second_off": _timestamptz("2024-01-02 01:04:06+00:00", ch_zone="UTC")},
        cannot={"sqlite": "has no time-zone-aware type (timestamps are text)",
                "mysql": "has no time-zone-aware type: TIMESTAMP comes back as a naive value in "
                         "the session time zone"},
    ),
    Family(
        "interval", "interval of 1 day 2 hours",
        same=_interval(2),
        near={"one_hour_off": _interval(3)},
        cannot={"sqlite": "has no interval type", "mysql": "has no interval type",
                "snowflake": "has no interval data type (INTERVAL only in date arithmetic)"},
    ),
    Family(
        "uuid", f"UUID {_UUID}",
        same=_uuid(_UUID),
        near={"last_digit": _uuid(_UUID_NEAR)},
    ),
    Family(
        "binary", "bytes DE AD BE EF",
        same=_binary("DEADBEEF"),
        near={"last_byte": _binary("DEADBEEE")},
    ),
    Family(
        "date_min", "date 0001-01-01",
        same=_date("0001-01-01"),
        near={"next_day": _date("0001-01-02")},
    ),
    Family(
        "date_max", "date 9999-12-31",
        same=_date("9999-12-31"),
        near={"day_before": _date("9999-12-30")},
    ),
    Family(
        "time_fraction", "time of day 12:34:56.789",
        same=_time("12:34:56.789"),
        near={"one_ms_off": _time("12:34:56.788")},
    ),
    Family(
        "float_nan", "floating-point NaN",
        same=_float("nan"),
        near={"null": _NULL_FLOAT, "zero": _float("0")},
        cannot={"sqlite": "has no NaN (0.0/0.0 is NULL)", "mysql": "has no NaN"},
    ),
    Family(
        "float_inf", "floating-point +infinity",
        same=_float("inf"),
        near={"minus_inf": _float("-inf"), "max_finite": _float("1.7976931348623157e308")},
        cannot={"mysql": "has no infinity"},
    ),
    Family(
        "float_neg_inf", "floating-point -infinity",
        same=_float("-inf"),
        near={"plus_inf": _float("inf")},
        cannot={"mysql": "has no infinity"},
    ),
    Family(
        "decimal38", f"38-digit integral decimal {_D38}",
        same=_decimal38(_D38),
        near={"last_digit": _decimal38(_D38_NEAR)},
        cannot={"sqlite": "has no decimal type: a 38-digit literal becomes a float"},
    ),
    Family(
        "long_text", "text of 100,000 characters",
        same=_long_text("y"),
        near={"last_char": _long_text("z")},
    ),
)
