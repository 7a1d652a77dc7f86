"""The tolerance pairing on its worst case: many near-equal numbers whose windows all overlap.

Timing is not asserted (benchmarks/compare_bench.py prints the growth ratio); the work is: how
many row comparisons the pairing makes must grow linearly with the rows, where a rescan of taken
rows made it grow with their square."""

from __future__ import annotations

import pytest

from polysql.normalizers import tolerance
from polysql.normalizers.policy import ComparePolicy
from polysql.normalizers.values import Number

POLICY = ComparePolicy()


def straddling(n: int, offset: float) -> list[tuple[Number, str]]:
    """n rows of one label and a float that differs from its neighbours by far less than the
    tolerance: every row's window holds every other row."""
    return [(Number(1.0 + offset + k * 1e-15, None), "x") for k in range(n)]


@pytest.mark.parametrize("n", [500, 5000])
def test_overlapping_windows_cost_linear_work(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both the row comparisons and the candidate positions looked at stay within a few per row
    (a scan over taken positions looked at n*n/2 of them)."""
    compared = looked_at = 0
    real_match, real_first = tolerance.rows_match, tolerance._FreeSlots.first_at_or_after

    def counted_match(a: object, b: object, policy: ComparePolicy) -> bool:
        nonlocal compared
        compared += 1
        return real_match(a, b, policy)  # type: ignore[arg-type]

    def counted_first(self: tolerance._FreeSlots, position: int) -> int:
        nonlocal looked_at
        looked_at += 1
        return real_first(self, position)

    monkeypatch.setattr(tolerance, "rows_match", counted_match)
    monkeypatch.setattr(tolerance._FreeSlots, "first_at_or_after", counted_first)
    gold = straddling(n, 0.0)
    pred = straddling(n + 1, 1e-12)  # one row more: the rank fast path cannot settle the group
    unpaired_gold, unpaired_pred = tolerance.pair_within_tolerance(gold, pred, POLICY)
    assert unpaired_gold == [] and len(unpaired_pred) == 1
    assert compared <= 2 * n, compared
    assert looked_at <= 3 * n, looked_at


def test_a_free_row_that_differs_in_another_column_is_passed_over_not_lost() -> None:
    gold = [(Number(1.0, None), Number(5.0, None)), (Number(1.0, None), Number(7.0, None))]
    pred = [(Number(1.0, None), Number(7.0, None)), (Number(1.0, None), Number(5.0, None)),
            (Number(1.0, None), Number(9.0, None))]
    unpaired_gold, unpaired_pred = tolerance.pair_within_tolerance(gold, pred, POLICY)
    assert unpaired_gold == [] and unpaired_pred == [2]


def test_free_slots_skip_taken_runs() -> None:
    slots = tolerance._FreeSlots(5)
    for position in (1, 2, 3):
        slots.take(position)
    assert slots.first_at_or_after(1) == 4
    assert slots.first_at_or_after(0) == 0
    slots.take(4)
    assert slots.first_at_or_after(2) == 5  # none left
