"""``polysql sweep``: run a dataset's questions with every predictor on every engine."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from polysql.analysis.reports.sweep import cut_note, policy_note, timeout_note, write_reports
from polysql.cli.console import console, stdout
from polysql.cli.main import (
    EXIT_DATA,
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    traceback_enabled,
)
from polysql.cli.options import parse_policy
from polysql.sweep.config import SweepConfig, default_engines
from polysql.sweep.outcome import SweepOutcome
from polysql.sweep.progress import SweepObserver
from polysql.sweep.runner import Sweep
from polysql.sweep.timings import STAGES, SweepTimings


class RichObserver(SweepObserver):
    """Progress bars for a sweep: counts, accuracy so far and ETA; with models, one more bar per
    model for its requests, so generation and execution are both visible."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task: TaskID | None = None
        self.generating: dict[str, TaskID] = {}
        self.matches = 0
        self.seen = 0
        self._lock = threading.Lock()  # several workers advance the same bar

    def phase(self, name: str, total: int) -> None:
        if self.task is not None:
            self.progress.update(self.task, visible=False)
        label = "gold queries" if name == "gold" else "predictions"
        self.task = self.progress.add_task(label, total=total, acc="")

    def advance(self, record: dict[str, Any] | None = None) -> None:
        if self.task is None:
            return
        acc = ""
        with self._lock:
            if record is not None and record["status"] != "invalid_gold":
                self.seen += 1
                self.matches += int(record["status"] == "match")
                acc = f"acc {100 * self.matches / self.seen:.1f}%"
            self.progress.update(self.task, advance=1, **({"acc": acc} if acc else {}))

    def message(self, text: str) -> None:
        self.progress.console.print(escape(text), highlight=False)

    def generation(self, predictor: str, total: int) -> None:
        self.generating[predictor] = self.progress.add_task(f"generate {predictor}", total=total, acc="")

    def generated(self, predictor: str) -> None:
        task = self.generating.get(predictor)
        if task is not None:
            self.progress.update(task, advance=1)


def _summary_table(outcome: SweepOutcome, run_info: dict[str, Any]) -> Table:
    summary = outcome.summary
    title = f"accuracy — {', '.join(summary.datasets)}"
    if not summary.complete or outcome.interrupted:
        title += f" — INCOMPLETE: {summary.pending} pending"
    captions = [note for note in (policy_note(run_info), cut_note(summary, run_info),
                                  timeout_note(summary, run_info)) if note]
    table = Table(title=title, caption=" ".join(captions) or None)
    columns = ["predictor", "engine", "accuracy", "95% CI", "ok/n", "errors", "no SQL", "invalid gold"]
    if summary.cut:
        columns.append("cut at cap")
    if summary.pending:
        columns.append("pending")
    for col in columns:
        table.add_column(col, justify="left" if col in ("predictor", "engine") else "right")
    for c in summary.cells:
        errors = sum(c.error_kinds.values())
        accuracy = "—" if c.accuracy is None else f"{100 * c.accuracy:.1f}%"
        ci = "—" if c.ci_low is None or c.ci_high is None else \
            f"{100 * c.ci_low:.1f}–{100 * c.ci_high:.1f}"
        if c.pending and c.accuracy is not None:
            accuracy += " (partial)"
        row = [escape(c.predictor), escape(c.engine), accuracy, ci, f"{c.correct}/{c.total}",
               str(errors), str(c.statuses.get("generation_failure", 0)), str(c.invalid_gold)]
        if summary.cut:
            row.append(str(c.cut))
        if summary.pending:
            row.append(str(c.pending))
        table.add_row(*row)
    return table


def _usage_table(models: dict[str, dict[str, Any]]) -> Table:
    table = Table(title="model usage (this run)")
    for col in ("model", "calls", "cached", "prompt tok", "output tok", "errors", "wall time"):
        table.add_column(col, justify="left" if col == "model" else "right")
    for name, u in models.items():
        table.add_row(name, str(u["calls"]), str(u["cache_hits"]), str(u["prompt_tokens"]),
                      str(u["completion_tokens"]), str(u["errors"]), f"{u['wall_time']:.1f} s")
    return table


@click.command()
@click.option("--dataset", "-d", default="demo", show_default=True,
              help="Dataset: 'demo', 'bird:PATH', 'spider:PATH'.")
@click.option("--engines", "-e", default=default_engines(), show_default=True,
              help="Comma-separated engine names or NAME=URL items.")
@click.option("--predictor", "-p", "predictors", default=None,
              help="Comma-separated: gold, transpile, file:PATH.jsonl, NAME=PATH.jsonl, llm:MODEL "
                   "[default: gold,transpile, or none when --model is given].")
@click.option("--model", "-m", "models", multiple=True,
              help="Model(s) from the config file to evaluate (repeatable or comma-separated).")
