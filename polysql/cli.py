"""The ``polysql`` command.

Exit codes (stable, for scripts):
  0  success (for ``compare``: the results match)
  1  ``compare`` only: the results differ
  2  usage or configuration error (bad option, unknown engine or predictor)
  3  an engine could not be used (not installed, unreachable, load failed)
  4  a dataset, predictions file or leaderboard bundle is missing, malformed or invalid
  5  the results folder belongs to another sweep or is unreadable
  6  the sweep finished with work pending (an engine abandoned, a model unreachable, records set
     aside because their inputs changed); its summary says INCOMPLETE
  7  ``compare`` only: the gold query itself failed, so the prediction cannot be judged
  70 internal error (a bug: please report it with the ``--debug`` traceback)
  130 interrupted (Ctrl-C); re-run the same command to resume
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
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

from polysql import __version__
from polysql.errors import (
    BundleError,
    ConfigError,
    DatasetError,
    EngineError,
    PolysqlError,
    PredictionFileError,
    ResultsStoreError,
)
from polysql.model import Result
from polysql.progress import SweepObserver

EXIT_MISMATCH = 1
EXIT_CONFIG = 2
EXIT_ENGINE = 3
EXIT_DATA = 4
EXIT_STORE = 5
EXIT_INCOMPLETE = 6
EXIT_INVALID_GOLD = 7
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130

console = Console(stderr=True, soft_wrap=True)  # messages stay one greppable line
stdout = Console(soft_wrap=True)


def _exit_code(exc: PolysqlError) -> int:
    if isinstance(exc, EngineError):
        return EXIT_ENGINE
    if isinstance(exc, (DatasetError, PredictionFileError, BundleError)):
        return EXIT_DATA
    if isinstance(exc, ResultsStoreError):
        return EXIT_STORE
    return EXIT_CONFIG


class PolysqlGroup(click.Group):
    """Turns polysql errors into one clear line and a stable exit code (traceback with --debug)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PolysqlError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
            ctx.exit(_exit_code(exc))
        except KeyboardInterrupt:
            console.print("interrupted; re-run the same command to resume")
            ctx.exit(EXIT_INTERRUPTED)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            console.print(f"[bold red]internal error:[/] {type(exc).__name__}: {escape(str(exc))} "
                          "(re-run with --debug for the traceback, and please report it)")
            ctx.exit(EXIT_INTERNAL)


@click.group(cls=PolysqlGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="polysql")
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Evaluate SQL-producing systems across SQL dialects by dual execution."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


