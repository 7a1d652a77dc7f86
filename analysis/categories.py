"""The classifier's categories and how reports group them (kept apart from the classifier so a
report can count them without the LLM extra installed)."""

from __future__ import annotations

CATEGORIES: tuple[str, ...] = ("schema_linking_error", "filtering_error", "aggregation_error",
                               "dialect_error", "invalid_evaluation")
#: errors in the query's logic: they would be wrong on any engine
LOGICAL = frozenset({"schema_linking_error", "filtering_error", "aggregation_error"})
#: errors of dialect: the logic is right, the engine does not accept or means something else
SYNTACTIC = frozenset({"dialect_error"})
UNCLASSIFIED = "unclassified"
