"""A table read in rowid ranges on several threads is exactly the table read at once.

The single ``NOT INDEXED`` read through ADBC is the reference: the parts, concatenated, must give
the same rows in the same order with the same Arrow types -- or, where the driver typed the parts
differently, the read must be the single read itself (same answer, same error).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from polysql_testkit.sqlite_files import Build, built_sqlite

from polysql.backends.sqlite import introspect, introspect_parts
from polysql.backends.sqlite.connect import read_arrow
from polysql.backends.sqlite.introspect_parts import part_count, read_whole_table


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements introspect_parts hands to the driver, as they are run."""
    statements: list[str] = []

    def recording(path: Path, sql: str, *, batch_rows: int = 65_536) -> pa.Table:
        statements.append(sql)
        return read_arrow(path, sql, batch_rows=batch_rows)

    monkeypatch.setattr(introspect_parts, "read_arrow", recording)
    return statements


def _single(path: Path, table: str, select: str) -> pa.Table | type[BaseException]:
    try:
        return read_arrow(path, f'SELECT {select} FROM "{table}" NOT INDEXED')
    except Exception as exc:  # noqa: BLE001 - the reference's error is part of its answer
        return type(exc)


def _both_reads(path: Path, select: str, parts: int,
                monkeypatch: pytest.MonkeyPatch) -> tuple[pa.Table, pa.Table, list[str]]:
    """Table ``t`` read in ``parts`` and at once, and the statements the parted read ran."""
    statements = _recorded(monkeypatch)
    got = read_whole_table(path, "t", select, parts=parts)
    expected = _single(path, "t", select)
    assert isinstance(expected, pa.Table)
    return got, expected, statements


def _parted(path: Path, table: str, select: str, parts: int) -> pa.Table | type[BaseException]:
    try:
        return read_whole_table(path, table, select, parts=parts)
    except Exception as exc:  # noqa: BLE001
        return type(exc)


