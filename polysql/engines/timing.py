"""How a rewrite is timed against its input: warm-ups, then measured runs of both, interleaved.

Round r runs the input then the rewrite when r is even, the rewrite then the input when r is odd
(ABBA...), so a drift in the machine's speed (caches warming, another process starting) weighs on
both queries alike instead of on whichever always runs second. Warm-up rounds alternate the same
way and are not measured. Every measured run is kept (:class:`~polysql.analysis.rewrite.model.
Timing`); the comparison uses medians.

A run's time is the backend's own ``Result.elapsed`` (every bundled backend measures it around the
statement and the fetch), or the wall time around ``execute`` when a backend reports none. A run
that hits the per-run timeout counts as exactly the timeout and is counted in ``Timing.timeouts``;
any other failure of a query that already ran once is an engine problem, raised as
:class:`TimingError`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Backend
from polysql.core.errors import ConfigError, EngineError
from polysql.core.model import Result, Timing
from polysql.core.outage import require_available

__all__ = ["DEFAULT_RUNS", "DEFAULT_WARMUP", "QUERIES", "TimedRun", "TimingError",
           "measured_order", "run_seconds", "time_pair"]

DEFAULT_WARMUP = 1
DEFAULT_RUNS = 5
QUERIES = ("input", "rewrite")


@dataclass(frozen=True, slots=True)
class TimedRun:
    """One execution during timing, in the order it happened."""

    query: str  # "input" | "rewrite"
    phase: str  # "warmup" | "measured"
    round: int  # 0-based within its phase
    seconds: float  # as counted: the timeout itself for a run that timed out
    timed_out: bool = False


class TimingError(EngineError):
    """A query failed (other than by timing out, or by its engine being unavailable, which is
    :class:`~polysql.core.errors.EngineUnavailableError`) during timing runs."""

    def __init__(self, message: str, query: str, result: Result) -> None:
        super().__init__(message)
        self.query = query
        self.result = result


def run_seconds(result: Result, wall: float) -> float:
    """The time a run took: the backend's measurement when it made one, else ``wall``."""
    return result.elapsed if result.elapsed > 0 else wall


def _round_order(round_number: int) -> tuple[str, str]:
    return QUERIES if round_number % 2 == 0 else (QUERIES[1], QUERIES[0])


def time_pair(backend: Backend, input_sql: str, rewrite_sql: str, *,
              warmup: int = DEFAULT_WARMUP, runs: int = DEFAULT_RUNS,
              timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
              log: list[TimedRun] | None = None) -> Timing:
    """Time ``input_sql`` against ``rewrite_sql`` on ``backend``: ``warmup`` unmeasured rounds,
    then ``runs`` measured rounds, each round running both queries in alternating order.

    ``log``, when given, receives every run (warm-ups included) in execution order. A run the
    engine could not make at all raises EngineUnavailableError (see :mod:`.outage`).
    """
    if warmup < 0 or runs < 1:
        raise ConfigError(f"timing needs warmup >= 0 and runs >= 1, got {warmup} and {runs}")
    if not timeout > 0:
        raise ConfigError(f"the per-run timeout must be positive, got {timeout}")
    sql = {"input": input_sql, "rewrite": rewrite_sql}
    measured: dict[str, list[float]] = {"input": [], "rewrite": []}
    timeouts = 0
    for phase, rounds in (("warmup", warmup), ("measured", runs)):
        for round_number in range(rounds):
            for query in _round_order(round_number):
                started = time.perf_counter()
                result = backend.execute(sql[query], timeout=timeout, max_rows=max_rows)
                wall = time.perf_counter() - started
                require_available(result, f"the {query} ({phase} timing run)")
                timed_out = result.error is not None and result.error.kind == "timeout"
                if result.error is not None and not timed_out:
                    raise TimingError(
                        f"the {query} failed during a {phase} timing run with a "
                        f"{result.error.kind} error: {result.error.message}", query, result)
                seconds = timeout if timed_out else run_seconds(result, wall)
                if log is not None:
                    log.append(TimedRun(query, phase, round_number, seconds, timed_out))
                if phase == "measured":
                    measured[query].append(seconds)
                    timeouts += timed_out
    return Timing(input_runs=measured["input"], rewrite_runs=measured["rewrite"], warmup=warmup,
                  timeouts=timeouts)


def measured_order(log: list[TimedRun]) -> list[str]:
    """Which query ran, measured runs only, in execution order."""
    return [run.query for run in log if run.phase == "measured"]
