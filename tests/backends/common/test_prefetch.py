"""Reading ahead in a worker thread must not change what the consumer sees."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from polysql.backends._common.prefetch import prefetched


def test_items_arrive_in_order_and_all() -> None:
    assert list(prefetched(iter(range(1000)), depth=3)) == list(range(1000))


def test_items_are_produced_in_another_thread() -> None:
    def threads() -> Iterator[str]:
        for _ in range(3):
            yield threading.current_thread().name

    assert set(prefetched(threads())) == {"polysql-prefetch"}


def test_error_in_the_source_reaches_the_consumer_after_earlier_items() -> None:
    def failing() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("source broke")

    seen = []
    with pytest.raises(ValueError, match="source broke"):
        for item in prefetched(failing()):
            seen.append(item)
    assert seen == [1, 2]


def test_consumer_stopping_early_closes_the_source() -> None:
    closed = threading.Event()

    def endless() -> Iterator[int]:
        try:
            n = 0
            while True:
                yield n
                n += 1
        finally:
            closed.set()

    stream = prefetched(endless(), depth=2)
    assert next(stream) == 0
    stream.close()
    assert closed.is_set()
