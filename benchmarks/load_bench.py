"""Load speed: polysql's bulk loaders against established tools, on the same SQLite file.

Generates a SQLite database (default 1,000,000 rows over four tables, with integers, text with
accents and trailing spaces, NUMERIC money, REAL, dates, datetimes, booleans and NULLs), then loads
it into PostgreSQL, DuckDB and MariaDB/MySQL with the ``polysql load`` command -- timed as a whole process,
interpreter start-up included -- and, in the same run, with the baselines:

* PostgreSQL: ``pgloader`` (Debian package), where installed.
* DuckDB: DuckDB's own SQLite reader (its ``sqlite`` extension: ATTACH the file, then COPY FROM
  DATABASE), where ``--duckdb-python`` names a Python whose duckdb can load that extension:
  either from the PyPI wheel ``duckdb-extension-sqlite-scanner`` of the same version (pinned to
  its duckdb release, usually older than polysql's, hence a separate interpreter), or by
  downloading it. Without it the rows/second, start-up included, stand on their own.
* MariaDB/MySQL: a plain ``LOAD DATA LOCAL INFILE`` of each table run by the ``mariadb``/``mysql``
  command-line client into tables created with the same types and primary keys (the floor a
  loader built on LOAD DATA can reach). The tab-separated files it reads are dumped from the
  SQLite file once, *outside* the timed part; the timed part is the client process: CREATE
  DATABASE, CREATE TABLE and LOAD DATA, no foreign keys. ``LOAD DATA + keys`` is the same
  client run that also ends with the foreign keys of the source, and the indexes InnoDB needs
  under them, as polysql's copy has them: the same end state, for a like-for-like ratio.
  ``sqlite3 + LOAD DATA`` (and ``+ keys``) is the whole job a user does without polysql, where
  the ``sqlite3`` command-line shell is installed: the shell dumps each table (tab-separated,
  ``\\N`` for NULL) inside the timed part, then the same client run loads the files. The
  generated text holds no tab, newline or backslash, so the shell's unescaped output is
  LOAD DATA's format; its reals are printed to 15 digits, so that copy is not checked. Also
  ``sqlite3mysql`` (PyPI ``sqlite3-to-mysql``) where installed, and polysql's own INSERT
  fallback (``polysql load`` with LOAD DATA switched off -- the multi-row INSERT path every load
  took before LOAD DATA, and the one a server with ``local_infile`` OFF still gets).

Every contender is timed building its copy from nothing (the copy of the round before, polysql's
included, is dropped untimed) and starts once the machine is quiet again: a server goes on
working after a load returns (InnoDB flushing pages, PostgreSQL's autovacuum analysing the new
tables), and the next contender would otherwise pay for it.

It prints rows/second side by side with the ratios, and the CPU-seconds behind each time (the
loader's processes, and a server running on this machine). A row-for-row checksum proves each
polysql copy identical to the source.

    python benchmarks/load_bench.py [--rows 1000000] [--rounds 1] [--pg-url URL] [--mysql-url URL]
                                    [--duckdb-python PATH]

    # a DuckDB baseline, e.g.:
    python -m venv /tmp/duck && /tmp/duck/bin/pip install duckdb==1.5.5 \
        duckdb-extension-sqlite-scanner==1.5.5
    python benchmarks/load_bench.py --duckdb-python /tmp/duck/bin/python

Timings are wall-clock on this machine; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from bytecode import as_installed
from cpu_time import children_cpu, server_cpu_reader, wait_until_quiet
from figures import Bar, draw_bars, figure_path

import polysql
from polysql.core.errors import PolysqlError
from polysql.core.urls import parse_url


def generate(path: Path, rows: int) -> dict[str, int]:
    """Four tables sharing ``rows`` rows: stores 1%, customers 9%, orders 40%, order_lines 50%."""
    counts = {"stores": max(10, rows // 100), "customers": max(10, rows * 9 // 100),
              "orders": max(10, rows * 40 // 100)}
    counts["order_lines"] = max(10, rows - sum(counts.values()))
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE stores (store_id INTEGER PRIMARY KEY, "StoreName" TEXT NOT NULL, city TEXT,
                             opened DATE, is_open BOOLEAN);
        CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, "FirstName" TEXT, code CHAR(8),
                                signup DATETIME, score REAL);
        CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers,
                             store_id INTEGER REFERENCES stores, ordered_at DATETIME,
                             total NUMERIC(12,2), note TEXT);
        CREATE TABLE order_lines (order_id INTEGER REFERENCES orders, line_no INTEGER,
                                  qty INTEGER, unit_price NUMERIC(10,2), discount REAL,
                                  PRIMARY KEY (order_id, line_no));
    """)
    cte = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
    con.execute(cte + """INSERT INTO stores SELECT i, 'Store ' || i,
        CASE i % 4 WHEN 0 THEN 'Ærøskøbing' WHEN 1 THEN 'São Paulo' WHEN 2 THEN 'Zürich' ELSE NULL END,
        date('2010-01-01', '+' || (i % 4000) || ' days'), i % 3 <> 0 FROM n""", (counts["stores"],))
    con.execute(cte + """INSERT INTO customers SELECT i,
        CASE i % 5 WHEN 0 THEN 'José' WHEN 1 THEN 'Zoë' WHEN 2 THEN 'Łukasz' WHEN 3 THEN NULL ELSE 'Ann' END,
        substr('C' || i || '        ', 1, 8),
        datetime('2015-01-01 08:00:00', '+' || (i * 37 % 3000000) || ' minutes'),
        CASE WHEN i % 11 = 0 THEN NULL ELSE (i % 1000) / 7.0 END FROM n""", (counts["customers"],))
    con.execute(cte + """INSERT INTO orders SELECT i, 1 + i % ?, 1 + i % ?,
        datetime('2020-01-01 00:00:00', '+' || (i * 13 % 50000000) || ' seconds'),
        round((i % 100000) / 100.0, 2),
        CASE WHEN i % 7 = 0 THEN 'gift  ' WHEN i % 7 = 1 THEN NULL ELSE 'n' || (i % 97) END FROM n""",
                (counts["orders"], counts["customers"], counts["stores"]))
    con.execute(cte + """INSERT INTO order_lines SELECT 1 + (i - 1) / 2, 1 + (i - 1) % 2, 1 + i % 9,
        round((i % 50000) / 100.0, 2), CASE WHEN i % 4 = 0 THEN 0.1 ELSE 0 END FROM n""",
                (counts["order_lines"],))
    con.commit()
    con.close()
    return counts


