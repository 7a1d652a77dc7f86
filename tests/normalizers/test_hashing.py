"""Multiset pairing by row hashes, checked against Counter arithmetic on random inputs."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from polysql.normalizers.hashing import (
    _bucket_digests,
    group_order,
    row_checksums,
    row_hashes,
    same_paired_rows,
    split_by_hash,
    stable_argsort,
    surplus_by_hash,
)


def expected_surplus(mine: list[int], theirs: list[int]) -> Counter[int]:
    return Counter(mine) - Counter(theirs)


@pytest.mark.parametrize("seed", range(20))
def test_surplus_rows_are_the_multiset_difference(seed: int) -> None:
    rng = random.Random(seed)
    gold = [rng.randrange(8) for _ in range(rng.randrange(0, 40))]
    pred = [rng.randrange(8) for _ in range(rng.randrange(0, 40))]
    g, p = np.array(gold, dtype=np.uint64), np.array(pred, dtype=np.uint64)
    for gold_rows, pred_rows in (surplus_by_hash(g, p), (split_by_hash(g, p).gold_surplus,
                                                         split_by_hash(g, p).pred_surplus)):
        assert Counter(gold[i] for i in gold_rows.tolist()) == expected_surplus(gold, pred)
        assert Counter(pred[i] for i in pred_rows.tolist()) == expected_surplus(pred, gold)
        assert list(gold_rows) == sorted(gold_rows)  # reported in row order


def test_split_pairs_equal_hashes_one_to_one() -> None:
    gold = np.array([5, 3, 5, 9], dtype=np.uint64)
    pred = np.array([5, 5, 3, 7], dtype=np.uint64)
    split = split_by_hash(gold, pred)
    assert [(int(gold[i]), int(pred[k])) for i, k in zip(split.gold_paired, split.pred_paired,
                                                       strict=True)] == [(3, 3), (5, 5), (5, 5)]
    assert split.gold_surplus.tolist() == [3] and split.pred_surplus.tolist() == [3]


def test_checksum_exposes_rows_that_collide_in_the_row_hash() -> None:
    # Two different rows (columns hashes (1, 2) and (2, 1)) whose row hashes were made to collide:
    # the checksum over the paired rows still tells them apart.
    gold_columns = [np.array([1], dtype=np.uint64), np.array([2], dtype=np.uint64)]
    pred_columns = [np.array([2], dtype=np.uint64), np.array([1], dtype=np.uint64)]
    no_surplus = np.zeros(0, dtype=np.intp)
    assert not same_paired_rows(row_checksums(gold_columns, 1), row_checksums(pred_columns, 1),
                                no_surplus, no_surplus)
    assert same_paired_rows(row_checksums(gold_columns, 1), row_checksums(gold_columns, 1),
                            no_surplus, no_surplus)
    # Surplus rows are left out of the sums.
    gold_two = [np.array([1, 7], dtype=np.uint64), np.array([2, 7], dtype=np.uint64)]
    assert same_paired_rows(row_checksums(gold_two, 2), row_checksums(gold_columns, 1),
                            np.array([1]), no_surplus)


def expected_positions(mine: np.ndarray, theirs: np.ndarray) -> list[int]:
    """Rows of ``mine`` in surplus: for a hash with c rows here and c' there, its first c - c'."""
    left = Counter(mine.tolist()) - Counter(theirs.tolist())
    out = []
    for i, h in enumerate(mine.tolist()):
        if left[h]:
            left[h] -= 1
            out.append(i)
    return out


def mixed_hashes(rng: np.random.Generator, size: int, distinct: int) -> np.ndarray:
    """``size`` well-spread 64-bit hashes drawn from ``distinct`` values (duplicates included)."""
    pool = rng.integers(0, 2**63, distinct, dtype=np.int64).view(np.uint64) * np.uint64(3)
    return pool[rng.integers(0, distinct, size)]


@pytest.mark.parametrize(("changed", "distinct"), [(0, 200_000), (37, 200_000), (5_000, 200_000),
                                                   (60_000, 200_000), (37, 90), (60_000, 90)])
def test_large_results_get_the_same_surplus_rows_as_counting(changed: int, distinct: int) -> None:
    # Large enough for the bucket digests, from a few changed rows (most buckets agree) to most
    # of them (the stable-sort path); 90 distinct values make every bucket hold duplicates.
    rng = np.random.default_rng(changed + distinct)
    gold = mixed_hashes(rng, 60_000, distinct)
    pred = rng.permutation(gold)
    pred[:changed] = mixed_hashes(rng, changed, distinct)
    pred = np.concatenate([pred, mixed_hashes(rng, 10, distinct)])  # sides of different lengths
    gold_rows, pred_rows = surplus_by_hash(gold, pred)
    assert gold_rows.tolist() == expected_positions(gold, pred)
    assert pred_rows.tolist() == expected_positions(pred, gold)


@pytest.mark.parametrize("distinct", [200_000, 90])
def test_sides_with_no_hash_in_common_are_all_surplus(distinct: int) -> None:
    # A plainly different result: every row of both sides, duplicates included, in row order.
    rng = np.random.default_rng(distinct)
    gold = mixed_hashes(rng, 60_000, distinct) & ~np.uint64(1)  # even hashes
    pred = mixed_hashes(rng, 50_000, distinct) | np.uint64(1)  # odd ones
    gold_rows, pred_rows = surplus_by_hash(gold, pred)
    assert gold_rows.tolist() == expected_positions(gold, pred) == list(range(60_000))
    assert pred_rows.tolist() == expected_positions(pred, gold) == list(range(50_000))


def test_equal_large_results_have_no_surplus() -> None:
    gold = mixed_hashes(np.random.default_rng(3), 100_000, 50_000)
    gold_rows, pred_rows = surplus_by_hash(gold, np.random.default_rng(4).permutation(gold))
    assert gold_rows.size == 0 and pred_rows.size == 0


def test_a_row_swapped_for_another_in_its_bucket_is_still_found() -> None:
    # Same bucket (same low bits), same row count per bucket: only the sums tell them apart.
    gold = mixed_hashes(np.random.default_rng(6), 50_000, 50_000)
    pred = gold.copy()
    pred[123] ^= np.uint64(1 << 50)
    gold_rows, pred_rows = surplus_by_hash(gold, pred)
    assert gold_rows.tolist() == expected_positions(gold, pred) == [123]
    assert pred_rows.tolist() == [123]


def test_a_bucket_too_full_to_sum_exactly_is_sorted_instead() -> None:
    # 2**21 + 1 copies of one row: its bucket's float sums could round, so the whole sort decides.
    gold = np.full(2**21 + 1, 12345, dtype=np.uint64)
    assert _bucket_digests(gold, 16) is None
    pred = gold.copy()
    pred[-1] = 99
    gold_rows, pred_rows = surplus_by_hash(gold, pred)
    assert gold_rows.tolist() == [0] and pred_rows.tolist() == [2**21]


def test_row_hashes_do_not_depend_on_the_block_length() -> None:
    rng = np.random.default_rng(5)
    columns = [rng.integers(0, 2**63, 200_003, dtype=np.int64).view(np.uint64) for _ in range(3)]
    whole = row_hashes(columns, 200_003)
    pieces = [row_hashes([c[start:start + 7_001] for c in columns], len(columns[0][start:start + 7_001]))
              for start in range(0, 200_003, 7_001)]
    assert np.array_equal(whole, np.concatenate(pieces))


@pytest.mark.parametrize("distinct", [5, 1_000, None, "mixed"])
def test_group_order_is_the_lexicographic_order_of_group_and_numbers(distinct: int | str | None,
                                                                     ) -> None:
    # Few groups (numbers decide within them), many, one row per group (hashes alone), and
    # mostly lone groups beside a few large ones (only those are sorted by their numbers).
    rng = np.random.default_rng(7 if distinct == "mixed" else distinct or 0)
    if distinct is None:
        groups = rng.permutation(3_000).astype(np.uint64)
    elif distinct == "mixed":
        groups = rng.permutation(3_000).astype(np.uint64)
        groups[rng.integers(0, 3_000, 600)] = rng.integers(0, 4, 600).astype(np.uint64)
    else:
        groups = rng.integers(0, distinct, 3_000).astype(np.uint64) * np.uint64(7919)
    numbers = [rng.integers(0, 4, groups.size).astype(np.float64), rng.random(groups.size)]
    numbers[1][rng.integers(0, groups.size, 50)] = np.nan
    numbers[1][rng.integers(0, groups.size, 500)] = 0.5  # rows tied on everything: row order
    order = group_order(groups, numbers)
    assert np.array_equal(order, np.lexsort([*reversed(numbers), groups]))
    assert np.array_equal(group_order(groups, []), np.argsort(groups, kind="stable"))


@pytest.mark.parametrize("seed", range(10))
def test_stable_argsort_keeps_equal_values_in_row_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(0, 5_000))
    values = rng.integers(0, int(rng.integers(1, 2 * size + 2)), size).astype(np.uint64)
    values *= np.uint64(0x9E3779B97F4A7C15)  # spread over the 64 bits, as row hashes are
    assert np.array_equal(stable_argsort(values), np.argsort(values, kind="stable"))
