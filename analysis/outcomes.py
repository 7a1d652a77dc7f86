"""Sweep records from one or more run folders, merged into one table of outcomes.

A question is identified by (dataset, question_id); an outcome by that plus predictor and engine.
When two runs hold the same outcome the later record (by ``recorded_at``) wins, and if the two
disagree on the status the disagreement is kept in :attr:`Outcomes.conflicts` so a report can say
so instead of silently picking one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polysql.core.errors import ResultsStoreError
from polysql.core.store import (
    RESULTS_FILE,
    ResultsStore,
    RunPlan,
    read_run_info,
    record_key,
)
from polysql.normalizers.policy import changed_options

QuestionKey = tuple[str, str]  # (dataset, question_id)
OutcomeKey = tuple[str, str, str, str]  # (dataset, question_id, predictor, engine)

#: statuses that say nothing about the candidate: its gold could not be run
EXCLUDED_STATUSES = frozenset({"invalid_gold"})
FAILED_STATUSES = frozenset({"mismatch", "exec_error", "generation_failure"})


@dataclass(frozen=True, slots=True)
class Conflict:
    key: OutcomeKey
    kept: str  # status of the record kept (the later one)
    dropped: str
    kept_run: str
    dropped_run: str


@dataclass(slots=True)
class Outcomes:
    """Deduplicated records of one or more runs, with the folders they came from."""

    records: list[dict[str, Any]]
    runs: list[str]
    conflicts: list[Conflict] = field(default_factory=list)
    # per run folder: records its plan asked for that it does not hold
    pending: dict[str, int] = field(default_factory=dict)
    # per run folder: line numbers of its results file that are not a whole record (skipped)
    damaged: dict[str, list[int]] = field(default_factory=dict)
    # per run folder: the comparison policy options its sweep changed from the defaults
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def predictors(self) -> list[str]:
        return sorted({r["predictor"] for r in self.records})

    @property
    def engines(self) -> list[str]:
        return sorted({r["engine"] for r in self.records})

    @property
    def datasets(self) -> list[str]:
        return sorted({r["dataset"] for r in self.records})

    def dialect_of(self, engine: str) -> str:
        for record in self.records:
            if record["engine"] == engine:
                return str(record.get("dialect") or engine)
        raise KeyError(engine)

    def correctness(self, predictor: str, engine: str,
                    dataset: str | None = None) -> dict[QuestionKey, bool]:
        """Per question: was the prediction right? Questions whose gold failed are left out."""
        return {(r["dataset"], str(r["question_id"])): r["status"] == "match"
                for r in self.records
                if r["predictor"] == predictor and r["engine"] == engine
                and (dataset is None or r["dataset"] == dataset)
                and r["status"] not in EXCLUDED_STATUSES}

    def failures(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["status"] in FAILED_STATUSES]


def merge_records(runs: Sequence[tuple[str, Iterable[dict[str, Any]]]]) -> Outcomes:
    """Merge ``(run name, records)`` pairs; later ``recorded_at`` wins (then later run)."""
    chosen: dict[OutcomeKey, tuple[dict[str, Any], str]] = {}
    conflicts: list[Conflict] = []
    for run, records in runs:
        for record in records:
            key = record_key(record)
            previous = chosen.get(key)
            if previous is None:
                chosen[key] = (record, run)
                continue
            old, old_run = previous
            newer = str(record.get("recorded_at") or "") >= str(old.get("recorded_at") or "")
            kept, kept_run, dropped, dropped_run = ((record, run, old, old_run) if newer
                                                    else (old, old_run, record, run))
            if kept["status"] != dropped["status"] and old_run != run:
                conflicts.append(Conflict(key, kept["status"], dropped["status"], kept_run,
                                          dropped_run))
            chosen[key] = (kept, kept_run)
    records = [chosen[k][0] for k in sorted(chosen)]
    return Outcomes(records, [name for name, _ in runs], conflicts)


def load_runs(run_dirs: Sequence[str | Path]) -> Outcomes:
    """Read every run folder's results file and merge them."""
    if not run_dirs:
        raise ResultsStoreError("no run folder given: pass one or more folders written by "
                                "`polysql sweep --out DIR`")
    loaded: list[tuple[str, list[dict[str, Any]]]] = []
    pending: dict[str, int] = {}
    damaged: dict[str, list[int]] = {}
    policies: dict[str, dict[str, Any]] = {}
    for run_dir in run_dirs:
        path = Path(run_dir)
        if not (path / RESULTS_FILE).is_file():
            raise ResultsStoreError(f"{path} holds no {RESULTS_FILE}: is it a folder written by "
                                    "`polysql sweep --out DIR`?")
        store = ResultsStore(path)
        records = store.latest_records()
        loaded.append((str(path), records))
        info = read_run_info(path) or {}  # read once: the plan and the settings
        pending[str(path)] = len(RunPlan.from_list(info.get("plan")).pending(records))
        policies[str(path)] = changed_options((info.get("settings") or {}).get("policy"))
        if store.damaged_lines:
            damaged[str(path)] = list(store.damaged_lines)
    outcomes = merge_records(loaded)
    outcomes.pending = pending
    outcomes.damaged = damaged
    outcomes.policies = policies
    if not outcomes.records:
        raise ResultsStoreError(f"no records in {', '.join(map(str, run_dirs))}: the sweep "
                                "wrote nothing yet")
    return outcomes
