"""CPU-seconds behind a benchmark's wall time: those of the child processes it ran, and those of
a database server running on this machine.

On a machine with few cores a loader's wall time is bounded below by the CPU work of the loader
and of the server together, divided by the cores; printing both next to the wall time says
whether a loader waits or works.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from pathlib import Path

_LOCAL_HOSTS = frozenset({"", "localhost", "127.0.0.1", "::1"})


def children_cpu() -> float:
    """User + system CPU-seconds of this process's children that have ended so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def server_cpu_reader(host: str | None, names: tuple[str, ...]) -> Callable[[], float] | None:
    """A reading of the CPU-seconds used so far by the processes called ``names`` (with the
    children they have reaped: a PostgreSQL backend's time joins its postmaster's when the
    connection ends), or None when the server is not on this machine or cannot be read."""
    if (host or "") not in _LOCAL_HOSTS or not Path("/proc/self/stat").exists():
        return None
    ticks = os.sysconf("SC_CLK_TCK")

    def reading() -> float:
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:
                continue  # ended meanwhile
            name = text[text.index("(") + 1:text.rindex(")")]
            if name in names:
                fields = text[text.rindex(")") + 2:].split()
                # utime, stime, cutime, cstime: fields 14-17 of proc(5), 12-15 after the name
                total += sum(int(value) for value in fields[11:15])
        return total / ticks

    return reading if reading() > 0 else None


def wait_until_quiet(*, idle_share: float = 0.85, window: float = 0.25,
                     longest: float = 20.0) -> float:
    """Wait until this machine's CPUs are idle (at least ``idle_share`` of a ``window``), at
    most ``longest`` seconds; the seconds waited.

    A server keeps working after the statement that loaded it returns (InnoDB flushing pages,
    PostgreSQL's checkpointer and autovacuum analysing new tables): a contender timed right
    after another would pay for that work. Waiting for quiet gives each the same machine. Only
    where /proc/stat exists (Linux); elsewhere nothing is waited."""
    stat = Path("/proc/stat")
    if not stat.exists():
        return 0.0

    def busy_and_idle() -> tuple[int, int]:
        fields = [int(value) for value in stat.read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields) - idle, idle

    started = time.perf_counter()
    while time.perf_counter() - started < longest:
        busy_before, idle_before = busy_and_idle()
        time.sleep(window)
        busy_after, idle_after = busy_and_idle()
        busy, idle = busy_after - busy_before, idle_after - idle_before
        if busy + idle == 0 or idle / (busy + idle) >= idle_share:
            break
    return time.perf_counter() - started