def test_only_a_table_larger_than_a_cores_share_is_split() -> None:
    many = 10 * introspect_parts.MIN_ROWS_PER_PART
    assert part_count(many, many, cores=2) == 2  # the whole database in one table
    assert part_count(many, many, cores=8) == 8
    assert part_count(many, many, cores=1) == 1
    assert part_count(many // 2, many, cores=2) == 1  # its fair share: read beside the others
    assert part_count(many * 9 // 10, many, cores=4) == 4  # at most one part per core
    # never a part smaller than the minimum, however many cores wait
    assert part_count(3 * introspect_parts.MIN_ROWS_PER_PART, many, cores=64) == 3
    assert part_count(2 * introspect_parts.MIN_ROWS_PER_PART - 1, many, cores=64) == 1


def _gapped(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (i INTEGER, f REAL, s TEXT, b BLOB, d NUMERIC)")
    rowids = [-(2**40), -7, 0, 1, 2, 3, 1_000, 1_001, 50_000, 2**40, 2**62]
    con.executemany("INSERT INTO t (rowid, i, f, s, b, d) VALUES (?, ?, ?, ?, ?, ?)",
                    [(r, n, n / 3, f"v{n} ü", bytes([n]), f"{n}.25")
                     for n, r in enumerate(rowids)])


def test_parts_give_the_rows_of_one_read_in_its_order(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = built_sqlite(tmp_path / "src.sqlite", _gapped)
    got, expected, statements = _both_reads(path, "i, f, s, b, d", 3, monkeypatch)
    assert len(statements) == 3 and all(" WHERE rowid " in sql for sql in statements)
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()


def _null_in_one_part(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (s, n)")
    con.executemany("INSERT INTO t VALUES (?, ?)",
                    [(None, None)] * 6 + [(f"x{i}", None) for i in range(6)])


def test_a_column_null_throughout_a_part_takes_the_type_the_others_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = built_sqlite(tmp_path / "src.sqlite", _null_in_one_part)
    got, expected, statements = _both_reads(path, "s, n", 2, monkeypatch)
    assert len(statements) == 2
    assert got.schema.field("s").type == pa.string()
    assert got.schema == expected.schema  # n: NULL in every part, typed as one read types it
    assert got.to_pylist() == expected.to_pylist()


def _ints_then_text(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (v)")
    con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(6)] + [("six",), ("x",)])


def _text_then_ints(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (v)")
    con.executemany("INSERT INTO t VALUES (?)", [("a",), ("b",)] + [(i,) for i in range(6)])


def _reals_then_ints(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (v)")
    con.executemany("INSERT INTO t VALUES (?)", [(0.5,), (1.5,)] + [(i,) for i in range(6)])


@pytest.mark.parametrize("build", [_ints_then_text, _text_then_ints, _reals_then_ints])
def test_parts_typed_apart_are_read_again_at_once(tmp_path: Path, build: Build,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver types each part by its own first rows; where they disagree, the answer is the
    single read's own -- its rows or its refusal -- never a mixture."""
    path = built_sqlite(tmp_path / "src.sqlite", build)
    statements = _recorded(monkeypatch)
    got = _parted(path, "t", "v", parts=2)
    assert any(" WHERE rowid " in sql for sql in statements)  # the parts were tried
    assert statements[-1].endswith("NOT INDEXED")  # and the whole read decided
    expected = _single(path, "t", "v")
    if isinstance(expected, pa.Table):
        assert isinstance(got, pa.Table)
        assert got.schema == expected.schema and got.to_pylist() == expected.to_pylist()
    else:
        assert got is expected


def _without_rowid(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT) WITHOUT ROWID")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(20)])


def _every_alias_a_column(con: sqlite3.Connection) -> None:
    con.execute('CREATE TABLE t (rowid TEXT, "_ROWID_" TEXT, Oid TEXT)')
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [(f"r{i}", "x", "y") for i in range(20)])


@pytest.mark.parametrize("build", [_without_rowid, _every_alias_a_column])
def test_a_table_without_a_rowid_to_split_by_is_read_at_once(
        tmp_path: Path, build: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    path = built_sqlite(tmp_path / "src.sqlite", build)
    got, expected, statements = _both_reads(path, "*", 2, monkeypatch)
    assert statements == ['SELECT * FROM "t" NOT INDEXED']
    assert got.to_pylist() == expected.to_pylist()


def _rowid_column(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (rowid TEXT, v INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(f"named {i}", i) for i in range(20)])


def test_a_column_named_rowid_splits_by_another_alias(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = built_sqlite(tmp_path / "src.sqlite", _rowid_column)
    got, expected, statements = _both_reads(path, "rowid, v", 2, monkeypatch)
    assert len(statements) == 2 and all(" WHERE _rowid_ " in sql for sql in statements)
    assert got.to_pylist() == expected.to_pylist()


def _one_big_table(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE small (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, small_id INTEGER REFERENCES small, "
                "amount NUMERIC(10,2), ratio REAL, day DATE, at DATETIME, note TEXT, flag BOOLEAN,"
                " loose)")
    con.executemany("INSERT INTO small VALUES (?, ?)", [(i, f"n{i}") for i in range(5)])
    rows: list[tuple[Any, ...]] = []
    for i in range(3_000):
        rows.append((i, i % 5, f"{i}.25", i / 7, f"2024-01-{1 + i % 28:02d}",
                     f"2024-02-{1 + i % 28:02d} 10:{i % 60:02d}:00", None if i < 1_600 else "ü",
                     i % 2, i if i % 3 else f"t{i}"))
    con.executemany("INSERT INTO big VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def _introspected(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        sources = introspect.introspect(conn, read_ahead=True)
    return [(s.table, s.coercions, {name: column.to_pylist()
                                    for name, column in s.read_ahead.items()}) for s in sources]


def test_the_type_scan_of_a_table_read_in_parts_is_the_single_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the speed path: a table holding most of the rows is scanned in parts, and its
    logical types, coercions and the rows kept for the load are those of one read."""
    path = built_sqlite(tmp_path / "src.sqlite", _one_big_table)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    reference = _introspected(path)
    statements = _recorded(monkeypatch)
    monkeypatch.setattr(introspect_parts, "MIN_ROWS_PER_PART", 100)
    split = _introspected(path)
    assert any('FROM "big" NOT INDEXED WHERE rowid >= ' in sql for sql in statements)
    assert not any('FROM "small" NOT INDEXED WHERE' in sql for sql in statements)
    assert split == reference
    (_, _, kept) = split[1]
    assert len(kept["note"]) == 3_000 and kept["note"][1_599:1_601] == [None, "ü"]


def _virtual_and_plain(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE virtual_notes (body TEXT)")
    con.executemany("INSERT INTO virtual_notes VALUES (?)", [(f"n{i}",) for i in range(10)])
    con.execute("CREATE VIRTUAL TABLE notes USING fts5(body)")
    con.executemany("INSERT INTO notes VALUES (?)", [(f"n{i}",) for i in range(10)])


def test_a_virtual_table_is_never_split(tmp_path: Path) -> None:
    """Its rowid is whatever the module makes of it (a scan of its own per part, maybe); a
    plain table is split whatever its name says."""
    path = built_sqlite(tmp_path / "src.sqlite", _virtual_and_plain)
    assert introspect_parts._rowid_ranges(path, "notes", 2) is None
    assert introspect_parts._rowid_ranges(path, "virtual_notes", 2) == ["rowid < 6",
                                                                        "rowid >= 6"]
