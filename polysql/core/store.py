"""The results store: one JSON line per (dataset, question, predictor, engine), append-only.

A sweep re-run with the same output folder resumes: keys already present are skipped. A line cut
short by Ctrl-C or a crash is ignored on read (and reported), and the next resume rewrites the
file without it (atomically), so ``results.jsonl`` is always valid JSON Lines for other tools.

Beside the records, ``run.json`` holds the sweep's :class:`RunPlan`: which (question, predictor,
engine) work every invocation asked for. Records present vs. work planned is what makes a run
*complete*; anything planned but not recorded is *pending*, and every summary says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polysql.core.errors import ResultsStoreError

RecordKey = tuple[str, str, str, str]
RESULTS_FILE = "results.jsonl"
RUN_FILE = "run.json"  # the sweep's settings, engines, predictors and plan, beside the results
# records a resume replaced because their inputs changed: kept, never silently deleted
SUPERSEDED_FILE = "results.superseded.jsonl"


def record_key(record: dict[str, Any]) -> RecordKey:
    return (record["dataset"], str(record["question_id"]), record["predictor"], record["engine"])


def _json_default(value: Any) -> Any:
    # Details may carry Decimal, date or bytes values from result rows; keep them readable.
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def dump_record(record: dict[str, Any]) -> str:
    """One JSON line, text kept readable (not ASCII-escaped). Write it to a file opened with
    :data:`TEXT_ERRORS`."""
    return json.dumps(record, default=_json_default, ensure_ascii=False) + "\n"


# A lone surrogate (valid in a JSON string, e.g. a model answer or a predictions line holding
# "\\ud800") cannot be encoded as UTF-8. Written with backslashreplace it becomes the six
# characters \\ud800 inside its JSON string: the JSON escape for the very same character, so the
# line stays valid JSON and reads back unchanged.
TEXT_ERRORS = "backslashreplace"


@dataclass(slots=True)
class Rewrite:
    """What :meth:`ResultsStore.compact` did to the file."""

    damaged: list[int] = field(default_factory=list)  # line numbers dropped as unreadable
    superseded: int = 0  # records moved to results.superseded.jsonl
    duplicates: int = 0  # older records of a key that a later record replaced


class ResultsStore:
    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / RESULTS_FILE
        self.damaged_lines: list[int] = []

    def records(self) -> Iterator[dict[str, Any]]:
        """Every complete record; partial or corrupt lines are skipped and counted."""
        self.damaged_lines = []
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    record_key(record)
                except (json.JSONDecodeError, KeyError, TypeError):
                    self.damaged_lines.append(number)
                    continue
                yield record

    def latest_records(self) -> list[dict[str, Any]]:
        """One record per key (the last written wins, e.g. after a forced re-run)."""
        latest: dict[RecordKey, dict[str, Any]] = {}
        for record in self.records():
            latest[record_key(record)] = record
        return list(latest.values())

    def done_keys(self) -> set[RecordKey]:
        return {record_key(r) for r in self.records()}

    def compact(self, keep: Callable[[dict[str, Any]], bool] = lambda _record: True) -> Rewrite:
        """Rewrite the file atomically with one record per key (the latest), without damaged
        lines and without the records ``keep`` rejects; rejected ones are appended to
        ``results.superseded.jsonl`` so nothing is lost. The file is replaced only when
        something changed; a crash at any point leaves either the old or the new file."""
        outcome = Rewrite()
        if not self.path.exists():
            return outcome
        latest: dict[RecordKey, dict[str, Any]] = {}
        total = 0
        for record in self.records():
            total += 1
            latest[record_key(record)] = record
        outcome.damaged = list(self.damaged_lines)
        outcome.duplicates = total - len(latest)
        kept = [r for r in latest.values() if keep(r)]
        dropped = [r for r in latest.values() if not keep(r)]
        outcome.superseded = len(dropped)
        if not (outcome.damaged or outcome.duplicates or dropped):
            return outcome
        if dropped:
            with (self.run_dir / SUPERSEDED_FILE).open("a", encoding="utf-8",
                                                       errors=TEXT_ERRORS) as fh:
                fh.writelines(dump_record(r) for r in dropped)
                fh.flush()
                os.fsync(fh.fileno())
        _atomic_write_lines(self.path, (dump_record(r) for r in kept))
        return outcome

    def open_for_append(self) -> _Appender:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._repair_tail()
        return _Appender(self.path)

    def _repair_tail(self) -> None:
        """Terminate a last line cut short mid-write so the next record starts on its own line."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb+") as fh:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                fh.write(b"\n")


