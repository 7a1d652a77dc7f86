"""SQL-debugging evaluation: load tasks, ask a predictor for fixes, score them, write reports.

A task carries a buggy script, what the user saw (an engine error for ``syntax`` tasks, an issue
report for ``semantic`` ones), one or more reference fixes and a three-level bug taxonomy.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from polysql.backends import catalog
from polysql.core.errors import (
    ConfigError,
    DatasetError,
    EngineUnavailableError,
    LLMError,
    LLMUnavailableError,
    PredictionFileError,
)
from polysql.datasets.registry import get_dataset
from polysql.debug.metrics import (
    SchemaMapping,
    exact_match,
    execution_match,
    graph_match,
    modify_better,
)
from polysql.engines.copies import EvaluationCopies
from polysql.llm.client import LLMClient, ModelConfig, ResponseCache, ready_model_config
from polysql.llm.extract import extract_sql

if TYPE_CHECKING:
    from polysql.backends.base import Backend

METRICS: tuple[str, ...] = ("exact_match", "graph_match", "modify_better", "execution_match")
KINDS = ("syntax", "semantic")
_REQUIRED = ("id", "kind", "dialect", "buggy_sql", "references", "taxonomy", "db")

Predictor = Callable[["DebugTask"], str | None]
# (dataset, db_id, dialect) -> an open backend, or None when no database is available
BackendFor = Callable[[str, str, str], "Backend | None"]


@dataclass(frozen=True, slots=True)
class DebugTask:
    id: str
    kind: str
    dialect: str
    buggy_sql: str
    references: tuple[str, ...]
    taxonomy: tuple[str, str, str]
    dataset: str
    db_id: str
    error_message: str | None = None
    issue_report: str | None = None


@dataclass(slots=True)
class TaskScore:
    task: DebugTask
    prediction: str | None
    scores: dict[str, bool | None] = field(default_factory=dict)  # None: metric not run

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.task.id, "kind": self.task.kind, "dialect": self.task.dialect,
                "taxonomy": list(self.task.taxonomy), "prediction": self.prediction,
                **self.scores}


def bundled_tasks_path() -> Path:
    return Path(str(files("polysql.datasets.debug") / "data" / "tasks.yaml"))


def _task_from_dict(raw: Any, where: str) -> DebugTask:
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: a task must be a mapping, got {type(raw).__name__}")
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise DatasetError(f"{where}: task {raw.get('id', '?')!r} misses {', '.join(missing)}")
    task_id = str(raw["id"])
    kind = raw["kind"]
    if kind not in KINDS:
        raise DatasetError(f"{where}: task {task_id!r} has kind {kind!r}; use syntax or semantic")
    if kind == "syntax" and not raw.get("error_message"):
        raise DatasetError(f"{where}: syntax task {task_id!r} needs an error_message")
    if kind == "semantic" and not raw.get("issue_report"):
        raise DatasetError(f"{where}: semantic task {task_id!r} needs an issue_report")
    references = raw["references"]
    if (not isinstance(references, list) or not references
            or not all(isinstance(ref, str) and ref.strip() for ref in references)):
        raise DatasetError(f"{where}: task {task_id!r} needs a non-empty list of reference SQL")
    taxonomy = raw["taxonomy"]
    if (not isinstance(taxonomy, list) or len(taxonomy) != 3
            or not all(isinstance(level, str) and level for level in taxonomy)):
        raise DatasetError(f"{where}: task {task_id!r} taxonomy must be three non-empty names")
    db = raw["db"]
    if not isinstance(db, dict) or not db.get("dataset") or not db.get("db_id"):
        raise DatasetError(f"{where}: task {task_id!r} db must name dataset and db_id")
    return DebugTask(id=task_id, kind=kind, dialect=str(raw["dialect"]),
                     buggy_sql=str(raw["buggy_sql"]), references=tuple(references),
                     taxonomy=(taxonomy[0], taxonomy[1], taxonomy[2]),
                     dataset=str(db["dataset"]), db_id=str(db["db_id"]),
                     error_message=raw.get("error_message"), issue_report=raw.get("issue_report"))


def load_tasks(path: Path | None = None) -> list[DebugTask]:
    """Read and structurally check a tasks YAML file (the bundled set by default)."""
    path = path or bundled_tasks_path()
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise DatasetError(f"cannot read debug tasks {path}: {exc}") from exc
    raw_tasks = document.get("tasks") if isinstance(document, dict) else None
    if not isinstance(raw_tasks, list) or not raw_tasks:
        raise DatasetError(f"{path}: expected a mapping with a non-empty 'tasks' list")
    tasks = [_task_from_dict(raw, str(path)) for raw in raw_tasks]
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise DatasetError(f"{path}: duplicate task id {task.id!r}")
        seen.add(task.id)
    return tasks


def validate_on_database(task: DebugTask, backend: Backend) -> list[str]:
    """Problems that only the database reveals: a syntax task whose buggy SQL runs, a reference
    that fails. An empty list means the task is sound."""
    problems: list[str] = []
    buggy = backend.execute(task.buggy_sql)
    if task.kind == "syntax" and buggy.ok:
        problems.append(f"{task.id}: syntax task's buggy SQL runs without error")
    for number, reference in enumerate(task.references, start=1):
        result = backend.execute(reference)
        if not result.ok:
            assert result.error is not None
            problems.append(f"{task.id}: reference {number} fails: {result.error.message}")
    return problems


def schema_mapping(backend: Backend) -> dict[str, dict[str, str]]:
    """Column names (with declared types) per table, as sqlglot's optimizer wants them."""
    return {table.name: {column.name: column.declared_type or "TEXT" for column in table.columns}
            for table in backend.tables()}


