"""``polysql debug``: evaluate SQL-debugging predictions (see docs/debug.md)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from polysql.debug.evaluate import (
    METRICS,
    DemoBackends,
    evaluate,
    load_tasks,
    make_predictor,
    summarize,
    write_reports,
)

stdout = Console(soft_wrap=True)


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate * 100:.1f}%"


def _table(title: str, rows: list[dict[str, object]]) -> Table:
    table = Table(title=title)
    table.add_column("group")
    table.add_column("tasks", justify="right")
    for metric in METRICS:
        table.add_column(metric, justify="right")
    for row in rows:
        table.add_row(str(row["group"]), str(row["tasks"]),
                      *(_percent(row[metric]) for metric in METRICS))  # type: ignore[arg-type]
    return table


@click.group("debug")
def debug_group() -> None:
    """SQL-debugging evaluation: buggy script + error or issue report -> fixed SQL."""


@debug_group.command("eval")
@click.option("--tasks", "tasks_path", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="Tasks YAML (default: the bundled demo tasks).")
@click.option("--predictor", default="reference", show_default=True,
              help="reference | identity | file:PATH (JSONL of {id, sql}) | llm:MODEL")
@click.option("--engine", "engine_url", default=None,
              help="Engine (name or URL) every task's database is copied onto for execution "
                   "match (default: for each task, the engine that speaks its dialect).")
@click.option("--no-execution", is_flag=True, help="Skip execution match (no database needed).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Write debug_tasks.csv, debug_summary.json and debug_report.md here.")
def eval_command(tasks_path: Path | None, predictor: str, engine_url: str | None,
                 no_execution: bool, out_dir: Path | None) -> None:
    """Score a predictor's fixes with Exact, Graph, Modify-Better and execution match."""
    tasks = load_tasks(tasks_path)
    predict = make_predictor(predictor)
    if no_execution:
        results = evaluate(tasks, predict)
    else:
        with DemoBackends(engine_url) as backends:
            results = evaluate(tasks, predict, backends)
    stdout.print(_table(f"debug eval: {predictor} ({len(results)} tasks)", summarize(results)))
    stdout.print(_table("by taxonomy level 1", summarize(results, 1)))
    stdout.print(_table("by taxonomy level 2", summarize(results, 2)))
    if out_dir is not None:
        for path in write_reports(results, out_dir, predictor):
            stdout.print(f"wrote {path}")
