"""What a ``bigquery://`` URL names, and the google-cloud-bigquery client for it.

``bigquery://PROJECT/DATASET?option=value&...``; options:

* ``emulator=http://127.0.0.1:9050`` -- talk to a BigQuery emulator at that endpoint with
  anonymous credentials (results are labelled emulated);
* ``location=US`` -- where datasets are created and jobs run;
* ``maximum_bytes_billed=N`` -- every evaluated query fails (``too_large``) instead of billing
  more than N bytes;
* ``credentials=/path/key.json`` -- a service-account key file instead of application-default
  credentials (``google.auth.default``);
* ``load=auto|job|dml`` -- the bulk path of a load (see ``load_bulk.py``).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import URL

from polysql.core.errors import ConfigError, EngineUnavailableError

SCOPES = ("https://www.googleapis.com/auth/bigquery",)
LOAD_METHODS = ("auto", "job", "dml")
_QUERY_OPTIONS = ("emulator", "location", "maximum_bytes_billed", "credentials", "load")
_DATASET_NAME = re.compile(r"^[A-Za-z0-9_]{1,1024}$")
_ENDPOINT = re.compile(r"^https?://[^/\s?#]+/?$")


@dataclass(frozen=True, slots=True)
class Target:
    project: str
    dataset: str | None
    emulator: str | None = None
    location: str | None = None
    maximum_bytes_billed: int | None = None
    credentials_file: str | None = None
    load_method: str = "auto"

    @property
    def dataset_ref(self) -> str:
        if not self.dataset:
            raise ConfigError(f"the BigQuery URL for project {self.project!r} names no dataset: "
                              f"use bigquery://{self.project}/<dataset>")
        return f"{self.project}.{self.dataset}"


def _one(url: URL, key: str) -> str | None:
    value = url.query.get(key)
    if isinstance(value, tuple):
        value = value[-1]
    return value or None


def parse_target(url: URL) -> Target:
    project = url.host
    if not project:
        raise ConfigError(f"BigQuery URL {url.render_as_string(hide_password=True)!r} names no "
                          f"project: use bigquery://<project>/<dataset>")
    unknown = sorted(set(url.query) - set(_QUERY_OPTIONS))
    if unknown:
        raise ConfigError(f"unknown BigQuery URL option(s) {', '.join(unknown)}; supported: "
                          f"{', '.join(_QUERY_OPTIONS)}")
    dataset = (url.database or "").strip("/") or None
    if dataset is not None and not _DATASET_NAME.match(dataset):
        raise ConfigError(f"BigQuery dataset name {dataset!r} must be letters, digits and "
                          f"underscores (at most 1024)")
    emulator = _one(url, "emulator")
    if emulator is not None and not _ENDPOINT.match(emulator):
        raise ConfigError(f"emulator={emulator!r} must be an endpoint such as "
                          f"http://127.0.0.1:9050")
    limit = _one(url, "maximum_bytes_billed")
    load_method = _one(url, "load") or "auto"
    if load_method not in LOAD_METHODS:
        raise ConfigError(f"load={load_method!r}: use one of {', '.join(LOAD_METHODS)}")
    try:
        maximum = int(limit) if limit is not None else None
    except ValueError as exc:
        raise ConfigError(f"maximum_bytes_billed={limit!r} is not a number of bytes") from exc
    return Target(project=project, dataset=dataset, emulator=emulator.rstrip("/") if emulator
                  else None, location=_one(url, "location"), maximum_bytes_billed=maximum,
                  credentials_file=_one(url, "credentials"), load_method=load_method)


def make_client(target: Target) -> Any:
    """A ``google.cloud.bigquery.Client`` for ``target``; EngineUnavailableError when no
    credentials can be found."""
    from google.api_core.client_options import ClientOptions
    from google.cloud import bigquery

    if target.emulator is not None:
        from google.auth.credentials import AnonymousCredentials

        return bigquery.Client(project=target.project, credentials=AnonymousCredentials(),
                               location=target.location,
                               client_options=ClientOptions(api_endpoint=target.emulator))
    import google.auth
    import google.auth.exceptions

    try:
        if target.credentials_file:
            from google.oauth2 import service_account

            credentials = service_account.Credentials.from_service_account_file(
                target.credentials_file, scopes=SCOPES)
        else:
            credentials, _ = google.auth.default(scopes=SCOPES)
    except (google.auth.exceptions.GoogleAuthError, OSError, ValueError) as exc:
        raise EngineUnavailableError(
            f"no Google Cloud credentials for BigQuery project {target.project!r}: {exc} "
            f"(run `gcloud auth application-default login`, set GOOGLE_APPLICATION_CREDENTIALS, "
            f"or add ?credentials=/path/key.json to the URL)") from exc
    return bigquery.Client(project=target.project, credentials=credentials,
                           location=target.location)


def emulator_version(endpoint: str) -> str:
    """``bqemulator X.Y.Z`` from the emulator's health endpoint; EngineUnavailableError when it
    does not answer."""
    try:
        with urllib.request.urlopen(f"{endpoint}/healthz", timeout=5) as response:
            data = json.loads(response.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise EngineUnavailableError(f"BigQuery emulator at {endpoint} does not answer: "
                                     f"{exc}") from exc
    version = data.get("version") if isinstance(data, dict) else None
    return f"bqemulator {version}" if version else "BigQuery emulator (version unknown)"
