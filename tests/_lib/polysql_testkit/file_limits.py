"""A full disk and a folder that cannot be written, for real, without mounting anything.

Running polysql's CLI in a child process whose files may not grow past a size stands for a full
disk.

The limit is RLIMIT_FSIZE, set in the child before it starts. Python ignores SIGXFSZ, so a write
past the limit fails with EFBIG ("File too large") where a full disk fails with ENOSPC; SQLite
reports it as "disk I/O error". POSIX only: tests using it skip elsewhere with
:data:`needs_rlimits`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

#: the mark for tests that run the CLI under a file size limit
needs_rlimits = pytest.mark.skipif(
    not hasattr(os, "fork"), reason="the file size limit is set in the child process before it "
                                    "runs (POSIX rlimits)")


def run_cli_with_file_limit(args: list[str], limit: int, *,
                            env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """``polysql ARGS`` in a child whose files may not grow past ``limit`` bytes: its exit code
    and what it printed (stdout then stderr), whitespace folded so wrapped lines read whole."""
    import resource

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run([sys.executable, "-m", "polysql.cli", *args], capture_output=True,
                          text=True, preexec_fn=small_files, timeout=300,
                          env={**os.environ, **(env or {})})
    return done.returncode, " ".join((done.stdout + done.stderr).split())


@contextmanager
def locked_folder(folder: Path) -> Iterator[Path]:
    """A new folder no file can be created in, for this user: without write permission, and for
    root (whom permissions do not stop) also immutable (chattr +i) where the system allows it.
    Skips the test when neither takes effect here."""
    folder.mkdir()
    folder.chmod(0o555)
    chattr = shutil.which("chattr")
    immutable = bool(chattr) and os.geteuid() == 0 and subprocess.run(
        [str(chattr), "+i", str(folder)], capture_output=True).returncode == 0
    try:
        try:
            (folder / "probe").touch()
        except OSError:
            yield folder
        else:
            (folder / "probe").unlink()
            pytest.skip("no way to make a folder unwritable for this user here")
    finally:
        if immutable:
            subprocess.run([str(chattr), "-i", str(folder)], check=True)
        folder.chmod(0o755)
