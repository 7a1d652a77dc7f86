from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from polysql.datasets.base import Question
from polysql.errors import ConfigError, PredictionFileError
from polysql.predictors import EngineInfo, FilePredictor, make_predictor

QUESTION = Question(id="q1", db_id="db", question="?",
                    gold_sql="SELECT 'a' || 'b' AS ab, GROUP_CONCAT(x) AS xs FROM (SELECT 1 AS x)")
DUCKDB = EngineInfo("duckdb", "duckdb")
SQLITE = EngineInfo("sqlite", "sqlite")
MYSQL = EngineInfo("mysql", "mysql")


def test_gold_runs_verbatim_everywhere() -> None:
    gold = make_predictor("gold")
    assert gold.predict(QUESTION, DUCKDB).sql == QUESTION.gold_sql
    assert gold.predict(QUESTION, MYSQL).sql == QUESTION.gold_sql


def test_transpile_rewrites_for_the_target_and_keeps_the_source_verbatim() -> None:
    transpile = make_predictor("transpile")
    mysql = transpile.predict(QUESTION, MYSQL)
    assert mysql.sql is not None and "CONCAT" in mysql.sql.upper()
    same = transpile.predict(QUESTION, SQLITE)
    assert same.sql == QUESTION.gold_sql and same.meta == {"identity": True}
    # GROUP_CONCAT does not exist in DuckDB; the transpiled query runs there
    duck = transpile.predict(QUESTION, DUCKDB)
    assert duck.sql is not None and "GROUP_CONCAT" not in duck.sql.upper()
    assert duckdb.sql(duck.sql).fetchall() == [("ab", "1")]


def test_transpile_failure_is_recorded_not_raised() -> None:
    broken = Question(id="q2", db_id="db", question="?", gold_sql="SELECT * FROM t WHERE")
    prediction = make_predictor("transpile").predict(broken, DUCKDB)
    assert prediction.sql is None
    assert prediction.failure is not None and prediction.failure.startswith("transpile_failure")


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_file_predictor_matches_engine_name_dialect_or_any(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "preds.jsonl", [
        json.dumps({"question_id": "q1", "dialect": "duckdb", "sql": "SELECT 1"}),
        json.dumps({"question_id": "q1", "dialect": "postgres", "sql": "SELECT 2"}),
        json.dumps({"question_id": "q1", "sql": "SELECT 3"}),
    ])
    predictor = FilePredictor(path)
    assert predictor.name == "file:preds"
    assert predictor.predict(QUESTION, DUCKDB).sql == "SELECT 1"
    assert predictor.predict(QUESTION, EngineInfo("pg", "postgres")).sql == "SELECT 2"
    assert predictor.predict(QUESTION, SQLITE).sql == "SELECT 3"
    other = Question(id="q9", db_id="db", question="?", gold_sql="SELECT 1")
    missing = predictor.predict(other, DUCKDB)
    assert missing.sql is None and missing.failure == "missing_prediction"


def test_malformed_lines_are_reported_with_file_and_line_and_skipped(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "preds.jsonl", [
        json.dumps({"question_id": "q1", "dialect": "duckdb", "sql": "SELECT 1"}),
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"question_id": "q2", "dialect": "duckdb"}),
        "",
        json.dumps({"question_id": "q1", "dialect": "duckdb", "sql": "SELECT 2"}),
    ])
    predictor = FilePredictor(path, name="mine")
    problems = [str(p) for p in predictor.problems]
    assert [p.line for p in predictor.problems] == [2, 3, 4, 6]
    assert problems[0].startswith(f"{path}:2: not valid JSON")
    assert "missing 'sql'" in problems[2]
    assert "duplicate" in problems[3]
    assert predictor.predict(QUESTION, DUCKDB).sql == "SELECT 1"  # first one kept


def test_unreadable_prediction_files_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(PredictionFileError, match="does not exist"):
        FilePredictor(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(PredictionFileError, match="empty"):
        FilePredictor(tmp_path / "empty.jsonl")


def test_predictor_specs(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.jsonl", [json.dumps({"question_id": "q1", "sql": "SELECT 1"})])
    assert make_predictor(f"model-a={path}").name == "model-a"
    assert make_predictor(f"file:{path}").name == "file:p"
    with pytest.raises(ConfigError, match="unknown predictor 'oracle'"):
        make_predictor("oracle")
