"""Execution-grounded reward over optimization tasks (docs/reward.md).

An action (optimized SQL, suggested issue types, a short summary) is graded on four components:
speedup, correctness, issue detection and summary, combined with weights renormalized over the
components a :class:`GradeMask` leaves on. Grading always re-executes both queries on the engine;
nothing the caller reports about its own runs is trusted. An engine that cannot run a statement at
all raises :class:`~polysql.core.errors.EngineUnavailableError` instead of grading: an outage is
never a policy's reward of 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from polysql.analysis.rewrite.noop import is_noop
from polysql.backends.base import Backend
from polysql.core.errors import ConfigError, PolysqlError
from polysql.core.model import Result
from polysql.core.outage import require_available
from polysql.datasets.registry import get_dataset
from polysql.datasets.reward.tasks import ISSUE_TYPES, RewardTask
from polysql.engines.copies import EvaluationCopies
from polysql.engines.registry import default_grading_engine
from polysql.engines.timing import TimingError, time_pair
from polysql.normalizers.gold import GoldRuns, judge, run_gold

__all__ = ["COMPONENTS", "DEFAULT_WEIGHTS", "NEUTRAL_SPEEDUP", "ROW_THRESHOLD", "SPEEDUP_CAP",
           "WRONG_RESULT_CAP", "Action", "Grade", "GradeMask", "Observation", "RewardEnv",
           "Weights", "combine", "issue_score", "speedup_score", "summary_score"]

COMPONENTS = ("speedup", "correctness", "issues", "summary")
NEUTRAL_SPEEDUP = 1.05  # at or below this a speedup is indistinguishable from noise: no credit
SPEEDUP_CAP = 10.0  # the speedup score saturates at 1.0 here
ROW_THRESHOLD = 10_000  # results at most this long are compared row by row, longer by checksum
WRONG_RESULT_CAP = 0.5  # the most a total can be when the candidate did not return the right rows
PARTIAL_CORRECTNESS = 0.25  # wrong rows, but as many rows and columns as the original
SUMMARY_MIN_WORDS, SUMMARY_MAX_WORDS = 8, 120


@dataclass(frozen=True, slots=True)
class Weights:
    speedup: float = 0.35
    correctness: float = 0.20
    issues: float = 0.25
    summary: float = 0.20

    def __post_init__(self) -> None:
        if any(getattr(self, name) < 0 for name in COMPONENTS):
            raise ConfigError(f"reward weights must be non-negative, got {self}")


DEFAULT_WEIGHTS = Weights()


@dataclass(frozen=True, slots=True)
class GradeMask:
    """Which components count; the weights of those left on are renormalized to sum to 1."""

    speedup: bool = True
    correctness: bool = True
    issues: bool = True
    summary: bool = True

    @property
    def name(self) -> str:
        off = [c for c in COMPONENTS if not getattr(self, c)]
        on = [c for c in COMPONENTS if getattr(self, c)]
        if not off:
            return "full"
        return f"only-{on[0]}" if len(on) == 1 else "-" + ",-".join(off)

    @classmethod
    def ablations(cls) -> list[GradeMask]:
        """The full mask, each component left out, and each component alone."""
        masks = [cls()]
        masks += [cls(**{c: c != off for c in COMPONENTS}) for off in COMPONENTS]
        masks += [cls(**{c: c == only for c in COMPONENTS}) for only in COMPONENTS]
        return masks


@dataclass(frozen=True, slots=True)
class Action:
    sql: str = ""
    issues: tuple[str, ...] = ()
    summary: str = ""


@dataclass(slots=True)
class Observation:
    task_id: str
    schema: str
    original_sql: str
    issue_types: tuple[str, ...] = ISSUE_TYPES
    last_execution: dict[str, Any] | None = None  # from the previous graded action, if any


@dataclass(slots=True)
class Grade:
    """One graded action: component scores in [0, 1], the weighted total, execution facts."""

    task_id: str
    scores: dict[str, float]
    total: float
    verdict: str  # faster | not_faster | noop | wrong_result | empty | error | timeout
    results_match: bool
    correctness_method: str | None  # rows | checksum | count | None when nothing ran
    original_seconds: float | None = None
    candidate_seconds: float | None = None
    speedup: float | None = None
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def execution(self) -> dict[str, Any]:
        """The ``last_execution`` an observation carries."""
        return {"original_seconds": self.original_seconds,
                "candidate_seconds": self.candidate_seconds, "speedup": self.speedup,
                "results_match": self.results_match, "verdict": self.verdict,
                "correctness_method": self.correctness_method, "detail": self.detail}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def speedup_score(speedup: float | None) -> float:
    """0 up to the neutral band, then log-scaled to 1.0 at :data:`SPEEDUP_CAP`."""
    if speedup is None or not math.isfinite(speedup) or speedup <= NEUTRAL_SPEEDUP:
        return 0.0
    return min(1.0, math.log(speedup / NEUTRAL_SPEEDUP) / math.log(SPEEDUP_CAP / NEUTRAL_SPEEDUP))


def issue_score(suggested: tuple[str, ...] | list[str], declared: tuple[str, ...]) -> float:
    """F1 of the suggested issue types against the declared ones; names outside the vocabulary
    count as false positives. Gameable alone (listing every type earns partial credit)."""
    guess, truth = {s.strip().lower() for s in suggested if s.strip()}, set(declared)
    hits = len(guess & truth)
    if not hits:
        return 0.0
    precision, recall = hits / len(guess), hits / len(truth)
    return 2 * precision * recall / (precision + recall)


def summary_score(summary: str, task: RewardTask) -> float:
    """A weak, deterministic proxy: 0 outside the length bounds, else half for the declared issue
    types (or their words) mentioned and half for the task's keywords mentioned."""
    text = " ".join(summary.lower().split())
    words = len(text.split())
    if words < SUMMARY_MIN_WORDS or words > SUMMARY_MAX_WORDS:
        return 0.0
    issue_hits = sum(1 for i in task.issues if i.replace("_", " ") in text or i in text
                     or all(part in text for part in i.split("_")))
    keyword_hits = sum(1 for k in task.keywords if k.lower() in text)
    issue_part = issue_hits / len(task.issues)
    keyword_part = keyword_hits / len(task.keywords) if task.keywords else issue_part
    return 0.5 * issue_part + 0.5 * keyword_part


