"""The dialect pitfalls told to models: present for every dialect, specific, and true.

Each engine declares its own (``EngineInfo.pitfalls`` in backends/<engine>/__init__.py). Claims
about SQLite and DuckDB are checked on the real engines: each case names the phrase the pitfall
text makes and a statement whose result shows it (a pitfall that lies to the model would make
the prompt worse than none).
"""

from __future__ import annotations

import dataclasses
import sqlite3
from typing import Any

import duckdb
import pytest

from polysql.backends import catalog
from polysql.backends.base import EngineInfo
from polysql.core.errors import ConfigError
from polysql.llm.prompting import load_pitfalls

DIALECTS = ("sqlite", "duckdb", "postgres", "mysql")
CORE_TOPICS = ("integer_division", "string_concat", "identifier_quoting", "null_ordering", "like_case",
               "dates", "string_aggregation", "limit_offset", "booleans")


def topic_text(dialect: str, topic: str) -> str:
    found = [p.text for p in load_pitfalls().for_dialect(dialect) if p.topic == topic]
    assert len(found) == 1, f"{dialect} should have exactly one {topic} pitfall"
    return found[0]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialect_covers_the_core_hazards(dialect: str) -> None:
    pitfalls = load_pitfalls().for_dialect(dialect)
    topics = [p.topic for p in pitfalls]
    assert set(CORE_TOPICS) <= set(topics)
    assert len(topics) == len(set(topics))
    texts = [p.text for p in pitfalls]
    assert len(texts) == len(set(texts))


# What sets each dialect apart must be named in its own pitfall (and not be a copy of another's).
@pytest.mark.parametrize(("dialect", "topic", "must_mention"), [
    ("sqlite", "string_aggregation", "group_concat("),
    ("mysql", "string_aggregation", "GROUP_CONCAT("),
    ("postgres", "string_aggregation", "string_agg("),
    ("duckdb", "string_aggregation", "string_agg("),
    ("mysql", "identifier_quoting", "backticks"),
    ("postgres", "identifier_quoting", "lower case"),
    ("mysql", "string_concat", "CONCAT("),
    ("mysql", "integer_division", "DIV"),
    ("duckdb", "integer_division", "//"),
    ("postgres", "like_case", "ILIKE"),
    ("duckdb", "like_case", "ILIKE"),
    ("sqlite", "dates", "strftime('%Y', col)"),
    ("duckdb", "dates", "strftime(col, '%Y')"),
    ("mysql", "dates", "DATE_FORMAT("),
    ("postgres", "dates", "EXTRACT(YEAR FROM d)"),
    ("postgres", "null_ordering", "NULLS LAST"),
    ("postgres", "limit_offset", "FETCH FIRST"),
])
def test_pitfalls_name_the_dialects_own_syntax(dialect: str, topic: str, must_mention: str) -> None:
    assert must_mention in topic_text(dialect, topic)


def test_different_dialects_get_different_advice() -> None:
    for topic in CORE_TOPICS:
        texts = {topic_text(d, topic) for d in DIALECTS}
        assert len(texts) == len(DIALECTS), f"{topic}: dialects share a text"


def first_row(conn: Any, sql: str) -> tuple[Any, ...]:
    return tuple(conn.execute(sql).fetchone())


VALUES = "(VALUES (1), (NULL), (2))"

SQLITE_CLAIMS = [
    ("integer_division", "7 / 2 is 3", "SELECT 7 / 2", (3,)),
    ("integer_division", "CAST(a AS REAL) / b", "SELECT CAST(7 AS REAL) / 2", (3.5,)),
    ("string_concat", "NULL if either side is NULL", "SELECT 'a' || NULL", (None,)),
    ("identifier_quoting", "silently becomes a string literal", 'SELECT "no_such_column"', ("no_such_column",)),
    ("null_ordering", "first under ORDER BY x ASC", f"WITH t(x) AS {VALUES} SELECT x FROM t ORDER BY x", (None,)),
    ("null_ordering", "last under DESC",
     f"WITH t(x) AS {VALUES} SELECT x FROM t ORDER BY x DESC LIMIT 1 OFFSET 2", (None,)),
    ("like_case", "'Abc' LIKE 'a%' is true", "SELECT 'Abc' LIKE 'a%', 'Abc' = 'abc'", (1, 0)),
    ("dates", "strftime('%Y', col)", "SELECT strftime('%Y', '2021-03-04')", ("2021",)),
    ("dates", "julianday(b) - julianday(a)", "SELECT julianday('2021-03-04') - julianday('2021-03-01')", (3.0,)),
    ("string_aggregation", "defaults to ','",
     "WITH t(x) AS (VALUES ('a'), ('b')) SELECT group_concat(x) FROM (SELECT x FROM t ORDER BY x)", ("a,b",)),
    ("limit_offset", "LIMIT m, n puts the OFFSET first",
     "WITH t(x) AS (VALUES (1), (2), (3)) SELECT x FROM t ORDER BY x LIMIT 1, 2", (2,)),
    ("booleans", "SUM(x > 5) counts", "WITH t(x) AS (VALUES (4), (6), (7)) SELECT SUM(x > 5), TRUE, FALSE FROM t",
     (2, 1, 0)),
]


