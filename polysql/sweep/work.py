"""The work loop: gold queries first, then one worker per engine predicting, executing, judging
and recording.

Gold SQL runs once per question on the loaded copy of its source engine; each prediction runs
natively on its target engine. Engines work in parallel, and an engine that serves several
statements at once (``EngineInfo.concurrent_statements``: SQLite, DuckDB, PostgreSQL, MySQL) gets
a worker per core (up to four), each on a connection of its own to the copy; so does the gold
phase. Records are appended as they finish, so an interrupted sweep resumes where it stopped.

Model predictors (``llm:NAME``) are asked ahead: each engine's worker hands all its model
requests to the model's own thread pool first (sized by the model's ``max_concurrency``), then
executes whatever prediction is ready, so generation and execution overlap.
"""

from __future__ import annotations

import functools
import os
import threading
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any

from polysql.backends.base import Backend
from polysql.core.errors import EngineError, EvidenceUnavailableError, PolysqlError
from polysql.core.model import Result, Verdict
from polysql.core.predictor import Prediction, Predictor, TargetEngine
from polysql.core.store import ResultsStore
from polysql.core.urls import without_database
from polysql.datasets.base import Dataset, Question
from polysql.engines.copies import names_existing
from polysql.engines.ddl import render_schema
from polysql.engines.fleet import EngineFleet, EngineSpec
from polysql.engines.registry import backend_class, parse_url
from polysql.llm.prompting import SchemaCatalog
from polysql.normalizers.gold import GoldRuns, judge_within_row_cap, run_gold
from polysql.sweep.execution import Cancelled, Executor
from polysql.sweep.planning import WorkItem, target_engine
from polysql.sweep.progress import SweepObserver
from polysql.sweep.records import build_record
from polysql.sweep.text_checks import text_problem
from polysql.sweep.timings import GOLD_LANE, MODEL_STAGE

# Workers per engine that runs statements side by side: one per core, up to four.
WORKERS_PER_ENGINE = max(1, min(4, os.cpu_count() or 1))


def engine_workers(spec: EngineSpec, workers: int | None = None) -> int:
    """How many statements a sweep runs at once on ``spec``'s engine: ``workers`` (default one
    per core, up to four) where it serves several; one on databases polysql did not build (a
    URL naming existing databases), which are someone else's to load."""
    if not spec.backend.info.concurrent_statements or names_existing(spec.url):
        return 1
    return WORKERS_PER_ENGINE if workers is None else max(1, workers)


