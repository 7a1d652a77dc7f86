"""The sweep: every question x predictor x engine, executed, compared and recorded.

Flow (one way): dataset -> engines loaded -> predictions -> execution (cached) -> verdicts ->
results store. :class:`Sweep` checks the whole configuration before any work starts, then runs
one invocation: planning (:mod:`polysql.sweep.planning`), the work loop on a thread of its own
(:mod:`polysql.sweep.work`) while the main thread stays free for Ctrl-C
(:mod:`polysql.sweep.interrupts`), and the outcome (:mod:`polysql.sweep.outcome`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from polysql.analysis.reports.sweep import write_reports
from polysql.analysis.summary import summarize
from polysql.core.digest import content_digest
from polysql.core.errors import ConfigError, EngineError
from polysql.core.paths import cache_dir
from polysql.core.predictor import Predictor
from polysql.core.store import RUN_FILE, ResultsStore, RunPlan, record_key
from polysql.datasets.base import Dataset, Question
from polysql.datasets.registry import get_dataset
from polysql.engines.copies import layout_digest, names_existing
from polysql.engines.fingerprints import source_fingerprint
from polysql.engines.fleet import EngineFleet, parse_engine_specs
from polysql.llm.predictors import LLMOptions
from polysql.llm.prompting import PromptSettings, SchemaCatalog
from polysql.normalizers.compare import resolve_policy
from polysql.sweep.config import SweepConfig, split_items
from polysql.sweep.execution import Executor
from polysql.sweep.execution_cache import ExecutionCache
from polysql.sweep.inputs import RecordInputs
from polysql.sweep.interrupts import StopSignals
from polysql.sweep.outcome import SweepOutcome, broken_databases
from polysql.sweep.planning import RunPlanner, WorkItem
from polysql.sweep.predictors import make_predictor
from polysql.sweep.progress import SweepObserver
from polysql.sweep.run_lock import run_folder_lock
from polysql.sweep.timings import TIMINGS_FILE, SweepTimings, count_loaded_rows
from polysql.sweep.work import SweepWork


class Sweep:
    def __init__(self, config: SweepConfig, observer: SweepObserver | None = None, *,
                 dataset: Dataset | None = None) -> None:
        """``dataset``: ``config.dataset`` already loaded by the caller (else loaded here)."""
        self.config = config
        self.observer = observer or SweepObserver()
        if config.timeout <= 0:
            raise ConfigError(f"timeout must be positive, got {config.timeout}")
        if config.max_rows <= 0:
            raise ConfigError(f"max_rows must be positive, got {config.max_rows}")
        if config.workers is not None and config.workers <= 0:
            raise ConfigError(f"workers must be positive, got {config.workers}")
        # a bad --policy must fail here, not in the middle of the sweep after engines loaded
        resolve_policy(None, config.policy)
        self.dataset: Dataset = dataset if dataset is not None else get_dataset(config.dataset)
        self.llm_options: LLMOptions | None = None  # set when models are swept
        self.predictors = self._make_predictors(config)
        self.engines = parse_engine_specs(config.engines)
        self.run_dir = Path(config.out) if config.out else Path("runs") / self.dataset.name
        self.store = ResultsStore(self.run_dir)
        self.problems: list[str] = []
        self.schemas = SchemaCatalog()  # schema text per (engine, database), for model prompts
        # Built before planning: an existing database the plan reads for its fingerprint stays
        # open for the work, instead of being opened (and its tables counted) a second time.
        self._fleet = EngineFleet(cache_dir(), self.dataset.name)
        first_database = next(iter(self.dataset.db_ids()), None)
        if first_database is not None:
            self.problems.extend(note for spec in self.engines
                                 if (note := self._fleet.unused_database(spec, first_database)))
        self._inputs = RecordInputs(self._database_fingerprint, self._target_fingerprint)
        self._crash: BaseException | None = None  # an error of the work thread, raised in run()

    def _make_predictors(self, config: SweepConfig) -> list[Predictor[Question]]:
        items = split_items(config.predictors) + [f"llm:{name}" for name in split_items(config.models)]
        if not items:
            raise ConfigError("no predictors given: use e.g. --predictor gold,transpile or --model NAME")
        if any(item.startswith("llm:") for item in items):
            prompts = PromptSettings(level=config.prompt_level, cot=config.cot,
                                     sample_rows=config.sample_rows, template=config.prompt_template)
            self.llm_options = LLMOptions(config_path=config.model_config, prompts=prompts,
                                          use_cache=config.use_cache)
        predictors = [make_predictor(s, llm=self.llm_options) for s in items]
        names = [p.name for p in predictors]
        if len(set(names)) != len(names):
            raise ConfigError(f"predictor names must be unique, got {names}; name files with NAME=PATH")
        return predictors

    def _database_fingerprint(self, db_id: str) -> str:
        """Content digest of a source database (what a record's verdict was computed over)."""
        return source_fingerprint(self.dataset, db_id)

    def _target_fingerprint(self, engine: str, db_id: str) -> str | None:
        """Content digest of the existing database an engine evaluates on for ``db_id``; for
        engines whose copies polysql builds, the digest of their copy layout (None when a copy
        holds only the source's tables); either joined by the form the engine's values are
        decoded in, once that has changed. An existing database that cannot be reached now gets a
        digest no record holds, so its work stays to do and is run (or found unavailable) later."""
        spec = next(s for s in self.engines if s.name == engine)
        if not names_existing(spec.url):
            target = layout_digest(spec.url)
        else:
            try:
                self._fleet.backend(spec, db_id, self.dataset.database_url(db_id))
                target = self._fleet.fingerprint(spec, db_id)
            except EngineError as exc:
                return content_digest("unreachable", str(exc))
        # Results fetched in another form than today's are judged again (records made before
        # the engine's first change of form keep the target they had).
        form = spec.backend.info.result_form
        return content_digest("result-form", target, form) if form else target

    def run(self) -> SweepOutcome:
        """Run the sweep; ResultsStoreError at once when another sweep is writing the same run
        folder (see :mod:`.run_lock`)."""
        with run_folder_lock(self.run_dir):
            return self._run()

    def _run(self) -> SweepOutcome:
        started = time.perf_counter()
        timings = SweepTimings()
        try:
            return self._run_with(timings, started)
        finally:
            # closed once the work ends (inside); here also when planning refused the run after
            # it opened existing databases (closing twice is harmless)
            self._fleet.close()

    def _run_with(self, timings: SweepTimings, started: float) -> SweepOutcome:
        fleet = self._fleet
        with timings.stage("plan"):
            planner = RunPlanner(config=self.config, dataset=self.dataset,
                                 predictors=self.predictors, engines=self.engines,
                                 run_dir=self.run_dir, store=self.store, inputs=self._inputs)
            questions = planner.questions()
            # before anything is written: may refuse the run
            self.problems.extend(planner.audit_prediction_files(questions))
            plan = planner.write_run_file(questions)
            work_plan = planner.plan_work(questions)
            self.problems.extend(work_plan.problems)
            # Whatever happens from here (a kill included), the files on disk say the run is not
            # finished until the end of this method rewrites them.
            self._write_progress_reports(plan, "running")
        with timings.stage("cache"):
            cache = (ExecutionCache(cache_dir() / "executions.sqlite")
                     if self.config.use_cache else None)
        executor = Executor(timeout=self.config.timeout, max_rows=self.config.max_rows, cache=cache,
                            say=self.observer.message, timings=timings)
        work = SweepWork(dataset=self.dataset, predictors=self.predictors, engines=self.engines,
                         store=self.store, observer=self.observer, executor=executor, fleet=fleet,
                         schemas=self.schemas, policy=self.config.policy,
                         workers=self.config.workers)
        signals = StopSignals(stop=executor.request_stop, cancel=executor.request_cancel,
                              say=self.observer.message)
        try:
            with signals:
                worker = threading.Thread(target=self._work_guarded, name="sweep",
                                          args=(work, work_plan.pending), daemon=True)
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
            with timings.stage("load"):
                fleet.close()
            count_loaded_rows(timings, fleet.load_reports)
            hits = cache.hits if cache else 0
            if cache:
                with timings.stage("cache"):  # commits the entries not committed yet
                    cache.close()
                if cache.write_error is not None:  # results were still right, only not kept
                    self.observer.message(f"execution cache not fully written: {cache.write_error}")
        with timings.stage("record"):
            records = self.store.latest_records()
            summary = summarize(records, sorted(plan.pending(records)))
        timings.wall = time.perf_counter() - started
        self._write_timings(timings)
        return SweepOutcome(
            run_dir=self.run_dir, summary=summary, written=work.written, resumed=work_plan.resumed,
            problems=self.problems, dead_engines=work.dead, interrupted=signals.interrupted,
            cache_hits=hits, elapsed=timings.wall, models=self.model_usage(),
            reevaluated=work_plan.reevaluated, superseded=work_plan.superseded,
            unavailable=dict(work.unavailable), broken_databases=broken_databases(records),
            gold_failures=dict(work.gold_failures), withheld=dict(work.withheld),
            internal_errors=list(work.internal_errors), damaged_lines=work_plan.damaged_lines,
            timings=timings,
        )

    def _write_timings(self, timings: SweepTimings) -> None:
        """The invocation's timings beside its results, for scripts (benchmarks) to read; only
        the last invocation's: they describe a run of the program, not the run folder."""
        path = self.run_dir / TIMINGS_FILE
        path.write_text(json.dumps(timings.as_dict(), indent=1) + "\n", encoding="utf-8")

    def _work_guarded(self, work: SweepWork, pending: dict[str, list[WorkItem]]) -> None:
        try:
            work.run(pending)
        except BaseException as exc:  # handed to the main thread, raised there
            self._crash = exc

    def _write_progress_reports(self, plan: RunPlan, status: str) -> None:
        records = self.store.latest_records()
        summary = summarize(records, sorted(plan.pending(records)))
        if summary.complete:
            return  # nothing to do: the files written by the run that finished are current
        run_info = json.loads((self.run_dir / RUN_FILE).read_text(encoding="utf-8"))
        write_reports(summary, self.run_dir, run_info, status=status)

    def model_usage(self) -> dict[str, dict[str, Any]]:
        """Per model predictor of this invocation: calls, cache hits, tokens, wall time."""
        usage: dict[str, dict[str, Any]] = {}
        for predictor in self.predictors:
            report = predictor.usage()
            if report is not None:
                usage[predictor.name] = report
        return usage


def run_sweep(config: SweepConfig, observer: SweepObserver | None = None,
              on_ready: Callable[[Sweep], None] | None = None) -> SweepOutcome:
    sweep = Sweep(config, observer)
    if on_ready is not None:
        on_ready(sweep)
    return sweep.run()


__all__ = ["SweepConfig", "SweepObserver", "SweepOutcome", "Sweep", "record_key", "run_sweep"]
