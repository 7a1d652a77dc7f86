"""The one connection pool every server engine shares (polysql.backends._common.pool).

Real connections throughout: SQLite in-memory connections stand in for server sessions (an open
connection that can be closed, checked and pinged), so the pool's own rules are tested without a
server; the PostgreSQL, MySQL and Snowflake suites prove it with their engines.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from polysql.backends._common.pool import ConnectionPool
from polysql.core.errors import ConfigError, EngineUnavailableError


class Opened:
    """Opens real connections and remembers every one, to see which the pool closed."""

    def __init__(self) -> None:
        self.all: list[sqlite3.Connection] = []
        self.lock = threading.Lock()

    def __call__(self) -> sqlite3.Connection:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        with self.lock:
            self.all.append(conn)
        return conn


def is_open(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return False
    return True


def make(opened: Opened, size: int = 2, **options: object) -> ConnectionPool[sqlite3.Connection]:
    return ConnectionPool(opened, sqlite3.Connection.close, size=size, engine="Test",
                          usable=is_open, **options)  # type: ignore[arg-type]


def test_a_released_connection_is_handed_out_again() -> None:
    opened = Opened()
    pool = make(opened)
    for _ in range(5):
        with pool.connection() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    assert pool.opened == 1 and len(opened.all) == 1


def test_at_most_size_connections_exist_under_concurrency() -> None:
    opened = Opened()
    pool = make(opened, size=3)
    busy = 0
    peak = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal busy, peak
        for _ in range(20):
            with pool.connection():
                with lock:
                    busy += 1
                    peak = max(peak, busy)
                time.sleep(0.001)
                with lock:
                    busy -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak == 3
    assert pool.opened <= 3


def test_waiting_longer_than_wait_is_unavailable_and_says_how_to_fix() -> None:
    pool = make(Opened(), size=1)
    held = pool.acquire()
    started = time.perf_counter()
    with pytest.raises(EngineUnavailableError, match=r"no Test connection free within 0.2s "
                                                     r"\(pool of 1\): raise pool_size"):
        pool.acquire(wait=0.2)
    assert 0.15 < time.perf_counter() - started < 2
    pool.release(held)
    assert pool.acquire(wait=0.2) is held


def test_a_waiter_gets_the_connection_released_meanwhile() -> None:
    pool = make(Opened(), size=1)
    held = pool.acquire()
    threading.Timer(0.1, pool.release, args=(held,)).start()
    assert pool.acquire(wait=5) is held


def test_a_broken_connection_is_closed_and_replaced() -> None:
    opened = Opened()
    pool = make(opened, size=1)
    first = pool.acquire()
    pool.release(first)
    first.close()  # the server dropped it while it sat idle
    second = pool.acquire()
    assert second is not first and is_open(second)
    assert pool.opened == 2


def test_an_unusable_connection_coming_back_is_closed_not_kept() -> None:
    opened = Opened()
    marked: set[int] = set()
    pool = ConnectionPool(opened, sqlite3.Connection.close, size=1, engine="Test",
                          usable=lambda conn: id(conn) not in marked)
    conn = pool.acquire()
    marked.add(id(conn))  # e.g. left inside a transaction
    pool.release(conn)
    assert not is_open(conn)
    assert pool.acquire() is not conn


def test_a_connection_idle_past_ping_after_is_pinged_first() -> None:
    opened = Opened()
    pings: list[sqlite3.Connection] = []
    answers = [True, False]

    def ping(conn: sqlite3.Connection) -> bool:
        pings.append(conn)
        return answers.pop(0)

    pool = make(opened, size=1, ping=ping, ping_after=0.05)
    conn = pool.acquire()
    pool.release(conn)
    assert pool.acquire() is conn and pings == []  # fresh from use: no round trip
    pool.release(conn)
    time.sleep(0.1)
    assert pool.acquire() is conn and pings == [conn]  # idle long enough: pinged, answered
    pool.release(conn)
    time.sleep(0.1)
    replaced = pool.acquire()  # pinged, no answer: closed and replaced
    assert replaced is not conn and not is_open(conn) and pool.opened == 2


def test_discard_closes_and_abandon_leaves_the_connection_to_its_user() -> None:
    opened = Opened()
    pool = make(opened, size=1)
    lost = pool.acquire()
    pool.discard(lost)
    assert not is_open(lost)
    busy = pool.acquire(wait=0.5)  # the place was freed
    pool.abandon(busy)
    assert is_open(busy)  # still running a statement its worker will close
    assert pool.acquire(wait=0.5) is not busy
    assert pool.opened == 3


def test_a_connection_that_cannot_be_opened_frees_its_place() -> None:
    attempts = 0

    def failing() -> sqlite3.Connection:
        nonlocal attempts
        attempts += 1
        raise EngineUnavailableError("server down")

    pool = ConnectionPool(failing, sqlite3.Connection.close, size=1, engine="Test")
    for _ in range(3):
        with pytest.raises(EngineUnavailableError, match="server down"):
            pool.acquire(wait=0.1)
    assert attempts == 3 and pool.opened == 0


def test_close_closes_idle_now_and_busy_ones_when_they_come_back() -> None:
    opened = Opened()
    pool = make(opened, size=2)
    idle, busy = pool.acquire(), pool.acquire()
    pool.release(idle)
    pool.close()
    assert not is_open(idle) and is_open(busy)
    pool.release(busy)
    assert not is_open(busy)
    with pytest.raises(EngineUnavailableError, match="the Test backend is closed"):
        pool.acquire()


def test_close_wakes_a_waiter() -> None:
    pool = make(Opened(), size=1)
    pool.acquire()
    failures: list[Exception] = []

    def wait() -> None:
        try:
            pool.acquire(wait=30)
        except EngineUnavailableError as exc:
            failures.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.1)
    started = time.perf_counter()
    pool.close()
    waiter.join(5)
    assert not waiter.is_alive() and time.perf_counter() - started < 2
    assert "closed" in str(failures[0])


def test_a_pool_needs_room_for_one_connection() -> None:
    with pytest.raises(ConfigError, match="pool_size must be at least 1, got 0"):
        make(Opened(), size=0)
