"""polysql.analysis.rewrite.noop: rewrites that only re-spell the input, and ones that do not.

Every case in the DuckDB and SQLite dialects is also run on the real engine over a small database:
a pair called a no-op must return the same column names and rows, so the detector's "no-op" is
checked against execution rather than against itself.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import duckdb
import pytest

from polysql.analysis.rewrite.noop import is_noop
from polysql.core.errors import ConfigError

NOOPS = [
    # formatting, whitespace and keyword case
    ("postgres", "SELECT a, b FROM t WHERE x = 1", "select a,\n    b\nfrom t   where x=1"),
    (
        "duckdb",
        "SELECT a, b FROM t WHERE x = 1 ORDER BY a",
        "select a,b\nFROM t\tWHERE x = 1 order by a",
    ),
    # comments
    (
        "postgres",
        "SELECT a FROM t WHERE x = 1",
        "SELECT a /* the key */ FROM t -- why\nWHERE x = 1",
    ),
    ("sqlite", "SELECT a FROM t", "-- leading\nSELECT a /* inline */ FROM t"),
    # redundant parentheses and optional keywords
    (
        "duckdb",
        "SELECT t.a FROM t JOIN u ON t.k = u.k",
        "SELECT t.a FROM t INNER JOIN u ON (t.k = u.k)",
    ),
    (
        "sqlite",
        "SELECT t.a FROM t LEFT OUTER JOIN u ON t.k = u.k ORDER BY t.a ASC",
        "SELECT t.a FROM t LEFT JOIN u ON t.k = u.k ORDER BY t.a",
    ),
    ("postgres", "SELECT * FROM t WHERE NOT (a = 1)", "SELECT * FROM t WHERE NOT a = 1"),
    (
        "duckdb",
        "SELECT count(*) AS n FROM t WHERE a <> 1",
        "SELECT COUNT(*) AS n FROM t WHERE a != 1",
    ),
    # table alias renames, consistent across the query
    (
        "duckdb",
        "SELECT o.a, p.b FROM t AS o JOIN u p ON p.k = o.k",
        "SELECT x.a, y.b FROM t x JOIN u AS y ON y.k = x.k",
    ),
    ("sqlite", "SELECT t.a FROM t", "SELECT q.a FROM t AS q"),
    (
        "duckdb",
        "SELECT a.a FROM t AS a, u AS b WHERE a.k = b.k",
        "SELECT b.a FROM t AS b, u AS a WHERE b.k = a.k",
    ),
    # derived-table and CTE renames
    ("sqlite", "SELECT x.a FROM (SELECT a FROM t) AS x", "SELECT y.a FROM (SELECT a FROM t) AS y"),
    (
        "duckdb",
        "WITH c AS (SELECT a, k FROM t) SELECT c.a FROM c JOIN u ON u.k = c.k",
        "WITH d AS (SELECT a, k FROM t) SELECT e.a FROM d AS e JOIN u ON u.k = e.k",
    ),
    (
        "postgres",
        "WITH a AS (SELECT * FROM t), b AS (SELECT * FROM a) SELECT * FROM b",
        "WITH first AS (SELECT * FROM t), second AS (SELECT * FROM first) SELECT * FROM second",
    ),
    # a correlated subquery with its aliases renamed
    (
        "duckdb",
        "SELECT o.a FROM t AS o WHERE o.b > (SELECT avg(i.b) FROM t AS i WHERE i.k = o.k)",
        "SELECT outer_t.a FROM t outer_t WHERE outer_t.b > "
        "(SELECT avg(inner_t.b) FROM t inner_t WHERE inner_t.k = outer_t.k)",
    ),
    # quoting that does not change the name
    ("postgres", 'SELECT "a" FROM "t" AS "x"', "SELECT a FROM t AS x"),
    ("postgres", 'SELECT "Foo".a FROM t AS "Foo"', "SELECT foo.a FROM t AS foo"),
    ("mysql", "SELECT `a`, `t`.`b` FROM `t`", "SELECT a, t.b FROM t"),
    ("duckdb", 'SELECT "a" FROM "t"', "SELECT a FROM t"),
    ("sqlite", 'SELECT "a", [b], `k` FROM "t"', "SELECT a, b, k FROM t"),
    # relation names resolve case-insensitively in DuckDB and SQLite
    ("duckdb", "SELECT T.a FROM t AS T", "SELECT t.a FROM t AS t"),
    # x AS x names the output column x either way
    ("postgres", "SELECT a AS a FROM t", "SELECT a FROM t"),
    ("duckdb", "SELECT t.a AS a FROM t", "SELECT t.a FROM t"),
    # dialect syntax
    (
        "spark",
        "SELECT id, tag FROM posts LATERAL VIEW explode(tags) t AS tag",
        "select id, tag from posts lateral view explode(tags) e as tag",
    ),
    ("postgres", "SELECT CAST(a AS INT) FROM t", "SELECT a::int FROM t"),
    ("postgres", "SELECT a FROM t", "SELECT a FROM t;"),
    # identical text is a no-op even where a name cannot be resolved (a struct field here)
    ("duckdb", "SELECT s.f FROM t", "SELECT s.f FROM t"),
]

CHANGES = [
    # a projected column alias names an output column
    ("postgres", "SELECT a AS x FROM t", "SELECT a AS y FROM t"),
    ("duckdb", "SELECT a AS Foo FROM t", "SELECT a AS foo FROM t"),
    ("duckdb", "SELECT a FROM t", "SELECT a AS b FROM t"),
    ("duckdb", "SELECT A FROM t", "SELECT a FROM t"),
    # predicates, DISTINCT, set operations, limits, literals
    ("duckdb", "SELECT a FROM t WHERE x = 1", "SELECT a FROM t WHERE x = 2"),
    ("duckdb", "SELECT a FROM t WHERE x = 1", "SELECT DISTINCT a FROM t WHERE x = 1"),
    (
        "duckdb",
        "SELECT a FROM t UNION SELECT a FROM u",
        "SELECT a FROM t UNION ALL SELECT a FROM u",
    ),
    ("postgres", "SELECT a FROM t LIMIT 5", "SELECT a FROM t LIMIT 6"),
    ("postgres", "SELECT 'abc' FROM t", "SELECT 'ABC' FROM t"),
    # parentheses that regroup
    (
        "duckdb",
        "SELECT a FROM t WHERE (x = 1 OR b = 2) AND k = 3",
        "SELECT a FROM t WHERE x = 1 OR b = 2 AND k = 3",
    ),
    # reorderings sqlglot does not canonicalize
    ("duckdb", "SELECT * FROM t JOIN u ON t.k = u.k", "SELECT * FROM u JOIN t ON t.k = u.k"),
    ("duckdb", "SELECT a FROM t WHERE x = 1 AND b = 2", "SELECT a FROM t WHERE b = 2 AND x = 1"),
    ("duckdb", "SELECT * FROM t LEFT JOIN u ON t.k = u.k", "SELECT * FROM t JOIN u ON t.k = u.k"),
    # aliases swapped without swapping the references
    ("duckdb", "SELECT a.a FROM t AS a, u AS b", "SELECT a.a FROM t AS b, u AS a"),
    # quoting that changes the name, or turns a column into a function call
    ("postgres", 'SELECT "A" FROM t', "SELECT A FROM t"),
    ("postgres", 'SELECT "user" FROM t', "SELECT user FROM t"),
    # a relation alias that a bare name may refer to (PostgreSQL whole-row reference)
    ("postgres", "SELECT s FROM (SELECT 1 AS a) s", "SELECT s FROM (SELECT 1 AS a) r"),
    ("postgres", "SELECT a FROM t", "SELECT a FROM t AS a"),
    # a CTE that shadows the table it reads: the inner name is the table, not the CTE
    (
        "postgres",
        "WITH t AS (SELECT * FROM t) SELECT * FROM t",
        "WITH u AS (SELECT * FROM u) SELECT * FROM u",
    ),
    # a qualifier moved to a relation it cannot see
    (
        "postgres",
        "SELECT * FROM (SELECT x.a FROM t AS x) s, x WHERE x.b = 1",
        "SELECT * FROM (SELECT y.a FROM t AS y) s, x WHERE y.b = 1",
    ),
    # extra statement
    ("postgres", "SELECT a FROM t", "SELECT a FROM t; SELECT 1"),
    # conservative: a name reused in two scopes and renamed in one only is not resolved per scope
    (
        "postgres",
        "SELECT a FROM t WHERE k IN (SELECT t.k FROM t WHERE t.b > 0)",
        "SELECT a FROM t WHERE k IN (SELECT s.k FROM t AS s WHERE s.b > 0)",
    ),
]


@pytest.mark.parametrize(("dialect", "original", "rewrite"), NOOPS)
def test_noop(dialect: str, original: str, rewrite: str) -> None:
    assert is_noop(original, rewrite, dialect)
    assert is_noop(rewrite, original, dialect)


@pytest.mark.parametrize(("dialect", "original", "rewrite"), CHANGES)
def test_change(dialect: str, original: str, rewrite: str) -> None:
    assert not is_noop(original, rewrite, dialect)
    assert not is_noop(rewrite, original, dialect)


@pytest.mark.parametrize(
    ("original", "rewrite"),
    [
        ("SELECT a FROM", "SELECT a FROM"),
        ("SELECT 1", "SELEC 1"),
        ("SELEC 1", "SELECT 1"),
        ("SELECT 'abc", "SELECT 'abc"),
        ("", ""),
        ("SHOW TABLES", "SHOW TABLES"),
    ],
)
def test_unparseable_is_not_a_noop(original: str, rewrite: str) -> None:
    assert is_noop(original, rewrite, "postgres") is False


def test_unknown_dialect_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no_such_dialect"):
        is_noop("SELECT 1", "SELECT 1", "no_such_dialect")


# -- checked against execution -------------------------------------------------------------------

SETUP = [
    "CREATE TABLE t (a INTEGER, b INTEGER, k INTEGER, x INTEGER)",
    "CREATE TABLE u (a INTEGER, b INTEGER, k INTEGER)",
    "INSERT INTO t VALUES (1, 10, 1, 1), (2, 20, 1, 2), (3, 30, 2, 1), (4, 40, 3, 1), (NULL, 5, 2, 2), "
    "(1, 50, 3, 1)",
    "INSERT INTO u VALUES (7, 70, 1), (8, 80, 2), (9, 90, 4)",
]


@pytest.fixture(scope="module")
def engines() -> Iterator[dict[str, object]]:
    duck = duckdb.connect()
    lite = sqlite3.connect(":memory:")
    for statement in SETUP:
        duck.execute(statement)
        lite.execute(statement)
    yield {"duckdb": duck, "sqlite": lite}
    duck.close()
    lite.close()


def run(engines: dict[str, object], dialect: str, sql: str) -> tuple[list[str], list[tuple]]:
    cursor = engines[dialect].execute(sql)  # type: ignore[attr-defined]
    names = [d[0] for d in cursor.description]
    return names, sorted(cursor.fetchall(), key=repr)


def executable(cases: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    # the struct-field case names a column the test database does not have
    return [c for c in cases if c[0] in ("duckdb", "sqlite") and "s.f" not in c[1]]


@pytest.mark.parametrize(("dialect", "original", "rewrite"), executable(NOOPS))
def test_noops_return_the_same_columns_and_rows(
    engines: dict[str, object], dialect: str, original: str, rewrite: str
) -> None:
    assert run(engines, dialect, original) == run(engines, dialect, rewrite)


def test_changes_that_run_do_change_the_result(engines: dict[str, object]) -> None:
    # the detector's negatives here are real differences, not just caution
    for dialect, original, rewrite in [
        ("duckdb", "SELECT a AS Foo FROM t", "SELECT a AS foo FROM t"),
        ("duckdb", "SELECT a FROM t WHERE x = 1", "SELECT DISTINCT a FROM t WHERE x = 1"),
        (
            "duckdb",
            "SELECT a FROM t WHERE (x = 1 OR b = 20) AND k = 1",
            "SELECT a FROM t WHERE x = 1 OR b = 20 AND k = 1",
        ),
        ("duckdb", "SELECT a.a FROM t AS a, u AS b", "SELECT a.a FROM t AS b, u AS a"),
        (
            "sqlite",
            "SELECT * FROM t LEFT JOIN u ON t.k = u.k",
            "SELECT * FROM t JOIN u ON t.k = u.k",
        ),
    ]:
        assert not is_noop(original, rewrite, dialect)
        assert run(engines, dialect, original) != run(engines, dialect, rewrite)
