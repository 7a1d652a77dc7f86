"""Where a sweep's time goes: seconds per lane and stage, gathered while it runs.

A *lane* is a line of work: ``gold`` (the gold queries, run before anything else), one per
swept engine (that engine's workers) and ``sweep`` (the main thread: planning, reports, closing).
A lane is worked by one thread, or by several side by side (an engine that serves several
statements at once), so its total is at most the wall time times its ``threads``.
A *stage* is what the lane was doing: loading copies, running gold SQL through the comparison
rules, predicting, executing on the engine, reading and writing the execution cache, judging,
writing records.

Stages nest (the engine executes inside the gold stage, the cache is read inside an
execution...), and each stage is counted *exclusive* of the stages inside it, so a lane's stages
add up to its wall time with nothing counted twice. An engine worker with nothing to run until a
model answers waits in ``model``. The part of a lane no stage claims is ``other`` (the loop's own
bookkeeping, progress). A worker waiting for work
another thread is doing (the lane's other workers finishing, a gold's re-runs another worker
makes) counts that wait nowhere (:meth:`idle`): the work is counted by the thread doing it.

Engine time is the ``execute`` stage alone: the wall time around the backend's ``execute``
(statement, fetch and the driver's conversion of rows). polysql's own time is everything else
except loading, which is reported apart (it happens once per copy and database, and would
otherwise hide the per-query overhead this is meant to show), and waiting for models, which is
the model service's time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from polysql.core.schema import LoadReport

STAGES = ("load", "plan", "gold", "predict", "model", "execute", "cache", "compare", "record",
          "other")
ENGINE_STAGE = "execute"
LOAD_STAGE = "load"
MODEL_STAGE = "model"  # an engine worker idle until a model's answer arrives
MAIN_LANE = "sweep"
GOLD_LANE = "gold"
TIMINGS_FILE = "timings.json"  # in the run folder: the last invocation's timings


@dataclass(slots=True)
class _Frame:
    stage: str
    started: float
    inner: float = 0.0  # seconds spent in stages nested inside this one


@dataclass(slots=True)
class LaneTimes:
    """One lane's seconds per stage (exclusive), how often each stage ran, and what it loaded."""

    seconds: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    rows_loaded: int = 0  # rows copied into engines by loads this lane did (not skipped ones)
    threads: int = 0  # threads that worked in the lane (an engine's workers side by side)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    @property
    def engine(self) -> float:
        return self.seconds.get(ENGINE_STAGE, 0.0)

    @property
    def load(self) -> float:
        return self.seconds.get(LOAD_STAGE, 0.0)

    @property
    def model(self) -> float:
        return self.seconds.get(MODEL_STAGE, 0.0)

    @property
    def polysql(self) -> float:
        """polysql's own time: everything but engine execution, loading and model waits."""
        return max(0.0, self.total - self.engine - self.load - self.model)

    def ratio(self) -> float | None:
        """polysql's own time per second of engine time (None when no engine time)."""
        return self.polysql / self.engine if self.engine > 0 else None

    def add(self, other: LaneTimes) -> None:
        for stage, seconds in other.seconds.items():
            self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds
        for stage, count in other.counts.items():
            self.counts[stage] = self.counts.get(stage, 0) + count
        self.rows_loaded += other.rows_loaded
        self.threads += other.threads

    def as_dict(self) -> dict[str, Any]:
        ratio = self.ratio()
        return {
            "stages": {stage: round(self.seconds.get(stage, 0.0), 6) for stage in STAGES
                       if stage in self.seconds},
            "counts": dict(self.counts),
            "total": round(self.total, 6),
            "engine": round(self.engine, 6),
            "load": round(self.load, 6),
            "model": round(self.model, 6),
            "polysql": round(self.polysql, 6),
            "ratio": None if ratio is None else round(ratio, 4),
            "rows_loaded": self.rows_loaded,
            "threads": self.threads,
            "load_rows_per_second": (round(self.rows_loaded / self.load, 1)
                                     if self.rows_loaded and self.load > 0 else None),
        }


