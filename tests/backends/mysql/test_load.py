"""Loading SQLite sources into MySQL/MariaDB on the real local server: value fidelity, names,
types read back, keys (kept, or dropped with a reason), coercions, idempotent skips, atomic
reloads, and a million-row table."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pymysql
import pytest
from polysql_testkit import mysql_fixtures
from sqlalchemy.engine import URL

from polysql.backends.base import Backend
from polysql.backends.mysql import load as load_module
from polysql.backends.mysql import load_index, load_keys
from polysql.backends.mysql.backend import MySQLBackend
from polysql.backends.sqlite.backend import SQLiteBackend
from polysql.core.errors import ConfigError, EngineUnavailableError, LoadError
from polysql.core.schema import Table
from polysql.engines.registry import connect

pytestmark = pytest.mark.mysql


fx = mysql_fixtures
admin_url, loader, make_sqlite = fx.admin_url, fx.loader, fx.make_sqlite


def admin_rows(url: URL, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows read with an administrator connection (independent of the backend's read path)."""
    conn = fx.admin_connection(url.set(database=None), url.database)
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())
    finally:
        conn.close()


def column_types(url: URL, table: str) -> dict[str, str]:
    return dict(admin_rows(url, "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
                                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                           (url.database, table)))


def table_names(url: URL) -> list[str]:
    return sorted(r[0] for r in admin_rows(
        url, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
        (url.database,)))


FIDELITY = """
CREATE TABLE "Measures" (
    id INTEGER PRIMARY KEY,
    price DECIMAL(10, 2),
    wide NUMERIC(30, 10),
    ratio REAL,
    big INTEGER,
    flag BOOLEAN,
    day DATE,
    seen DATETIME,
    label TEXT,
    raw BLOB
);
INSERT INTO "Measures" VALUES
    (1, 12.34, '123456789.0123', 0.1, 9223372036854775807, 1, '2024-02-29',
     '2024-02-29 23:59:59.123456', 'Zoë  ', x'00ff10'),
    (2, -0.05, '-1.5', 1e300, -9223372036854775808, 0, '0001-01-01', '1999-12-31 00:00:00',
     'it''s a \\ back\\slash', x''),
    (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (4, 0, 0, -2.5, 0, 'true', '9999-12-31', '2000-01-01 00:00:00.000001',
     '日本語 🙂 café', x'00'),
    (5, 99999999.99, 1, 3.0, 1, 'false', '1970-01-01', '1970-01-01 00:00:00', '', NULL);
"""


def test_values_round_trip_exactly(loader: fx.Loader, make_sqlite: Any) -> None:
    url, report = loader(make_sqlite(FIDELITY))
    assert report.tables == {"Measures": 5} and not report.skipped
    rows = admin_rows(url, "SELECT id, price, wide, ratio, big, flag, day, seen, label, raw, "
                           "CHAR_LENGTH(label) FROM `Measures` ORDER BY id")
    assert rows[0] == (1, Decimal("12.34"), Decimal("123456789.0123000000"), 0.1,
                       9223372036854775807, 1, dt.date(2024, 2, 29),
                       dt.datetime(2024, 2, 29, 23, 59, 59, 123456), "Zoë  ", b"\x00\xff\x10", 5)
    assert rows[1] == (2, Decimal("-0.05"), Decimal("-1.5000000000"), 1e300,
                       -9223372036854775808, 0, dt.date(1, 1, 1), dt.datetime(1999, 12, 31),
                       "it's a \\ back\\slash", b"", 19)
    assert rows[2] == (3,) + (None,) * 10
    assert rows[3] == (4, Decimal("0.00"), Decimal("0E-10"), -2.5, 0, 1, dt.date(9999, 12, 31),
                       dt.datetime(2000, 1, 1, 0, 0, 0, 1), "日本語 🙂 café", b"\x00", 10)
    assert rows[4][5] == 0 and rows[4][8] == "" and rows[4][9] is None
    types = column_types(url, "Measures")
    assert types["price"] == "decimal(10,2)" and types["wide"] == "decimal(30,10)"
    assert types["ratio"] == "double" and types["flag"] == "tinyint(1)"
    assert types["day"] == "date" and types["seen"] == "datetime(6)"  # 123456 and 000001
    assert types["label"] == "varchar(19)" and types["raw"] == "longblob"
    assert types["big"].startswith("bigint")


STAMPS = """
CREATE TABLE stamps (id INTEGER PRIMARY KEY, whole DATETIME, tenths DATETIME, micro DATETIME,
                     never DATETIME);
INSERT INTO stamps VALUES
    (1, '2021-01-01 00:00:00', '2021-01-01 10:00:00.25', '1960-01-01 00:00:00.000120', NULL),
    (2, '2021-03-04 05:06:07', '2021-01-01 10:00:00', '2021-01-01 10:00:00', NULL);
"""


