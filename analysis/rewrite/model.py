"""What the rewrite harness records: a method's answer, the timing of a case, and each case's one
terminal outcome. Shared by the harness, the method adapters and the ledger."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from polysql.core.model import Timing  # re-exported: the ledger and its readers use it here

# Terminal outcomes, mutually exclusive, in the order the harness decides them. The first six
# say why a case produced no usable rewrite; the last four grade a rewrite that passed the gate.
OUTCOMES: tuple[str, ...] = (
    "source_acceptance_failure",  # the method could not accept the input (parser, dialect, size)
    "generation_failure",  # the method failed: error, crash, unusable output
    "no_rewrite",  # the method decided the query should stay as it is
    "no_op",  # the rewrite normalizes to the input (formatting, comments, alias renames)
    "execution_failure",  # the rewrite does not run on the case's engine
    "unsafe_rewrite",  # it runs, but its result breaks the case's contract
    "performance_gain",
    "simplification_gain",
    "neutral",
    "regression",
)
GATED_OUTCOMES = frozenset({"performance_gain", "simplification_gain", "neutral", "regression"})

# What a method may answer, exactly one of these.
ANSWER_KINDS: tuple[str, ...] = ("rewrite", "no_rewrite", "source_acceptance_failure",
                                 "method_error")


@dataclass(frozen=True, slots=True)
class MethodAnswer:
    kind: str  # one of ANSWER_KINDS
    sql: str | None = None  # the rewritten statement, for kind == "rewrite"
    message: str | None = None  # why, for the other kinds
    meta: dict[str, Any] = field(default_factory=dict)  # tokens, model, elapsed, raw output...

    def __post_init__(self) -> None:
        if self.kind not in ANSWER_KINDS:
            raise ValueError(f"MethodAnswer.kind must be one of {ANSWER_KINDS}, got {self.kind!r}")
        if (self.kind == "rewrite") != (self.sql is not None):
            raise ValueError("a rewrite answer carries SQL, and only a rewrite answer does")


@dataclass(slots=True)
class CaseOutcome:
    """One case under one method: the ledger's row."""

    case_id: str
    pool: str
    engine: str
    dialect: str
    method: str
    outcome: str  # one of OUTCOMES
    answer_kind: str | None = None
    rewrite_sql: str | None = None
    reason: str = ""  # why this outcome, in words (error text, verdict reason)
    consistent: bool | None = None  # result gate; None when it was never reached
    timing: Timing | None = None
    scs_input: float | None = None
    scs_rewrite: float | None = None
    cgoq: float | None = None  # only for rewrites that passed the gate
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {self.outcome!r}")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.timing is not None:
            out["timing"].update(input_median=self.timing.input_median,
                                 rewrite_median=self.timing.rewrite_median,
                                 speedup=self.timing.speedup)
        return out
