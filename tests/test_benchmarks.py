"""The benchmark scripts run end to end at small sizes and draw their figure.

Nothing here times anything (the scripts print ratios against baselines measured in the same
run; a test asserting a time would only measure the machine). This only keeps them working:
each runs as a user runs it, in its own process, on real engines, and must exit 0, print its
table and write a PNG.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from polysql_testkit import availability
from sqlalchemy.engine import make_url

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
#: the databases benchmarks/load_bench.py loads into on the servers
BENCH_DATABASES = {"polysql_load_bench", "polysql_insert_bench", "pgloader_load_bench",
                   "load_data_bench", "load_data_keys_bench", "s2m_load_bench"}


def run_benchmark(script: str, tmp_path: Path, *args: str, temp: Path | None = None,
                  **env_vars: str) -> str:
    """Run ``script``; ``temp``: the folder it makes its temporary files in (TMPDIR);
    ``env_vars``: more environment variables for it."""
    figure = tmp_path / f"{script}.png"
    env = {**os.environ, "POLYSQL_CACHE": str(tmp_path / "cache"), **env_vars}
    if temp is not None:
        env["TMPDIR"] = str(temp)
    done = subprocess.run([sys.executable, str(BENCHMARKS / f"{script}.py"), *args,
                           "--figure", str(figure)], capture_output=True, text=True,
                          timeout=900, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"drew {figure}" in done.stdout
    assert figure.read_bytes().startswith(PNG_MAGIC)
    return done.stdout


def test_tolerance_bench(tmp_path: Path) -> None:
    output = run_benchmark("tolerance_bench", tmp_path, "--small", "500", "--large", "1500",
                           "--repeats", "1")
    assert "x linear; target <= 1.50x" in output


def test_compare_bench(tmp_path: Path) -> None:
    output = run_benchmark("compare_bench", tmp_path, "--rows", "3000")
    for workload in ("typed", "nulls", "tolerance", "ordered"):
        assert f"\n{workload}" in output or output.startswith(workload), output
    assert "arrow" in output


def test_sweep_bench_on_embedded_engines(tmp_path: Path) -> None:
    output = run_benchmark("sweep_bench", tmp_path, "--sizes", "1k", "--engines", "sqlite,duckdb",
                           "--work", str(tmp_path / "work"))
    assert "polysql/engine" in output and "warm re-evaluation" in output


def test_eval_bench_against_a_bird_style_pool(tmp_path: Path) -> None:
    output = run_benchmark("eval_bench", tmp_path, "--rows", "1k", "--questions", "20",
                           "--rounds", "1", "--work", str(tmp_path / "work"))
    assert "ratio polysql / baseline" in output and "accuracy 1.000 both" in output
    assert (tmp_path / "work" / "bird_1k_20" / "dev.json").exists()  # --work keeps its folder


def test_eval_bench_leaves_no_temporary_folder(tmp_path: Path) -> None:
    """Without --work the dataset and the runs go in a temporary folder, removed at the end."""
    temp = tmp_path / "temp"
    temp.mkdir()
    output = run_benchmark("eval_bench", tmp_path, "--rows", "1k", "--questions", "5",
                           "--rounds", "1", temp=temp)
    assert "ratio polysql / baseline" in output
    assert list(temp.iterdir()) == []


def test_whole_process_benchmarks_time_polysql_from_cached_bytecode(tmp_path: Path) -> None:
    """With PYTHONDONTWRITEBYTECODE set, every polysql process would compile its modules again,
    a start-up cost no installed package pays: the benchmark says so and unsets it for the
    processes it times."""
    output = run_benchmark("eval_bench", tmp_path, "--rows", "1k", "--questions", "3",
                           "--rounds", "1", "--work", str(tmp_path / "work"),
                           PYTHONDONTWRITEBYTECODE="1")
    assert "PYTHONDONTWRITEBYTECODE was set: unset for the processes timed here" in output
    assert "ratio polysql / baseline" in output


def _server(engine: str, variable: str, default: str) -> str:
    availability.require_client(engine)
    url = os.environ.get(variable, default)
    parsed = make_url(url)
    try:
        socket.create_connection((parsed.host or "127.0.0.1", parsed.port or 0), timeout=2).close()
    except OSError as exc:
        availability.unavailable(engine, f"no server answers at {url} ({exc})")
    return url


def test_load_bench_against_the_servers(tmp_path: Path) -> None:
    pg = _server("postgres", "POLYSQL_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/")
    mysql = _server("mysql", "POLYSQL_MYSQL_URL", "mysql://root@127.0.0.1:3306/")
    output = run_benchmark("load_bench", tmp_path, "--rows", "2000", "--pg-url", pg,
                           "--mysql-url", mysql)
    # every polysql copy is checked row for row against the source
    assert output.count("identical") >= 3 and "DIFFERENT" not in output, output
    assert "polysql INSERTs" in output
    if shutil.which("mariadb") or shutil.which("mysql"):  # the LOAD DATA anchors need a client
        assert "LOAD DATA + keys" in output, output
    # the CPU-seconds behind each time: the loader's, and a local server's
    assert "CPU s" in output, output
    mysql_line = next(line for line in output.splitlines() if line.startswith("MySQL/MariaDB"))
    client, server = mysql_line.split()[-3:-1]
    assert float(client) > 0, mysql_line
    if make_url(mysql).host in ("127.0.0.1", "localhost"):
        assert float(server) >= 0, mysql_line
    # and leaves none of its databases behind on the servers
    assert not set(_databases(pg, "SELECT datname FROM pg_database")) & BENCH_DATABASES
    assert not set(_databases(mysql, "SHOW DATABASES")) & BENCH_DATABASES


def test_sweep_bench_loads_server_copies_cold_and_drops_them(tmp_path: Path) -> None:
    """A copy an earlier sweep left on a server is dropped before the cold sweep (which then
    loads it, as on every other engine), and the bench leaves no copy behind."""
    pg = _server("postgres", "POLYSQL_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/")
    mysql = _server("mysql", "POLYSQL_MYSQL_URL", "mysql://root@127.0.0.1:3306/")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from sweep_bench import write_dataset
    finally:
        sys.path.remove(str(BENCHMARKS))
    work = tmp_path / "work"
    write_dataset(work / "sales_1k", 1000)
    engines = f"postgres={pg},mysql={mysql}"
    # an earlier sweep of the same data: its copies stay on the servers
    earlier = subprocess.run(
        [sys.executable, "-m", "polysql.cli", "sweep", "--dataset", f"bird:{work / 'sales_1k'}",
         "--engines", engines, "--predictor", "gold", "--out", str(tmp_path / "earlier")],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "POLYSQL_CACHE": str(tmp_path / "earlier-cache")})
    assert earlier.returncode == 0, earlier.stdout + earlier.stderr
    assert _sales_copies(pg, mysql) == {"postgres": 1, "mysql": 1}

    output = run_benchmark("sweep_bench", tmp_path, "--sizes", "1k", "--engines",
                           "postgres,mysql", "--work", str(work),
                           POLYSQL_POSTGRES_URL=pg, POLYSQL_MYSQL_URL=mysql)
    for engine in ("postgres", "mysql"):
        line = next(line for line in output.splitlines() if line.startswith(f"{engine} "))
        assert int(line.split()[1].replace(",", "")) > 0, line  # rows loaded by the cold sweep
    assert _sales_copies(pg, mysql) == {"postgres": 0, "mysql": 0}


def _sales_copies(pg: str, mysql: str) -> dict[str, int]:
    """How many copies of the sweep benchmark's database each server holds."""
    prefix = "polysql_bird_dev_sales"
    return {"postgres": sum(name.startswith(prefix)
                            for name in _databases(pg, "SELECT datname FROM pg_database")),
            "mysql": sum(name.startswith(prefix) for name in _databases(mysql, "SHOW DATABASES"))}


