"""Verdicts on results cut at the row cap (real SQLite): re-run under a higher cap when the rows
cut off could change them, and said to rest on cut rows when they still do."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import polysql
from polysql.backends.base import Backend
from polysql.core.model import Result
from polysql.normalizers.gold import (
    Judged,
    judge_within_row_cap,
    rests_on_cut_rows,
    run_gold,
)
from polysql.normalizers.policy import ROW_CAP_GROWTH

ROWS = 300


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    path = tmp_path_factory.mktemp("row_cap") / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(ROWS)])
    with polysql.connect(f"sqlite:///{path}") as backend:
        yield backend


def judged(engine: Backend, gold_sql: str, pred_sql: str, cap: int,
           reruns: list[int] | None = None, **policy: object) -> Judged:
    def runner(max_rows: int) -> Callable[[str], Result]:
        return lambda sql: engine.execute(sql, max_rows=max_rows)

    def rerun(max_rows: int) -> tuple[Callable[[str], Result], Result]:
        if reruns is not None:
            reruns.append(max_rows)
        return runner(max_rows), engine.execute(pred_sql, max_rows=max_rows)

    gold = run_gold(gold_sql, "sqlite", runner(cap))
    pred = engine.execute(pred_sql, max_rows=cap)
    return judge_within_row_cap(gold, pred, runner(cap), rerun, cap, **policy)


def test_each_engine_keeping_other_rows_under_the_cap_is_the_same_answer(engine: Backend) -> None:
    outcome = judged(engine, "SELECT x FROM t", "SELECT x FROM t ORDER BY x DESC", 100)
    assert outcome.verdict.match, outcome.verdict.reason
    assert outcome.verdict.details["row_cap"] == 100 * ROW_CAP_GROWTH
    assert "rests_on_cut_rows" not in outcome.verdict.details
    assert len(outcome.pred.rows) == ROWS and not outcome.pred.truncated
    assert len(outcome.gold.result.rows) == ROWS


def test_equal_first_rows_of_different_answers_differ(engine: Backend) -> None:
    # ordered: the first 100 rows agree, the prediction lacks the last 50
    outcome = judged(engine, "SELECT x FROM t ORDER BY x", "SELECT x FROM t WHERE x < 250 ORDER BY x",
                     100)
    assert not outcome.verdict.match
    assert "gold has 300 rows, predicted 250" in outcome.verdict.reason


def test_one_cut_bag_is_judged_without_running_again(engine: Backend) -> None:
    reruns: list[int] = []
    outcome = judged(engine, "SELECT x FROM t WHERE x < 50", "SELECT x FROM t", 100, reruns)
    assert not outcome.verdict.match and reruns == []
    assert "rests_on_cut_rows" not in outcome.verdict.details


def test_one_cut_side_is_run_again_as_sets(engine: Backend) -> None:
    reruns: list[int] = []
    outcome = judged(engine, "SELECT x FROM t", "SELECT x FROM t UNION ALL SELECT x FROM t", 400,
                     reruns, set_semantics=True)
    assert outcome.verdict.match, outcome.verdict.reason
    assert reruns == [4000]


def test_a_verdict_still_on_cut_rows_says_so(engine: Backend) -> None:
    outcome = judged(engine, "SELECT x FROM t", "SELECT x FROM t ORDER BY x DESC", 10)
    verdict = outcome.verdict
    assert verdict.details["rests_on_cut_rows"] is True and verdict.details["row_cap"] == 100
    assert verdict.reason.startswith("gold and predicted result truncated at the row cap")


def test_what_can_change_a_verdict() -> None:
    whole, cut = Result(["x"], [(1,)]), Result(["x"], [(1,)], truncated=True)
    failed = Result.failed("runtime", "no such table")
    assert rests_on_cut_rows(cut, cut, set_semantics=False)
    assert not rests_on_cut_rows(cut, whole, set_semantics=False)
    assert not rests_on_cut_rows(whole, cut, set_semantics=False)
    assert rests_on_cut_rows(whole, cut, set_semantics=True)
    assert not rests_on_cut_rows(cut, failed, set_semantics=True)


def test_polysql_compare_judges_past_the_default_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE big (x INTEGER PRIMARY KEY)")
        conn.executemany("INSERT INTO big VALUES (?)", [(i,) for i in range(150_000)])
    done = subprocess.run([sys.executable, "-m", "polysql.cli", "compare", "--db", f"sqlite:///{path}",
                           "--gold", "SELECT x FROM big",
                           "--pred", "SELECT x FROM big ORDER BY x DESC"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "same 150000 rows as a bag" in done.stdout


def test_the_cut_rows_are_not_judged_when_a_rerun_replaces_them(
        engine: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """Judging two cut sides of a large result costs as much as judging the re-run's: once a
    re-run is made and runs, only its results are judged; a failed re-run falls back to them."""
    import polysql.normalizers.gold as gold_module

    judged_sizes: list[int] = []
    real_judge = gold_module.judge

    def counting_judge(gold, pred, *args, **kwargs):  # the real judge, counted
        judged_sizes.append(len(pred.rows))
        return real_judge(gold, pred, *args, **kwargs)

    monkeypatch.setattr(gold_module, "judge", counting_judge)
    outcome = judged(engine, "SELECT x FROM t", "SELECT x FROM t ORDER BY x DESC", 100)
    assert outcome.verdict.match and judged_sizes == [ROWS]

    judged_sizes.clear()
    gold = run_gold("SELECT x FROM t", "sqlite", lambda sql: engine.execute(sql, max_rows=100))
    pred = engine.execute("SELECT x FROM t ORDER BY x DESC", max_rows=100)

    def failing_rerun(max_rows: int) -> tuple[Callable[[str], Result], Result]:
        return (lambda sql: engine.execute(sql, max_rows=max_rows),
                Result.failed("timeout", "statement exceeded the 30s timeout"))

    fallback = judge_within_row_cap(gold, pred, None, failing_rerun, 100)
    assert judged_sizes == [100]
    assert not fallback.verdict.match and fallback.verdict.details["rests_on_cut_rows"]
