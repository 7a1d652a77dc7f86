"""The generic layout: PATH/questions.jsonl + PATH/databases/<db_id>.sqlite, no code per benchmark."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from polysql.core.errors import DatasetError
from polysql.datasets.generic import load_generic
from polysql.datasets.registry import detect_kind, get_dataset


def line(**overrides: Any) -> dict[str, Any]:
    base = {"question_id": "q1", "db_id": "shop", "question": "How many rows?",
            "gold_sql": "SELECT COUNT(*) FROM t"}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not ...}


@pytest.fixture
def generic_folder(tmp_path: Path, make_db: Callable[..., Path]) -> Callable[..., Path]:
    """``generic_folder([obj or raw text, ...], dbs=("shop",))``: one line per item."""

    def build(lines: list[Any], dbs: tuple[str, ...] = ("shop",), name: str = "bench") -> Path:
        root = tmp_path / name
        root.mkdir()
        text = "\n".join(item if isinstance(item, str) else json.dumps(item) for item in lines)
        (root / "questions.jsonl").write_text(text + "\n", encoding="utf-8")
        for db in dbs:
            make_db(root / "databases" / f"{db}.sqlite")
        return root

    return build


def test_every_field_is_read_and_native_golds_attached(generic_folder: Callable[..., Path]) -> None:
    root = generic_folder([
        line(gold_sql_mysql="SELECT COUNT(*) FROM `t`", gold_sql_postgresql='SELECT COUNT(*) FROM "t"',
             evidence="rows are in t", difficulty="simple", tags=["aggregation"]),
        "",  # blank lines are skipped
        line(question_id=7, db_id="zoo", question="Largest x?", gold_sql="SELECT MAX(x) FROM t"),
    ], dbs=("shop", "zoo"))
    assert detect_kind(root) == "jsonl"
    dataset = get_dataset(str(root))
    assert dataset.name == "jsonl-bench"
    assert [q.id for q in dataset.questions] == ["q1", "7"]
    first, second = dataset.questions
    assert first.native_golds == (("mysql", "SELECT COUNT(*) FROM `t`"),
                                  ("postgresql", 'SELECT COUNT(*) FROM "t"'))
    assert first.native_gold("MySQL") == "SELECT COUNT(*) FROM `t`"
    assert (first.evidence, first.difficulty, first.tags) == ("rows are in t", "simple",
                                                              ("aggregation",))
    assert (second.native_golds, second.evidence, second.difficulty, second.tags) == ((), "", None, ())
    assert dataset.database_path("zoo") == root / "databases" / "zoo.sqlite"
    with sqlite3.connect(dataset.database_path("shop")) as con:
        assert con.execute(first.gold_sql).fetchone() == (2,)
    assert get_dataset(f"jsonl:{root}").questions == dataset.questions


def test_options_pick_the_file_folder_and_name(generic_folder: Callable[..., Path],
                                               make_db: Callable[..., Path]) -> None:
    root = generic_folder([line()])
    (root / "hard.jsonl").write_text(json.dumps(line(question_id="h1")) + "\n", encoding="utf-8")
    make_db(root / "dbs" / "shop.sqlite")
    dataset = get_dataset(f"jsonl:{root}?questions=hard.jsonl&databases=dbs&name=my-bench.v2")
    assert dataset.name == "my-bench.v2"
    assert [q.id for q in dataset.questions] == ["h1"]
    assert dataset.database_path("shop") == root / "dbs" / "shop.sqlite"
    with pytest.raises(DatasetError, match=r"dataset name 'a b' is not usable as a folder name"):
        load_generic(root, {"name": "a b"})
    with pytest.raises(DatasetError, match=r"jsonl dataset does not accept option\(s\) 'split'"):
        load_generic(root, {"split": "dev"})


@pytest.mark.parametrize(("bad", "message"), [
    ("{broken", r"questions\.jsonl:3: not valid JSON"),
    ('["q1"]', r"questions\.jsonl:3: expected a JSON object, got a JSON list"),
    (line(gold_sql=...), r"questions\.jsonl:3: field 'gold_sql' is missing"),
    (line(question_id="q0"), r"questions\.jsonl:3: field 'question_id' repeats id 'q0' of line 1"),
    (line(question_id=None), r"questions\.jsonl:3: field 'question_id' is missing"),
    (line(db_id=4), r"questions\.jsonl:3: field 'db_id' must be a string"),
    (line(gold_sql_mysql=""), r"questions\.jsonl:3: field 'gold_sql_mysql' is empty"),
    (line(gold_sql_mysql=["SELECT 1"]), r"questions\.jsonl:3: field 'gold_sql_mysql' must be a "
                                        r"string"),
    (line(gold_sql_sqlite="SELECT 1"), r"questions\.jsonl:3: field 'gold_sql_sqlite' repeats the "
                                       r"reference"),
    (line(**{"gold_sql_My SQL": "SELECT 1"}), r"field 'gold_sql_My SQL' names no dialect"),
    (line(gold="SELECT 1"), r"questions\.jsonl:3: field 'gold' is not a field of this layout"),
    (line(tags="join"), r"questions\.jsonl:3: field 'tags' must be a list of strings"),
    (line(db_id="gone"), r"questions\.jsonl:3 \(question q1\) uses database 'gone' .* expected "
                         r".*databases/gone\.sqlite"),
    (line(db_id="../shop"), r"questions\.jsonl:3: field 'db_id' is '\.\./shop', which is not a "
                            r"plain file name"),
])
def test_bad_lines_name_file_line_and_field(generic_folder: Callable[..., Path], bad: Any,
                                            message: str) -> None:
    root = generic_folder([line(question_id="q0"), "   ", bad])
    with pytest.raises(DatasetError, match=message) as info:
        load_generic(root, {})
    assert str(root / "questions.jsonl") in str(info.value)


def test_an_empty_file_and_a_missing_folder(generic_folder: Callable[..., Path],
                                            tmp_path: Path) -> None:
    root = generic_folder(["", " "])
    with pytest.raises(DatasetError, match=r"questions\.jsonl: holds no questions"):
        load_generic(root, {})
    with pytest.raises(DatasetError, match=r"question file not found: .*questions\.jsonl"):
        load_generic(tmp_path, {})
    (root / "questions.jsonl").write_text(json.dumps(line()) + "\n", encoding="utf-8")
    (root / "databases" / "shop.sqlite").unlink()
    (root / "databases").rmdir()
    with pytest.raises(DatasetError, match=r"database folder not found: .*databases \(expected "
                                           r"next to questions\.jsonl, holding <db_id>\.sqlite"):
        load_generic(root, {})
