"""Deferred gold re-runs (real SQLite): a prediction that is the gold's own rows in the gold's
own order is judged without them, and so is one that failed; any other gets them, with the same
verdict as when they were made up front."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from polysql_testkit.counted_runs import counting
from polysql_testkit.sqlite_files import built_sqlite

import polysql
from polysql.backends.base import Backend
from polysql.core.errors import EvidenceUnavailableError
from polysql.core.model import Result
from polysql.normalizers.gold import judge, judge_within_row_cap, run_gold

# ORDER BY a key the gold does not return, cut by a LIMIT inside a tie group: both re-runs
GOLD = "SELECT name FROM scores ORDER BY points DESC LIMIT 2"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    path: Path = tmp_path_factory.mktemp("deferred") / "s.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE scores (name TEXT, points INTEGER)")
        conn.executemany("INSERT INTO scores VALUES (?, ?)",
                         [("ann", 9), ("bob", 7), ("cy", 7), ("dee", 7), ("eve", 1)])
    with polysql.connect(f"sqlite:///{path}") as backend:
        yield backend


def test_the_gold_own_rows_need_no_re_run(engine: Backend) -> None:
    run, ran = counting(engine)
    gold = run_gold(GOLD, "sqlite", run, deferred=True)
    assert ran == [GOLD] and gold.pending is not None
    verdict = judge(gold, engine.execute(GOLD), run)
    assert verdict.match and verdict.reason == "same 2 rows in the same order"
    assert ran == [GOLD] and gold.pending is not None


@pytest.mark.parametrize("pred_sql, match", [
    # another row of the tie group the LIMIT cuts: the re-runs show it is tied
    ("SELECT name FROM scores WHERE name <> 'bob' ORDER BY points DESC LIMIT 2", True),
    ("SELECT name FROM scores ORDER BY points LIMIT 2", False),
])
def test_another_answer_gets_the_re_runs_and_the_eager_verdict(
        engine: Backend, pred_sql: str, match: bool) -> None:
    run, ran = counting(engine)
    pred = engine.execute(pred_sql)
    deferred = run_gold(GOLD, "sqlite", run, deferred=True)
    verdict = judge(deferred, pred, run)
    assert verdict.match is match, verdict.reason
    # the gold, its keyed and widened re-runs (then, for a miss, the NULL-order re-runs)
    assert deferred.pending is None and len(ran) >= 3 and "LIMIT 1002" in ran[2]
    eager = judge(run_gold(GOLD, "sqlite", engine.execute), pred, engine.execute)
    assert (verdict.match, verdict.reason) == (eager.match, eager.reason)


def test_a_failed_prediction_gets_no_re_run(engine: Backend) -> None:
    run, ran = counting(engine)
    gold = run_gold(GOLD, "sqlite", run, deferred=True)
    pred = engine.execute("SELECT nam FROM scores ORDER BY points DESC LIMIT 2")
    verdict = judge(gold, pred, run)
    assert not verdict.match and verdict.details["rule"] == "pred_error"
    assert ran == [GOLD] and gold.pending is not None
    eager = judge(run_gold(GOLD, "sqlite", engine.execute), pred, engine.execute)
    assert (verdict.match, verdict.reason) == (eager.match, eager.reason)


def test_a_gold_without_order_or_limit_defers_nothing(engine: Backend) -> None:
    run, ran = counting(engine)
    gold = run_gold("SELECT name FROM scores", "sqlite", run, deferred=True)
    assert gold.pending is None and ran == ["SELECT name FROM scores"]


def test_unresolved_keys_as_a_bag_always_get_the_re_runs(engine: Backend) -> None:
    """As a bag, rows in another order would match the gold as written but not the keyed
    re-run, which resolves the ORDER BY: the re-runs decide."""
    run, ran = counting(engine)
    pred = engine.execute("SELECT name FROM (SELECT name FROM scores ORDER BY points DESC "
                          "LIMIT 2) ORDER BY name DESC")
    deferred = run_gold(GOLD, "sqlite", run, deferred=True)
    verdict = judge(deferred, pred, run, unresolved_order_keys="bag")
    eager = judge(run_gold(GOLD, "sqlite", engine.execute), pred, engine.execute,
                  unresolved_order_keys="bag")
    assert deferred.pending is None and len(ran) >= 3
    assert (verdict.match, verdict.reason) == (eager.match, eager.reason)


def test_a_thread_waiting_for_another_making_the_re_runs_says_so(engine: Backend) -> None:
    """Two threads judge against one deferred gold at once: the re-runs are made once, and the
    thread that waits for them enters ``waiting`` (a sweep counts that wait nowhere)."""
    started, release = threading.Event(), threading.Event()
    run, ran = counting(engine)

    def slow_run(sql: str) -> Result:
        if sql != GOLD:  # a re-run: hold it until the other thread is waiting
            started.set()
            release.wait(5)
        return run(sql)

    waits: list[str] = []

    @contextlib.contextmanager
    def waiting() -> Iterator[None]:
        waits.append(threading.current_thread().name)
        release.set()
        yield

    gold = run_gold(GOLD, "sqlite", slow_run, deferred=True, waiting=waiting)
    other = engine.execute("SELECT name FROM scores ORDER BY points DESC, name DESC LIMIT 2")
    first = threading.Thread(target=gold.gather, name="first")
    first.start()
    assert started.wait(5)
    judged = judge(gold, other, slow_run)  # this thread finds the re-runs being made
    first.join(5)
    assert waits and "first" not in waits
    assert len([sql for sql in ran if sql != GOLD]) == 2  # keyed and widened, once each
    assert judged.match, judged.reason


@pytest.fixture
def closing(tmp_path: Path) -> Iterator[Backend]:
    """A connection of its own to a copy of the scores, for a test to close under the judge."""
    path = built_sqlite(tmp_path / "s.sqlite", lambda conn: conn.executescript(
        "CREATE TABLE scores (name TEXT, points INTEGER);"
        "INSERT INTO scores VALUES ('ann', 9), ('bob', 7), ('cy', NULL), ('dee', 7), ('eve', 1)"))
    with polysql.connect(f"sqlite:///{path}") as backend:
        yield backend


def test_an_engine_gone_before_the_re_runs_withholds_the_verdict(closing: Backend) -> None:
    gold = run_gold(GOLD, "sqlite", closing.execute, deferred=True)
    pred = closing.execute("SELECT name FROM scores ORDER BY points LIMIT 2")
    closing.close()  # the engine goes away between the gold's run and its re-runs
    with pytest.raises(EvidenceUnavailableError) as caught:
        judge(gold, pred, closing.execute)
    assert caught.value.side == "gold"
    assert "re-run of the gold returning its ORDER BY keys could not run on sqlite" in \
        str(caught.value)
    assert gold.pending is not None  # kept: judging again, the engine back, makes them


def test_an_engine_gone_before_the_null_order_re_run_withholds_the_verdict(
        closing: Backend) -> None:
    # NULLs sort first in SQLite; a prediction with them last misses the gold as run, and a
    # LIMIT means only a re-run under the other convention can tell
    gold_sql = "SELECT name FROM scores ORDER BY points LIMIT 4"
    gold = run_gold(gold_sql, "sqlite", closing.execute)  # its own re-runs made up front
    pred = closing.execute("SELECT name FROM scores ORDER BY points IS NULL, points LIMIT 4")
    assert judge(gold, pred, closing.execute).match  # the re-run shows it right
    closing.close()
    with pytest.raises(EvidenceUnavailableError) as caught:
        judge(gold, pred, closing.execute)
    assert caught.value.side == "gold" and "NULLs ordered by" in str(caught.value)


def test_a_prediction_engine_gone_before_the_higher_cap_re_run_withholds_the_verdict(
        engine: Backend, closing: Backend) -> None:
    # both cut at a cap of 2 rows: the verdict rests on rows only a higher cap shows
    sql = "SELECT name FROM scores"
    gold = run_gold(sql, "sqlite", lambda text: engine.execute(text, max_rows=2))
    pred = closing.execute(sql, max_rows=2)
    assert gold.result.truncated and pred.truncated
    closing.close()  # the prediction's engine goes away before its re-run

    def rerun(cap: int) -> tuple[Callable[[str], Result], Result]:
        return (lambda text: engine.execute(text, max_rows=cap),
                closing.execute(sql, max_rows=cap))

    with pytest.raises(EvidenceUnavailableError) as caught:
        judge_within_row_cap(gold, pred, engine.execute, rerun, 2)
    assert caught.value.side == "prediction"
    assert "re-run of the prediction under a row cap of 20" in str(caught.value)
