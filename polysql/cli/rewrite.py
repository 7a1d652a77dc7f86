"""``polysql rewrite``: evaluate SQL rewriters on case packages, each on its own engine."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from polysql.backends import catalog
from polysql.cli.console import console, stdout
from polysql.cli.main import EXIT_DATA, EXIT_ENGINE, EXIT_INCOMPLETE
from polysql.core.errors import ConfigError, EngineUnavailableError, LLMUnavailableError
from polysql.rewrite.cases import BUNDLED_ROOT, load_case, load_pool
from polysql.rewrite.databases import open_database, parse_engine_overrides
from polysql.rewrite.harness import (
    ReferenceReport,
    input_caps,
    run_pool,
    skip_failure,
    skip_summary,
    usable_cases,
    validate_reference_pair,
)
from polysql.rewrite.methods import make_method
from polysql.rewrite.scaffold import scaffold_case


@click.group("rewrite")
def rewrite_group() -> None:
    """Evaluate SQL rewriters: correctness-gated, full-denominator, on each case's own engine."""


def _rewrite_cases(cases_dir: Path | None, pools: tuple[str, ...], case_ids: tuple[str, ...]) -> list[Any]:
    root = cases_dir or BUNDLED_ROOT
    # one case folder, or a root of pools
    cases = [load_case(root)] if (root / "case.yaml").is_file() else load_pool(root)
    if pools:
        known = sorted({c.pool for c in cases})
        unknown = [p for p in pools if p not in known]
        if unknown:
            raise ConfigError(f"no pool {', '.join(unknown)} under {root}; pools: {', '.join(known)}")
        cases = [c for c in cases if c.pool in pools]
    if case_ids:
        missing = sorted(set(case_ids) - {c.id for c in cases})
        if missing:
            raise ConfigError(f"no case {', '.join(missing)} among the selected pools")
        cases = [c for c in cases if c.id in case_ids]
    return cases


_CASES_OPTIONS = [
    click.option("--cases", "cases_dir", type=click.Path(path_type=Path), default=None,
                 help="A case folder or a root of <pool>/<case> folders [default: the bundled pools]."),
    click.option("--pool", "pools", multiple=True, help="Only these pools (repeatable)."),
    click.option("--case", "case_ids", multiple=True, help="Only these case ids (repeatable)."),
    click.option("--engine", "engine_items", multiple=True, metavar="NAME=URL",
                 help="Where an engine name of the cases runs, e.g. postgres=postgresql://u@host/ (repeatable)."),
    click.option("--runs", default=5, show_default=True, help="Measured runs of each query."),
    click.option("--warmup", default=1, show_default=True, help="Warm-up runs of each query."),
]


def _with_case_options(func: Any) -> Any:
    for option in reversed(_CASES_OPTIONS):
        func = option(func)
    return func


@rewrite_group.command("new-case")
@click.argument("case_id")
@click.option("--engine", required=True,
              help=f"Engine the case runs on ({', '.join(info.name for info in catalog.infos())}).")
@click.option("--pool", required=True, help="Pool the case belongs to, e.g. postgres-core.")
@click.option("--dialect", default=None, help="SQL dialect of the case [default: the engine's].")
@click.option("--root", type=click.Path(path_type=Path), default=Path("cases"), show_default=True,
              help="Root folder of the pools.")
def rewrite_new_case(case_id: str, engine: str, pool: str, dialect: str | None, root: Path) -> None:
    """Scaffold a case package that validates, with TODOs to replace."""
    path = scaffold_case(root, case_id, engine=engine, dialect=dialect, pool=pool)
    console.print(f"wrote {escape(str(path))}; edit its SQL, schema and rewrite_opportunity.md, then "
                  f"`polysql rewrite validate --cases {escape(str(path))}`")


@rewrite_group.command("validate")
@_with_case_options
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.option("--require-all", is_flag=True,
              help="Exit 3 when a case is skipped because its engine cannot be used here (CI).")
