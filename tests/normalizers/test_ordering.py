"""Order inference from the gold SQL and LIMIT widening (sqlglot-based, no engine needed)."""

from __future__ import annotations

import pytest

from polysql.normalizers import ordering
from polysql.normalizers.ordering import (
    WIDEN_EXTRA_ROWS,
    infer_order,
    keyed_order_sql,
    limits_rows,
    null_order_variants,
    widen_limit,
    widens,
)


@pytest.mark.parametrize(("sql", "dialect"), [
    ("SELECT a, b FROM t", "sqlite"),
    ("SELECT a, ROW_NUMBER() OVER (ORDER BY b) FROM t", "sqlite"),
    ("SELECT a FROM (SELECT a FROM t ORDER BY a)", "sqlite"),
    ("SELECT a FROM t WHERE a IN (SELECT a FROM s ORDER BY a LIMIT 3)", "sqlite"),
    ("WITH c AS (SELECT a FROM t ORDER BY a) SELECT a FROM c", "sqlite"),
    ("SELECT GROUP_CONCAT(a ORDER BY b) FROM t", "sqlite"),
    ("SELECT STRING_AGG(a, ',' ORDER BY b) FROM t", "postgres"),
    ("SELECT a FROM t UNION SELECT a FROM s", "sqlite"),
])
def test_inner_order_by_does_not_make_the_result_ordered(sql: str, dialect: str) -> None:
    assert infer_order(sql, dialect, ["a", "b"]).ordered is False


@pytest.mark.parametrize(("sql", "columns", "keys"), [
    ("SELECT a, b FROM t ORDER BY b", ["a", "b"], (1,)),
    ("SELECT a, b FROM t ORDER BY 2 DESC, 1", ["a", "b"], (1, 0)),
    ("SELECT a AS x, b FROM t ORDER BY x", ["x", "b"], (0,)),
    ("SELECT a, COUNT(*) FROM t GROUP BY a ORDER BY COUNT(*) DESC", ["a", "COUNT(*)"], (1,)),
    ("SELECT T1.a FROM t AS T1 ORDER BY t1.A", ["a"], (0,)),
    ("SELECT * FROM t ORDER BY b", ["a", "b"], (1,)),
    ("SELECT a FROM t UNION SELECT a FROM s ORDER BY a", ["a"], (0,)),
    ("WITH c AS (SELECT a FROM t) SELECT a FROM c ORDER BY a", ["a"], (0,)),
    ("(SELECT a FROM t) ORDER BY a LIMIT 3", ["a"], (0,)),
])
def test_outer_order_by_keys_resolve_to_output_columns(sql: str, columns: list[str],
                                                       keys: tuple[int, ...]) -> None:
    info = infer_order(sql, "sqlite", columns)
    assert info.ordered is True
    assert info.keys == keys


def test_non_projected_order_key_is_reported_unresolved() -> None:
    info = infer_order("SELECT a FROM t ORDER BY b, a", "sqlite", ["a"])
    assert info.ordered is True
    assert info.keys is None
    assert info.unresolved == ("b",)


def test_limit_and_offset_are_read() -> None:
    info = infer_order("SELECT a FROM t ORDER BY a LIMIT 2, 5", "sqlite", ["a"])
    assert (info.limit, info.offset) == (5, 2)


def test_unparsable_sql_is_flagged_not_raised() -> None:
    info = infer_order("SELEC a FROM t ORDER BY", "sqlite", ["a"])
    assert info.parsed is False
    assert info.ordered is False


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM orders",
    "SELECT order_id, topic FROM orders_2024 WHERE \"Offsets\" > 0",
    "SELEC a FROM",  # unparsable too: with no ORDER BY it is a bag either way
])
def test_sql_without_order_words_is_unordered_without_a_parse(
        sql: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the fast path: no ORDER, LIMIT, OFFSET, FETCH or TOP word, no clause of theirs --
    and no sqlglot parse to find that out."""
    ordering._parse_outermost.cache_clear()

    def no_parse(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr(ordering.sqlglot, "parse", no_parse)
    info = infer_order(sql, "sqlite", ["a"])
    assert (info.ordered, info.limit, info.offset) == (False, None, None)
    assert keyed_order_sql(sql, "sqlite") is None and widen_limit(sql, "sqlite") is None
    assert not widens(sql, "sqlite") and null_order_variants(sql, "sqlite") == ()
    assert limits_rows(sql, "sqlite") is False


@pytest.mark.parametrize(("sql", "dialect"), [
    ("SELECT 1order BY 1 DESC", "duckdb"),  # DuckDB reads a keyword straight after a number
    ("SELECT a FROM t\norder\nby a", "sqlite"),
    ("SELECT 'x'ORDER BY 1", "sqlite"),
])
def test_order_by_in_any_spelling_is_still_read(sql: str, dialect: str) -> None:
    assert infer_order(sql, dialect, ["a"]).ordered is True


@pytest.mark.parametrize("sql", ["SELECT a FROM t LIMIT 3", "SELECT TOP 3 a FROM t",
                                 "SELECT a FROM t OFFSET 2 ROWS FETCH FIRST 3 ROWS ONLY"])
def test_a_limit_in_any_spelling_is_still_read(sql: str) -> None:
    assert limits_rows(sql, "tsql") is True


def test_widen_limit_raises_only_the_outermost_limit() -> None:
    sql = "SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 7) ORDER BY a DESC LIMIT 3 OFFSET 1"
    widened = widen_limit(sql, "sqlite")
    assert widened is not None
    assert f"LIMIT {3 + WIDEN_EXTRA_ROWS} OFFSET 1" in widened
    assert "LIMIT 7" in widened


def test_widen_limit_handles_fetch_first() -> None:
    widened = widen_limit("SELECT a FROM t ORDER BY a FETCH FIRST 2 ROWS ONLY", "postgres")
    assert widened is not None and f"{2 + WIDEN_EXTRA_ROWS}" in widened


@pytest.mark.parametrize("sql", [
    "SELECT a FROM t LIMIT 3",  # no ORDER BY: LIMIT picks arbitrary rows anyway
    "SELECT a FROM t ORDER BY a",  # no LIMIT: nothing to widen
    "SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 3)",  # inner LIMIT only
    "SELEC nonsense",
])
def test_widen_limit_returns_none_without_outer_order_and_limit(sql: str) -> None:
    assert widen_limit(sql, "sqlite") is None