class SweepTimings:
    """Thread-safe accumulation of stage times. Each thread names its lane once
    (:meth:`lane`); :meth:`stage` then counts into it, exclusive of nested stages."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lanes: dict[str, LaneTimes] = {}
        self._local = threading.local()
        self.wall = 0.0  # the whole invocation, set by the runner when it ends

    def _stack(self) -> list[_Frame]:
        stack: list[_Frame] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def _lane_name(self) -> str:
        return getattr(self._local, "lane", None) or MAIN_LANE

    @contextmanager
    def lane(self, name: str) -> Iterator[None]:
        """This thread works for ``name`` until the block ends; time no stage claims in it is
        counted as ``other``, so the lane's stages add up to the block's wall time."""
        previous = getattr(self._local, "lane", None)
        self._local.lane = name
        if previous != name:
            with self._lock:
                self._lanes.setdefault(name, LaneTimes()).threads += 1
        try:
            with self.stage("other"):
                yield
        finally:
            self._local.lane = previous

    def stage(self, name: str) -> _Stage:
        """``with timings.stage(name):`` counts the block's time, less nested stages', as
        ``name`` in this thread's lane. (A plain class, not a generator: a sweep enters stages
        two dozen times a question.)"""
        return _Stage(self, name)

    @contextmanager
    def idle(self) -> Iterator[None]:
        """A wait for work another thread is doing (the lane's other workers finishing their
        last items, a gold's deferred re-runs another worker makes): counted in no stage, since
        that work is counted where it is done, and not as ``other`` around it either."""
        stack = self._stack()
        started = time.perf_counter()
        try:
            yield
        finally:
            if stack:
                stack[-1].inner += time.perf_counter() - started

    def _add(self, lane: str, stage: str, seconds: float) -> None:
        with self._lock:
            times = self._lanes.get(lane)
            if times is None:
                # the main thread works in its lane without entering it (see _lane_name)
                times = self._lanes[lane] = LaneTimes(threads=int(lane == MAIN_LANE))
            times.seconds[stage] = times.seconds.get(stage, 0.0) + max(0.0, seconds)
            times.counts[stage] = times.counts.get(stage, 0) + 1

    def rows_loaded(self, lane: str, rows: int) -> None:
        with self._lock:
            self._lanes.setdefault(lane, LaneTimes()).rows_loaded += rows

    def lanes(self) -> dict[str, LaneTimes]:
        """A copy of every lane's times: gold first, the main thread last."""
        with self._lock:
            copies = {name: LaneTimes(dict(t.seconds), dict(t.counts), t.rows_loaded, t.threads)
                      for name, t in self._lanes.items()}
        order = sorted(copies, key=lambda n: (n != GOLD_LANE, n == MAIN_LANE))
        return {name: copies[name] for name in order}

    def overall(self) -> LaneTimes:
        """Every lane summed (lanes run in parallel, so this may exceed the wall time)."""
        total = LaneTimes()
        for times in self.lanes().values():
            total.add(times)
        return total

    def as_dict(self) -> dict[str, Any]:
        overall = self.overall()
        return {
            "wall": round(self.wall, 6),
            "lanes": {name: times.as_dict() for name, times in self.lanes().items()},
            "all": overall.as_dict(),
            # everything but engine execution and model waits, loading counted in
            "own_including_load": round(overall.total - overall.engine - overall.model, 6),
        }


def count_loaded_rows(timings: SweepTimings, reports: dict[tuple[str, str], LoadReport]) -> None:
    """Credit each lane with the rows its loads copied (``reports`` by engine name and db_id,
    as :attr:`EngineFleet.load_reports` gives them); loads that found the copy there already
    copied nothing."""
    for (engine, _db_id), report in reports.items():
        if report.skipped:
            continue
        lane = GOLD_LANE if engine.startswith(f"{GOLD_LANE}:") else engine
        timings.rows_loaded(lane, sum(report.tables.values()))


class _Stage:
    """One entry into a stage (see :meth:`SweepTimings.stage`)."""

    __slots__ = ("_frame", "_stack", "_timings")

    def __init__(self, timings: SweepTimings, name: str) -> None:
        self._timings = timings
        self._frame = _Frame(name, 0.0)
        self._stack: list[_Frame] = []

    def __enter__(self) -> None:
        self._stack = self._timings._stack()
        self._frame.started = time.perf_counter()
        self._stack.append(self._frame)

    def __exit__(self, *exc_info: object) -> None:
        frame, stack = self._frame, self._stack
        elapsed = time.perf_counter() - frame.started
        stack.pop()
        if stack:
            stack[-1].inner += elapsed
        self._timings._add(self._timings._lane_name(), frame.stage, elapsed - frame.inner)
