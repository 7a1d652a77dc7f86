"""``polysql reward``: grade one action on an optimization task, or run the mask ablation."""

from __future__ import annotations

import json
from pathlib import Path

import click

from polysql.datasets.reward.tasks import RewardTask, load_tasks
from polysql.engines.registry import default_grading_engine
from polysql.reward.env import Action, GradeMask, RewardEnv, Weights, combine

__all__ = ["POLICIES", "policy_action", "reward_group"]

POLICIES = ("original", "reference", "empty")


def policy_action(policy: str, task: RewardTask) -> Action:
    """The baseline action a policy takes on ``task``."""
    if policy == "original":
        return Action(sql=task.original_sql)
    if policy == "reference":
        return Action(sql=task.reference_sql, issues=task.issues, summary=task.reference_summary)
    if policy == "empty":
        return Action()
    raise click.BadParameter(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")


def _weights(text: str | None) -> Weights:
    if not text:
        return Weights()
    values: dict[str, float] = {}
    for item in text.split(","):
        name, _, number = item.partition("=")
        try:
            values[name.strip()] = float(number)
        except ValueError:
            raise click.BadParameter(f"expected NAME=NUMBER, got {item!r}") from None
    try:
        return Weights(**values)
    except TypeError as exc:
        raise click.BadParameter(str(exc)) from None


_engine = click.option("--engine", default=default_grading_engine(), show_default=True,
                       help="engine short name or URL")
_tasks = click.option("--tasks", "tasks_path", type=click.Path(exists=True, path_type=Path),
                      default=None, help="task file (default: the bundled set)")
_runs = click.option("--runs", default=5, show_default=True, help="measured timing rounds")
_timeout = click.option("--timeout", default=10.0, show_default=True, help="seconds per run")
_weights_opt = click.option("--weights", default=None,
                            help="e.g. speedup=0.35,correctness=0.2,issues=0.25,summary=0.2")


@click.group("reward")
def reward_group() -> None:
    """Execution-grounded reward over query-optimization tasks."""


@reward_group.command("grade")
@click.argument("task_id")
@click.option("--sql-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="the optimized SQL (omit for an empty submission)")
@click.option("--issue", "issues", multiple=True, help="a suggested issue type (repeatable)")
@click.option("--summary", default="", help="a short explanation of the optimization")
@_engine
@_tasks
@_runs
@_timeout
@_weights_opt
def grade_command(task_id: str, sql_file: Path | None, issues: tuple[str, ...], summary: str,
                  engine: str, tasks_path: Path | None, runs: int, timeout: float,
                  weights: str | None) -> None:
    """Grade one action on TASK_ID and print the grade as JSON."""
    sql = sql_file.read_text(encoding="utf-8") if sql_file else ""
    with RewardEnv(load_tasks(tasks_path), engine, runs=runs, timeout=timeout,
                   weights=_weights(weights)) as env:
        grade = env.grade(Action(sql=sql, issues=issues, summary=summary), task_id)
    click.echo(json.dumps(grade.to_dict(), indent=2, default=str))


@reward_group.command("ablate")
@click.option("--policy", type=click.Choice(POLICIES), default="reference", show_default=True)
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write the table as JSON here")
@_engine
@_tasks
@_runs
@_timeout
@_weights_opt
def ablate_command(policy: str, output: Path | None, engine: str, tasks_path: Path | None,
                   runs: int, timeout: float, weights: str | None) -> None:
    """Mean reward per component mask for a baseline POLICY over the task set.

    Each task is executed and graded once; every mask then recombines the same component
    scores, so masks differ only by what they count, not by timing noise.
    """
    tasks = load_tasks(tasks_path)
    chosen = _weights(weights)
    with RewardEnv(tasks, engine, runs=runs, timeout=timeout, weights=chosen) as env:
        grades = [env.grade(policy_action(policy, task), task.id) for task in tasks]
    rows = []
    for mask in GradeMask.ablations():
        totals = [combine(g.scores, g.results_match, chosen, mask) for g in grades]
        rows.append({"mask": mask.name, "mean_reward": sum(totals) / len(totals),
                     "tasks": len(totals)})
    click.echo(f"policy={policy} engine={engine} tasks={len(tasks)}")
    click.echo(f"{'mask':<24} mean_reward")
    for row in rows:
        click.echo(f"{row['mask']:<24} {row['mean_reward']:.4f}")
    if output is not None:
        output.write_text(json.dumps({"policy": policy, "engine": engine, "rows": rows,
                                      "grades": [g.to_dict() for g in grades]},
                                     indent=2, default=str), encoding="utf-8")