def _databases(url: str, sql: str) -> list[str]:
    """What ``sql`` lists, asked as the administrator ``url`` names (polysql itself refuses to
    evaluate as an administrator, so the server's own client asks)."""
    parsed = make_url(url)
    if parsed.get_backend_name().startswith("postgres"):
        import psycopg

        with psycopg.connect(host=parsed.host, port=parsed.port or 5432, user=parsed.username,
                             password=parsed.password, dbname="postgres") as conn:
            return [row[0] for row in conn.execute(sql)]
    import pymysql

    conn = pymysql.connect(host=parsed.host, port=parsed.port or 3306, user=parsed.username,
                           password=parsed.password or "")
    try:
        with conn.cursor() as cursor:
            cursor.execute(sql)
            return [row[0] for row in cursor.fetchall()]
    finally:
        conn.close()


def test_cpu_readings_count_children_and_a_local_server() -> None:
    """The CPU columns of load_bench: a busy child's seconds are counted, and so are those a
    query makes the local MariaDB/MySQL server spend (read from /proc)."""
    mysql = _server("mysql", "POLYSQL_MYSQL_URL", "mysql://root@127.0.0.1:3306/")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from cpu_time import children_cpu, server_cpu_reader
    finally:
        sys.path.remove(str(BENCHMARKS))
    before = children_cpu()
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
    assert children_cpu() - before > 0.05
    assert server_cpu_reader("db.example.com", ("mariadbd", "mysqld")) is None
    parsed = make_url(mysql)
    reading = server_cpu_reader(parsed.host, ("mariadbd", "mysqld"))
    if reading is None:
        return  # the server runs elsewhere (a container, another machine): nothing to read
    import pymysql

    conn = pymysql.connect(host=parsed.host, port=parsed.port or 3306, user=parsed.username,
                           password=parsed.password or "")
    try:
        start = reading()
        with conn.cursor() as cursor:
            cursor.execute("SELECT BENCHMARK(3000000, MD5('polysql'))")
        assert reading() - start > 0.05
    finally:
        conn.close()
