"""Count how often a comparison reads a result's columns from its rows, per side, so a test can
tell whether a gold's reading was reused."""

from __future__ import annotations

import pytest

from polysql.normalizers import columns


def count_column_reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """From now on (for the test), the number of column reads by side label ("gold",
    "predicted", "widened gold"), filled in as comparisons run."""
    reads: dict[str, int] = {}
    read = columns.ResultColumns._read

    def counting(self: columns.ResultColumns) -> columns.ColumnsRead:
        reads[self.label] = reads.get(self.label, 0) + 1
        return read(self)

    monkeypatch.setattr(columns.ResultColumns, "_read", counting)
    return reads
