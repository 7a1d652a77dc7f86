"""Compare two results' rows once their columns are aligned: as a bag, as a strict sequence, or
as a sequence of tie groups (rows tied on the ORDER BY keys form a small bag each).

Everything works on canonical row keys (tuples of per-column keys): a Counter comparison or a list
comparison decides the common case in C; only rows left over go through the per-value tolerance
pass, and only they are looked at one by one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress, groupby, repeat
from operator import ne
from typing import Any

from polysql.normalizers.describe import format_row, format_value, plural, row_span
from polysql.normalizers.policy import ComparePolicy
from polysql.normalizers.tolerance import first_difference, pair_within_tolerance, rows_match
from polysql.normalizers.values import Reading, fine_value

#: examples of differing rows quoted in a reason
EXAMPLES = 1


@dataclass(slots=True)
class Side:
    """One result's rows, restricted to the aligned columns, in gold column order."""

    label: str
    raw: list[Sequence[Any]]  # raw values per aligned column
    keys: list[list[Any]]  # canonical keys per aligned column
    reading: list[Reading]
    policy: ComparePolicy
    height: int
    _key_rows: list[tuple[Any, ...]] | None = field(default=None, repr=False)

    def key_rows(self) -> list[tuple[Any, ...]]:
        if self._key_rows is None:
            self._key_rows = list(zip(*self.keys, strict=True)) if self.keys else [()] * self.height
        return self._key_rows

    def raw_row(self, i: int) -> tuple[Any, ...]:
        return tuple(column[i] for column in self.raw)

    def fine_row(self, i: int) -> tuple[Any, ...]:
        return tuple(fine_value(column[i], self.policy, reading)
                     for column, reading in zip(self.raw, self.reading, strict=True))


@dataclass(slots=True)
class RowOutcome:
    match: bool
    reason: str
    tolerance_pairs: int = 0


def _surplus(mine: dict[Any, int], theirs: dict[Any, int]) -> dict[Any, int]:
    """Keys counted more often in ``mine`` than in ``theirs``, with the excess.

    The scan over all keys runs in C (compress/map); only differing keys reach Python.
    """
    differing = compress(mine, map(ne, mine.values(), map(theirs.get, mine, repeat(0))))
    return {key: mine[key] - theirs.get(key, 0) for key in differing
            if mine[key] > theirs.get(key, 0)}


def _positions_of(keys: Sequence[Any], surplus: dict[Any, int]) -> list[int]:
    """Positions of the rows whose key is in ``surplus`` (as many as it counts)."""
    if not surplus:
        return []
    wanted = dict(surplus)
    out: list[int] = []
    # compress() scans every row in C; the Python loop sees only rows with a surplus key.
    for i in compress(range(len(keys)), map(wanted.__contains__, keys)):
        left = wanted[keys[i]]
        if left:
            out.append(i)
            wanted[keys[i]] = left - 1
    return out


def unmatched(gold_keys: Sequence[Any], pred_keys: Sequence[Any],
              gold_fine: Callable[[int], tuple[Any, ...]],
              pred_fine: Callable[[int], tuple[Any, ...]],
              policy: ComparePolicy) -> tuple[list[int], list[int], int]:
    """Multiset difference of two key lists, with the tolerance pass on the residue.

    Returns (unpaired gold positions, unpaired predicted positions, pairs made by tolerance).
    """
    gold_count, pred_count = Counter(gold_keys), Counter(pred_keys)
    # dict equality runs in C; Counter.__eq__ is a Python loop (and both hold positive counts only)
    if dict.__eq__(gold_count, pred_count):
        return [], [], 0
    gold_left = _positions_of(gold_keys, _surplus(gold_count, pred_count))
    pred_left = _positions_of(pred_keys, _surplus(pred_count, gold_count))
    if not gold_left or not pred_left:
        return gold_left, pred_left, 0
    gold_rows = [gold_fine(i) for i in gold_left]
    pred_rows = [pred_fine(k) for k in pred_left]
    lone_gold, lone_pred = pair_within_tolerance(gold_rows, pred_rows, policy)
    paired = len(gold_left) - len(lone_gold)
    return [gold_left[i] for i in lone_gold], [pred_left[k] for k in lone_pred], paired


def _count_reason(gold: Side, pred: Side) -> str:
    return f"gold has {plural(gold.height, 'row')}, predicted {pred.height}"


def _difference_reason(gold: Side, pred: Side, gold_left: list[int], pred_left: list[int]) -> str:
    parts = []
    if gold_left:
        parts.append(f"{plural(len(gold_left), 'gold row')} missing from prediction, "
                     f"e.g. {format_row(gold.raw_row(gold_left[0]))}")
    if pred_left:
        parts.append(f"{plural(len(pred_left), 'predicted row')} not in gold, "
                     f"e.g. {format_row(pred.raw_row(pred_left[0]))}")
    return "; ".join(parts)