# -- predictors --------------------------------------------------------------------------------

def _predictions_file(path: Path) -> Predictor:
    predictions: dict[str, str | None] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise PredictionFileError(f"cannot read predictions {path}: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PredictionFileError(f"{path}:{number}: not JSON ({exc})") from exc
        if not isinstance(record, dict) or "id" not in record or "sql" not in record:
            raise PredictionFileError(f"{path}:{number}: expected an object with 'id' and 'sql'")
        predictions[str(record["id"])] = record["sql"]
    return lambda task: predictions.get(task.id)


class LLMFixer:
    """``llm:NAME``: asks model NAME of the model config for each fix, through polysql's own
    client like every other model call: its retries and rate limits, the response cache (asking
    again costs nothing) and its usage accounting (:meth:`usage`).

    An answer the endpoint rejects, or one with no usable query in it, is no fix (``None``). An
    endpoint that gives no answer at all (:class:`~polysql.core.errors.LLMUnavailableError`)
    stops the evaluation: that says nothing about the model's fixes, and scoring it as wrong
    would understate them.
    """

    def __init__(self, config: ModelConfig, *, cache: ResponseCache | None = None,
                 client: LLMClient | None = None) -> None:
        self.config = config
        self.client = client or LLMClient(config, cache=cache)

    @staticmethod
    def messages(task: DebugTask) -> list[dict[str, str]]:
        what_happened = (f"The database reported: {task.error_message}" if task.kind == "syntax"
                         else f"Issue report: {task.issue_report}")
        prompt = (f"This {task.dialect} SQL query is buggy.\n{what_happened}\n\n"
                  f"```sql\n{task.buggy_sql}\n```\n\nReply with the corrected query only, "
                  "in one ```sql block.")
        return [{"role": "user", "content": prompt}]

    def __call__(self, task: DebugTask) -> str | None:
        try:
            completion = self.client.complete(self.messages(task))
        except LLMUnavailableError:
            raise
        except LLMError:  # the endpoint rejected this request: its answer is no fix
            return None
        return extract_sql(completion.text, task.dialect,
                           truncated=completion.finish_reason == "length").sql

    def usage(self) -> dict[str, Any]:
        """Calls, cache hits, tokens, errors and wall time so far."""
        return {"model": self.config.model, **self.client.stats.to_dict()}

    def close(self) -> None:
        self.client.close()


def make_predictor(spec: str, *, model_config: str | Path | None = None,
                   cache: ResponseCache | None = None) -> Predictor:
    """``reference`` (first reference fix), ``identity`` (the buggy SQL unchanged),
    ``file:PATH`` (JSONL of {"id", "sql"}) or ``llm:NAME`` (model NAME of the config file
    ``model_config``, default ``./polysql.toml``; ``cache`` is its response cache, by default
    the one on disk every model call shares)."""
    if spec == "reference":
        return lambda task: task.references[0]
    if spec == "identity":
        return lambda task: task.buggy_sql
    if spec.startswith("file:"):
        return _predictions_file(Path(spec.removeprefix("file:")))
    if spec.startswith("llm:"):
        name = spec.removeprefix("llm:").strip()
        if not name:
            raise ConfigError("'llm:' needs a model name from polysql.toml, e.g. 'llm:gpt4o'")
        config = ready_model_config(name, model_config)
        return LLMFixer(config, cache=cache if cache is not None else ResponseCache())
    raise ConfigError(f"unknown debug predictor {spec!r}: use reference, identity, file:PATH "
                      "or llm:MODEL")


# -- evaluation --------------------------------------------------------------------------------

def score_task(task: DebugTask, prediction: str | None, backend: Backend | None,
               schema: SchemaMapping | None) -> TaskScore:
    try:
        executed = (None if backend is None
                    else execution_match(prediction, task.references, backend))
    except EngineUnavailableError as exc:  # an outage: nothing is scored, the run stops
        raise EngineUnavailableError(f"debug task {task.id}: {exc}") from exc
    scores: dict[str, bool | None] = {
        "exact_match": exact_match(prediction, task.references, task.dialect),
        "graph_match": graph_match(prediction, task.references, task.dialect, schema),
        "modify_better": modify_better(prediction, task.buggy_sql, task.references, task.dialect),
        "execution_match": executed,
    }
    return TaskScore(task=task, prediction=prediction, scores=scores)


def evaluate(tasks: Iterable[DebugTask], predictor: Predictor,
             backend_for: BackendFor | None = None) -> list[TaskScore]:
    """Score every task. ``backend_for`` supplies the database for execution match and for the
    schema Graph Match qualifies against; without it those run without a database."""
    schemas: dict[int, SchemaMapping] = {}
    results: list[TaskScore] = []
    for task in tasks:
        backend = backend_for(task.dataset, task.db_id, task.dialect) if backend_for else None
        schema = None
        if backend is not None:
            schema = schemas.setdefault(id(backend), schema_mapping(backend))
        results.append(score_task(task, predictor(task), backend, schema))
    return results


def _rate(values: Sequence[bool | None]) -> float | None:
    counted = [value for value in values if value is not None]
    return sum(counted) / len(counted) if counted else None


def summarize(results: Sequence[TaskScore], level: int | None = None) -> list[dict[str, Any]]:
    """Per-metric rates overall (``level=None``) or per taxonomy prefix of depth ``level``
    (1, 2 or 3); each row has ``group``, ``tasks`` and one rate (0..1 or None) per metric."""
    groups: dict[str, list[TaskScore]] = {}
    for result in results:
        key = "all" if level is None else "/".join(result.task.taxonomy[:level])
        groups.setdefault(key, []).append(result)
    return [{"group": key, "tasks": len(members),
             **{metric: _rate([m.scores[metric] for m in members]) for metric in METRICS}}
            for key, members in sorted(groups.items())]


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate * 100:.1f}%"


