"""The native-gold predictor end to end through the CLI: a BIRD mini-dev folder and a generic
questions.jsonl folder, swept on real SQLite, DuckDB, PostgreSQL and MySQL/MariaDB. Each engine
runs the gold written for its own dialect; DuckDB, which has none, is missing_prediction."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from polysql_testkit import mysql_fixtures, pg_fixtures

from polysql.cli.main import EXIT_CONFIG, main
from polysql.core.store import ResultsStore

# Each dialect's gold uses syntax only its own engine accepts: backticks and IFNULL for MySQL,
# ::numeric casts for PostgreSQL (whose round() takes no double precision with a scale).
GOLD = {
    "stock": {
        "sqlite": "SELECT SUM(IFNULL(stock, 0)) FROM item",
        "mysql": "SELECT SUM(IFNULL(`stock`, 0)) FROM `item`",
        "postgresql": "SELECT SUM(COALESCE(stock, 0))::numeric FROM item",
    },
    "price": {
        "sqlite": "SELECT ROUND(AVG(price), 2) FROM item",
        "mysql": "SELECT ROUND(AVG(`price`), 2) FROM `item`",
        "postgresql": "SELECT ROUND(AVG(price)::numeric, 2) FROM item",
    },
}
QUESTIONS = {"stock": "How many items are in stock, counting unknown stock as none?",
             "price": "What is the average price, to the cent?"}
IDS = {"stock": 1, "price": 2}


pytestmark = pytest.mark.usefixtures("isolated_cache")


@pytest.fixture
def engines() -> str:
    pg = pg_fixtures.server_url().render_as_string(hide_password=False)
    my = mysql_fixtures.server_url().render_as_string(hide_password=False)
    return f"sqlite,duckdb,postgres={pg},mysql={my}"


def make_shop(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, price REAL, stock INTEGER)")
    con.executemany("INSERT INTO item VALUES (?, ?, ?, ?)",
                    [(1, "pen", 1.5, 10), (2, "ink", 2.25, None), (3, "pad", 4.0, 7)])
    con.commit()
    con.close()


def minidev_folder(root: Path) -> Path:
    for dialect in ("sqlite", "mysql", "postgresql"):
        entries = [{"question_id": IDS[key], "db_id": "shop", "question": QUESTIONS[key],
                    "evidence": "", "SQL": GOLD[key][dialect], "difficulty": "simple"}
                   for key in GOLD]
        root.mkdir(parents=True, exist_ok=True)
        (root / f"mini_dev_{dialect}.json").write_text(json.dumps(entries), encoding="utf-8")
    make_shop(root / "dev_databases" / "shop" / "shop.sqlite")
    return root


def generic_folder(root: Path) -> Path:
    root.mkdir(parents=True)
    lines = [{"question_id": IDS[key], "db_id": "shop", "question": QUESTIONS[key],
              "gold_sql": GOLD[key]["sqlite"], "gold_sql_mysql": GOLD[key]["mysql"],
              "gold_sql_postgresql": GOLD[key]["postgresql"]} for key in GOLD]
    (root / "questions.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n",
                                          encoding="utf-8")
    make_shop(root / "databases" / "shop.sqlite")
    return root


def sweep(dataset: str, run: Path, engines: str) -> tuple[list[dict[str, Any]], str]:
    result = CliRunner().invoke(main, ["sweep", "--dataset", dataset, "--engines", engines,
                                       "--predictor", "native-gold", "--out", str(run)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return list(ResultsStore(run).records()), result.output


def check_native_records(records: list[dict[str, Any]], output: str) -> None:
    by_pair = {(r["question_id"], r["engine"]): r for r in records}
    assert len(by_pair) == len(records) == 2 * 4
    for key, question_id in ((key, str(i)) for key, i in IDS.items()):
        for engine, dialect in (("sqlite", "sqlite"), ("mysql", "mysql"),
                                ("postgres", "postgresql")):
            record = by_pair[(question_id, engine)]
            assert record["sql"] == GOLD[key][dialect], (engine, record)
            assert record["status"] == "match", (engine, record["reason"], record["pred"])
            assert record["prediction_meta"] == {"native": engine != "sqlite"}
            assert record["gold_sql"] == GOLD[key]["sqlite"]  # the reference stays SQLite's
        duck = by_pair[(question_id, "duckdb")]
        assert (duck["status"], duck["prediction_failure"], duck["sql"]) == (
            "generation_failure", "missing_prediction", None)
    assert "2 of 2 question(s) have no gold written for duckdb" in output


@pytest.mark.postgres
@pytest.mark.mysql
def test_minidev_native_golds_run_on_their_own_engines(tmp_path: Path, engines: str) -> None:
    root = minidev_folder(tmp_path / "MINIDEV")
    records, output = sweep(str(root), tmp_path / "run", engines)
    assert {r["dataset"] for r in records} == {"bird-mini_dev_sqlite"}
    check_native_records(records, output)


@pytest.mark.postgres
@pytest.mark.mysql
def test_generic_layout_native_golds_run_on_their_own_engines(tmp_path: Path,
                                                              engines: str) -> None:
    root = generic_folder(tmp_path / "bench")
    records, output = sweep(f"jsonl:{root}", tmp_path / "run", engines)
    assert {r["dataset"] for r in records} == {"jsonl-bench"}
    check_native_records(records, output)


def test_a_folder_without_native_golds_refuses_the_sweep(tmp_path: Path) -> None:
    root = minidev_folder(tmp_path / "MINIDEV")
    for dialect in ("mysql", "postgresql"):
        (root / f"mini_dev_{dialect}.json").unlink()
    result = CliRunner().invoke(main, ["sweep", "--dataset", str(root), "--engines", "sqlite,duckdb",
                                       "--predictor", "native-gold", "--out", str(tmp_path / "run")],
                                catch_exceptions=False)
    assert result.exit_code == EXIT_CONFIG, result.output
    assert ("question(s) swept from dataset bird-mini_dev_sqlite has gold SQL written for duckdb"
            in result.output)
    assert not (tmp_path / "run" / "results.jsonl").exists()
