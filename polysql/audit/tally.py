"""How often the transpile verdict differs from the dual-execution verdict, per engine and per
tag: the numbers the table, the CSV and the report of ``polysql audit transpile`` share."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from polysql.audit.transpile import TranspileJudgement

#: the row of the breakdown that counts every judgement
ALL = "all"


@dataclass(slots=True)
class DifferenceCount:
    """Judgements of one group (an engine, a tag, or all of them) and how many differ."""

    group: str
    audited: int = 0
    dual_correct: int = 0
    transpile_correct: int = 0
    accepts_rejected: int = 0  # transpile says correct, dual execution says wrong
    rejects_accepted: int = 0  # transpile says wrong, dual execution says correct

    @property
    def differ(self) -> int:
        return self.accepts_rejected + self.rejects_accepted

    @property
    def rate(self) -> float | None:
        """Share of the group's judgements on which the two verdicts differ."""
        return self.differ / self.audited if self.audited else None

    def add(self, judgement: TranspileJudgement) -> None:
        self.audited += 1
        self.dual_correct += judgement.dual_correct
        self.transpile_correct += judgement.transpile_correct
        if judgement.differs:
            if judgement.transpile_correct:
                self.accepts_rejected += 1
            else:
                self.rejects_accepted += 1


def _count(judgements: Iterable[TranspileJudgement],
           groups_of: Callable[[TranspileJudgement], Iterable[str]]) -> list[DifferenceCount]:
    counts: dict[str, DifferenceCount] = {}
    for judgement in judgements:
        for group in groups_of(judgement):
            counts.setdefault(group, DifferenceCount(group)).add(judgement)
    return list(counts.values())


def by_engine(judgements: list[TranspileJudgement]) -> list[DifferenceCount]:
    """One row per engine (by name), then the total."""
    total = DifferenceCount(ALL)
    for judgement in judgements:
        total.add(judgement)
    return [*sorted(_count(judgements, lambda j: (j.engine,)), key=lambda c: c.group), total]


def by_tag(judgements: list[TranspileJudgement]) -> list[DifferenceCount]:
    """One row per tag a judged question carries, most differing first (then by name); a
    question with several tags counts under each, one without any under ``untagged``."""
    rows = _count(judgements, lambda j: j.tags or ("untagged",))
    return sorted(rows, key=lambda c: (-(c.rate or 0.0), -c.differ, c.group))
