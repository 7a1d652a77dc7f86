"""Reconcile, within numeric tolerance, the rows the hashed comparison left unpaired.

Numbers are bucketed before hashing, so two numbers within tolerance can fall into neighbouring
buckets; their rows are then left over on both sides. This module pairs such rows, vectorized:

1. A row's *signature* hashes its exact parts: columns holding no approximate numbers (ints,
   text, dates) plus the row's tie-group tag. Rows whose signature the other side lacks can never
   pair and are set aside at once (this makes a plainly wrong prediction cheap to reject).
2. Both sides are sorted by (signature, numbers); in groups with as many rows on each side, the
   i-th rows are checked against each other with numpy (``|a - b| <= max(rel * max(|a|, |b|),
   abs)``, two integers exactly).
3. Rows that can pair with nothing are set aside too: rows whose non-numbers (NULL, NaN) the
   other side lacks beside the same exact part, and a row alone in its group on both sides
   whose numbers are not equal under the contract.
4. Groups that this does not settle (different counts, or noise that reorders rows) go to the
   general pairing of :func:`polysql.normalizers.tolerance.pair_within_tolerance`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import compress, repeat
from operator import is_not
from typing import Any

import numpy as np

from polysql.core.columnar import values_at
from polysql.normalizers.hashing import group_order, row_hashes, runs
from polysql.normalizers.policy import ComparePolicy
from polysql.normalizers.side import EXACT_SCHEMES, PickedColumn, Side
from polysql.normalizers.tolerance import pair_within_tolerance
from polysql.normalizers.values import (
    EXACT_FLOAT_INT,
    INTEGER_NOISE_RTOL,
    WRITTEN_RTOL,
    NoneType,
    Number,
    column_types,
    fine_value,
    written_numbers,
)

_NUMBER_SLOT = np.uint64(0x5A17)  # what a number contributes to a row's signature


@dataclass(slots=True)
class _Numbers:
    """One approximate column over some rows: the numbers, which are exact integers, and for
    values that are not numbers (NULL, NaN, text in a mixed column) their key hash."""

    approx: np.ndarray  # float64
    exact: np.ndarray  # bool: an integer (compares exactly with another integer)
    #: float64: the number each writes out in full, NaN if none (two such get no relative
    #: tolerance, see tolerance.written_match)
    written: np.ndarray
    is_number: np.ndarray  # bool
    other: np.ndarray  # uint64: hash of the non-number key, _NUMBER_SLOT for numbers
    fine: Sequence[Any]  # the fine values themselves (for verification of non-numbers)


def _numbers(side: Side, j: int, at: np.ndarray) -> _Numbers:
    """Column ``j`` of ``side`` at the rows ``at``."""
    floats = _float_numbers(side, j, at)
    if floats is not None:
        return floats
    values = side.raw_values(j, at.tolist())
    fast = _homogeneous_numbers(values, side.reading[j].approximate)
    if fast is not None:
        return fast
    fine = [fine_value(v, side.policy, side.reading[j]) for v in values]
    is_number = np.fromiter((isinstance(v, Number) for v in fine), dtype=bool, count=len(fine))
    approx = np.fromiter((v.approx if isinstance(v, Number) else 0.0 for v in fine),
                         dtype=np.float64, count=len(fine))
    exact = np.fromiter((isinstance(v, Number) and v.exact is not None for v in fine),
                        dtype=bool, count=len(fine))
    other = np.fromiter((0 if isinstance(v, Number) else hash(v) for v in fine),
                        dtype=np.int64, count=len(fine)).view(np.uint64)
    other = np.where(is_number, _NUMBER_SLOT, other)
    # written out in full (see tolerance.written_form), decided for the whole column at once
    written = np.where(is_number, _written(approx, exact, side.reading[j].approximate), np.nan)
    return _Numbers(approx, exact, written, is_number, other, fine)


def _float_numbers(side: Side, j: int, at: np.ndarray) -> _Numbers | None:
    """:func:`_homogeneous_numbers` of a column of floats (and NULLs), read off the float64
    array its keys were made from rather than from the Python values once more; None when the
    column is not one of floats, or a NaN leaves it to the general path."""
    parts = side.floats_at(j, at)
    if parts is None:
        return None
    approx, nulls = parts
    present = None if nulls is None else ~nulls
    found = approx if present is None else approx[present]
    return _from_floats(found, present, float, PickedColumn(side.raw[j], at),
                        side.reading[j].approximate)


def _written(approx: np.ndarray, exact: np.ndarray, approximate: bool) -> np.ndarray:
    """What each number writes out in full (NaN: nothing). An integer writes out itself, but
    beside a 32-bit float (``approximate``) nothing does: two integers compare exactly anyway,
    and an integer against a 32-bit float within the relative tolerance."""
    if approximate:
        return np.full(approx.size, np.nan)
    return np.where(exact, approx, written_numbers(approx))


def _homogeneous_numbers(values: list[Any], approximate: bool = False) -> _Numbers | None:
    """Vectorized :class:`_Numbers` for a column of only floats, only ints or only Decimals
    (no NaN), NULLs allowed, or of NULLs alone; else None.

    An integral Decimal is recognised through its float; a misjudged one can only be treated as
    inexact-looking-exact and fail its check, which sends the pair to the exact general pass.
    """
    types = column_types(values)
    kinds = types - {NoneType}
    if not kinds:
        # Every value NULL (a prediction that lost a column's values): none of them a number,
        # read in numpy time rather than value by value.
        nothing = _homogeneous(np.zeros(0), float, [], approximate)
        return _with_nulls(nothing, np.zeros(len(values), dtype=bool), values)
    if len(kinds) != 1 or not kinds <= {float, int, Decimal}:
        return None
    numbers = values
    present = None
    if NoneType in types:
        present = np.fromiter(map(is_not, values, repeat(None)), dtype=bool, count=len(values))
        numbers = list(compress(values, present.tolist()))
    try:
        found = np.fromiter(map(float, numbers), dtype=np.float64, count=len(numbers))
    except (OverflowError, ValueError):
        return None
    (kind,) = kinds
    return _from_floats(found, present, kind, values, approximate)


def _from_floats(found: np.ndarray, present: np.ndarray | None, kind: type,
                 values: Sequence[Any], approximate: bool) -> _Numbers | None:
    """:class:`_Numbers` of ``values``, numbers of type ``kind`` read as the floats ``found``
    and, where ``present`` is False, NULLs; None when a NaN leaves them to the general path."""
    if np.isnan(found).any():
        return None
    numbers = _homogeneous(found, kind, values, approximate)
    return numbers if present is None else _with_nulls(numbers, present, values)


def _homogeneous(approx: np.ndarray, kind: type, values: Sequence[Any],
                approximate: bool) -> _Numbers:
    """:class:`_Numbers` of numbers of type ``kind`` read as the floats ``approx``, ``values``
    kept as their fine values."""
    if kind is int:
        exact = np.ones(approx.size, dtype=bool)
    elif kind is Decimal:
        exact = approx == np.trunc(approx)
    else:
        exact = np.zeros(approx.size, dtype=bool)
    # All numbers: the fine values are never consulted for verification.
    # ``approximate``: a 32-bit float on a side; no number of the pair counts as written out
    written = _written(approx, exact, approximate)
    return _Numbers(approx, exact, written, np.ones(approx.size, dtype=bool),
                    np.full(approx.size, _NUMBER_SLOT, dtype=np.uint64), values)


def _with_nulls(numbers: _Numbers, present: np.ndarray, values: Sequence[Any]) -> _Numbers:
    """``numbers`` (of the non-NULL values) spread back among the NULLs of ``values``, as the
    general path reads a NULL: not a number, hashed as None."""
    def spread(part: np.ndarray, fill: Any) -> np.ndarray:
        out = np.full(present.size, fill, dtype=part.dtype)
        out[present] = part
        return out
    return _Numbers(spread(numbers.approx, 0.0), spread(numbers.exact, False),
                    spread(numbers.written, np.nan), present,
                    spread(numbers.other, np.int64(hash(None)).view(np.uint64)), values)


def _signatures(side: Side, rows: np.ndarray, exact_columns: list[int],
                tags: np.ndarray | None) -> np.ndarray:
    parts = [side.hashes[j][rows] for j in exact_columns]
    if tags is not None:
        parts.append(tags[rows].astype(np.uint64))
    return row_hashes(parts, rows.size)


def _close(a: _Numbers, b: _Numbers, ia: np.ndarray, ib: np.ndarray,
           policy: ComparePolicy) -> np.ndarray:
    """Per pair (a[ia[k]], b[ib[k]]): equal under the contract, as far as numbers can tell."""
    x, y = a.approx[ia], b.approx[ib]
    both_numbers = a.is_number[ia] & b.is_number[ib]
    neither = ~a.is_number[ia] & ~b.is_number[ib]  # equal hashes via the signature; verified later
    with np.errstate(invalid="ignore", over="ignore"):
        if policy.tolerant:
            limit = np.maximum(policy.rel_tol * np.maximum(np.abs(x), np.abs(y)), policy.abs_tol)
            finite = np.isfinite(x) & np.isfinite(y)  # inf equals only inf of the same sign
            close = (x == y) | (finite & (np.abs(x - y) <= limit))
            if policy.short_numbers_exact:  # two numbers written out in full: see written_match
                wx, wy = a.written[ia], b.written[ib]
                integral_x, integral_y = wx == np.trunc(wx), wy == np.trunc(wy)
                integral = integral_x | integral_y
                written_limit = np.where(integral, policy.abs_tol, np.maximum(
                    WRITTEN_RTOL * np.maximum(np.abs(wx), np.abs(wy)), policy.abs_tol))
                written_close = (wx == wy) | (np.abs(wx - wy) <= written_limit)
                long_x, long_y = np.isnan(wx), np.isnan(wy)
                close = np.where(~long_x & ~long_y, written_close, close)
                # an integer against a long number: only float noise apart (integer_against_long)
                noise_limit = np.maximum(
                    INTEGER_NOISE_RTOL * np.maximum(np.abs(x), np.abs(y)), policy.abs_tol)
                noise_close = (x == y) | (finite & (np.abs(x - y) <= noise_limit))
                close = np.where((integral_x & long_y) | (integral_y & long_x), noise_close, close)
        else:
            close = x == y
    both_exact = a.exact[ia] & b.exact[ib]
    # Two integers must be equal; beyond float precision the floats cannot tell, so leave those
    # to the general pass, which compares the integers themselves.
    exact_ok = (x == y) & (np.abs(x) < EXACT_FLOAT_INT)
    return neither | (both_numbers & np.where(both_exact, exact_ok, close))


# Set operations on sorted hashes with searchsorted: numpy's isin, unique and intersect1d sort
# (or hash) both arrays again, several times slower on a million rows.

def _members(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per value of ``a``: whether ``b`` holds it; and per value of ``b``: whether ``a`` does."""
    a_order, b_order = np.argsort(a), np.argsort(b)
    a_sorted, b_sorted = a[a_order], b[b_order]
    return (_unsorted(_sorted_member(a_sorted, b_sorted), a_order),
            _unsorted(_sorted_member(b_sorted, a_sorted), b_order))


