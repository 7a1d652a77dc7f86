"""Judge a predicted query against a gold one by running both, with every re-run the verdict needs.

Comparing two results already in hand (:func:`polysql.compare`) can only apply the rules the rows
themselves settle. Some verdicts need the gold run again on its engine: ties among rows ordered by
keys the gold does not return, a tie group its LIMIT cut, NULLs placed by another engine's
convention under a LIMIT, and results the row cap cut off on both sides. A sweep and
``polysql compare`` make those re-runs; :func:`compare_queries` is the same judgement for a
caller holding two queries and their engines, so every entry point reaches the same verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import URL

from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from polysql.core.errors import EngineUnavailableError
from polysql.core.model import Result, Verdict
from polysql.engines.registry import connect
from polysql.normalizers.compare import check_order_request, resolve_policy
from polysql.normalizers.gold import GoldRuns, judge_within_row_cap, run_gold

if TYPE_CHECKING:
    from polysql.backends.base import Backend


def compare_queries(gold_sql: str, pred_sql: str, engine: Backend | str | URL,
                    pred_engine: Backend | str | URL | None = None, *,
                    ordered: bool | None = None, timeout: float = DEFAULT_TIMEOUT,
                    max_rows: int = DEFAULT_MAX_ROWS, **policy: Any) -> Verdict:
    """Run ``gold_sql`` on ``engine`` and ``pred_sql`` on ``pred_engine`` (default: ``engine``)
    and judge the prediction as a sweep does: the comparison contract, plus the gold re-runs it
    needs (its ORDER BY keys returned, its LIMIT widened, NULLs placed by the prediction engine's
    convention) and both re-run under a higher row cap when the verdict rests on rows the cap
    cut off. Engines are Backends or engine URLs (opened read-only here and closed after).

    A gold that fails gives a verdict with ``details["invalid_gold"]``; a prediction that fails,
    a mismatch. An engine that cannot run a statement at all raises EngineUnavailableError
    (EvidenceUnavailableError for a re-run): an outage is never a verdict. ``policy``: compare's
    options, or ``policy=`` a preset name or a ComparePolicy; an unknown option raises
    ComparisonError before anything runs.
    """
    _check_policy(ordered, policy)
    with ExitStack() as opened:
        gold_engine = _backend(engine, opened)
        predicting = gold_engine if pred_engine is None else _backend(pred_engine, opened)
        gold = _run_gold(gold_sql, gold_engine, timeout, max_rows)
        pred = predicting.execute(pred_sql, timeout=timeout, max_rows=max_rows)
        return _judge(gold, pred_sql, pred, gold_engine, predicting, ordered=ordered,
                      timeout=timeout, max_rows=max_rows, **policy)


def judge_prediction(gold_sql: str, pred_sql: str, pred: Result, engine: Backend,
                     pred_engine: Backend | None = None, *, ordered: bool | None = None,
                     timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
                     **policy: Any) -> Verdict:
    """:func:`compare_queries` for a prediction already run: ``pred`` is ``pred_sql``'s result
    on ``pred_engine`` (default: ``engine``) under ``timeout`` and ``max_rows``, run again only
    under a higher row cap when the verdict needs it. One prediction can so be judged against
    several golds without running it for each."""
    _check_policy(ordered, policy)
    predicting = engine if pred_engine is None else pred_engine
    gold = _run_gold(gold_sql, engine, timeout, max_rows)
    return _judge(gold, pred_sql, pred, engine, predicting, ordered=ordered, timeout=timeout,
                  max_rows=max_rows, **policy)


def _check_policy(ordered: bool | None, policy: dict[str, Any]) -> None:
    """Refuse an unknown or contradictory policy before anything runs (a gold may be slow)."""
    options = {key: value for key, value in policy.items() if key != "policy"}
    check_order_request(ordered, resolve_policy(policy.get("policy"), options))


def _run_gold(gold_sql: str, engine: Backend, timeout: float, max_rows: int) -> GoldRuns:
    gold = run_gold(gold_sql, engine.dialect, _runner(engine, timeout, max_rows), deferred=True)
    _usable(gold.result, engine, "gold")
    return gold


def _runner(engine: Backend, timeout: float, max_rows: int) -> Callable[[str], Result]:
    return lambda sql: engine.execute(sql, timeout=timeout, max_rows=max_rows)


def _judge(gold: GoldRuns, pred_sql: str, pred: Result, gold_engine: Backend,
           pred_engine: Backend, *, ordered: bool | None, timeout: float, max_rows: int,
           **policy: Any) -> Verdict:
    _usable(pred, pred_engine, "predicted")

    def rerun(cap: int) -> tuple[Callable[[str], Result], Result]:
        return (_runner(gold_engine, timeout, cap),
                pred_engine.execute(pred_sql, timeout=timeout, max_rows=cap))

    return judge_within_row_cap(gold, pred, _runner(gold_engine, timeout, max_rows), rerun,
                                max_rows, ordered=ordered, **policy).verdict


def _backend(engine: Backend | str | URL, opened: ExitStack) -> Backend:
    """``engine`` itself, or the engine its URL names, opened for this call only."""
    if isinstance(engine, str | URL):
        return opened.enter_context(connect(engine))
    return engine


def _usable(result: Result, engine: Backend, which: str) -> None:
    """An engine that could not run the statement at all (gone away, or refusing the login):
    the engine's problem, never a verdict on the SQL."""
    if result.unavailable:
        assert result.error is not None
        shown = engine.url.render_as_string(hide_password=True)
        raise EngineUnavailableError(f"{shown} could not run the {which} query: "
                                     f"{result.error.message}")
