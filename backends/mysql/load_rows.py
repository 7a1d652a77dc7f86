"""One pass over a source table: what sizes its columns, its key values, and its rows held in
memory as far as a budget allows.

A MySQL table can only be created once the longest value of each text column is known, so
every row must have been seen before the server takes the first one. A table that fits the
budget is held whole (for a SQLite source the batches are slices of the rows its reader keeps
anyway) and can then be streamed to the server while it is rendered (:mod:`.load_pipe`); a
larger one is written to a spool file as it is read (:mod:`.load_spool`), from the batches
already held onwards.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from polysql.backends.mysql.types import ColumnStats
from polysql.core.schema import Table

if TYPE_CHECKING:
    from polysql.backends.base import Backend

# Rows held in memory per table (Arrow bytes). Each lane (one per core, up to four) holds one
# table, so a load holds at most that many times this beyond what the source itself keeps.
HOLD_BYTES = 256 * 1024 * 1024
_STATS_KINDS = frozenset({"text", "blob", "float", "timestamp"})


class ReadCancelled(Exception):
    """The load no longer needs this table's rows (it failed while they were being read)."""


class TableRows:
    """A source table read once, batch by batch; every batch read updates the statistics and
    the kept key values, whether it is held or passed on."""

    def __init__(self, source: Backend, table: Table, *,
                 cancelled: threading.Event | None = None, keep: Collection[str] = ()) -> None:
        self.table = table
        self.kinds = [c.type.kind for c in table.columns]
        self.stats = [ColumnStats() for _ in table.columns]
        self.held: list[pa.RecordBatch] = []
        self._batches = iter(source.read_table(table))
        self._cancelled = cancelled
        self._keeping = {i: c.name for i, c in enumerate(table.columns) if c.name in keep}
        self._pieces: dict[str, list[pa.Array]] = {name: [] for name in self._keeping.values()}
        self._exhausted = False

    def hold(self, budget: int | None = None) -> bool:
        """Read and hold batches until the table ends (True) or the held ones pass ``budget``
        bytes (default :data:`HOLD_BYTES`; False: the rest is still to be read, with
        :meth:`rest`)."""
        limit = HOLD_BYTES if budget is None else budget
        size = sum(batch.nbytes for batch in self.held)
        while size <= limit:
            batch = self._next()
            if batch is None:
                return True
            self.held.append(batch)
            size += batch.nbytes
        return False

    def rest(self) -> Iterator[pa.RecordBatch]:
        """The held batches (let go of as they are handed out), then the ones not yet read."""
        held, self.held = deque(self.held), []
        while held:
            yield held.popleft()
        while (batch := self._next()) is not None:
            yield batch

    def close(self) -> None:
        """Let go of the held rows and of the source's reader (it may hold a connection)."""
        self.held = []
        close = getattr(self._batches, "close", None)
        if close is not None:
            close()

    def kept_values(self) -> dict[str, pa.ChunkedArray]:
        """The values of the kept key columns; only once every batch has been read."""
        if not self._exhausted:
            raise RuntimeError(f"table {self.table.name!r} has not been read to its end")
        return {name: pa.chunked_array(arrays, type=None if arrays else pa.int64())
                for name, arrays in self._pieces.items()}

    def _next(self) -> pa.RecordBatch | None:
        if self._exhausted:
            return None
        while True:
            if self._cancelled is not None and self._cancelled.is_set():
                raise ReadCancelled(self.table.name)
            batch = next(self._batches, None)
            if batch is None:
                self._exhausted = True
                return None
            if batch.num_rows:
                break
        for index, kind in enumerate(self.kinds):
            if kind in _STATS_KINDS:
                self.stats[index].update(batch.column(index), kind)
        for index, name in self._keeping.items():
            self._pieces[name].append(batch.column(index))
        return batch