def test_timestamps_declare_only_the_fractional_digits_their_values_use(
        loader: fx.Loader, make_sqlite: Any) -> None:
    """A DATETIME writes out every fractional digit it declares when it becomes text: declared
    with six for whole seconds, the copy would answer CAST(... AS CHAR) or CONCAT with
    '.000000' where a database made for these values (and the SQLite source) does not."""
    url, _ = loader(make_sqlite(STAMPS))
    types = column_types(url, "stamps")
    assert [types[c] for c in ("whole", "tenths", "micro", "never")] == [
        "datetime", "datetime(2)", "datetime(5)", "datetime"]
    rows = admin_rows(url, "SELECT CAST(whole AS CHAR), CONCAT(tenths, ''), micro FROM stamps "
                           "ORDER BY id")
    assert rows == [("2021-01-01 00:00:00", "2021-01-01 10:00:00.25",
                     dt.datetime(1960, 1, 1, 0, 0, 0, 120)),
                    ("2021-03-04 05:06:07", "2021-01-01 10:00:00.00", dt.datetime(2021, 1, 1, 10))]


def test_awkward_text_survives(loader: fx.Loader, make_sqlite: Any, tmp_path: Path) -> None:
    awkward = ["a\x00b", "line\nbreak\r\n", "tab\there", "ctrl-z \x1a", "back\\slash \\n",
               "quote ' and \" and `", "%s %(x)s {}", "  ", "\u00e9\u0301 \U0001f600 \u202e"]
    path = tmp_path / "awkward.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, k TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)",
                     [(i, value, f"{i}:{value}") for i, value in enumerate(awkward)])
    conn.execute("CREATE TABLE u (k TEXT REFERENCES t(k))")
    conn.commit()
    conn.close()
    url, report = loader(path)
    assert report.coercions == []
    assert admin_rows(url, "SELECT s FROM t ORDER BY id") == [(v,) for v in awkward]


def test_evaluation_reads_what_was_loaded(loader: fx.Loader, make_sqlite: Any) -> None:
    url, _ = loader(make_sqlite(FIDELITY))
    with connect(url) as backend:
        result = backend.execute("SELECT label, price FROM `Measures` WHERE id IN (1, 4) "
                                 "ORDER BY id")
    assert result.rows == [("Zoë  ", Decimal("12.34")), ("日本語 🙂 café", Decimal("0.00"))]


NAMES = """
CREATE TABLE "order" ("group" INTEGER PRIMARY KEY, "user" TEXT, "select" REAL);
INSERT INTO "order" VALUES (1, 'a', 1.5), (2, 'b', NULL);
CREATE TABLE "user" ("order" INTEGER REFERENCES "order"("group"), "Key" TEXT);
INSERT INTO "user" VALUES (1, 'x'), (2, 'y'), (NULL, 'z');
CREATE TABLE "OrderItems" ("ItemID" INTEGER PRIMARY KEY, "UnitPrice" DECIMAL(8, 2),
                           "Order Ref" INTEGER REFERENCES "order"("group"));
INSERT INTO "OrderItems" VALUES (1, 2.50, 1);
CREATE TABLE "Empty Table" ("SomeText" TEXT, "When" DATE, "n" INTEGER NOT NULL);
"""


def test_names_are_kept_exactly(loader: fx.Loader, make_sqlite: Any) -> None:
    url, report = loader(make_sqlite(NAMES))
    assert table_names(url) == sorted(["order", "user", "OrderItems", "Empty Table"])
    assert set(column_types(url, "OrderItems")) == {"ItemID", "UnitPrice", "Order Ref"}
    assert set(column_types(url, "order")) == {"group", "user", "select"}
    assert report.tables == {"order": 2, "user": 3, "OrderItems": 1, "Empty Table": 0}
    assert admin_rows(url, "SELECT `order`, `Key` FROM `user` ORDER BY `Key`") == [
        (1, "x"), (2, "y"), (None, "z")]
    assert column_types(url, "Empty Table") == {"SomeText": "varchar(1)", "When": "date",
                                                 "n": column_types(url, "Empty Table")["n"]}
    assert admin_rows(url, "SELECT IS_NULLABLE FROM information_schema.COLUMNS WHERE "
                           "TABLE_SCHEMA = %s AND COLUMN_NAME = 'n'", (url.database,)) == [("NO",)]


@pytest.mark.parametrize(("mode", "tables", "columns"), [
    ("lower", ["empty table", "order", "orderitems", "user"], {"itemid", "unitprice", "order ref"}),
    ("snake", ["empty_table", "order", "order_items", "user"], {"item_id", "unit_price",
                                                                "order_ref"}),
])
def test_name_modes(loader: fx.Loader, make_sqlite: Any, mode: str, tables: list[str],
                    columns: set[str]) -> None:
    url, report = loader(make_sqlite(NAMES), names=mode)
    assert table_names(url) == tables
    items = tables[2]
    assert set(column_types(url, items)) == columns
    assert items in report.tables
    with connect(url) as backend:
        schema = {t.name: t for t in backend.tables()}
    ref_column = "order ref" if mode == "lower" else "order_ref"
    assert [(fk.columns, fk.ref_table) for fk in schema[items].foreign_keys] == [
        ((ref_column,), "order")]


