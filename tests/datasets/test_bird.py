"""The BIRD loader on small release-shaped folders written by the tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from polysql.core.errors import DatasetError
from polysql.datasets.bird import load_bird
from polysql.datasets.folder import FolderDataset


def entry(**overrides: Any) -> dict[str, Any]:
    base = {"question_id": 7, "db_id": "shop", "question": "How many rows?",
            "evidence": "rows are in t", "SQL": "SELECT COUNT(*) FROM t", "difficulty": "simple"}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not ...}


def test_loads_questions_and_databases(bird_folder: Callable[..., Path]) -> None:
    root = bird_folder([entry(), entry(question_id=8, db_id="zoo", SQL="SELECT x FROM t")],
                       dbs=("shop", "zoo"))
    dataset = load_bird(root, {})
    assert isinstance(dataset, FolderDataset)
    assert dataset.name == "bird-dev"
    assert [q.id for q in dataset.questions] == ["7", "8"]
    first = dataset.question("7")
    assert (first.db_id, first.question, first.evidence, first.gold_sql, first.difficulty) == (
        "shop", "How many rows?", "rows are in t", "SELECT COUNT(*) FROM t", "simple")
    assert first.source_dialect == "sqlite"
    assert dataset.db_ids() == ["shop", "zoo"]
    path = dataset.database_path("zoo")
    assert path == root / "dev_databases" / "zoo" / "zoo.sqlite"
    with sqlite3.connect(path) as con:
        assert con.execute(first.gold_sql).fetchone() == (2,)


def test_train_split_without_question_ids_uses_the_index(bird_folder: Callable[..., Path]) -> None:
    root = bird_folder([entry(question_id=..., difficulty=...),
                        entry(question_id=..., difficulty=..., evidence="")], split="train")
    dataset = load_bird(root, {"split": "train"})
    assert dataset.name == "bird-train"
    assert [q.id for q in dataset.questions] == ["0", "1"]
    assert dataset.questions[1].difficulty is None


def test_databases_option_overrides_the_folder(bird_folder: Callable[..., Path],
                                               json_file: Callable[..., Path]) -> None:
    root = bird_folder([entry()])
    json_file(root / "mini_dev_sqlite.json", [entry(question_id=1)])
    dataset = load_bird(root, {"split": "mini_dev_sqlite", "databases": "dev_databases"})
    assert dataset.database_path("shop") == root / "dev_databases" / "shop" / "shop.sqlite"


def test_unknown_db_id_lookup_names_the_known_ones(bird_folder: Callable[..., Path]) -> None:
    dataset = load_bird(bird_folder([entry()]), {})
    with pytest.raises(DatasetError, match=r"no database 'nope'.*shop"):
        dataset.database_path("nope")


def test_missing_database_file_names_the_expected_path(bird_folder: Callable[..., Path]) -> None:
    root = bird_folder([entry(), entry(question_id=9, db_id="gone")])
    expected = root / "dev_databases" / "gone" / "gone.sqlite"
    with pytest.raises(DatasetError, match=r"entry 1 \(question 9\)") as info:
        load_bird(root, {})
    assert str(expected) in str(info.value)


def test_missing_database_folder(tmp_path: Path, json_file: Callable[..., Path]) -> None:
    json_file(tmp_path / "dev.json", [entry()])
    with pytest.raises(DatasetError, match="database folder not found"):
        load_bird(tmp_path, {})


def test_missing_question_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"question file not found: .*dev\.json"):
        load_bird(tmp_path, {})


@pytest.mark.parametrize(("bad", "message"), [
    (entry(SQL=...), r"entry 1: field 'SQL' is missing"),
    (entry(question_id=1), r"entry 1: field 'question_id' repeats id '1' of entry 0"),
    (entry(SQL=""), r"entry 1: field 'SQL' is empty"),
    (entry(question=3), r"entry 1: field 'question' must be a string"),
    (entry(db_id=None), r"entry 1: field 'db_id' is missing"),
    (entry(question_id=[1]), r"entry 1: field 'question_id' must be a string or an integer"),
    (entry(evidence=5), r"entry 1: field 'evidence' must be a string"),
    (entry(db_id="../etc"), r"entry 1: field 'db_id' is '\.\./etc', which is not a plain folder"),
    ("SELECT 1", r"entry 1: expected a JSON object, got a JSON string"),
])
def test_malformed_entries_name_file_entry_and_field(
        bird_folder: Callable[..., Path], bad: Any, message: str) -> None:
    root = bird_folder([entry(question_id=1), bad])
    with pytest.raises(DatasetError, match=message) as info:
        load_bird(root, {})
    assert str(root / "dev.json") in str(info.value)


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "dev.json").write_text('[{"db_id": "shop",\n "question": }]', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"dev\.json: not valid JSON .* line 2"):
        load_bird(tmp_path, {})


def test_top_level_must_be_a_list(bird_folder: Callable[..., Path]) -> None:
    root = bird_folder({"questions": []})
    with pytest.raises(DatasetError, match="expected a JSON list .* got a JSON object"):
        load_bird(root, {})


def test_unknown_option_lists_the_accepted_ones(bird_folder: Callable[..., Path]) -> None:
    root = bird_folder([entry()])
    with pytest.raises(DatasetError, match=r"'spilt'.*accepted options: split"):
        load_bird(root, {"spilt": "dev"})