def _sorted_member(values: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Per value of sorted ``values``: whether sorted ``others`` holds it. Sorted needles walk
    the haystack in order; unsorted ones jump about it, ten times slower on a million rows."""
    if others.size == 0:
        return np.zeros(values.size, dtype=bool)
    at = np.minimum(np.searchsorted(others, values), others.size - 1)
    return others[at] == values


def _unsorted(sorted_mask: np.ndarray, order: np.ndarray) -> np.ndarray:
    """A mask over ``values[order]`` as a mask over ``values``."""
    mask = np.empty(order.size, dtype=bool)
    mask[order] = sorted_mask
    return mask


def _common(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``a`` and in ``b`` (both sorted, distinct) of the values both hold."""
    if a.size == 0 or b.size == 0:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty
    at = np.minimum(np.searchsorted(b, a), b.size - 1)
    found = b[at] == a
    return np.flatnonzero(found), at[found]


def _in_order(positions: list[int], more: Sequence[int] | np.ndarray) -> list[int]:
    """``positions`` and ``more`` as one ascending list."""
    return np.sort(np.concatenate([np.asarray(positions, dtype=np.intp),
                                   np.asarray(more, dtype=np.intp)])).tolist()


def _decided(a: _Numbers, b: _Numbers, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Per pair: whether :func:`_close` is final for this column. It is not for two integers
    beyond float precision, which only the general pass compares exactly."""
    both_exact = a.exact[ia] & b.exact[ib]
    return ~(both_exact & ~(np.abs(a.approx[ia]) < EXACT_FLOAT_INT))


def resolve_residue(gold: Side, pred: Side, gold_left: list[int], pred_left: list[int],
                    gold_tags: np.ndarray | None = None, pred_tags: np.ndarray | None = None,
                    ) -> tuple[list[int], list[int], int]:
    """Pair leftover rows within tolerance. Returns (unpaired gold rows, unpaired predicted rows,
    number of pairs made)."""
    policy = gold.policy
    exact_columns = [j for j, s in enumerate(gold.schemes) if s in EXACT_SCHEMES]
    approx_columns = [j for j, s in enumerate(gold.schemes) if s not in EXACT_SCHEMES]
    if not approx_columns:
        return gold_left, pred_left, 0  # nothing approximate: the hashed comparison was final

    g_rows, p_rows = np.asarray(gold_left, dtype=np.intp), np.asarray(pred_left, dtype=np.intp)
    g_sig = _signatures(gold, g_rows, exact_columns, gold_tags)
    p_sig = _signatures(pred, p_rows, exact_columns, pred_tags)
    # 1. rows whose exact part exists on the other side at all
    g_hope, p_hope = _members(g_sig, p_sig)
    lone_gold, lone_pred = g_rows[~g_hope].tolist(), p_rows[~p_hope].tolist()
    g_rows, g_sig, p_rows, p_sig = g_rows[g_hope], g_sig[g_hope], p_rows[p_hope], p_sig[p_hope]
    if g_rows.size == 0 or p_rows.size == 0:
        return _in_order(lone_gold, g_rows), _in_order(lone_pred, p_rows), 0

    g_num = [_numbers(gold, j, g_rows) for j in approx_columns]
    p_num = [_numbers(pred, j, p_rows) for j in approx_columns]
    # Non-numbers in approximate columns (NULL, NaN) must match exactly: part of the signature.
    g_sig = row_hashes([g_sig, *(c.other for c in g_num)], g_rows.size)
    p_sig = row_hashes([p_sig, *(c.other for c in p_num)], p_rows.size)

    # 2. sort by (signature, numbers) and pair by rank inside groups of equal size
    g_order = group_order(g_sig, [c.approx for c in g_num])
    p_order = group_order(p_sig, [c.approx for c in p_num])
    g_sorted, p_sorted = g_sig[g_order], p_sig[p_order]
    g_vals, g_first, g_count = runs(g_sorted)
    p_vals, p_first, p_count = runs(p_sorted)
    gi, pi = _common(g_vals, p_vals)
    same_size = g_count[gi] == p_count[pi]

    settled_g: list[np.ndarray] = []
    settled_p: list[np.ndarray] = []
    # Rows that can pair with nothing, decided here rather than in the general pass (so a
    # prediction with the right keys and wrong numbers is rejected in numpy time): rows whose
    # full signature the other side lacks (NULL pairs only with NULL), and rows alone in their
    # group on both sides whose numbers are not equal under the contract.
    g_final = ~_unsorted(_sorted_member(g_sorted, p_sorted), g_order)
    p_final = ~_unsorted(_sorted_member(p_sorted, g_sorted), p_order)
    if same_size.any():
        starts_g, starts_p = g_first[gi][same_size], p_first[pi][same_size]
        sizes = g_count[gi][same_size]
        offsets = np.repeat(np.cumsum(sizes) - sizes, sizes)
        within = np.arange(sizes.sum()) - offsets
        ga = g_order[np.repeat(starts_g, sizes) + within]  # positions into g_rows
        pa = p_order[np.repeat(starts_p, sizes) + within]
        ok = np.ones(ga.size, dtype=bool)
        for g_col, p_col in zip(g_num, p_num, strict=True):
            ok &= _close(g_col, p_col, ga, pa, policy)
        group_ok = np.logical_and.reduceat(ok, np.cumsum(sizes) - sizes)
        pair_ok = np.repeat(group_ok, sizes)
        alone = np.repeat(sizes == 1, sizes) & ~pair_ok
        for g_col, p_col in zip(g_num, p_num, strict=True):
            alone &= _decided(g_col, p_col, ga, pa)
        g_final[ga[alone]] = True
        p_final[pa[alone]] = True
        if _verified(gold, pred, g_rows[ga[pair_ok]], p_rows[pa[pair_ok]], exact_columns,
                     g_num, p_num, ga[pair_ok], pa[pair_ok]):
            settled_g.append(ga[pair_ok])
            settled_p.append(pa[pair_ok])
    paired = int(sum(s.size for s in settled_g))

    # 3. everything not settled goes to the general pairing (with its tie-group tag, if any)
    g_done, p_done = g_final.copy(), p_final.copy()
    for s in settled_g:
        g_done[s] = True
    for s in settled_p:
        p_done[s] = True
    lone_gold += g_rows[g_final].tolist()
    lone_pred += p_rows[p_final].tolist()
    rest_g, rest_p = g_rows[~g_done].tolist(), p_rows[~p_done].tolist()
    if rest_g and rest_p:
        lone_g, lone_p = pair_within_tolerance(
            [_tagged(gold, i, gold_tags) for i in rest_g],
            [_tagged(pred, k, pred_tags) for k in rest_p], policy)
        paired += len(rest_g) - len(lone_g)
        rest_g, rest_p = [rest_g[i] for i in lone_g], [rest_p[k] for k in lone_p]
    return _in_order(lone_gold, rest_g), _in_order(lone_pred, rest_p), paired


def _tagged(side: Side, i: int, tags: np.ndarray | None) -> tuple[Any, ...]:
    row = side.fine_row(i)
    return row if tags is None else (int(tags[i]), *row)


def _verified(gold: Side, pred: Side, g_rows: np.ndarray, p_rows: np.ndarray,
              exact_columns: Sequence[int], g_num: list[_Numbers], p_num: list[_Numbers],
              g_pos: np.ndarray, p_pos: np.ndarray) -> bool:
    """Signatures are hashes: confirm the exact parts of every settled pair value by value."""
    gi, pi = g_rows.tolist(), p_rows.tolist()
    for j in exact_columns:
        g_keys, p_keys = gold.keys_to_pick(j), pred.keys_to_pick(j)
        if values_at(g_keys, gi) != values_at(p_keys, pi):
            return False
    for g_col, p_col in zip(g_num, p_num, strict=True):
        others = np.flatnonzero(~g_col.is_number[g_pos]).tolist()
        gp, pp = g_pos.tolist(), p_pos.tolist()
        if any(g_col.fine[gp[k]] != p_col.fine[pp[k]] for k in others):
            return False
    return True