KEYS = """
CREATE TABLE parent (code TEXT PRIMARY KEY, note TEXT);
INSERT INTO parent VALUES ('ab', 'one'), ('cd', 'two');
CREATE TABLE child (id INTEGER PRIMARY KEY, parent_code TEXT REFERENCES parent(code),
                    amount DECIMAL(6, 2));
INSERT INTO child VALUES (1, 'ab', 1.00), (2, 'cd', 2.00), (3, NULL, 3.00);
CREATE TABLE pair (a INTEGER, b TEXT, PRIMARY KEY (a, b));
INSERT INTO pair VALUES (1, 'x'), (1, 'y');
"""


def test_keys_are_carried_and_enforced(loader: fx.Loader, make_sqlite: Any) -> None:
    url, report = loader(make_sqlite(KEYS))
    assert report.coercions == []
    with connect(url) as backend:
        schema = {t.name: t for t in backend.tables()}
    assert schema["parent"].primary_key == ("code",)
    assert {name: t.row_count for name, t in schema.items()} == {"parent": 2, "child": 3,
                                                                 "pair": 2}
    assert schema["pair"].primary_key == ("a", "b")
    assert [(fk.columns, fk.ref_table, fk.ref_columns) for fk in schema["child"].foreign_keys] \
        == [(("parent_code",), "parent", ("code",))]
    declared = {c.name: c.declared_type for c in schema["parent"].columns}
    assert declared == {"code": "varchar(2)", "note": "varchar(3)"}  # sized: keyed, short
    child = {c.name: (c.type.kind, c.declared_type) for c in schema["child"].columns}
    assert child["amount"] == ("decimal", "decimal(6,2)")
    conn = fx.admin_connection(url.set(database=None), url.database)
    try:
        with conn.cursor() as cur, pytest.raises(pymysql.err.IntegrityError):
            cur.execute("INSERT INTO child VALUES (9, 'zz', 0)")
    finally:
        conn.close()


BROKEN_KEYS = """
CREATE TABLE people (name TEXT PRIMARY KEY, city TEXT);
INSERT INTO people VALUES ('anna', 'x'), ('Anna', 'y'), ('Ánna', 'z'), ('bob', 'w'),
                          ('bob ', 'v'), (NULL, 'n');
CREATE TABLE visits (id INTEGER PRIMARY KEY, person TEXT REFERENCES people(name),
                     place INTEGER REFERENCES nowhere(id));
INSERT INTO visits VALUES (1, 'anna', NULL), (2, 'ghost', 5);
"""


def test_violated_keys_are_dropped_with_a_reason_and_rows_kept(loader: fx.Loader,
                                                               make_sqlite: Any) -> None:
    url, report = loader(make_sqlite(BROKEN_KEYS))
    assert report.tables == {"people": 6, "visits": 2}
    assert admin_rows(url, "SELECT count(*) FROM people") == [(6,)]
    by_column = {(c.table, c.column): c for c in report.coercions}
    key = by_column[("people", "name")]
    # Default collation: 'anna' = 'Anna' = 'Ánna' and 'bob' = 'bob '; plus one NULL key.
    assert "primary key not created" in key.message and "1 rows have a NULL key" in key.message
    assert key.count == 1 + 5
    assert "missing parent" in by_column[("visits", "person")].message
    assert "no table 'nowhere'" in by_column[("visits", "place")].message
    with connect(url) as backend:
        schema = {t.name: t for t in backend.tables()}
    assert schema["people"].primary_key == () and schema["visits"].foreign_keys == []


INTEGER_KEYS = """
CREATE TABLE owners (id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO owners VALUES (1, 'a'), (2, 'b'), (3, 'c');
CREATE TABLE pets (id INTEGER PRIMARY KEY, owner INTEGER REFERENCES owners(id),
                   vet INTEGER REFERENCES owners, sitter INTEGER REFERENCES owners(id));
INSERT INTO pets VALUES (1, 1, 2, 1), (2, 3, NULL, 2), (3, 7, 1, NULL), (4, NULL, 3, 3),
                        (5, 9, 1, 1), (6, 7, 3, 2);
"""


def test_integer_foreign_keys_are_checked_from_the_spooled_values(loader: fx.Loader,
                                                                  make_sqlite: Any) -> None:
    """Orphans of a single-column integer key are counted on the client, from the values kept
    while spooling: three rows point at owners 7 and 9; the other two keys hold."""
    url, report = loader(make_sqlite(INTEGER_KEYS))
    by_column = {(c.table, c.column): c for c in report.coercions}
    assert by_column[("pets", "owner")].message.endswith(
        "not created: 3 rows reference a missing parent row")
    assert ("pets", "vet") not in by_column and ("pets", "sitter") not in by_column
    with connect(url) as backend:
        schema = {t.name: t for t in backend.tables()}
    assert sorted((fk.columns, fk.ref_table) for fk in schema["pets"].foreign_keys) == [
        (("sitter",), "owners"), (("vet",), "owners")]


def pet_indexes(url: URL) -> dict[str, list[str]]:
    """Each index of the loaded ``pets`` table: its columns in key order."""
    indexes: dict[str, list[str]] = {}
    for name, column in admin_rows(url, "SELECT INDEX_NAME, COLUMN_NAME FROM "
                                        "information_schema.STATISTICS WHERE TABLE_SCHEMA = %s "
                                        "AND TABLE_NAME = 'pets' ORDER BY INDEX_NAME, "
                                        "SEQ_IN_INDEX", (url.database,)):
        indexes.setdefault(name, []).append(column)
    return indexes


