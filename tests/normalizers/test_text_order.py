"""Text ORDER BY keys under a case- and accent-insensitive collation (policy text_order="either").

The gold runs on SQLite, which orders text by its bytes; predictions run on MariaDB/MySQL loaded by
polysql with the server's default collation, which orders it without case or accents. A correct
prediction then comes back in another order, and under a LIMIT with other rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from polysql_testkit import mysql_fixtures as fx
from polysql_testkit import pg_fixtures
from sqlalchemy.engine import make_url

from polysql.backends.base import Backend
from polysql.backends.mysql.backend import MySQLBackend
from polysql.core.model import Result, Verdict
from polysql.engines.registry import connect
from polysql.normalizers.gold import GoldRuns, judge, run_gold
from polysql.normalizers.ordering import NULL_CONVENTIONS, infer_order
from polysql.normalizers.text_order import folded, folded_unicode, sort_folded

# Byte order: 'Zurich' < 'aarhus' < 'Ålesund'; case- and accent-free: Ålesund, aarhus, ..., Zurich
SOURCE = """
CREATE TABLE city (id INTEGER PRIMARY KEY, name TEXT, country TEXT, people INTEGER);
INSERT INTO city VALUES
  (1, 'Zurich', 'CH', 400), (2, 'aarhus', 'DK', 280), (3, 'Ålesund', 'NO', 60),
  (4, 'Bergen', 'NO', 285), (5, 'bern', 'CH', 134), (6, 'Évora', 'PT', 57),
  (7, 'USA Town', NULL, 10), (8, 'United City', NULL, 20), (9, 'oslo', 'NO', 700);
-- bytes: 'a-b' < 'aZ' < 'a_b' < 'ab'; general_ci: A-B, AB, AZ, A_B;
-- Unicode collation algorithm: a_b, a-b, ab, aZ (punctuation before letters, '_' before '-')
CREATE TABLE tag (id INTEGER PRIMARY KEY, label TEXT);
INSERT INTO tag VALUES (1, 'ab'), (2, 'a_b'), (3, 'aZ'), (4, 'a-b'), (5, 'Straße'), (6, 'strasse x'),
  (7, 'De Vries'), (8, 'Dean'), (9, 'O''Brien'), (10, 'Ober');
