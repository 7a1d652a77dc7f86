"""An engine that goes away in the middle of a sweep (a real PostgreSQL server, two workers each
on a connection of its own): connections cut under running statements are opened again and
nothing is lost; an engine that stays unreachable is abandoned once, its remaining work pending
and nothing recorded as the prediction's fault."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from polysql_testkit import pg_fixtures
from sqlalchemy.engine import URL

from polysql.core.store import RESULTS_FILE

QUESTIONS = 16


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[URL, Path, str]]:
    """The server, a BIRD-layout dataset whose one database has a name of its own (so its copy
    on the server is this test's alone), and that name. The copy is dropped afterwards."""
    server = pg_fixtures.server_url()
    db_id = pg_fixtures.unique("outage")
    folder = tmp_path / "dataset" / "dev_databases" / db_id
    folder.mkdir(parents=True)
    pg_fixtures.build_sqlite(folder / f"{db_id}.sqlite",
                             "CREATE TABLE item (id INTEGER PRIMARY KEY);"
                             "INSERT INTO item VALUES (1), (2), (3);")
    questions = [{"question_id": n, "db_id": db_id, "question": f"q{n}", "evidence": "",
                  "SQL": f"SELECT count(*) + {n} FROM item", "difficulty": "simple"}
                 for n in range(QUESTIONS)]
    (tmp_path / "dataset" / "dev.json").write_text(json.dumps(questions), encoding="utf-8")
    # each prediction runs long enough to be cut, and is its own statement (nothing cached)
    (tmp_path / "preds.jsonl").write_text("".join(
        json.dumps({"question_id": n, "sql": f"SELECT count(*) + {n} FROM item, pg_sleep(0.3)"})
        + "\n" for n in range(QUESTIONS)), encoding="utf-8")
    yield server, tmp_path, db_id
    with pg_fixtures.admin_connection(server, "postgres") as admin:
        for (name,) in admin.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                                     (f"%{db_id}%",)).fetchall():
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def start(server: URL, folder: Path, *more: str) -> subprocess.Popen[str]:
    env = {**os.environ, "POLYSQL_CACHE": str(folder / "cache")}
    url = server.render_as_string(hide_password=False)
    return subprocess.Popen(
        [sys.executable, "-m", "polysql.cli", "sweep", "--dataset", f"bird:{folder / 'dataset'}",
         "--engines", f"pg={url}", "--predictor", f"m={folder / 'preds.jsonl'}",
         "--workers", "2", "--out", str(folder / "run"), *more],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def run_sweep(server: URL, folder: Path, *more: str) -> tuple[int, str]:
    """A whole sweep (as :func:`start`, with ``more`` arguments): its exit code and output."""
    process = start(server, folder, *more)
    output, _ = process.communicate(timeout=120)
    return process.returncode, output


def records(folder: Path) -> list[dict[str, object]]:
    path = folder / "run" / RESULTS_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def copy_name(server: URL, db_id: str) -> str:
    """The name of the database the sweep copied ``db_id`` into on the server."""
    with pg_fixtures.admin_connection(server, "postgres") as admin:
        (name,) = admin.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                                (f"%{db_id}%",)).fetchone()
    return str(name)


def forget_run(folder: Path) -> None:
    """Remove the run folder and the execution cache: the next sweep runs every statement again
    (on the copy already built)."""
    shutil.rmtree(folder / "run")
    for cached in (folder / "cache").glob("executions.sqlite*"):
        cached.unlink()


def cut_connections(server: URL, db_id: str, *, keep_out: bool) -> int:
    """End every session on the copy of ``db_id`` (``keep_out``: and refuse new ones)."""
    name = copy_name(server, db_id)
    with pg_fixtures.admin_connection(server, "postgres") as admin:
        if keep_out:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        row = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                            "WHERE datname = %s AND pid <> pg_backend_pid()", (name,)).fetchone()
    return int(row[0])


def cut_after_some_records(server: URL, folder: Path, db_id: str, *,
                           keep_out: bool) -> tuple[int, str]:
    process = start(server, folder)
    deadline = time.monotonic() + 90
    while len(records(folder)) < 3:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the sweep wrote too few records: {process.communicate()[0]}")
        time.sleep(0.05)
    assert cut_connections(server, db_id, keep_out=keep_out) >= 1
    output, _ = process.communicate(timeout=120)
    return process.returncode, output


def test_connections_cut_under_running_statements_are_opened_again(
        setup: tuple[URL, Path, str]) -> None:
    server, folder, db_id = setup
    code, output = cut_after_some_records(server, folder, db_id, keep_out=False)
    assert code == 0, output
    written = records(folder)
    assert sorted(int(str(r["question_id"])) for r in written) == list(range(QUESTIONS))
    # the statements the cut interrupted ran again: no outage is anyone's answer
    assert {r["status"] for r in written} == {"match"}, output


