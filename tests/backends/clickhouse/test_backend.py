"""ClickHouse backend specifics: the embedded engine (chdb), its evaluation directories, what the
statement screen and readonly=1 stop, values and types, and the server session.

Everything runs against the real engine. When chdb is not installed the tests skip, unless
POLYSQL_REQUIRE lists "clickhouse" (then they fail).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from polysql_testkit.availability import require_client
from polysql_testkit.interrupts import INTERRUPTED, ctrl_c_compare, sigint_to_main_thread

import polysql
from polysql.backends.clickhouse.screen import screen_statement, statements, tokenize
from polysql.core.errors import ConfigError, EngineUnavailableError, LoadError


@pytest.fixture(scope="module", autouse=True)
def _chdb_present() -> None:
    """Module-scoped, so it runs before the module-scoped databases the tests load."""
    require_client("clickhouse")


def build_sqlite(path: Path, script: str, rows: dict[str, list[tuple[Any, ...]]]) -> Path:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(script)
        for table, values in rows.items():
            marks = ", ".join("?" * len(values[0]))
            quoted = table.replace('"', '""')
            conn.executemany(f'INSERT INTO "{quoted}" VALUES ({marks})', values)
        conn.commit()
    finally:
        conn.close()
    return path


def load(source: Path, directory: Path, **kwargs: Any) -> Any:
    return polysql.load(f"sqlite:///{source}", f"clickhouse:///{directory}", **kwargs)


def tree_digest(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` with a digest of its bytes."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


ODD_SCRIPT = '''
CREATE TABLE "Odd `name` ""q""" (
    "id" INTEGER PRIMARY KEY,
    "col ` back" TEXT,
    "amount" DECIMAL(12, 4),
    "day" DATE,
    "at" DATETIME,
    "flag" BOOLEAN,
    "raw" BLOB,
    "ratio" REAL
);
CREATE TABLE "empty" ("a" INTEGER, "b" TEXT);
CREATE VIEW "flagged" AS SELECT "id" FROM "Odd `name` ""q""" WHERE "flag";
CREATE UNIQUE INDEX "u_day" ON "Odd `name` ""q""" ("day");
'''
ODD_ROWS: dict[str, list[tuple[Any, ...]]] = {
    'Odd `name` "q"': [
        (1, "Zoë  ", "12345678.1234", "0001-01-01", "2021-03-01 10:15:00.123456", 1,
         b"\xff\x00\x01", 0.1),
        (2, None, None, "9999-12-31", "1850-06-30 23:59:59", 0, b"plain", None),
        (3, "'; DROP TABLE x; --", "-0.0001", None, None, None, None, -1e308),
    ],
}


@pytest.fixture(scope="module")
def odd(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("ch_odd")
    source = build_sqlite(base / "odd.sqlite", ODD_SCRIPT, ODD_ROWS)
    directory = base / "odd"
    report = load(source, directory)
    backend = polysql.connect(f"clickhouse:///{directory}")
    yield source, directory, report, backend
    backend.close()


def test_load_is_faithful_to_the_source(odd: Any) -> None:
    source, _, report, backend = odd
    assert report.tables == {'Odd `name` "q"': 3, "empty": 0}
    result = backend.execute('SELECT * FROM `Odd \\`name\\` "q"` ORDER BY "id"')
    assert result.ok, result.error
    with sqlite3.connect(source) as conn:
        names = [r[1] for r in conn.execute("PRAGMA table_info('Odd `name` \"q\"')")]
    assert result.columns == names
    assert result.rows == [
        (1, "Zoë  ", Decimal("12345678.1234"), dt.date(1, 1, 1),
         dt.datetime(2021, 3, 1, 10, 15, 0, 123456), True, b"\xff\x00\x01", 0.1),
        (2, None, None, dt.date(9999, 12, 31), dt.datetime(1850, 6, 30, 23, 59, 59), False,
         "plain", None),
        (3, "'; DROP TABLE x; --", Decimal("-0.0001"), None, None, None, None, -1e308),
    ]
    assert result.types == ["Nullable(Int64)", "Nullable(String)", "Nullable(Decimal(12, 4))",
                            "Nullable(Date32)", "Nullable(DateTime64(6))", "Nullable(Bool)",
                            "Nullable(String)", "Nullable(Float64)"]


def test_empty_table_and_view_are_there(odd: Any) -> None:
    _, _, _, backend = odd
    empty = backend.execute('SELECT * FROM "empty"')
    assert empty.ok and empty.columns == ["a", "b"] and empty.rows == []
    assert empty.types == ["Nullable(Int64)", "Nullable(String)"]
    assert backend.execute('SELECT * FROM "flagged"').rows == [(1,)]


def test_unique_index_is_reported_not_silently_dropped(odd: Any) -> None:
    _, _, report, _ = odd
    assert [(c.table, c.column) for c in report.coercions] == [('Odd `name` "q"', "day")]
    assert "UNIQUE" in report.coercions[0].message


def test_tables_describe_the_copy(odd: Any) -> None:
    _, _, _, backend = odd
    tables = {t.name: t for t in backend.tables()}
    assert list(tables) == ['Odd `name` "q"', "empty"]
    odd_table = tables['Odd `name` "q"']
    assert odd_table.primary_key == ("id",) and odd_table.row_count == 3
    assert [str(c.type) for c in odd_table.columns] == [
        "integer", "text", "decimal(12,4)", "date", "timestamp", "boolean", "text", "float"]


def test_second_load_is_skipped_and_changed_source_reloads(tmp_path: Path) -> None:
    source = build_sqlite(tmp_path / "s.sqlite", 'CREATE TABLE "t" ("a" INTEGER);',
                          {"t": [(1,), (2,)]})
    directory = tmp_path / "db"
    first = load(source, directory)
    assert not first.skipped and first.tables == {"t": 2}
    again = load(source, directory)
    assert again.skipped and again.tables == {"t": 2}
    with polysql.connect(f"clickhouse:///{directory}") as backend:
        assert backend.execute("SELECT sum(a) FROM t").rows == [(3,)]
        with sqlite3.connect(source) as conn:
            conn.execute('INSERT INTO "t" VALUES (40)')
        reloaded = load(source, directory)
        assert not reloaded.skipped and reloaded.tables == {"t": 3}
        # the open backend follows the reload in this process
        assert backend.execute("SELECT sum(a) FROM t").rows == [(43,)]
    assert load(source, directory, replace=True).tables == {"t": 3}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_names_mode_makes_another_copy(tmp_path: Path) -> None:
    source = build_sqlite(tmp_path / "s.sqlite", 'CREATE TABLE "OrderItems" ("Item Id" INTEGER);',
                          {"OrderItems": [(7,)]})
    report = load(source, tmp_path / "snake", names="snake")
    assert report.tables == {"order_items": 1} and report.fingerprint.endswith("+names=snake")
    with polysql.connect(f"clickhouse:///{tmp_path / 'snake'}") as backend:
        assert backend.execute("SELECT item_id FROM order_items").rows == [(7,)]


def test_many_rows_arrive_in_one_part(tmp_path: Path) -> None:
    source = tmp_path / "big.sqlite"
    conn = sqlite3.connect(source)
    conn.execute("CREATE TABLE big (k INTEGER PRIMARY KEY, v TEXT)")
    conn.executemany("INSERT INTO big VALUES (?, ?)", ((i, f"v{i}") for i in range(300_000)))
    conn.commit()
    expected = conn.execute("SELECT count(*), sum(k), sum(length(v)) FROM big").fetchone()
    conn.close()
    directory = tmp_path / "big"
    load(source, directory)
    with polysql.connect(f"clickhouse:///{directory}") as backend:
        result = backend.execute("SELECT count(), sum(k), sum(length(v)) FROM big")
        assert result.rows == [expected]
        parts = backend.execute("SELECT count() FROM system.parts WHERE table = 'big' "
                                "AND active AND database = currentDatabase()")
        assert parts.rows == [(1,)]
        limited = backend.execute("SELECT k FROM big ORDER BY k", max_rows=5)
        assert limited.rows == [(i,) for i in range(5)] and limited.truncated
    # the parts the merge replaced are gone: one part directory (plus the empty "detached")
    (table_dir,) = (directory / "store").glob("*/*")
    assert sorted(p.name == "detached" for p in table_dir.iterdir() if p.is_dir()) == [False,
                                                                                        True]


def test_timestamps_declare_only_the_fractional_digits_their_values_use(tmp_path: Path) -> None:
    """toString writes out every digit a DateTime64 declares: a copy declared with six turned the
    source's '2021-03-01 10:15:00' into '2021-03-01 10:15:00.000000'. The first column is the
    sorting key, whose type ClickHouse will not change in place."""
    source = build_sqlite(tmp_path / "s.sqlite", """
        CREATE TABLE "stamps" ("at" DATETIME NOT NULL PRIMARY KEY, "tenths" DATETIME,
                               "early" DATETIME, "nothing" DATETIME);
        CREATE TABLE "full" ("id" INTEGER PRIMARY KEY, "at" DATETIME);
        """, {"stamps": [("2021-03-01 10:15:00", "2021-03-01 10:15:00.5",
                          "1969-12-31 23:59:59.000120", None),
                         ("2021-03-02 00:00:00", "2021-03-02 00:00:00.25", None, None)],
              "full": [(1, "2021-03-01 10:15:00.123456")]})
    directory = tmp_path / "db"
    load(source, directory)
    with polysql.connect(f"clickhouse:///{directory}") as backend:
        result = backend.execute("SELECT toString(at), toString(tenths), toString(early), "
                                 "toString(nothing), at, early FROM stamps ORDER BY at")
        assert result.ok, result.error
        assert result.rows == [
            ("2021-03-01 10:15:00", "2021-03-01 10:15:00.50", "1969-12-31 23:59:59.00012", None,
             dt.datetime(2021, 3, 1, 10, 15), dt.datetime(1969, 12, 31, 23, 59, 59, 120)),
            ("2021-03-02 00:00:00", "2021-03-02 00:00:00.25", None, None,
             dt.datetime(2021, 3, 2), None)]
        types = backend.execute("SELECT at, tenths, early, nothing FROM stamps").types
        assert types == ["DateTime64(0)", "Nullable(DateTime64(2))", "Nullable(DateTime64(5))",
                         "Nullable(DateTime64(0))"]
        full = backend.execute("SELECT toString(at) FROM full")
        assert full.rows == [("2021-03-01 10:15:00.123456",)]
        assert full.types == ["Nullable(String)"]
        assert sorted(t.name for t in backend.tables()) == ["full", "stamps"]
    # the scratch tables the rows first went into left nothing behind
    assert all(any(folder.iterdir()) for folder in (directory / "store").iterdir())
    assert len(list((directory / "store").glob("*/*"))) == 2


def test_copy_loaded_with_six_digit_timestamps_is_loaded_again(tmp_path: Path) -> None:
    source = build_sqlite(tmp_path / "s.sqlite", 'CREATE TABLE "t" ("at" DATETIME);',
                          {"t": [("2021-03-01 10:15:00",)]})
    directory = tmp_path / "db"
    load(source, directory)
    assert load(source, directory).skipped
    manifest = directory / "polysql.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    del data["layout"]  # as copies were written before timestamps were narrowed
    manifest.write_text(json.dumps(data), encoding="utf-8")
    again = load(source, directory)
    assert not again.skipped and again.tables == {"t": 1}
    assert load(source, directory).skipped


# -- values and types ----------------------------------------------------------------------

def test_clickhouse_values_become_python_values(odd: Any) -> None:
    _, _, _, backend = odd
    result = backend.execute(
        "SELECT toDateTime('2021-01-02 03:04:05') AS dt, CAST('b' AS Enum('a' = 1, 'b' = 2)) AS e,"
        " toIPv4('10.0.0.1') AS ip, toUUID('61f0c404-5cb3-11e7-907b-a6006ad3dba0') AS u,"
        " toInt128('-170141183460469231731687303715884105728') AS big, [1, 2] AS arr,"
        " map('k', 'v') AS m, (1, 'x') AS tup, unhex('C0FFEE') AS blob, 7 / 2 AS div,"
        " intDiv(7, 2) AS idiv, NULL AS n")
    assert result.ok, result.error
    assert result.rows == [(dt.datetime(2021, 1, 2, 3, 4, 5), "b", "10.0.0.1",
                            "61f0c404-5cb3-11e7-907b-a6006ad3dba0",
                            -170141183460469231731687303715884105728, [1, 2], {"k": "v"},
                            (1, "x"), b"\xc0\xff\xee", 3.5, 3, None)]
    assert result.types[:3] == ["DateTime", "Enum8('a' = 1, 'b' = 2)", "IPv4"]
    assert result.types[-1] == "Nullable(Nothing)"


def test_errors_are_classified(odd: Any) -> None:
    _, _, _, backend = odd
    cases = {
        "SELEC 1": "syntax",
        "SELECT no_such_function(1)": "runtime",
        "SELECT * FROM no_such_table": "runtime",
        "SELECT throwIf(1)": "runtime",
        "SELECT 1 SETTINGS max_execution_time = 0": "forbidden",
        "SHOW TABLES": "forbidden",
        "EXPLAIN SELECT 1": "forbidden",
        "SELECT 1 FORMAT JSON": "forbidden",
    }
    for sql, kind in cases.items():
        result = backend.execute(sql)
        assert result.error is not None and result.error.kind == kind, (sql, result.error)
        assert result.error.sqlstate is None and result.error.message


def test_version_names_engine_and_chdb(odd: Any) -> None:
    import chdb

    _, _, _, backend = odd
    version = backend.version()
    engine_version = backend.execute("SELECT version()").rows[0][0]
    assert version == f"ClickHouse {engine_version} (chdb {chdb.__version__}, embedded)"
    assert not backend.is_emulated(backend.url) and backend.emulated is False


# -- safety --------------------------------------------------------------------------------

HOSTILE = [
    "SELECT 1 INTO OUTFILE '{tmp}/out.csv'",
    "SELECT 1 INTO/**/OUTFILE '{tmp}/out.csv'",
    "SELECT 1 into outfile '{tmp}/out.csv' TRUNCATE",
    "SELECT file('/etc/hostname')",
    "SELECT `file`('/etc/hostname')",
    "SELECT file /* x */ ('/etc/hostname')",
    "SELECT * FROM file('/etc/passwd', 'LineAsString')",
    "SELECT * FROM url('http://127.0.0.1:9/x', 'CSV', 'a String')",
    "SELECT * FROM s3('http://127.0.0.1:9/b/x.csv', 'CSV', 'a String')",
    "SELECT * FROM remote('127.0.0.1:9000', system.one)",
    "SELECT * FROM executable('touch {tmp}/pwned', 'TSV', 'a String')",
    "SELECT * FROM mysql('127.0.0.1:3306', 'db', 't', 'u', 'p')",
    "SELECT * FROM python(secret)",
    "INSERT INTO FUNCTION file('{tmp}/out.csv', 'CSV', 'a UInt8') SELECT 1",
    "USE system",
    "KILL QUERY WHERE 1",
    "SET readonly = 0",
    "SYSTEM SHUTDOWN",
    "OPTIMIZE TABLE `empty` FINAL",
    "TRUNCATE TABLE `empty`",
    "DETACH TABLE `empty`",
    "RENAME TABLE `empty` TO hacked",
    "CREATE TABLE hacked ENGINE = Memory AS SELECT 1",
    "ALTER TABLE `empty` DELETE WHERE 1",
    "SELECT 1; USE system",
    "SELECT 1; /* ; */ DROP TABLE `empty`",
    "SELECT '\\'; DROP TABLE `empty`; --'; SELECT 2",
    "SELECT $$;$$; KILL QUERY WHERE 1",
]


@pytest.mark.parametrize("sql", HOSTILE)
def test_hostile_statement_is_forbidden_and_changes_nothing(odd: Any, sql: str,
                                                            tmp_path: Path) -> None:
    _, directory, _, backend = odd
    before = tree_digest(directory)
    result = backend.execute(sql.format(tmp=tmp_path))
    assert result.error is not None and result.error.kind == "forbidden", (sql, result)
    assert list(tmp_path.iterdir()) == []
    assert tree_digest(directory) == before
    assert backend.execute("SELECT currentDatabase() LIKE 'polysql_%'").rows == [(True,)]
    assert backend.execute('SELECT count() FROM "empty"').rows == [(0,)]


@pytest.mark.parametrize("sql", [
    "DROP TABLE `empty`", "INSERT INTO `empty` VALUES (1, 'x')", "CREATE TABLE hacked (a Int8) "
    "ENGINE = Memory", "SELECT * FROM file('/etc/passwd', 'LineAsString')",
    "SELECT * FROM url('http://127.0.0.1:9/x', 'CSV', 'a String')",
    "SELECT 1 SETTINGS readonly = 0", "SET max_execution_time = 0",
    "INSERT INTO FUNCTION file('{tmp}/out.csv', 'CSV', 'a UInt8') SELECT 1",
])
def test_readonly_alone_refuses_writes_and_outside_access(odd: Any, sql: str,
                                                          tmp_path: Path) -> None:
    """The engine barrier on its own (no statement screen)."""
    _, directory, _, _ = odd
    before = tree_digest(directory)
    with polysql.connect(f"clickhouse:///{directory}", screen=False) as unscreened:
        result = unscreened.execute(sql.format(tmp=tmp_path))
        assert result.error is not None and result.error.kind == "forbidden", (sql, result)
        assert "READONLY" in result.error.message
    assert list(tmp_path.iterdir()) == [] and tree_digest(directory) == before


def test_evaluation_leaves_the_directory_untouched(odd: Any) -> None:
    _, directory, _, backend = odd
    before = tree_digest(directory)
    for _ in range(3):
        assert backend.execute('SELECT count(*) FROM `Odd \\`name\\` "q"`').rows == [(3,)]
    with polysql.connect(f"clickhouse:///{directory}") as other:
        assert other.execute('SELECT * FROM "flagged"').ok
    assert tree_digest(directory) == before


def test_another_process_reads_the_same_directory(odd: Any) -> None:
    _, directory, _, backend = odd
    before = tree_digest(directory)
    script = textwrap.dedent(f"""
        import polysql
        with polysql.connect({f"clickhouse:///{directory}"!r}) as b:
            print(b.execute('SELECT count() FROM "flagged"').rows[0][0])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "1"
    assert backend.execute('SELECT count() FROM "flagged"').rows == [(1,)]
    assert tree_digest(directory) == before


# -- timeouts ------------------------------------------------------------------------------

def test_engine_stops_a_slow_statement(odd: Any) -> None:
    _, _, _, backend = odd
    result = backend.execute(
        "SELECT count() FROM numbers(1e13) WHERE NOT ignore(sipHash64(number))", timeout=0.3)
    assert result.error is not None and result.error.kind == "timeout"
    assert "TIMEOUT_EXCEEDED" in result.error.message
    assert backend.execute("SELECT 1").rows == [(1,)]


def test_client_backstop_when_the_engine_does_not_stop(odd: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """sleep() blocks between the engine's timeout checks: with a short grace the client gives
    up waiting first, and the next statement gets a fresh connection."""
    from polysql.backends.clickhouse import execute as _clickhouse_exec
    monkeypatch.setattr(_clickhouse_exec, "BACKSTOP_GRACE", 0.05)
    _, _, _, backend = odd
    result = backend.execute("SELECT sleep(3)", timeout=0.1)
    assert result.error is not None and result.error.kind == "timeout", result
    assert "client stopped waiting" in result.error.message
    assert backend.execute("SELECT 2", timeout=0.1).rows == [(2,)]



SLOW_CLICKHOUSE = "SELECT count() FROM numbers(1e13) WHERE NOT ignore(sipHash64(number))"


def test_ctrl_c_stops_the_statement_and_raises_keyboard_interrupt(odd: Any) -> None:
    _, _, _, backend = odd
    started = time.perf_counter()
    with sigint_to_main_thread(), pytest.raises(KeyboardInterrupt):
        backend.execute(SLOW_CLICKHOUSE, timeout=300)
    assert time.perf_counter() - started < 30
    assert backend.execute("SELECT 3").rows == [(3,)]


def test_ctrl_c_on_polysql_compare_exits_cleanly(odd: Any) -> None:
    """The statement is stopped before the interpreter exits: chdb still running one while the
    process shut down crashed it (SIGSEGV after 'interrupted')."""
    _, directory, _, _ = odd
    # after 6 s: start-up (chdb's import) done, the gold query running
    code, output = ctrl_c_compare(f"clickhouse:///{directory}", SLOW_CLICKHOUSE, after=6)
    assert code == 130, output
    assert output.strip() == INTERRUPTED

# -- URLs, connection --------------------------------------------------------------------------

def test_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EngineUnavailableError, match="nope"):
        polysql.connect(f"clickhouse:///{tmp_path / 'nope'}")
    assert not (tmp_path / "nope").exists()


def test_reserved_setting_is_a_config_error(odd: Any) -> None:
    # an unknown connect option: tests/conformance/test_load_lifecycle.py
    _, directory, _, _ = odd
    with pytest.raises(ConfigError, match="readonly"):
        polysql.connect(f"clickhouse:///{directory}?readonly=0")


def test_url_settings_apply_to_evaluated_statements(odd: Any) -> None:
    _, directory, _, _ = odd
    with polysql.connect(f"clickhouse:///{directory}?join_use_nulls=1") as backend:
        assert backend.execute("SELECT toUInt8(getSetting('join_use_nulls'))").rows == [(1,)]


def test_temporary_database_url(tmp_path: Path) -> None:
    source = build_sqlite(tmp_path / "s.sqlite", 'CREATE TABLE "t" ("a" INTEGER);', {"t": [(5,)]})
    with polysql.connect("clickhouse://", read_only=False) as target, \
            polysql.connect(f"sqlite:///{source}") as src:
        assert target.execute("SELECT a FROM t").error is not None
        target.load(src)
        assert target.execute("SELECT a FROM t").rows == [(5,)]
        directory = target.directory
        assert directory is not None and directory.exists()
    assert not directory.exists()


def test_refuses_to_overwrite_a_foreign_directory(tmp_path: Path) -> None:
    source = build_sqlite(tmp_path / "s.sqlite", 'CREATE TABLE "t" ("a" INTEGER);', {"t": [(1,)]})
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep")
    with pytest.raises(LoadError, match="not empty"):
        load(source, foreign)
    assert (foreign / "precious.txt").read_text() == "keep"


def test_evaluation_urls(tmp_path: Path) -> None:
    from polysql.backends.clickhouse.backend import ClickHouseBackend
    from polysql.core.urls import parse_url

    embedded = ClickHouseBackend.evaluation_url(parse_url("clickhouse://"), dataset="bird dev",
                                                db_id="Retail", cache_dir=tmp_path)
    assert embedded.database == str(tmp_path / "engines" / "clickhouse" / "bird_dev" / "Retail")
    server = ClickHouseBackend.evaluation_url(parse_url("clickhouse://u@h:8123/"),
                                              dataset="bird", db_id="retail", cache_dir=tmp_path)
    assert server.host == "h" and server.database == "polysql_bird_retail"


# -- the statement screen ------------------------------------------------------------------

@pytest.mark.parametrize(("sql", "count"), [
    ("SELECT 1", 1), ("SELECT 1;", 1), ("SELECT 1; ;", 1), ("SELECT ';'", 1),
    ("SELECT 'a\\';b'", 1), ("SELECT 'a'';b'", 1), ("SELECT `a;b` FROM t", 1),
    ('SELECT "a"";b" FROM t', 1), ("SELECT 1 -- ; x\n", 1), ("SELECT 1 // ;\n", 1),
    ("SELECT 1 # ;", 1), ("SELECT /* /* ; */ ; */ 1", 1), ("SELECT $$;$$", 1),
    ("SELECT $x$;$y$;$x$", 1), ("SELECT 1; SELECT 2", 2), ("SELECT 1 #; SELECT 2", 2),
    ("SELECT x';'", 1), ("SELECT 1e-5; SELECT 2", 2), ("SELECT 1;--c\nSELECT 2", 2),
])
def test_statements_split_like_clickhouse(sql: str, count: int) -> None:
    assert len(statements(tokenize(sql))) == count


@pytest.mark.parametrize("sql", ["SELECT 1; SELECT 2", "SELECT 1e-5; SELECT 2",
                                 "SELECT 1;--c\nSELECT 2", "SELECT 1 // x\n; SELECT 2"])
def test_clickhouse_agrees_on_multiple_statements(sql: str) -> None:
    """Independent check of the splitter: a writable session of the engine itself runs each of
    these as two statements (two result sets)."""
    from polysql.backends.clickhouse.connect_embedded import engine

    conn = engine().connect({})
    try:
        output = conn.query(sql, "JSONEachRow").bytes().decode().splitlines()
    finally:
        conn.close()
    assert len([line for line in output if line.strip()]) == 2


def test_screen_keeps_legitimate_queries() -> None:
    for sql in ["SELECT format('{} {}', 'a', 'b')", "WITH t AS (SELECT 1 AS x) SELECT x FROM t",
                "(SELECT 1) UNION ALL (SELECT 2)", "SELECT 'outfile'", "FROM numbers(3) SELECT *",
                "SELECT filesystemAvailable() > 0", "SELECT profile FROM t"]:
        screened = screen_statement(sql)
        if "outfile" in sql:
            assert screened.refusal is not None  # the word is refused wherever it appears
        else:
            assert screened.refusal is None and screened.query, (sql, screened)


def test_server_session_logic_on_the_embedded_engine(tmp_path: Path) -> None:
    """The server code path (clickhouse-connect client API: staging database, RENAME DATABASE
    swap, load journal, per-query readonly settings, Native streaming) run against
    clickhouse-connect's in-process chdb client, which offers the same client API."""
    from clickhouse_connect.driver._chdbclient import ChdbClient

    from polysql.backends.clickhouse.connect_embedded import engine
    from polysql.backends.clickhouse.connect_server import ServerSession
    from polysql.backends.clickhouse.screen import Screened

    source_path = build_sqlite(tmp_path / "s.sqlite", ODD_SCRIPT, ODD_ROWS)
    client = ChdbClient(path=str(engine().home))
    database = f"polysql_server_test_{os.getpid()}"
    session = ServerSession(client, database, {})
    try:
        with polysql.connect(f"sqlite:///{source_path}") as source:
            report = session.load(source, fingerprint=None, replace=False, names="exact",
                                  target_name="server")
            assert report.tables == {'Odd `name` "q"': 3, "empty": 0}
            assert session.load(source, fingerprint=None, replace=False, names="exact",
                                target_name="server").skipped
            assert not session.load(source, fingerprint=None, replace=True, names="exact",
                                    target_name="server").skipped
        client.command(f"USE `{database}`")
        result = session.run(Screened(sql='SELECT "id", "raw", "day" FROM `Odd \\`name\\` "q"` '
                                          'ORDER BY "id"'),
                             timeout=5, max_rows=2, engine="clickhouse", started=0.0)
        assert result.ok, result.error
        assert result.rows == [(1, b"\xff\x00\x01", dt.date(1, 1, 1)), (2, "plain",
                                                                          dt.date(9999, 12, 31))]
        assert result.truncated
        empty = session.run(Screened(sql='SELECT "a" FROM "empty"'), timeout=5, max_rows=10,
                            engine="clickhouse", started=0.0)
        assert empty.ok and empty.columns == ["a"] and empty.rows == []
        refused = session.run(Screened(sql="SELECT 1 SETTINGS readonly = 0"), timeout=5,
                              max_rows=10, engine="clickhouse", started=0.0)
        assert refused.error is not None and refused.error.kind == "forbidden"
        # This "server" runs in the machine's zone (the suite's, far from UTC), as a server set
        # up elsewhere would: naive timestamps are still read and handed back as UTC.
        assert client.command("SELECT timezone()") != "UTC"
        naive = "'2021-03-02 08:00:00'"
        zoned = session.run(Screened(sql=f"SELECT toUnixTimestamp(toDateTime({naive})), "
                                         f"toDateTime64({naive}, 6)"),
                            timeout=5, max_rows=10, engine="clickhouse", started=0.0)
        assert zoned.ok, zoned.error
        assert zoned.rows == [(1614672000, dt.datetime(2021, 3, 2, 8, 0))]
        assert [t.name for t in session.tables()] == ['Odd `name` "q"', "empty"]
    finally:
        client.command(f"DROP DATABASE IF EXISTS `{database}` SYNC")
        client.command(f"DELETE FROM polysql_meta.loads WHERE database = '{database}'")
        client.close()