# ---------------------------------------------------------------------------------------------
class _RichObserver(SweepObserver):
    """Progress bars for a sweep: counts, accuracy so far and ETA; with models, one more bar per
    model for its requests, so generation and execution are both visible."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task: TaskID | None = None
        self.generating: dict[str, TaskID] = {}
        self.matches = 0
        self.seen = 0

    def phase(self, name: str, total: int) -> None:
        if self.task is not None:
            self.progress.update(self.task, visible=False)
        label = "gold queries" if name == "gold" else "predictions"
        self.task = self.progress.add_task(label, total=total, acc="")

    def advance(self, record: dict[str, Any] | None = None) -> None:
        if self.task is None:
            return
        acc = ""
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


def _summary_table(outcome: Any) -> Table:
    summary = outcome.summary
    title = f"accuracy — {', '.join(summary.datasets)}"
    if not summary.complete or outcome.interrupted:
        title += f" — INCOMPLETE: {summary.pending} pending"
    table = Table(title=title)
    columns = ["predictor", "engine", "accuracy", "95% CI", "ok/n", "errors", "no SQL", "invalid gold"]
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


def _parse_policy(items: tuple[str, ...]) -> dict[str, Any]:
    policy: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--policy expects KEY=VALUE, got {item!r}")
        try:
            policy[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            policy[key.strip()] = raw
    return policy


@main.command()
@click.option("--dataset", "-d", default="demo", show_default=True,
              help="Dataset: 'demo', 'bird:PATH', 'spider:PATH'.")
@click.option("--engines", "-e", default="sqlite,duckdb", show_default=True,
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
@click.option("--question", "question_ids", multiple=True, help="Only these question ids (repeatable).")
@click.option("--limit", type=int, default=None, help="Only the first N questions.")
@click.option("--policy", "policy_items", multiple=True,
              help="Comparison policy override KEY=VALUE (see docs/comparison.md), repeatable.")
@click.option("--no-cache", is_flag=True,
              help="Do not read or write the execution cache or the model response cache.")
@click.option("--fresh", is_flag=True, help="Discard earlier results in the run folder.")
def sweep(dataset: str, engines: str, predictors: str | None, models: tuple[str, ...],
          model_config: Path | None, prompt_level: str, cot: bool, sample_rows: int,
          prompt_template: str, out: Path | None, timeout: float, max_rows: int,
          question_ids: tuple[str, ...], limit: int | None, policy_items: tuple[str, ...],
          no_cache: bool, fresh: bool) -> None:
    """Run every question with every predictor on every engine; write results and a report."""
    from polysql.analysis.report import write_reports
    from polysql.runner import Sweep, SweepConfig

    if predictors is None:
        predictors = "" if models else "gold,transpile"
    config = SweepConfig(dataset=dataset, engines=engines, predictors=predictors, out=out,
                         timeout=timeout, max_rows=max_rows, question_ids=list(question_ids) or None,
                         limit=limit, policy=_parse_policy(policy_items), use_cache=not no_cache,
                         fresh=fresh, models=list(models), model_config=model_config,
                         prompt_level=prompt_level, cot=cot, sample_rows=sample_rows,
                         prompt_template=prompt_template)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[acc]}"), TimeElapsedColumn(), TextColumn("eta"),
                        TimeRemainingColumn(), console=console, transient=False)
    observer = _RichObserver(progress)
    runner = Sweep(config, observer)  # validates everything before any work starts
    with progress:
        outcome = runner.run()
    for problem in outcome.problems:
        console.print(f"[yellow]warning:[/] {escape(problem)}", highlight=False)
    run_info = json.loads((outcome.run_dir / "run.json").read_text(encoding="utf-8"))
    paths = write_reports(outcome.summary, outcome.run_dir, run_info, models=outcome.models,
                          status=outcome.status, notes=outcome.pending_notes())
    stdout.print(_summary_table(outcome))
    if outcome.models:
        stdout.print(_usage_table(outcome.models))
    console.print(_final_line(outcome, paths), highlight=False)
    sys.exit(_sweep_exit(outcome))


def _final_line(outcome: Any, paths: list[Path]) -> str:
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


def _sweep_exit(outcome: Any) -> int:
    """Say what keeps the run from being complete and correct, one line per cause; the exit
    code of the most fundamental one."""
    if outcome.interrupted:
        console.print(f"interrupted: {outcome.pending} record(s) pending; re-run the same command "
                      "to resume")
        return EXIT_INTERRUPTED
    for item, trace in outcome.internal_errors[:3]:
        console.print(f"[bold red]internal error:[/] {escape(item)} (please report it)", highlight=False)
        if _debug_enabled():
            console.print(escape(trace), highlight=False)
    for db_id, why in outcome.broken_databases.items():
        console.print(f"[bold red]error:[/] database {escape(db_id)}: {escape(why)}; is the "
                      "database file empty, truncated or unreadable? Fix the dataset and re-run",
                      highlight=False)
    for name, why in outcome.dead_engines.items():
        console.print(f"[red]engine {escape(name)} was abandoned:[/] {escape(why)}; its remaining work is pending, "
                      "re-run to resume once it is back", highlight=False)
    for name, (why, count) in outcome.unavailable.items():
        console.print(f"[red]{escape(name)} gave no answers:[/] {escape(why)}; {count} prediction(s) are "
                      "pending (nothing was scored for them): start or fix the model endpoint "
                      "(base_url, key, model id in polysql.toml), then re-run the same command",
                      highlight=False)
    if outcome.internal_errors:
        return EXIT_INTERNAL
    if outcome.broken_databases:
        return EXIT_DATA
    if outcome.pending:
        if outcome.superseded:
            console.print(f"{outcome.superseded} record(s) outside this selection (--limit, "
                          "--question) were made from inputs that have changed since; they are "
                          "pending until a run without that selection re-evaluates them")
        elif not (outcome.dead_engines or outcome.unavailable):
            console.print(f"{outcome.pending} record(s) planned by earlier invocations of this run "
                          "folder are pending; re-run with the same predictors and engines (or "
                          "--fresh to start over)")
        return EXIT_INCOMPLETE
    return 0


def _debug_enabled() -> bool:
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx is not None else None
    return bool(root is not None and root.obj and root.obj.get("debug"))


# ---------------------------------------------------------------------------------------------
@main.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Output folder [default: RUN_DIR/analysis for one run, ./polysql-report for several].")
@click.option("--reference", default="sqlite", show_default=True,
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
    from polysql.analysis.findings import Settings
    from polysql.analysis.run_report import ClassifierSpec, build_report

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

    with progress:
        outcome = build_report(list(run_dirs), out, settings, classifier, advance)
    findings = outcome.findings
    table = Table(title="dialect difficulty tiers")
    for col in ("scope", "tier", "engine", "accuracy"):
        table.add_column(col, justify="right" if col == "accuracy" else "left")
    for row in findings.tiers:
        table.add_row(row.scope, str(row.tier), row.engine, f"{100 * row.accuracy:.1f}%")
    stdout.print(table)
    for note in findings.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    for run, count in findings.pending.items():
        console.print(f"[bold yellow]INCOMPLETE:[/] {escape(run)} has {count} pending record(s); "
                      "the report covers only what is recorded (finish the sweep first)",
                      highlight=False)
    if outcome.usage:
        u = outcome.usage
        console.print(f"classifier: {u['calls']} calls, {u['cache_hits']} cached, {u['errors']} failed")
    console.print(f"wrote {len(outcome.paths)} files to {escape(str(outcome.out_dir))}")


@main.group("leaderboard")
def leaderboard_group() -> None:
    """Submission bundles and the static leaderboard site."""


@leaderboard_group.command("pack")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(path_type=Path), required=True,
              help="Bundle to write: a folder, or an archive ending in .zip or .tar.gz.")
@click.option("--dataset", "dataset_spec", default=None,
              help="Dataset spec the sweep used, for runs that did not record it.")
def leaderboard_pack(run_dir: Path, out: Path, dataset_spec: str | None) -> None:
    """Bundle a finished sweep (every question x predictor x engine) for submission."""
    from polysql.leaderboard.bundle import pack_bundle, validate_bundle

    path = pack_bundle(run_dir, out, dataset_spec=dataset_spec)
    problems = validate_bundle(path)
    for problem in problems:
        console.print(f"[yellow]{escape(problem.code)}:[/] {escape(problem.message)}", highlight=False)
    console.print(f"wrote {escape(str(path))}")


@leaderboard_group.command("validate")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--no-dataset-check", is_flag=True,
              help="Do not load the dataset to check its fingerprint (e.g. it is not available here).")
@click.option("--as", "renames", multiple=True, metavar="BUNDLE:PREDICTOR=NEWNAME",
              help="Show PREDICTOR of BUNDLE as NEWNAME, so same-named predictors of two bundles "
                   "both stay (repeatable; BUNDLE as given, or its file name).")
@click.option("--prefer", multiple=True, metavar="BUNDLE",
              help="BUNDLE wins every clash it is part of; what it overrides is reported "
                   "(repeatable: an earlier --prefer wins over a later one).")
def leaderboard_validate(bundles: tuple[Path, ...], no_dataset_check: bool,
                         renames: tuple[str, ...], prefer: tuple[str, ...]) -> None:
    """Recompute every aggregate from the records and check hashes, completeness and dataset,
    then check the bundles can be built together (no two claim the same dataset x predictor x
    engine, unless --as/--prefer say how). Exit 0 when all is valid, 4 when anything is not."""
    from polysql.leaderboard.bundle import is_valid
    from polysql.leaderboard.merge import validate_bundles

    each, together = validate_bundles(bundles, check_dataset=not no_dataset_check,
                                      renames=renames, prefer=prefer)
    sets = [("together", together)] if len(bundles) > 1 or together else []
    failed = 0
    for name, problems in [(str(path), found) for path, found in each] + sets:
        valid = is_valid(problems)
        failed += not valid
        verdict = "[green]valid[/]" if valid else "[bold red]invalid[/]"
        stdout.print(f"{escape(name)}: {verdict}", highlight=False)
        for problem in problems:
            stdout.print(f"  {escape(problem.code)}: {escape(problem.message)}", highlight=False)
    if failed:
        sys.exit(EXIT_DATA)


@leaderboard_group.command("build")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(path_type=Path), default=Path("site"), show_default=True,
              help="Folder for the static site.")
@click.option("--no-dataset-check", is_flag=True, help="Do not load datasets to check fingerprints.")
@click.option("--rewrite-ledger", "rewrite_ledgers", multiple=True, type=click.Path(path_type=Path),
              help="ledger.json of `polysql rewrite run` to show on a Rewriting page (repeatable).")
@click.option("--as", "renames", multiple=True, metavar="BUNDLE:PREDICTOR=NEWNAME",
              help="Show PREDICTOR of BUNDLE as NEWNAME, so same-named predictors of two bundles "
                   "both stay (repeatable; BUNDLE as given, or its file name).")
@click.option("--prefer", multiple=True, metavar="BUNDLE",
              help="BUNDLE wins every clash it is part of; what it overrides is reported "
                   "(repeatable: an earlier --prefer wins over a later one).")
def leaderboard_build(bundles: tuple[Path, ...], out: Path, no_dataset_check: bool,
                      rewrite_ledgers: tuple[Path, ...], renames: tuple[str, ...],
                      prefer: tuple[str, ...]) -> None:
    """Validate the bundles and write the static leaderboard site (works from file://).
    Two bundles claiming the same dataset x predictor x engine stop the build unless --as or
    --prefer say how to merge them."""
    from polysql.leaderboard.merge import load_merged
    from polysql.leaderboard.site import build_site

    merged = load_merged(bundles, check_dataset=not no_dataset_check, renames=renames,
                         prefer=prefer)
    for line in merged.report():
        console.print(f"[yellow]{escape(line)}[/]", highlight=False)
    paths = build_site(merged.bundles, out, rewrite_ledgers=list(rewrite_ledgers),
                       overrides=merged.overrides)
    console.print(f"wrote {len(paths)} files to {escape(str(out))}; open {escape(str(out / 'index.html'))} "
                  "or run `polysql leaderboard serve`")


@leaderboard_group.command("serve")
@click.argument("site_dir", type=click.Path(path_type=Path), default=Path("site"))
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True)
def leaderboard_serve(site_dir: Path, host: str, port: int) -> None:
    """Serve a built site locally until Ctrl-C."""
    from polysql.leaderboard.site import serve_site

    if not (site_dir / "index.html").is_file():
        raise ConfigError(f"{site_dir} holds no index.html: build it first with "
                          f"`polysql leaderboard build BUNDLE... --out {site_dir}`")
    server = serve_site(site_dir, host=host, port=port)
    console.print(f"serving {escape(str(site_dir))} at http://{host}:{server.server_address[1]}/ (Ctrl-C stops)")
    try:
        server.serve_forever()
    finally:
        server.server_close()


@main.group("rewrite")
def rewrite_group() -> None:
    """Evaluate SQL rewriters: correctness-gated, full-denominator, on each case's own engine."""


def _rewrite_cases(cases_dir: Path | None, pools: tuple[str, ...], case_ids: tuple[str, ...]) -> list[Any]:
    from polysql.datasets.rewrite_cases import BUNDLED_ROOT, load_case, load_pool

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
@click.option("--engine", required=True, help="Engine the case runs on (postgres, mysql, duckdb, spark, ...).")
@click.option("--pool", required=True, help="Pool the case belongs to, e.g. postgres-core.")
@click.option("--dialect", default=None, help="SQL dialect of the case [default: the engine's].")
@click.option("--root", type=click.Path(path_type=Path), default=Path("cases"), show_default=True,
              help="Root folder of the pools.")
def rewrite_new_case(case_id: str, engine: str, pool: str, dialect: str | None, root: Path) -> None:
    """Scaffold a case package that validates, with TODOs to replace."""
    from polysql.datasets.rewrite_cases import scaffold_case

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
    from polysql.analysis.rewrite_databases import open_database, parse_engine_overrides
    from polysql.analysis.rewrite_harness import (
        ReferenceReport,
        input_caps,
        skip_failure,
        skip_summary,
        usable_cases,
        validate_reference_pair,
    )

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
    from polysql.analysis.rewrite_databases import parse_engine_overrides
    from polysql.analysis.rewrite_harness import (
        input_caps,
        run_pool,
        skip_failure,
        skip_summary,
        usable_cases,
    )
    from polysql.analysis.rewrite_ledger import full_denominator_table, write_report
    from polysql.analysis.rewrite_methods import make_method

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
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, transient=False)
    with progress:
        for name, method in chosen:
            task = progress.add_task(f"rewrite {name}", total=len(cases))
            outcomes += run_pool(cases, method, method_name=name, engines=engines, caps=caps,
                                 runs=runs, warmup=warmup,
                                 progress=lambda done, total, _o, task=task: progress.update(task, completed=done))
    paths = write_report(outcomes, out, sensitivity=sensitivity)
    table = Table(title=f"rewrite methods — {len(cases)} cases")
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
    problem = skip_failure(skipped, ran=len(cases), require_all=require_all)
    if problem is not None:
        console.print(f"[red]error:[/] {escape(problem)}", highlight=False)
        sys.exit(EXIT_ENGINE)


