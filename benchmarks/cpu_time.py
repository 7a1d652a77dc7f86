"""CPU-seconds behind a benchmark's wall time: those of the child processes it ran, and those of
a database server running on this machine.

On a machine with few cores a loader's wall time is bounded below by the CPU work of the loader
and of the server together, divided by the cores; printing both next to the wall time says
whether a loader waits or works.
"""

from __future__ import annotations

import os
import resource
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
