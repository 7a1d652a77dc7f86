"""The named pipe that feeds LOAD DATA while its rows are rendered: it carries exactly the bytes
a spool file would, and however its reader behaves (reads it all, never opens it, leaves half
way) the feeding block ends promptly, leaves no file behind, and raises only the renderer's own
failures. No server is needed: the reader here is a plain file read, as PyMySQL's is."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import pyarrow as pa
import pytest

from polysql.backends.mysql import load_pipe
from polysql.backends.mysql.load_pipe import PipedRows
from polysql.backends.mysql.load_spool import InfileSpool

pytestmark = pytest.mark.skipif(not load_pipe.PIPES, reason="named pipes are POSIX only")

KINDS = ["integer", "text", "float", "blob"]


def _batches(count: int, rows: int = 5_000) -> list[pa.RecordBatch]:
    batches = []
    for b in range(count):
        ids = range(b * rows, (b + 1) * rows)
        batches.append(pa.record_batch([
            pa.array(list(ids)),
            pa.array([None if i % 7 == 0 else f'row "{i}",\n' for i in ids]),
            pa.array([i / 3 for i in ids]),
            pa.array([bytes([i % 256, 0, 10]) for i in ids]),
        ], names=["id", "s", "f", "b"]))
    return batches


def _spooled_bytes(batches: list[pa.RecordBatch]) -> bytes:
    spool = InfileSpool()
    try:
        for batch in batches:
            spool.add_batch(batch, KINDS)
        spool.finish()
        return Path(spool.path).read_bytes()
    finally:
        spool.close()


@pytest.fixture(autouse=True)
def own_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Pipes are made here, so a test sees whether one was left behind."""
    folder = tmp_path / "temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_the_pipe_carries_what_a_spool_file_holds(own_tempdir: Path) -> None:
    batches = _batches(8)
    piped = PipedRows(batches, KINDS)
    assert piped.rows == 8 * 5_000
    with piped.feeding() as path:
        read = Path(path).read_bytes()
    assert read == _spooled_bytes(batches)
    assert list(own_tempdir.iterdir()) == []


def test_rows_are_rendered_afresh_for_each_reading() -> None:
    piped = PipedRows(_batches(2), KINDS)
    with piped.feeding() as path:
        first = Path(path).read_bytes()
    with piped.feeding() as path:
        second = Path(path).read_bytes()
    assert first == second and first.count(b"\n") > 10_000


def test_a_pipe_nobody_opens_ends_at_once(own_tempdir: Path) -> None:
    """The statement failed before the server asked for its file."""
    def feed_unread() -> None:
        with PipedRows(_batches(20), KINDS).feeding():
            pass

    worker = threading.Thread(target=feed_unread, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "the feeding block waits for a reader that never comes"
    assert list(own_tempdir.iterdir()) == []
    assert not [t for t in threading.enumerate() if t.name == "polysql-mysql-pipe"]


def test_a_reader_leaving_half_way_ends_the_feeding_quietly(own_tempdir: Path) -> None:
    """The connection broke mid-file: the renderer stops, and the statement's error is the one
    the loader sees (nothing is raised here)."""
    with PipedRows(_batches(40), KINDS).feeding() as path, open(path, "rb") as pipe:
        assert len(pipe.read(100_000)) == 100_000
    assert list(own_tempdir.iterdir()) == []
    assert not [t for t in threading.enumerate() if t.name == "polysql-mysql-pipe"]


def test_the_error_of_the_block_is_kept(own_tempdir: Path) -> None:
    with pytest.raises(KeyError, match="from the statement"), \
            PipedRows(_batches(3), KINDS).feeding() as path:
        with open(path, "rb") as pipe:
            pipe.read(10)
        raise KeyError("from the statement")
    assert list(own_tempdir.iterdir()) == []


def test_a_renderer_failure_is_raised(own_tempdir: Path) -> None:
    """Rows that cannot be rendered end the data early; the loader learns why rather than
    only that rows are missing."""
    with pytest.raises(ValueError, match="no LOAD DATA form"), \
            PipedRows(_batches(1), ["integer", "text", "float", "interval"]).feeding() as path:
        assert Path(path).read_bytes() == b""
    assert list(own_tempdir.iterdir()) == []
