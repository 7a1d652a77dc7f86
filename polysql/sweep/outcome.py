"""What a sweep did: :class:`SweepOutcome`, with the counts and the causes of pending work."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polysql.analysis.summary import Summary
from polysql.sweep.timings import SweepTimings


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
    # database id -> why its gold queries could not be run at all (its copy could not be made,
    # its engine stopped answering): its questions are pending, not judged
    gold_failures: dict[str, str] = field(default_factory=dict)
    # "database D" or an engine -> (why, how many predictions stay pending): a re-run their
    # verdict needed (the gold's, or the prediction's under a higher row cap) met an outage
    withheld: dict[str, tuple[str, int]] = field(default_factory=dict)
    # work items that hit a bug in polysql: (what, traceback); their work stays pending
    internal_errors: list[tuple[str, str]] = field(default_factory=list)
    damaged_lines: int = 0  # unreadable lines dropped from results.jsonl at the start
    timings: SweepTimings | None = None  # where this invocation's time went

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
        notes += [f"The gold queries on database {db_id} could not run ({why}); its questions "
                  "are pending." for db_id, why in self.gold_failures.items()]
        notes += [f"{name} gave no answers ({why}); {count} prediction(s) pending."
                  for name, (why, count) in self.unavailable.items()]
        notes += [f"On {where}, {count} verdict(s) were withheld: a re-run they needed met an "
                  f"outage ({why}); those predictions are pending."
                  for where, (why, count) in self.withheld.items()]
        if self.internal_errors:
            notes.append(f"{len(self.internal_errors)} work item(s) hit an internal error.")
        if self.superseded:
            notes.append(f"{self.superseded} record(s) outside this run's selection were made "
                         "from inputs that have changed since, and are pending.")
        if self.interrupted:
            notes.append("The sweep was interrupted.")
        return notes


def broken_databases(records: list[dict[str, Any]]) -> dict[str, str]:
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
