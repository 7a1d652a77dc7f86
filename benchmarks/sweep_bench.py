"""Time a whole ``polysql sweep`` on generated BIRD-layout datasets, per engine and size.

For each size (rows in the fact table) it writes a dataset as BIRD's dev release lays it out::

    WORK/sales_<size>/dev.json                              question_id, db_id, question, SQL, ...
    WORK/sales_<size>/dev_databases/sales/sales.sqlite      generated, deterministic (seeded)

with analytic gold questions (aggregates, joins, GROUP BY, HAVING, ORDER BY over NULLs, LIMIT,
a large result), then runs ``polysql sweep --timings`` on it twice, each time into a new run
folder: first with an empty polysql cache and no server copy left from an earlier run (every copy
loaded, every statement executed), then
again with that cache warm (copies and executions reused: what re-evaluating costs). Each run's
``timings.json`` gives, per engine, the load rate, the engine's time and polysql's own time; the
ratio polysql/engine is the overhead the sweep adds to executing SQL, and the warm/cold ratio
what the cache saves. As a baseline measured in the same run, the gold SQL is also run once by
plain ``sqlite3`` on the source file (no polysql at all).

    python benchmarks/sweep_bench.py                               # 10k,100k rows; a few minutes
    python benchmarks/sweep_bench.py --sizes 1M,3M                 # larger sizes (minutes each)
    python benchmarks/sweep_bench.py --engines sqlite,duckdb,postgres,mysql --sizes 100k

``--engines auto`` (the default) is sqlite and duckdb, plus PostgreSQL (POLYSQL_POSTGRES_URL,
default postgresql://postgres@127.0.0.1:5432/) and MySQL/MariaDB (POLYSQL_MYSQL_URL, default
mysql://root@127.0.0.1:3306/) when something listens there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bytecode import as_installed
from figures import Bar, draw_bars, figure_path

DB_ID = "sales"
SEED = 20240601
REGIONS = ("north", "south", "east", "west", "central")
CATEGORIES = ("books", "games", "garden", "kitchen", "music", "sports", "tools", "toys")
STATUSES = ("shipped", "returned", "pending", None)  # None: about a quarter of orders
TIERS = ("gold", "silver", "bronze", None)
START = date(2020, 1, 1)

#: polysql's own time at most this share of engine time (the goal the benchmark measures)
OWN_TIME_TARGET = 0.05

SERVERS = {
    "postgres": os.environ.get("POLYSQL_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/"),
    "mysql": os.environ.get("POLYSQL_MYSQL_URL", "mysql://root@127.0.0.1:3306/"),
}

# (question, gold SQL in SQLite): what analytic workloads ask of every engine
QUESTIONS: list[tuple[str, str]] = [
    ("How many orders are there?", "SELECT COUNT(*) FROM orders"),
    ("Orders and revenue per region.",
     "SELECT c.region, COUNT(*) AS orders, ROUND(SUM(o.amount), 2) AS revenue FROM orders o "
     "JOIN customers c ON c.id = o.customer_id GROUP BY c.region ORDER BY c.region"),
    ("Average list price per category, products without a price left out.",
     "SELECT category, ROUND(AVG(price), 2) FROM products WHERE price IS NOT NULL "
     "GROUP BY category ORDER BY category"),
    ("Customers per tier, the customers without a tier included.",
     "SELECT tier, COUNT(*) FROM customers GROUP BY tier ORDER BY tier"),
    ("The 10 customers who spent the most.",
     "SELECT c.id, c.name, ROUND(SUM(o.amount), 2) AS spent FROM customers c JOIN orders o "
     "ON o.customer_id = c.id GROUP BY c.id, c.name ORDER BY spent DESC, c.id LIMIT 10"),
    ("First and last order date per status.",
     "SELECT status, MIN(order_date), MAX(order_date), COUNT(*) FROM orders GROUP BY status "
     "ORDER BY status"),
    ("How many distinct customers bought in each category?",
     "SELECT p.category, COUNT(DISTINCT o.customer_id) FROM orders o JOIN products p "
     "ON p.id = o.product_id GROUP BY p.category ORDER BY p.category"),
    ("How many orders have no status?", "SELECT COUNT(*) FROM orders WHERE status IS NULL"),
    ("The first 25 orders by status, then id.",
     "SELECT id, status, amount FROM orders ORDER BY status, id LIMIT 25"),
    ("How many customers placed more than 25 orders?",
     "SELECT COUNT(*) FROM (SELECT customer_id FROM orders GROUP BY customer_id "
     "HAVING COUNT(*) > 25) AS busy"),
    ("Units sold per year.",
     "SELECT SUBSTR(order_date, 1, 4) AS year, SUM(quantity) FROM orders GROUP BY year "
     "ORDER BY year"),
    ("Large orders: id, customer and amount of every order of more than 8 units.",
     "SELECT id, customer_id, amount FROM orders WHERE quantity > 8"),
    ("Average order amount per customer tier.",
     "SELECT c.tier, ROUND(AVG(o.amount), 2) FROM orders o JOIN customers c "
     "ON c.id = o.customer_id GROUP BY c.tier ORDER BY c.tier"),
    ("How many products were never ordered?",
     "SELECT COUNT(*) FROM products p WHERE NOT EXISTS "
     "(SELECT 1 FROM orders o WHERE o.product_id = p.id)"),
    ("Returned revenue per category and region, largest first.",
     "SELECT p.category, c.region, ROUND(SUM(o.amount), 2) AS lost FROM orders o "
     "JOIN products p ON p.id = o.product_id JOIN customers c ON c.id = o.customer_id "
     "WHERE o.status = 'returned' GROUP BY p.category, c.region ORDER BY lost DESC, "
     "p.category, c.region LIMIT 15"),
    ("The 5 most recent orders without a status.",
     "SELECT id, order_date FROM orders WHERE status IS NULL ORDER BY order_date DESC, id DESC "
     "LIMIT 5"),
]


def parse_size(text: str) -> int:
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    number = text[:-1] if scale > 1 else text
    return int(float(number) * scale)


def size_label(rows: int) -> str:
    if rows >= 1_000_000 and rows % 1_000_000 == 0:
        return f"{rows // 1_000_000}M"
    if rows >= 1_000 and rows % 1_000 == 0:
        return f"{rows // 1_000}k"
    return str(rows)


# -- the dataset --------------------------------------------------------------------------------
def table_sizes(orders: int) -> tuple[int, int]:
    """Customers and products for a database of ``orders`` orders."""
    return max(50, orders // 20), max(40, orders // 100)


def every_table(orders: int) -> int:
    return orders + sum(table_sizes(orders))


def write_database(path: Path, orders: int) -> None:
    """Generate the sales database with ``orders`` order rows."""
    rng = random.Random(SEED + orders)
    customers, products = table_sizes(orders)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    conn = sqlite3.connect(partial)
    conn.executescript("""
        CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, region TEXT NOT NULL,
                                tier TEXT, signed_up DATE NOT NULL);
        CREATE TABLE products (id INTEGER PRIMARY KEY, category TEXT NOT NULL, price REAL);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL
                                 REFERENCES customers (id),
                             product_id INTEGER NOT NULL REFERENCES products (id),
                             quantity INTEGER NOT NULL, amount REAL NOT NULL,
                             order_date DATE NOT NULL, status TEXT);
    """)
    conn.executemany("INSERT INTO customers VALUES (?, ?, ?, ?, ?)", (
        (i, f"customer {i}", rng.choice(REGIONS), rng.choice(TIERS),
         (START + timedelta(days=rng.randrange(1500))).isoformat()) for i in range(1, customers + 1)))
    prices = {i: (None if rng.random() < 0.05 else round(rng.uniform(1, 300), 2))
              for i in range(1, products + 1)}
    conn.executemany("INSERT INTO products VALUES (?, ?, ?)",
                     ((i, rng.choice(CATEGORIES), price) for i, price in prices.items()))
    # the last tenth of products are never ordered, so NOT EXISTS finds something
    ordered = max(1, products * 9 // 10)

    def order(i: int) -> tuple[Any, ...]:
        product = rng.randint(1, ordered)
        quantity = rng.randint(1, 10)
        amount = round(quantity * (prices[product] or 9.99) * rng.uniform(0.8, 1.0), 2)
        day = (START + timedelta(days=rng.randrange(1800))).isoformat()
        return (i, rng.randint(1, customers), product, quantity, amount, day, rng.choice(STATUSES))

    conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (order(i) for i in range(1, orders + 1)))
    conn.execute("CREATE INDEX orders_customer ON orders (customer_id)")
    conn.execute("CREATE INDEX orders_product ON orders (product_id)")
    conn.commit()
    conn.close()
    partial.replace(path)


def write_dataset(folder: Path, orders: int) -> Path:
    """The BIRD-layout dataset folder for one size, generated once and reused after."""
    database = folder / "dev_databases" / DB_ID / f"{DB_ID}.sqlite"
    if not database.exists():
        write_database(database, orders)
    entries = [{"question_id": index, "db_id": DB_ID, "question": text, "evidence": "",
                "SQL": sql, "difficulty": "moderate"} for index, (text, sql) in enumerate(QUESTIONS)]
    (folder / "dev.json").write_text(json.dumps(entries, indent=1), encoding="utf-8")
    return database


def bare_sqlite_seconds(database: Path) -> float:
    """The baseline: every gold statement run once by plain sqlite3, rows fetched."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        started = time.perf_counter()
        for _text, sql in QUESTIONS:
            conn.execute(sql).fetchall()
        return time.perf_counter() - started
    finally:
        conn.close()


