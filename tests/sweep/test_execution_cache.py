"""The execution cache: round trips, compressed payloads, batched commits and threads."""

from __future__ import annotations

import pickle
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from polysql.core.model import Result
from polysql.sweep.execution_cache import COMPRESS_ABOVE, ExecutionCache, decode_result


def committed(path: Path) -> dict[str, bytes]:
    """What another process opening the file sees: committed entries only."""
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT key, value FROM results").fetchall())


def small() -> Result:
    return Result(columns=["n"], rows=[(1,)], types=["INTEGER"], elapsed=0.01)


def big() -> Result:
    rows = [(i, f"name {i % 97}", Decimal(i) / 7, date(2024, 1, 1 + i % 28), None)
            for i in range(20_000)]
    return Result(columns=["id", "name", "ratio", "day", "nothing"], rows=rows,
                  types=["INTEGER", "TEXT", "DECIMAL", "DATE", "TEXT"], truncated=True,
                  stats={"bytes": 12})


def test_round_trip_of_a_big_result_is_compressed_and_exact(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    result = big()
    with ExecutionCache(path) as cache:
        cache.put("k", result)
    stored = committed(path)["k"]
    assert len(stored) < len(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)) / 2
    with ExecutionCache(path) as cache:
        again = cache.get("k")
        assert cache.hits == 1
    assert again == result