@click.option("--config", "model_config", type=click.Path(path_type=Path), default=None,
              help="Model config file with [models.NAME] tables [default: ./polysql.toml].")
@click.option("--prompt-level", type=click.Choice(["generic", "dialect", "pitfalls"]), default="dialect",
              show_default=True, help="Name nothing, name the engine and version, or also list its pitfalls.")
@click.option("--cot", is_flag=True, help="Ask models to reason step by step before the query.")
@click.option("--sample-rows", default=0, show_default=True, help="Example rows per table in model prompts.")
@click.option("--prompt-template", default="text2sql", show_default=True,
              help="Prompt template: a shipped name (text2sql, text2sql_v1) or a path to a .j2 file.")
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Run folder (default runs/<dataset>). Re-running with the same folder resumes.")
@click.option("--timeout", default=30.0, show_default=True, help="Seconds per query.")
@click.option("--max-rows", default=100_000, show_default=True, help="Rows kept per result.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Statements run at once on each engine that serves several (SQLite, DuckDB, "
                   "PostgreSQL, MySQL) and for gold queries [default: one per core, up to 4].")
@click.option("--question", "question_ids", multiple=True, help="Only these question ids (repeatable).")
@click.option("--limit", type=int, default=None, help="Only the first N questions.")
@click.option("--policy", "policy_items", multiple=True,
              help="Comparison policy override KEY=VALUE, or a preset (bird, spider: those "
                   "evaluators' own verdicts); see docs/comparison.md; repeatable.")
@click.option("--no-cache", is_flag=True,
              help="Do not read or write the execution cache or the model response cache.")
@click.option("--fresh", is_flag=True, help="Discard earlier results in the run folder.")
@click.option("--timings", "show_timings", is_flag=True,
              help="At the end, print where the time went, per engine and stage (also written "
                   "to timings.json in the run folder on every run).")
def sweep(dataset: str, engines: str, predictors: str | None, models: tuple[str, ...],
          model_config: Path | None, prompt_level: str, cot: bool, sample_rows: int,
          prompt_template: str, out: Path | None, timeout: float, max_rows: int,
          workers: int | None, question_ids: tuple[str, ...], limit: int | None, policy_items: tuple[str, ...],
          no_cache: bool, fresh: bool, show_timings: bool) -> None:
    """Run every question with every predictor on every engine; write results and a report."""
    if predictors is None:
        predictors = "" if models else "gold,transpile"
    config = SweepConfig(dataset=dataset, engines=engines, predictors=predictors, out=out,
                         timeout=timeout, max_rows=max_rows, workers=workers,
                         question_ids=list(question_ids) or None,
                         limit=limit, policy=parse_policy(policy_items), use_cache=not no_cache,
                         fresh=fresh, models=list(models), model_config=model_config,
                         prompt_level=prompt_level, cot=cot, sample_rows=sample_rows,
                         prompt_template=prompt_template)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[acc]}"), TimeElapsedColumn(), TextColumn("eta"),
                        TimeRemainingColumn(), console=console, transient=False)
    observer = RichObserver(progress)
    runner = Sweep(config, observer)  # validates everything before any work starts
    with progress:
        outcome = runner.run()
    for problem in outcome.problems:
        console.print(f"[yellow]warning:[/] {escape(problem)}", highlight=False)
    run_info = json.loads((outcome.run_dir / "run.json").read_text(encoding="utf-8"))
    paths = write_reports(outcome.summary, outcome.run_dir, run_info, models=outcome.models,
                          status=outcome.status, notes=outcome.pending_notes())
    stdout.print(_summary_table(outcome, run_info))
    if outcome.models:
        stdout.print(_usage_table(outcome.models))
    if show_timings and outcome.timings is not None:
        stdout.print(_timings_table(outcome.timings))
        stdout.print(_timings_line(outcome.timings), highlight=False)
    console.print(_final_line(outcome, paths), highlight=False)
    sys.exit(sweep_exit_code(outcome))


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _timings_table(timings: SweepTimings) -> Table:
    """Seconds per lane and stage; each lane's stages add up to its total."""
    lanes = timings.lanes()
    overall = timings.overall()
    stages = [stage for stage in STAGES if stage in overall.seconds]
    table = Table(title="where the time went (seconds; each stage counted once, without the "
                        "stages inside it)")
    columns = ["lane", *stages, "total", "engine", "polysql", "polysql/engine", "rows loaded"]
    for col in columns:
        table.add_column(col, justify="left" if col == "lane" else "right")
    for name, times in [*lanes.items(), ("all", overall)]:
        ratio = times.ratio()
        loaded = f"{times.rows_loaded:,}"
        if times.rows_loaded and times.load > 0:
            loaded += f" ({times.rows_loaded / times.load:,.0f}/s)"
        table.add_row(escape(name), *(_seconds(times.seconds.get(stage, 0.0)) for stage in stages),
                      _seconds(times.total), _seconds(times.engine), _seconds(times.polysql),
                      "—" if ratio is None else f"{ratio:.2f}", loaded if times.rows_loaded else "—",
                      end_section=name == next(reversed(lanes), None))
    return table


