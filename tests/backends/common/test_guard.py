from __future__ import annotations

import pytest

from polysql.backends._common.guard import screen
from polysql.core.errors import LoadError
from polysql.core.naming import convert, convert_all

HOSTILE = [
    ("DROP TABLE t", "postgres"),
    ("DELETE FROM t", "mysql"),
    ("UPDATE t SET a = 1", "postgres"),
    ("INSERT INTO t VALUES (1)", "mysql"),
    ("CREATE TABLE x (a INT)", "postgres"),
    ("COPY t TO PROGRAM 'ls'", "postgres"),
    ("COPY t FROM PROGRAM 'id'", "postgres"),
    ("SELECT pg_read_file('/etc/passwd')", "postgres"),
    ("SELECT LOAD_FILE('/etc/passwd')", "mysql"),
    ("SELECT * INTO OUTFILE '/tmp/x' FROM t", "mysql"),
    ("SET GLOBAL max_connections = 1", "mysql"),
    ("WITH gone AS (DELETE FROM t RETURNING *) SELECT * FROM gone", "postgres"),
    ("SELECT 1; DROP TABLE t", "postgres"),
    ("SELECT set_config('role', 'postgres', false)", "postgres"),
    ("SELECT * FROM read_csv('/etc/passwd')", "duckdb"),
    ("SELECT a INTO new_table FROM t", "postgres"),
    ("SELECT GET_LOCK('polysql', 10)", "mysql"),  # would outlive the rolled-back transaction
    # a quoted or schema-qualified name is the same function to PostgreSQL
    ('SELECT "pg_cancel_backend"(pg_backend_pid())', "postgres"),
    ('SELECT "pg_catalog"."pg_terminate_backend"(1)', "postgres"),
    ('SELECT * FROM "read_csv"(\'/etc/passwd\')', "duckdb"),
    # text sqlglot cannot parse that PostgreSQL runs: the call is found in the text itself
    ("SELECT pg_cancel_backend(pg_backend_pid()), collation for ('a')", "postgres"),
    ("SELECT pg_cancel_backend(1) ORDER BY 1 USING <", "postgres"),
    # ... and a "--" inside a string does not hide the rest of the line from that search
    ("SELECT '--', \"pg_cancel_backend\" (1), collation for ('a')", "postgres"),
]
BENIGN = [
    ("SELECT a, COUNT(*) FROM t WHERE x GLOB 'a*' GROUP BY a ORDER BY 2 DESC LIMIT 3", "sqlite"),
    ('SELECT "order".x FROM "order"', "postgres"),
    ("SELECT copy FROM t", "postgres"),
    ("WITH c AS (SELECT 1 AS x) SELECT x FROM c UNION ALL SELECT 2", "duckdb"),
    ("SELECT pg_sleep(1)", "postgres"),  # cut off by the timeout, not the screen
    ("SELECT strftime('%Y', d), group_concat(x) FROM t", "sqlite"),
    ("VALUES (1), (2)", "postgres"),
    # the names as words or inside strings, in statements the parser reads, are no calls
    ("SELECT 'pg_cancel_backend(1)' AS note, \"glob\" FROM t", "postgres"),
]


@pytest.mark.parametrize(("sql", "dialect"), HOSTILE)
def test_hostile_statements_are_refused_with_a_reason(sql: str, dialect: str) -> None:
    reason = screen(sql, dialect)
    assert reason, sql


@pytest.mark.parametrize(("sql", "dialect"), BENIGN)
def test_ordinary_queries_pass(sql: str, dialect: str) -> None:
    assert screen(sql, dialect) is None


@pytest.mark.parametrize(("sql", "dialect", "named"), [
    ("DELETE FROM t", "mysql", "a DELETE statement"),
    ("INSERT INTO t VALUES (1)", "postgres", "an INSERT statement"),
    ("ALTER TABLE t ADD COLUMN b INT", "postgres", "an ALTER statement"),
    ("SET ROLE postgres", "postgres", "a SET statement"),
    ("LISTEN channel", "postgres", "a LISTEN statement"),  # sqlglot reads it as an alias
    ("/* why */ -- not this\n LISTEN channel", "postgres", "a LISTEN statement"),
])
def test_a_refused_statement_is_named_as_written(sql: str, dialect: str, named: str) -> None:
    assert screen(sql, dialect) == f"only queries may run; this is {named}"


def test_unparseable_dialect_syntax_is_left_to_the_engine() -> None:
    assert screen("SELECT a FROM t QUALIFY ROW_NUMBER() OVER () = 1 !!!", "postgres") is None


def test_name_modes() -> None:
    assert convert("FirstName", "snake") == "first_name"
    assert convert("Order Items", "snake") == "order_items"
    assert convert("FirstName", "lower") == "firstname"
    assert convert("FirstName", "exact") == "FirstName"
    # fold: what SQL may leave unquoted is lowered (reserved words too, as pgloader does); a
    # name that needs quotes anyway keeps its spelling, and only ASCII is plain
    assert [convert(n, "fold") for n in ("CDSCode", "Order", "_x$1", "Free Meal (K-12)", "2nd",
                                         "Ärger")] == ["cdscode", "order", "_x$1",
                                                       "Free Meal (K-12)", "2nd", "Ärger"]
    with pytest.raises(LoadError, match="maps both"):
        convert_all(["OrderId", "order_id"], "snake", where="table orders")


@pytest.mark.parametrize(("sql", "dialect", "reason"), [
    ("SELECT a INTO new_table FROM t", "postgres", "query contains an INTO"),
    ("SELECT a INTO @x FROM t LIMIT 1", "mysql", "query contains an INTO"),
    ("WITH gone AS (DELETE FROM t RETURNING *) SELECT * FROM gone", "postgres",
     "query contains a DELETE"),
])
def test_a_write_inside_a_query_is_named_with_its_article(sql: str, dialect: str,
                                                          reason: str) -> None:
    assert screen(sql, dialect) == f"{reason} that would change data or settings"


# Deeper than sqlglot's recursive parser can follow (it gives up near 500 parentheses).
DEEP = "(" * 3000 + "1" + ")" * 3000


@pytest.mark.parametrize("dialect", ["postgres", "mysql", "duckdb", "clickhouse", "snowflake",
                                     "bigquery", "spark"])
def test_nesting_too_deep_to_parse_is_left_to_the_engine(dialect: str) -> None:
    """A query nested past sqlglot's reach is judged by the engine (which runs some of them:
    PostgreSQL and MySQL answer 600 nested parentheses), as text the parser does not know is;
    it never crashes the screen."""
    assert screen(f"SELECT {DEEP}", dialect) is None


def test_a_statement_nested_too_deep_to_parse_is_still_refused_by_its_first_word() -> None:
    assert screen(f"DELETE FROM t WHERE a = {DEEP}", "mysql") == \
        "only queries may run; this is a DELETE statement"


def test_the_warehouse_screens_leave_nesting_too_deep_to_parse_to_the_engine() -> None:
    from polysql.backends.bigquery.screen import screen_bigquery
    from polysql.backends.snowflake.screen import screen_statement

    assert screen_statement(f"SELECT {DEEP}") is None
    assert screen_bigquery(f"SELECT {DEEP}", project="p", dataset="d") is None
