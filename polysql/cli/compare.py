"""``polysql compare``: run a gold and a predicted query and say whether their results match."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import ExitStack

import click
from rich.markup import escape

from polysql.backends.base import DEFAULT_MAX_ROWS
from polysql.cli.console import stdout
from polysql.cli.main import EXIT_INVALID_GOLD, EXIT_MISMATCH
from polysql.cli.options import parse_policy
from polysql.core.errors import EngineUnavailableError
from polysql.core.model import Result
from polysql.core.urls import parse_url
from polysql.engines.registry import connect
from polysql.normalizers.compare import check_order_request, resolve_policy
from polysql.normalizers.gold import judge_within_row_cap, run_gold


@click.command("compare")
@click.option("--db", "db_url", required=True, help="Engine URL for the gold query.")
@click.option("--gold", "gold_sql", required=True, help="Gold SQL.")
@click.option("--pred", "pred_sql", required=True, help="Predicted SQL.")
@click.option("--pred-db", "pred_url", default=None, help="Engine URL for the prediction (default --db).")
@click.option("--ordered/--unordered", default=None, help="Force order sensitivity (default: inferred).")
@click.option("--timeout", default=30.0, show_default=True)
@click.option("--policy", "policy_items", multiple=True,
              help="Comparison policy override KEY=VALUE, or a preset (bird, spider: those evaluators' own verdicts).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def compare_cmd(db_url: str, gold_sql: str, pred_sql: str, pred_url: str | None,
                ordered: bool | None, timeout: float, policy_items: tuple[str, ...],
                as_json: bool) -> None:
    """Run two queries and say whether their results match (exit 0) or not (exit 1); exit 7
    when the gold query itself fails, since then nothing can be judged."""
    # a bad or contradictory policy is refused before any query runs (the gold may be slow)
    policy = resolve_policy(None, parse_policy(policy_items))
    check_order_request(ordered, policy)
    with connect(db_url) as gold_engine, ExitStack() as stack:
        pred_engine = gold_engine if pred_url is None or pred_url == db_url \
            else stack.enter_context(connect(pred_url))

        def runner(max_rows: int) -> Callable[[str], Result]:
            return lambda sql: gold_engine.execute(sql, timeout=timeout, max_rows=max_rows)

        def rerun(max_rows: int) -> tuple[Callable[[str], Result], Result]:
            return runner(max_rows), pred_engine.execute(pred_sql, timeout=timeout,
                                                         max_rows=max_rows)

        run = runner(DEFAULT_MAX_ROWS)
        gold = run_gold(gold_sql, gold_engine.dialect, run, deferred=True)
        _usable(gold.result, db_url)
        pred = pred_engine.execute(pred_sql, timeout=timeout, max_rows=DEFAULT_MAX_ROWS)
        _usable(pred, pred_url or db_url)
        verdict = judge_within_row_cap(gold, pred, run, rerun, DEFAULT_MAX_ROWS, ordered=ordered,
                                       policy=policy).verdict
    if as_json:
        stdout.print_json(json.dumps(verdict.to_dict(), default=str))
    else:
        reason = verdict.reason
        if verdict.details.get("invalid_gold"):
            mark, reason = "[red]invalid gold[/]", reason.removeprefix("invalid gold: ")
        else:
            mark = "[green]match[/]" if verdict.match else "[red]mismatch[/]"
        stdout.print(f"{mark}: {escape(reason)}", highlight=False)
    if verdict.match:
        sys.exit(0)
    # a failed gold is the reference's fault, not the prediction's: scripts must tell them apart
    sys.exit(EXIT_INVALID_GOLD if verdict.details.get("invalid_gold") else EXIT_MISMATCH)


def _usable(result: Result, url: str) -> None:
    """An engine that could not run the statement at all (gone away, or refusing the login):
    the engine's problem, exit 3 like any unusable engine -- never a verdict on the SQL."""
    if result.unavailable:
        assert result.error is not None
        shown = parse_url(url).render_as_string(hide_password=True)
        raise EngineUnavailableError(f"{shown} could not run the query: "
                                     f"{result.error.message}")
