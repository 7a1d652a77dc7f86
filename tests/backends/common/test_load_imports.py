"""A load pays for no import it does not use.

pyarrow imports pandas (0.2 s, holding the GIL) the first time it converts a Python or NumPy
object; the load path builds its Arrow values from buffers instead. Each check runs in a fresh
interpreter, where nothing else has imported pandas yet. (Where pandas is not installed at all the
checks hold trivially.)
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

from polysql.backends._common.arrow import null_scalar, number_scalar, text_scalar
from polysql.core.arrow_buffers import primitive_values, valid_mask


def _run_fresh(code: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _source(path: Path) -> Path:
    """Every logical type the SQLite scan and the loaders convert, over more than one batch."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, flag BOOLEAN, day DATE, at DATETIME, "
                 "price NUMERIC(8,2), ratio REAL, name TEXT, data BLOB)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
        (i, i % 2, f"2020-01-{1 + i % 28:02d}", f"2020-01-01 10:{i % 60:02d}:00",
         (i % 1000) / 100, None if i % 7 == 0 else i / 3, f"name {i}", bytes([i % 256]))
        for i in range(70_000)])
    conn.commit()
    conn.close()
    return path


def test_a_sqlite_to_duckdb_load_imports_no_pandas(tmp_path: Path) -> None:
    source = _source(tmp_path / "source.sqlite")
    code = ("import sys, polysql; "
            "report = polysql.load(f'sqlite:///{sys.argv[1]}', f'duckdb:///{sys.argv[2]}'); "
            "print(report.tables['t'], 'pandas' in sys.modules)")
    assert _run_fresh(code, str(source), str(tmp_path / "copy.duckdb")) == "70000 False"


def test_rendering_load_data_files_imports_no_pandas() -> None:
    code = ("import sys, pyarrow as pa; "
            "from polysql.backends.mysql.load_infile_format import batch_lines; "
            "flags = pa.Array.from_buffers(pa.bool_(), 2, [None, pa.py_buffer(bytes([1]))]); "
            "batch = pa.RecordBatch.from_arrays([pa.nulls(2, pa.float64()), flags, "
            "pa.nulls(2, pa.large_binary())], "
            "names=['f', 'b', 'x']); "
            "print(batch_lines(batch, ['float', 'boolean', 'blob']).to_pybytes().decode(), "
            "'pandas' in sys.modules)")
    assert _run_fresh(code) == "NULL,1,NULL\nNULL,0,NULL\n False"


def test_values_built_from_buffers_are_the_values_asked_for() -> None:
    assert number_scalar(-7, pa.int64()).as_py() == -7
    assert number_scalar(2.5, pa.float64()).as_py() == 2.5
    assert text_scalar("naïve").as_py() == "naïve"
    assert text_scalar("x", large=True).type == pa.large_string()
    assert null_scalar(pa.date32()).as_py() is None and null_scalar(pa.date32()).type == pa.date32()


def test_values_read_from_buffers_follow_chunks_slices_and_nulls() -> None:
    first = pa.array([1, None, 3, 4], pa.int64())
    second = pa.array([5, 6, None, 8, 9], pa.int64()).slice(1, 3)  # 6, None, 8
    column = pa.chunked_array([first, second])
    assert valid_mask(column).tolist() == [True, False, True, True, True, False, True]
    values = primitive_values(column, np.int64)
    assert values[valid_mask(column)].tolist() == [1, 3, 4, 6, 8]
    assert valid_mask(pa.nulls(3)).tolist() == [False, False, False]
    assert primitive_values(pa.chunked_array([], pa.float64()), np.float64).size == 0
