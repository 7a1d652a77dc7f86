"""DuckDB hands back Arrow where its Python values are exactly the driver's: a long result of
ARROW_TYPES (and DECIMAL) gives the same values as fetchall() -- its first rows, fetched as Python
rows, included -- short results and other types are fetched as Python rows, the row cap and
truncation flag hold, and such results survive the execution cache."""

from __future__ import annotations

import math
import pickle
import subprocess
import sys
from typing import Any

import duckdb
import pytest

import polysql
from polysql.backends.duckdb import execute
from polysql.backends.duckdb.execute import ARROW_AFTER_ROWS, ARROW_TYPES
from polysql.core.columnar import ArrowRows

# One column per type, with its awkward values (limits, NULL, NaN, -0.0, NUL in text...).
VALUES: dict[str, str] = {
    "BOOLEAN": "[true, false, NULL]",
    "TINYINT": "[-128, 127, NULL]",
    "SMALLINT": "[-32768, 32767]",
    "INTEGER": "[-2147483648, 2147483647, NULL]",
    "BIGINT": "[-9223372036854775808, 9223372036854775807, NULL]",
    "UTINYINT": "[0, 255]",
    "USMALLINT": "[0, 65535]",
    "UINTEGER": "[0, 4294967295]",
    "UBIGINT": "[0, 18446744073709551615, NULL]",
    "FLOAT": "[0.1, 'nan', 'inf', '-0.0', 3.4e38, NULL]",
    "DOUBLE": "[0.1, 'nan', '-inf', '-0.0', 1e308, 5e-324, NULL]",
    "VARCHAR": "['a', 'é 🙂', '', 'x' || chr(0) || 'y', '  trailing  ', NULL]",
    "BLOB": "['\\xAA\\x00'::BLOB, ''::BLOB, NULL]",
    "DECIMAL(4,1)": "[-999.9, 0.0, NULL]",
    "DECIMAL(18,3)": "[1.5, -0.001, 999999999999999.999]",
    "DECIMAL(38,10)": "[1234567890123456789012345678.0123456789, -0.0000000001]",
}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b and repr(a) == repr(b)


@pytest.fixture
def engine() -> Any:
    backend = polysql.connect("duckdb:///:memory:")
    yield backend
    backend.close()


def test_every_arrow_type_is_listed_here() -> None:
    assert set(ARROW_TYPES) <= set(VALUES)


