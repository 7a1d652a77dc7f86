"""A sweep reads each gold's columns once, however many engines and predictors are judged
against it (the gold's memo is shared by every lane). Real SQLite and DuckDB."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from polysql_testkit.column_reads import count_column_reads
from polysql_testkit.jsonl_dataset import write_questions
from polysql_testkit.sqlite_files import built_sqlite

from polysql.sweep.config import SweepConfig
from polysql.sweep.runner import Sweep

pytestmark = pytest.mark.usefixtures("isolated_cache")

GOLD = {
    "q1": "SELECT id, price, note FROM item",
    "q2": "SELECT note, count(*) FROM item GROUP BY note",
    "q3": "SELECT id FROM item WHERE price > 10",
}


def items(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, price REAL, note TEXT)")
    con.executemany("INSERT INTO item VALUES (?, ?, ?)",
                    [(i, i * 0.25, f"n{i % 9}") for i in range(1, 2001)])


def dataset(root: Path) -> str:
    (root / "databases").mkdir(parents=True)
    built_sqlite(root / "databases" / "shop.sqlite", items)
    return write_questions(root, "shop", GOLD)


def test_every_engine_and_predictor_judges_against_one_reading_of_the_gold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = count_column_reads(monkeypatch)
    name = dataset(tmp_path / "shop")
    outcome = Sweep(SweepConfig(dataset=name, engines="sqlite,duckdb",
                                predictors="gold,transpile", out=tmp_path / "run")).run()
    judged = len(GOLD) * 2 * 2  # questions x engines x predictors
    assert outcome.written == judged
    assert reads == {"gold": len(GOLD), "predicted": judged}