@main.command("compare")
@click.option("--db", "db_url", required=True, help="Engine URL for the gold query.")
@click.option("--gold", "gold_sql", required=True, help="Gold SQL.")
@click.option("--pred", "pred_sql", required=True, help="Predicted SQL.")
@click.option("--pred-db", "pred_url", default=None, help="Engine URL for the prediction (default --db).")
@click.option("--ordered/--unordered", default=None, help="Force order sensitivity (default: inferred).")
@click.option("--timeout", default=30.0, show_default=True)
@click.option("--policy", "policy_items", multiple=True, help="Comparison policy override KEY=VALUE.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def compare_cmd(db_url: str, gold_sql: str, pred_sql: str, pred_url: str | None,
                ordered: bool | None, timeout: float, policy_items: tuple[str, ...],
                as_json: bool) -> None:
    """Run two queries and say whether their results match (exit 0) or not (exit 1); exit 7
    when the gold query itself fails, since then nothing can be judged."""
    from polysql import connect
    from polysql.normalizers.gold import judge, run_gold

    with connect(db_url) as gold_engine:
        def run(sql: str) -> Result:
            return gold_engine.execute(sql, timeout=timeout)

        gold = run_gold(gold_sql, gold_engine.dialect, run)
        if pred_url is None or pred_url == db_url:
            pred = gold_engine.execute(pred_sql, timeout=timeout)
        else:
            with connect(pred_url) as pred_engine:
                pred = pred_engine.execute(pred_sql, timeout=timeout)
        verdict = judge(gold, pred, run, ordered=ordered, **_parse_policy(policy_items))
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