def test_small_results_and_entries_written_before_compression_read_back(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with ExecutionCache(path) as cache:
        cache.put("small", small())
    assert len(committed(path)["small"]) <= COMPRESS_ABOVE
    # an entry as versions before compression wrote it, however large: the plain pickle
    plain = pickle.dumps(big(), protocol=pickle.HIGHEST_PROTOCOL)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO results VALUES (?, ?)", ("old", plain))
    with ExecutionCache(path) as cache:
        assert cache.get("small") == small()
        got = cache.get("old")
    assert got == big()


def test_get_sees_a_put_before_it_is_committed(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ExecutionCache(path, batch_size=1000, flush_interval=3600)
    try:
        cache.put("a", small())
        cache.put("b", big())
        assert committed(path) == {}  # nothing committed yet
        assert cache.get("a") == small()
        assert cache.get("b") == big()
        assert cache.get("missing") is None
        assert (cache.hits, cache.misses) == (2, 1)
        cache.flush()
        assert set(committed(path)) == {"a", "b"}
        assert cache.get("a") == small()  # now from the file
    finally:
        cache.close()


def test_close_commits_the_pending_tail_and_twice_is_harmless(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ExecutionCache(path, batch_size=1000, flush_interval=3600)
    for i in range(25):
        cache.put(f"k{i}", Result(columns=["i"], rows=[(i,)]))
    assert committed(path) == {}
    cache.close()
    cache.close()
    cache.put("late", small())  # a statement finishing after the end is dropped, not an error
    assert len(committed(path)) == 25


def wait_for(condition: Callable[[], bool]) -> None:
    """Until the writer thread has done something (a generous bound, not a speed check)."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, "the writer thread did nothing in 60 s"
        time.sleep(0.01)


def test_a_full_batch_is_committed_without_a_flush(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ExecutionCache(path, batch_size=10, flush_interval=3600)
    try:
        for i in range(10):
            cache.put(f"k{i}", small())
        wait_for(lambda: len(committed(path)) == 10)
        cache.put("k10", small())
        assert cache.get("k10") == small()
    finally:
        cache.close()
    assert len(committed(path)) == 11


def test_entries_are_committed_after_the_interval_without_a_flush(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ExecutionCache(path, batch_size=1000, flush_interval=0.05)
    try:
        cache.put("k", small())
        wait_for(lambda: "k" in committed(path))
    finally:
        cache.close()


def test_a_result_pickle_cannot_take_is_not_cached_and_harms_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ExecutionCache(path, batch_size=1000, flush_interval=3600)
    try:
        cache.put("odd", Result(columns=["f"], rows=[(lambda: None,)]))
        cache.put("fine", small())
        cache.flush()
        assert cache.unstored == 1
        assert set(committed(path)) == {"fine"}
        assert cache.get("odd") is None  # a miss: run again, as if never cached
    finally:
        cache.close()


def test_unavailable_errors_are_not_cached(tmp_path: Path) -> None:
    with ExecutionCache(tmp_path / "cache.sqlite") as cache:
        cache.put("k", Result.failed("unavailable", "server gone"))
        assert cache.get("k") is None
        cache.put("t", Result.failed("timeout", "too slow"))
        got = cache.get("t")
    assert got is not None and got.error is not None and got.error.kind == "timeout"


def test_threads_putting_and_getting_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ExecutionCache(path, batch_size=7, flush_interval=0.001)
    errors: list[str] = []

    def worker(n: int) -> None:
        for i in range(150):
            key = f"{n}-{i}"
            result = Result(columns=["n", "i"], rows=[(n, i)] * (1 + i % 200))
            cache.put(key, result)
            got = cache.get(key)  # seen at once, whether committed or not
            if got != result:
                errors.append(key)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cache.close()
    assert errors == []
    stored = committed(path)
    assert len(stored) == 6 * 150
    assert decode_result(stored["5-149"]).rows == [(5, 149)] * 150


def test_threads_read_committed_entries_each_on_a_connection_of_their_own(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with ExecutionCache(path) as writer:
        for i in range(50):
            writer.put(f"k{i}", Result(columns=["i"], rows=[(i,)]))
    cache = ExecutionCache(path)
    found: dict[int, list[Result | None]] = {}
    connections: set[int] = set()
    start = threading.Barrier(4)

    def reader(n: int) -> None:
        start.wait()  # all four read at once
        found[n] = [cache.get(f"k{i}") for i in range(50)]
        connections.add(id(cache._reader()))

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cache.close()
    assert len(connections) == 4  # no reader waited on another's connection
    for results in found.values():
        assert [r.rows if r else None for r in results] == [[(i,)] for i in range(50)]
    assert cache.hits == 200
    with pytest.raises(sqlite3.ProgrammingError):  # as with one shared connection
        cache.get("k0")


def test_recent_results_are_served_from_memory_within_a_budget(tmp_path: Path) -> None:
    """A sweep asks every engine lane for the same large result (a gold re-run under a higher
    row cap): a committed or read result stays in memory, as the very object, until results
    of more values than the budget came after it; then it is read from the file again."""
    path = tmp_path / "cache.sqlite"
    first = Result(columns=["a", "b"], rows=[(i, i) for i in range(40)])  # 80 values
    second = Result(columns=["a"], rows=[(i,) for i in range(50)])  # 50 values
    with ExecutionCache(path, batch_size=1000, flush_interval=3600, recent_cells=100) as cache:
        cache.put("first", first)
        cache.flush()
        assert "first" in committed(path)
        assert cache.get("first") is first  # committed, and still in memory
        cache.put("second", second)
        cache.flush()
        assert cache.get("second") is second
        again = cache.get("first")  # pushed out by the second (130 values > 100)
        assert again == first and again is not first
        assert cache.get("first") is again  # read from the file, then kept
    with ExecutionCache(path, recent_cells=10) as reopened:
        whole = reopened.get("second")  # 50 values: more than the whole budget
        assert whole == second and reopened.get("second") is not whole


def test_a_result_whose_commit_failed_is_not_served_from_memory(tmp_path: Path) -> None:
    """A failed commit drops its batch: those statements run again, none is served."""
    path = tmp_path / "cache.sqlite"
    with ExecutionCache(path, batch_size=1000, flush_interval=3600) as cache:
        with sqlite3.connect(path) as conn:
            conn.execute("DROP TABLE results")  # every INSERT of the next batch fails
        cache.put("k", small())
        cache.flush()
        assert cache.write_error is not None
        with sqlite3.connect(path) as conn:  # the file readable again, without the entry
            conn.execute("CREATE TABLE results (key TEXT PRIMARY KEY, value BLOB)")
        assert cache.get("k") is None
