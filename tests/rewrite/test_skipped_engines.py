"""`polysql rewrite validate | run` when an engine cannot be used here: the other pools are still
evaluated, the unusable one is listed as skipped with the reason and the fix, and the exit code
says whether that is acceptable (0), or not (3: nothing ran, or ``--require-all``).

pyspark is made unimportable in a child process (``sys.modules['pyspark'] = None`` before polysql
is imported), which is what a user without the spark extra has; the unreachable server is a real
closed port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from polysql.cli.main import EXIT_ENGINE, main
from polysql.rewrite.harness import SkippedCase, skip_failure, skip_summary

pytestmark = pytest.mark.duckdb

WITHOUT_PYSPARK = """\
import sys
sys.modules['pyspark'] = None  # `import pyspark` now fails, as when it is not installed
from polysql.cli import main
main(sys.argv[1:])
"""
SPARK_FIX = "pip install 'polysql[spark]'"
ONE_DUCKDB_CASE = ("--pool", "duckdb-core", "--pool", "spark-core", "--case", "group-by-all",
                   "--case", "union-to-distinct-or")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rewrite-cache")


def without_pyspark(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "POLYSQL_CACHE": str(cache), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", WITHOUT_PYSPARK, "rewrite", *args],
                          capture_output=True, text=True, env=env, timeout=600)


def test_validate_certifies_duckdb_and_lists_the_skipped_spark_pool(cache: Path) -> None:
    done = without_pyspark(cache, "validate", "--pool", "duckdb-core", "--pool", "spark-core",
                           "--runs", "1", "--warmup", "0", "--json")
    assert done.returncode == 0, done.stderr
    # DuckDB draws a progress bar on stdout when a query runs over 2 s (a busy machine), before
    # the JSON is printed: read from the JSON's first line
    start = done.stdout.find("[\n")
    assert start >= 0, done.stdout
    reports = json.loads(done.stdout[start:])
    by_pool: dict[str, list[dict]] = {}
    for report in reports:
        by_pool.setdefault(report["pool"], []).append(report)
    assert len(by_pool["duckdb-core"]) == 9 and len(by_pool["spark-core"]) == 9
    assert all(r["certified"] and r["skipped"] is None for r in by_pool["duckdb-core"])
    for report in by_pool["spark-core"]:
        assert report["certified"] is False and report["references"] == []
        assert "pyspark" in report["skipped"] and SPARK_FIX in report["skipped"]
    lines = done.stderr.splitlines()
    skipped = [line for line in lines if line.startswith("skipped: ")]
    assert len(skipped) == 1, done.stderr
    assert skipped[0].startswith("skipped: 9 case(s) of pool spark-core (")
    assert "pyspark" in skipped[0] and "not installed" in skipped[0] and SPARK_FIX in skipped[0]
    assert "9 case(s) certified" in done.stderr
    assert "error" not in done.stderr.lower() and "Traceback" not in done.stderr


def test_require_all_makes_a_skip_an_error(cache: Path) -> None:
    done = without_pyspark(cache, "validate", *ONE_DUCKDB_CASE, "--runs", "1", "--warmup", "0",
                           "--require-all")
    assert done.returncode == EXIT_ENGINE, done.stderr
    assert "1 case(s) certified" in done.stderr
    assert "skipped: 1 case(s) of pool spark-core (" in done.stderr
    assert "--require-all" in done.stderr


def test_nothing_runnable_is_an_error_even_without_require_all(cache: Path) -> None:
    done = without_pyspark(cache, "validate", "--pool", "spark-core")
    assert done.returncode == EXIT_ENGINE, done.stderr
    assert "skipped: 9 case(s) of pool spark-core (" in done.stderr
    assert "no selected case could run" in done.stderr and "Traceback" not in done.stderr

    done = without_pyspark(cache, "run", "--pool", "spark-core", "-m", "identity",
                           "--out", str(cache / "nothing"))
    assert done.returncode == EXIT_ENGINE, done.stderr
    assert "no selected case could run" in done.stderr
    assert not (cache / "nothing" / "ledger.json").exists()  # no empty report pretending


def test_run_keeps_skipped_cases_out_of_the_denominator_and_says_so(cache: Path,
                                                                     tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = without_pyspark(cache, "run", *ONE_DUCKDB_CASE, "--runs", "1", "--warmup", "0",
                           "-m", "identity", "-m", "no-rewrite", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "skipped: 1 case(s) of pool spark-core (" in done.stderr and SPARK_FIX in done.stderr
    rows = json.loads((out / "ledger.json").read_text())["rows"]
    assert {(r["method"], r["case_id"]) for r in rows} == {("identity", "group-by-all"),
                                                          ("no-rewrite", "group-by-all")}

    done = without_pyspark(cache, "run", *ONE_DUCKDB_CASE, "--runs", "1", "--warmup", "0",
                           "-m", "identity", "--out", str(out), "--require-all")
    assert done.returncode == EXIT_ENGINE, done.stderr


def test_an_unreachable_server_skips_its_pool(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    with socket.socket() as sock:  # a port nobody listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = CliRunner().invoke(main, [
        "rewrite", "validate", "--pool", "duckdb-core", "--pool", "postgres-core",
        "--case", "group-by-all", "--case", "count-to-exists", "--case", "not-in-to-not-exists",
        "--engine", f"postgres=postgresql://postgres@127.0.0.1:{port}/", "--runs", "1",
        "--warmup", "0"])
    assert result.exit_code == 0, result.output
    skipped = [line for line in result.output.splitlines() if line.startswith("skipped: ")]
    assert len(skipped) == 1, result.output
    assert skipped[0].startswith("skipped: 2 case(s) of pool postgres-core (")
    assert str(port) in skipped[0]
    assert "1 case(s) certified" in result.output


def test_skip_lines_group_by_pool_and_reason() -> None:
    skips = [SkippedCase(f"c{i}", pool, "spark", "spark", reason)
             for i, (pool, reason) in enumerate([("a", "x missing"), ("b", "y down"),
                                                 ("a", "x missing"), ("a", "other")])]
    assert skip_summary(skips) == ["skipped: 2 case(s) of pool a (x missing)",
                                   "skipped: 1 case(s) of pool b (y down)",
                                   "skipped: 1 case(s) of pool a (other)"]
    assert skip_failure([], ran=0, require_all=True) is None
    assert skip_failure(skips, ran=3, require_all=False) is None
    assert "4 case(s) skipped" in (skip_failure(skips, ran=3, require_all=True) or "")
    assert "no selected case could run" in (skip_failure(skips, ran=0, require_all=False) or "")
