"""What a SQLite load source yields, kept per source content so every target after the first
pays nothing for it.

A sweep loads each database into every engine it evaluates, and each load opens the source
afresh; the type scan and the row read would otherwise run once per target engine. Both are
kept here, in this process only, keyed by the source's content fingerprint -- a changed file is
another key, so nothing stale is ever served. Rows are kept up to a memory budget (least recently
used out first); a table larger than the budget is streamed as before and not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from polysql.core.schema import Coercion, Table

if TYPE_CHECKING:
    from collections.abc import Iterator

    from polysql.backends.sqlite.introspect import SourceTable

# Rows of source tables kept in memory at once, across all sources.
ROW_BUDGET_BYTES = 1 << 30
# Introspected schemas kept (each is small: names, types, keys).
_SCHEMAS_KEPT = 256
# An estimate of a stored value's size in Arrow, to decide before reading whether a table fits.
_BYTES_PER_VALUE = 16


@dataclass(slots=True)
class CachedRows:
    data: pa.Table
    coercions: list[Coercion] = field(default_factory=list)  # found while reading the rows
    # False: ``data`` holds only the columns the type scan read ahead; the rest are still to read
    complete: bool = True


def table_key(fingerprint: str, table: Table) -> tuple[str, str, str]:
    """A table's rows depend on the source content and the logical types they were read as."""
    return fingerprint, table.name, repr([(c.name, str(c.type)) for c in table.columns])


def fits(table: Table) -> bool:
    rows = table.row_count if table.row_count is not None else 0
    return fits_in_memory(rows, len(table.columns))


def fits_in_memory(rows: int, columns: int) -> bool:
    """Whether a table of this shape may be held in memory whole (half the row budget)."""
    return rows * max(1, columns) * _BYTES_PER_VALUE <= ROW_BUDGET_BYTES // 2


class SourceCache:
    def __init__(self, budget: int = ROW_BUDGET_BYTES) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._schemas: OrderedDict[str, list[SourceTable]] = OrderedDict()
        self._rows: OrderedDict[tuple[str, str, str], CachedRows] = OrderedDict()
        self._size = 0
        self._reading: dict[tuple[str, str, str], threading.Lock] = {}

    # -- schemas ---------------------------------------------------------------------------
    def schema(self, fingerprint: str,
               introspect: Callable[[], list[SourceTable]]) -> list[SourceTable]:
        # engines loading the same source at the same moment wait for one scan, not run four
        with self.reading(("schema", fingerprint, "")):
            with self._lock:
                known = self._schemas.get(fingerprint)
                if known is not None:
                    self._schemas.move_to_end(fingerprint)
                    return known
            scanned = introspect()  # outside the cache's lock: other sources scan meanwhile
            with self._lock:
                self._schemas[fingerprint] = scanned
                while len(self._schemas) > _SCHEMAS_KEPT:
                    self._schemas.popitem(last=False)
            return scanned

    # -- rows ------------------------------------------------------------------------------
    @contextmanager
    def reading(self, key: tuple[str, str, str]) -> Iterator[None]:
        """Held while one reader fills ``key``: a second reader of the same table (another
        engine's load, started at the same moment) waits and then takes the kept copy."""
        with self._lock:
            gate = self._reading.setdefault(key, threading.Lock())
        with gate:
            yield

    def rows(self, key: tuple[str, str, str]) -> CachedRows | None:
        with self._lock:
            found = self._rows.get(key)
            if found is not None:
                self._rows.move_to_end(key)
            return found

    def keep(self, key: tuple[str, str, str], rows: CachedRows) -> None:
        size = rows.data.nbytes
        if size > self.budget:
            return
        with self._lock:
            previous = self._rows.pop(key, None)
            if previous is not None:
                self._size -= previous.data.nbytes
            while self._rows and self._size + size > self.budget:
                _, dropped = self._rows.popitem(last=False)
                self._size -= dropped.data.nbytes
            self._rows[key] = rows
            self._size += size

    def clear(self) -> None:
        with self._lock:
            self._schemas.clear()
            self._rows.clear()
            self._reading.clear()
            self._size = 0


# One per process: every SQLite source connection shares it.
SOURCES = SourceCache()
