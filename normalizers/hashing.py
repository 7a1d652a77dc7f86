"""Multiset comparison of rows through 64-bit row hashes, sorted with numpy.

Each canonical key is hashed once (Python's ``hash``, which already agrees across 1, 1.0 and
Decimal('1')); a row's hash mixes its columns' hashes with vectorized integer arithmetic. Sorting
both sides' row hashes pairs equal rows without building tuples or dictionaries, which is where a
Counter of row tuples spends its time (every tuple is re-hashed on every lookup).

Hashes only propose pairs. A column's hash is chosen per aligned column pair (:func:`hash_plan`)
so that it is either injective (ints as int64, floats as their bits) or a keyed 64-bit SipHash
(Python's hash of str, bytes and dates), or else the proposed pairs are checked value by value in
that column: Python's numeric hash collides by design (hash(-1) == hash(-2)), and a collision must
never make different rows count as equal. If a check fails the caller falls back to exact
counting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any, Literal

import numpy as np

NoneType = type(None)
HashScheme = Literal["int64", "float64", "strong", "checked"]
#: key types whose Python hash is a keyed SipHash of their bytes: collisions are negligible
_STRONG_TYPES: frozenset[type] = frozenset({str, bytes, date, datetime, time})

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: spreads structured inputs (Python hashes of small ints are the
    ints themselves) over all 64 bits."""
    z = values + _GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


def _strict_int64(keys: Sequence[Any]) -> np.ndarray:
    # int.__index__ accepts ints (and bools, equal to 1/0 under the contract) and rejects floats,
    # None and anything else, so no value is silently converted.
    return np.fromiter(map(int.__index__, keys), dtype=np.int64, count=len(keys)).view(np.uint64)


def _strict_float64(keys: Sequence[Any]) -> np.ndarray:
    values = np.fromiter(map(float.__float__, keys), dtype=np.float64, count=len(keys))
    values[values == 0] = 0.0  # -0.0 and 0.0 are one key
    return values.view(np.uint64)


def _python_hashes(keys: Sequence[Any]) -> np.ndarray:
    return np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys)).view(np.uint64)


def hash_columns(columns: Sequence[Sequence[Any]],
                 key_types: Callable[[int], frozenset[type]]) -> tuple[HashScheme, list[np.ndarray]]:
    """Hash one aligned column on every side (``columns[i]`` is side i's keys) with one scheme.

    Injective schemes are tried first (each attempt stops at the first key that does not fit);
    ``key_types(i)`` gives side i's key types, asked for only when those fail.
    """
    for scheme, convert in (("int64", _strict_int64), ("float64", _strict_float64)):
        try:
            return scheme, [convert(keys) for keys in columns]  # type: ignore[return-value]
        except (TypeError, OverflowError):
            continue
    kinds = frozenset().union(*(key_types(i) for i in range(len(columns)))) - {NoneType}
    scheme: HashScheme = "strong" if len(kinds) <= 1 and kinds <= _STRONG_TYPES else "checked"
    return scheme, [_python_hashes(keys) for keys in columns]


def row_hashes(columns: Sequence[np.ndarray], height: int) -> np.ndarray:
    """Combine per-column hashes into one hash per row (column order matters)."""
    acc = np.zeros(height, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for hashed in columns:
            acc = _mix(acc ^ _mix(hashed))
    return acc


@dataclass(frozen=True, slots=True)
class HashSplit:
    """Rows proposed as pairs (``gold_paired[k]`` with ``pred_paired[k]``) and rows whose hash
    has no partner on the other side (``gold_surplus``, ``pred_surplus``)."""

    gold_paired: np.ndarray
    pred_paired: np.ndarray
    gold_surplus: np.ndarray
    pred_surplus: np.ndarray


def _keep_mask(sorted_hashes: np.ndarray, other_sorted: np.ndarray) -> np.ndarray:
    """For each sorted position, whether that row has a partner: within a run of equal hashes of
    length c, where the other side has c' rows of that hash, the first min(c, c') are kept."""
    if sorted_hashes.size == 0:
        return np.zeros(0, dtype=bool)
    starts = np.flatnonzero(np.r_[True, sorted_hashes[1:] != sorted_hashes[:-1]])
    run_values = sorted_hashes[starts]
    run_lengths = np.diff(np.r_[starts, sorted_hashes.size])
    lo = np.searchsorted(other_sorted, run_values, side="left")
    hi = np.searchsorted(other_sorted, run_values, side="right")
    allowed = np.minimum(run_lengths, hi - lo)
    run_of = np.repeat(np.arange(starts.size), run_lengths)
    rank = np.arange(sorted_hashes.size) - starts[run_of]
    return rank < allowed[run_of]


def split_by_hash(gold: np.ndarray, pred: np.ndarray) -> HashSplit:
    """Pair rows of equal hash as multisets (duplicates pair one to one)."""
    gold_order = np.argsort(gold, kind="stable")
    pred_order = np.argsort(pred, kind="stable")
    gold_sorted, pred_sorted = gold[gold_order], pred[pred_order]
    if gold_sorted.size == pred_sorted.size and np.array_equal(gold_sorted, pred_sorted):
        empty = np.zeros(0, dtype=np.intp)
        return HashSplit(gold_order, pred_order, empty, empty)
    gold_keep = _keep_mask(gold_sorted, pred_sorted)
    pred_keep = _keep_mask(pred_sorted, gold_sorted)
    return HashSplit(gold_order[gold_keep], pred_order[pred_keep],
                     np.sort(gold_order[~gold_keep]), np.sort(pred_order[~pred_keep]))


def pairs_equal(gold_columns: Sequence[Sequence[Any]], pred_columns: Sequence[Sequence[Any]],
                gold_rows: np.ndarray, pred_rows: np.ndarray) -> bool:
    """Whether every proposed pair of rows has equal keys in the given columns (pass only the
    columns whose hash scheme is "checked")."""
    if gold_rows.size == 0 or not gold_columns:
        return True
    # Walk the gold side in row order: when every row is paired that is the column itself, and
    # only the predicted side is gathered in random order.
    order = np.argsort(gold_rows, kind="stable")
    gold_index, pred_index = gold_rows[order].tolist(), pred_rows[order].tolist()
    whole = len(gold_index) == len(gold_columns[0])
    for gold_keys, pred_keys in zip(gold_columns, pred_columns, strict=True):
        gold_part = list(gold_keys) if whole else list(map(gold_keys.__getitem__, gold_index))
        if gold_part != list(map(pred_keys.__getitem__, pred_index)):
            return False
    return True
