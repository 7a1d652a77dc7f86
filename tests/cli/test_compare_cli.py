"""``polysql compare`` exit codes on a real SQLite database: 0 match, 1 mismatch, 7 invalid gold
(the gold query failed, so nothing could be judged), the same with ``--json``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from polysql_testkit import availability, engine_postgres

import polysql
from polysql.backends.postgres.setup import drop_evaluation_database
from polysql.cli.main import EXIT_INVALID_GOLD, EXIT_MISMATCH, main
from polysql.core.errors import EngineUnavailableError


@pytest.fixture
def shop(tmp_path: Path) -> str:
    path = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL);
        INSERT INTO orders VALUES (1, 'ann', 10.5), (2, 'bob', 20.0), (3, 'ann', 7.25);
    """)
    conn.commit()
    conn.close()
    return f"sqlite:///{path}"


def compare(url: str, gold: str, pred: str, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["compare", "--db", url, "--gold", gold, "--pred", pred,
                                       *extra])
    return result.exit_code, result.output


GOLD = "SELECT customer, SUM(total) FROM orders GROUP BY customer"


def test_exit_codes_are_distinct_and_stable() -> None:
    assert (EXIT_MISMATCH, EXIT_INVALID_GOLD) == (1, 7)  # documented in docs/cli.md


def test_matching_results_exit_0(shop: str) -> None:
    code, output = compare(shop, GOLD, "SELECT customer, SUM(total) AS s FROM orders "
                                       "GROUP BY 1 ORDER BY 2 DESC")
    assert code == 0, output
    assert output.startswith("match: ")


def test_different_results_exit_1(shop: str) -> None:
    code, output = compare(shop, GOLD, "SELECT customer, MAX(total) FROM orders GROUP BY customer")
    assert code == EXIT_MISMATCH, output
    assert output.startswith("mismatch: ")


def test_a_failing_prediction_is_a_mismatch_not_invalid_gold(shop: str) -> None:
    code, output = compare(shop, GOLD, "SELECT customer FROM no_such_table")
    assert code == EXIT_MISMATCH, output
    assert output.startswith("mismatch: prediction failed")


def test_a_failing_gold_exits_7_whatever_the_prediction(shop: str) -> None:
    for pred in (GOLD, "SELECT 1", "SELECT * FROM no_such_table"):
        code, output = compare(shop, "SELECT customer FROM no_such_table", pred)
        assert code == EXIT_INVALID_GOLD, output
        assert output.startswith("invalid gold: the gold query failed")
        assert "no_such_table" in output


def test_json_output_keeps_the_exit_codes(shop: str) -> None:
    code, output = compare(shop, "SELECT nope FROM orders", GOLD, "--json")
    assert code == EXIT_INVALID_GOLD, output
    verdict = json.loads(output)
    assert verdict["match"] is False and verdict["details"]["invalid_gold"] is True

    code, output = compare(shop, GOLD, "SELECT 1", "--json")
    assert code == EXIT_MISMATCH
    assert json.loads(output)["details"]["invalid_gold"] is False


