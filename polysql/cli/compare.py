"""``polysql compare``: run a gold and a predicted query and say whether their results match."""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from polysql.cli.console import stdout
from polysql.cli.main import EXIT_INVALID_GOLD, EXIT_MISMATCH
from polysql.cli.options import parse_policy
from polysql.engines.judging import compare_queries
from polysql.normalizers.compare import resolve_policy


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
    same_engine = pred_url is None or pred_url == db_url
    verdict = compare_queries(gold_sql, pred_sql, db_url, None if same_engine else pred_url,
                              ordered=ordered, timeout=timeout, policy=policy)
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