def test_foreign_keys_get_the_indexes_innodb_would_give_them(loader: fx.Loader,
                                                             make_sqlite: Any) -> None:
    """Child-side indexes are built right after each table's fill: a key that is created keeps
    its index (named as the constraint), one served by a source index gets none, and one not
    created (orphans) leaves no index behind."""
    source = INTEGER_KEYS + "CREATE INDEX pets_sitter ON pets (sitter, id);"
    url, report = loader(make_sqlite(source))
    assert [(c.table, c.column) for c in report.coercions] == [("pets", "owner")]
    indexes = pet_indexes(url)
    constraints = dict(admin_rows(url, "SELECT CONSTRAINT_NAME, COLUMN_NAME FROM "
                                       "information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s "
                                       "AND TABLE_NAME = 'pets' AND REFERENCED_TABLE_NAME IS NOT NULL",
                                  (url.database,)))
    assert sorted(constraints.values()) == ["sitter", "vet"]
    vet_key = next(name for name, column in constraints.items() if column == "vet")
    assert indexes == {"PRIMARY": ["id"], "pets_sitter": ["sitter", "id"], vet_key: ["vet"]}


ALL_OWNED = """
CREATE TABLE owners (id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO owners VALUES (1, 'a'), (2, 'b'), (3, 'c');
CREATE TABLE pets (id INTEGER PRIMARY KEY, owner INTEGER REFERENCES owners(id),
                   vet INTEGER REFERENCES owners, sitter INTEGER REFERENCES owners(id));
INSERT INTO pets VALUES (1, 1, 2, 1), (2, 3, NULL, 2), (3, 2, 1, NULL);
"""


