"""Fixtures for the audit tests: a small shop database in polysql's generic dataset layout, with
gold SQL written natively for MySQL, PostgreSQL and DuckDB beside the SQLite reference.

The native golds are what a careful person translating the reference would write, and several of
them really answer differently on their engine (the SQL semantics are the engines', not made up):

* ``intdiv``: ``SUM(amount) / COUNT(*)`` is integer division on SQLite (7 / 2 = 3) but 3.5 on
  MySQL (``/`` is exact division), DuckDB (``/`` is float division) and PostgreSQL (``SUM`` of an
  integer column is ``numeric`` there, so the division is not an integer one);
* ``case``: ``city = 'paris'`` is case-sensitive on SQLite, PostgreSQL and DuckDB, but MySQL's
  default collation ignores case and also counts 'Paris';
* ``month``: one month after 1990-01-31 is 1990-03-03 for SQLite's ``date(..., '+1 month')``
  (it normalizes 31 February) and 1990-02-28 for the other three engines' interval arithmetic;
* ``nulls``: ``ORDER BY score LIMIT 2`` puts the NULL score first on SQLite and MySQL, last on
  PostgreSQL and DuckDB (the comparison contract accepts either convention unless
  ``null_order=strict``);
* ``broken``: the PostgreSQL gold misspells a column and fails;

and the others agree. ``bare`` carries no native gold at all, ``top`` only a PostgreSQL one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from polysql_testkit import availability

from polysql.cli.main import main

SCHEMA = """
CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, born DATE,
                     score INTEGER);
CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER NOT NULL,
                     amount INTEGER NOT NULL, placed DATE NOT NULL);
"""
PEOPLE = [(1, "Alice", "Paris", "1990-01-31", 7), (2, "bob", "paris", "1988-05-17", 3),
          (3, "Carol", None, "1985-12-31", None), (4, "dave", "Berlin", "2000-02-29", 2),
          (5, "Eve", "berlin", "1999-03-01", 5)]
ORDERS = [(1, 1, 3, "2024-01-15"), (2, 1, 4, "2024-02-01"), (3, 2, 10, "2024-02-29"),
          (4, 4, 1, "2024-03-31")]


def _same(sql: str) -> dict[str, str]:
    return {"mysql": sql, "postgresql": sql, "duckdb": sql}


# question id -> (tags, reference gold, native golds by dialect as the layout spells them)
QUESTIONS: dict[str, tuple[list[str], str, dict[str, str]]] = {
    "count": (["portable"], "SELECT COUNT(*) FROM people", _same("SELECT COUNT(*) FROM people")),
    "intdiv": (["integer-division"],
               "SELECT SUM(amount) / COUNT(*) FROM orders WHERE person_id = 1",
               _same("SELECT SUM(amount) / COUNT(*) FROM orders WHERE person_id = 1")),
    "nulls": (["null-ordering"], "SELECT name FROM people ORDER BY score LIMIT 2",
              _same("SELECT name FROM people ORDER BY score LIMIT 2")),
    "case": (["case-sensitivity"], "SELECT COUNT(*) FROM people WHERE city = 'paris'",
             _same("SELECT COUNT(*) FROM people WHERE city = 'paris'")),
    "month": (["date-arithmetic"], "SELECT date(born, '+1 month') FROM people WHERE id = 1",
              {"mysql": "SELECT DATE_ADD(born, INTERVAL 1 MONTH) FROM people WHERE id = 1",
               "postgresql": "SELECT CAST(born + INTERVAL '1 month' AS DATE) FROM people WHERE id = 1",
               "duckdb": "SELECT CAST(born + INTERVAL 1 MONTH AS DATE) FROM people WHERE id = 1"}),
    "year": (["date-functions"], "SELECT CAST(strftime('%Y', born) AS INTEGER) FROM people WHERE id = 1",
             {"mysql": "SELECT YEAR(born) FROM people WHERE id = 1",
              "postgresql": "SELECT EXTRACT(YEAR FROM born) FROM people WHERE id = 1",
              "duckdb": "SELECT year(born) FROM people WHERE id = 1"}),
    # `ORDER BY ... USING >` is PostgreSQL's spelling of DESC, which sqlglot cannot parse
    "top": (["ordering"], "SELECT id FROM people WHERE score IS NOT NULL ORDER BY score DESC LIMIT 2",
            {"postgresql": "SELECT id FROM people WHERE score IS NOT NULL ORDER BY score USING > LIMIT 2"}),
    "concat": (["string-functions"], "SELECT name || '-' || city FROM people WHERE id = 1",
               {"mysql": "SELECT CONCAT(name, '-', city) FROM people WHERE id = 1",
                "postgresql": "SELECT name || '-' || city FROM people WHERE id = 1",
                "duckdb": "SELECT name || '-' || city FROM people WHERE id = 1"}),
    "broken": (["aggregation"], "SELECT city, COUNT(*) FROM people GROUP BY city",
               {"postgresql": "SELECT city, COUNT(*) FROM people GROUP BY citty"}),
    "bare": (["portable"], "SELECT SUM(amount) FROM orders", {}),
}

#: the dataset's name in results (fixed, so the server copies are reused from run to run)
NAME = "audit-shop"


@dataclass(frozen=True, slots=True)
class Shop:
    folder: Path
    database: Path

    @property
    def spec(self) -> str:
        return f"jsonl:{self.folder}?name={NAME}"


def write_shop(folder: Path, *, natives: bool = True) -> Shop:
    """The shop in the generic layout: ``questions.jsonl`` + ``databases/shop.sqlite``."""
    database = folder / "databases" / "shop.sqlite"
    database.parent.mkdir(parents=True)
    con = sqlite3.connect(database)
    con.executescript(SCHEMA)
    con.executemany("INSERT INTO people VALUES (?, ?, ?, ?, ?)", PEOPLE)
    con.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", ORDERS)
    con.commit()
    con.close()
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for question_id, (tags, gold, native) in QUESTIONS.items():
            line: dict[str, Any] = {"question_id": question_id, "db_id": "shop",
                                    "question": f"question {question_id}", "gold_sql": gold,
                                    "tags": tags}
            if natives:
                line.update({f"gold_sql_{dialect}": sql for dialect, sql in native.items()})
            fh.write(json.dumps(line) + "\n")
    return Shop(folder, database)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("POLYSQL_CACHE", str(cache))
    return cache


@pytest.fixture
def shop(tmp_path: Path) -> Shop:
    return write_shop(tmp_path / "shop")


@pytest.fixture
def shop_without_natives(tmp_path: Path) -> Shop:
    return write_shop(tmp_path / "plain", natives=False)


@pytest.fixture
def engines() -> str:
    """The four engines, the servers by the URLs the test kit checks (skip or fail if down)."""
    for engine in ("duckdb", "postgres", "mysql"):
        availability.require_client(engine)
    from polysql_testkit import mysql_fixtures, pg_fixtures

    pg = pg_fixtures.server_url().render_as_string(hide_password=False)
    my = mysql_fixtures.server_url().render_as_string(hide_password=False)
    return f"sqlite,duckdb,postgres={pg},mysql={my}"


@pytest.fixture
def polysql() -> Callable[..., Result]:
    """Run ``polysql ARGS`` in-process; the result has exit_code, stdout and output."""
    def invoke(*args: str) -> Result:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    return invoke
