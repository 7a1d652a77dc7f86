"""The Archer loader on small Spider-shaped folders written by the tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from polysql.cli.main import main
from polysql.core.errors import DatasetError
from polysql.core.store import ResultsStore
from polysql.datasets.archer import load_archer
from polysql.datasets.folder import FolderDataset
from polysql.datasets.registry import get_dataset

# Spider's parsed form of a query, which Spider-derived files keep under "sql"
PARSED = {"select": [False, [[3, [0, [0, 0, False], None]]]], "from": {"table_units": []}}


def entry(**overrides: Any) -> dict[str, Any]:
    base = {"db_id": "cars", "question": "How much bigger is the largest x than the smallest?",
            "query": "SELECT MAX(x) - MIN(x) FROM t"}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not ...}


@pytest.fixture
def archer_folder(tmp_path: Path, make_db: Callable[..., Path],
                  json_file: Callable[..., Path]) -> Callable[..., Path]:
    def build(files: dict[str, Any], dbs: tuple[str, ...] = ("cars",)) -> Path:
        root = tmp_path / "archer"
        for name, entries in files.items():
            json_file(root / name, entries)
        for db in dbs:
            make_db(root / "database" / db / f"{db}.sqlite", rows=((3,), (10,), (4,)))
        return root

    return build


def test_loads_query_and_sql_gold_keys(archer_folder: Callable[..., Path]) -> None:
    root = archer_folder({"dev.json": [
        entry(sql=PARSED),  # Spider style: the text in query, the parsed form in sql
        entry(query=..., sql="SELECT 1.0 * 300 / MAX(x) FROM t", knowledge="fuel = distance / mpg"),
        entry(db_id="zoo", question_id=41, evidence="count rows", query="SELECT COUNT(*) FROM t"),
    ]}, dbs=("cars", "zoo"))
    dataset = get_dataset(f"archer:{root}")
    assert isinstance(dataset, FolderDataset) and dataset.name == "archer-dev"
    assert [q.id for q in dataset.questions] == ["0", "1", "41"]
    first, second, third = dataset.questions
    assert first.gold_sql == "SELECT MAX(x) - MIN(x) FROM t" and first.evidence == ""
    assert second.gold_sql == "SELECT 1.0 * 300 / MAX(x) FROM t"
    assert second.evidence == "fuel = distance / mpg"
    assert (third.db_id, third.evidence) == ("zoo", "count rows")
    assert dataset.database_path("cars") == root / "database" / "cars" / "cars.sqlite"
    with sqlite3.connect(dataset.database_path("cars")) as con:
        assert con.execute(first.gold_sql).fetchone() == (7,)
        assert con.execute(second.gold_sql).fetchone() == (30.0,)


def test_train_split_questions_file_and_databases_options(
        archer_folder: Callable[..., Path], make_db: Callable[..., Path]) -> None:
    root = archer_folder({"train.json": [entry()], "extra/zh_dev.json": [entry(question="x?")]})
    assert load_archer(root, {"split": "train"}).name == "archer-train"
    other = load_archer(root, {"questions": "extra/zh_dev.json"})
    assert other.name == "archer-zh_dev" and other.questions[0].question == "x?"
    make_db(root / "dbs" / "cars" / "cars.sqlite")
    moved = load_archer(root, {"split": "train", "databases": "dbs"})
    assert moved.database_path("cars") == root / "dbs" / "cars" / "cars.sqlite"


@pytest.mark.parametrize(("bad", "message"), [
    (entry(query=...), r"entry 1: field 'query' is missing, and so is 'sql'"),
    (entry(query=..., sql=PARSED), r"entry 1: field 'query' is not gold SQL text \(the entry has "
                                   r"'sql', but none of them is a string"),
    (entry(query=""), r"entry 1: field 'query' is empty"),
    (entry(question=None), r"entry 1: field 'question' is missing"),
    (entry(db_id="a/b"), r"entry 1: field 'db_id' is 'a/b', which is not a plain folder name"),
    (entry(question_id=5), r"entry 1: field 'question_id' repeats id '5' of entry 0"),
    (entry(knowledge=3), r"entry 1: field 'knowledge' must be a string"),
])
def test_malformed_entries_name_file_entry_and_field(archer_folder: Callable[..., Path],
                                                     bad: dict[str, Any], message: str) -> None:
    root = archer_folder({"dev.json": [entry(question_id=5), bad]})
    with pytest.raises(DatasetError, match=message) as info:
        load_archer(root, {})
    assert str(root / "dev.json") in str(info.value)


def test_missing_database_names_the_expected_file(archer_folder: Callable[..., Path]) -> None:
    root = archer_folder({"dev.json": [entry(), entry(db_id="gone")]})
    with pytest.raises(DatasetError, match=r"entry 1 \(question 1\) uses database 'gone'") as info:
        load_archer(root, {})
    assert str(root / "database" / "gone" / "gone.sqlite") in str(info.value)


def test_option_errors(archer_folder: Callable[..., Path]) -> None:
    root = archer_folder({"dev.json": [entry()]})
    with pytest.raises(DatasetError, match=r"either 'split' or 'questions', not both"):
        load_archer(root, {"split": "dev", "questions": "dev.json"})
    with pytest.raises(DatasetError, match=r"archer dataset does not accept option\(s\) 'lang'"):
        load_archer(root, {"lang": "en"})
    with pytest.raises(DatasetError, match=r"question file not found: .*test\.json"):
        load_archer(root, {"split": "test"})


def test_a_bare_archer_folder_is_read_as_spider(archer_folder: Callable[..., Path]) -> None:
    """Nothing tells the two layouts apart, so the kind must be named: the bare path is Spider."""
    root = archer_folder({"dev.json": [entry()]})
    assert get_dataset(str(root)).name == "spider-dev"
    assert get_dataset(f"archer:{root}").name == "archer-dev"


def test_an_archer_folder_sweeps_end_to_end_through_the_cli(
        archer_folder: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    root = archer_folder({"dev.json": [
        entry(),
        entry(query=..., sql="SELECT 1.0 * 300 / MAX(x) FROM t", knowledge="fuel = distance / mpg"),
    ]})
    run = tmp_path / "run"
    result = CliRunner().invoke(main, ["sweep", "--dataset", f"archer:{root}", "--engines",
                                       "sqlite,duckdb", "--predictor", "gold", "--out", str(run)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    statuses = {(r["engine"], r["question_id"]): r["status"] for r in ResultsStore(run).records()}
    assert statuses == {(engine, qid): "match" for engine in ("sqlite", "duckdb")
                        for qid in ("0", "1")}
    assert "archer-dev" in result.output
