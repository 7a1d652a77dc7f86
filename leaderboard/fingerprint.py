"""A dataset's identity: its questions (ids, databases, gold SQL) and its source databases' content.

Two copies of a dataset share a fingerprint exactly when every question and every source database
byte is the same, so a bundle's numbers can be tied to the data they were measured on.
"""

from __future__ import annotations

import hashlib
import json

from polysql.datasets.base import Dataset
from polysql.engines.fingerprints import source_fingerprint


def database_fingerprints(dataset: Dataset) -> dict[str, str]:
    """Content digest of each source database, by db_id (the same digest loads are keyed on):
    the source engine the dataset's URL names computes it, so no engine is named here."""
    return {db_id: source_fingerprint(dataset, db_id) for db_id in dataset.db_ids()}


def dataset_fingerprint(dataset: Dataset) -> str:
    """sha256 hex over the sorted (id, db_id, gold SQL) triples and every database's digest."""
    questions = sorted([q.id, q.db_id, q.gold_sql] for q in dataset.questions)
    payload = {"questions": questions, "databases": database_fingerprints(dataset)}
    # a canonical serialization: the same content always hashes to the same bytes
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