def canonical(value: Any) -> str:
    """One text form per value, equal across engines for equal data."""
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (float, Decimal)):
        number = float(value)
        return "nan" if math.isnan(number) else f"{number:.9g}"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    text = str(value)
    # SQLite keeps dates and booleans as text/ints; render them the way typed engines return them
    return text


def checksum(rows: Iterable[tuple[Any, ...]]) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update("\x1f".join(canonical(v) for v in row).encode())
        digest.update(b"\x1e")
    return digest.hexdigest()[:16]


def table_checksums(url: str, tables: dict[str, int], dialect_quote: str) -> dict[str, str]:
    out = {}
    with polysql.connect(url) as backend:
        for table in backend.tables():
            if table.name not in tables:
                continue
            q = dialect_quote
            cols = ", ".join(f"{q}{c.name}{q}" for c in table.columns)
            keys = ", ".join(f"{q}{c}{q}" for c in (table.primary_key or (table.columns[0].name,)))
            result = backend.execute(f"SELECT {cols} FROM {q}{table.name}{q} ORDER BY {keys}",
                                     timeout=900, max_rows=10 * sum(tables.values()))
            if result.error:
                raise SystemExit(f"checksum query failed on {url}: {result.error.message}")
            rows = [tuple(_typed_source_value(c.type.kind, v) for c, v in zip(table.columns, row, strict=True))
                    for row in result.rows] if backend.name == "sqlite" else result.rows
            out[table.name] = checksum(rows)
    return out


