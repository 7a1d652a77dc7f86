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
from decimal import Decimal
from typing import Any

import numpy as np

from polysql.core.columnar import values_at
from polysql.normalizers.hashing import group_order, row_hashes
from polysql.normalizers.rows import side_difference
from polysql.normalizers.side import Side
from polysql.normalizers.values import as_float, column_types

#: relative difference up to which differing numbers count as drift rather than a wrong number
DRIFT_RELATIVE = 0.01

SHAPES = ("columns", "row_count", "order", "numeric_drift", "numbers", "values")
_NUMBER_TYPES: frozenset[type] = frozenset({int, float, Decimal})


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def _all_numbers(values: list[Any]) -> bool:
    # the types first: one C-level pass for the usual columns of plain ints, floats, Decimals
    return column_types(values) <= _NUMBER_TYPES or all(map(_is_number, values))


def _floats(values: list[Any]) -> np.ndarray:
    """Numbers as float64; an integer beyond floats is infinite (then the shape is "values")."""
    try:
        return np.array(values, dtype=np.float64)
    except OverflowError:
        return np.fromiter(map(as_float, values), dtype=np.float64, count=len(values))


def _numbers_at(side: Side, j: int, rows: list[int], at: np.ndarray) -> np.ndarray | None:
    """Column ``j``'s values at ``rows`` (``at``, as an array) as float64 when every one is a
    number, else None. A column of floats, or of ints hashed as themselves, is read off the
    arrays the comparison already holds instead of its Python values (a NaN is a number here)."""
    parts = side.floats_at(j, at) or side.ints_at(j, at)
    if parts is not None:
        values, nulls = parts
        return None if nulls is not None else values.astype(np.float64, copy=False)
    values = side.raw_values(j, rows)
    return _floats(values) if _all_numbers(values) else None


def _largest_relative(x: np.ndarray, y: np.ndarray) -> float:
    """The largest relative difference between paired numbers: 0 for equal ones (two NaNs
    included), infinite against a NaN or an infinity."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        scale = np.maximum(np.abs(x), np.abs(y))
        relative = np.where(scale > 0, np.abs(x - y) / scale, 0.0)
    relative = np.where(np.isnan(relative), np.inf, relative)  # an infinity against another number
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    relative = np.where((x == y) | (nan_x & nan_y), 0.0, np.where(nan_x | nan_y, np.inf, relative))
    return float(relative.max(initial=0.0))


def mismatch_shape(gold: Side, pred: Side,
                   difference: tuple[list[int], list[int]] | None = None) -> tuple[str, float | None]:
    """The shape of a mismatch between two aligned sides, and for ``numeric_drift`` and
    ``numbers`` the largest relative difference between paired numbers. ``difference``: the
    sides' unpaired (gold, predicted) rows as a bag, when the comparison already has them."""
    if gold.height != pred.height:
        return "row_count", None
    gold_left, pred_left = difference if difference is not None else side_difference(gold, pred)[:2]
    if not gold_left and not pred_left:
        return "order", None
    return _numeric_difference(gold, pred, gold_left, pred_left)


def _numeric_difference(gold: Side, pred: Side, gold_left: list[int],
                        pred_left: list[int]) -> tuple[str, float | None]:
    """Pair the leftover rows by their non-numeric columns; when every pair differs only in
    numbers, the rows are the same rows with different numbers. Vectorized: a wrong prediction
    can leave a million rows here."""
    if len(gold_left) != len(pred_left):
        return "values", None
    gold_rows, pred_rows = np.asarray(gold_left, dtype=np.intp), np.asarray(pred_left, dtype=np.intp)
    numeric, others = [], []
    gold_numbers, pred_numbers = [], []
    for j in range(len(gold.raw)):
        gold_column = _numbers_at(gold, j, gold_left, gold_rows)
        pred_column = None if gold_column is None else _numbers_at(pred, j, pred_left, pred_rows)
        if pred_column is None:
            others.append(j)
            continue
        numeric.append(j)
        gold_numbers.append(gold_column)
        pred_numbers.append(pred_column)
    if not numeric:
        return "values", None
    # Rows grouped by their other columns' hashes (equal keys, equal hashes), then sorted by
    # their numbers within each group: sorting both sides pairs nearest rows well enough for a
    # label; it is not a verdict.
    gold_groups = row_hashes([gold.hashes[j][gold_rows] for j in others], gold_rows.size)
    pred_groups = row_hashes([pred.hashes[j][pred_rows] for j in others], pred_rows.size)
    gold_order = group_order(gold_groups, gold_numbers)
    pred_order = group_order(pred_groups, pred_numbers)
    if not np.array_equal(gold_groups[gold_order], pred_groups[pred_order]):
        return "values", None  # other values, or as many rows of them on each side
    for j in others:  # hashes that can collide: the paired keys themselves must agree
        if gold.schemes[j] == "checked":  # the other schemes are injective (or SipHash)
            gold_keys, pred_keys = gold.keys_to_pick(j), pred.keys_to_pick(j)
            if values_at(gold_keys, gold_rows[gold_order].tolist()) != \
                    values_at(pred_keys, pred_rows[pred_order].tolist()):
                return "values", None
    worst = max(_largest_relative(g[gold_order], p[pred_order])
                for g, p in zip(gold_numbers, pred_numbers, strict=True))
    if math.isinf(worst):
        return "values", None
    return ("numeric_drift" if worst <= DRIFT_RELATIVE else "numbers"), worst
