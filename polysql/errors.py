"""polysql's exception types, at the import path users catch them by.

Every exception polysql raises on purpose derives from :class:`PolysqlError`. The classes are
defined in :mod:`polysql.core.errors` (the lowest layer, which every other layer may import);
this module is their stable public address, so ``from polysql.errors import ConfigError`` keeps
working wherever the definitions live.
"""

from __future__ import annotations

from polysql.core.errors import (
    BundleError,
    ComparisonError,
    ConfigError,
    DatasetError,
    EngineError,
    EngineUnavailableError,
    EvidenceUnavailableError,
    LLMError,
    LLMUnavailableError,
    LoadError,
    PolysqlError,
    PredictionFileError,
    ResultsStoreError,
    UnknownEngineError,
)

__all__ = [
    "BundleError",
    "ComparisonError",
    "ConfigError",
    "DatasetError",
    "EngineError",
    "EngineUnavailableError",
    "EvidenceUnavailableError",
    "LLMError",
    "LLMUnavailableError",
    "LoadError",
    "PolysqlError",
    "PredictionFileError",
    "ResultsStoreError",
    "UnknownEngineError",
]
