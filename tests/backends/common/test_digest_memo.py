"""Large files' digests are remembered by their status, and never served for changed content."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from polysql.backends._common import digest_memo
from polysql.backends._common.fingerprint import file_digest


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("POLYSQL_CACHE", str(folder))
    return folder


@pytest.fixture
def settled_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written by the test count as settled at once, and any size is worth remembering
    (the real thresholds are 2 s and 16 MB; the test about fresh files keeps them)."""
    monkeypatch.setattr(digest_memo, "SETTLE_SECONDS", 0.0)
    monkeypatch.setattr(digest_memo, "SMALLEST_BYTES", 1)


def counted(compute: Callable[[], str]) -> tuple[Callable[[], str], list[int]]:
    calls: list[int] = []

    def run() -> str:
        calls.append(1)
        return compute()

    return run, calls


def sha(*parts: bytes) -> str:
    return "sha256:" + hashlib.sha256(b"".join(parts)).hexdigest()


def test_an_unchanged_file_is_not_read_again(tmp_path: Path, cache: Path,
                                              settled_now: None) -> None:
    path = tmp_path / "db.sqlite"
    path.write_bytes(b"x" * 4096)
    compute, calls = counted(lambda: sha(path.read_bytes()))
    first = digest_memo.remembered_digest((path,), compute)
    second = digest_memo.remembered_digest((path,), compute)
    assert first == second == sha(b"x" * 4096)
    assert len(calls) == 1
    assert file_digest(path) == sha(b"x" * 4096)


def test_same_size_rewrite_with_the_old_mtime_is_read_again(tmp_path: Path, cache: Path,
                                                            settled_now: None) -> None:
    path = tmp_path / "db.sqlite"
    path.write_bytes(b"a" * 4096)
    assert file_digest(path) == sha(b"a" * 4096)
    before = path.stat()
    time.sleep(0.05)  # past the file system clock's tick (the 2 s settle time is patched out)
    with path.open("r+b") as handle:  # same inode, same size
        handle.write(b"b")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime set back
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert file_digest(path) == sha(b"b" + b"a" * 4095)


def test_a_replaced_file_and_a_new_companion_are_read_again(tmp_path: Path, cache: Path,
                                                            settled_now: None) -> None:
    path, wal = tmp_path / "db.sqlite", tmp_path / "db.sqlite-wal"
    path.write_bytes(b"one")
    assert file_digest(path, wal) == sha(b"one")
    wal.write_bytes(b"log")
    assert file_digest(path, wal) == sha(b"one", b"log")
    replacement = tmp_path / "new.sqlite"
    replacement.write_bytes(b"two")
    os.replace(replacement, path)
    assert file_digest(path, wal) == sha(b"two", b"log")


@pytest.mark.parametrize(("kept", "patched"), [
    ("settle time (2 s): a file written just now", "SMALLEST_BYTES"),
    ("size threshold (16 MB): a small file", "SETTLE_SECONDS"),
])
def test_fresh_or_small_files_are_read_every_time(kept: str, patched: str, tmp_path: Path,
                                                  cache: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_memo, patched, 0 if patched == "SETTLE_SECONDS" else 1)
    path = tmp_path / "db.sqlite"
    path.write_bytes(b"fresh and small")
    compute, calls = counted(lambda: sha(path.read_bytes()))
    digest_memo.remembered_digest((path,), compute)
    digest_memo.remembered_digest((path,), compute)
    assert len(calls) == 2, kept


def test_a_file_changed_while_read_is_not_remembered(tmp_path: Path, cache: Path,
                                                     settled_now: None) -> None:
    path = tmp_path / "db.sqlite"
    path.write_bytes(b"before")
    time.sleep(0.05)  # past the file system clock's tick (the 2 s settle time is patched out)

    def changing() -> str:
        digest = sha(path.read_bytes())
        path.write_bytes(b"after!")  # same size, written while "reading"
        return digest

    digest_memo.remembered_digest((path,), changing)
    assert file_digest(path) == sha(b"after!")


def test_an_unusable_memo_still_gives_the_digest(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 settled_now: None) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / digest_memo.MEMO_FILE).write_bytes(b"not a database at all" * 100)
    monkeypatch.setenv("POLYSQL_CACHE", str(folder))
    path = tmp_path / "db.sqlite"
    path.write_bytes(b"content")
    assert file_digest(path) == sha(b"content")
    assert file_digest(path) == sha(b"content")


def test_the_memo_is_a_plain_table_in_the_cache(tmp_path: Path, cache: Path,
                                                settled_now: None) -> None:
    path = tmp_path / "db.sqlite"
    path.write_bytes(b"kept")
    file_digest(path)
    with sqlite3.connect(cache / digest_memo.MEMO_FILE) as conn:
        rows = conn.execute("SELECT paths, digest FROM digests").fetchall()
    assert rows == [(f'["{os.path.realpath(path)}"]', sha(b"kept"))]