def combine(scores: dict[str, float], results_match: bool, weights: Weights = DEFAULT_WEIGHTS,
            mask: GradeMask = GradeMask()) -> float:
    """Weighted total over the components ``mask`` leaves on. When an execution component
    (speedup or correctness) is on and the rows did not match, the total is capped at
    :data:`WRONG_RESULT_CAP`."""
    enabled = [c for c in COMPONENTS if getattr(mask, c)]
    if not enabled:
        raise ConfigError("a grade mask must leave at least one component on")
    weight_sum = sum(getattr(weights, c) for c in enabled)
    if weight_sum <= 0:
        raise ConfigError(f"the enabled components {enabled} all have weight 0")
    total = sum(getattr(weights, c) * scores[c] for c in enabled) / weight_sum
    if not results_match and (mask.speedup or mask.correctness):
        total = min(total, WRONG_RESULT_CAP)
    return total


class RewardEnv:
    """Grades actions on optimization tasks against one engine (by default the embedded engine
    that can checksum results in-engine: :func:`~polysql.engines.registry.default_grading_engine`)."""

    def __init__(self, tasks: list[RewardTask], engine_url: str | None = None, *, runs: int = 5,
                 warmup: int = 1, timeout: float = 10.0, weights: Weights = DEFAULT_WEIGHTS,
                 mask: GradeMask = GradeMask(), row_threshold: int = ROW_THRESHOLD) -> None:
        self.tasks = {t.id: t for t in tasks}
        self.engine_url = engine_url or default_grading_engine()
        self.runs, self.warmup, self.timeout = runs, warmup, timeout
        self.weights, self.mask, self.row_threshold = weights, mask, row_threshold
        self._copies = EvaluationCopies()
        self._current: RewardTask | None = None
        self._last: Grade | None = None

    # -- engine ---------------------------------------------------------------------------
    def backend(self, task: RewardTask) -> Backend:
        """The task's database on the engine: an evaluation copy, loaded on first use."""
        return self._copies.get(
            self.engine_url, dataset=task.dataset, db_id=task.db_id,
            source=lambda: get_dataset(task.dataset).database_url(task.db_id)).backend

    def close(self) -> None:
        self._copies.close()

    def __enter__(self) -> RewardEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- episode --------------------------------------------------------------------------
    def task(self, task_id: str) -> RewardTask:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise ConfigError(f"no reward task {task_id!r}") from None

    def reset(self, task_id: str) -> Observation:
        self._current, self._last = self.task(task_id), None
        return self._observation()

    def step(self, action: Action) -> tuple[Observation, float, dict[str, Any]]:
        if self._current is None:
            raise ConfigError("call reset(task_id) before step(action)")
        self._last = self.grade(action)
        return self._observation(), self._last.total, self._last.to_dict()

    def _observation(self) -> Observation:
        task = self._current
        assert task is not None
        last = self._last.execution() if self._last is not None else None
        return Observation(task.id, self.schema(task), task.original_sql, last_execution=last)

    def schema(self, task: RewardTask) -> str:
        lines = []
        for table in self.backend(task).tables():
            columns = ", ".join(f"{c.name} {c.type.kind}" for c in table.columns)
            lines.append(f"{table.name}({columns})")
        return "\n".join(lines)

    # -- grading --------------------------------------------------------------------------
    def grade(self, action: Action, task_id: str | None = None) -> Grade:
        """Score ``action`` on ``task_id`` (default: the current task); always re-executes."""
        task = self.task(task_id) if task_id is not None else self._current
        if task is None:
            raise ConfigError("grade needs a task id, or reset(task_id) first")
        scores = {"speedup": 0.0, "correctness": 0.0,
                  "issues": issue_score(action.issues, task.issues),
                  "summary": summary_score(action.summary, task)}
        grade = self._execute(task, action.sql.strip().rstrip(";").strip(), scores)
        grade.total = combine(scores, grade.results_match, self.weights, self.mask)
        return grade

    def _execute(self, task: RewardTask, sql: str, scores: dict[str, float]) -> Grade:
        backend = self.backend(task)
        if not sql:
            return Grade(task.id, scores, 0.0, "empty", False, None, detail="no SQL submitted")
        # An engine that cannot run a statement at all is an outage, never a reward of 0 for the
        # policy: EngineUnavailableError, and the caller grades again once the engine is back.
        def run_original(text: str) -> Result:
            return require_available(backend.execute(text, timeout=self.timeout),
                                     f"task {task.id}: the original query")

        # With the re-runs a comparison may need (deferred until a candidate's rows differ):
        # rows tied on ORDER BY keys the original does not return, or cut by its LIMIT, may
        # come in any order or be others of the tie group, as everywhere else rows are judged.
        original_runs = run_gold(task.original_sql, backend.dialect, run_original, deferred=True)
        original = original_runs.result
        if not original.ok:
            raise PolysqlError(f"task {task.id}: the original query failed: {original.error}")
        candidate = require_available(backend.execute(sql, timeout=self.timeout),
                                      f"task {task.id}: the submitted query")
        if not candidate.ok:
            kind = "timeout" if candidate.error.kind == "timeout" else "error"
            return Grade(task.id, scores, 0.0, kind, False, None,
                         detail=f"{candidate.error.kind}: {candidate.error.message[:200]}")
        match, method, partial, detail = self._same_rows(backend, task.original_sql, sql,
                                                         original_runs, candidate, run_original)
        scores["correctness"] = 1.0 if match else (PARTIAL_CORRECTNESS if partial else 0.0)
        if not match:
            return Grade(task.id, scores, 0.0, "wrong_result", False, method, detail=detail)
        try:
            timing = time_pair(backend, task.original_sql, sql, warmup=self.warmup,
                               runs=self.runs, timeout=self.timeout)
        except TimingError as exc:
            return Grade(task.id, scores, 0.0, "error", True, method, detail=str(exc))
        grade = Grade(task.id, scores, 0.0, "not_faster", True, method,
                      original_seconds=timing.input_median,
                      candidate_seconds=timing.rewrite_median, speedup=timing.speedup)
        if timing.timeouts:
            grade.verdict, grade.detail = "timeout", f"{timing.timeouts} timed run(s) timed out"
        elif is_noop(task.original_sql, sql, backend.dialect):
            # resubmitting the original must never earn credit from timing noise
            grade.verdict = "noop"
        else:
            scores["speedup"] = speedup_score(timing.speedup)
            grade.verdict = "faster" if scores["speedup"] > 0 else "not_faster"
        return grade

    def _same_rows(self, backend: Backend, original_sql: str, candidate_sql: str,
                   original_runs: GoldRuns, candidate: Result,
                   run_original: Callable[[str], Result]) -> tuple[bool, str, bool, str]:
        """(match, method, partial, detail). ``partial``: same row and column counts."""

        original = original_runs.result
        shape_ok = (len(original.columns) == len(candidate.columns)
                    and len(original.rows) == len(candidate.rows))
        small = (not original.truncated and not candidate.truncated
                 and max(len(original.rows), len(candidate.rows)) <= self.row_threshold)
        if small:
            verdict = judge(original_runs, candidate, run_original)
            return verdict.match, "rows", shape_ok, verdict.reason
        template = backend.info.checksum_sql  # None: the engine has no checksum query
        method = "checksum" if template else "count"
        template = template or "SELECT count(*) FROM ({sql}) AS t"
        sums = [require_available(backend.execute(template.format(sql=q), timeout=self.timeout),
                                  f"the {method} query")
                for q in (original_sql, candidate_sql)]
        if not all(r.ok for r in sums):
            return False, method, False, "the checksum query failed"
        same_count = sums[0].rows[0][0] == sums[1].rows[0][0]
        same = sums[0].rows == sums[1].rows and len(original.columns) == len(candidate.columns)
        return same, method, same_count, f"{method}: {sums[0].rows[0]} vs {sums[1].rows[0]}"