def test_the_process_exit_status_is_7(shop: str) -> None:
    # what a shell script sees: the status of a real process, not of an in-process runner
    done = subprocess.run(
        [sys.executable, "-m", "polysql.cli", "compare", "--db", shop,
         "--gold", "SELECT FROM WHERE", "--pred", "SELECT 1"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_INVALID_GOLD, done.stdout + done.stderr
    assert "invalid gold" in done.stdout




@pytest.mark.postgres
def test_sql_the_parser_reads_loosely_leaves_no_stray_warning(shop: str) -> None:
    """The PostgreSQL screen parses the prediction with sqlglot, which warns on stderr about a
    statement it can only read as a bare command; the CLI reports the refusal and nothing else."""
    admin = engine_postgres.admin_url()
    database = f"polysql_cli_compare_{os.getpid()}"
    copy = admin.set(database=database).render_as_string(hide_password=False)
    try:
        polysql.load(shop, copy)
    except EngineUnavailableError as exc:
        availability.unavailable("postgres", str(exc))
    try:
        process = subprocess.run(
            [sys.executable, "-m", "polysql.cli", "compare", "--db", shop, "--gold", GOLD,
             "--pred-db", copy, "--pred", "SET ROLE postgres"],
            capture_output=True, text=True, timeout=120)
    finally:
        drop_evaluation_database(admin, database)
    assert process.returncode == EXIT_MISMATCH, process.stdout + process.stderr
    assert process.stdout.startswith("mismatch: prediction failed with a forbidden error: only "
                                     "queries may run; this is a SET statement"), process.stdout
    assert "unsupported syntax" not in process.stdout + process.stderr


def test_set_semantics_and_a_policy_refused_before_any_query_runs(shop: str,
                                                                   tmp_path: Path) -> None:
    code, output = compare(shop, "SELECT customer FROM orders ORDER BY customer",
                           "SELECT DISTINCT customer FROM orders", "--policy",
                           "set_semantics=true")
    assert code == 0, output
    assert "same 2 distinct rows as sets" in output
    # Contradictory or unknown options stop the command before any engine is opened: on a
    # database that does not exist, the policy is what the error names.
    missing = f"sqlite:///{tmp_path / 'missing.sqlite'}"
    assert "does not exist" in compare(missing, "SELECT 1", "SELECT 1")[1]
    for extra in (("--policy", "set_semantics=true", "--ordered"),
                  ("--policy", "set_semantic=true")):
        code, output = compare(missing, "SELECT 1", "SELECT 1", *extra)
        assert code == 2, output
        assert "set_semantic" in output and "does not exist" not in output


def test_the_bird_preset_judges_as_bird_does(shop: str) -> None:
    """``--policy bird`` stands for the options that give BIRD's verdicts: an extra column or a
    number written as text is not the answer there, duplicates do not count; options after it
    override it; a word that names no preset is refused with the presets there are."""
    gold = "SELECT customer FROM orders"
    with_id = "SELECT id, customer FROM orders"
    assert compare(shop, gold, with_id)[0] == 0
    code, output = compare(shop, gold, with_id, "--policy", "bird")
    assert code == EXIT_MISMATCH, output
    assert compare(shop, gold, with_id, "--policy", "bird", "--policy", "align_by_name=true")[0] == 0
    assert compare(shop, gold, "SELECT DISTINCT customer FROM orders", "--policy", "bird")[0] == 0
    assert compare(shop, "SELECT 1", "SELECT '1'")[0] == 0
    assert compare(shop, "SELECT 1", "SELECT '1'", "--policy", "bird")[0] == EXIT_MISMATCH
    code, output = compare(shop, gold, gold, "--policy", "sparc")
    assert code == 2 and "KEY=VALUE or a preset (bird, spider)" in output, output
    # and Spider's: columns in any order, no column more, duplicates counted
    assert compare(shop, gold, with_id, "--policy", "spider")[0] == EXIT_MISMATCH
    assert compare(shop, with_id, "SELECT customer, id FROM orders", "--policy", "spider")[0] == 0
    assert compare(shop, gold, "SELECT DISTINCT customer FROM orders",
                   "--policy", "spider")[0] == EXIT_MISMATCH


# Terminates its own session when run inside the gold's re-run that returns the ORDER BY keys
# (recognised by the column names polysql gives the keys, in the statement of the session's
# cursor: results are fetched through one): an engine that goes away just then.
DIES_IN_THE_KEYED_RE_RUN = """
CREATE FUNCTION {schema}.k(x bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM pg_cursors WHERE strpos(statement, '__polysql_tie_key_') > 0) THEN
        PERFORM pg_terminate_backend(pg_backend_pid());
        PERFORM pg_sleep(5);  -- where the termination is noticed, at once
    END IF;
    RETURN x;
END $$
"""


@pytest.mark.postgres
def test_an_engine_gone_before_a_re_run_the_verdict_needs_exits_3(tmp_path: Path) -> None:
    """The gold (on a real PostgreSQL copy) orders by a key it does not return; the prediction
    is another order, so judging needs the gold re-run with its keys, and the server ends the
    session in that very re-run. That is an outage (exit 3, saying which re-run), never the
    mismatch the gold as written would have given."""
    from polysql_testkit import pg_fixtures  # its client is not in every install

    source = pg_fixtures.build_sqlite(tmp_path / "scores.sqlite", """
        CREATE TABLE scores (name TEXT, points INTEGER);
        INSERT INTO scores VALUES ('ann', 9), ('bob', 7), ('cy', 7), ('dee', 3);""")
    server = pg_fixtures.server_url()
    with pg_fixtures.evaluation_copy(server, source, "polysql_cli_rerun") as (copy, database):
        with pg_fixtures.admin_connection(server, database) as conn:
            (schema,) = conn.execute("SELECT table_schema FROM information_schema.tables "
                                     "WHERE table_name = 'scores'").fetchone()
            conn.execute(DIES_IN_THE_KEYED_RE_RUN.format(schema=schema))
        code, output = compare(copy, "SELECT name FROM scores ORDER BY k(points) DESC",
                               "SELECT name FROM scores ORDER BY points")
    assert code == 3, output
    assert "re-run of the gold returning its ORDER BY keys could not run" in output, output
    assert "mismatch" not in output