def markdown_report(results: Sequence[TaskScore], predictor: str) -> str:
    lines = [f"# SQL-debugging evaluation: predictor `{predictor}`", "",
             f"{len(results)} tasks.", ""]
    for title, level in (("Overall", None), ("By taxonomy level 1", 1),
                         ("By taxonomy level 2", 2), ("By taxonomy level 3", 3)):
        lines += [f"## {title}", "", "| group | tasks | " + " | ".join(METRICS) + " |",
                  "|---|---:|" + "---:|" * len(METRICS)]
        for row in summarize(results, level):
            cells = " | ".join(_percent(row[metric]) for metric in METRICS)
            lines.append(f"| {row['group']} | {row['tasks']} | {cells} |")
        lines.append("")
    return "\n".join(lines)


def write_reports(results: Sequence[TaskScore], out_dir: Path, predictor: str) -> list[Path]:
    """Write per-task CSV, a JSON summary (with per-task rows) and a markdown report."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, json_path, md_path = (out_dir / "debug_tasks.csv", out_dir / "debug_summary.json",
                                    out_dir / "debug_report.md")
    rows = [result.to_dict() for result in results]
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "kind", "dialect", "taxonomy",
                                                    "prediction", *METRICS])
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "taxonomy": "/".join(row["taxonomy"])})
    summary = {"predictor": predictor, "overall": summarize(results)[0] if results else {},
               "by_level": {str(level): summarize(results, level) for level in (1, 2, 3)},
               "tasks": rows}
    json_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    md_path.write_text(markdown_report(results, predictor), encoding="utf-8")
    return [csv_path, json_path, md_path]


class DemoBackends:
    """Each task's database, opened once and read-only: an evaluation copy of the task's dataset
    database (loaded on first use, kept in polysql's cache) on the engine that speaks the task's
    dialect, or on ``engine_url`` (a short name or URL) for every task."""

    def __init__(self, engine_url: str | None = None) -> None:
        self._engine_url = engine_url
        self._copies = EvaluationCopies()

    def __call__(self, dataset: str, db_id: str, dialect: str) -> Backend:
        engine = self._engine_url or self._engine_for(dialect)
        return self._copies.get(
            engine, dataset=dataset, db_id=db_id,
            source=lambda: get_dataset(dataset).database_url(db_id)).backend

    @staticmethod
    def _engine_for(dialect: str) -> str:
        info = catalog.find(dialect)
        if info is None or info.dialect != dialect:
            raise ConfigError(f"no engine installed here speaks the {dialect!r} dialect: pass "
                              "--engine with the engine to run these tasks on")
        return info.name

    def close(self) -> None:
        self._copies.close()

    def __enter__(self) -> DemoBackends:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