# -- the sweeps ---------------------------------------------------------------------------------
def reachable(url: str) -> bool:
    parts = urlsplit(url)
    default_port = 5432 if parts.scheme.startswith("postgres") else 3306
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or default_port),
                                      timeout=1):
            return True
    except OSError:
        return False


def engine_items(text: str) -> list[str]:
    """``--engines`` as items for ``polysql sweep``: servers by URL, named by their short name."""
    names = ["sqlite", "duckdb", *(n for n, url in SERVERS.items() if reachable(url))] \
        if text == "auto" else [n.strip() for n in text.split(",") if n.strip()]
    return [f"{name}={SERVERS[name]}" if name in SERVERS else name for name in names]


@dataclass(slots=True)
class SweepRun:
    wall: float  # the whole command, process start included
    timings: dict[str, Any]  # the run folder's timings.json


def run_sweep(dataset: Path, run: Path, cache: Path, engines: list[str], predictors: str,
              timeout: float) -> SweepRun:
    command = [sys.executable, "-m", "polysql.cli", "sweep", "--dataset", f"bird:{dataset}",
               "--engines", ",".join(engines), "--predictor", predictors, "--out", str(run),
               "--timeout", str(timeout), "--timings"]
    env = {**os.environ, "POLYSQL_CACHE": str(cache), "COLUMNS": "200"}
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    timings_file = run / "timings.json"
    # exit code 0 (complete) is expected; mismatches are verdicts, not failures
    if done.returncode != 0 or not timings_file.exists():
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"polysql sweep failed with exit code {done.returncode}")
    return SweepRun(wall, json.loads(timings_file.read_text(encoding="utf-8")))


