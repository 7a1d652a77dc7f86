"""A full disk and a folder that cannot be written, for real.

Running polysql's CLI in a child process whose files may not grow past a size stands for a full
disk, without mounting anything. A server's disk, which no limit of ours reaches, is a small
file system mounted for the test (:func:`small_file_system`), where the machine allows it.

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
import tempfile
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


@contextmanager
def small_file_system(size: str, *, owner: int | None = None) -> Iterator[Path]:
    """A new folder holding a file system of ``size`` (tmpfs, e.g. ``"1m"``) that others may
    reach (not under pytest's private temporary folder), owned by ``owner`` (a uid) if given;
    unmounted and removed afterwards. Mounting needs root: elsewhere the test skips."""
    mount = shutil.which("mount")
    folder = Path(tempfile.mkdtemp(prefix="polysql-small-fs-"))
    folder.chmod(0o755)
    try:
        done = (subprocess.run([mount, "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                                str(folder)], capture_output=True, text=True)
                if mount and os.geteuid() == 0 else None)
        if done is None or done.returncode != 0:
            pytest.skip("cannot mount a small file system here (needs root and mount): "
                        + (done.stderr.strip() if done is not None else "not root"))
        try:
            if owner is not None:
                os.chown(folder, owner, -1)
            yield folder
        finally:
            subprocess.run(["umount", "--lazy", str(folder)], check=True)
    finally:
        folder.rmdir()
