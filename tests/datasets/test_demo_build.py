"""The demo database: deterministic bytes, cache placement, and the data features it promises."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from datetime import date, datetime
from pathlib import Path

import pytest

from polysql.core.errors import DatasetError
from polysql.core.paths import CACHE_ENV, cache_root
from polysql.datasets.demo import (
    GENERATOR_VERSION,
    demo_database_path,
    ensure_demo_database,
)
from polysql.datasets.demo.generate import content_digest, generate_rows
from polysql.datasets.demo.schema import TABLE_NAMES

# The generated rows per GENERATOR_VERSION. When the generator's output changes on purpose, bump
# GENERATOR_VERSION (so caches of the old data are not reused) and record the new digest here.
RECORDED_CONTENT = {
    1: "d8b79a8ee484bd05646d17dbac998fff943cb7c2f38e684d70a0e02d81f03060",
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def declared_types(con: sqlite3.Connection, table: str) -> dict[str, str]:
    return {row[1]: row[2] for row in con.execute(f'PRAGMA table_info("{table}")')}


@pytest.fixture
def con(demo_db: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True)
    yield connection
    connection.close()


def test_two_builds_are_byte_identical(tmp_path: Path) -> None:
    first = ensure_demo_database(tmp_path / "a")
    second = ensure_demo_database(tmp_path / "b")
    assert first != second
    assert sha256(first) == sha256(second)


def test_content_change_requires_a_version_bump() -> None:
    digest = content_digest(generate_rows())
    assert RECORDED_CONTENT.get(GENERATOR_VERSION) == digest, (
        f"the demo generator's output changed (content digest {digest}): bump GENERATOR_VERSION "
        f"and record the digest in RECORDED_CONTENT")


def test_a_different_seed_gives_different_content() -> None:
    assert content_digest(generate_rows(seed=1)) != content_digest(generate_rows())


def test_build_does_not_depend_on_the_hash_seed(tmp_path: Path, demo_db: Path) -> None:
    # A different PYTHONHASHSEED changes set/dict-of-str iteration order; the bytes must not move.
    script = ("import sys; from pathlib import Path; "
              "from polysql.datasets.demo import ensure_demo_database; "
              "print(ensure_demo_database(Path(sys.argv[1])))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, check=True,
                         capture_output=True, text=True, cwd=tmp_path).stdout.strip()
    assert sha256(Path(out)) == sha256(demo_db)


def test_cache_location_follows_polysql_cache(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "custom"))
    expected = tmp_path / "custom" / "datasets" / "demo" / f"v{GENERATOR_VERSION}" / "retail.sqlite"
    assert demo_database_path() == expected
    assert ensure_demo_database() == expected
    assert expected.is_file()


def test_cache_defaults_to_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_root() == tmp_path / ".cache" / "polysql"


def test_missing_file_is_rebuilt_and_no_temp_files_remain(tmp_path: Path) -> None:
    path = ensure_demo_database(tmp_path)
    digest = sha256(path)
    path.unlink()
    assert ensure_demo_database(tmp_path) == path
    assert sha256(path) == digest
    assert sorted(p.name for p in path.parent.iterdir()) == ["retail.sqlite"]


def test_existing_file_is_reused(tmp_path: Path) -> None:
    path = ensure_demo_database(tmp_path)
    before = path.stat().st_mtime_ns
    ensure_demo_database(tmp_path)
    assert path.stat().st_mtime_ns == before


def test_unwritable_cache_gives_dataset_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(DatasetError, match=CACHE_ENV):
        ensure_demo_database(blocker)


def test_has_at_least_eight_tables_with_a_few_thousand_rows(con: sqlite3.Connection) -> None:
    tables = [r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
    assert tables == list(TABLE_NAMES)
    assert len(tables) >= 8
    total = sum(con.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables)
    assert 3_000 <= total <= 20_000


def test_declares_date_datetime_numeric_boolean_and_char(con: sqlite3.Connection) -> None:
    declared = {t: declared_types(con, t) for t in TABLE_NAMES}
    flat = {ty for cols in declared.values() for ty in cols.values()}
    assert {"DATE", "DATETIME", "NUMERIC(10,2)", "BOOLEAN", "CHAR(6)"} <= flat
    assert declared["payments"]["amount"] == "NUMERIC(10,2)"
    assert declared["orders"]["ordered_at"] == "DATETIME"
    assert declared["stores"]["is_flagship"] == "BOOLEAN"


def test_dates_and_datetimes_are_iso_text(con: sqlite3.Connection) -> None:
    for table, cols in ((t, declared_types(con, t)) for t in TABLE_NAMES):
        for col, ty in cols.items():
            if ty not in ("DATE", "DATETIME"):
                continue
            parse = date.fromisoformat if ty == "DATE" else datetime.fromisoformat
            values = [v for (v,) in con.execute(f'SELECT "{col}" FROM "{table}"') if v is not None]
            assert values, f"{table}.{col} is empty"
            for value in values:
                assert isinstance(value, str)
                parse(value)
                assert len(value) == (10 if ty == "DATE" else 19), (table, col, value)


def test_booleans_are_zero_or_one_and_both_occur(con: sqlite3.Connection) -> None:
    for table in TABLE_NAMES:
        for col, ty in declared_types(con, table).items():
            if ty == "BOOLEAN":
                values = {v for (v,) in con.execute(f'SELECT DISTINCT "{col}" FROM "{table}"')}
                assert values == {0, 1}, (table, col, values)


def test_money_is_stored_as_both_integer_and_real(con: sqlite3.Connection) -> None:
    kinds = {k for (k,) in con.execute("SELECT DISTINCT typeof(amount) FROM payments")}
    assert kinds == {"integer", "real"}


def test_several_columns_hold_nulls(con: sqlite3.Connection) -> None:
    nullable_with_nulls = []
    for table in TABLE_NAMES:
        for col in declared_types(con, table):
            (nulls,) = con.execute(f'SELECT COUNT(*) FROM "{table}" WHERE "{col}" IS NULL').fetchone()
            if nulls:
                nullable_with_nulls.append(f"{table}.{col}")
    assert len(nullable_with_nulls) >= 8, nullable_with_nulls
    assert "customers.email" in nullable_with_nulls
    assert "stores.city" in nullable_with_nulls


def test_mixed_case_identifiers(con: sqlite3.Connection) -> None:
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "StoreRegion" in tables
    assert {"FirstName", "LastName"} <= set(declared_types(con, "customers"))
    assert "RegionID" in declared_types(con, "StoreRegion")


def test_text_with_trailing_spaces(con: sqlite3.Connection) -> None:
    codes = [c for (c,) in con.execute("SELECT store_code FROM stores")]
    assert all(len(c) == 6 and c != c.rstrip() for c in codes)
    (padded_cities,) = con.execute(
        "SELECT COUNT(*) FROM customers WHERE city <> rtrim(city)").fetchone()
    assert padded_cities > 0


def test_text_with_accents(con: sqlite3.Connection) -> None:
    names = {n for (n,) in con.execute('SELECT "FirstName" FROM customers')}
    cities = {c for (c,) in con.execute("SELECT city FROM stores WHERE city IS NOT NULL")}
    assert {"José", "Zoë"} & names
    assert "Ærøskøbing" in cities
    assert any(not n.isascii() for n in names)


def test_foreign_keys_hold(con: sqlite3.Connection) -> None:
    fk_count = sum(len(con.execute(f'PRAGMA foreign_key_list("{t}")').fetchall())
                   for t in TABLE_NAMES)
    assert fk_count >= 10
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []


def test_every_table_has_a_primary_key(con: sqlite3.Connection) -> None:
    for table in TABLE_NAMES:
        assert any(row[5] for row in con.execute(f'PRAGMA table_info("{table}")')), table


def test_user_version_records_the_generator_version(con: sqlite3.Connection) -> None:
    assert con.execute("PRAGMA user_version").fetchone()[0] == GENERATOR_VERSION