@main.command("load")
@click.argument("source_url")
@click.argument("target_url")
@click.option("--replace", is_flag=True, help="Reload even if the target already holds this source.")
@click.option("--names", type=click.Choice(["exact", "lower", "snake"]), default="exact",
              show_default=True, help="Keep source names exactly, or make them engine-idiomatic.")
def load_cmd(source_url: str, target_url: str, replace: bool, names: str) -> None:
    """Copy the database at SOURCE_URL into TARGET_URL (idempotent)."""
    from polysql import load

    report = load(source_url, target_url, replace=replace, names=names)
    if report.skipped:
        stdout.print(f"{escape(target_url)} already holds this source (fingerprint {report.fingerprint[:16]}…); "
                  "nothing to do (use --replace to reload)")
        return
    table = Table(title=f"loaded {source_url} → {target_url} in {report.elapsed:.2f} s")
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, rows in report.tables.items():
        table.add_row(name, str(rows))
    stdout.print(table)
    for coercion in report.coercions:
        console.print(f"[yellow]coercion:[/] {escape(f'{coercion.table}.{coercion.column}: {coercion.message}')} "
                      f"({coercion.count} value(s))", highlight=False)


@main.command("schema")
@click.argument("url")
@click.option("--sample-rows", default=0, show_default=True, help="Append N example rows per table.")
def schema_cmd(url: str, sample_rows: int) -> None:
    """Print the schema held at URL as CREATE TABLE statements in that engine's dialect."""
    from polysql import connect
    from polysql.ddl import render_schema

    with connect(url) as backend:
        click.echo(render_schema(backend, sample_rows=sample_rows), nl=False)


