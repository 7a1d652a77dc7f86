"""One sweep at a time per run folder.

Two sweeps writing the same run folder would each run every pending item, append both verdicts
to the same results file, and rewrite run.json and the reports under each other; with different
inputs (a predictions file edited between the two starts) the folder would end up holding a mix
no single invocation produced. The sweep therefore holds an exclusive lock on a file in the run
folder while it works, and a second one is refused at once with who holds it. The lock is the
operating system's (``flock``): it goes away with the process, however that ends, so a crashed
or killed sweep never leaves the folder locked.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from polysql.core.errors import ResultsStoreError

try:
    import fcntl
except ImportError:  # not a POSIX system: no advisory locks to take
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".polysql-lock"


@contextlib.contextmanager
def run_folder_lock(run_dir: Path) -> Iterator[None]:
    """Hold ``run_dir`` for this process; ResultsStoreError when another process holds it."""
    if run_dir.exists() and not run_dir.is_dir():
        raise ResultsStoreError(f"the run folder {run_dir} is a file; give --out the path of a "
                                f"folder (it is created when missing)")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        # Opened for appending: a refused opener must not erase the holder's note.
        handle = (run_dir / LOCK_FILE).open("a+", encoding="utf-8")
    except OSError as exc:
        raise ResultsStoreError(f"cannot write in the run folder {run_dir} "
                                f"({exc.strerror or exc}); give --out a folder you can write "
                                f"in") from exc
    if fcntl is None:
        handle.close()
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise ResultsStoreError(
                f"run folder {run_dir} is in use by another sweep ({holder}); wait for it to "
                f"finish, or give this one another --out folder") from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"process {os.getpid()}, since "
                         f"{datetime.now(UTC).isoformat(timespec='seconds')}\n")
            handle.flush()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
