"""What comparing reads off a gold result by itself, kept for the next comparison with that gold.

A sweep compares each gold with the answer of every predictor on every engine. Typing the gold's
columns, making their values canonical and turning them into keys depends on the gold alone, yet
was done again for every one of those comparisons: for a gold of 200,000 rows that is most of
the time of each. A :class:`GoldMemo` (one per gold, held by
:class:`~polysql.normalizers.gold.GoldRuns`) keeps that work per result and policy, so it is done
once. Nothing that depends on the other side is kept: a column read as JSON because the column it
is compared with is JSON is read so for that comparison only (see
:meth:`~polysql.normalizers.columns.ResultColumns.read_as_json`).

The results a memo serves must not change while it lives; a GoldRuns' results never do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from polysql.core.model import Result
from polysql.normalizers.families import Zones
from polysql.normalizers.policy import ComparePolicy
from polysql.normalizers.values import Reading

# A result without its trailing ORDER BY key columns, and those columns' values per row.
Split = tuple[Result, "list[tuple[Any, ...]] | None"]


@dataclass(frozen=True, slots=True)
class ColumnsRead:
    """A result's columns as comparing reads them: canonical values, their Python types, time
    zones, and the columns the engine says hold JSON (read as JSON already)."""

    raw: list[Sequence[Any]]
    types: dict[int, frozenset[type]]
    zones: list[Zones]
    json: frozenset[int]


class ResultMemo:
    """What one result's columns read as under one policy, filled by the first comparison."""

    __slots__ = ("_columns", "_lock", "keys", "result")

    def __init__(self, result: Result) -> None:
        # Held so that no other result takes its id while the memo names it by that id.
        self.result = result
        self._lock = threading.Lock()
        self._columns: ColumnsRead | None = None
        #: keys by (column, reading), of columns read as the result alone says
        self.keys: dict[tuple[int, Reading], Sequence[Any]] = {}

    def columns(self, read: Callable[[], ColumnsRead]) -> ColumnsRead:
        """The columns as ``read()`` gives them, read once however many threads ask."""
        with self._lock:
            if self._columns is None:
                self._columns = read()
            return self._columns

    def keys_of(self, at: tuple[int, Reading], make: Callable[[], Sequence[Any]]) -> Sequence[Any]:
        """The keys of column and reading ``at``, made by ``make()`` the first time. Two threads
        may both make them; the first stored is kept (the same keys either way)."""
        found = self.keys.get(at)
        if found is None:
            found = self.keys.setdefault(at, make())
        return found


class GoldMemo:
    """The memos of one gold's results (as written, keyed re-run, widened), per policy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[tuple[int, ComparePolicy], ResultMemo] = {}
        self._splits: dict[tuple[int, int], tuple[Result, Split]] = {}

    def of(self, result: Result, policy: ComparePolicy) -> ResultMemo:
        with self._lock:
            memo = self._results.get((id(result), policy))
            if memo is None or memo.result is not result:
                memo = self._results[(id(result), policy)] = ResultMemo(result)
            return memo

    def split(self, result: Result, hidden: int, split: Callable[[Result, int], Split]) -> Split:
        """``split(result, hidden)``, made once: the same visible result each time, so its own
        memo serves every comparison with it."""
        with self._lock:
            found = self._splits.get((id(result), hidden))
            if found is None or found[0] is not result:
                found = self._splits[(id(result), hidden)] = (result, split(result, hidden))
            return found[1]