def rewrite_validate(cases_dir: Path | None, pools: tuple[str, ...], case_ids: tuple[str, ...],
                     engine_items: tuple[str, ...], runs: int, warmup: int, as_json: bool,
                     require_all: bool) -> None:
    """Reference-pair mode: every case's input and references run on its engine and agree under
    its contract. Exit 4 when a case is not certified; cases whose engine cannot be used here
    are skipped and listed (exit 3 when nothing could run, or with --require-all)."""
    cases = _rewrite_cases(cases_dir, pools, case_ids)
    engines = parse_engine_overrides(list(engine_items))
    caps = input_caps(cases)  # over every selected case: a skipped pool does not move the caps
    runnable, skipped = usable_cases(cases, engines=engines)
    reports = []
    for case in runnable:
        with open_database(case, engines=engines) as database:
            reports.append(validate_reference_pair(case, database.backend, caps=caps, runs=runs,
                                                   warmup=warmup))
    if as_json:
        listed = reports + [ReferenceReport.for_skipped(skip) for skip in skipped]
        stdout.print_json(json.dumps([r.to_dict() for r in listed], default=str))
    elif reports:
        table = Table(title="reference pairs")
        for col in ("pool", "case", "engine", "certified", "speedup", "outcome / problem"):
            table.add_column(col)
        for report in reports:
            first = report.references[0] if report.references else None
            speedup = (f"{first.timing.speedup:.2f}x" if first is not None and first.timing else "-")
            detail = "; ".join(report.problems) or (first.outcome if first else "")
            table.add_row(report.pool, report.case_id, report.engine,
                          "yes" if report.certified else "[red]no[/]", speedup, escape(detail))
        stdout.print(table)
    failed = [r.case_id for r in reports if not r.certified]
    if failed:
        console.print(f"[red]{len(failed)} of {len(reports)} case(s) not certified:[/] {escape(', '.join(failed))}")
    elif reports:
        console.print(f"{len(reports)} case(s) certified")
    for line in skip_summary(skipped):
        console.print(f"[yellow]{escape(line)}[/]", highlight=False)
    if failed:
        sys.exit(EXIT_DATA)
    problem = skip_failure(skipped, ran=len(reports), require_all=require_all)
    if problem is not None:
        console.print(f"[red]error:[/] {escape(problem)}", highlight=False)
        sys.exit(EXIT_ENGINE)


@rewrite_group.command("run")
@_with_case_options
@click.option("--method", "-m", "methods", multiple=True,
              help="identity | no-rewrite | sqlglot-optimize | llm:MODEL | cmd:COMMAND | python:MODULE:FUNC "
                   "(repeatable) [default: identity, no-rewrite, sqlglot-optimize].")
@click.option("--config", "model_config", type=click.Path(path_type=Path), default=None,
              help="Model config for llm: methods [default: ./polysql.toml].")
@click.option("--out", "-o", type=click.Path(path_type=Path), default=Path("runs/rewrite"), show_default=True)
@click.option("--sensitivity", is_flag=True, help="Also report CGOQ ranges over the 81-configuration grid.")
@click.option("--require-all", is_flag=True,
              help="Exit 3 when a case is skipped because its engine cannot be used here (CI).")