def test_an_engine_that_stays_down_is_abandoned_and_its_work_stays_pending(
        setup: tuple[URL, Path, str]) -> None:
    server, folder, db_id = setup
    code, output = cut_after_some_records(server, folder, db_id, keep_out=True)
    assert code == 6, output
    assert output.count("engine pg abandoned") == 1, output
    written = records(folder)
    assert 3 <= len(written) < QUESTIONS
    assert {r["status"] for r in written} == {"match"}  # nothing recorded for the outage
    summary = json.loads((folder / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["status"] == "incomplete" and summary["pending"] == QUESTIONS - len(written)


def test_a_server_that_admits_one_connection_gets_one_worker(
        setup: tuple[URL, Path, str]) -> None:
    """The copy is built by a first sweep; then the database admits one evaluation connection
    at a time: the second worker cannot open its own, says so, and the first does all the work."""
    server, folder, db_id = setup
    first = start(server, folder)
    assert first.wait(timeout=120) == 0
    with pg_fixtures.admin_connection(server, "postgres") as admin:
        admin.execute(f'ALTER DATABASE "{copy_name(server, db_id)}" CONNECTION LIMIT 1')
    forget_run(folder)
    again = start(server, folder)
    output, _ = again.communicate(timeout=120)
    assert again.returncode == 0, output
    assert "a worker could not open a connection of its own" in output
    written = records(folder)
    assert sorted(int(str(r["question_id"])) for r in written) == list(range(QUESTIONS))
    assert {r["status"] for r in written} == {"match"}


def test_a_full_disk_on_the_server_leaves_the_statement_pending(
        setup: tuple[URL, Path, str]) -> None:
    """A prediction whose sort the server cannot spill for want of disk is not the prediction's
    error: the engine is abandoned with that work pending, as for any outage (a real full disk:
    see pg_fixtures.full_temp_tablespace)."""
    server, folder, db_id = setup
    spilling = 5
    (folder / "preds.jsonl").write_text("".join(
        json.dumps({"question_id": n, "sql": f"SELECT count(*) + {n} FROM item" + (
            f" WHERE ({pg_fixtures.SPILLING_QUERY}) > 0" if n == spilling else "")}) + "\n"
        for n in range(QUESTIONS)), encoding="utf-8")
    first = start(server, folder)  # builds the copy on the server; every answer right
    assert first.wait(timeout=120) == 0
    assert {r["status"] for r in records(folder)} == {"match"}
    with pg_fixtures.full_temp_tablespace(server) as tablespace:
        pg_fixtures.spill_to(server, copy_name(server, db_id), tablespace)
        forget_run(folder)
        again = start(server, folder)
        output, _ = again.communicate(timeout=120)
    assert again.returncode == 6, output
    assert output.count("engine pg abandoned") == 1, output
    assert "No space left on device" in output
    written = records(folder)
    assert spilling not in {int(str(r["question_id"])) for r in written}
    assert {r["status"] for r in written} <= {"match"}  # nothing recorded for the full disk
    summary = json.loads((folder / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["status"] == "incomplete" and summary["pending"] == QUESTIONS - len(written)


def test_a_login_the_server_refuses_abandons_the_engine_once_for_the_right_reason(
        setup: tuple[URL, Path, str]) -> None:
    """Two workers, neither able to log in: the copy cannot be opened at all, which is the
    engine's outage (said once, with the server's reason), not one worker short of a
    connection while 'the others go on'."""
    server, folder, db_id = setup
    code, output = run_sweep(server.set(username="polysql_no_such_role"), folder)
    assert code == 6, output
    assert output.count("engine pg abandoned") == 1, output
    assert 'role "polysql_no_such_role" does not exist' in output
    assert "could not open a connection of its own" not in output
    assert records(folder) == []
    summary = json.loads((folder / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["status"] == "incomplete" and summary["pending"] == QUESTIONS


def test_the_last_item_a_second_worker_cannot_run_is_run_by_the_first(
        setup: tuple[URL, Path, str]) -> None:
    """One question, two workers, a database admitting one evaluation connection: whichever
    worker takes the item, it is answered (the second worker hands it back when it cannot
    open its connection, perhaps after the first found nothing left to do)."""
    server, folder, db_id = setup
    first = start(server, folder)  # builds the copy
    assert first.wait(timeout=120) == 0
    with pg_fixtures.admin_connection(server, "postgres") as admin:
        admin.execute(f'ALTER DATABASE "{copy_name(server, db_id)}" CONNECTION LIMIT 1')
    for attempt in range(5):  # which worker takes the item first is the threads' race
        forget_run(folder)
        code, output = run_sweep(server, folder, "--limit", "1")
        assert code == 0, (attempt, output)
        written = records(folder)
        assert [r["status"] for r in written] == ["match"], (attempt, output)
