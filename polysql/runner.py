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
import traceback
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
from polysql.errors import ConfigError, EngineError, PolysqlError, ResultsStoreError
from polysql.model import Result, Verdict
from polysql.normalizers.compare import resolve_policy
from polysql.normalizers.gold import GoldRuns, judge, run_gold
from polysql.paths import cache_dir
from polysql.predictors import (
    EngineInfo,
    FilePredictor,
    Prediction,
    Predictor,
    make_predictor,
    text_problem,
)
from polysql.progress import SweepObserver
from polysql.prompting import SchemaCatalog
from polysql.registry import backend_class, connect, parse_url
from polysql.store import (
    RUN_FILE,
    SUPERSEDED_FILE,
    RecordKey,
    ResultsStore,
    RunPlan,
    read_run_info,
    record_key,
)
from polysql.sweep.inputs import Inputs, RecordInputs
from polysql.sweep.interrupts import StopSignals

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
    resumed: int  # work items skipped because a previous invocation finished them unchanged
    problems: list[str]  # skipped prediction-file lines and other non-fatal issues
    dead_engines: dict[str, str]  # engine -> why it was abandoned (its work stays pending)
    interrupted: bool
    cache_hits: int = 0
    elapsed: float = 0.0
    # per model predictor (llm:NAME): calls, cache_hits, prompt_tokens, completion_tokens, errors,
    # wall_time, requests, retries
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    # records of this selection whose inputs changed since they were made: re-evaluated
    reevaluated: int = 0
    # records outside this selection (--limit, --question) whose inputs changed: set aside in
    # results.superseded.jsonl, their work pending until a run that includes them
    superseded: int = 0
    # predictor -> (why it gave no answers, how many predictions stay pending)
    unavailable: dict[str, tuple[str, int]] = field(default_factory=dict)
    # database id -> why every gold query on it failed (an empty or unreadable database)
    broken_databases: dict[str, str] = field(default_factory=dict)
    # work items that hit a bug in polysql: (what, traceback); their work stays pending
    internal_errors: list[tuple[str, str]] = field(default_factory=list)
    damaged_lines: int = 0  # unreadable lines dropped from results.jsonl at the start

    @property
    def pending(self) -> int:
        return self.summary.pending

    @property
    def status(self) -> str:
        if self.summary.complete:
            return "complete"
        return "interrupted" if self.interrupted else "incomplete"

    def pending_notes(self) -> list[str]:
        """Why work is pending, one sentence per cause (for the report banner)."""
        notes = [f"Engine {name} was abandoned: {why}." for name, why in self.dead_engines.items()]
        notes += [f"{name} gave no answers ({why}); {count} prediction(s) pending."
                  for name, (why, count) in self.unavailable.items()]
        if self.internal_errors:
            notes.append(f"{len(self.internal_errors)} work item(s) hit an internal error.")
        if self.superseded:
            notes.append(f"{self.superseded} record(s) outside this run's selection were made "
                         "from inputs that have changed since, and are pending.")
        if self.interrupted:
            notes.append("The sweep was interrupted.")
        return notes


@dataclass(slots=True)
class _WorkItem:
    question: Question
    predictor: Predictor
    inputs: Inputs


