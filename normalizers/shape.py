"""What kind of wrong a mismatch is, in a word, for error analysis.

The verdict reason says in prose where two results first differ; analysis needs a label it can
count. :func:`mismatch_shape` looks at the two aligned sides of a failed comparison once more (it
runs only for mismatches, so its cost does not touch the common path) and names the shape:

``row_count``      the results have different numbers of rows;
``order``          the same rows (as a bag) in an order the gold's ORDER BY does not allow;
``numeric_drift``  the same rows except for numbers that differ by at most
                   :data:`DRIFT_RELATIVE` (rounding, float precision, AVG scale);
``numbers``        the same rows except for numbers that differ by more (integer division, a
                   wrong aggregate);
``values``         anything else: different rows.

``columns`` (no alignment at all) is decided by the caller, which knows when alignment failed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from decimal import Decimal
from typing import Any

from polysql.normalizers.rows import side_difference
from polysql.normalizers.side import Side
from polysql.normalizers.values import as_float

#: relative difference up to which differing numbers count as drift rather than a wrong number
DRIFT_RELATIVE = 0.01

SHAPES = ("columns", "row_count", "order", "numeric_drift", "numbers", "values")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def _relative(a: Any, b: Any) -> float:
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return 0.0 if math.isnan(x) and math.isnan(y) else math.inf
    scale = max(abs(x), abs(y))
    return abs(x - y) / scale if scale else 0.0


def mismatch_shape(gold: Side, pred: Side) -> tuple[str, float | None]:
    """The shape of a mismatch between two aligned sides, and for ``numeric_drift`` and
    ``numbers`` the largest relative difference between paired numbers."""
    if gold.height != pred.height:
        return "row_count", None
    gold_left, pred_left, _ = side_difference(gold, pred)
    if not gold_left and not pred_left:
        return "order", None
    return _numeric_difference(gold, pred, gold_left, pred_left)


def _numeric_difference(gold: Side, pred: Side, gold_left: list[int],
                        pred_left: list[int]) -> tuple[str, float | None]:
    """Pair the leftover rows by their non-numeric columns; when every pair differs only in
    numbers, the rows are the same rows with different numbers."""
    if len(gold_left) != len(pred_left):
        return "values", None
    width = len(gold.raw)
    numeric = [j for j in range(width)
               if all(_is_number(gold.raw[j][i]) for i in gold_left)
               and all(_is_number(pred.raw[j][i]) for i in pred_left)]
    if not numeric:
        return "values", None
    others = [j for j in range(width) if j not in numeric]

    def grouped(side: Side, positions: list[int]) -> dict[tuple[Any, ...], list[tuple[float, ...]]]:
        groups: dict[tuple[Any, ...], list[tuple[float, ...]]] = defaultdict(list)
        for i in positions:
            key = tuple(side.keys_to_pick(j)[i] for j in others)
            # an integer beyond floats is infinite here (then the shape is plain "values")
            groups[key].append(tuple(as_float(side.raw[j][i]) for j in numeric))
        return groups

    gold_groups, pred_groups = grouped(gold, gold_left), grouped(pred, pred_left)
    if gold_groups.keys() != pred_groups.keys():
        return "values", None
    worst = 0.0
    for key, gold_numbers in gold_groups.items():
        pred_numbers = pred_groups[key]
        if len(gold_numbers) != len(pred_numbers):
            return "values", None
        # Sorting both sides pairs nearest rows well enough for a label; it is not a verdict.
        for g, p in zip(sorted(gold_numbers), sorted(pred_numbers), strict=True):
            worst = max([worst, *(_relative(a, b) for a, b in zip(g, p, strict=True))])
    if math.isinf(worst):
        return "values", None
    return ("numeric_drift" if worst <= DRIFT_RELATIVE else "numbers"), worst