@pytest.mark.parametrize(("topic", "phrase", "sql", "expected"), SQLITE_CLAIMS)
def test_sqlite_claims_hold_on_sqlite(topic: str, phrase: str, sql: str, expected: tuple[Any, ...]) -> None:
    assert phrase in topic_text("sqlite", topic)
    with sqlite3.connect(":memory:") as conn:
        assert first_row(conn, sql) == expected


DUCKDB_CLAIMS = [
    ("integer_division", "7 / 2 is 3.5", "SELECT 7 / 2", (3.5,)),
    ("integer_division", "7 // 2 is 3", "SELECT 7 // 2", (3,)),
    ("string_concat", "concat(a, b), which skips NULL", "SELECT 'a' || NULL, concat('a', NULL)", (None, "a")),
    ("null_ordering", "last under both ORDER BY x ASC and ORDER BY x DESC",
     f"SELECT list(x ORDER BY x), list(x ORDER BY x DESC) FROM {VALUES} t(x)", ([1, 2, None], [2, 1, None])),
    ("like_case", "'Abc' LIKE 'a%' is false", "SELECT 'Abc' LIKE 'a%', 'Abc' ILIKE 'a%'", (False, True)),
    ("dates", "strftime(col, '%Y')", "SELECT strftime(DATE '2021-03-04', '%Y')", ("2021",)),
    ("dates", "date_diff('day', start, end)", "SELECT date_diff('day', DATE '2021-03-01', DATE '2021-03-04')", (3,)),
    ("string_aggregation", "group_concat and listagg are aliases",
     "SELECT string_agg(x, '-' ORDER BY x), group_concat(x, '-' ORDER BY x), listagg(x, '-' ORDER BY x) "
     "FROM (VALUES ('b'), ('a')) t(x)", ("a-b", "a-b", "a-b")),
]


@pytest.mark.parametrize(("topic", "phrase", "sql", "expected"), DUCKDB_CLAIMS)
def test_duckdb_claims_hold_on_duckdb(topic: str, phrase: str, sql: str, expected: tuple[Any, ...]) -> None:
    assert phrase in topic_text("duckdb", topic)
    with duckdb.connect() as conn:
        assert first_row(conn, sql) == expected


@pytest.mark.parametrize(("topic", "phrase", "sql"), [
    ("limit_offset", "LIMIT m, n is a syntax error", "SELECT 1 LIMIT 0, 1"),
    ("booleans", "TRUE + 1 is an error", "SELECT TRUE + 1"),
    ("group_by", "must appear in GROUP BY", "SELECT a, b, count(*) FROM (VALUES (1, 2)) t(a, b) GROUP BY a"),
])
def test_duckdb_rejects_what_its_pitfalls_say_it_rejects(topic: str, phrase: str, sql: str) -> None:
    assert phrase in topic_text("duckdb", topic)
    with duckdb.connect() as conn, pytest.raises(duckdb.Error):
        conn.execute(sql).fetchall()


def test_duckdb_matches_quoted_names_case_insensitively() -> None:
    assert "matched case-insensitively even when quoted" in topic_text("duckdb", "identifier_quoting")
    with duckdb.connect() as conn:
        conn.execute('CREATE TABLE t ("Name" INTEGER)')
        conn.execute("INSERT INTO t VALUES (7)")
        assert first_row(conn, 'SELECT "NAME", name FROM t') == (7, 7)


def test_each_engine_declares_the_pitfalls_of_its_own_dialect() -> None:
    book = load_pitfalls()
    for info in catalog.infos():
        assert [(p.topic, p.text) for p in book.for_dialect(info.dialect)] == list(info.pitfalls)
    assert set(DIALECTS) <= set(book.by_dialect)


def _engine(name: str, dialect: str, pitfalls: tuple[tuple[str, str], ...]) -> EngineInfo:
    return EngineInfo(name=name, dialect=dialect, display_name=name.title(), schemes=(name,),
                      aliases={name: f"{name}://"}, pitfalls=pitfalls)


def test_the_version_follows_the_texts() -> None:
    engines = catalog.infos()
    assert load_pitfalls(engines).version == 1  # the texts shipped as version 1, unchanged
    # another engine speaking a dialect that has pitfalls, declaring none, changes nothing
    again = load_pitfalls([*engines, _engine("lite2", "sqlite", ())])
    assert again.version == 1 and again.by_dialect == load_pitfalls(engines).by_dialect
    # an edited text is another version, and so is a new engine's list
    duck = catalog.find("duckdb")
    assert duck is not None
    edited = dataclasses.replace(duck, pitfalls=(("integer_division", "Use //."),
                                                 *duck.pitfalls[1:]))
    versions = {load_pitfalls([edited if i.name == "duckdb" else i for i in engines]).version,
                load_pitfalls([*engines, _engine("toy", "tsql", (("top", "Use TOP n."),))]).version}
    assert len(versions) == 2 and all(isinstance(v, str) and v.startswith("sha256:")
                                      for v in versions)


def test_malformed_pitfalls_are_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"engine 'toy': pitfall #2 must be a \(topic, text\) "
                                          r"pair of non-empty strings, got \('x', ' '\)"):
        load_pitfalls([_engine("toy", "tsql", (("top", "Use TOP n."), ("x", " ")))])
    clash = [_engine("one", "tsql", (("top", "Use TOP n."),)),
             _engine("two", "tsql", (("top", "Use TOP (n)."),))]
    with pytest.raises(ConfigError, match="engines 'one' and 'two' both speak tsql but declare "
                                          "different pitfalls"):
        load_pitfalls(clash)
