"""The sweep: every question x predictor x engine, executed, compared and recorded.

Flow (one way): dataset -> engines loaded -> predictions -> execution (cached) -> verdicts ->
results store. Gold SQL runs once per question on the loaded copy of its source engine; each
prediction runs natively on its target engine. Engines work in parallel (one worker each, since
each holds its own connections); records are appended as they finish, so an interrupted sweep
resumes where it stopped.

Model predictors (``llm:NAME``) are asked ahead: each engine's worker hands all its model
requests to the model's own thread pool first (sized by the model's ``max_concurrency``), then
executes whatever prediction is ready, so generation and execution overlap.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from polysql import __version__
from polysql.analysis.summary import Summary, summarize
from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Backend
from polysql.cache import ExecutionCache, execution_key
from polysql.datasets.base import Dataset, Question
from polysql.datasets.registry import get_dataset
from polysql.ddl import render_schema
from polysql.engines import EngineFleet, EngineSpec, parse_engine_specs
from polysql.errors import ConfigError, EngineError, ResultsStoreError
from polysql.model import Result, Verdict
from polysql.normalizers.compare import resolve_policy
from polysql.normalizers.gold import GoldRuns, judge, run_gold
from polysql.paths import cache_dir
from polysql.predictors import EngineInfo, FilePredictor, Prediction, Predictor, make_predictor
from polysql.progress import SweepObserver
from polysql.prompting import SchemaCatalog
from polysql.registry import backend_class, parse_url
from polysql.store import RUN_FILE, ResultsStore, record_key

# Settings that change verdicts: resuming a run under different ones would mix incomparable records.
VERDICT_SETTINGS = ("dataset", "timeout", "max_rows", "policy")


@dataclass(slots=True)
class SweepConfig:
    dataset: str = "demo"
    engines: str | list[str] = "sqlite,duckdb"
    predictors: str | list[str] = "gold,transpile"
    out: Path | None = None  # default: runs/<dataset name>
    timeout: float = DEFAULT_TIMEOUT
    max_rows: int = DEFAULT_MAX_ROWS
    question_ids: list[str] | None = None
    limit: int | None = None
    policy: dict[str, Any] = field(default_factory=dict)
    use_cache: bool = True  # also governs the model response cache
    fresh: bool = False
    # Model predictors: names of [models.NAME] tables in the config file; each becomes llm:NAME.
    models: str | list[str] = field(default_factory=list)
    model_config: Path | None = None  # default ./polysql.toml
    prompt_level: str = "dialect"  # generic | dialect | pitfalls
    cot: bool = False
    sample_rows: int = 0
    prompt_template: str = "text2sql"


@dataclass(slots=True)
class SweepOutcome:
    run_dir: Path
    summary: Summary
    written: int  # records written by this invocation
    resumed: int  # work items skipped because a previous invocation finished them
    problems: list[str]  # skipped prediction-file lines and other non-fatal issues
    dead_engines: dict[str, str]  # engine -> why it was abandoned (its work stays pending)
    interrupted: bool
    cache_hits: int = 0
    elapsed: float = 0.0
    # per model predictor (llm:NAME): calls, cache_hits, prompt_tokens, completion_tokens, errors,
    # wall_time, requests, retries
    models: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(slots=True)
class _WorkItem:
    question: Question
    predictor: Predictor


class Sweep:
    def __init__(self, config: SweepConfig, observer: SweepObserver | None = None) -> None:
        self.config = config
        self.observer = observer or SweepObserver()
        if config.timeout <= 0:
            raise ConfigError(f"timeout must be positive, got {config.timeout}")
        if config.max_rows <= 0:
            raise ConfigError(f"max_rows must be positive, got {config.max_rows}")
        # a bad --policy must fail here, not in the middle of the sweep after engines loaded
        resolve_policy(None, config.policy)
        self.dataset: Dataset = get_dataset(config.dataset)
        self.llm_options: Any = None  # polysql.predictors_llm.LLMOptions when models are swept
        self.predictors = self._make_predictors(config)
        self.engines = parse_engine_specs(config.engines)
        self.run_dir = Path(config.out) if config.out else Path("runs") / self.dataset.name
        self.store = ResultsStore(self.run_dir)
        self.problems: list[str] = []
        self.schemas = SchemaCatalog()  # schema text per (engine, database), for model prompts
        self._stop = threading.Event()
        self._write_lock = threading.Lock()
        self._written = 0
        # per question, how to run more SQL on the gold's engine (for re-runs judging needs)
        self._gold_rerun: dict[str, Callable[[str], Result]] = {}

    def _make_predictors(self, config: SweepConfig) -> list[Predictor]:
        items = _split(config.predictors) + [f"llm:{name}" for name in _split(config.models)]
        if not items:
            raise ConfigError("no predictors given: use e.g. --predictor gold,transpile or --model NAME")
        if any(item.startswith("llm:") for item in items):
            # imported here: the model client is an optional extra
            from polysql.predictors_llm import LLMOptions
            from polysql.prompting import PromptSettings

            prompts = PromptSettings(level=config.prompt_level, cot=config.cot,
                                     sample_rows=config.sample_rows, template=config.prompt_template)
            self.llm_options = LLMOptions(config_path=config.model_config, prompts=prompts,
                                          use_cache=config.use_cache)
        predictors = [make_predictor(s, llm=self.llm_options) for s in items]
        names = [p.name for p in predictors]
        if len(set(names)) != len(names):
            raise ConfigError(f"predictor names must be unique, got {names}; name files with NAME=PATH")
        return predictors

    # -- run bookkeeping --------------------------------------------------------------------
    def _settings(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset.name,
            "timeout": self.config.timeout,
            "max_rows": self.config.max_rows,
            "policy": self.config.policy,
        }

    def _check_or_write_run_file(self) -> None:
        path = self.run_dir / RUN_FILE
        settings = self._settings()
        if self.config.fresh and self.store.path.exists():
            self.store.path.unlink()
        described = [json.loads(json.dumps(p.describe(), default=str)) for p in self.predictors]
        earlier: list[dict[str, Any]] = []
        if path.exists() and self.store.path.exists():
            try:
                previous = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise ResultsStoreError(f"{path} is unreadable ({exc}); use --fresh to start over") from exc
            changed = [k for k in VERDICT_SETTINGS if previous.get("settings", {}).get(k) != settings[k]]
            if changed:
                raise ResultsStoreError(
                    f"{self.run_dir} holds a sweep with different {', '.join(changed)} "
                    f"(was {[previous.get('settings', {}).get(k) for k in changed]}); resuming would mix "
                    "incomparable verdicts. Use another --out folder, or --fresh to discard it."
                )
            earlier = [p for p in previous.get("predictors", []) if isinstance(p, dict)]
            self._check_predictor_settings(earlier, described)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        names = {d.get("name") for d in described}
        run_info = {
            "polysql": __version__,
            "settings": settings,
            # how to load the dataset again (a folder dataset's name alone does not say where)
            "dataset_spec": self.config.dataset,
            "engines": {e.name: e.url.render_as_string(hide_password=True) for e in self.engines},
            # earlier predictors stay listed: their records are still in this folder
            "predictors": described + [p for p in earlier if p.get("name") not in names],
            "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        path.write_text(json.dumps(run_info, indent=2) + "\n", encoding="utf-8")

    def _check_predictor_settings(self, earlier: list[dict[str, Any]], now: list[dict[str, Any]]) -> None:
        """A predictor whose answers depend on settings (a model's prompt level, parameters...)
        must not resume records made under other settings: the results would mix two setups."""
        before = {p.get("name"): p.get("settings") for p in earlier}
        for entry in now:
            old, new = before.get(entry.get("name")), entry.get("settings")
            if old is None or new is None or old == new:
                continue
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise ResultsStoreError(
                f"{self.run_dir} holds results of predictor {entry.get('name')} made with different "
                f"{', '.join(changed)} (was {[old.get(k) for k in changed]}, now {[new.get(k) for k in changed]}); "
                "resuming would mix them. Use another --out folder, or --fresh to discard it."
            )

    def _questions(self) -> list[Question]:
        questions = list(self.dataset.questions)
        if self.config.question_ids:
            wanted = set(self.config.question_ids)
            unknown = wanted - {q.id for q in questions}
            if unknown:
                raise ConfigError(f"unknown question id(s) in {self.dataset.name}: {sorted(unknown)[:10]}")
            questions = [q for q in questions if q.id in wanted]
        if self.config.limit is not None:
            questions = questions[: self.config.limit]
        return questions

    # -- main ---------------------------------------------------------------------------------
    def run(self) -> SweepOutcome:
        started = time.perf_counter()
        for predictor in self.predictors:
            if isinstance(predictor, FilePredictor):
                self.problems.extend(str(p) for p in predictor.problems)
        self._check_or_write_run_file()
        questions = self._questions()
        done = self.store.done_keys()
        pending: dict[str, list[_WorkItem]] = {e.name: [] for e in self.engines}
        resumed = 0
        for question in questions:
            for predictor in self.predictors:
                for engine in self.engines:
                    if (self.dataset.name, question.id, predictor.name, engine.name) in done:
                        resumed += 1
                    else:
                        pending[engine.name].append(_WorkItem(question, predictor))
        cache = ExecutionCache(cache_dir() / "executions.sqlite") if self.config.use_cache else None
        fleet = EngineFleet(cache_dir(), self.dataset.name)
        schemas = self.schemas
        dead: dict[str, str] = {}
        written = 0
        interrupted = False
        try:
            need_gold = {item.question.id: item.question for items in pending.values() for item in items}
            golds = self._run_golds(list(need_gold.values()), fleet, cache)
            total = sum(len(v) for v in pending.values())
            self.observer.phase("predictions", total)
            for predictor in self.predictors:
                if predictor.concurrent:
                    requests = sum(1 for items in pending.values() for i in items if i.predictor is predictor)
                    self.observer.generation(predictor.name, requests)
            with self.store.open_for_append() as out, ThreadPoolExecutor(
                max_workers=max(1, len(self.engines)), thread_name_prefix="engine"
            ) as pool:
                futures = [
                    pool.submit(self._engine_worker, spec, pending[spec.name], golds, fleet, cache, out, dead,
                                schemas)
                    for spec in self.engines if pending[spec.name]
                ]
                try:
                    remaining = set(futures)
                    while remaining:  # short waits keep the main thread responsive to Ctrl-C
                        _finished, remaining = wait(remaining, timeout=0.25)
                except KeyboardInterrupt:
                    interrupted = True
                    # workers finish the statement they are on, write its record, and stop
                    self._stop.set()
                    wait(futures)
                for future in futures:
                    future.result()  # re-raise a worker's unexpected error
            written = self._written
        except KeyboardInterrupt:
            interrupted = True
            self._stop.set()
        finally:
            for predictor in self.predictors:
                predictor.close()
            if self.llm_options is not None:
                self.llm_options.close()
            fleet.close()
            hits = cache.hits if cache else 0
            if cache:
                cache.close()
        summary = summarize(self.store.latest_records())
        if self.store.damaged_lines:
            self.problems.append(
                f"{self.store.path}: skipped {len(self.store.damaged_lines)} damaged line(s) "
                f"(e.g. line {self.store.damaged_lines[0]}); their work was redone"
            )
        return SweepOutcome(
            run_dir=self.run_dir, summary=summary, written=written, resumed=resumed,
            problems=self.problems, dead_engines=dead, interrupted=interrupted,
            cache_hits=hits, elapsed=time.perf_counter() - started, models=self.model_usage(),
        )

    def model_usage(self) -> dict[str, dict[str, Any]]:
        """Per model predictor of this invocation: calls, cache hits, tokens, wall time."""
        usage: dict[str, dict[str, Any]] = {}
        for predictor in self.predictors:
            report = predictor.usage()
            if report is not None:
                usage[predictor.name] = report
        return usage

    # -- gold ---------------------------------------------------------------------------------
    def _gold_spec(self, question: Question) -> EngineSpec:
        url = parse_url(self.dataset.database_url(question.db_id))
        cls = backend_class(url)
        return EngineSpec(name=f"gold:{cls.name}", url=url.set(database=None), backend=cls)

    def _run_golds(self, questions: list[Question], fleet: EngineFleet,
                   cache: ExecutionCache | None) -> dict[str, GoldRuns]:
        self.observer.phase("gold", len(questions))
        golds: dict[str, GoldRuns] = {}
        for question in questions:
            if self._stop.is_set():
                break
            spec = self._gold_spec(question)
            source = self.dataset.database_url(question.db_id)
            backend = fleet.backend(spec, question.db_id, source)
            fingerprint = fleet.fingerprint(spec, question.db_id)
            run = functools.partial(self._execute, backend, spec, fingerprint, cache=cache)
            golds[question.id] = run_gold(question.gold_sql, question.source_dialect, run)
            self._gold_rerun[question.id] = run
            self.observer.advance()
        return golds

    # -- execution ----------------------------------------------------------------------------
    def _execute(self, backend: Backend, spec: EngineSpec, fingerprint: str, sql: str,
                 *, cache: ExecutionCache | None) -> Result:
        key = None
        if cache is not None:
            key = execution_key(
                engine=f"{spec.backend.name}|{spec.url.render_as_string(hide_password=True)}",
                engine_version=backend.version(), db_fingerprint=fingerprint, sql=sql,
                timeout=self.config.timeout, max_rows=self.config.max_rows,
            )
            cached = cache.get(key)
            if cached is not None:
                return cached
        result = backend.execute(sql, timeout=self.config.timeout, max_rows=self.config.max_rows)
        if cache is not None and key is not None:
            cache.put(key, result)
        return result

    def _engine_worker(self, spec: EngineSpec, items: list[_WorkItem], golds: dict[str, GoldRuns],
                       fleet: EngineFleet, cache: ExecutionCache | None, out: Any,
                       dead: dict[str, str], schemas: SchemaCatalog) -> None:
        info = EngineInfo(name=spec.name, dialect=spec.dialect)
        generating: dict[Future[Prediction], _WorkItem] = {}
        try:
            # Model requests first, all of them: they wait on remote services, so they should be
            # in flight while this engine executes whatever is ready.
            for item in items:
                if not item.predictor.concurrent:
                    continue
                if self._stop.is_set() or item.question.id not in golds:
                    return
                backend = self._backend(spec, item.question, fleet, dead)
                if backend is None:
                    return
                engine = self._engine_info(info, spec, item, backend, schemas, dead)
                if engine is None:
                    return
                future = item.predictor.submit(item.question, engine)
                future.add_done_callback(functools.partial(self._generation_done, item.predictor.name))
                generating[future] = item
            inline = deque(item for item in items if not item.predictor.concurrent)
            while (inline or generating) and not self._stop.is_set():
                ready = [future for future in generating if future.done()]
                if ready:
                    for future in ready:
                        item = generating.pop(future)
                        if self._stop.is_set() or not self._process(
                                spec, info, item, future.result(), golds, fleet, cache, out, dead, schemas):
                            return
                elif inline:
                    if not self._process(spec, info, inline.popleft(), None, golds, fleet, cache, out,
                                         dead, schemas):
                        return
                else:  # short waits keep Ctrl-C and dead engines responsive
                    wait(list(generating), timeout=0.25, return_when=FIRST_COMPLETED)
        finally:
            for future in generating:
                future.cancel()  # requests not yet sent; the work stays pending for a resume

    def _generation_done(self, predictor: str, future: Future[Prediction]) -> None:
        if not future.cancelled():
            self.observer.generated(predictor)

    def _backend(self, spec: EngineSpec, question: Question, fleet: EngineFleet,
                 dead: dict[str, str]) -> Backend | None:
        try:
            return fleet.backend(spec, question.db_id, self.dataset.database_url(question.db_id))
        except EngineError as exc:
            self._abandon(spec, str(exc), dead)
            return None

    def _abandon(self, spec: EngineSpec, why: str, dead: dict[str, str]) -> None:
        dead[spec.name] = why
        self.observer.message(f"engine {spec.name} abandoned: {why}")

    def _engine_info(self, info: EngineInfo, spec: EngineSpec, item: _WorkItem, backend: Backend,
                     schemas: SchemaCatalog, dead: dict[str, str]) -> EngineInfo | None:
        """What the predictor is told about the engine: for those that read the schema, the
        question's database as this engine holds it (rendered once per engine and database)."""
        predictor = item.predictor
        if not predictor.needs_schema:
            return info
        rows = predictor.sample_rows
        try:
            schema = schemas.get(spec.name, item.question.db_id, rows,
                                 lambda: render_schema(backend, sample_rows=rows))
            version = backend.version()
        except EngineError as exc:
            self._abandon(spec, str(exc), dead)
            return None
        return replace(info, version=version, schema=schema)

    def _process(self, spec: EngineSpec, info: EngineInfo, item: _WorkItem, prediction: Prediction | None,
                 golds: dict[str, GoldRuns], fleet: EngineFleet, cache: ExecutionCache | None, out: Any,
                 dead: dict[str, str], schemas: SchemaCatalog) -> bool:
        """Predict (unless ``prediction`` is already made), execute, compare and record one item.
        False when this engine's worker must stop (gold phase interrupted, engine gone)."""
        question = item.question
        gold = golds.get(question.id)
        if gold is None:  # gold phase interrupted
            return False
        source = self.dataset.database_url(question.db_id)
        backend = self._backend(spec, question, fleet, dead)
        if backend is None:
            return False
        if prediction is None:
            engine = self._engine_info(info, spec, item, backend, schemas, dead)
            if engine is None:
                return False
            prediction = item.predictor.predict(question, engine)
        result: Result | None = None
        verdict: Verdict
        if prediction.sql is None:
            verdict = Verdict(False, f"no SQL to run: {prediction.failure}",
                              {"generation_failure": prediction.failure})
        else:
            fingerprint = fleet.fingerprint(spec, question.db_id)
            result = self._execute(backend, spec, fingerprint, prediction.sql, cache=cache)
            if result.error is not None and result.error.kind == "unavailable":
                try:
                    backend = fleet.reconnect(spec, question.db_id, source)
                    result = self._execute(backend, spec, fingerprint, prediction.sql, cache=cache)
                except EngineError as exc:
                    result = Result.failed("unavailable", str(exc))
                if result.error is not None and result.error.kind == "unavailable":
                    self._abandon(spec, result.error.message, dead)
                    return False
            verdict = judge(gold, result, self._gold_rerun.get(question.id), **self.config.policy)
        record = self._record(question, item.predictor, spec, backend, prediction.sql,
                              prediction.failure, prediction.meta, gold, result, verdict)
        with self._write_lock:
            out.write(record)
            self._written += 1
        self.observer.advance(record)
        return True

    def _record(self, question: Question, predictor: Predictor, spec: EngineSpec, backend: Backend,
                sql: str | None, failure: str | None, meta: dict[str, Any], gold: GoldRuns,
                result: Result | None, verdict: Verdict) -> dict[str, Any]:
        if gold.result.error is not None:
            status = "invalid_gold"
        elif sql is None:
            status = "generation_failure"
        elif result is not None and result.error is not None:
            status = "exec_error"
        else:
            status = "match" if verdict.match else "mismatch"
        return {
            "dataset": self.dataset.name,
            "question_id": question.id,
            "db_id": question.db_id,
            "predictor": predictor.name,
            "engine": spec.name,
            "engine_version": backend.version(),
            # an emulator's verdicts say so even when the engine was given another name
            "emulated": spec.backend.is_emulated(spec.url),
            "dialect": spec.dialect,
            "tags": list(question.tags),
            "difficulty": question.difficulty,
            # what error analysis reads besides the outcome, so it never reopens the dataset
            "question": question.question,
            "evidence": question.evidence,
            "gold_sql": question.gold_sql,
            "gold_dialect": question.source_dialect,
            "status": status,
            "match": verdict.match and status == "match",
            "reason": verdict.reason,
            "details": verdict.details,
            "sql": sql,
            "prediction_failure": failure,
            "prediction_meta": meta,
            "pred": _result_summary(result),
            "gold": _result_summary(gold.result),
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }


def _result_summary(result: Result | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {
        "columns": result.columns,
        "types": result.types,
        "row_count": len(result.rows),
        "truncated": result.truncated,
        "elapsed": round(result.elapsed, 6),
        "error": result.error.to_dict() if result.error else None,
        **({"stats": result.stats} if result.stats else {}),
    }


def run_sweep(config: SweepConfig, observer: SweepObserver | None = None,
              on_ready: Callable[[Sweep], None] | None = None) -> SweepOutcome:
    sweep = Sweep(config, observer)
    if on_ready is not None:
        on_ready(sweep)
    return sweep.run()


def _split(value: str | list[str] | None) -> list[str]:
    """Comma-separated text or a list of such items, as a flat list without blanks."""
    parts = [value] if isinstance(value, str) else list(value or [])
    return [item.strip() for part in parts for item in part.split(",") if item.strip()]


__all__ = ["SweepConfig", "SweepObserver", "SweepOutcome", "Sweep", "record_key", "run_sweep"]
