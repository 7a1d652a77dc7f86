"""The sweep: every question x predictor x engine, executed, compared and recorded.

Flow (one way): dataset -> engines loaded -> predictions -> execution (cached) -> verdicts ->
results store. Gold SQL runs once per question on the loaded copy of its source engine; each
prediction runs natively on its target engine. Engines work in parallel (one worker each, since
each holds its own connections); records are appended as they finish, so an interrupted sweep
resumes where it stopped.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from polysql import __version__
from polysql.analysis.summary import Summary, summarize
from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Backend
from polysql.cache import ExecutionCache, execution_key
from polysql.datasets.base import Dataset, Question
from polysql.datasets.registry import get_dataset
from polysql.engines import EngineFleet, EngineSpec, parse_engine_specs
from polysql.errors import ConfigError, EngineError, ResultsStoreError
from polysql.model import Result, Verdict
from polysql.normalizers.compare import compare
from polysql.normalizers.gold import GoldRuns, run_gold
from polysql.paths import cache_dir
from polysql.predictors import EngineInfo, FilePredictor, Predictor, make_predictor
from polysql.registry import backend_class, parse_url
from polysql.store import ResultsStore, record_key

RUN_FILE = "run.json"
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
    use_cache: bool = True
    fresh: bool = False


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


class SweepObserver:
    """Progress hooks; the CLI draws a progress bar from these. All no-ops by default."""

    def phase(self, name: str, total: int) -> None: ...

    def advance(self, record: dict[str, Any] | None = None) -> None: ...

    def message(self, text: str) -> None: ...


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
        self.dataset: Dataset = get_dataset(config.dataset)
        self.predictors = self._make_predictors(config.predictors)
        self.engines = parse_engine_specs(config.engines)
        self.run_dir = Path(config.out) if config.out else Path("runs") / self.dataset.name
        self.store = ResultsStore(self.run_dir)
        self.problems: list[str] = []
        self._stop = threading.Event()
        self._write_lock = threading.Lock()
        self._written = 0

    @staticmethod
    def _make_predictors(specs: str | list[str]) -> list[Predictor]:
        items = [s.strip() for s in (specs.split(",") if isinstance(specs, str) else specs) if s.strip()]
        if not items:
            raise ConfigError("no predictors given: use e.g. --predictor gold,transpile")
        predictors = [make_predictor(s) for s in items]
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
        self.run_dir.mkdir(parents=True, exist_ok=True)
        run_info = {
            "polysql": __version__,
            "settings": settings,
            "engines": {e.name: e.url.render_as_string(hide_password=True) for e in self.engines},
            "predictors": [p.describe() for p in self.predictors],
            "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        path.write_text(json.dumps(run_info, indent=2) + "\n", encoding="utf-8")

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
        dead: dict[str, str] = {}
        written = 0
        interrupted = False
        try:
            need_gold = {item.question.id: item.question for items in pending.values() for item in items}
            golds = self._run_golds(list(need_gold.values()), fleet, cache)
            total = sum(len(v) for v in pending.values())
            self.observer.phase("predictions", total)
            with self.store.open_for_append() as out, ThreadPoolExecutor(
                max_workers=max(1, len(self.engines)), thread_name_prefix="engine"
            ) as pool:
                futures = [
                    pool.submit(self._engine_worker, spec, pending[spec.name], golds, fleet, cache, out, dead)
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
            cache_hits=hits, elapsed=time.perf_counter() - started,
        )

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
                       dead: dict[str, str]) -> None:
        info = EngineInfo(name=spec.name, dialect=spec.dialect)
        for item in items:
            if self._stop.is_set():
                break
            question = item.question
            gold = golds.get(question.id)
            if gold is None:  # gold phase interrupted
                break
            source = self.dataset.database_url(question.db_id)
            try:
                backend = fleet.backend(spec, question.db_id, source)
            except EngineError as exc:
                dead[spec.name] = str(exc)
                self.observer.message(f"engine {spec.name} abandoned: {exc}")
                break
            prediction = item.predictor.predict(question, info)
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
                        dead[spec.name] = result.error.message
                        self.observer.message(f"engine {spec.name} abandoned: {result.error.message}")
                        break
                verdict = compare(gold.compared, result, dialect=question.source_dialect,
                                  **gold.compare_kwargs(), **self.config.policy)
            record = self._record(question, item.predictor, spec, backend, prediction.sql,
                                  prediction.failure, prediction.meta, gold, result, verdict)
            with self._write_lock:
                out.write(record)
                self._written += 1
            self.observer.advance(record)

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
            "dialect": spec.dialect,
            "tags": list(question.tags),
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
    }


def run_sweep(config: SweepConfig, observer: SweepObserver | None = None,
              on_ready: Callable[[Sweep], None] | None = None) -> SweepOutcome:
    sweep = Sweep(config, observer)
    if on_ready is not None:
        on_ready(sweep)
    return sweep.run()


__all__ = ["SweepConfig", "SweepObserver", "SweepOutcome", "Sweep", "record_key", "run_sweep"]
