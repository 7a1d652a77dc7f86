"""Multiset comparison of rows through 64-bit row hashes, sorted with numpy.

Each canonical key is hashed once (Python's ``hash``, which already agrees across 1, 1.0 and
Decimal('1')); a row's hash mixes its columns' hashes with vectorized integer arithmetic. Sorting
both sides' row hashes pairs equal rows without building tuples or dictionaries, which is where a
Counter of row tuples spends its time (every tuple is re-hashed on every lookup).

A column's hash is chosen per aligned column pair (:func:`hash_columns`) so that it is either
injective (ints as int64, floats as their bits, NULL as a value no key takes) or a keyed 64-bit
SipHash (Python's hash of str, bytes and dates); any other column ("checked") has its proposed
pairs compared value by value, because Python's numeric hash collides by design
(hash(-1) == hash(-2)). If a check fails the caller falls back to exact counting. Two different
rows could still mix to the same 64-bit row hash (about (gold rows x predicted rows) / 2**64, 5e-8
for two million-row results); a second, differently built checksum summed over the paired rows
catches that too, again falling back to exact counting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from itertools import compress, repeat
from operator import is_not
from typing import Any, Literal

import numpy as np

from polysql.core.columnar import ArrowColumn
from polysql.normalizers.values import BLOCK, EXACT_FLOAT_INT, FloatKeys, materialize

NoneType = type(None)
HashScheme = Literal["int64", "float64", "strong", "checked"]
#: key types whose Python hash is a keyed SipHash of their bytes: collisions are negligible
_STRONG_TYPES: frozenset[type] = frozenset({str, bytes, date, datetime, time})

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
#: what NULL hashes to in an int64 column (a key equal to it sends the column to Python's hash)
NULL_INT = np.int64(-(2**63))
#: what NULL hashes to in a float64 column: a NaN pattern, and NaN keys never reach the bits
_NULL_FLOAT_BITS = np.uint64(0x7FF8_0000_0000_0A11)
#: odd 64-bit multipliers for the checksum (odd: multiplication by them is invertible mod 2**64)
_CHECK_MULTIPLIERS = (0x2545F4914F6CDD1D, 0x5851F42D4C957F2D, 0x14057B7EF767814F,
                      0x9E3779B97F4A7C15)


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: spreads structured inputs (Python hashes of small ints are the
    ints themselves) over all 64 bits."""
    z = values + _GOLDEN
    # In place on the one fresh array: half the temporaries of the textbook expression.
    z ^= z >> _S30
    z *= _MIX1
    z ^= z >> _S27
    z *= _MIX2
    z ^= z >> _S31
    return z


def _float_bits(values: np.ndarray, nulls: np.ndarray | None = None) -> np.ndarray:
    bits = np.where(values == 0, 0.0, values).view(np.uint64)  # -0.0 and 0.0 are one key
    if nulls is not None:
        # Arrays reach here only without NaN keys (those are patched), so a NaN bit pattern is
        # free to stand for NULL.
        bits[nulls] = _NULL_FLOAT_BITS
    return bits