@main.command("up")
@click.option("--engines", "-e", default="postgres,mysql", show_default=True,
              help="Servers to start: postgres, mysql (MariaDB image).")
def up_cmd(engines: str) -> None:
    """Start throwaway PostgreSQL/MariaDB containers (needs Docker) until Ctrl-C."""
    import time

    from polysql.provision import servers

    wanted = [e.strip() for e in engines.split(",") if e.strip()]
    with servers(wanted) as urls:
        items = ",".join(f"{name}={url}" for name, url in urls.items())
        stdout.print(f"servers are up; in another terminal run:\n  polysql sweep --engines sqlite,duckdb,{escape(items)}")
        stdout.print("press Ctrl-C to stop and remove them")
        while True:
            time.sleep(3600)


@main.command("engines")
def engines_cmd() -> None:
    """List the engine URL schemes polysql can use here, and whether each is ready (its client
    library is installed)."""
    from polysql.registry import available_schemes, engine_status

    table = Table(title="engines")
    for col in ("scheme", "backend", "dialect", "status"):
        table.add_column(col)
    for scheme in available_schemes():
        status = engine_status(scheme)
        cls = status.backend
        # escaped: rich would take the extra's "[spark]" for a style tag and drop it
        state = "ready" if status.ready else escape(f"client missing: {status.problem}")
        table.add_row(scheme, cls.name if cls else "-", cls.dialect if cls else "-", state)
    stdout.print(table)


@main.command("datasets")
def datasets_cmd() -> None:
    """List the datasets polysql knows and the forms a dataset can be given in."""
    from polysql.datasets.registry import describe_datasets

    table = Table(title="datasets")
    table.add_column("dataset")
    table.add_column("description")
    for name, description in describe_datasets():
        table.add_row(name, description)
    stdout.print(table)


def _register_subgroups() -> None:
    """Command groups that live in modules of their own."""
    from polysql.cli_debug import debug_group
    from polysql.cli_reward import reward_group

    main.add_command(debug_group)
    main.add_command(reward_group)


_register_subgroups()


if __name__ == "__main__":  # pragma: no cover
    main()
