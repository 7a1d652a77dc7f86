"""Value-level equality under tolerance, and the general pairing of leftover rows.

Hashing needs equal keys, so numbers are bucketed; two numbers within tolerance can still land in
neighbouring buckets (0.1234549 vs 0.1234551). :mod:`polysql.normalizers.residue` settles most
such rows with numpy; the rows it cannot settle come here with their values in exact form
(:class:`~polysql.normalizers.values.Number`) and are paired by sorting: rows are grouped by their
non-numeric values, sorted on their first numeric value, and each gold row takes the first unused
predicted row whose numbers are all within tolerance. Taken rows are skipped in near-constant
time, so the cost is O(r log r) for r leftover rows whatever the windows overlap (plus, per gold
row, the free rows in its window that differ from it in another numeric column).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

from polysql.normalizers.policy import ComparePolicy
from polysql.normalizers.values import (
    WRITTEN_RTOL,
    Number,
    integer_against_long,
    written_number,
)

_NUMBER_SLOT = object()  # stands for "some number" in a row's signature


def values_match(a: Any, b: Any, policy: ComparePolicy) -> bool:
    """Whether two fine values are equal under the contract."""
    if isinstance(a, Number) and isinstance(b, Number):
        if a.exact is not None and b.exact is not None:
            return a.exact == b.exact  # two integers: exactly, even beyond float precision
        if not policy.tolerant:
            return a.approx == b.approx
        if policy.short_numbers_exact:
            written_a, written_b = written_form(a), written_form(b)
            if written_a is not None and written_b is not None:
                # both written out in full: a rounding or truncation apart is a different answer
                return written_match(written_a, written_b, policy)
            if (_integral(written_a) and not b.loose) or (_integral(written_b) and not a.loose):
                # an integer against a long number (not a 32-bit float): only noise apart
                return integer_against_long(a.approx, b.approx, policy)
        return math.isclose(a.approx, b.approx, rel_tol=policy.rel_tol, abs_tol=policy.abs_tol)
    if isinstance(a, Number) or isinstance(b, Number):
        return False
    return bool(a == b)


def _integral(written: float | None) -> bool:
    return written is not None and written == math.trunc(written)


def written_match(a: float, b: float, policy: ComparePolicy) -> bool:
    """Two numbers written out in full: equal, within the absolute tolerance, or -- neither
    integral -- within a 32-bit float's precision (see WRITTEN_RTOL)."""
    if not (math.isfinite(a) and math.isfinite(b)):  # an integer beyond floats reads as inf
        return a == b
    difference = abs(a - b)
    if a == b or difference <= policy.abs_tol:
        return True
    if a == math.trunc(a) or b == math.trunc(b):
        return False
    return difference <= WRITTEN_RTOL * max(abs(a), abs(b))


def written_form(number: Number) -> float | None:
    """The number ``number`` writes out in full (see values.written_number): an integer's float,
    a short decimal, or the decimal its float noise surrounds; None when it writes out none (or
    was read beside a 32-bit float)."""
    if number.exact is not None:
        return number.approx
    return None if number.loose else written_number(number.approx)


def rows_match(a: Sequence[Any], b: Sequence[Any], policy: ComparePolicy) -> bool:
    return len(a) == len(b) and all(values_match(x, y, policy) for x, y in zip(a, b, strict=True))


def first_difference(a: Sequence[Any], b: Sequence[Any], policy: ComparePolicy) -> int | None:
    """Index of the first column where two rows differ, or None."""
    for j, (x, y) in enumerate(zip(a, b, strict=True)):
        if not values_match(x, y, policy):
            return j
    return None


def _signature(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_NUMBER_SLOT if isinstance(x, Number) else x for x in row)


def _window(value: float, policy: ComparePolicy) -> float:
    """Half-width of the interval that can hold a number within tolerance of ``value``."""
    reach = max(policy.rel_tol * abs(value) / (1.0 - policy.rel_tol), policy.abs_tol)
    return reach * (1.0 + 1e-9) + 1e-300