def _timings_line(timings: SweepTimings) -> str:
    """The totals in words: what the columns mean and how the lanes relate to the wall time."""
    overall = timings.overall()
    ratio = overall.ratio()
    waits = f"; waiting for model answers {overall.model:.3f} s" if overall.model else ""
    return (f"wall time {timings.wall:.3f} s; engine execution {overall.engine:.3f} s{waits}; "
            f"polysql's own time {overall.polysql:.3f} s without loading ({overall.load:.3f} s), "
            f"{overall.polysql + overall.load:.3f} s with it; polysql/engine "
            f"{'—' if ratio is None else f'{ratio:.2f}'}. Engine lanes run in parallel, and "
            "an engine's workers side by side, so a lane's total and their sum may exceed the "
            "wall time; 'model' is an engine's wait for model answers with nothing else to run, "
            "'other' time in a lane no stage claims (the loop's bookkeeping, progress).")


def _final_line(outcome: SweepOutcome, paths: list[Path]) -> str:
    """What this invocation did, in counts that add up."""
    new = f"{outcome.written} new records"
    if outcome.reevaluated:
        new += f" ({outcome.reevaluated} re-evaluated: their inputs changed)"
    parts = [new, f"{outcome.resumed} resumed"]
    if outcome.pending:
        parts.append(f"[bold yellow]{outcome.pending} pending[/]")
    if outcome.superseded:
        parts.append(f"{outcome.superseded} set aside (inputs changed, outside this selection)")
    parts += [f"{outcome.cache_hits} execution cache hits", f"{outcome.elapsed:.1f} s"]
    return (", ".join(parts) + f"; wrote {escape(', '.join(str(p) for p in paths))}")


def sweep_exit_code(outcome: SweepOutcome) -> int:
    """Say what keeps the run from being complete and correct, one line per cause; the exit
    code of the most fundamental one."""
    if outcome.interrupted:
        console.print(f"interrupted: {outcome.pending} record(s) pending; re-run the same command "
                      "to resume")
        return EXIT_INTERRUPTED
    for item, trace in outcome.internal_errors[:3]:
        console.print(f"[bold red]internal error:[/] {escape(item)} (please report it)", highlight=False)
        if traceback_enabled():
            console.print(escape(trace), highlight=False)
    for db_id, why in outcome.broken_databases.items():
        console.print(f"[bold red]error:[/] database {escape(db_id)}: {escape(why)}; is the "
                      "database file empty, truncated or unreadable? Fix the dataset and re-run",
                      highlight=False)
    for name, why in outcome.dead_engines.items():
        console.print(f"[red]engine {escape(name)} was abandoned:[/] {escape(why)}; its remaining work is pending "
                      "(nothing was scored for it): once the engine answers again (the server up, "
                      "its URL and login right, room on its disk), re-run the same command to "
                      "resume", highlight=False)
    for db_id, why in outcome.gold_failures.items():
        console.print(f"[red]database {escape(db_id)}: its gold queries could not run:[/] "
                      f"{escape(why)}; its questions are pending (nothing was scored for them): "
                      "once the database can be read, re-run the same command to resume",
                      highlight=False)
    for name, (why, count) in outcome.unavailable.items():
        console.print(f"[red]{escape(name)} gave no answers:[/] {escape(why)}; {count} prediction(s) are "
                      "pending (nothing was scored for them): start or fix the model endpoint "
                      "(base_url, key, model id in polysql.toml), then re-run the same command",
                      highlight=False)
    for where, (why, count) in outcome.withheld.items():
        # ``why`` already says nothing was scored and what to do
        console.print(f"[red]{count} verdict(s) on {escape(where)} withheld:[/] {escape(why)}; "
                      "those predictions are pending", highlight=False)
    if outcome.internal_errors:
        return EXIT_INTERNAL
    if outcome.broken_databases:
        return EXIT_DATA
    if outcome.pending:
        if outcome.superseded:
            console.print(f"{outcome.superseded} record(s) outside this selection (--limit, "
                          "--question) were made from inputs that have changed since; they are "
                          "pending until a run without that selection re-evaluates them")
        elif not (outcome.dead_engines or outcome.unavailable or outcome.gold_failures
                  or outcome.withheld):
            console.print(f"{outcome.pending} record(s) planned by earlier invocations of this run "
                          "folder are pending; re-run with the same predictors and engines (or "
                          "--fresh to start over)")
        return EXIT_INCOMPLETE
    return 0
