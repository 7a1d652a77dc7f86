"""Before anything runs: which questions, whether this run folder may be resumed, and which work
is already done.

A resumed sweep keeps a record only when today's inputs (``polysql.sweep.inputs``) equal the
ones it was made from; records whose inputs changed are re-evaluated when this run selects them
and set aside (pending) when it does not. ``run.json`` keeps the plan of every invocation, so
work asked for earlier stays visible as pending until it is done.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from polysql.core.errors import ConfigError, ResultsStoreError
from polysql.core.predictor import Predictor, TargetEngine
from polysql.core.store import (
    RUN_FILE,
    SUPERSEDED_FILE,
    RecordKey,
    ResultsStore,
    RunPlan,
    read_run_info,
    record_key,
)
from polysql.core.version import __version__
from polysql.datasets.base import Dataset, Question
from polysql.engines.fleet import EngineSpec
from polysql.normalizers.policy import changed_options, options_text
from polysql.sweep.config import VERDICT_SETTINGS, SweepConfig
from polysql.sweep.inputs import Inputs, RecordInputs
from polysql.sweep.prediction_files import FilePredictor
from polysql.sweep.predictors import NativeGoldPredictor


@dataclass(slots=True)
class WorkItem:
    """One prediction to make, run and record on one engine, with the inputs it is made from."""

    question: Question
    predictor: Predictor[Question]
    inputs: Inputs


@dataclass(slots=True)
class WorkPlan:
    """This invocation's work: what to run per engine, and what the store already answers."""

    pending: dict[str, list[WorkItem]]  # engine name -> items to run
    resumed: int  # finished earlier with identical inputs
    reevaluated: int  # in this selection, made from inputs that changed: run again
    superseded: int  # outside this selection, made from inputs that changed: set aside
    damaged_lines: int = 0  # unreadable lines dropped from the store
    problems: list[str] = field(default_factory=list)


def target_engine(spec: EngineSpec) -> TargetEngine:
    """What a predictor is told about an engine before any connection (what input digests may
    depend on)."""
    return TargetEngine(name=spec.name, dialect=spec.dialect)


class RunPlanner:
    """Plans one invocation of a sweep over its run folder."""

    def __init__(self, *, config: SweepConfig, dataset: Dataset, predictors: list[Predictor[Question]],
                 engines: list[EngineSpec], run_dir: Path, store: ResultsStore,
                 inputs: RecordInputs) -> None:
        self.config = config
        self.dataset = dataset
        self.predictors = predictors
        self.engines = engines
        self.run_dir = run_dir
        self.store = store
        self.inputs = inputs

    # -- what to run ----------------------------------------------------------------------------
    def questions(self) -> list[Question]:
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

    def audit_prediction_files(self, questions: list[Question]) -> list[str]:
        """What predictions files hold that no question or engine will use (one line each);
        raises for a file that answers nothing of this sweep (a 0% that is really a wrong file)."""
        problems: list[str] = []
        engines = [(spec.name, spec.dialect) for spec in self.engines]
        all_ids = [q.id for q in self.dataset.questions]
        for predictor in self.predictors:
            if isinstance(predictor, NativeGoldPredictor):
                targets = [TargetEngine(name=spec.name, dialect=spec.dialect) for spec in self.engines]
                problems.extend(predictor.coverage(questions, targets, self.dataset.name))
            if isinstance(predictor, FilePredictor):
                # a BIRD or Spider file answers by position in the whole dataset's question order
                predictor.align(self.dataset.questions, dataset=self.dataset.name)
                problems.extend(str(p) for p in predictor.problems)
                audit = predictor.audit(all_ids, engines, selected=[q.id for q in questions],
                                        dataset=self.dataset.name)
                audit.require_match()
                problems.extend(audit.warnings())
        return problems

    # -- the run folder -------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset.name,
            "timeout": self.config.timeout,
            "max_rows": self.config.max_rows,
            "policy": self.config.policy,
        }

    def write_run_file(self, questions: list[Question]) -> RunPlan:
        """Refuse to mix incomparable runs, then record settings, engines, predictors and the
        plan (every invocation's work, merged) in run.json. Returns the plan."""
        path = self.run_dir / RUN_FILE
        settings = self.settings()
        if self.config.fresh:
            for stale in (self.store.path, self.run_dir / SUPERSEDED_FILE):
                stale.unlink(missing_ok=True)
        described = [json.loads(json.dumps(p.describe(), default=str)) for p in self.predictors]
        earlier: list[dict[str, Any]] = []
        plan = RunPlan()
        previous = read_run_info(self.run_dir) if self.store.path.exists() else None
        if previous is not None:
            was = previous.get("settings", {})
            changed = [k for k in VERDICT_SETTINGS
                       if _setting_text(k, was.get(k)) != _setting_text(k, settings[k])]
            if changed:
                differences = "; ".join(f"{k}: {_setting_text(k, was.get(k))} there, "
                                        f"{_setting_text(k, settings[k])} now" for k in changed)
                raise ResultsStoreError(
                    f"{self.run_dir} holds a sweep with different {', '.join(changed)} "
                    f"({differences}); resuming would mix incomparable verdicts. Use another "
                    "--out folder, or --fresh to discard it."
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
            # where the sweep ran: the dataset's and predictions files' paths are relative to it
            # (a report checks them again, see polysql.sweep.freshness)
            "cwd": str(Path.cwd()),
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

    # -- what is done ---------------------------------------------------------------------------
    def plan_work(self, questions: list[Question]) -> WorkPlan:
        """Split this invocation's work into what is done (identical inputs) and what to run;
        set aside records whose inputs changed."""
        latest = {record_key(r): r for r in self.store.latest_records()}
        pending: dict[str, list[WorkItem]] = {e.name: [] for e in self.engines}
        stale: set[RecordKey] = set()
        resumed = 0
        for question in questions:
            for predictor in self.predictors:
                for engine in self.engines:
                    key = (self.dataset.name, question.id, predictor.name, engine.name)
                    inputs = self.inputs.of(question, predictor, target_engine(engine))
                    record = latest.get(key)
                    if record is not None and record.get("inputs") == inputs:
                        resumed += 1
                        continue
                    if record is not None:
                        stale.add(key)
                    pending[engine.name].append(WorkItem(question, predictor, inputs))
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
            inputs = self.inputs.of(by_id[question_id], predictors[predictor_name],
                                    target_engine(engines[engine_name]))
            if record.get("inputs") != inputs:
                stale.add(key)
        rewrite = self.store.compact(keep=lambda r: record_key(r) not in stale)
        problems: list[str] = []
        if rewrite.damaged:
            shown = ", ".join(map(str, rewrite.damaged[:5]))
            problems.append(
                f"{self.store.path}: dropped {len(rewrite.damaged)} damaged line(s) (line "
                f"{shown}{', ...' if len(rewrite.damaged) > 5 else ''}); their work is redone")
        return WorkPlan(pending=pending, resumed=resumed, reevaluated=reevaluated,
                        superseded=len(stale) - reevaluated, damaged_lines=len(rewrite.damaged),
                        problems=problems)


def _setting_text(name: str, value: Any) -> str:
    """A verdict setting as a person reads it; a policy by the options it changes from the
    defaults, so two spellings of the same policy are the same setting."""
    if name == "policy":
        return options_text(changed_options(value)) or "the default policy"
    return json.dumps(value)
