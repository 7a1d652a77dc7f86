"""Typed exception tree for polysql.

Everything polysql raises on purpose derives from :class:`PolysqlError`, so callers (and the CLI)
can tell a user mistake from a bug. Execution errors of evaluated SQL are *not* raised: they are
recorded on :class:`polysql.Result` as :class:`polysql.ExecError` so that every prediction still
receives a verdict.
"""

from __future__ import annotations


class PolysqlError(Exception):
    """Base class of every error polysql raises deliberately."""


class ConfigError(PolysqlError):
    """Invalid configuration or arguments (bad option value, conflicting flags)."""


class UnknownEngineError(ConfigError):
    """An engine URL whose scheme no installed backend handles."""


class EngineError(PolysqlError):
    """An engine could not be used (connect, load, introspect) for a reason outside evaluated SQL."""


class EngineUnavailableError(EngineError):
    """The engine is not reachable or its client library is not installed."""


class EvidenceUnavailableError(EngineUnavailableError):
    """A re-run a verdict needed could not run at all: its engine was unavailable (gone away,
    unreachable). Judging stops there rather than falling back to less evidence, since an
    outage must never become a wrong answer; judge again once the engine answers. ``side``
    says whose re-run it was: ``"gold"`` (the gold with its ORDER BY keys, its LIMIT widened,
    NULLs ordered by another convention, or under a higher row cap) or ``"prediction"`` (under
    a higher row cap)."""

    def __init__(self, message: str, *, side: str) -> None:
        super().__init__(message)
        self.side = side


class LoadError(EngineError):
    """Copying a database between engines failed."""


class DatasetError(PolysqlError):
    """A dataset is missing, malformed or inconsistent."""


class PredictionFileError(PolysqlError):
    """A predictions file cannot be read at all (individual bad lines are reported, not raised)."""


class ComparisonError(PolysqlError):
    """Comparison was asked something it cannot answer (e.g. an unknown policy option)."""


class ResultsStoreError(PolysqlError):
    """A results file is unreadable, cannot be written, or belongs to a different sweep."""


class LLMError(PolysqlError):
    """A model endpoint could not answer (after retries), or a model config is unusable."""


class LLMUnavailableError(LLMError):
    """The endpoint gave no answer at all: unreachable, timed out or kept failing (5xx, 429)
    after its retries, refused the credentials, or does not know the model. Nothing was answered,
    so a sweep scores nothing and leaves the work pending; a request the endpoint rejected for
    its content (HTTP 400, prompt too long) stays a plain :class:`LLMError`."""


class BundleError(PolysqlError):
    """A leaderboard submission bundle cannot be packed or read (incomplete run, bad archive...)."""
