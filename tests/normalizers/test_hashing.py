"""Multiset pairing by row hashes, checked against Counter arithmetic on random inputs."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from polysql.normalizers.hashing import (
    row_checksums,
    same_paired_rows,
    split_by_hash,
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