def drop_server_copies(dataset: Path, engines: list[str]) -> None:
    """Drop the PostgreSQL and MySQL copies a sweep of ``dataset`` builds. Before a cold sweep:
    a copy an earlier run left (same data, same name) would be reused, and the sweep would load
    nothing on that server while the others load, which changes how much runs at once and so
    every ratio. After the bench: it leaves nothing behind on the servers."""
    servers = [item.partition("=") for item in engines if "=" in item]
    if not servers:
        return  # file engines keep their copies in the run's own cache folder
    from polysql.core.urls import parse_url
    from polysql.datasets.registry import get_dataset
    from polysql.engines.copies import copy_url

    name = get_dataset(f"bird:{dataset}").name
    for engine, _, url in servers:
        copy = copy_url(parse_url(url), dataset=name, db_id=DB_ID)
        # each server's client is imported only when that server is benchmarked
        if engine == "postgres":
            from polysql.backends.postgres.setup import drop_evaluation_database

            drop_evaluation_database(parse_url(url), str(copy.database))
        elif engine == "mysql":
            from polysql.backends.mysql.backend import MySQLBackend

            MySQLBackend.drop(copy)


def lane_of(engine_item: str) -> str:
    return engine_item.split("=", 1)[0]


def report(label: str, rows: int, engines: list[str], cold: SweepRun, warm: SweepRun,
           bare: float) -> list[Bar]:
    """Print the size's table; the bars of its polysql/engine ratios (per lane, then all)."""
    bars: list[Bar] = []
    lanes = cold.timings["lanes"]
    gold_loaded = lanes.get("gold", {}).get("rows_loaded", 0)
    print(f"\n== {label}: {rows:,} orders ({every_table(rows):,} rows in all), "
          f"{len(QUESTIONS)} questions ==")
    header = (f"{'engine':<10} {'rows loaded':>12} {'load s':>8} {'load rows/s':>12} "
              f"{'engine s':>9} {'polysql s':>10} {'polysql/engine':>15}")
    print(header)
    print("-" * len(header))
    for name in ["gold", *(lane_of(e) for e in engines)]:
        lane = lanes.get(name)
        if lane is None:
            continue
        loaded = lane["rows_loaded"]
        if name == "sqlite" and not loaded and gold_loaded:
            note = "(by gold)"  # the gold lane's copy is the SQLite copy
            rate = ""
        else:
            note = f"{loaded:,}"
            rate = f"{lane['load_rows_per_second']:,.0f}" if lane["load_rows_per_second"] else "-"
        ratio = "-" if lane["ratio"] is None else f"{lane['ratio']:.2f}"
        print(f"{name:<10} {note:>12} {lane['load']:>8.3f} {rate:>12} {lane['engine']:>9.3f} "
              f"{lane['polysql']:>10.3f} {ratio:>15}")
        if lane["ratio"] is not None:
            bars.append(Bar(f"{label} {name}", lane["ratio"],
                            f"{lane['ratio']:.2f} ({lane['polysql']:.3f} s / {lane['engine']:.3f} s)",
                            target=OWN_TIME_TARGET))
    every = cold.timings["all"]
    print(f"{'all':<10} {every['rows_loaded']:>12,} {every['load']:>8.3f} {'':>12} "
          f"{every['engine']:>9.3f} {every['polysql']:>10.3f} "
          f"{(every['ratio'] or 0):>15.2f}")
    if every["ratio"] is not None:
        bars.append(Bar(f"{label} all engines", every["ratio"],
                        f"{every['ratio']:.2f} ({every['polysql']:.3f} s / {every['engine']:.3f} s)",
                        target=OWN_TIME_TARGET))
    gold_engine = lanes.get("gold", {}).get("engine", 0.0)
    print(f"baseline: plain sqlite3 runs the gold SQL in {bare:.3f} s; the gold lane's engine time "
          f"{gold_engine:.3f} s (x{gold_engine / bare if bare else 0:.2f})")
    print(f"cold sweep: {cold.timings['wall']:.2f} s inside polysql, {cold.wall:.2f} s for the "
          f"command")
    print(f"warm re-evaluation (new run folder, cache warm): {warm.timings['wall']:.2f} s inside "
          f"polysql, {warm.wall:.2f} s for the command; warm/cold "
          f"{warm.timings['wall'] / cold.timings['wall']:.2f} (engine time "
          f"{warm.timings['all']['engine']:.3f} s, cache {warm.timings['all']['stages'].get('cache', 0):.3f} s)")
    return bars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10k,100k",
                        help="rows in the orders table, comma-separated (e.g. 10k,100k,1M,3M)")
    parser.add_argument("--engines", default="auto",
                        help="comma-separated: sqlite, duckdb, postgres, mysql; or auto")
    parser.add_argument("--predictor", default="gold,transpile", help="as polysql sweep takes it")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per query")
    parser.add_argument("--work", type=Path, default=None,
                        help="folder for datasets, caches and runs (default: a temporary one); "
                             "generated datasets are reused from it")
    parser.add_argument("--figure", type=Path, default=None,
                        help="PNG to draw (default benchmark-figures/sweep_bench.png)")
    args = parser.parse_args()
    as_installed()
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    engines = engine_items(args.engines)
    work = args.work or Path(tempfile.mkdtemp(prefix="sweep_bench_"))
    print(f"engines: {', '.join(engines)}; predictors: {args.predictor}; work folder: {work}"
          f"{'' if args.work else ' (removed at the end; --work keeps one)'}")
    try:
        bench(args, engines, sizes, work)
    finally:
        if args.work is None:  # generated datasets reach hundreds of MB: never leave them behind
            shutil.rmtree(work, ignore_errors=True)