def test_a_refused_child_index_leaves_the_others(loader: fx.Loader, make_sqlite: Any,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The child indexes of a table are added by one statement; when the server refuses it (here
    a source index already holds the name the second key's index would get), each is added on
    its own, so only the refused one is left to the constraint (which meets the same refusal
    and is reported)."""
    built: dict[str, dict[int, str]] = {}
    add_keys = load_module.add_foreign_keys

    def seen_before_keys(conn: Any, database: str, plans: list[Any]) -> Any:
        built.update({plan.name: dict(plan.child_indexes) for plan in plans})
        return add_keys(conn, database, plans)

    monkeypatch.setattr(load_module, "add_foreign_keys", seen_before_keys)
    taken = "fk_" + hashlib.sha256(b"pets").hexdigest()[:12] + "_2"
    url, report = loader(make_sqlite(ALL_OWNED + f"CREATE INDEX {taken} ON pets (id, owner);"))
    # SQLite lists the keys last first: 1 is sitter, 2 vet (its index name is taken), 3 owner
    prefix = taken[:-1]
    assert built["pets"] == {1: prefix + "1", 3: prefix + "3"}
    indexes = pet_indexes(url)
    assert indexes == {"PRIMARY": ["id"], taken: ["id", "owner"], prefix + "1": ["sitter"],
                       prefix + "3": ["owner"]}
    assert [(c.table, c.column) for c in report.coercions] == [("pets", "vet")]
    assert "Duplicate key name" in report.coercions[0].message


INDEXED = """
CREATE TABLE visits (id INTEGER PRIMARY KEY, "PetId" INTEGER, day TEXT, vet TEXT, room INTEGER);
CREATE INDEX "VisitsDay" ON visits ("PetId", day);
CREATE INDEX visits_day ON visits (vet);
CREATE INDEX visits_room ON visits (room);
CREATE UNIQUE INDEX visits_slot ON visits (day, room);
INSERT INTO visits VALUES (1, 1, '2024-01-01', 'a', 1), (2, 2, '2024-01-01', 'b', 2),
                          (3, 1, '2024-01-02', 'a', 1);
"""


def _recording_alters(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ALTER TABLE clause lists load_index hands the server, as it hands them."""
    calls: list[list[str]] = []
    altered = load_index.altered

    def recording(conn: Any, table: str, clauses: list[str]) -> bool:
        calls.append(list(clauses))
        return altered(conn, table, clauses)

    monkeypatch.setattr(load_index, "altered", recording)
    return calls


def _indexes(url: URL, table: str) -> dict[str, tuple[bool, list[str]]]:
    found: dict[str, tuple[bool, list[str]]] = {}
    for name, non_unique, column in admin_rows(
            url, "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS "
                 "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY INDEX_NAME, SEQ_IN_INDEX",
            (url.database, table)):
        found.setdefault(name, (not non_unique, []))[1].append(column)
    return found


def test_plain_indexes_are_built_by_one_statement(loader: fx.Loader, make_sqlite: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the speed path: the plain indexes of a table are added together (InnoDB reads the
    table once); a UNIQUE one, which MySQL's collation may make the rows violate, alone."""
    calls = _recording_alters(monkeypatch)
    url, report = loader(make_sqlite(INDEXED))
    assert calls == [["ADD INDEX `VisitsDay` (`PetId`, `day`)", "ADD INDEX `visits_day` (`vet`)",
                      "ADD INDEX `visits_room` (`room`)"]]
    assert _indexes(url, "visits") == {
        "PRIMARY": (True, ["id"]), "VisitsDay": (False, ["PetId", "day"]),
        "visits_day": (False, ["vet"]), "visits_room": (False, ["room"]),
        "visits_slot": (True, ["day", "room"])}
    assert report.coercions == []


def test_a_refused_index_statement_builds_each_index_alone(loader: fx.Loader, make_sqlite: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Under snake names two source indexes want one name: the statement adding the plain
    indexes together is refused and changes nothing, and each is then added alone -- the second
    under a name the server picks -- so no index is lost."""
    calls = _recording_alters(monkeypatch)
    url, report = loader(make_sqlite(INDEXED), names="snake")
    assert len(calls) == 1 and len(calls[0]) == 3  # refused: what follows is one at a time
    indexes = _indexes(url, "visits")
    assert indexes.pop("PRIMARY") == (True, ["id"])
    assert indexes.pop("visits_slot") == (True, ["day", "room"])
    assert indexes.pop("visits_day") == (False, ["pet_id", "day"])
    assert sorted(indexes.values()) == [(False, ["room"]), (False, ["vet"])]
    assert report.coercions == []


def test_a_stopped_index_build_is_not_retried(admin_url: URL) -> None:
    """A refused ALTER TABLE falls back to one index at a time; a killed one (the load is being
    cancelled) raises at once instead. The ALTER waits on a table lock, so the kill is sure to
    land while it runs."""
    database = f"polysql_test_stop_{uuid.uuid4().hex[:8]}"
    setup, holder, builder = (fx.admin_connection(admin_url) for _ in range(3))
    table = f"`{database}`.`t`"
    try:
        with setup.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{database}`")
            cur.execute(f"CREATE TABLE {table} (a INT, b INT)")
        assert not load_keys.altered(builder, table, ["ADD INDEX i (missing)"])  # refused
        with holder.cursor() as cur:
            cur.execute(f"LOCK TABLES {table} WRITE")
        failure: list[BaseException] = []

        def build() -> None:
            try:
                load_keys.altered(builder, table, ["ADD INDEX i (a)", "ADD INDEX j (b)"])
            except BaseException as exc:  # noqa: BLE001 - handed to the test
                failure.append(exc)

        worker = threading.Thread(target=build)
        worker.start()
        deadline = time.monotonic() + 10
        with setup.cursor() as cur:
            while time.monotonic() < deadline:
                cur.execute("SELECT STATE FROM information_schema.PROCESSLIST WHERE ID = %s",
                            (builder.thread_id(),))
                if "lock" in str(cur.fetchone()).lower():
                    break
                time.sleep(0.02)
            cur.execute(f"KILL QUERY {int(builder.thread_id())}")
        worker.join(10)
        assert not worker.is_alive()
        assert len(failure) == 1 and isinstance(failure[0], pymysql.err.MySQLError)
        assert failure[0].args[0] == 1317
    finally:
        with contextlib.suppress(pymysql.err.MySQLError), holder.cursor() as cur:
            cur.execute("UNLOCK TABLES")
        with setup.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
        for conn in (setup, holder, builder):
            conn.close()


UNUSUAL_KEYS = """
CREATE TABLE notes (body TEXT PRIMARY KEY, n INTEGER);
INSERT INTO notes VALUES (printf('%.800c', 'x'), 1), ('short', 2);
CREATE TABLE parent (id INTEGER PRIMARY KEY, code TEXT UNIQUE);
INSERT INTO parent VALUES (1, 'A1'), (2, 'B2');
CREATE TABLE child (id INTEGER PRIMARY KEY, code TEXT REFERENCES parent(code),
                    parent_id TEXT REFERENCES parent(id));
INSERT INTO child VALUES (1, 'A1', '1'), (2, NULL, '2');
"""


def test_unusual_keys(loader: fx.Loader, make_sqlite: Any) -> None:
    url, report = loader(make_sqlite(UNUSUAL_KEYS))
    assert report.tables == {"notes": 2, "parent": 2, "child": 2}
    by_column = {(c.table, c.column): c.message for c in report.coercions}
    # 800 characters are more than an index key holds: the column stays TEXT, unkeyed.
    assert "longer than a MySQL index key allows" in by_column[("notes", "body")]
    assert column_types(url, "notes")["body"] == "text"
    assert admin_rows(url, "SELECT CHAR_LENGTH(body) FROM notes ORDER BY n") == [(800,), (5,)]
    # A key on a non-key parent column gets the index InnoDB needs; mismatched types are skipped.
    assert "InnoDB requires matching types" in by_column[("child", "parent_id")]
    assert set(by_column) == {("notes", "body"), ("child", "parent_id")}
    with connect(url) as backend:
        child = {t.name: t for t in backend.tables()}["child"]
    assert [(fk.columns, fk.ref_table, fk.ref_columns) for fk in child.foreign_keys] == [
        (("code",), "parent", ("code",))]


def test_binary_collation_keeps_case_distinct_keys(loader: fx.Loader, make_sqlite: Any) -> None:
    script = ("CREATE TABLE people (name TEXT PRIMARY KEY, city TEXT);"
              "INSERT INTO people VALUES ('anna', 'x'), ('Anna', 'y'), ('Ánna', 'z');")
    url, report = loader(make_sqlite(script), collation="utf8mb4_bin")
    assert report.coercions == []
    assert admin_rows(url, "SELECT count(*) FROM people WHERE name = 'anna'") == [(1,)]
    with connect(url) as backend:
        assert backend.tables()[0].primary_key == ("name",)
        # the default collation would also match 'Anna' and 'Ánna'
        assert backend.execute("SELECT city FROM people WHERE name = 'anna'").rows == [("x",)]


def test_default_collation_is_the_servers(loader: fx.Loader, make_sqlite: Any,
                                          admin_url: URL) -> None:
    url, _ = loader(make_sqlite("CREATE TABLE t (s TEXT); INSERT INTO t VALUES ('Straße');"))
    conn = fx.admin_connection(admin_url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@character_set_server, @@collation_server")
            charset, server_collation = cur.fetchone()
    finally:
        conn.close()
    (collation,) = admin_rows(url, "SELECT COLLATION_NAME FROM information_schema.COLUMNS "
                                   "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 't'",
                              (url.database,))[0]
    assert collation.startswith("utf8mb4_")
    if charset == "utf8mb4":
        assert collation == server_collation


def test_unknown_collation_is_a_config_error(loader: fx.Loader, make_sqlite: Any) -> None:
    with pytest.raises(ConfigError, match="not a utf8mb4 collation"):
        loader(make_sqlite("CREATE TABLE t (x INTEGER);"), collation="latin1_swedish_ci")


MIXED = """
CREATE TABLE mixed (id INTEGER PRIMARY KEY, qty INTEGER, score REAL, note);
INSERT INTO mixed VALUES (1, 5, 1.5, 'a'), (2, 'five', 9e999, 'b'), (3, 7, -9e999, 12),
                         (4, NULL, 2.0, NULL);
"""


def test_declared_and_stored_types_disagreeing_are_reported(loader: fx.Loader,
                                                            make_sqlite: Any) -> None:
    url, report = loader(make_sqlite(MIXED))
    assert report.tables == {"mixed": 4}
    types = column_types(url, "mixed")
    assert types["qty"] == "varchar(4)"  # 'five' cannot be an integer: the values win
    by_column = {(c.table, c.column): c for c in report.coercions}
    assert ("mixed", "qty") in by_column
    infinities = by_column[("mixed", "score")]
    assert infinities.count == 2 and "NULL" in infinities.message
    assert ("mixed", "note") in by_column  # an undeclared column holding text and a number
    assert admin_rows(url, "SELECT id, qty, score, note FROM mixed ORDER BY id") == [
        (1, "5", 1.5, "a"), (2, "five", None, "b"), (3, "7", None, "12"), (4, None, 2.0, None)]


def test_unchanged_source_is_skipped(loader: fx.Loader, make_sqlite: Any,
                                     admin_url: URL) -> None:
    source = make_sqlite(MIXED)
    url, first = loader(source)
    before = fx.checksum(admin_url, url.database)
    _, second = loader(source, database=url.database)
    assert second.skipped and second.fingerprint == first.fingerprint
    assert second.tables == first.tables and second.coercions == first.coercions
    assert fx.checksum(admin_url, url.database) == before
    _, renamed = loader(source, database=url.database, names="snake")
    assert not renamed.skipped  # other settings, other database: load again
    _, forced = loader(source, database=url.database, names="snake", replace=True)
    assert not forced.skipped


def test_changed_source_replaces_the_database(loader: fx.Loader, make_sqlite: Any,
                                              admin_url: URL) -> None:
    source = make_sqlite(KEYS)
    url, first = loader(source)
    with connect(url) as reader_before:
        reader = reader_before.evaluation_user
    conn = sqlite3.connect(source)
    conn.executescript("DROP TABLE pair; INSERT INTO parent VALUES ('ef', 'three');"
                       "CREATE TABLE fresh (x INTEGER); INSERT INTO fresh VALUES (42);")
    conn.commit()
    conn.close()
    _, second = loader(source, database=url.database)
    assert not second.skipped and second.fingerprint != first.fingerprint
    assert table_names(url) == ["child", "fresh", "parent"]
    assert admin_rows(url, "SELECT count(*) FROM parent") == [(3,)]
    with connect(url) as backend:
        assert backend.evaluation_user == reader  # same reader, password kept
        assert backend.execute("SELECT x FROM fresh").rows == [(42,)]
        schema = {t.name: t for t in backend.tables()}
    assert schema["child"].foreign_keys[0].ref_table == "parent"
    leftovers = admin_rows(admin_url.set(database="information_schema"),
                           "SELECT SCHEMA_NAME FROM SCHEMATA WHERE SCHEMA_NAME LIKE 'polysql\\_stage\\_%%' "
                           "OR SCHEMA_NAME LIKE 'polysql\\_old\\_%%'")
    from polysql.backends.mysql.load import OLD_PREFIX, STAGE_PREFIX, auxiliary_name

    ours = {auxiliary_name(STAGE_PREFIX, url.database), auxiliary_name(OLD_PREFIX, url.database)}
    assert ours.isdisjoint(r[0] for r in leftovers)


def test_readers_never_see_a_half_swapped_database(loader: fx.Loader, make_sqlite: Any) -> None:
    source = make_sqlite("CREATE TABLE a (x INTEGER); CREATE TABLE b (x INTEGER);"
                         "INSERT INTO a VALUES (1); INSERT INTO b VALUES (1);")
    url, _ = loader(source)
    seen: list[object] = []
    stop = threading.Event()

    def read() -> None:
        with connect(url) as backend:
            while not stop.is_set():
                result = backend.execute("SELECT (SELECT sum(x) FROM a), (SELECT sum(x) FROM b)")
                seen.append(result.rows[0] if result.ok else result.error)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for generation in range(2, 6):
            conn = sqlite3.connect(source)
            conn.execute("UPDATE a SET x = ?", (generation,))
            conn.execute("UPDATE b SET x = ?", (generation,))
            conn.commit()
            conn.close()
            _, report = loader(source, database=url.database)
            assert not report.skipped
    finally:
        stop.set()
        reader.join()
    generations = {row[0] for row in seen if isinstance(row, tuple)}
    assert len(generations) >= 2, "the reader did not overlap the reloads"
    # Every answer comes from one generation: both tables old, or both new.
    assert all(isinstance(row, tuple) and row[0] == row[1] for row in seen), [
        row for row in seen if not (isinstance(row, tuple) and row[0] == row[1])][:3]


class FailingSource(SQLiteBackend):
    """A real SQLite source whose second table breaks off after its first batch, as a crash
    mid-load would."""

    def read_table(self, table: Table, *, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
        if table.name != "child":
            yield from super().read_table(table, batch_size=batch_size)
            return
        yield from super().read_table(table, batch_size=1)
        raise LoadError("source vanished mid-copy")


def test_failed_reload_leaves_the_old_database_intact(loader: fx.Loader, make_sqlite: Any,
                                                      admin_url: URL) -> None:
    source = make_sqlite(KEYS)
    url, first = loader(source)
    before = fx.checksum(admin_url, url.database)
    conn = sqlite3.connect(source)
    conn.execute("INSERT INTO parent VALUES ('zz', 'new')")
    conn.commit()
    conn.close()
    broken: Backend = FailingSource.connect(f"sqlite:///{source}")
    try:
        with connect(url, read_only=False) as target, pytest.raises(LoadError, match="vanished"):
            target.load(broken)
    finally:
        broken.close()
    assert fx.checksum(admin_url, url.database) == before
    from polysql.backends.mysql.load import STAGE_PREFIX, auxiliary_name

    assert not fx.database_exists(admin_url, auxiliary_name(STAGE_PREFIX, url.database))
    _, retried = loader(source, database=url.database)
    assert not retried.skipped and retried.fingerprint != first.fingerprint
    assert admin_rows(url, "SELECT count(*) FROM parent") == [(3,)]


class ConnectionDroppingSource(SQLiteBackend):
    """A real SQLite source that, as the load starts reading table ``child``, has the server
    drop every connection opened since ``watch()`` (the load's own): what a server that dies
    or restarts mid-load does to them."""

    admin: URL
    before: set[int] = set()

    def watch(self, admin: URL) -> None:
        self.admin = admin
        conn = fx.admin_connection(admin)
        try:
            self.before = self._others(conn)
        finally:
            conn.close()

    @staticmethod
    def _others(conn: pymysql.connections.Connection) -> set[int]:
        """The root connections other than ``conn`` itself."""
        with conn.cursor() as cur:
            cur.execute("SELECT id FROM information_schema.processlist "
                        "WHERE user = 'root' AND id <> CONNECTION_ID()")
            return {row[0] for row in cur.fetchall()}

    def read_table(self, table: Table, *, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
        if table.name == "child":
            conn = fx.admin_connection(self.admin)
            try:
                with conn.cursor() as cur:
                    for thread in self._others(conn) - self.before:
                        with contextlib.suppress(pymysql.err.MySQLError):  # ended meanwhile
                            cur.execute(f"KILL CONNECTION {int(thread)}")
            finally:
                conn.close()
        yield from super().read_table(table, batch_size=batch_size)


def test_a_server_dropping_the_load_is_an_outage_and_keeps_the_old_copy(
        loader: fx.Loader, make_sqlite: Any, admin_url: URL) -> None:
    """Not an internal error from the driver, nor a cleanup failure hiding the cause: the
    engine is reported unavailable (a sweep abandons it rather than scoring it), and the
    previous copy is untouched."""
    source = make_sqlite(KEYS)
    url, first = loader(source)
    before = fx.checksum(admin_url, url.database)
    dropping: Any = ConnectionDroppingSource.connect(f"sqlite:///{source}")
    try:
        with connect(url, read_only=False) as target:
            dropping.watch(admin_url)
            with pytest.raises(EngineUnavailableError, match="stopped answering while "
                                                             "database .* was being loaded"):
                target.load(dropping, replace=True)
    finally:
        dropping.close()
    assert fx.checksum(admin_url, url.database) == before
    from polysql.backends.mysql.load import STAGE_PREFIX, auxiliary_name

    stage = auxiliary_name(STAGE_PREFIX, url.database)
    assert fx.database_exists(admin_url, stage)  # its connection was gone: it could not drop it
    # The next load finds the copy current and skips, and removes what the cut-off one left.
    _, again = loader(source, database=url.database)
    assert again.skipped and again.tables == first.tables
    assert not fx.database_exists(admin_url, stage)


def test_load_interrupted_after_the_swap_is_redone(loader: fx.Loader, make_sqlite: Any,
                                                   admin_url: URL) -> None:
    """A crash between the swap and the final record leaves the "pending" mark written just
    before the swap: the next load must reload (not skip, not refuse as foreign)."""
    from polysql.backends.mysql.load import PENDING

    source = make_sqlite("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
    url, first = loader(source)
    conn = fx.admin_connection(admin_url)
    try:
        with conn.cursor() as cur:
            cur.execute("UPDATE polysql_meta.loads SET fingerprint = %s WHERE db_name = %s",
                        (PENDING, url.database))
    finally:
        conn.close()
    _, again = loader(source, database=url.database)
    assert not again.skipped and again.fingerprint == first.fingerprint
    _, third = loader(source, database=url.database)
    assert third.skipped


def test_drop_removes_database_reader_and_record(loader: fx.Loader, make_sqlite: Any,
                                                 admin_url: URL) -> None:
    url, _ = loader(make_sqlite("CREATE TABLE t (x INTEGER);"))
    with connect(url) as backend:
        reader = backend.evaluation_user
    assert reader is not None and fx.account_exists(admin_url, reader)
    MySQLBackend.drop(url)
    assert not fx.database_exists(admin_url, url.database)
    assert not fx.account_exists(admin_url, reader)
    assert admin_rows(admin_url.set(database="polysql_meta"),
                      "SELECT count(*) FROM loads WHERE db_name = %s", (url.database,)) == [(0,)]


def test_read_only_backend_cannot_load(loader: fx.Loader, make_sqlite: Any) -> None:
    source = make_sqlite("CREATE TABLE t (x INTEGER);")
    url, _ = loader(source)
    with connect(url) as backend, connect(f"sqlite:///{source}") as sqlite_source, \
            pytest.raises(Exception, match="read-only"):
        backend.load(sqlite_source)


@pytest.mark.slow
def test_a_million_rows(loader: fx.Loader, tmp_path: Path) -> None:
    path = tmp_path / "big.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE big (id INTEGER PRIMARY KEY, label TEXT NOT NULL, amount DECIMAL(12, 2),
                          day DATE);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
        INSERT INTO big SELECT i, 'row ' || i, i / 4.0, date('2000-01-01', '+' || (i % 3650)
                                                             || ' days') FROM n;
    """)
    conn.commit()
    conn.close()
    started = time.perf_counter()
    url, report = loader(path)
    elapsed = time.perf_counter() - started
    assert report.tables == {"big": 1_000_000}
    assert admin_rows(url, "SELECT count(*), sum(amount), max(id), count(DISTINCT label) "
                           "FROM big") == [(1_000_000, Decimal("125000125000.00"), 1_000_000,
                                            1_000_000)]
    assert elapsed < 600


def test_short_text_becomes_varchar_within_the_row_budget(loader: fx.Loader,
                                                          make_sqlite: Any) -> None:
    """Short text outside keys is VARCHAR (MariaDB keeps GROUP BY's temporary table in memory
    over it), longer text stays TEXT, and a table with more short text than InnoDB can hold in
    its page still loads: the longest short columns stay TEXT."""
    wide = ", ".join(f"c{i:03d} TEXT" for i in range(150))
    values = ", ".join(f"'{'x' * 60}'" for _ in range(150))
    url, report = loader(make_sqlite(f"""
        CREATE TABLE labels (id INTEGER PRIMARY KEY, status TEXT, body TEXT);
        INSERT INTO labels VALUES (1, 'shipped', '{"y" * 64}'), (2, 'a ', 'short'),
                                  (3, 'a', NULL), (4, NULL, '');
        CREATE TABLE wide (id INTEGER PRIMARY KEY, {wide});
        INSERT INTO wide VALUES (1, {values});
    """))
    assert report.tables == {"labels": 4, "wide": 1}
    types = column_types(url, "labels")
    assert types["status"] == "varchar(7)" and types["body"] == "text"
    wide_types = column_types(url, "wide")
    short = [name for name, kind in wide_types.items() if kind == "varchar(60)"]
    assert 0 < len(short) < 150  # as many as the budget allows, the rest TEXT
    assert sum(kind == "text" for kind in wide_types.values()) == 150 - len(short)
    assert admin_rows(url, f"SELECT {', '.join(wide_types)} FROM wide")[0][1:] == ("x" * 60,) * 150
    # trailing spaces are kept, and grouping treats them as the collation does, as with TEXT
    assert admin_rows(url, "SELECT status, LENGTH(status) FROM labels ORDER BY id") == [
        ("shipped", 7), ("a ", 2), ("a", 1), (None, None)]
    assert admin_rows(url, "SELECT COUNT(*) FROM labels GROUP BY status ORDER BY 1") == [
        (1,), (1,), (2,)]
