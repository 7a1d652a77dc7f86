"""The Spider loader on small release-shaped folders written by the tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from polysql.core.errors import DatasetError
from polysql.datasets.spider import load_spider


def entry(db_id: str = "shop", query: Any = "SELECT x FROM t", **extra: Any) -> dict[str, Any]:
    return {"db_id": db_id, "question": "List x.", "query": query,
            "query_toks": ["SELECT"], "sql": {}, **extra}


def test_dev_split_ids_are_indexes(spider_folder: Callable[..., Path]) -> None:
    root = spider_folder({"dev.json": [entry(), entry("zoo", "SELECT 1")]}, dbs=("shop", "zoo"))
    dataset = load_spider(root, {})
    assert dataset.name == "spider-dev"
    assert [q.id for q in dataset.questions] == ["0", "1"]
    assert dataset.questions[1].gold_sql == "SELECT 1"
    assert dataset.questions[0].evidence == ""
    assert dataset.questions[0].difficulty is None
    assert dataset.database_path("zoo") == root / "database" / "zoo" / "zoo.sqlite"


def test_train_split_reads_train_spider_json(spider_folder: Callable[..., Path]) -> None:
    root = spider_folder({"dev.json": [entry()], "train_spider.json": [entry(), entry(), entry()]})
    dataset = load_spider(root, {"split": "train"})
    assert dataset.name == "spider-train"
    assert len(dataset.questions) == 3


def test_other_split_names_read_their_own_file(spider_folder: Callable[..., Path]) -> None:
    root = spider_folder({"train_others.json": [entry(query="SELECT 2")]})
    dataset = load_spider(root, {"split": "train_others"})
    assert dataset.questions[0].gold_sql == "SELECT 2"


def test_test_split_prefers_test_database(spider_folder: Callable[..., Path],
                                          make_db: Callable[..., Path]) -> None:
    root = spider_folder({"test.json": [entry("only_in_test")]}, dbs=("shop",))
    make_db(root / "test_database" / "only_in_test" / "only_in_test.sqlite")
    dataset = load_spider(root, {"split": "test"})
    assert dataset.database_path("only_in_test") == (
        root / "test_database" / "only_in_test" / "only_in_test.sqlite")


def test_missing_database_names_the_expected_path(spider_folder: Callable[..., Path]) -> None:
    root = spider_folder({"dev.json": [entry(), entry(), entry("absent")]})
    with pytest.raises(DatasetError, match=r"entry 2 \(question 2\) uses database 'absent'") as info:
        load_spider(root, {})
    assert str(root / "database" / "absent" / "absent.sqlite") in str(info.value)


def test_missing_query_names_file_entry_and_field(spider_folder: Callable[..., Path]) -> None:
    bad = entry()
    del bad["query"]
    root = spider_folder({"dev.json": [entry(), bad]})
    with pytest.raises(DatasetError, match=r"dev\.json: entry 1: field 'query' is missing"):
        load_spider(root, {})


def test_wrong_type_names_the_field(spider_folder: Callable[..., Path]) -> None:
    root = spider_folder({"dev.json": [entry(query=["SELECT", "1"])]})
    with pytest.raises(DatasetError, match=r"entry 0: field 'query' must be a string"):
        load_spider(root, {})


def test_missing_split_file(spider_folder: Callable[..., Path]) -> None:
    root = spider_folder({"dev.json": [entry()]})
    with pytest.raises(DatasetError, match=r"question file not found: .*test\.json"):
        load_spider(root, {"split": "test"})


def test_non_utf8_file(tmp_path: Path) -> None:
    (tmp_path / "dev.json").write_bytes(b'[{"question": "caf\xe9"}]')
    with pytest.raises(DatasetError, match=r"dev\.json: not UTF-8"):
        load_spider(tmp_path, {})
