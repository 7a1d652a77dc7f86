"""Execution cache: results of (engine, database content, SQL, limits) stored on disk.

Gold queries run once per question no matter how many predictors and engines are swept, and a
re-run or re-analysis costs nothing. Keys include the engine version and the database
fingerprint, so a changed engine or dataset never serves stale results. Errors that depend on the
moment (``unavailable``) are never cached.

A ``put`` costs the engine worker that makes it next to nothing: the result is handed to a writer
thread, which pickles it (compressing large pickles) and commits entries in batches, every
``batch_size`` entries or ``flush_interval`` seconds, and on :meth:`ExecutionCache.flush` and
:meth:`ExecutionCache.close`. Pickling is most of a put's cost (a result of 20,000 rows of
Decimals takes about 20 ms), and it would otherwise hold up the worker's next statement. Entries
not committed yet are served from memory, so a ``get`` always sees what this process put. A crash
loses only the uncommitted tail (at most about ``flush_interval`` seconds of entries): those
statements run again next time.

The results put or read most recently stay in memory too, up to :data:`RECENT_CELLS` values in
all: a sweep asks for the same large result from every engine lane (a gold re-run under a higher
row cap, a prediction that is the gold's own SQL), and unpickling 200,000 rows again each time
cost about as much as judging them (60 ms against 80-180 ms), all of it holding the GIL.
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
import sqlite3
import threading
import zlib
from collections import OrderedDict
from pathlib import Path
from types import TracebackType

from polysql.core.model import Result

# 2: results pickle as polysql.core.model.Result since the module moved; entries written
# before would not unpickle, so the new version keys them out on purpose instead of by accident.
# Compressed payloads did not change it: they carry a marker (below) that no pickle starts with,
# so entries written before them still read as they are.
SCHEMA_VERSION = "2"

# A compressed payload: this marker, then the zlib stream of the pickle. Pickles of protocol 2
# and later start with 0x80, so the two kinds never collide.
_COMPRESSED = b"Z1"
# Below this size a pickle is stored as it is: compressing a few hundred bytes saves nothing
# worth its time.
COMPRESS_ABOVE = 1024
# Level 1: most of the size gain of higher levels for a fraction of their time, and the point
# is a cheap put.
_LEVEL = 1

DEFAULT_BATCH_SIZE = 200
DEFAULT_FLUSH_INTERVAL = 0.5  # seconds
# Values (rows x columns) of the recent results kept in memory: about 100 MB of Python rows at
# most, a few large results or thousands of small ones.
RECENT_CELLS = 2_000_000


def execution_key(*, engine: str, engine_version: str, db_fingerprint: str, sql: str,
                  timeout: float, max_rows: int) -> str:
    parts = [SCHEMA_VERSION, engine, engine_version, db_fingerprint, repr(timeout), str(max_rows), sql]
    # surrogatepass: any Python str gets a key, even one holding a lone surrogate (which plain
    # UTF-8 refuses); it is still one-to-one, and for valid text the bytes are plain UTF-8, so
    # every key made before stays the same.
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", errors="surrogatepass")).hexdigest()


def encode_result(result: Result) -> bytes:
    """The stored form of a result: its pickle, compressed when that is large."""
    blob = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    if len(blob) <= COMPRESS_ABOVE:
        return blob
    return _COMPRESSED + zlib.compress(blob, _LEVEL)


def decode_result(blob: bytes) -> Result:
    """A result from its stored form, compressed or not (older entries never are)."""
    if blob[:len(_COMPRESSED)] == _COMPRESSED:
        blob = zlib.decompress(blob[len(_COMPRESSED):])
    result: Result = pickle.loads(blob)  # our own file, written by encode_result
    if not hasattr(result, "stats"):  # written before results carried engine stats
        result.stats = {}
    return result


class ExecutionCache:
    """The cache file, shared by the sweep's threads.

    Results put are treated as immutable from then on (the sweep never changes a result after
    executing it): an entry not committed yet is served as the very object that was put.

    Two connections, so a worker reading is never held up by the writer committing: WAL lets the
    reader see every committed entry while a batch is written.
    """

    def __init__(self, path: str | Path, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 flush_interval: float = DEFAULT_FLUSH_INTERVAL,
                 recent_cells: int = RECENT_CELLS) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.batch_size = max(1, batch_size)
        self.flush_interval = flush_interval
        self._write_conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._write_conn.execute("PRAGMA journal_mode=WAL")
        # A cache: a crash may lose the last few entries (they are recomputed), never corrupt the
        # file; NORMAL drops the fsync every commit paid under FULL.
        self._write_conn.execute("PRAGMA synchronous=NORMAL")
        self._write_conn.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value BLOB)")
        self._write_conn.commit()
        # One read connection per thread: WAL lets them all read at once, where one shared
        # connection made every engine lane queue for it (and for the GIL behind it).
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._memory_lock = threading.Lock()  # guards _pending, _writing, the flags and counters
        self._write_lock = threading.Lock()  # one batch written at a time, on one connection
        self._pending: dict[str, Result] = {}  # put, not yet taken by a batch
        self._writing: dict[str, Result] = {}  # in the batch being written now
        self._recent: OrderedDict[str, Result] = OrderedDict()  # committed or read, newest last
        self._recent_used = 0  # values held by _recent (recent_cells: the budget)
        self.recent_cells = recent_cells
        self._wake = threading.Event()  # a full batch waits, or the cache is closing
        self._writer: threading.Thread | None = None  # started by the first put
        self._closed = False
        self.hits = 0
        self.misses = 0
        self.commits = 0  # batches committed (how well puts are grouped)
        self.unstored = 0  # results that could not be pickled: never cached, run again next time
        self.write_error: str | None = None  # the last failed commit (its batch is recomputed)

    def get(self, key: str) -> Result | None:
        with self._memory_lock:
            result = self._pending.get(key)
            if result is None:
                result = self._writing.get(key)
            if result is None:
                result = self._recent.get(key)
                if result is not None:
                    self._recent.move_to_end(key)
        if result is None:
            result = self._read(key)
            if result is not None:
                with self._memory_lock:
                    self._remember([(key, result)])
        with self._memory_lock:
            if result is None:
                self.misses += 1
            else:
                self.hits += 1
        return result

    def _remember(self, entries: list[tuple[str, Result]]) -> None:
        """Keep ``entries`` among the recent results, dropping the oldest beyond the budget; the
        caller holds ``_memory_lock``."""
        for key, result in entries:
            cells = _cells(result)
            if cells > self.recent_cells:
                continue  # larger than the whole budget: read from the file when asked again
            old = self._recent.pop(key, None)
            if old is not None:
                self._recent_used -= _cells(old)
            self._recent[key] = result
            self._recent_used += cells
        while self._recent_used > self.recent_cells and self._recent:
            _key, dropped = self._recent.popitem(last=False)
            self._recent_used -= _cells(dropped)

    def _reader(self) -> sqlite3.Connection:
        """This thread's read connection, opened on its first read."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # check_same_thread off only so that close(), on another thread, can close it
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            with self._memory_lock:
                closed = self._closed
                if not closed:
                    self._readers.append(conn)
            if closed:
                conn.close()
                raise sqlite3.ProgrammingError("the execution cache is closed")
            self._local.conn = conn
        return conn

    def _read(self, key: str) -> Result | None:
        row = self._reader().execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return decode_result(row[0])
        except Exception:  # noqa: BLE001 - an unreadable entry is a miss; it will be overwritten
            return None

    def put(self, key: str, result: Result) -> None:
        if result.unavailable:
            return
        with self._memory_lock:
            if self._closed:  # a statement finishing after the sweep ended: only a lost entry
                return
            self._pending[key] = result
            full = len(self._pending) >= self.batch_size
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="execution-cache",
                                                daemon=True)
                self._writer.start()
        if full:
            self._wake.set()

    def _write_loop(self) -> None:
        """The writer thread: a batch every ``flush_interval`` seconds, sooner when one is full.
        A daemon, so a process that ends without closing the cache is never held up by it."""
        while True:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            with self._memory_lock:
                closing = self._closed
            if closing:
                return  # close() writes the rest
            self.flush()

    def flush(self) -> None:
        """Commit every entry put so far."""
        with self._write_lock:
            self._commit_pending()

    def _commit_pending(self) -> None:
        """Pickle and commit the pending entries as one transaction; the caller holds
        ``_write_lock``. A failed commit drops its batch (a cache: those statements run again)
        and is kept in ``write_error``; the sweep goes on."""
        with self._memory_lock:
            batch, self._pending = self._pending, {}
            self._writing = batch
        if not batch:
            return
        stored: list[tuple[str, Result]] = []  # committed: kept among the recent results
        try:
            rows: list[tuple[str, bytes]] = []
            for key, result in batch.items():
                try:
                    rows.append((key, encode_result(result)))
                except Exception:  # noqa: BLE001 - a driver value pickle cannot take: not cached
                    with self._memory_lock:
                        self.unstored += 1
                    continue
                stored.append((key, result))
            self._write_conn.executemany("INSERT OR REPLACE INTO results VALUES (?, ?)", rows)
            self._write_conn.commit()
            with self._memory_lock:
                self.commits += 1
        except sqlite3.Error as exc:
            stored = []  # as if never cached, in memory too: run again
            self.write_error = f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(sqlite3.Error):
                self._write_conn.rollback()
        finally:
            with self._memory_lock:
                self._remember(stored)
                self._writing = {}

    def close(self) -> None:
        """Stop the writer, commit what is pending and close the file; closing twice does
        nothing."""
        with self._memory_lock:
            if self._closed:
                return
            self._closed = True
            writer = self._writer
        self._wake.set()
        if writer is not None:
            writer.join()
        with self._write_lock:
            try:
                self._commit_pending()
            finally:
                self._write_conn.close()
                with self._memory_lock:
                    readers, self._readers = self._readers, []
                    self._recent.clear()
                    self._recent_used = 0
                for conn in readers:
                    conn.close()

    def __enter__(self) -> ExecutionCache:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _cells(result: Result) -> int:
    """The values a result holds, as the recent results' budget counts them (at least 1)."""
    return max(1, len(result.rows) * max(1, len(result.columns)))