@pytest.mark.parametrize("head", [1, 2])
@pytest.mark.parametrize("kind", sorted(VALUES))
def test_arrow_values_are_exactly_the_drivers(engine: Any, kind: str, head: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Here the first ``head`` rows come as Python rows and go back into Arrow; the rest come
    as Arrow: every value must be the driver's."""
    monkeypatch.setattr(execute, "ARROW_AFTER_ROWS", head)
    sql = f"SELECT v, v AS w FROM (SELECT unnest(CAST({VALUES[kind]} AS {kind}[])) AS v)"
    expected = duckdb.connect().execute(sql).fetchall()
    result = engine.execute(sql)
    assert result.ok, result.error
    assert isinstance(result.rows, ArrowRows), kind
    assert result.types == [kind, kind]
    assert len(result.rows) == len(expected)
    for got, want in zip(result.rows, expected, strict=True):
        assert all(_same(g, w) for g, w in zip(got, want, strict=True)), (kind, got, want)


@pytest.mark.parametrize("sql", [
    "SELECT 170141183460469231731687303715884105727::HUGEINT",  # Arrow: a Decimal
    "SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID",  # Arrow: text
    "SELECT INTERVAL 1 MONTH",  # Arrow: MonthDayNano
    "SELECT 'infinity'::DATE::VARCHAR, DATE '2024-02-29'",  # DATE among them
    "SELECT 1 AS n, [1, 2] AS l",
])
def test_other_types_come_back_as_the_drivers_rows(engine: Any, sql: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execute, "ARROW_AFTER_ROWS", 0)
    result = engine.execute(sql)
    assert result.ok, result.error
    assert isinstance(result.rows, list)
    assert result.rows == duckdb.connect().execute(sql).fetchall()


def test_a_short_result_is_the_drivers_list(engine: Any) -> None:
    """Most results end within the first ARROW_AFTER_ROWS rows: they cost what they always did."""
    sql = f"SELECT range AS i FROM range({ARROW_AFTER_ROWS - 1})"
    short = engine.execute(sql)
    assert isinstance(short.rows, list) and short.rows == duckdb.connect().execute(sql).fetchall()
    assert isinstance(engine.execute(f"SELECT range FROM range({ARROW_AFTER_ROWS})").rows,
                      ArrowRows)


def test_the_row_cap_holds_and_says_so(engine: Any) -> None:
    capped = engine.execute("SELECT range AS i, range * 0.5 AS x FROM range(200000)",
                            max_rows=70_000)
    assert isinstance(capped.rows, ArrowRows)
    assert capped.truncated and len(capped.rows) == 70_000
    assert capped.rows[-1] == (69_999, 34_999.5)
    exact = engine.execute("SELECT range AS i FROM range(70000)", max_rows=70_000)
    assert not exact.truncated and len(exact.rows) == 70_000
    empty = engine.execute("SELECT 1 AS i WHERE false")
    assert empty.rows == [] and empty.columns == ["i"] and not empty.truncated


def test_arrow_results_round_trip_through_pickle(engine: Any) -> None:
    """The execution cache stores results pickled; an Arrow result keeps its columns."""
    result = engine.execute("SELECT range AS i, 'v' || range AS s FROM range(5000)")
    again = pickle.loads(pickle.dumps(result))
    assert isinstance(again.rows, ArrowRows) and again == result
    assert again.rows == [(i, f"v{i}") for i in range(5000)]


def test_a_comparison_across_engines_reads_arrow_and_rows_alike(engine: Any) -> None:
    sqlite = polysql.connect("sqlite://")
    try:
        rows = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 9000) "
        sql = rows + "SELECT 1.5 * x AS v, CASE WHEN x % 7 = 0 THEN NULL ELSE x END AS k FROM n"
        gold, pred = sqlite.execute(sql), engine.execute(sql + " ORDER BY v DESC")
        assert isinstance(pred.rows, ArrowRows) and isinstance(gold.rows, list)
        assert polysql.compare(gold, pred).match
        changed = engine.execute(sql.replace("1.5 * x AS", "1.5 * x + CAST(x = 4500 AS INTEGER) AS"))
        verdict = polysql.compare(gold, changed)
        assert not verdict.match and "(6751.0, 4500)" in verdict.reason
    finally:
        sqlite.close()


def test_a_long_result_and_its_comparison_import_no_pandas(tmp_path: Any) -> None:
    """pa.array and to_numpy() import pandas (a quarter of a second) on first use; the first rows
    go back into Arrow from buffers and the comparison reads Arrow numbers from buffers, so a
    process that judges long DuckDB results never imports it. Run in a fresh interpreter, where
    nothing has imported pandas yet."""
    code = f"""
import sys, polysql
columns = ", ".join(f"CAST(v AS {{kind}}) AS c{{i}}" for i, kind in enumerate([
    "BOOLEAN", "TINYINT", "INTEGER", "BIGINT", "UBIGINT", "FLOAT", "DOUBLE", "VARCHAR",
    "DECIMAL(18,3)"])) + ", CAST(CAST(v AS VARCHAR) AS BLOB) AS b"
sql = ("SELECT " + columns + " FROM (SELECT CASE WHEN range % 9 = 0 THEN NULL "
       "ELSE range % 100 END AS v FROM range({3 * ARROW_AFTER_ROWS}))")
with polysql.connect("duckdb:///:memory:") as engine:
    gold, pred = engine.execute(sql), engine.execute(sql + " ORDER BY c7 DESC")
    assert gold.ok and pred.ok, gold.error or pred.error
    verdict = polysql.compare(gold, pred)
print(type(gold.rows).__name__, verdict.match, "pandas" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ArrowRows", "True", "False"]