def _typed_source_value(kind: str, value: Any) -> Any:
    """SQLite stores dates, datetimes and booleans as text/ints; read them as the typed engines do."""
    if value is None:
        return None
    if kind == "boolean":
        return bool(value)
    if kind == "timestamp" and isinstance(value, str):
        return datetime.fromisoformat(value)
    if kind == "date" and isinstance(value, str):
        return date.fromisoformat(value)
    return value


@dataclass
class Contender:
    """One way of loading the source: timed as ``action``, with ``before`` run untimed first."""

    target: str
    label: str
    action: Callable[[], None]
    before: Callable[[], None] | None = None
    best: float | None = None
    failed: bool = False
    # CPU-seconds of the fastest run: the processes it started, and the target server's (None
    # when the server is not on this machine)
    client_cpu: float | None = None
    server_cpu: float | None = None


def race(contenders: list[Contender], rounds: int,
         servers: dict[str, Callable[[], float] | None]) -> None:
    """Run every contender once per round, in turn, keeping each one's fastest time: on a busy
    machine noise only ever adds, and taking turns spreads it over all of them alike. The CPU
    time of the fastest run is kept with it (``servers``: per target, a reading of its local
    server's CPU-seconds)."""
    for _ in range(rounds):
        for contender in contenders:
            if contender.failed:
                continue
            if contender.before is not None:
                contender.before()
            wait_until_quiet()  # the previous contender's server work done: the same machine
            server = servers.get(contender.target)
            client_before, server_before = children_cpu(), server() if server else 0.0
            started = time.perf_counter()
            try:
                contender.action()
            except (PolysqlError, subprocess.CalledProcessError, OSError) as exc:
                print(f"  {contender.label}: failed: {exc}", file=sys.stderr)
                contender.failed, contender.best = True, None
                continue
            elapsed = time.perf_counter() - started
            if contender.best is None or elapsed < contender.best:
                contender.best = elapsed
                contender.client_cpu = children_cpu() - client_before
                contender.server_cpu = server() - server_before if server else None


def run_tool(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=3600)


def server_admin(url: str, sql: str) -> None:
    """Run one administrative statement (create/drop a database) on a server."""
    parsed = parse_url(url)
    if parsed.get_backend_name().startswith("postgres"):
        import psycopg

        with psycopg.connect(host=parsed.host or "127.0.0.1", port=parsed.port or 5432,
                             user=parsed.username or "postgres", password=parsed.password,
                             dbname="postgres", autocommit=True) as con:
            con.execute(sql)
    else:
        import pymysql

        con = pymysql.connect(host=parsed.host or "127.0.0.1", port=parsed.port or 3306,
                              user=parsed.username or "root", password=parsed.password or "")
        with con.cursor() as cur:
            cur.execute(sql)
        con.close()


# The anchor's tables: the types polysql chooses for the generated data, with the primary keys.
ANCHOR_TABLES = {
    "stores": "store_id BIGINT PRIMARY KEY, StoreName TEXT NOT NULL, city TEXT, opened DATE, "
              "is_open BOOLEAN",
    "customers": "customer_id BIGINT PRIMARY KEY, FirstName TEXT, code TEXT, signup DATETIME(6), "
                 "score DOUBLE",
    "orders": "order_id BIGINT PRIMARY KEY, customer_id BIGINT, store_id BIGINT, "
              "ordered_at DATETIME(6), total DECIMAL(12,2), note TEXT",
    "order_lines": "order_id BIGINT, line_no BIGINT, qty BIGINT, unit_price DECIMAL(10,2), "
                   "discount DOUBLE, PRIMARY KEY (order_id, line_no)",
}
_TSV_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n"})


def dump_tsv(source: Path, folder: Path) -> dict[str, Path]:
    """Each table as LOAD DATA's default format (tab-separated, \\N for NULL, backslash
    escapes), the form ``SELECT ... INTO OUTFILE`` writes. Not timed."""
    con = sqlite3.connect(source)
    files = {}
    for table in ANCHOR_TABLES:
        path = folder / f"{table}.tsv"
        with path.open("w", encoding="utf-8", newline="") as out:
            for row in con.execute(f'SELECT * FROM "{table}"'):
                out.write("\t".join("\\N" if v is None else str(v).translate(_TSV_ESCAPES)
                                    for v in row) + "\n")
        files[table] = path
    con.close()
    return files


