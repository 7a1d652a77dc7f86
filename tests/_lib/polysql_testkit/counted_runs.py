"""A run function for the gold helpers that lists every statement it sends to the engine, so a
test can tell which re-runs were made."""

from __future__ import annotations

from collections.abc import Callable

from polysql.backends.base import Backend
from polysql.core.model import Result


def counting(engine: Backend) -> tuple[Callable[[str], Result], list[str]]:
    """``engine.execute``, and the list of the statements it has run so far."""
    ran: list[str] = []

    def run(sql: str) -> Result:
        ran.append(sql)
        return engine.execute(sql)

    return run, ran
