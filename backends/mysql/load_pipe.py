"""A table held in memory, fed to ``LOAD DATA LOCAL INFILE`` through a named pipe as it is
rendered.

Written to a spool file first (:mod:`.load_spool`), a table reaches the server only once its
last row is rendered, and the server then parses and stores alone while the client waits. Held
in memory with its column sizes known (:mod:`.load_rows`), it can be created at once and
rendered batch by batch into a pipe that the server reads as it goes: rendering and storing
overlap on two cores, and nothing is written to disk.

PyMySQL sends a LOCAL INFILE by opening the file the server names and reading it to its end; a
named pipe is read the same way, so no driver internals are involved. Named pipes are POSIX:
elsewhere (or where the temporary folder cannot hold one) every table goes through a spool file.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa

from polysql.backends.mysql.load_infile_format import batch_lines

PIPES = hasattr(os, "mkfifo")
# A larger pipe than the 64 KiB default lets the renderer run a batch ahead of the driver's
# 16 KiB reads with fewer wake-ups (Linux only; best effort, the default works too).
_PIPE_BYTES = 1 << 20
_DRAIN_BYTES = 1 << 16
_DRAIN_WAIT = 0.005


@functools.cache
def pipes_work() -> bool:
    """Whether named pipes can be made where temporary files go (not on Windows, nor on a file
    system that refuses them); asked once per process."""
    if not PIPES:
        return False
    try:
        folder = tempfile.mkdtemp(prefix="polysql-mysql-")
    except OSError:
        return False  # the spool file will say what is wrong with the folder
    try:
        os.mkfifo(os.path.join(folder, "probe"), 0o600)
    except OSError:
        return False
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return True


class PipedRows:
    """A held table's rows as the data file of a LOAD DATA, rendered while the server reads.

    Each :meth:`feeding` renders the rows afresh, so a load that must retry without its key
    replays them, as a spool file would be replayed.
    """

    def __init__(self, batches: list[pa.RecordBatch], kinds: list[str]) -> None:
        self.batches = batches
        self.kinds = kinds
        self.rows = sum(batch.num_rows for batch in batches)

    @contextmanager
    def feeding(self) -> Iterator[str]:
        """The path of a pipe that yields the rows to whoever opens it for reading.

        Leaving the block stops the renderer, whether or not the pipe was read; a failure of
        the renderer itself is raised then (the LOAD DATA saw its rows end early).
        """
        folder = tempfile.mkdtemp(prefix="polysql-mysql-")
        try:
            path = os.path.join(folder, "rows.csv")
            os.mkfifo(path, 0o600)
            feeder = _Feeder(path, self.batches, self.kinds)
            feeder.start()
            try:
                yield path
            finally:
                feeder.finish()
            if feeder.error is not None:
                raise feeder.error
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        self.batches = []


class _Feeder(threading.Thread):
    """Renders the batches into the pipe; stops early when asked or when the reader leaves."""

    def __init__(self, path: str, batches: list[pa.RecordBatch], kinds: list[str]) -> None:
        super().__init__(name="polysql-mysql-pipe", daemon=True)
        self._path = path
        self._batches = batches
        self._kinds = kinds
        self._stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            descriptor = os.open(self._path, os.O_WRONLY)  # waits for a reader
        except OSError as exc:
            self.error = exc
            return
        try:
            _widen(descriptor)
            with os.fdopen(descriptor, "wb") as pipe:
                for batch in self._batches:
                    if self._stopping.is_set():
                        return
                    pipe.write(batch_lines(batch, self._kinds))
        except BrokenPipeError:
            return  # the reader left early: the statement's own error says why
        except BaseException as exc:  # noqa: BLE001 - handed to the loading thread
            self.error = exc

    def finish(self) -> None:
        """Stop rendering and wait for the thread to end.

        The renderer may still wait for a reader that never came (the statement failed before
        the server asked for the file), or on a full pipe that nobody reads any more: the pipe
        is then opened and emptied here until the renderer notices it is to stop.
        """
        self._stopping.set()
        self.join(_DRAIN_WAIT)
        if not self.is_alive():
            return
        reader = os.open(self._path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            while self.is_alive():
                with contextlib.suppress(BlockingIOError):
                    os.read(reader, _DRAIN_BYTES)
                self.join(_DRAIN_WAIT)
        finally:
            os.close(reader)


def _widen(descriptor: int) -> None:
    import fcntl  # POSIX only, as are the pipes themselves

    setting = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setting is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(descriptor, setting, _PIPE_BYTES)