def mysql_client_command(url: str, client: str) -> list[str]:
    parsed = parse_url(url)
    cmd = [client, "--local-infile=1", "-h", parsed.host or "127.0.0.1", "-P",
           str(parsed.port or 3306), "-u", parsed.username or "root"]
    if parsed.password:
        cmd.append(f"-p{parsed.password}")
    return cmd


def dump_with_shell(shell: str, source: Path, folder: Path) -> dict[str, Path]:
    """Each table dumped by the ``sqlite3`` shell, one process per table as a script would run
    it; timed, as part of the whole job."""
    files = {}
    for table in ANCHOR_TABLES:
        path = folder / f"{table}.tsv"
        with path.open("wb") as out:
            subprocess.run([shell, "-batch", "-tabs", "-nullvalue", "\\N", str(source),
                            f'SELECT * FROM "{table}"'], check=True, stdout=out,
                           stderr=subprocess.PIPE, timeout=3600)
        files[table] = path
    return files


def shell_dump_is_exact(source: Path) -> bool:
    """Whether the shell's unescaped tab-separated dump reads back as the text it holds: no
    tab, newline or backslash anywhere (LOAD DATA would read those as separators or escapes)."""
    con = sqlite3.connect(source)
    try:
        for table in ANCHOR_TABLES:
            columns = [row[1] for row in con.execute(f'PRAGMA table_info("{table}")')]
            special = " OR ".join(
                f"instr(CAST(\"{c}\" AS TEXT), char({code})) > 0"
                for c in columns for code in (9, 10, 13, 92))
            if con.execute(f'SELECT count(*) FROM "{table}" WHERE {special}').fetchone()[0]:
                return False
        return True
    finally:
        con.close()


# The source's foreign keys, as the anchor adds them when it keeps them (the child's index
# first, which InnoDB needs under a foreign key; with the checks off, so no table is copied).
ANCHOR_KEYS = [
    "ALTER TABLE orders ADD INDEX (customer_id), ADD INDEX (store_id)",
    "SET SESSION foreign_key_checks = 0",
    "ALTER TABLE orders ADD FOREIGN KEY (customer_id) REFERENCES customers (customer_id), "
    "ADD FOREIGN KEY (store_id) REFERENCES stores (store_id)",
    "ALTER TABLE order_lines ADD FOREIGN KEY (order_id) REFERENCES orders (order_id)",
]


def load_data_anchor(url: str, client: str, database: str, files: dict[str, Path], *,
                     keys: bool = False) -> None:
    """CREATE DATABASE, the tables and one LOAD DATA LOCAL INFILE each, in one client process;
    ``keys``: then the source's foreign keys too."""
    script = [f"CREATE DATABASE {database} CHARACTER SET utf8mb4", f"USE {database}"]
    for table, columns in ANCHOR_TABLES.items():
        script.append(f"CREATE TABLE {table} ({columns}) ENGINE=InnoDB")
        script.append(f"LOAD DATA LOCAL INFILE '{files[table]}' INTO TABLE {table} "
                      f"CHARACTER SET utf8mb4")
    if keys:
        script.extend(ANCHOR_KEYS)
    run_tool(mysql_client_command(url, client) + ["-e", ";\n".join(script)])


# Run by the --duckdb-python interpreter: DuckDB copies the SQLite file with its own reader. The
# extension comes from the duckdb-extension-sqlite-scanner wheel when installed, else from
# DuckDB's extension repository.
DUCKDB_READER = """
import os, sys
import duckdb
source, target = sys.argv[1], sys.argv[2]
con = duckdb.connect(target, config={"allow_unsigned_extensions": "true"})
try:
    import duckdb_extension_sqlite_scanner as wheel
except ImportError:
    con.execute("INSTALL sqlite")
    con.execute("LOAD sqlite")
else:
    folder = os.path.join(os.path.dirname(wheel.__file__), "extensions", "v" + duckdb.__version__)
    path = os.path.join(folder, "sqlite_scanner.duckdb_extension")
    con.execute("LOAD '" + path.replace("'", "''") + "'")
con.execute("ATTACH '" + source.replace("'", "''") + "' AS source (TYPE sqlite, READ_ONLY)")
con.execute("COPY FROM DATABASE source TO " + con.execute("SELECT current_database()").fetchone()[0])
con.execute("CHECKPOINT")
con.close()
"""