def _int_array(keys: Sequence[Any], nullable: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Int (or bool) keys as int64, and the NULL mask when ``nullable`` (NULL slots hold 0).
    OverflowError beyond 64 bits."""
    parts = keys.int_parts() if isinstance(keys, ArrowColumn) else None
    if parts is not None:  # an Arrow integer column: its buffer, no Python int per value
        values, nulls = parts
        if nullable and nulls is None:
            nulls = np.zeros(values.size, dtype=bool)
        return values, nulls if nullable else None
    # fromiter reads Python ints about 1.3x as fast as np.array (measured); both refuse ints
    # beyond 64 bits with OverflowError. Both passes below only iterate (a rows column streams).
    if not nullable:
        return np.fromiter(keys, dtype=np.int64, count=len(keys)), None
    present = list(map(is_not, keys, repeat(None)))
    mask = np.array(present, dtype=bool)
    values = np.zeros(len(keys), dtype=np.int64)
    values[mask] = np.fromiter(compress(keys, present), dtype=np.int64)
    return values, ~mask


def _int_bits(keys: Sequence[Any], nullable: bool) -> np.ndarray | None:
    """Int keys as their int64 bits; NULL as the most negative int64, unless some key is that
    very number (then None: the column is hashed the general way). OverflowError beyond 64 bits."""
    values, nulls = _int_array(keys, nullable)
    if nulls is not None:
        if np.any((values == NULL_INT) & ~nulls):
            return None
        values[nulls] = NULL_INT
    return values.view(np.uint64)


def _int_floats(keys: Sequence[Any], nullable: bool) -> tuple[np.ndarray, np.ndarray | None] | None:
    """Int keys as float64 (and NULL mask), when every one converts exactly: an int key then
    equals a float key exactly when their floats are equal, so both hash as float bits."""
    try:
        values, nulls = _int_array(keys, nullable)
    except OverflowError:
        return None
    if np.any((values >= EXACT_FLOAT_INT) | (values <= -EXACT_FLOAT_INT)):
        return None
    return values.astype(np.float64), nulls


def _python_hashes(keys: Sequence[Any]) -> np.ndarray:
    return np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys)).view(np.uint64)


def _float_parts(keys: Sequence[Any]) -> tuple[np.ndarray, np.ndarray | None] | None:
    return keys.nullable_array if isinstance(keys, FloatKeys) else None


def hash_columns(columns: Sequence[Sequence[Any]],
                 key_types: Callable[[int], frozenset[type]]) -> tuple[HashScheme, list[np.ndarray]]:
    """Hash one aligned column on every side (``columns[i]`` is side i's keys) with one scheme.

    Injective schemes come first: float keys that arrive with their float64 array (and NULL
    mask), joined by int keys that are exact as floats; then columns whose keys are all ints
    (``key_types(i)`` gives side i's key types) or all floats, NULLs allowed among the ints.
    """
    parts = [_float_parts(keys) for keys in columns]
    if any(part is not None for part in parts):
        # Float arrays on some sides: ints elsewhere join them as exact floats (int vs double
        # columns across engines), so the column keeps an injective hash.
        for i, keys in enumerate(columns):
            if parts[i] is None and key_types(i) - {NoneType} <= {int, bool}:
                parts[i] = _int_floats(keys, NoneType in key_types(i))
        if all(part is not None for part in parts):
            return "float64", [_float_bits(*part) for part in parts]  # type: ignore[misc]
    types = frozenset().union(*(key_types(i) for i in range(len(columns))))
    kinds = types - {NoneType}
    if kinds and kinds <= {int, bool}:
        try:
            bits = [_int_bits(keys, NoneType in types) for keys in columns]
        except OverflowError:
            bits = [None]  # integers beyond 64 bits: Python's hash, with checks
        if all(b is not None for b in bits):
            return "int64", bits  # type: ignore[return-value]
    if types == {float}:
        return "float64", [_float_bits(np.array(materialize(keys), dtype=np.float64).reshape(-1))
                           for keys in columns]
    scheme: HashScheme = "strong" if len(kinds) <= 1 and kinds <= _STRONG_TYPES else "checked"
    return scheme, [_python_hashes(keys) for keys in columns]


def row_hashes(columns: Sequence[np.ndarray], height: int) -> np.ndarray:
    """Combine per-column hashes into one hash per row (column order matters)."""
    out = np.zeros(height, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for start in range(0, height, BLOCK):
            acc = out[start:start + BLOCK]
            for hashed in columns:
                mixed = _mix(hashed[start:start + BLOCK])
                mixed ^= acc
                acc = _mix(mixed)
            out[start:start + BLOCK] = acc
    return out


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
    run_values, starts, run_lengths = runs(sorted_hashes)
    lo = np.searchsorted(other_sorted, run_values, side="left")
    hi = np.searchsorted(other_sorted, run_values, side="right")
    allowed = np.minimum(run_lengths, hi - lo)
    run_of = np.repeat(np.arange(starts.size), run_lengths)
    rank = np.arange(sorted_hashes.size) - starts[run_of]
    return rank < allowed[run_of]


def split_by_hash(gold: np.ndarray, pred: np.ndarray) -> HashSplit:
    """Pair rows of equal hash as multisets (duplicates pair one to one)."""
    gold_order, pred_order = stable_argsort(gold), stable_argsort(pred)
    gold_sorted, pred_sorted = gold[gold_order], pred[pred_order]
    if gold_sorted.size == pred_sorted.size and np.array_equal(gold_sorted, pred_sorted):
        empty = np.zeros(0, dtype=np.intp)
        return HashSplit(gold_order, pred_order, empty, empty)
    gold_keep = _keep_mask(gold_sorted, pred_sorted)
    pred_keep = _keep_mask(pred_sorted, gold_sorted)
    return HashSplit(gold_order[gold_keep], pred_order[pred_keep],
                     np.sort(gold_order[~gold_keep]), np.sort(pred_order[~pred_keep]))


def stable_argsort(values: np.ndarray) -> np.ndarray:
    """What ``np.argsort(values, kind="stable")`` gives (equal values in row order), from
    numpy's default sort -- about four times faster on a million 64-bit hashes -- with only the
    rows of repeated values put back in row order."""
    order = np.argsort(values)
    ordered = values[order]
    tied = _tied(ordered)
    if tied is not None:
        # (run, row) as one int64 per tied row: one plain sort puts each run's rows in order
        run = np.cumsum(np.r_[True, ordered[1:] != ordered[:-1]])[tied]
        order[tied] = np.sort(run * order.size + order[tied]) % order.size
    return order


def _tied(ordered: np.ndarray) -> np.ndarray | None:
    """Per position of a sorted array: whether its value repeats; None when none does."""
    if ordered.size < 2:
        return None
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return None
    tied = np.zeros(ordered.size, dtype=bool)
    tied[1:] = same
    tied[:-1] |= same
    return tied


def group_order(groups: np.ndarray, numbers: Sequence[np.ndarray]) -> np.ndarray:
    """Row order by group hash, then by ``numbers`` (first array first) within a group, then by
    row: what ``np.lexsort([*reversed(numbers), groups])`` gives. One plain sort of the hashes
    places every group; only the rows of groups holding several are sorted by their numbers."""
    order = np.argsort(groups)
    tied = _tied(groups[order])
    if tied is None:
        return order
    # The tied positions hold the repeated groups in ascending group order; their rows, taken
    # in row order and lexsorted (stable), fill those positions in the same group sequence.
    rows = np.sort(order[tied])
    order[tied] = rows[np.lexsort([*(n[rows] for n in reversed(numbers)), groups[rows]])]
    return order


def runs(sorted_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct values of a sorted array, where each first occurs and how often."""
    if sorted_values.size == 0:
        empty = np.zeros(0, dtype=np.intp)
        return sorted_values, empty, empty
    first = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    return sorted_values[first], first, np.diff(np.r_[first, sorted_values.size])


def row_checksums(columns: Sequence[np.ndarray], height: int) -> np.ndarray:
    """A second per-row hash, built differently from :func:`row_hashes` (a weighted sum of the
    column hashes): two different rows that collide in one are very unlikely to collide in both."""
    acc = np.zeros(height, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j, hashed in enumerate(columns):
            acc += (hashed ^ np.uint64(j + 1)) * np.uint64(_CHECK_MULTIPLIERS[j % 4])
    return acc


def same_paired_rows(gold_checks: np.ndarray, pred_checks: np.ndarray,
                     gold_surplus: np.ndarray, pred_surplus: np.ndarray) -> bool:
    """Whether the rows paired by row hash (all but the surplus) also agree on their checksums,
    compared as wrapping sums; a difference exposes a row-hash collision."""
    with np.errstate(over="ignore"):
        gold_sum = gold_checks.sum(dtype=np.uint64) - gold_checks[gold_surplus].sum(dtype=np.uint64)
        pred_sum = pred_checks.sum(dtype=np.uint64) - pred_checks[pred_surplus].sum(dtype=np.uint64)
    return bool(gold_sum == pred_sum)


def _surplus_rows(hashes: np.ndarray, runs: tuple[np.ndarray, np.ndarray],
                  other_runs: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Rows (in row order) whose hash occurs more often here than on the other side: for a hash
    with c rows here and c' there, its first c - c' rows."""
    run_values, run_lengths = runs
    other_values, other_lengths = other_runs
    if run_values.size == 0:
        return np.zeros(0, dtype=np.intp)
    there = np.zeros(run_values.size, dtype=np.intp)
    if other_values.size:
        at = np.minimum(np.searchsorted(other_values, run_values), other_values.size - 1)
        found = other_values[at] == run_values
        there[found] = other_lengths[at[found]]
    excess = run_lengths - there
    if not there.any():
        # The other side holds none of these hashes (a plainly different result): every row.
        return np.arange(hashes.size, dtype=np.intp)
    values, counts = run_values[excess > 0], excess[excess > 0]
    if values.size == 0:
        return np.zeros(0, dtype=np.intp)
    if values.size * 16 > hashes.size:
        # Many surplus hashes (a largely different result): one stable sort of the rows finds
        # them faster than a lookup per row.
        order = stable_argsort(hashes)
        run_of = np.repeat(np.arange(run_values.size), run_lengths)
        rank = np.arange(hashes.size) - (np.cumsum(run_lengths) - run_lengths)[run_of]
        surplus = np.zeros(hashes.size, dtype=bool)
        surplus[order[rank < np.maximum(excess, 0)[run_of]]] = True
        return np.flatnonzero(surplus)  # row order, without sorting the positions
    rows = _rows_holding(hashes, values)
    if rows.size == counts.sum():
        return rows  # every row of those hashes is surplus (the other side has none of them)
    # Keep, per hash value, only its first `excess` rows.
    order = stable_argsort(hashes[rows])
    by_value = hashes[rows][order]
    first = np.searchsorted(by_value, by_value, side="left")
    rank = np.arange(by_value.size) - first
    allowed = counts[np.searchsorted(values, by_value)]
    return np.sort(rows[order][rank < allowed])


def _rows_holding(hashes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Positions, ascending, of the rows whose hash is one of ``values`` (sorted, distinct).

    A table indexed by the hashes' low bits (row hashes are well mixed) rules out nearly every
    row in one gather, and only the few candidates are binary-searched: np.isin would sort all
    rows again, and a binary search of every row costs several times the gather.
    """
    bits = min(24, max(10, int(values.size).bit_length() + 6))
    low = np.uint64((1 << bits) - 1)
    table = np.zeros(1 << bits, dtype=bool)
    table[(values & low).astype(np.intp)] = True
    candidates = np.flatnonzero(table[(hashes & low).astype(np.intp)])
    found = hashes[candidates]
    at = np.minimum(np.searchsorted(values, found), values.size - 1)
    return candidates[values[at] == found]


#: below this many rows a side is sorted whole: the bucket digests cost more than they save
_BUCKETS_FROM = 1 << 12
#: a bucket's sums of 32-bit halves stay exact in float64 up to 2**21 rows; a bucket fuller than
#: that (a result of one repeated row) sends the comparison to the whole sort
_BUCKET_ROWS_MAX = 1 << 21
_LOW32 = np.uint64(0xFFFF_FFFF)
_S32 = np.uint64(32)


def _bucket_digests(hashes: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Each row's bucket (the low ``bits`` of its hash) and, per bucket, its row count and two
    sums of 32-bit halves of the re-mixed hashes; None when a bucket is too full to sum exactly."""
    buckets = (hashes & np.uint64((1 << bits) - 1)).astype(np.intp)
    counts = np.bincount(buckets, minlength=1 << bits)
    if counts.max(initial=0) > _BUCKET_ROWS_MAX:
        return None
    with np.errstate(over="ignore"):
        remixed = _mix(hashes ^ _MIX2)
    low = np.bincount(buckets, weights=(remixed & _LOW32).astype(np.float64), minlength=1 << bits)
    high = np.bincount(buckets, weights=(remixed >> _S32).astype(np.float64), minlength=1 << bits)
    return buckets, np.stack([counts.astype(np.float64), low, high])


def surplus_by_hash(gold: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of each side whose hash the other side lacks (as multisets), without pairing the
    rest: enough when every column's hash is injective or keyed, and cheaper than
    :func:`split_by_hash` because only hash values are sorted, not row indices.

    Rows are first spread over buckets by their hash's low bits. A bucket holding as many rows
    on both sides, with equal sums of their (re-mixed) hashes, holds the same hashes on both:
    different hashes agree on both 32-bit sums about once in 2**64 by chance, and the checksum
    over paired rows (:func:`same_paired_rows`) still stands behind it. Only the rows of the
    buckets that differ are sorted, which spares most of the sort when most rows pair.
    """
    if gold.size < _BUCKETS_FROM or pred.size < _BUCKETS_FROM:
        return _sorted_surplus(gold, pred)
    bits = min(20, max(gold.size, pred.size).bit_length() - 4)
    gold_digests, pred_digests = _bucket_digests(gold, bits), _bucket_digests(pred, bits)
    if gold_digests is None or pred_digests is None:
        return _sorted_surplus(gold, pred)
    (gold_buckets, gold_sums), (pred_buckets, pred_sums) = gold_digests, pred_digests
    differ = (gold_sums != pred_sums).any(axis=0)
    if not differ.any():
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty
    gold_rows = np.flatnonzero(differ[gold_buckets])
    pred_rows = np.flatnonzero(differ[pred_buckets])
    gold_extra, pred_extra = _sorted_surplus(gold[gold_rows], pred[pred_rows])
    return gold_rows[gold_extra], pred_rows[pred_extra]


def _sorted_surplus(gold: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`surplus_by_hash` by sorting both sides' hashes whole."""
    gold_sorted, pred_sorted = np.sort(gold), np.sort(pred)
    if gold_sorted.size == pred_sorted.size and np.array_equal(gold_sorted, pred_sorted):
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty
    (gold_values, _, gold_counts), (pred_values, _, pred_counts) = runs(gold_sorted), runs(pred_sorted)
    gold_runs, pred_runs = (gold_values, gold_counts), (pred_values, pred_counts)
    return _surplus_rows(gold, gold_runs, pred_runs), _surplus_rows(pred, pred_runs, gold_runs)


def pairs_equal(gold_columns: Sequence[Sequence[Any]], pred_columns: Sequence[Sequence[Any]],
                gold_rows: np.ndarray, pred_rows: np.ndarray) -> bool:
    """Whether every proposed pair of rows has equal keys in the given columns (pass only the
    columns whose hash scheme is "checked")."""
    if gold_rows.size == 0 or not gold_columns:
        return True
    # Walk the gold side in row order: when every row is paired that is the column itself, and
    # only the predicted side is gathered in random order.
    order = np.argsort(gold_rows)  # distinct row positions: no ties to keep in order
    gold_index, pred_index = gold_rows[order].tolist(), pred_rows[order].tolist()
    whole = len(gold_index) == len(gold_columns[0])
    for gold_keys, pred_keys in zip(gold_columns, pred_columns, strict=True):
        gold_part = list(gold_keys) if whole else list(map(gold_keys.__getitem__, gold_index))
        if gold_part != list(map(pred_keys.__getitem__, pred_index)):
            return False
    return True