def _pair_by_rank(gold: Sequence[Sequence[Any]], pred: Sequence[Sequence[Any]],
                  gold_rows: list[int], pred_rows: list[int], numeric: list[int],
                  policy: ComparePolicy) -> bool:
    """Fast path for a group of rows that differ only by numeric noise: sort both sides on their
    numbers and check that the i-th rows match. True when every pair matches."""
    def order(rows: Sequence[Sequence[Any]], indices: list[int]) -> list[int]:
        return sorted(indices, key=lambda i: tuple(rows[i][j].approx for j in numeric))
    return all(
        all(values_match(gold[i][j], pred[k][j], policy) for j in numeric)
        for i, k in zip(order(gold, gold_rows), order(pred, pred_rows), strict=True)
    )


class _FreeSlots:
    """Positions 0..n-1, each free until taken; finds the first free one at or after a position
    in near-constant time (pointers to the next candidate, shortened on every lookup). Without
    it, rows whose windows overlap a run of taken positions rescan that run for every row:
    quadratic on values that straddle bucket boundaries (thousands of near-equal floats)."""

    __slots__ = ("_next",)

    def __init__(self, n: int) -> None:
        self._next = list(range(n + 1))  # position n: the sentinel "none left"

    def first_at_or_after(self, position: int) -> int:
        nxt = self._next
        root = position
        while nxt[root] != root:
            root = nxt[root]
        while nxt[position] != root:  # path compression
            nxt[position], position = root, nxt[position]
        return root

    def take(self, position: int) -> None:
        self._next[position] = position + 1


def pair_within_tolerance(gold: Sequence[Sequence[Any]], pred: Sequence[Sequence[Any]],
                          policy: ComparePolicy) -> tuple[list[int], list[int]]:
    """Pair gold rows with predicted rows equal under tolerance, as a multiset.

    Returns the indices (into ``gold`` and ``pred``) of the rows left unpaired.
    """
    pred_groups: dict[tuple[Any, ...], list[int]] = {}
    for k, row in enumerate(pred):
        pred_groups.setdefault(_signature(row), []).append(k)
    gold_groups: dict[tuple[Any, ...], list[int]] = {}
    for i, row in enumerate(gold):
        gold_groups.setdefault(_signature(row), []).append(i)

    unpaired_gold: list[int] = []
    used_pred: set[int] = set()
    for signature, gold_rows in gold_groups.items():
        candidates = pred_groups.get(signature)
        if not candidates:
            unpaired_gold.extend(gold_rows)
            continue
        numeric = [j for j, slot in enumerate(signature) if slot is _NUMBER_SLOT]
        if not numeric:
            # Identical non-numeric rows: pair them off one to one.
            paired = min(len(gold_rows), len(candidates))
            used_pred.update(candidates[:paired])
            unpaired_gold.extend(gold_rows[paired:])
            continue
        lead = numeric[0]
        if len(gold_rows) == len(candidates) and _pair_by_rank(gold, pred, gold_rows, candidates,
                                                               numeric, policy):
            used_pred.update(candidates)
            continue
        candidates = sorted(candidates, key=lambda k: pred[k][lead].approx)
        lead_values = [pred[k][lead].approx for k in candidates]
        free = _FreeSlots(len(candidates))
        for i in sorted(gold_rows, key=lambda i: gold[i][lead].approx):
            value = gold[i][lead].approx
            if math.isfinite(value):
                reach = _window(value, policy)
                lo, hi = bisect_left(lead_values, value - reach), bisect_right(lead_values, value + reach)
            else:
                lo, hi = bisect_left(lead_values, value), bisect_right(lead_values, value)
            pos = free.first_at_or_after(lo)
            while pos < hi and not rows_match(gold[i], pred[candidates[pos]], policy):
                pos = free.first_at_or_after(pos + 1)
            if pos < hi:
                free.take(pos)
                used_pred.add(candidates[pos])
            else:
                unpaired_gold.append(i)
    unpaired_pred = [k for k in range(len(pred)) if k not in used_pred]
    return sorted(unpaired_gold), unpaired_pred