class _Cancelled(Exception):
    """A statement was cancelled by the user (second Ctrl-C): its result means nothing."""


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
        self._cancel = threading.Event()
        self._write_lock = threading.Lock()
        self._written = 0
        # statements running now, by thread: what a second Ctrl-C cancels
        self._running: dict[int, Backend] = {}
        self._running_lock = threading.Lock()
        self._unavailable: dict[str, tuple[str, int]] = {}
        self._internal_errors: list[tuple[str, str]] = []
        self._inputs = RecordInputs(self._database_fingerprint)
        self._crash: BaseException | None = None  # an error of the work thread, raised in run()
        self._damaged = 0
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

    def _check_or_write_run_file(self, questions: list[Question]) -> RunPlan:
        """Refuse to mix incomparable runs, then record settings, engines, predictors and the
        plan (every invocation's work, merged) in run.json. Returns the plan."""
        path = self.run_dir / RUN_FILE
        settings = self._settings()
        if self.config.fresh:
            for stale in (self.store.path, self.run_dir / SUPERSEDED_FILE):
                stale.unlink(missing_ok=True)
        described = [json.loads(json.dumps(p.describe(), default=str)) for p in self.predictors]
        earlier: list[dict[str, Any]] = []
        plan = RunPlan()
        previous = read_run_info(self.run_dir) if self.store.path.exists() else None
        if previous is not None:
            changed = [k for k in VERDICT_SETTINGS if previous.get("settings", {}).get(k) != settings[k]]
            if changed:
                raise ResultsStoreError(
                    f"{self.run_dir} holds a sweep with different {', '.join(changed)} "
                    f"(was {[previous.get('settings', {}).get(k) for k in changed]}); resuming would mix "
                    "incomparable verdicts. Use another --out folder, or --fresh to discard it."
                )
            earlier = [p for p in previous.get("predictors", []) if isinstance(p, dict)]
            self._check_predictor_settings(earlier, described)
            plan = RunPlan.from_list(previous.get("plan"))
            if not plan.blocks:
                # written before run folders kept a plan: what is recorded is what was asked for
                self._plan_from_records(plan)
        plan.add(self.dataset.name, [q.id for q in questions], [p.name for p in self.predictors],
                 [e.name for e in self.engines])
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
            "plan": plan.to_list(),
            "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        path.write_text(json.dumps(run_info, indent=2) + "\n", encoding="utf-8")
        return plan

    def _plan_from_records(self, plan: RunPlan) -> None:
        by_pair: dict[tuple[str, str, str], list[str]] = {}
        for record in self.store.latest_records():
            key = (record["dataset"], record["predictor"], record["engine"])
            by_pair.setdefault(key, []).append(str(record["question_id"]))
        for (dataset, predictor, engine), question_ids in by_pair.items():
            plan.add(dataset, question_ids, [predictor], [engine])

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

    def _audit_prediction_files(self, questions: list[Question]) -> None:
        """Report what a predictions file holds that no question or engine will use, and refuse
        a file that answers nothing of this sweep (a 0% that is really a wrong file)."""
        engines = [(spec.name, spec.dialect) for spec in self.engines]
        all_ids = [q.id for q in self.dataset.questions]
        for predictor in self.predictors:
            if isinstance(predictor, FilePredictor):
                self.problems.extend(str(p) for p in predictor.problems)
                audit = predictor.audit(all_ids, engines, selected=[q.id for q in questions],
                                        dataset=self.dataset.name)
                audit.require_match()
                self.problems.extend(audit.warnings())

    def _database_fingerprint(self, db_id: str) -> str:
        """Content digest of a source database (what a record's verdict was computed over)."""
        with connect(self.dataset.database_url(db_id), read_only=True) as source:
            return source.fingerprint()

    def _engine_key(self, spec: EngineSpec) -> EngineInfo:
        """What a predictor's input digest may depend on about an engine (no connection)."""
        return EngineInfo(name=spec.name, dialect=spec.dialect)

    # -- planning -------------------------------------------------------------------------------
    def _plan_work(self, questions: list[Question]) -> tuple[dict[str, list[_WorkItem]], int, int, int]:
        """Split this invocation's work into what is done (identical inputs) and what to run;
        set aside records whose inputs changed. Returns (pending per engine, resumed,
        re-evaluated, superseded outside the selection)."""
        latest = {record_key(r): r for r in self.store.latest_records()}
        pending: dict[str, list[_WorkItem]] = {e.name: [] for e in self.engines}
        stale: set[RecordKey] = set()
        resumed = 0
        for question in questions:
            for predictor in self.predictors:
                for engine in self.engines:
                    key = (self.dataset.name, question.id, predictor.name, engine.name)
                    inputs = self._inputs.of(question, predictor, self._engine_key(engine))
                    record = latest.get(key)
                    if record is not None and record.get("inputs") == inputs:
                        resumed += 1
                        continue
                    if record is not None:
                        stale.add(key)
                    pending[engine.name].append(_WorkItem(question, predictor, inputs))
        reevaluated = len(stale)
        # Records of the same predictors and engines outside this selection are checked too:
        # a stale one must not stand in the summary as if it were current.
        selected = {q.id for q in questions}
        by_id = {q.id: q for q in self.dataset.questions}
        predictors = {p.name: p for p in self.predictors}
        engines = {e.name: e for e in self.engines}
        for key, record in latest.items():
            dataset, question_id, predictor_name, engine_name = key
            if (dataset != self.dataset.name or question_id in selected
                    or predictor_name not in predictors or engine_name not in engines
                    or question_id not in by_id):
                continue
            inputs = self._inputs.of(by_id[question_id], predictors[predictor_name],
                                     self._engine_key(engines[engine_name]))
            if record.get("inputs") != inputs:
                stale.add(key)
        rewrite = self.store.compact(keep=lambda r: record_key(r) not in stale)
        if rewrite.damaged:
            shown = ", ".join(map(str, rewrite.damaged[:5]))
            self.problems.append(
                f"{self.store.path}: dropped {len(rewrite.damaged)} damaged line(s) (line "
                f"{shown}{', ...' if len(rewrite.damaged) > 5 else ''}); their work is redone")
        self._damaged = len(rewrite.damaged)
        return pending, resumed, reevaluated, len(stale) - reevaluated

    # -- main ---------------------------------------------------------------------------------
    def run(self) -> SweepOutcome:
        started = time.perf_counter()
        questions = self._questions()
        self._audit_prediction_files(questions)  # before anything is written: may refuse the run
        plan = self._check_or_write_run_file(questions)
        pending, resumed, reevaluated, superseded = self._plan_work(questions)
        # Whatever happens from here (a kill included), the files on disk say the run is not
        # finished until the end of this method rewrites them.
        self._write_progress_reports(plan, "running")
        cache = ExecutionCache(cache_dir() / "executions.sqlite") if self.config.use_cache else None
        fleet = EngineFleet(cache_dir(), self.dataset.name)
        dead: dict[str, str] = {}
        signals = StopSignals(stop=self._request_stop, cancel=self._request_cancel,
                              say=self.observer.message)
        try:
            with signals:
                worker = threading.Thread(target=self._work_guarded, name="sweep",
                                          args=(pending, fleet, cache, dead), daemon=True)
                worker.start()
                while worker.is_alive():  # short joins keep the main thread free for signals
                    worker.join(0.25)
            if self._crash is not None:
                raise self._crash
        finally:
            for predictor in self.predictors:
                predictor.close()
            if self.llm_options is not None:
                self.llm_options.close()
            fleet.close()
            hits = cache.hits if cache else 0
            if cache:
                cache.close()
        records = self.store.latest_records()
        summary = summarize(records, sorted(plan.pending(records)))
        return SweepOutcome(
            run_dir=self.run_dir, summary=summary, written=self._written, resumed=resumed,
            problems=self.problems, dead_engines=dead, interrupted=signals.interrupted,
            cache_hits=hits, elapsed=time.perf_counter() - started, models=self.model_usage(),
            reevaluated=reevaluated, superseded=superseded, unavailable=dict(self._unavailable),
            broken_databases=_broken_databases(records), internal_errors=list(self._internal_errors),
            damaged_lines=self._damaged,
        )

    def _write_progress_reports(self, plan: RunPlan, status: str) -> None:
        from polysql.analysis.report import write_reports

        records = self.store.latest_records()
        summary = summarize(records, sorted(plan.pending(records)))
        if summary.complete:
            return  # nothing to do: the files written by the run that finished are current
        run_info = json.loads((self.run_dir / RUN_FILE).read_text(encoding="utf-8"))
        write_reports(summary, self.run_dir, run_info, status=status)

    def _request_stop(self) -> None:
        with self._running_lock:
            running = len(self._running)
        self._stop.set()
        if running:
            self.observer.message(
                f"stopping: waiting for {running} running statement(s) (up to "
                f"{self.config.timeout:g} s); Ctrl-C again to cancel them")
        else:
            self.observer.message("stopping: Ctrl-C again to stop at once")

    def _request_cancel(self) -> None:
        self._stop.set()
        self._cancel.set()
        with self._running_lock:
            running = list(self._running.values())
        self.observer.message(f"cancelling {len(running)} running statement(s); their work stays "
                              "pending; Ctrl-C again to exit at once")
        for backend in running:
            try:
                backend.cancel()
            except Exception as exc:  # noqa: BLE001 - a failed cancel must not stop the others
                self.observer.message(f"could not cancel a statement on {backend.name}: {exc}")

    def _work_guarded(self, pending: dict[str, list[_WorkItem]], fleet: EngineFleet,
                      cache: ExecutionCache | None, dead: dict[str, str]) -> None:
        try:
            self._work(pending, fleet, cache, dead)
        except BaseException as exc:  # handed to the main thread, raised there
            self._crash = exc

    def _work(self, pending: dict[str, list[_WorkItem]], fleet: EngineFleet,
              cache: ExecutionCache | None, dead: dict[str, str]) -> None:
        need_gold = {item.question.id: item.question for items in pending.values() for item in items}
        golds = self._run_golds(list(need_gold.values()), fleet, cache)
        if self._stop.is_set():
            return
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
                pool.submit(self._engine_worker, spec, pending[spec.name], golds, fleet, cache, out,
                            dead, self.schemas)
                for spec in self.engines if pending[spec.name]
            ]
            wait(futures)
            for future in futures:
                future.result()  # re-raise a worker's unexpected error

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
            try:
                golds[question.id] = run_gold(question.gold_sql, question.source_dialect, run)
            except _Cancelled:
                break
            self._gold_rerun[question.id] = run
            self.observer.advance()
        return golds

    # -- execution ----------------------------------------------------------------------------
    def _execute(self, backend: Backend, spec: EngineSpec, fingerprint: str, sql: str,
                 *, cache: ExecutionCache | None) -> Result:
        """Run (or fetch from the cache) one statement. Raises _Cancelled when the user
        cancelled it: such a result is neither cached nor judged."""
        if self._cancel.is_set():
            raise _Cancelled
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
        me = threading.get_ident()
        with self._running_lock:
            self._running[me] = backend
        try:
            result = backend.execute(sql, timeout=self.config.timeout, max_rows=self.config.max_rows)
        finally:
            with self._running_lock:
                self._running.pop(me, None)
        if self._cancel.is_set():
            raise _Cancelled
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
                        if self._stop.is_set() or not self._process_isolated(
                                spec, info, item, future, golds, fleet, cache, out, dead, schemas):
                            return
                elif inline:
                    if not self._process_isolated(spec, info, inline.popleft(), None, golds, fleet,
                                                  cache, out, dead, schemas):
                        return
                else:  # short waits keep Ctrl-C and dead engines responsive
                    wait(list(generating), timeout=0.25, return_when=FIRST_COMPLETED)
        finally:
            for future in generating:
                future.cancel()  # requests not yet sent; the work stays pending for a resume

    def _process_isolated(self, spec: EngineSpec, info: EngineInfo, item: _WorkItem,
                          future: Future[Prediction] | None, golds: dict[str, GoldRuns],
                          fleet: EngineFleet, cache: ExecutionCache | None, out: Any,
                          dead: dict[str, str], schemas: SchemaCatalog) -> bool:
        """One item, kept from taking the others down: a bug hit by one item leaves that item
        pending and reported, and the sweep goes on (polysql's own errors still propagate)."""
        try:
            prediction = future.result() if future is not None else None
            return self._process(spec, info, item, prediction, golds, fleet, cache, out, dead,
                                 schemas)
        except _Cancelled:
            return False
        except (PolysqlError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - recorded as an internal error, never as a verdict
            what = (f"question {item.question.id} / {item.predictor.name} / {spec.name}: "
                    f"{type(exc).__name__}: {exc}")
            with self._write_lock:
                self._internal_errors.append((what, traceback.format_exc()))
            self.observer.message(f"internal error (work left pending): {what}")
            return True

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

    def _unanswered(self, item: _WorkItem, why: str) -> None:
        """The predictor got no answer for reasons outside the system under test: count it as
        pending (no record), so the next run asks again."""
        name = item.predictor.name
        with self._write_lock:
            _reason, count = self._unavailable.get(name, (why, 0))
            self._unavailable[name] = (why, count + 1)

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
        problem = text_problem(prediction.sql) if prediction.sql is not None else None
        if problem is not None:  # text no engine driver can take as it is
            prediction = Prediction(sql=None, failure=f"invalid_prediction: the SQL holds a {problem}",
                                    meta=prediction.meta)
        if prediction.unavailable is not None:
            self._unanswered(item, prediction.unavailable)
            self.observer.advance()
            return True
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
                              prediction.failure, prediction.meta, gold, result, verdict, item.inputs)
        with self._write_lock:
            out.write(record)
            self._written += 1
        self.observer.advance(record)
        return True

    def _record(self, question: Question, predictor: Predictor, spec: EngineSpec, backend: Backend,
                sql: str | None, failure: str | None, meta: dict[str, Any], gold: GoldRuns,
                result: Result | None, verdict: Verdict, inputs: Inputs) -> dict[str, Any]:
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
            # digests of what produced this record: a resume re-evaluates it when they change
            "inputs": inputs,
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }


def _broken_databases(records: list[dict[str, Any]]) -> dict[str, str]:
    """Databases on which every gold query failed: nothing about any candidate can be judged
    there, which almost always means the database itself is empty or unreadable."""
    by_db: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        by_db.setdefault((record["dataset"], str(record.get("db_id"))), []).append(record)
    broken: dict[str, str] = {}
    for (_dataset, db_id), group in sorted(by_db.items()):
        if group and all(r["status"] == "invalid_gold" for r in group):
            questions = sorted({str(r["question_id"]) for r in group})
            error = ((group[0].get("gold") or {}).get("error") or {}).get("message", "unknown error")
            broken[db_id] = (f"all {len(questions)} gold quer{'y' if len(questions) == 1 else 'ies'} "
                             f"failed (first: {error})")
    return broken


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
