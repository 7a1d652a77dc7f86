"""BIRD mini-dev: the SQLite question file with the other dialects' gold attached as native gold,
from the mini_dev_<dialect>.json files next to it or from *_gold.sql files given as options."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from polysql.core.errors import DatasetError
from polysql.datasets.bird import load_bird
from polysql.datasets.registry import get_dataset

COUNT = {"sqlite": "SELECT COUNT(*) FROM t", "mysql": "SELECT COUNT(*) FROM `t`",
         "postgresql": 'SELECT COUNT(*) FROM "t"'}
BIGGEST = {"sqlite": "SELECT MAX(x) FROM t", "mysql": "SELECT MAX(`x`) FROM `t`",
           "postgresql": "SELECT MAX(x)::numeric FROM t"}


def entries(dialect: str, *, ids: bool = True) -> list[dict[str, Any]]:
    """The two questions of the fixture as mini_dev_<dialect>.json holds them."""
    both = [
        {"question_id": 10, "db_id": "shop", "question": "How many rows are there?",
         "evidence": "", "SQL": COUNT[dialect], "difficulty": "simple"},
        {"question_id": 11, "db_id": "zoo", "question": "What is the largest x?",
         "evidence": "largest refers to MAX(x)", "SQL": BIGGEST[dialect],
         "difficulty": "moderate"},
    ]
    if not ids:
        for entry in both:
            del entry["question_id"]
    return both


def gold_lines(dialect: str) -> str:
    return f"{COUNT[dialect]}\tshop\n{BIGGEST[dialect]}\tzoo\n"


@pytest.fixture
def minidev(tmp_path: Path, make_db: Callable[..., Path],
            json_file: Callable[..., Path]) -> Callable[..., Path]:
    """A mini-dev folder: the three question files, the three gold files and dev_databases/."""

    def build(*, ids: bool = True) -> Path:
        root = tmp_path / "MINIDEV"
        for dialect in COUNT:
            json_file(root / f"mini_dev_{dialect}.json", entries(dialect, ids=ids))
            (root / f"mini_dev_{dialect}_gold.sql").write_text(gold_lines(dialect), encoding="utf-8")
        for db in ("shop", "zoo"):
            make_db(root / "dev_databases" / db / f"{db}.sqlite")
        return root

    return build


def natives(dataset_questions: list[Any]) -> dict[str, dict[str, str]]:
    return {q.id: dict(q.native_golds) for q in dataset_questions}


def test_a_minidev_folder_is_detected_and_carries_every_dialects_gold(
        minidev: Callable[..., Path]) -> None:
    root = minidev()
    dataset = get_dataset(str(root))
    assert dataset.name == "bird-mini_dev_sqlite"
    assert [q.id for q in dataset.questions] == ["10", "11"]
    first = dataset.question("10")
    assert first.gold_sql == COUNT["sqlite"] and first.source_dialect == "sqlite"
    assert first.native_gold("mysql") == COUNT["mysql"]
    assert first.native_gold("PostgreSQL") == COUNT["postgresql"]
    assert first.native_gold("duckdb") is None
    assert natives(dataset.questions)["11"] == {"mysql": BIGGEST["mysql"],
                                                "postgresql": BIGGEST["postgresql"]}
    assert dataset.database_path("zoo") == root / "dev_databases" / "zoo" / "zoo.sqlite"
    with sqlite3.connect(dataset.database_path("shop")) as con:
        assert con.execute(first.gold_sql).fetchone() == (2,)
    assert get_dataset(f"bird:{root}?split=mini_dev_sqlite").questions == dataset.questions


def test_a_dev_json_keeps_dev_the_default(minidev: Callable[..., Path],
                                          json_file: Callable[..., Path]) -> None:
    root = minidev()
    json_file(root / "dev.json", entries("sqlite"))
    dataset = get_dataset(str(root))
    assert dataset.name == "bird-dev"
    assert all(q.native_golds == () for q in dataset.questions)


def test_entries_are_matched_by_question_id_in_any_order(minidev: Callable[..., Path],
                                                         json_file: Callable[..., Path]) -> None:
    root = minidev()
    json_file(root / "mini_dev_mysql.json", list(reversed(entries("mysql"))))
    json_file(root / "mini_dev_postgresql.json", entries("postgresql")[1:])  # question 10 left out
    dataset = load_bird(root, {})
    assert natives(dataset.questions) == {
        "10": {"mysql": COUNT["mysql"]},
        "11": {"mysql": BIGGEST["mysql"], "postgresql": BIGGEST["postgresql"]},
    }


def test_entries_without_ids_are_matched_by_position(minidev: Callable[..., Path]) -> None:
    dataset = load_bird(minidev(ids=False), {})
    assert [q.id for q in dataset.questions] == ["0", "1"]
    assert natives(dataset.questions)["1"]["postgresql"] == BIGGEST["postgresql"]


@pytest.mark.parametrize(("ids", "change", "message"), [
    (True, {"db_id": "zoo"}, r"mini_dev_mysql\.json: entry 0 does not line up with "
                             r"mini_dev_sqlite\.json entry 0 \(question 10\): its db_id is 'zoo' "
                             r"where the question file has 'shop'"),
    (False, {"db_id": "zoo"}, r"mini_dev_mysql\.json: entry 0 does not line up .* its db_id is "
                              r"'zoo' where the question file has 'shop'"),
    (True, {"question": "How many columns?"},
     r"entry 0 does not line up .*: its question is 'How many columns\?' where the question file "
     r"has 'How many rows are there\?'"),
    (True, {"question_id": 99}, r"mini_dev_mysql\.json: entry 0: field 'question_id' is '99', "
                                r"which no entry of mini_dev_sqlite\.json has"),
    (True, {"SQL": ""}, r"mini_dev_mysql\.json: entry 0: field 'SQL' is empty"),
])
def test_a_dialect_file_that_does_not_line_up_is_an_error(
        minidev: Callable[..., Path], json_file: Callable[..., Path], ids: bool,
        change: dict[str, Any], message: str) -> None:
    root = minidev(ids=ids)
    bad = entries("mysql", ids=ids)
    bad[0].update(change)
    json_file(root / "mini_dev_mysql.json", bad)
    with pytest.raises(DatasetError, match=message) as info:
        load_bird(root, {})
    assert str(root / "mini_dev_mysql.json") in str(info.value)


def test_whitespace_alone_is_no_mismatch(minidev: Callable[..., Path],
                                         json_file: Callable[..., Path]) -> None:
    root = minidev()
    wrapped = entries("mysql")
    wrapped[0]["question"] = "How many rows\n are there? "
    json_file(root / "mini_dev_mysql.json", wrapped)
    assert load_bird(root, {}).question("10").native_gold("mysql") == COUNT["mysql"]


def test_a_shorter_dialect_file_without_ids_is_an_error(minidev: Callable[..., Path],
                                                        json_file: Callable[..., Path]) -> None:
    root = minidev(ids=False)
    json_file(root / "mini_dev_postgresql.json", entries("postgresql", ids=False)[:1])
    with pytest.raises(DatasetError, match=r"mini_dev_postgresql\.json has 1 entries but "
                                           r"mini_dev_sqlite\.json has 2 entries; they are "
                                           r"matched by position"):
        load_bird(root, {})


def test_gold_sql_files_given_as_options_replace_the_json_files(
        minidev: Callable[..., Path]) -> None:
    root = minidev()
    (root / "mini_dev_mysql_gold.sql").write_text(
        "SELECT COUNT(*) AS n FROM `t`\tshop\nSELECT MAX(`x`) AS m FROM `t`\tzoo\n",
        encoding="utf-8")
    dataset = load_bird(root, {"gold_mysql": "mini_dev_mysql_gold.sql"})
    # only what the options name: the mini_dev_postgresql.json next to it is not attached
    assert natives(dataset.questions) == {"10": {"mysql": "SELECT COUNT(*) AS n FROM `t`"},
                                          "11": {"mysql": "SELECT MAX(`x`) AS m FROM `t`"}}
    both = get_dataset(f"bird:{root}?gold_mysql=mini_dev_mysql_gold.sql"
                       f"&gold_postgresql=mini_dev_postgresql.json")
    assert natives(both.questions)["10"] == {"mysql": "SELECT COUNT(*) AS n FROM `t`",
                                             "postgresql": COUNT["postgresql"]}


@pytest.mark.parametrize(("text", "message"), [
    (f"{COUNT['mysql']}\tzoo\n{BIGGEST['mysql']}\tzoo\n",
     r"mini_dev_mysql_gold\.sql:1 does not line up with mini_dev_sqlite\.json entry 0 "
     r"\(question 10\): its db_id is 'zoo' where the question file has 'shop'"),
    (f"{COUNT['mysql']}\tshop\n",
     r"mini_dev_mysql_gold\.sql has 1 lines but mini_dev_sqlite\.json has 2 entries"),
    (f"{COUNT['mysql']}\tshop\n\n{BIGGEST['mysql']}\tzoo\n",
     r"mini_dev_mysql_gold\.sql:2: empty line"),
    (f"{COUNT['mysql']} shop\n", r"mini_dev_mysql_gold\.sql:1: expected 'SQL<TAB>db_id', "
                                  r"found no tab"),
    (f"\tshop\n{BIGGEST['mysql']}\tzoo\n", r"mini_dev_mysql_gold\.sql:1: the SQL before the tab"),
])
def test_a_gold_sql_file_that_does_not_line_up_is_an_error(
        minidev: Callable[..., Path], text: str, message: str) -> None:
    root = minidev()
    (root / "mini_dev_mysql_gold.sql").write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        load_bird(root, {"gold_mysql": "mini_dev_mysql_gold.sql"})


def test_a_tab_inside_the_sql_stays_in_the_sql(minidev: Callable[..., Path]) -> None:
    root = minidev()
    (root / "mini_dev_mysql_gold.sql").write_text(
        "SELECT\tCOUNT(*) FROM t\tshop\nSELECT 1\tzoo", encoding="utf-8")
    dataset = load_bird(root, {"gold_mysql": "mini_dev_mysql_gold.sql"})
    assert dataset.question("10").native_gold("mysql") == "SELECT\tCOUNT(*) FROM t"


@pytest.mark.parametrize(("options", "message"), [
    ({"gold_sqlite": "mini_dev_sqlite_gold.sql"}, r"'gold_sqlite': the question file's own SQL"),
    ({"gold_": "mini_dev_mysql_gold.sql"}, r"option 'gold_' names no dialect"),
    ({"gold_my-sql": "mini_dev_mysql_gold.sql"}, r"option 'gold_my-sql' names no dialect"),
    ({"gold_mysql": "nowhere_gold.sql"}, r"'gold_mysql': file not found: .*nowhere_gold\.sql "
                                         r"\(paths are relative to the dataset folder"),
    ({"gold_mysql": "dev_databases"}, r"neither a \*_gold\.sql file .* nor a \.json"),
    ({"gold_mysql": " "}, r"option 'gold_mysql' is empty"),
    ({"gold": "x.sql"}, r"does not accept option\(s\) 'gold'.*gold_<dialect>"),
])
def test_bad_gold_options(minidev: Callable[..., Path], options: dict[str, str],
                          message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        load_bird(minidev(), options)


def test_a_repeated_identical_entry_is_named_as_such(minidev: Callable[..., Path],
                                                     json_file: Callable[..., Path]) -> None:
    root = minidev()
    json_file(root / "mini_dev_sqlite.json", [*entries("sqlite"), entries("sqlite")[1]])
    with pytest.raises(DatasetError, match=r"entry 2: field 'question_id' repeats id '11' of "
                                           r"entry 1 \(an identical copy of it: delete one"):
        load_bird(root, {})

