"""``polysql audit``: check the claims an evaluation rests on, on the user's own data.

- ``polysql audit golds DATASET --engines ...``: the dataset's native golds against its reference
  gold. The dual execution is a ``native-gold`` sweep into ``OUT/run`` (the sweep's loading,
  execution cache, statement screen, timeouts, progress, Ctrl-C handling and resume), whose
  records :mod:`polysql.audit.golds` then reads.
- ``polysql audit transpile RUN_DIR``: an existing sweep's predictions re-judged the way
  transpile-based evaluators judge them (:mod:`polysql.audit.transpile`).

Both print a table, and write a CSV and a Markdown report (:mod:`polysql.audit.report`).
"""

from __future__ import annotations

import json
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
)
from rich.table import Table

from polysql.analysis.reports.sweep import write_reports
from polysql.audit.golds import (
    GOLD_PREDICTOR,
    GoldAudit,
    audit_gold_records,
    audited_engines,
    require_native_golds,
)
from polysql.audit.report import (
    DIFFERENCE_COLUMNS,
    GOLD_ENGINE_COLUMNS,
    difference_rows,
    gold_engine_rows,
    short,
    write_gold_audit,
    write_transpile_audit,
)
from polysql.audit.tally import by_engine, by_tag
from polysql.audit.transpile import AuditObserver, TranspileAudit, audit_transpile
from polysql.cli.console import console, stdout
from polysql.cli.options import parse_policy
from polysql.cli.sweep import RichObserver, sweep_exit_code
from polysql.core.store import ResultsStore
from polysql.datasets.base import Question
from polysql.datasets.registry import get_dataset
from polysql.engines.fleet import parse_engine_specs
from polysql.sweep.config import SweepConfig, default_engines, split_items
from polysql.sweep.runner import Sweep

_SHOWN = 40  # rows of a difference list printed; the CSV and the report hold more


@click.group("audit")
def audit_group() -> None:
    """Audit native golds, or how transpile-based judging compares with dual execution."""


# -- polysql audit golds ---------------------------------------------------------------------

def _selected(questions: list[Question], question_ids: tuple[str, ...],
              limit: int | None) -> list[Question]:
    """The questions a sweep with these --question / --limit options runs (the sweep itself
    refuses unknown ids)."""
    chosen = [q for q in questions if q.id in set(question_ids)] if question_ids else questions
    return chosen[:limit] if limit is not None else chosen


@audit_group.command("golds")
@click.argument("dataset")
@click.option("--engines", "-e", default=default_engines(), show_default=True,
              help="Comma-separated engine names or NAME=URL items whose native golds to audit.")
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Audit folder [default: audits/<dataset>-golds]; the sweep's run folder is "
                   "OUT/run, and re-running resumes it.")
@click.option("--timeout", default=30.0, show_default=True, help="Seconds per query.")
@click.option("--max-rows", default=100_000, show_default=True, help="Rows kept per result.")
@click.option("--question", "question_ids", multiple=True, help="Only these question ids (repeatable).")
@click.option("--limit", type=int, default=None, help="Only the first N questions.")
@click.option("--policy", "policy_items", multiple=True,
              help="Comparison policy override KEY=VALUE, or a preset (bird, spider: those "
                   "evaluators' own verdicts); see docs/comparison.md; repeatable.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the execution cache.")
@click.option("--fresh", is_flag=True, help="Discard earlier results in OUT/run.")
def golds_cmd(dataset: str, engines: str, out: Path | None, timeout: float, max_rows: int,
              question_ids: tuple[str, ...], limit: int | None, policy_items: tuple[str, ...],
              no_cache: bool, fresh: bool) -> None:
    """Dual-execute every native gold of DATASET against its reference gold; list where they
    disagree, per engine."""
    loaded = get_dataset(dataset)  # before any engine starts: a bad spec fails at once
    require_native_golds(loaded)
    questions = _selected(loaded.questions, question_ids, limit)
    items = split_items(engines)
    specs = parse_engine_specs(items)
    audited = audited_engines([(s.name, s.dialect) for s in specs], questions)
    skipped = [s.name for s in specs if s.name not in audited]
    for name in skipped:
        console.print(f"note: {escape(name)} speaks the reference gold's dialect; its native gold "
                      "is the reference itself, so it is not audited", highlight=False)
    folder = out if out is not None else Path("audits") / f"{loaded.name}-golds"
    policy = parse_policy(policy_items)
    config = SweepConfig(dataset=dataset, predictors=GOLD_PREDICTOR, out=folder / "run",
                         engines=[item for item, spec in zip(items, specs, strict=True)
                                  if spec.name in audited],
                         timeout=timeout, max_rows=max_rows, question_ids=list(question_ids) or None,
                         limit=limit, policy=policy, use_cache=not no_cache, fresh=fresh)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[acc]}"), TimeElapsedColumn(), console=console)
    runner = Sweep(config, RichObserver(progress), dataset=loaded)
    with progress:
        outcome = runner.run()
    for problem in outcome.problems:
        console.print(f"[yellow]warning:[/] {escape(problem)}", highlight=False)
    run_info = json.loads((outcome.run_dir / "run.json").read_text(encoding="utf-8"))
    write_reports(outcome.summary, outcome.run_dir, run_info, status=outcome.status,
                  notes=outcome.pending_notes())
    records = ResultsStore(outcome.run_dir).latest_records()
    audit = audit_gold_records(records, dataset=runner.dataset.name, engines=audited,
                               question_ids=[q.id for q in questions], pending=outcome.pending)
    audit.reference_engines = sorted({*audit.reference_engines, *skipped})
    paths = write_gold_audit(audit, folder, policy=policy)
    _print_gold_audit(audit)
    console.print(f"wrote {escape(', '.join(str(p) for p in paths))}; the sweep's records are in "
                  f"{escape(str(outcome.run_dir))}", highlight=False)
    sys.exit(sweep_exit_code(outcome))


