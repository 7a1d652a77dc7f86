"""``polysql report``: statistics, tiers, rankings and the error taxonomy over sweep runs."""

from __future__ import annotations

import sys
from pathlib import Path

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

from polysql.cli.console import console, stdout
from polysql.cli.main import EXIT_INCOMPLETE
from polysql.core.errors import ConfigError
from polysql.sweep.config import source_dialect
from polysql.sweep.freshness import check_freshness


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Output folder [default: RUN_DIR/analysis for one run, ./polysql-report for several].")
@click.option("--reference", default=source_dialect(), show_default=True,
              help="Engine (name or dialect) that drops are measured against; 'none' for no reference.")
@click.option("--alpha", default=0.05, show_default=True, help="Significance level after Holm correction.")
@click.option("--seed", default=0, show_default=True, help="Seed of the paired bootstrap.")
@click.option("--resamples", default=10_000, show_default=True, help="Bootstrap resamples.")
@click.option("--classify", "classify_model", default=None, metavar="MODEL",
              help="Classify every failure with this model of polysql.toml (LLM error taxonomy).")
@click.option("--config", "model_config", type=click.Path(path_type=Path), default=None,
              help="Model config file for --classify [default: ./polysql.toml].")
@click.option("--attempts", default=3, show_default=True,
              help="Requests per failure before it is marked unclassified.")
@click.option("--no-llm-cache", is_flag=True, help="Ask the model again even for answers cached earlier.")
@click.option("--constrain/--no-constrain", default=True, show_default=True,
              help="Ask the endpoint to constrain answers to the JSON schema (llama.cpp, vLLM); "
                   "turn off for APIs that reject response_format with a schema.")
def report_cmd(run_dirs: tuple[Path, ...], out: Path | None, reference: str, alpha: float, seed: int,
               resamples: int, classify_model: str | None, model_config: Path | None, attempts: int,
               no_llm_cache: bool, constrain: bool) -> None:
    """Statistics, tiers, agreement, rankings and error taxonomy over one or more sweep runs."""
    # imported when the command runs, not when `polysql --help` lists it: scipy and
    # matplotlib take seconds to import
    from polysql.analysis.findings import Settings
    from polysql.analysis.reports.run import ClassifierSpec, build_report

    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha must be between 0 and 1, got {alpha}")
    if resamples < 100:
        raise ConfigError(f"--resamples must be at least 100 for a usable interval, got {resamples}")
    if attempts < 1:
        raise ConfigError(f"--attempts must be at least 1, got {attempts}")
    settings = Settings(reference=None if reference.lower() == "none" else reference, alpha=alpha,
                        resamples=resamples, seed=seed)
    classifier = (ClassifierSpec(classify_model, model_config, attempts, not no_llm_cache, constrain)
                  if classify_model else None)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                        console=console, transient=False)
    task: list[TaskID] = []

    def advance(done: int, total: int) -> None:
        if not task:
            task.append(progress.add_task("classify failures", total=total))
        progress.update(task[0], completed=done)

    # Checked first so the written report says it too, not only this screen.
    checks = [check_freshness(run_dir) for run_dir in run_dirs]
    stale = [f"{'STALE' if check.stale else 'UNCHECKED'}: {check.message()}" for check in checks
             if check.message() is not None]
    with progress:
        outcome = build_report(list(run_dirs), out, settings, classifier, advance, warnings=stale)
    findings = outcome.findings
    table = Table(title="dialect difficulty tiers")
    for col in ("scope", "tier", "engine", "accuracy"):
        table.add_column(col, justify="right" if col == "accuracy" else "left")
    for row in findings.tiers:
        table.add_row(row.scope, str(row.tier), row.engine, f"{100 * row.accuracy:.1f}%")
    stdout.print(table)
    for note in findings.notes:
        if note not in stale:  # printed below, in bold
            console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    for run, count in findings.pending.items():
        console.print(f"[bold yellow]INCOMPLETE:[/] {escape(run)} has {count} pending record(s); "
                      "the report covers only what is recorded (finish the sweep first)",
                      highlight=False)
    for warning in stale:
        label, _, message = warning.partition(": ")
        console.print(f"[bold yellow]{label}:[/] {escape(message)}", highlight=False)
    if outcome.usage:
        u = outcome.usage
        console.print(f"classifier: {u['calls']} calls, {u['cache_hits']} cached, {u['errors']} failed")
    console.print(f"wrote {len(outcome.paths)} files to {escape(str(outcome.out_dir))}")
    if outcome.classifier_unavailable is not None:
        console.print(f"[bold yellow]INCOMPLETE:[/] no error taxonomy: the classifier endpoint "
                      f"gave no answer ({escape(outcome.classifier_unavailable)}); every other "
                      "table is complete. Run the report again once the endpoint answers.",
                      highlight=False)
        sys.exit(EXIT_INCOMPLETE)
