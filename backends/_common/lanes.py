"""How many tables a bulk load fills at once."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from polysql.backends.base import Backend

#: more lanes than this only queue up behind the engine's own disk and log writers
MOST_LANES = 4


def load_lanes(source: Backend, *, most: int = MOST_LANES) -> int:
    """One lane per core, up to ``most``, when ``source`` can be read from several threads at
    once (its ``parallel_read`` capability); otherwise one."""
    if "parallel_read" not in source.capabilities:
        return 1
    return max(1, min(most, os.cpu_count() or 1))