def _print_gold_audit(audit: GoldAudit) -> None:
    title = f"gold audit — {audit.dataset}"
    if not audit.complete:
        title += f" — INCOMPLETE: {audit.pending} pending"
    table = Table(title=title)
    for column in GOLD_ENGINE_COLUMNS:
        table.add_column(column, justify="left" if column in ("engine", "dialect") else "right")
    for row in gold_engine_rows(audit):
        table.add_row(*(escape(str(value)) for value in row))
    stdout.print(table)
    if audit.uncovered:
        shown = ", ".join(audit.uncovered[:20]) + (" ..." if len(audit.uncovered) > 20 else "")
        stdout.print(f"{len(audit.uncovered)} of {audit.questions} question(s) have no native gold "
                     f"for any audited engine: {escape(shown)}", highlight=False)
    listed = audit.disagreements
    if not listed:
        # never "all agree" over work not done: say how much the statement covers
        if audit.complete:
            stdout.print("every native gold agrees with the reference gold")
        else:
            stdout.print(f"no disagreement among the pairs audited so far; {audit.pending} "
                         "pending, so this is not the audit's answer yet")
        return
    table = Table(title=f"disagreements ({len(listed)})")
    for column in ("question", "engine", "outcome", "reason", "native SQL"):
        table.add_column(column, overflow="fold")
    for pair in listed[:_SHOWN]:
        table.add_row(escape(pair.question_id), escape(pair.engine), pair.outcome,
                      escape(short(pair.reason, 120)), escape(short(pair.native_sql, 100)))
    stdout.print(table)
    if len(listed) > _SHOWN:
        stdout.print(f"... and {len(listed) - _SHOWN} more in the CSV and the report")


# -- polysql audit transpile -----------------------------------------------------------------

class _ProgressObserver(AuditObserver):
    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task: TaskID | None = None

    def start(self, total: int) -> None:
        self.task = self.progress.add_task("re-judge", total=total)

    def advance(self) -> None:
        if self.task is not None:
            self.progress.update(self.task, advance=1)


@audit_group.command("transpile")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Output folder [default: RUN_DIR/audit].")
@click.option("--dataset", "-d", "dataset_spec", default=None,
              help="The dataset that was swept [default: the one RUN_DIR/run.json names].")
@click.option("--predictor", "-p", "predictors", default=None,
              help="Comma-separated predictor names to audit [default: every one in the run].")
def transpile_cmd(run_dir: Path, out: Path | None, dataset_spec: str | None,
                  predictors: str | None) -> None:
    """Re-judge a sweep's predictions the transpile way (sqlglot back to the gold's dialect, run
    on the source database) and say where that verdict differs from dual execution's."""
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console)
    with progress:
        audit = audit_transpile(run_dir, dataset_spec=dataset_spec,
                                predictors=split_items(predictors) or None,
                                observer=_ProgressObserver(progress))
    paths = write_transpile_audit(audit, out if out is not None else run_dir / "audit")
    _print_transpile_audit(audit)
    console.print(f"wrote {escape(', '.join(str(p) for p in paths))}", highlight=False)


def _print_transpile_audit(audit: TranspileAudit) -> None:
    for warning in audit.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    if audit.pending:
        console.print(f"[bold yellow]INCOMPLETE run:[/] {audit.pending} planned record(s) are "
                      "missing from it and are not judged", highlight=False)
    for label, rows, first in (("per engine", by_engine(audit.judgements), "engine"),
                               ("per tag", by_tag(audit.judgements), "tag")):
        table = Table(title=f"transpile vs dual-execution verdicts — {audit.dataset} — {label}")
        for column in (first, *DIFFERENCE_COLUMNS):
            table.add_column(column, justify="left" if column == first else "right")
        for row in difference_rows(rows):
            table.add_row(*(escape(str(value)) for value in row))
        stdout.print(table)
    for why, count in sorted(audit.skipped.items()):
        stdout.print(f"not judged: {count} record(s): {escape(why)}", highlight=False)
    differing = audit.differing
    if not differing:
        stdout.print("the transpile verdict equals the dual-execution verdict on every prediction")
        return
    table = Table(title=f"where the verdicts differ ({len(differing)})")
    for column in ("question", "predictor", "engine", "dual", "transpile", "why"):
        table.add_column(column, overflow="fold")
    for judgement in differing[:_SHOWN]:
        table.add_row(escape(judgement.question_id), escape(judgement.predictor),
                      escape(judgement.engine), judgement.dual_status, judgement.verdict,
                      escape(short(judgement.why, 140)))
    stdout.print(table)
    if len(differing) > _SHOWN:
        stdout.print(f"... and {len(differing) - _SHOWN} more in the CSV and the report")