def compare_bag(gold: Side, pred: Side) -> RowOutcome:
    """Rows as a multiset: duplicates count, order does not."""
    gold_left, pred_left, paired = unmatched(gold.key_rows(), pred.key_rows(), gold.fine_row,
                                             pred.fine_row, gold.policy)
    if not gold_left and not pred_left:
        how = " (some numbers within tolerance)" if paired else ""
        return RowOutcome(True, f"same {plural(gold.height, 'row')} as a bag{how}", paired)
    prefix = _count_reason(gold, pred) + "; " if gold.height != pred.height else ""
    return RowOutcome(False, prefix + _difference_reason(gold, pred, gold_left, pred_left), paired)


def _column_name(names: Sequence[str], j: int) -> str:
    return repr(names[j]) if j < len(names) else str(j + 1)


def _row_difference(gold: Side, pred: Side, i: int, k: int, names: Sequence[str]) -> str:
    """'row 3 differs at column 'total': gold 12.5, predicted 12.49'."""
    gold_row, pred_row = gold.fine_row(i), pred.fine_row(k)
    j = first_difference(gold_row, pred_row, gold.policy)
    if j is None:
        return f"{row_span(i, i)} differs"
    return (f"{row_span(i, i)} differs at column {_column_name(names, j)}: "
            f"gold {format_value(gold.raw[j][i])}, predicted {format_value(pred.raw[j][k])}")


def compare_sequence(gold: Side, pred: Side, names: Sequence[str]) -> RowOutcome:
    """Rows in exactly the gold's order."""
    if gold.height != pred.height:
        return RowOutcome(False, _count_reason(gold, pred))
    gold_keys, pred_keys = gold.key_rows(), pred.key_rows()
    if gold_keys == pred_keys:
        return RowOutcome(True, f"same {plural(gold.height, 'row')} in the same order")
    paired = 0
    for i, (a, b) in enumerate(zip(gold_keys, pred_keys, strict=True)):
        if a == b:
            continue
        if rows_match(gold.fine_row(i), pred.fine_row(i), gold.policy):
            paired += 1
            continue
        return RowOutcome(False, _order_hint(gold, pred) + _row_difference(gold, pred, i, i, names),
                          paired)
    return RowOutcome(True, f"same {plural(gold.height, 'row')} in the same order "
                            "(some numbers within tolerance)", paired)


def _order_hint(gold: Side, pred: Side) -> str:
    """'same rows, different order: ' when the bags agree, so the reader knows what to look at."""
    gold_left, pred_left, _ = unmatched(gold.key_rows(), pred.key_rows(), gold.fine_row,
                                        pred.fine_row, gold.policy)
    return "same rows but in a different order; " if not gold_left and not pred_left else ""


def tie_groups(gold: Side, key_columns: Sequence[int]) -> list[int]:
    """Group number of each gold row: consecutive rows equal on the ORDER BY key columns."""
    keys = list(zip(*(gold.keys[j] for j in key_columns), strict=True)) if key_columns \
        else [()] * gold.height
    groups: list[int] = []
    for number, (_, run) in enumerate(groupby(keys)):
        groups.extend([number] * sum(1 for _ in run))
    return groups


def compare_tie_groups(gold: Side, pred: Side, key_columns: Sequence[int],
                       names: Sequence[str]) -> RowOutcome:
    """Rows in the gold's order, except that rows tied on the ORDER BY keys may be permuted."""
    if gold.height != pred.height:
        return RowOutcome(False, _count_reason(gold, pred))
    gold_keys, pred_keys = gold.key_rows(), pred.key_rows()
    if gold_keys == pred_keys:
        return RowOutcome(True, f"same {plural(gold.height, 'row')} in the same order")
    groups = tie_groups(gold, key_columns)
    # Tag every row with its group: then "same bag per group" is one multiset comparison.
    gold_tagged = list(zip(groups, gold_keys, strict=True))
    pred_tagged = list(zip(groups, pred_keys, strict=True))
    gold_left, pred_left, paired = unmatched(
        gold_tagged, pred_tagged,
        lambda i: (groups[i], *gold.fine_row(i)), lambda k: (groups[k], *pred.fine_row(k)),
        gold.policy)
    if not gold_left and not pred_left:
        how = " (some numbers within tolerance)" if paired else ""
        return RowOutcome(True, f"same {plural(gold.height, 'row')} in ORDER BY order, "
                                f"ties in any order{how}", paired)
    first = min(gold_left + pred_left)
    group = groups[first]
    start = groups.index(group)
    end = start
    while end + 1 < len(groups) and groups[end + 1] == group:
        end += 1
    hint = _order_hint(gold, pred)
    if start == end:
        return RowOutcome(False, hint + _row_difference(gold, pred, start, start, names), paired)
    missing = [i for i in gold_left if groups[i] == group]
    example = format_row(gold.raw_row(missing[0])) if missing else \
        format_row(pred.raw_row(next(k for k in pred_left if groups[k] == group)))
    what = "gold row" if missing else "predicted row"
    where = "not among the predicted" if missing else "not among the gold"
    return RowOutcome(False, f"{hint}{row_span(start, end)} (tied on the ORDER BY keys) differ: "
                             f"{what} {example} is {where} {row_span(start, end)}", paired)
