"""A table's rows kept on disk until the table is filled: for tables too large to hold in memory
(:mod:`.load_rows`), and for servers that refuse LOCAL INFILE.

The table can only be created once the longest values are known, and reading the source twice
costs more than writing the rendered rows to disk. A load that must retry without its key
replays the file.

Two forms: the data file that ``LOAD DATA LOCAL INFILE`` reads, and INSERT bodies for servers
that refuse LOCAL INFILE.
"""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
from collections.abc import Iterator
from typing import IO

import pyarrow as pa

from polysql.backends.mysql.load_infile_format import batch_lines
from polysql.backends.mysql.load_rows import TableRows
from polysql.backends.mysql.types import row_literals

# One INSERT statement's size: far below max_allowed_packet (16 MB by default on MariaDB, 64 MB
# on MySQL 8) while large enough that per-statement overhead vanishes.
MAX_STATEMENT_BYTES = 4 * 1024 * 1024
_LENGTH = struct.Struct("<Q")


class InsertSpool:
    """Rows as the VALUES lists of multi-row INSERTs, each prefixed by its length."""

    def __init__(self) -> None:
        # Closed by close(): the file lives as long as this spool, across several functions.
        self.file: IO[bytes] = tempfile.TemporaryFile(prefix="polysql-mysql-")  # noqa: SIM115
        self.rows = 0
        self._chunk: list[str] = []
        self._size = 0

    def add_batch(self, batch: pa.RecordBatch, kinds: list[str]) -> None:
        for row in row_literals(batch, kinds):
            if self._chunk and self._size + len(row) + 1 > MAX_STATEMENT_BYTES:
                self._flush()
            self._chunk.append(row)
            self._size += len(row) + 1
        self._flush()  # a statement never spans batches: keeps the buffer one batch long
        self.rows += batch.num_rows

    def _flush(self) -> None:
        if self._chunk:
            data = ",".join(self._chunk).encode("utf-8")
            self.file.write(_LENGTH.pack(len(data)))
            self.file.write(data)
        self._chunk, self._size = [], 0

    def finish(self) -> None:
        self.file.flush()

    def bodies(self) -> Iterator[bytes]:
        self.file.seek(0)
        while header := self.file.read(_LENGTH.size):
            yield self.file.read(_LENGTH.unpack(header)[0])

    def close(self) -> None:
        self.file.close()


class InfileSpool:
    """Rows as the data file of ``LOAD DATA LOCAL INFILE`` (see :mod:`.load_infile_format`).

    A named file: the server asks the client for it by the name the statement gives.
    """

    def __init__(self) -> None:
        descriptor, self.path = tempfile.mkstemp(prefix="polysql-mysql-", suffix=".csv")
        # Closed by finish() or close(), which also removes the file.
        self.file: IO[bytes] = os.fdopen(descriptor, "wb", buffering=1 << 20)
        self.rows = 0

    def add_batch(self, batch: pa.RecordBatch, kinds: list[str]) -> None:
        self.file.write(batch_lines(batch, kinds))
        self.rows += batch.num_rows

    def finish(self) -> None:
        self.file.close()  # everything on disk before the server asks for it

    def close(self) -> None:
        self.file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


Spool = InsertSpool | InfileSpool


def spool_table(rows: TableRows, *, infile: bool) -> Spool:
    """The rest of ``rows`` (those held, then those not yet read) written in the chosen form."""
    spool: Spool = InfileSpool() if infile else InsertSpool()
    try:
        for batch in rows.rest():
            spool.add_batch(batch, rows.kinds)
        spool.finish()
    except BaseException:
        spool.close()
        raise
    return spool