"""


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Backend, Backend]]:
    """(SQLite gold engine, MySQL evaluation copy of the same file, default collation)."""
    source = fx.build_sqlite(tmp_path_factory.mktemp("text_order") / "src.sqlite", SOURCE)
    url = fx.server_url().set(database=fx.unique())
    with connect(f"sqlite:///{source}") as lite, connect(url, read_only=False) as target:
        target.load(lite)
    with connect(f"sqlite:///{source}") as lite, connect(url) as mysql:
        yield lite, mysql
    MySQLBackend.drop(url)


def judged(engines: tuple[Backend, Backend], gold_sql: str, pred_sql: str | None = None,
           **policy: object) -> Verdict:
    lite, mysql = engines
    gold = run_gold(gold_sql, "sqlite", lite.execute)
    return judge(gold, mysql.execute(pred_sql or gold_sql), lite.execute, **policy)


@pytest.mark.mysql
def test_the_engine_orders_text_otherwise_and_the_prediction_still_matches(
        engines: tuple[Backend, Backend]) -> None:
    sql = "SELECT name, people FROM city ORDER BY name"
    lite, mysql = engines
    assert [r[0] for r in lite.execute(sql).rows][:3] == ["Bergen", "USA Town", "United City"]
    assert [r[0] for r in mysql.execute(sql).rows][:3] == ["aarhus", "Ålesund", "Bergen"]
    verdict = judged(engines, sql)
    assert verdict.match, verdict.reason
    assert verdict.details["text_order"] == "folded" and verdict.details["ordered"]
    assert "without regard to case or accents" in verdict.reason
    strict = judged(engines, sql, text_order="strict")
    assert not strict.match and "different order" in strict.reason


@pytest.mark.mysql
def test_a_limit_keeps_the_rows_the_engine_orders_first(engines: tuple[Backend, Backend]) -> None:
    # SQLite's first three: Bergen, USA Town, United City; MySQL's: aarhus, Ålesund, Bergen
    for sql in ("SELECT name FROM city ORDER BY name LIMIT 3",
                "SELECT name FROM city ORDER BY name DESC LIMIT 4",
                "SELECT country, name FROM city ORDER BY country DESC, name LIMIT 5"):
        verdict = judged(engines, sql)
        assert verdict.match, (sql, verdict.reason)
    # a gold re-run with its ORDER BY keys appended (SELECT * hides which column a key is)
    grouped = "SELECT * FROM city ORDER BY name LIMIT 3"
    assert run_gold(grouped, "sqlite", engines[0].execute).hidden == 1
    verdict = judged(engines, grouped)
    assert verdict.match, verdict.reason
    # the right rows in the wrong order, or other rows, are still wrong
    assert not judged(engines, "SELECT name FROM city ORDER BY name LIMIT 3",
                      "SELECT name FROM city ORDER BY name DESC LIMIT 3").match
    assert not judged(engines, "SELECT name FROM city ORDER BY name",
                      "SELECT name FROM city ORDER BY id").match
    assert not judged(engines, "SELECT name FROM city ORDER BY name LIMIT 3",
                      "SELECT name FROM city ORDER BY name LIMIT 4").match


@pytest.mark.mysql
def test_as_sets_a_limit_keeps_the_rows_the_engine_orders_first(
        engines: tuple[Backend, Backend]) -> None:
    sql = "SELECT name FROM city ORDER BY name LIMIT 3"
    verdict = judged(engines, sql, set_semantics=True)
    assert verdict.match, verdict.reason
    assert verdict.details["text_order"] == "folded" and "the rows the LIMIT keeps" in verdict.reason
    # the prediction's own order does not count as sets
    assert judged(engines, sql, "SELECT name FROM (SELECT name FROM city ORDER BY name LIMIT 3) "
                                "AS kept ORDER BY name DESC", set_semantics=True).match
    assert not judged(engines, sql, set_semantics=True, text_order="strict").match
    assert not judged(engines, sql, "SELECT name FROM city ORDER BY name DESC LIMIT 3",
                      set_semantics=True).match


@pytest.mark.mysql
def test_nulls_in_a_text_key_follow_a_whole_convention(engines: tuple[Backend, Backend]) -> None:
    sql = "SELECT country, name FROM city ORDER BY country, name"
    verdict = judged(engines, sql)
    assert verdict.match, verdict.reason
    assert verdict.details["null_order"] == "nulls_smallest"  # MySQL's, as SQLite's
    # under the strict NULL rule a key holding NULLs is left to the strict order
    assert not judged(engines, sql, null_order="strict").match


@pytest.fixture(scope="module")
def unicode_mysql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Backend, Backend]]:
    """(SQLite, a MySQL copy whose text uses a collation of the Unicode collation algorithm)."""
    source = fx.build_sqlite(tmp_path_factory.mktemp("text_order_uca") / "src.sqlite", SOURCE)
    url = fx.server_url().set(database=fx.unique())
    with connect(f"sqlite:///{source}") as lite, \
            connect(url, read_only=False, collation="utf8mb4_unicode_520_ci") as target:
        target.load(lite)
    with connect(f"sqlite:///{source}") as lite, connect(url) as mysql:
        yield lite, mysql
    MySQLBackend.drop(url)


@pytest.mark.mysql
def test_a_unicode_collation_orders_punctuation_before_letters(
        unicode_mysql: tuple[Backend, Backend], engines: tuple[Backend, Backend]) -> None:
    lite, mysql = unicode_mysql
    sql = "SELECT label FROM tag ORDER BY label"
    assert [r[0] for r in mysql.execute(sql).rows][:4] == ["a_b", "a-b", "ab", "aZ"]
    for gold_sql in (sql, "SELECT label FROM tag ORDER BY label LIMIT 3"):
        verdict = judged(unicode_mysql, gold_sql)
        assert verdict.match, (gold_sql, verdict.reason)
        assert verdict.details["collation"] == "unicode"
    # general_ci (the other server's default) orders the same labels its own way
    general = judged(engines, sql)
    assert general.match and general.details["collation"] == "general_ci", general.reason
    assert [r[0] for r in engines[1].execute(sql).rows][:4] == ["a-b", "ab", "aZ", "a_b"]


@pytest.mark.postgres
def test_postgres_icu_order_is_the_unicode_weighing(tmp_path_factory: pytest.TempPathFactory,
                                                    ) -> None:
    """A prediction that orders by an ICU collation on PostgreSQL (as databases created with an
    ICU locale do by default) gives the Unicode collation algorithm's order."""
    source = fx.build_sqlite(tmp_path_factory.mktemp("text_order_icu") / "src.sqlite", SOURCE)
    loader = pg_fixtures.Loader(pg_fixtures.server_url(), pg_fixtures.unique("polysql_reader"))
    try:
        url, _ = loader.load(source)
        with connect(f"sqlite:///{source}") as lite, loader.evaluation(url) as pg:
            gold = run_gold("SELECT label FROM tag ORDER BY label LIMIT 4", "sqlite", lite.execute)
            pred = pg.execute('SELECT label FROM tag ORDER BY label COLLATE "und-x-icu" LIMIT 4')
            assert [r[0] for r in pred.rows] == ["a_b", "a-b", "ab", "aZ"]
            verdict = judge(gold, pred, lite.execute)
            assert verdict.match and verdict.details["collation"] == "unicode", verdict.reason
            city = run_gold("SELECT name FROM city ORDER BY name", "sqlite", lite.execute)
            icu = pg.execute('SELECT name FROM city ORDER BY name COLLATE "en-x-icu"')
            assert judge(city, icu, lite.execute).match
    finally:
        loader.cleanup()


