"""How MySQL/MariaDB errors are named: a server whose disk is full fails statements as an outage.

The errors below are the exact answers of MariaDB 10.11 started with its tmpdir on a full 1 MiB
file system (a sort that spills, then a DISTINCT whose temporary table spills). A test cannot
restart the suite's server with another tmpdir, so they are checked here as the server gave them
(the tmpdir's name left out);
a full disk on PostgreSQL is tried for real in tests/backends/postgres/test_disk_full.py.
"""

from __future__ import annotations

import pytest

from polysql.backends.mysql.errors import classify

pytestmark = pytest.mark.mysql

SORT_ON_A_FULL_DISK = (3, "Error writing file '/tmp/#sql/fd=51' "
                          "(Errcode: 28 \"No space left on device\")")
TEMPORARY_TABLE_ON_A_FULL_DISK = (126, "Got error '126 \"Index is corrupted\"' for "
                                       "'/tmp/#sql-temptable-1ec0-1b-5.MAI'")


@pytest.mark.parametrize(("code", "message"), [
    SORT_ON_A_FULL_DISK,
    TEMPORARY_TABLE_ON_A_FULL_DISK,
    (1021, "Disk full (/tmp/#sql_1.MAI); waiting for someone to free some space..."),
    (3, "Error writing file '/tmp/MYfd=65' (OS errno 28 - No space left on device)"),  # MySQL 8
    (1030, "Got error 28 \"No space left on device\" from storage engine Aria"),
    (1026, "Error writing file './x' (errno: 122 \"Disk quota exceeded\")"),
])
def test_a_full_disk_is_an_outage_not_the_statements_error(code: int, message: str) -> None:
    assert classify(code, deadline_passed=False, message=message) == "unavailable"


@pytest.mark.parametrize(("code", "message"), [
    # a statement's own error may quote any text: only the codes that carry an OS error count
    (1292, "Truncated incorrect INTEGER value: 'Errcode: 28 No space left on device'"),
    (1064, "You have an error in your SQL syntax near 'errno 28' at line 1"),
    (3, "Error writing file '/tmp/x' (Errcode: 13 \"Permission denied\")"),
])
def test_other_errors_mentioning_the_words_stay_the_statements_own(code: int, message: str
                                                                    ) -> None:
    assert classify(code, deadline_passed=False, message=message) != "unavailable"
