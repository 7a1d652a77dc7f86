"""The content digest of a dataset's source database: what loads, records and bundles key on."""

from __future__ import annotations

from polysql.datasets.base import Dataset
from polysql.engines.registry import connect


def source_fingerprint(dataset: Dataset, db_id: str) -> str:
    """Digest of ``db_id``'s source database, computed by the engine its URL names."""
    with connect(dataset.database_url(db_id), read_only=True) as source:
        return source.fingerprint()
