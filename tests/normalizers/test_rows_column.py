"""A column read straight from a list of row tuples behaves as the tuple of its values."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from polysql.core.columnar import RowsColumn


class CountedRows(list[tuple[Any, ...]]):
    """Row tuples that count how often they are walked whole."""

    walks = 0

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        self.walks += 1
        return super().__iter__()


ROWS = [(1, "a", None), (2, "b", 2.5), (3, None, -1.0)]


def test_it_reads_as_the_tuple_of_the_column() -> None:
    column = RowsColumn(ROWS, 1)
    assert len(column) == 3
    assert [column[0], column[-1]] == ["a", None]
    assert column[1:] == ("b", None)
    for _ in range(6):  # more passes than it streams
        assert list(column) == ["a", "b", None]
    assert column.as_list() == ("a", "b", None)


def test_the_first_passes_stream_and_later_ones_read_the_built_column() -> None:
    rows = CountedRows(ROWS)
    column = RowsColumn(rows, 2)
    assert column[1] == 2.5 and column[np.int64(2)] == -1.0  # one value: read from its row
    assert rows.walks == 0
    for _ in range(3):
        assert list(column) == [None, 2.5, -1.0]
    assert rows.walks == 3
    for _ in range(4):
        assert list(column) == [None, 2.5, -1.0]
    assert rows.walks == 4  # built once on the fourth pass, then read from the copy


def test_an_empty_result_has_empty_columns() -> None:
    column = RowsColumn([], 0)
    assert len(column) == 0 and list(column) == [] and column.as_list() == ()