def remove_duckdb_file(path: Path) -> None:
    """A DuckDB database file and its write-ahead log, if there."""
    path.unlink(missing_ok=True)
    path.with_name(path.name + ".wal").unlink(missing_ok=True)


def duckdb_reader(python: str, source: Path, target: Path) -> None:
    """DuckDB's own SQLite reader, as its own process (start-up included, as for polysql), into
    a ``target`` that does not exist yet."""
    run_tool([python, "-c", DUCKDB_READER, str(source), str(target)])


def cli_load(source_url: str, target_url: str, *, insert_path: bool = False) -> None:
    """``polysql load --replace`` as its own process. ``insert_path``: with LOAD DATA switched
    off, so polysql loads with multi-row INSERTs (MySQL only)."""
    if not insert_path:
        run_tool([sys.executable, "-m", "polysql.cli", "load", source_url, target_url, "--replace"])
        return
    code = ("import sys; import polysql.backends.mysql.load_infile as infile; "
            "infile.USE_INFILE = False; from polysql.cli import main; "
            "sys.argv = ['polysql', 'load', sys.argv[1], sys.argv[2], '--replace']; main()")
    run_tool([sys.executable, "-c", code, source_url, target_url])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/")
    parser.add_argument("--mysql-url", default="mysql://root@127.0.0.1:3306/")
    parser.add_argument("--pgloader", default=shutil.which("pgloader"))
    parser.add_argument("--sqlite3mysql", default=shutil.which("sqlite3mysql"))
    parser.add_argument("--mysql-client", default=shutil.which("mariadb") or shutil.which("mysql"))
    parser.add_argument("--sqlite3", default=shutil.which("sqlite3"),
                        help="the sqlite3 command-line shell, for the whole-job LOAD DATA anchor "
                             "(dump, then load)")
    parser.add_argument("--duckdb-python", default=None,
                        help="a Python whose duckdb loads the sqlite extension: DuckDB's own "
                             "SQLite reader is then timed as the DuckDB baseline")
    parser.add_argument("--rounds", type=int, default=1,
                        help="time every loader N times, taking turns; the fastest run counts")
    parser.add_argument("--figure", type=Path, default=None,
                        help="PNG to draw (default benchmark-figures/load_bench.png)")
    args = parser.parse_args()
    as_installed()

    work = Path(tempfile.mkdtemp(prefix="polysql-load-bench-"))
    source = work / "bench.sqlite"
    started = time.perf_counter()
    counts = generate(source, args.rows)
    total = sum(counts.values())
    print(f"generated {total:,} rows in {len(counts)} tables in {time.perf_counter() - started:.1f} s")
    source_url = f"sqlite:///{source}"
    source_sums = table_checksums(source_url, counts, '"')

    pg = parse_url(args.pg_url)
    pg_target = pg.set(database="polysql_load_bench").render_as_string(hide_password=False)
    my = parse_url(args.mysql_url)
    my_target = my.set(database="polysql_load_bench").render_as_string(hide_password=False)
    inserts_target = my.set(database="polysql_insert_bench").render_as_string(hide_password=False)
    duck_target = f"duckdb:///{work / 'bench.duckdb'}"
    from polysql.backends.mysql.backend import MySQLBackend
    from polysql.backends.postgres.setup import drop_evaluation_database

    # Every contender is timed building its copy from nothing: polysql's copy of the round
    # before is dropped untimed, as the baselines' databases are.
    contenders = [Contender("PostgreSQL", "polysql load", lambda: cli_load(source_url, pg_target),
                            lambda: drop_evaluation_database(pg, "polysql_load_bench")),
                  Contender("DuckDB", "polysql load", lambda: cli_load(source_url, duck_target),
                            lambda: remove_duckdb_file(work / "bench.duckdb"))]
    if args.duckdb_python:
        contenders.append(Contender("DuckDB", "duckdb sqlite", lambda: duckdb_reader(
            args.duckdb_python, source, work / "reader.duckdb"),
            lambda: remove_duckdb_file(work / "reader.duckdb")))
    if args.pgloader:
        pg_tool = pg.set(drivername="pgsql", database="pgloader_load_bench").render_as_string(
            hide_password=False)

        def fresh_pg() -> None:
            server_admin(args.pg_url, "DROP DATABASE IF EXISTS pgloader_load_bench")
            server_admin(args.pg_url, "CREATE DATABASE pgloader_load_bench")

        contenders.append(Contender("PostgreSQL", "pgloader", lambda: run_tool(
            [args.pgloader, "--quiet", f"sqlite://{source}", pg_tool]), fresh_pg))
    contenders.append(Contender("MySQL/MariaDB", "polysql load",
                                lambda: cli_load(source_url, my_target),
                                lambda: MySQLBackend.drop(my_target)))
    if args.mysql_client:
        files = dump_tsv(source, work)  # outside the timed part
        contenders.append(Contender(
            "MySQL/MariaDB", "LOAD DATA", lambda: load_data_anchor(
                args.mysql_url, args.mysql_client, "load_data_bench", files),
            lambda: server_admin(args.mysql_url, "DROP DATABASE IF EXISTS load_data_bench")))
        contenders.append(Contender(
            "MySQL/MariaDB", "LOAD DATA + keys", lambda: load_data_anchor(
                args.mysql_url, args.mysql_client, "load_data_keys_bench", files, keys=True),
            lambda: server_admin(args.mysql_url, "DROP DATABASE IF EXISTS load_data_keys_bench")))
        if args.sqlite3 and shell_dump_is_exact(source):
            dumps = work / "shell-dump"

            def whole_job(database: str, *, keys: bool) -> None:
                dumped = dump_with_shell(args.sqlite3, source, dumps)
                load_data_anchor(args.mysql_url, args.mysql_client, database, dumped, keys=keys)

            def fresh_dump(database: str) -> None:
                shutil.rmtree(dumps, ignore_errors=True)
                dumps.mkdir()
                server_admin(args.mysql_url, f"DROP DATABASE IF EXISTS {database}")

            contenders.append(Contender(
                "MySQL/MariaDB", "sqlite3 + LOAD DATA",
                lambda: whole_job("shell_load_bench", keys=False),
                lambda: fresh_dump("shell_load_bench")))
            contenders.append(Contender(
                "MySQL/MariaDB", "sqlite3 + LOAD DATA + keys",
                lambda: whole_job("shell_load_keys_bench", keys=True),
                lambda: fresh_dump("shell_load_keys_bench")))
    contenders.append(Contender("MySQL/MariaDB", "polysql INSERTs",
                                lambda: cli_load(source_url, inserts_target, insert_path=True),
                                lambda: MySQLBackend.drop(inserts_target)))
    if args.sqlite3mysql:
        cmd = [args.sqlite3mysql, "-f", str(source), "-d", "s2m_load_bench", "-u", my.username or "root",
               "-h", my.host or "127.0.0.1", "-P", str(my.port or 3306), "-q"]
        if my.password:
            cmd += ["--mysql-password", my.password]
        contenders.append(Contender(
            "MySQL/MariaDB", "sqlite3mysql", lambda: run_tool(cmd),
            lambda: server_admin(args.mysql_url, "DROP DATABASE IF EXISTS s2m_load_bench")))
    race(contenders, max(1, args.rounds), {
        "PostgreSQL": server_cpu_reader(pg.host, ("postgres", "postmaster")),
        "MySQL/MariaDB": server_cpu_reader(my.host, ("mariadbd", "mysqld")),
        "DuckDB": None})  # in the loader's own process

    verdicts: dict[tuple[str, str], str] = {}  # (target, loader) -> whether its copy is identical
    for target, label, url, quote in (("PostgreSQL", "polysql load", pg_target, '"'),
                                      ("DuckDB", "polysql load", duck_target, '"'),
                                      ("MySQL/MariaDB", "polysql load", my_target, "`"),
                                      ("MySQL/MariaDB", "polysql INSERTs", inserts_target, "`"),
                                      ("DuckDB", "duckdb sqlite",
                                       f"duckdb:///{work / 'reader.duckdb'}", '"')):
        loaded = next((c for c in contenders if c.target == target and c.label == label), None)
        if loaded is not None and loaded.best is not None:
            same = table_checksums(url, counts, quote) == source_sums
            verdicts[(target, label)] = "identical" if same else "DIFFERENT"
    server_admin(args.pg_url, "DROP DATABASE IF EXISTS pgloader_load_bench")
    for name in ("load_data_bench", "load_data_keys_bench", "shell_load_bench",
                 "shell_load_keys_bench", "s2m_load_bench"):
        server_admin(args.mysql_url, f"DROP DATABASE IF EXISTS {name}")
    # polysql's copies too (databases, readers, load records): the bench leaves nothing behind
    MySQLBackend.drop(inserts_target)
    MySQLBackend.drop(my_target)
    drop_evaluation_database(pg, "polysql_load_bench")

    print(f"\n{'target':<14} {'loader':<26} {'seconds':>8} {'rows/s':>11} {'ratio':>7} "
          f"{'CPU s':>6} {'server':>7}  copy")
    for target in ("PostgreSQL", "DuckDB", "MySQL/MariaDB"):
        ours, *others = [c for c in contenders if c.target == target]
        print(f"{target:<14} {ours.label:<26} {_seconds(ours.best):>8} {_rate(total, ours.best):>11} "
              f"{'':>7} {_cpu(ours.client_cpu):>6} {_cpu(ours.server_cpu):>7}  "
              f"{verdicts.get((target, ours.label), '-')}")
        if target == "PostgreSQL" and not args.pgloader:
            others.append(Contender(target, "pgloader", lambda: None))
        for other in others:
            ratio = f"{other.best / ours.best:.2f}x" if ours.best and other.best else "-"
            print(f"{'':<14} {other.label:<26} {_seconds(other.best):>8} "
                  f"{_rate(total, other.best):>11} {ratio:>7} {_cpu(other.client_cpu):>6} "
                  f"{_cpu(other.server_cpu):>7}  {verdicts.get((target, other.label), '')}")
    print(f"\nbest of {max(1, args.rounds)} round(s); polysql load runs as its own process "
          f"(interpreter start-up included); ratio = baseline time / polysql time (above 1.00x: "
          f"polysql is faster); the files of LOAD DATA (+ keys) were written before timing, those "
          f"of sqlite3 + LOAD DATA (+ keys) by the sqlite3 shell inside it")
    print(f"CPU s: CPU-seconds of the loader's processes; server: of the database server's, when "
          f"it runs on this machine. On {os.cpu_count()} core(s) no load takes less wall time "
          f"than their sum divided by the cores.")
    bars = []
    for target in ("PostgreSQL", "DuckDB", "MySQL/MariaDB"):
        ours, *others = [c for c in contenders if c.target == target]
        bars.append(Bar(f"{target}: {ours.label}", ours.best,
                        f"{_seconds(ours.best)} s, {_rate(total, ours.best)} rows/s"))
        for other in others:
            ratio = f"; polysql {other.best / ours.best:.2f}x as fast" \
                if ours.best and other.best else ""
            bars.append(Bar(f"{target}: {other.label}", other.best,
                            f"{_seconds(other.best)} s{ratio}", ours=False))
    drawn = draw_bars(figure_path(args.figure, "load_bench"),
                      f"Loading {total:,} SQLite rows: polysql load against established tools",
                      bars, xlabel="seconds, whole process (shorter is faster)",
                      note=f"best of {max(1, args.rounds)} round(s), taking turns; blue: polysql")
    print(f"drew {drawn}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


def _seconds(elapsed: float | None) -> str:
    return f"{elapsed:.2f}" if elapsed else "not run"


def _cpu(seconds: float | None) -> str:
    return f"{seconds:.2f}" if seconds is not None else "-"


def _rate(rows: int, elapsed: float | None) -> str:
    return f"{rows / elapsed:,.0f}" if elapsed else "-"


if __name__ == "__main__":
    sys.exit(main())
