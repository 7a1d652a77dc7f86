"""BigQuery (google-cloud-bigquery): an evaluation engine and load target, or a BigQuery
emulator.

URLs: ``bigquery://PROJECT/DATASET`` (application-default credentials),
``bigquery://PROJECT/DATASET?emulator=http://HOST:PORT`` (results labelled emulated). Safety:
BigQuery has no read-only session, so statements are screened (the shared guard plus
``screen.py``) and, on the real service, dry-run first; the job's own timeout is backed by a
client cancel. Evaluate with a service account that can only read the dataset. No ``setup.py``:
the engine builds no database from a setup script.

Importing the package is cheap and never imports the engine's client library: the backend class
is loaded on first attribute access (the ``polysql.backends`` entry point names it here).
"""

from __future__ import annotations

from typing import Any

from polysql.backends._common.statement_text import CommentSyntax
from polysql.backends.base import EngineInfo

INFO = EngineInfo(
    name="bigquery",
    dialect="bigquery",
    display_name="BigQuery",
    schemes=("bigquery",),
    aliases={"bigquery": ""},
    text_names=("bigquery",),
    error_vocabulary=(
        ("unknown_table", r"not found: table"),
        ("unknown_function", r"function not found"),
    ),
    url_env="POLYSQL_BIGQUERY_URL",
    extra="bigquery",
    client_modules=("google.cloud.bigquery",),
    setup_template="""\
CREATE TABLE items (
    id INT64 NOT NULL,
    name STRING NOT NULL,
    price NUMERIC NOT NULL
);""",
    comments=CommentSyntax(hash="always"),
)

__all__ = ["INFO", "BigQueryBackend"]


def __getattr__(name: str) -> Any:
    if name == "BigQueryBackend":
        from polysql.backends.bigquery.backend import BigQueryBackend

        return BigQueryBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
