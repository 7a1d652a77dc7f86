"""Validation of demo-format question files (what a hand-edited questions.json can get wrong)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from polysql.core.errors import DatasetError
from polysql.datasets.demo import load_demo_questions
from polysql.datasets.tags import check_tags


def entry(**overrides: Any) -> dict[str, Any]:
    base = {"id": "x-1", "db_id": "retail", "question": "q?", "gold_sql": "SELECT 1",
            "tags": ["portable"], "difficulty": "simple"}
    base.update(overrides)
    return base


def test_valid_file_loads(tmp_path: Path, json_file: Callable[..., Path]) -> None:
    path = json_file(tmp_path / "q.json", [entry(evidence="hint", tags=["cast", "join"])])
    (question,) = load_demo_questions(path)
    assert question.tags == ("cast", "join")
    assert question.evidence == "hint"
    assert question.native_golds == ()  # the field is optional


def test_native_golds_load_per_dialect(tmp_path: Path, json_file: Callable[..., Path]) -> None:
    golds = {"mysql": "SELECT 1 DIV 1", "duckdb": "SELECT 1 // 1", "postgresql": "SELECT 1 / 1"}
    path = json_file(tmp_path / "q.json", [entry(native_gold=golds), entry(id="x-2")])
    with_golds, without = load_demo_questions(path)
    assert with_golds.native_golds == (("mysql", "SELECT 1 DIV 1"), ("duckdb", "SELECT 1 // 1"),
                                       ("postgresql", "SELECT 1 / 1"))
    assert with_golds.native_gold("PostgreSQL") == "SELECT 1 / 1"
    assert with_golds.gold_sql == "SELECT 1"  # the SQLite gold stays the reference
    assert without.native_golds == ()
    assert without.native_gold("mysql") is None


def test_a_dialect_may_be_left_out(tmp_path: Path, json_file: Callable[..., Path]) -> None:
    path = json_file(tmp_path / "q.json", [entry(native_gold={"duckdb": "SELECT 2"})])
    (question,) = load_demo_questions(path)
    assert question.native_gold("duckdb") == "SELECT 2"
    assert question.native_gold("mysql") is None


@pytest.mark.parametrize(("entries", "message"), [
    ([entry(), entry()], r"entry 1: field 'id' repeats id 'x-1' of entry 0"),
    ([entry(tags=["portable", "made_up"])], r"unknown tag\(s\) 'made_up'"),
    ([entry(tags=["portable", "cast"])], r"tagged 'portable' and also with hazard\(s\) cast"),
    ([entry(tags=[])], r"field 'tags' is empty"),
    ([entry(tags="portable")], r"field 'tags' must be a list of strings"),
    ([entry(difficulty="hard")], r"field 'difficulty' must be one of simple, moderate, challenging"),
    ([entry(gold_sql=None)], r"entry 0: field 'gold_sql' is missing"),
    ([entry(), entry(id="x-2", native_gold={"postgre sql": "SELECT 1"})],
     r"entry 1 \(x-2\): field 'native_gold' has key 'postgre sql', which is not a dialect "
     r"name; use a dialect name"),
    ([entry(native_gold={"MySQL": "SELECT 1"})],
     r"entry 0 \(x-1\): field 'native_gold' has key 'MySQL', which is not a dialect name; "
     r"write it in lower case, 'mysql'"),
    ([entry(native_gold={"sqlite": "SELECT 1"})],
     r"\(x-1\): field 'native_gold' has key 'sqlite', the dialect of 'gold_sql' itself"),
    ([entry(native_gold={"duckdb": 7})],
     r"\(x-1\): field 'native_gold': the 'duckdb' gold must be a string of SQL, got 7"),
    ([entry(native_gold={"mysql": ["SELECT 1"]})],
     r"\(x-1\): field 'native_gold': the 'mysql' gold must be a string of SQL, got \[\"SELECT 1\"\]"),
    ([entry(native_gold={"duckdb": "  "})],
     r"\(x-1\): field 'native_gold': the 'duckdb' gold is empty"),
    ([entry(native_gold="SELECT 1")],
     r"\(x-1\): field 'native_gold' must be an object mapping a dialect"),
    ([entry(native_gold={})], r"\(x-1\): field 'native_gold' is empty"),
])
def test_invalid_entries(tmp_path: Path, json_file: Callable[..., Path],
                         entries: list[Any], message: str) -> None:
    path = json_file(tmp_path / "q.json", entries)
    with pytest.raises(DatasetError, match=message):
        load_demo_questions(path)


def test_check_tags_accepts_the_vocabulary() -> None:
    check_tags(("integer_division", "join"), where="here")
    with pytest.raises(DatasetError, match="here: unknown tag"):
        check_tags(("Integer_Division",), where="here")