def bench(args: argparse.Namespace, engines: list[str], sizes: list[int], work: Path) -> None:
    bars: list[Bar] = []
    for rows in sizes:
        label = size_label(rows)
        dataset = work / f"sales_{label}"
        started = time.perf_counter()
        database = write_dataset(dataset, rows)
        print(f"dataset {label}: {database} ready in {time.perf_counter() - started:.1f} s")
        bare = bare_sqlite_seconds(database)
        cache = work / f"cache_{label}"
        for stale in (cache, work / f"run_{label}_cold", work / f"run_{label}_warm"):
            if stale.exists():  # an earlier bench run: start cold again
                shutil.rmtree(stale)
        drop_server_copies(dataset, engines)
        try:
            cold = run_sweep(dataset, work / f"run_{label}_cold", cache, engines, args.predictor,
                             args.timeout)
            warm = run_sweep(dataset, work / f"run_{label}_warm", cache, engines,
                             args.predictor, args.timeout)
        finally:
            drop_server_copies(dataset, engines)
        bars += report(label, rows, engines, cold, warm, bare)
    drawn = draw_bars(figure_path(args.figure, "sweep_bench"),
                      "polysql's own time per second of engine time, cold sweep", bars,
                      xlabel="polysql's own time / engine time (lower is better)",
                      note=f"{len(QUESTIONS)} questions; predictors {args.predictor}; loading "
                           "excluded (see the printed table)")
    print(f"drew {drawn}")


if __name__ == "__main__":
    main()