class SweepWork:
    """Runs the pending work of one invocation and keeps what happened: records written,
    engines abandoned, predictors that gave no answers, internal errors."""

    def __init__(self, *, dataset: Dataset, predictors: list[Predictor[Question]],
                 engines: list[EngineSpec], store: ResultsStore, observer: SweepObserver,
                 executor: Executor, fleet: EngineFleet, schemas: SchemaCatalog,
                 policy: dict[str, Any], workers: int | None = None) -> None:
        self.dataset = dataset
        self.predictors = predictors
        self.engines = engines
        self.store = store
        self.observer = observer
        self.executor = executor
        self.timings = executor.timings  # the stages below count into the executor's timings
        self.fleet = fleet
        self.schemas = schemas  # schema text per (engine, database), for model prompts
        self.policy = policy
        self.workers = workers  # statements at once per engine that serves several
        self.written = 0
        self.dead: dict[str, str] = {}  # engine -> why it was abandoned
        self.unavailable: dict[str, tuple[str, int]] = {}
        self.internal_errors: list[tuple[str, str]] = []
        self._write_lock = threading.Lock()
        self._golds: dict[str, GoldRuns] = {}
        # per question, how to run more SQL on the gold's engine (for re-runs judging needs)
        self._gold_rerun: dict[str, Callable[..., Result]] = {}  # (sql, *, max_rows=None)
        self._out: Any = None  # the results file, open for appending while workers run
        self._helpers: ThreadPoolExecutor | None = None  # more workers per engine, while running
        self._broken: set[str] = set()  # engines a worker failed on (its error goes up)
        self._gold_specs: dict[str, EngineSpec] = {}  # by db_id: asked for every question
        # database id -> why its gold queries could not run (its copy could not be made, or its
        # engine stopped answering): its questions stay pending, never judged without a gold
        self.gold_failures: dict[str, str] = {}
        # where a re-run judging needed met an outage ("database D" for the gold's, the engine's
        # name for the prediction's) -> (why, predictions left pending)
        self.withheld: dict[str, tuple[str, int]] = {}

    def run(self, pending: dict[str, list[WorkItem]]) -> None:
        need_gold = {item.question.id: item.question for items in pending.values() for item in items}
        self._golds = self._run_golds(list(need_gold.values()))
        if self.executor.stopping:
            return
        total = sum(len(v) for v in pending.values())
        self.observer.phase("predictions", total)
        for predictor in self.predictors:
            if predictor.concurrent:
                requests = sum(1 for items in pending.values() for i in items if i.predictor is predictor)
                self.observer.generation(predictor.name, requests)
        helpers = sum(self._workers(spec) - 1 for spec in self.engines)
        with self.store.open_for_append() as out, ThreadPoolExecutor(
            max_workers=max(1, len(self.engines)), thread_name_prefix="engine"
        ) as pool, ThreadPoolExecutor(max_workers=max(1, helpers),
                                      thread_name_prefix="engine-helper") as self._helpers:
            self._out = out
            futures = [pool.submit(self._engine_worker, spec, pending[spec.name])
                       for spec in self.engines if pending[spec.name]]
            wait(futures)
            for future in futures:
                future.result()  # re-raise a worker's unexpected error

    # -- gold -----------------------------------------------------------------------------------
    def _gold_spec(self, question: Question) -> EngineSpec:
        spec = self._gold_specs.get(question.db_id)
        if spec is None:
            url = parse_url(self.dataset.database_url(question.db_id))
            cls = backend_class(url)
            spec = EngineSpec(name=f"gold:{cls.name}", url=without_database(url), backend=cls)
            self._gold_specs[question.db_id] = spec
        return spec

    def _run_golds(self, questions: list[Question]) -> dict[str, GoldRuns]:
        with self.timings.lane(GOLD_LANE):
            return self._run_golds_timed(questions)

    def _run_golds_timed(self, questions: list[Question]) -> dict[str, GoldRuns]:
        self.observer.phase("gold", len(questions))
        golds: dict[str, GoldRuns] = {}
        waiting = deque(questions)
        # side by side only where every gold engine serves several statements at once
        workers = min(len(questions),
                      min((self._workers(self._gold_spec(q)) for q in questions), default=1))
        if workers <= 1:
            self._gold_worker(waiting, golds, 0)
            return golds
        with ThreadPoolExecutor(max_workers=workers - 1, thread_name_prefix="gold") as pool:
            helpers = [pool.submit(self._gold_helper, waiting, golds, slot)
                       for slot in range(1, workers)]
            try:
                self._gold_worker(waiting, golds, 0)
            except BaseException:
                waiting.clear()  # the helpers stop too; the error goes up
                raise
            finally:
                with self.timings.idle():
                    wait(helpers)
            for helper in helpers:
                helper.result()  # re-raise a helper's unexpected error
            # a helper that could not open its connection handed its question back, maybe
            # after this worker had found none left
            self._gold_worker(waiting, golds, 0)
        return golds

    def _gold_helper(self, waiting: deque[Question], golds: dict[str, GoldRuns], slot: int) -> None:
        with self.timings.lane(GOLD_LANE):
            try:
                self._gold_worker(waiting, golds, slot)
            except BaseException:
                waiting.clear()  # the other workers stop too
                raise

    def _gold_worker(self, waiting: deque[Question], golds: dict[str, GoldRuns], slot: int) -> None:
        """Runs gold queries taken from ``waiting`` through ``slot``'s connections."""
        while not self.executor.stopping:
            try:
                question = waiting.popleft()
            except IndexError:
                return
            if question.db_id in self.gold_failures:  # said once; the question stays pending
                self.observer.advance()
                continue
            spec = self._gold_spec(question)
            source = self.dataset.database_url(question.db_id)
            # The copy first, through slot 0 whichever worker asks: failing that is the
            # database's failure, not one worker's.
            try:
                with self.timings.stage("load"):
                    backend = self.fleet.backend(spec, question.db_id, source, 0,
                                                 waiting=self.timings.idle)
                    fingerprint = self.fleet.fingerprint(spec, question.db_id)
            except EngineError as exc:
                self._gold_failed(question, str(exc))
                continue
            if slot:
                try:
                    with self.timings.stage("load"):
                        backend = self.fleet.backend(spec, question.db_id, source, slot,
                                                     waiting=self.timings.idle)
                except EngineError as exc:
                    waiting.appendleft(question)  # for a worker that has a connection
                    self._fewer_workers("gold queries", str(exc))
                    return
            run = functools.partial(self.executor.execute, backend, spec, fingerprint)
            try:
                with self.timings.stage("gold"):
                    gold = run_gold(question.gold_sql, question.source_dialect, run,
                                    deferred=True, waiting=self.timings.idle)
            except Cancelled:
                return
            if gold.result.unavailable:  # the engine failed, not the gold: nothing to judge by
                assert gold.result.error is not None
                self._gold_failed(question, gold.result.error.message)
                continue
            golds[question.id] = gold
            self._gold_rerun[question.id] = run
            self.observer.advance()

    def _gold_failed(self, question: Question, why: str) -> None:
        """The gold of ``question`` could not run for a reason outside it: every question on its
        database stays pending (no record), and the run says why once."""
        with self._write_lock:
            first = question.db_id not in self.gold_failures
            self.gold_failures.setdefault(question.db_id, why)
        if first:
            self.observer.message(f"database {question.db_id}: gold queries cannot run ({why}); "
                                  "its questions stay pending")
        self.observer.advance()

    # -- one worker per engine ------------------------------------------------------------------
    def _engine_worker(self, spec: EngineSpec, items: list[WorkItem]) -> None:
        with self.timings.lane(spec.name):
            self._engine_work(spec, items)

    def _engine_work(self, spec: EngineSpec, items: list[WorkItem]) -> None:
        info = target_engine(spec)
        generating: dict[Future[Prediction], WorkItem] = {}
        try:
            # Model requests first, all of them: they wait on remote services, so they should be
            # in flight while this engine executes whatever is ready.
            for item in items:
                if not item.predictor.concurrent:
                    continue
                if self.executor.stopping:
                    return
                if item.question.id not in self._golds:  # its gold could not run: pending
                    continue
                backend = self._backend(spec, item.question)
                if backend is None:
                    return
                engine = self._target(info, spec, item, backend)
                if engine is None:
                    return
                with self.timings.stage("predict"):
                    future = item.predictor.submit(item.question, engine)
                future.add_done_callback(functools.partial(self._generation_done, item.predictor.name))
                generating[future] = item
            inline = deque(item for item in items if not item.predictor.concurrent)
            # more workers, each on connections of its own, share the items ready to run
            pool = self._helpers
            helpers = [] if pool is None else [
                pool.submit(self._helper_work, spec, info, inline, slot)
                for slot in range(1, min(self._workers(spec), len(inline) + 1))]
            try:
                self._main_work(spec, info, inline, generating)
            except BaseException:
                self._broken.add(spec.name)  # the helpers stop too; the error goes up
                raise
            finally:
                with self.timings.idle():  # the helpers' last items count where they run
                    wait(helpers)
            for helper in helpers:
                helper.result()  # re-raise a helper's unexpected error
            if inline and self._engine_usable(spec):
                # a helper that could not open a connection of its own put its item back, maybe
                # after this worker had found none left: it is this worker's to run
                self._main_work(spec, info, inline, {})
        finally:
            for future in generating:
                future.cancel()  # requests not yet sent; the work stays pending for a resume

    def _main_work(self, spec: EngineSpec, info: TargetEngine, inline: deque[WorkItem],
                   generating: dict[Future[Prediction], WorkItem]) -> None:
        """Slot 0's loop: model answers as they arrive, other items in between."""
        while (inline or generating) and self._engine_usable(spec):
            ready = [future for future in generating if future.done()]
            if ready:
                for future in ready:
                    item = generating.pop(future)
                    if self.executor.stopping or not self._process_isolated(spec, info, item, future):
                        return
            elif inline:
                try:
                    item = inline.popleft()
                except IndexError:  # a helper took the last one
                    continue
                if not self._process_isolated(spec, info, item, None):
                    return
            else:  # short waits keep Ctrl-C and dead engines responsive
                with self.timings.stage(MODEL_STAGE):  # the model's time, not polysql's
                    wait(list(generating), timeout=0.25, return_when=FIRST_COMPLETED)

    def _helper_work(self, spec: EngineSpec, info: TargetEngine, inline: deque[WorkItem],
                     slot: int) -> None:
        """Another worker on ``spec``'s engine: items ready to run, through ``slot``'s
        connections, until none is left or the engine cannot go on."""
        with self.timings.lane(spec.name):
            while self._engine_usable(spec):
                try:
                    item = inline.popleft()
                except IndexError:
                    return
                try:
                    if not self._process_isolated(spec, info, item, None, slot):
                        return
                except _NoConnection as exc:
                    inline.appendleft(item)  # for a worker that has a connection
                    self._fewer_workers(f"engine {spec.name}", str(exc))
                    return
                except BaseException:
                    self._broken.add(spec.name)  # the engine's other workers stop too
                    raise

    def _workers(self, spec: EngineSpec) -> int:
        return engine_workers(spec, self.workers)

    def _engine_usable(self, spec: EngineSpec) -> bool:
        """No stop was asked for, and no worker abandoned the engine or failed on it."""
        return (not self.executor.stopping and spec.name not in self.dead
                and spec.name not in self._broken)

    def _process_isolated(self, spec: EngineSpec, info: TargetEngine, item: WorkItem,
                          future: Future[Prediction] | None, slot: int = 0) -> bool:
        """One item, kept from taking the others down: a bug hit by one item leaves that item
        pending and reported, and the sweep goes on (polysql's own errors still propagate)."""
        try:
            prediction = future.result() if future is not None else None
            return self._process(spec, info, item, prediction, slot)
        except Cancelled:
            return False
        except (PolysqlError, KeyboardInterrupt, _NoConnection):
            raise
        except Exception as exc:  # noqa: BLE001 - recorded as an internal error, never as a verdict
            what = (f"question {item.question.id} / {item.predictor.name} / {spec.name}: "
                    f"{type(exc).__name__}: {exc}")
            with self._write_lock:
                self.internal_errors.append((what, traceback.format_exc()))
            self.observer.message(f"internal error (work left pending): {what}")
            return True

    def _generation_done(self, predictor: str, future: Future[Prediction]) -> None:
        if not future.cancelled():
            self.observer.generated(predictor)

    def _backend(self, spec: EngineSpec, question: Question, slot: int = 0) -> Backend | None:
        source = self.dataset.database_url(question.db_id)
        # The copy itself first (built, or opened through slot 0's connection), whichever worker
        # gets here first: failing that is the engine's failure, not one worker's, and another
        # worker's build counts there, not again as this one's wait.
        try:
            with self.timings.stage("load"):  # opens (and first loads) the copy on first use
                first = self.fleet.backend(spec, question.db_id, source, 0,
                                           waiting=self.timings.idle)
        except EngineError as exc:
            self._abandon(spec, str(exc))
            return None
        if not slot:
            return first
        try:
            with self.timings.stage("load"):
                return self.fleet.backend(spec, question.db_id, source, slot,
                                          waiting=self.timings.idle)
        except EngineError as exc:  # one more connection refused (a server's connection limit)
            raise _NoConnection(str(exc)) from exc

    def _fewer_workers(self, spec_name: str, why: str) -> None:
        self.observer.message(f"{spec_name}: a worker could not open a connection of its own "
                              f"({why}); the others go on")

    def _abandon(self, spec: EngineSpec, why: str) -> None:
        with self._write_lock:  # said once, whichever of the engine's workers saw it first
            if spec.name in self.dead:
                return
            self.dead[spec.name] = why
        self.observer.message(f"engine {spec.name} abandoned: {why}")

    def _target(self, info: TargetEngine, spec: EngineSpec, item: WorkItem,
                backend: Backend) -> TargetEngine | None:
        """What the predictor is told about the engine: for those that read the schema, the
        question's database as this engine holds it (rendered once per engine and database)."""
        predictor = item.predictor
        if not predictor.needs_schema:
            return info
        rows = predictor.sample_rows
        try:
            with self.timings.stage("predict"):  # the schema is part of what the predictor reads
                schema = self.schemas.get(spec.name, item.question.db_id, rows,
                                          lambda: render_schema(backend, sample_rows=rows))
                version = backend.version()
        except EngineError as exc:
            self._abandon(spec, str(exc))
            return None
        return replace(info, version=version, schema=schema)

    def _unanswered(self, item: WorkItem, why: str) -> None:
        """The predictor got no answer for reasons outside the system under test: count it as
        pending (no record), so the next run asks again."""
        name = item.predictor.name
        with self._write_lock:
            _reason, count = self.unavailable.get(name, (why, 0))
            self.unavailable[name] = (why, count + 1)

    def _process(self, spec: EngineSpec, info: TargetEngine, item: WorkItem,
                 prediction: Prediction | None, slot: int = 0) -> bool:
        """Predict (unless ``prediction`` is already made), execute, compare and record one item.
        False when this engine's worker must stop (gold phase interrupted, engine gone)."""
        question = item.question
        gold = self._golds.get(question.id)
        if gold is None:
            if self.executor.stopping:  # the gold phase was interrupted
                return False
            self.observer.advance()  # its gold could not run: the item stays pending
            return True
        source = self.dataset.database_url(question.db_id)
        backend = self._backend(spec, question, slot)
        if backend is None:
            return False
        if prediction is None:
            engine = self._target(info, spec, item, backend)
            if engine is None:
                return False
            with self.timings.stage("predict"):
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
            fingerprint = self.fleet.fingerprint(spec, question.db_id)
            pred_sql = prediction.sql
            result = self.executor.execute(backend, spec, fingerprint, pred_sql)
            if result.unavailable:
                try:
                    with self.timings.stage("load"):
                        backend = self.fleet.reconnect(spec, question.db_id, source, slot)
                    result = self.executor.execute(backend, spec, fingerprint, prediction.sql)
                except EngineError as exc:
                    result = Result.failed("unavailable", str(exc))
                if result.unavailable:
                    assert result.error is not None
                    self._abandon(spec, result.error.message)
                    return False
            gold_run = self._gold_rerun.get(question.id)
            rerun = None
            if gold_run is not None:
                def rerun(max_rows: int) -> tuple[Callable[[str], Result], Result]:
                    # a higher row cap, for a verdict that rested on rows the sweep's cut off
                    return (functools.partial(gold_run, max_rows=max_rows),
                            self.executor.execute(backend, spec, fingerprint, pred_sql,
                                                  max_rows=max_rows))
            try:
                with self.timings.stage("compare"):
                    judged = judge_within_row_cap(gold, result, gold_run, rerun,
                                                  self.executor.max_rows, **self.policy)
            except EvidenceUnavailableError as lost:
                return self._withhold(spec, item, source, slot, lost)
            verdict, gold, result = judged.verdict, judged.gold, judged.pred
        with self.timings.stage("record"):
            record = build_record(dataset=self.dataset.name, question=question,
                                  predictor=item.predictor.name, spec=spec, backend=backend,
                                  sql=prediction.sql, failure=prediction.failure,
                                  meta=prediction.meta, gold=gold, result=result,
                                  verdict=verdict, inputs=item.inputs)
            with self._write_lock:
                self._out.write(record)
                self.written += 1
        self.observer.advance(record)
        return True

    def _withhold(self, spec: EngineSpec, item: WorkItem, source: str, slot: int,
                  lost: EvidenceUnavailableError) -> bool:
        """A re-run the verdict needed met an outage: no record (the prediction stays pending,
        as any outage leaves it), said once per database or engine. When it was the
        prediction's engine, its connection is opened again for the next item, and the engine
        abandoned if that fails too; False then, as for any outage of the engine."""
        question = item.question
        where = f"database {question.db_id}" if lost.side == "gold" else spec.name
        with self._write_lock:
            why, count = self.withheld.get(where, (str(lost), 0))
            self.withheld[where] = (why, count + 1)
        if not count:
            self.observer.message(f"{where}: a verdict was withheld: {lost}")
        self.observer.advance()
        if lost.side == "gold":
            return True
        try:
            with self.timings.stage("load"):
                self.fleet.reconnect(spec, question.db_id, source, slot)
        except EngineError as exc:
            self._abandon(spec, str(exc))
            return False
        return True


class _NoConnection(Exception):
    """A worker beyond the first could not open its own connection: it stops, the others go on."""
