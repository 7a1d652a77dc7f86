"""Accuracy per (predictor, engine) from sweep records, with Wilson 95% intervals.

Questions whose gold query failed (``invalid_gold``) are left out of the denominator and counted
on their own: a broken gold says nothing about the candidate. Every other record counts,
including generation failures, missing predictions and execution errors. A cell with no
countable record has no accuracy (``None``, shown as "—"), never 0%.

Given the run's planned keys, the summary also counts *pending* work (planned, not recorded:
an interrupted sweep, an abandoned engine, a model that could not be reached). Pending work is in
no denominator, and a summary with any is marked incomplete.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any

STATUSES = ("match", "mismatch", "exec_error", "generation_failure", "invalid_gold")


def wilson_interval(correct: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (closed form; well-behaved at 0 and n)."""
    if total == 0:
        return (0.0, 0.0)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = correct / total
    denom = 1 + z * z / total
    center = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    # Rounding can leave a bound a hair on the wrong side of p at 0 and n; it never should be.
    return (max(0.0, min(p, center - half)), min(1.0, max(p, center + half)))


@dataclass(slots=True)
class Cell:
    """Accuracy of one predictor on one engine (optionally restricted to one tag)."""

    predictor: str
    engine: str
    total: int = 0  # denominator: every record except invalid_gold
    correct: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    error_kinds: Counter[str] = field(default_factory=Counter)
    ci_low: float | None = None  # None while total is 0
    ci_high: float | None = None
    pending: int = 0  # planned records of this cell not written yet
    # verdicts on results cut at the row cap, where the rows cut off could change them
    cut: int = 0

    @property
    def accuracy(self) -> float | None:
        """Matches over the denominator; None when nothing counts (n=0), never a fake 0%."""
        return self.correct / self.total if self.total else None

    @property
    def invalid_gold(self) -> int:
        return self.statuses.get("invalid_gold", 0)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["statuses"] = dict(self.statuses)
        out["error_kinds"] = dict(self.error_kinds)
        out["accuracy"] = self.accuracy
        out["invalid_gold"] = self.invalid_gold
        return out


def _add(cell: Cell, record: dict[str, Any]) -> None:
    status = record["status"]
    cell.statuses[status] += 1
    if status == "invalid_gold":
        return
    cell.total += 1
    cell.correct += int(status == "match")
    cell.cut += int(bool((record.get("details") or {}).get("rests_on_cut_rows")))
    if status == "exec_error":
        error = (record.get("pred") or {}).get("error") or {}
        cell.error_kinds[error.get("kind", "unknown")] += 1


def _finish(cells: Iterable[Cell]) -> None:
    for cell in cells:
        if cell.total:
            cell.ci_low, cell.ci_high = wilson_interval(cell.correct, cell.total)


@dataclass(slots=True)
class Summary:
    cells: list[Cell]
    by_tag: dict[str, list[Cell]]
    datasets: list[str]
    questions: int
    pending: int = 0  # planned records not written (in no denominator)
    records: int = 0

    @property
    def complete(self) -> bool:
        return self.pending == 0

    @property
    def invalid_gold(self) -> int:
        return sum(c.invalid_gold for c in self.cells)

    @property
    def cut(self) -> int:
        return sum(c.cut for c in self.cells)

    def cell(self, predictor: str, engine: str) -> Cell:
        for c in self.cells:
            if c.predictor == predictor and c.engine == engine:
                return c
        raise KeyError((predictor, engine))

    def to_dict(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "pending": self.pending,
            "records": self.records,
            "invalid_gold": self.invalid_gold,
            "cut": self.cut,
            "datasets": self.datasets,
            "questions": self.questions,
            "cells": [c.to_dict() for c in self.cells],
            "by_tag": {tag: [c.to_dict() for c in cells] for tag, cells in self.by_tag.items()},
        }


def summarize(records: Iterable[dict[str, Any]],
              pending: Iterable[tuple[str, str, str, str]] = ()) -> Summary:
    """``pending``: (dataset, question_id, predictor, engine) keys planned but not recorded."""
    cells: dict[tuple[str, str], Cell] = {}
    tag_cells: dict[str, dict[tuple[str, str], Cell]] = defaultdict(dict)
    datasets: set[str] = set()
    questions: set[tuple[str, str]] = set()
    count = 0
    for record in records:
        count += 1
        key = (record["predictor"], record["engine"])
        datasets.add(record["dataset"])
        questions.add((record["dataset"], str(record["question_id"])))
        _add(cells.setdefault(key, Cell(*key)), record)
        for tag in record.get("tags") or ():
            _add(tag_cells[tag].setdefault(key, Cell(*key)), record)
    waiting = 0
    for dataset, question, predictor, engine in pending:
        waiting += 1
        datasets.add(dataset)
        questions.add((dataset, question))
        cells.setdefault((predictor, engine), Cell(predictor, engine)).pending += 1
    ordered = [cells[k] for k in sorted(cells)]
    _finish(ordered)
    by_tag = {tag: [tc[k] for k in sorted(tc)] for tag, tc in sorted(tag_cells.items())}
    for tag_list in by_tag.values():
        _finish(tag_list)
    return Summary(cells=ordered, by_tag=by_tag, datasets=sorted(datasets), questions=len(questions),
                   pending=waiting, records=count)