@pytest.mark.postgres
def test_a_collation_that_ignores_punctuation_is_the_locale_weighing(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """ICU's "shifted" collations, like the C library's locales (a database created with
    en_US.UTF-8), weigh letters and digits only: 'Dean' before 'De Vries', 'Ober' before
    "O'Brien"."""
    source = fx.build_sqlite(tmp_path_factory.mktemp("text_order_shifted") / "src.sqlite", SOURCE)
    loader = pg_fixtures.Loader(pg_fixtures.server_url(), pg_fixtures.unique("polysql_reader"))
    try:
        url, _ = loader.load(source)
        database = make_url(url).database
        assert database is not None
        with pg_fixtures.admin_connection(pg_fixtures.server_url(), database) as admin:
            admin.execute("CREATE COLLATION public.shifted (provider = icu, "
                          "locale = 'und-u-ka-shifted')")
            admin.commit()
        with connect(f"sqlite:///{source}") as lite, loader.evaluation(url) as pg:
            sql = "SELECT label FROM tag WHERE id > 6 ORDER BY label"
            gold = run_gold(sql, "sqlite", lite.execute)
            pred = pg.execute('SELECT label FROM tag WHERE id > 6 ORDER BY label '
                              'COLLATE public.shifted')
            assert [r[0] for r in pred.rows] == ["Dean", "De Vries", "Ober", "O'Brien"]
            verdict = judge(gold, pred, lite.execute)
            assert verdict.match and verdict.details["collation"] == "locale", verdict.reason
    finally:
        loader.cleanup()


def _result(rows: list[tuple[object, ...]]) -> Result:
    return Result(columns=["name"], rows=rows, types=["TEXT"])


def test_a_limited_gold_whose_widened_run_was_cut_keeps_the_strict_order() -> None:
    sql = "SELECT name FROM city ORDER BY name LIMIT 2"
    gold = _result([("Bergen",), ("Zurich",)])
    pred = _result([("aarhus",), ("Bergen",)])
    complete = _result([("Bergen",), ("Zurich",), ("aarhus",)])
    runs = GoldRuns(sql, "sqlite", gold, gold, widened=complete)
    assert judge(runs, pred).match
    # a widened run as long as its own LIMIT may have left rows out: nothing can be known
    cut = _result([("Bergen",), ("Zurich",), ("aarhus",)] * 334)
    assert len(cut.rows) == 2 + 1000
    assert not judge(GoldRuns(sql, "sqlite", gold, gold, widened=cut), pred).match
    assert not judge(GoldRuns(sql, "sqlite", gold, gold), pred).match  # no widened run at all


def test_the_unicode_weighing_puts_punctuation_first_and_expands_letters() -> None:
    labels = ["ab", "a_b", "aZ", "a-b", "a1", "a b", "Straße", "strasse", "æx", "aex"]
    ordered = sorted(labels, key=folded_unicode)
    assert ordered[:5] == ["a b", "a_b", "a-b", "a1", "ab"]
    assert ordered.index("æx") < ordered.index("aZ")  # æ weighs as ae
    assert folded_unicode("Straße ") == folded_unicode("strasse")
    assert folded_unicode("æx") == folded_unicode("AEX")


def test_folded_weighs_letters_without_case_accents_or_trailing_spaces() -> None:
    assert folded("Ålesund ") == folded("alesund") == "ALESUND"
    assert folded("a_b") > folded("AZ")  # '_' sorts after the letters, weighed as capitals
    info = infer_order("SELECT name FROM city ORDER BY name DESC", "sqlite", ["name"])
    rows = [("b",), (None,), ("Á",), ("C",)]
    assert sort_folded(rows, info.keys or (), info.descending, NULL_CONVENTIONS[0]) == [
        ("C",), ("b",), ("Á",), (None,)]
    assert sort_folded([(1,), ("x",)], [0], [False], NULL_CONVENTIONS[0]) is None


def test_folded_order_is_no_excuse_for_a_result_without_text_keys() -> None:
    sql = "SELECT n FROM t ORDER BY n"
    gold = Result(columns=["n"], rows=[(1,), (2,)], types=["INTEGER"])
    pred = Result(columns=["n"], rows=[(2,), (1,)], types=["INTEGER"])
    verdict = judge(GoldRuns(sql, "sqlite", gold, gold), pred)
    assert not verdict.match and "text_order" not in verdict.details
