"""Name modes for loads (``--names lower|snake``) on the embedded engines."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import polysql
from polysql.core.errors import ConfigError


def source(tmp_path: Path) -> Path:
    path = tmp_path / "src.sqlite"
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE "OrderItems" ("ItemId" INTEGER PRIMARY KEY, "Unit Price" NUMERIC(8,2))')
    con.execute('CREATE TABLE "Note" ("ItemId" INTEGER REFERENCES "OrderItems"("ItemId"), txt TEXT)')
    con.executemany('INSERT INTO "OrderItems" VALUES (?, ?)', [(1, 2.5), (2, 10)])
    con.commit()
    con.close()
    return path


def test_snake_names_in_duckdb_and_a_mode_change_reloads(tmp_path: Path) -> None:
    src, target = source(tmp_path), tmp_path / "copy.duckdb"
    report = polysql.load(f"sqlite:///{src}", f"duckdb:///{target}", names="snake")
    assert report.tables == {"order_items": 2, "note": 0}
    with polysql.connect(f"duckdb:///{target}") as duck:
        tables = {t.name: t for t in duck.tables()}
        assert [c.name for c in tables["order_items"].columns] == ["item_id", "unit_price"]
        assert tables["order_items"].primary_key == ("item_id",)
        result = duck.execute("SELECT item_id, unit_price FROM order_items ORDER BY 1")
        assert [(r[0], float(r[1])) for r in result.rows] == [(1, 2.5), (2, 10.0)]
    # same source, other mode: not the same copy, so it must not be skipped
    again = polysql.load(f"sqlite:///{src}", f"duckdb:///{target}", names="exact")
    assert not again.skipped and again.tables == {"OrderItems": 2, "Note": 0}
    assert polysql.load(f"sqlite:///{src}", f"duckdb:///{target}", names="exact").skipped


def test_sqlite_targets_only_copy_exactly_and_unknown_modes_are_refused(tmp_path: Path) -> None:
    src = source(tmp_path)
    with pytest.raises(ConfigError, match="byte-for-byte"):
        polysql.load(f"sqlite:///{src}", f"sqlite:///{tmp_path / 'c.sqlite'}", names="lower")
    with pytest.raises(ConfigError, match="unknown name mode 'camel'"):
        polysql.load(f"sqlite:///{src}", f"duckdb:///{tmp_path / 'c.duckdb'}", names="camel")