def rewrite_run(cases_dir: Path | None, pools: tuple[str, ...], case_ids: tuple[str, ...],
                engine_items: tuple[str, ...], runs: int, warmup: int, methods: tuple[str, ...],
                model_config: Path | None, out: Path, sensitivity: bool, require_all: bool) -> None:
    """Method mode: run each method on every case; write the ledger, the full-denominator table
    and the outcome figure. Cases whose engine cannot be used here are skipped and listed, and
    are not in the denominator (exit 3 when nothing could run, or with --require-all)."""
    # imported when the command runs, not when `polysql --help` lists it: matplotlib takes
    # a second to import
    from polysql.analysis.rewrite.ledger import full_denominator_table, write_report

    all_cases = _rewrite_cases(cases_dir, pools, case_ids)
    engines = parse_engine_overrides(list(engine_items))
    chosen = [make_method(spec, model_config=model_config)
              for spec in (methods or ("identity", "no-rewrite", "sqlglot-optimize"))]
    caps = input_caps(all_cases)  # over every selected case: a skipped pool does not move the caps
    cases, skipped = usable_cases(all_cases, engines=engines)
    problem = skip_failure(skipped, ran=len(cases), require_all=False)
    if problem is not None:  # nothing can run: say why instead of writing an empty report
        for line in skip_summary(skipped):
            console.print(f"[yellow]{escape(line)}[/]", highlight=False)
        console.print(f"[red]error:[/] {escape(problem)}", highlight=False)
        sys.exit(EXIT_ENGINE)
    outcomes = []
    unscored: dict[str, str] = {}  # method -> the outage that left it unscored
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, transient=False)
    with progress:
        for name, method in chosen:
            task = progress.add_task(f"rewrite {name}", total=len(cases))
            try:
                outcomes += run_pool(cases, method, method_name=name, engines=engines, caps=caps,
                                     runs=runs, warmup=warmup,
                                     progress=lambda done, total, _o, task=task: progress.update(task, completed=done))
            except (LLMUnavailableError, EngineUnavailableError) as exc:
                # An outage (a model endpoint that gave no answer, an engine that went away) is
                # not the method's answer: none of its cases is scored; the next method runs.
                unscored[name] = (f"its model endpoint gave no answer ({exc}); start or fix "
                                  "the endpoint and run again"
                                  if isinstance(exc, LLMUnavailableError) else str(exc))
                progress.update(task, description=f"rewrite {name} [red]not scored[/]")
    if not outcomes:
        _report_unscored(unscored, written=False)
        sys.exit(EXIT_INCOMPLETE)
    paths = write_report(outcomes, out, sensitivity=sensitivity, unscored=unscored)
    title = f"rewrite methods — {len(cases)} cases"
    if unscored:
        title += f" — INCOMPLETE: not scored: {', '.join(unscored)}"
    table = Table(title=title)
    for col in ("method", "generated", "executed", "consistent", "unsafe", "geo speedup (n)",
                "CGOQ@N", "CGOQ@Valid"):
        table.add_column(col, justify="left" if col == "method" else "right")
    for row in full_denominator_table(outcomes):
        if row.scope != "all":
            continue
        speed = f"{row.geomean_speedup:.2f}x ({row.speedup_support})" if row.geomean_speedup else "-"
        valid = f"{row.cgoq_at_valid:.1f}" if row.cgoq_at_valid is not None else "-"
        table.add_row(row.method, f"{100 * row.generation_rate:.1f}%",
                      f"{100 * row.execution_coverage:.1f}%", f"{100 * row.result_consistency:.1f}%",
                      f"{100 * row.unsafe_rate:.1f}%", speed, f"{row.cgoq_at_n:.1f}", valid)
    stdout.print(table)
    console.print(f"wrote {escape(', '.join(str(p) for p in paths))}")
    for line in skip_summary(skipped):
        console.print(f"[yellow]{escape(line)}[/]", highlight=False)
    _report_unscored(unscored, written=True)  # before any exit below: it must be on screen
    problem = skip_failure(skipped, ran=len(cases), require_all=require_all)
    if problem is not None:
        console.print(f"[red]error:[/] {escape(problem)}", highlight=False)
        sys.exit(EXIT_ENGINE)
    if unscored:
        sys.exit(EXIT_INCOMPLETE)


def _report_unscored(unscored: dict[str, str], *, written: bool) -> None:
    where = "here or in the written report" if written else "and no report was written"
    for name, why in unscored.items():
        # ``why`` says what failed and how to fix it (the engine's or the endpoint's)
        console.print(f"[red]method {escape(name)} was not scored[/] (none of its cases is "
                      f"counted, {where}): {escape(why)}", highlight=False)
