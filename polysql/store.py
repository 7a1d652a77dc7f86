"""The results store: one JSON line per (dataset, question, predictor, engine), append-only.

A sweep re-run with the same output folder resumes: keys already present are skipped. A line cut
short by Ctrl-C or a crash is ignored on read (and reported), so interrupting never corrupts a run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from polysql.errors import ResultsStoreError

RecordKey = tuple[str, str, str, str]
RESULTS_FILE = "results.jsonl"
RUN_FILE = "run.json"  # the sweep's settings, engines and predictors, beside the results


def record_key(record: dict[str, Any]) -> RecordKey:
    return (record["dataset"], str(record["question_id"]), record["predictor"], record["engine"])


def _json_default(value: Any) -> Any:
    # Details may carry Decimal, date or bytes values from result rows; keep them readable.
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


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
        with self.path.open(encoding="utf-8") as fh:
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


class _Appender:
    def __init__(self, path: Path) -> None:
        try:
            self._fh = path.open("a", encoding="utf-8")
        except OSError as exc:
            raise ResultsStoreError(f"cannot write results file {path}: {exc}") from exc

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, default=_json_default, ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> _Appender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