def _atomic_write_lines(path: Path, lines: Iterable[str]) -> None:
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", errors=TEXT_ERRORS) as fh:
            fh.writelines(lines)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class _Appender:
    def __init__(self, path: Path) -> None:
        self._path = path
        try:
            self._fh = path.open("a", encoding="utf-8", errors=TEXT_ERRORS)
        except OSError as exc:
            raise ResultsStoreError(f"cannot write results file {path}: {exc}") from exc

    def write(self, record: dict[str, Any]) -> None:
        """Append one record and hand it to the operating system. A record that cannot be
        written (disk full, quota, file size limit, I/O error) stops the run: the records
        before it stay, a line cut short is dropped and redone by the next run."""
        try:
            self._fh.write(dump_record(record))
            self._fh.flush()
        except OSError as exc:
            raise ResultsStoreError(
                f"cannot write to results file {self._path}: {exc.strerror or exc}; the records "
                f"written before stay, and running the same command again resumes once the "
                f"file can be written (on a full disk: once there is room)") from exc

    def close(self) -> None:
        # Every write is flushed, so only a write that failed leaves bytes to flush here:
        # its error already says why, and must not be replaced by the same one again.
        with contextlib.suppress(OSError):
            self._fh.close()

    def __enter__(self) -> _Appender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- the plan: what work a run folder was asked for ---------------------------------------------

@dataclass(slots=True)
class PlanBlock:
    """One invocation's work: every question x predictor x engine of it."""

    dataset: str
    questions: list[str]
    predictors: list[str]
    engines: list[str]

    def work_keys(self) -> Iterator[RecordKey]:
        for question in self.questions:
            for predictor in self.predictors:
                for engine in self.engines:
                    yield (self.dataset, question, predictor, engine)

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "questions": self.questions,
                "predictors": self.predictors, "engines": self.engines}


@dataclass(slots=True)
class RunPlan:
    """The union of every invocation's work in a run folder (stored in ``run.json``).

    A run is complete when every planned key has a record. Blocks with the same predictors and
    engines are merged, so a folder swept many times with ``--limit`` stays a short list.
    """

    blocks: list[PlanBlock] = field(default_factory=list)

    def add(self, dataset: str, questions: Iterable[str], predictors: Iterable[str],
            engines: Iterable[str]) -> None:
        block = PlanBlock(dataset, list(dict.fromkeys(questions)), list(dict.fromkeys(predictors)),
                          list(dict.fromkeys(engines)))
        for known in self.blocks:
            if (known.dataset, sorted(known.predictors), sorted(known.engines)) == (
                    block.dataset, sorted(block.predictors), sorted(block.engines)):
                known.questions = list(dict.fromkeys([*known.questions, *block.questions]))
                return
        self.blocks.append(block)

    def keys(self) -> set[RecordKey]:
        return {key for block in self.blocks for key in block.work_keys()}

    def pending(self, records: Iterable[dict[str, Any]]) -> set[RecordKey]:
        """Planned keys without a record."""
        return self.keys() - {record_key(r) for r in records}

    def to_list(self) -> list[dict[str, Any]]:
        return [b.to_dict() for b in self.blocks]

    @classmethod
    def from_list(cls, data: Any) -> RunPlan:
        """The plan stored in run.json; a folder written before plans existed has none."""
        plan = cls()
        if not isinstance(data, list):
            return plan
        for item in data:
            if not isinstance(item, dict):
                continue
            fields = [item.get(k) for k in ("questions", "predictors", "engines")]
            if isinstance(item.get("dataset"), str) and all(isinstance(f, list) for f in fields):
                plan.add(item["dataset"], map(str, fields[0]), map(str, fields[1]),
                         map(str, fields[2]))
        return plan


def read_run_info(run_dir: str | Path) -> dict[str, Any] | None:
    """``run.json`` of a run folder, or None when there is none; ResultsStoreError when it is
    unreadable."""
    path = Path(run_dir) / RUN_FILE
    if not path.exists():
        return None
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsStoreError(f"{path} is unreadable ({exc}); use --fresh to start over") from exc
    if not isinstance(info, dict):
        raise ResultsStoreError(f"{path} is not a JSON object; use --fresh to start over")
    return info


def sweep_folder(info: dict[str, Any]) -> Path | None:
    """The folder the sweep of ``info`` (its run.json) ran in, which the relative paths run.json
    keeps (dataset spec, predictions files) are read from; None for a run.json without it, or
    when that folder no longer exists (the paths are then read from the current folder)."""
    folder = info.get("cwd")
    if isinstance(folder, str) and Path(folder).is_dir():
        return Path(folder)
    return None


def run_plan(run_dir: str | Path) -> RunPlan:
    """The plan of a run folder (empty when it has none)."""
    info = read_run_info(run_dir) or {}
    return RunPlan.from_list(info.get("plan"))
