"""Everything a dialect-difficulty report states, computed from merged sweep outcomes.

Units and pairing, stated once because every number below depends on them:

* The unit is a question, identified by (dataset, question_id). Questions whose gold failed on
  the source engine are left out everywhere (they say nothing about the candidate).
* Paired statistics (bootstrap drop, McNemar, kappa) use only the questions that **both**
  engines evaluated for the model in question; the ``n`` of each pair says how many.
* "Per model" tests pair one model's outcomes on two engines. The **pooled** tests stack every
  model's pairs, so the unit becomes a (model, question) pair; outcomes of one question under
  different models are not independent, so pooled p-values describe the sweep rather than a
  population and are labelled as pooled.
* Holm's correction runs over the family of all engine pairs within one scope (one model, or
  pooled); tiers are read off the corrected p-values at ``alpha``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

from polysql.analysis.categories import LOGICAL, SYNTACTIC, UNCLASSIFIED
from polysql.analysis.outcomes import Outcomes, QuestionKey
from polysql.analysis.signals import FAMILY_OF, signal
from polysql.analysis.stats import (
    cohen_kappa,
    holm,
    kendall_tau,
    mcnemar,
    paired_bootstrap,
    tiers,
    wilson_interval,
)
from polysql.core.store import record_key
from polysql.datasets.base import GOLD_DIALECT
from polysql.normalizers.policy import options_text

POOLED = "(pooled)"


@dataclass(frozen=True, slots=True)
class Settings:
    # engine (name or dialect) drops are measured against: by default the one speaking the
    # dialect the gold SQL is written in
    reference: str | None = GOLD_DIALECT
    alpha: float = 0.05
    resamples: int = 10_000
    seed: int = 0
    confidence: float = 0.95


@dataclass(slots=True)
class AccuracyRow:
    predictor: str
    dataset: str
    engine: str
    dialect: str
    correct: int
    total: int
    accuracy: float
    ci_low: float
    ci_high: float
    # difference to the reference engine on the questions both evaluated (negative = drop)
    delta: float | None = None
    delta_low: float | None = None
    delta_high: float | None = None
    paired: int | None = None


@dataclass(slots=True)
class PairTest:
    scope: str  # a predictor name, or POOLED
    first: str
    second: str
    n: int
    first_accuracy: float
    second_accuracy: float
    b: int  # first right, second wrong
    c: int  # first wrong, second right
    p_exact: float
    chi2: float | None
    p_chi2: float | None
    p_holm: float = 1.0
    significant: bool = False


@dataclass(slots=True)
class TierRow:
    scope: str
    tier: int  # 1 = easiest
    engine: str
    accuracy: float


@dataclass(slots=True)
class KappaRow:
    scope: str
    first: str
    second: str
    n: int
    kappa: float | None  # None: undefined (both engines constant and identical)
    agreement: float  # raw share of questions with the same correctness


@dataclass(slots=True)
class RankRow:
    engine: str
    predictor: str
    accuracy: float
    rank: float  # 1 = best; ties share the mean rank


@dataclass(slots=True)
class TauRow:
    first: str
    second: str
    models: int
    tau: float | None
    p_value: float | None


@dataclass(slots=True)
class TaxonomyRow:
    predictor: str
    engine: str
    failures: int
    signals: dict[str, int]
    families: dict[str, int]
    categories: dict[str, int] = field(default_factory=dict)  # empty without a classifier run
    logical: int = 0
    syntactic: int = 0

    @property
    def logical_share(self) -> float | None:
        decided = self.logical + self.syntactic
        return self.logical / decided if decided else None


@dataclass(slots=True)
class Findings:
    settings: Settings
    runs: list[str]
    datasets: list[str]
    predictors: list[str]
    engines: list[str]
    reference: str | None
    accuracy: list[AccuracyRow]
    pair_tests: list[PairTest]
    tiers: list[TierRow]
    kappas: list[KappaRow]
    ranks: list[RankRow]
    taus: list[TauRow]
    taxonomy: list[TaxonomyRow]
    classified: bool
    notes: list[str]
    # run folder -> planned records without a record (interrupted, abandoned, unreachable)
    pending: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not any(self.pending.values())

    def scopes(self) -> list[str]:
        return list(dict.fromkeys(t.scope for t in self.pair_tests))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["taxonomy"] = [dict(asdict(t), logical_share=t.logical_share) for t in self.taxonomy]
        out["complete"] = self.complete
        return out


# --- computation ----------------------------------------------------------------------------------

def _paired(first: dict[QuestionKey, bool], second: dict[QuestionKey, bool]
            ) -> tuple[list[bool], list[bool]]:
    keys = sorted(first.keys() & second.keys())
    return [first[k] for k in keys], [second[k] for k in keys]


def _reference_engine(outcomes: Outcomes, wanted: str | None) -> str | None:
    if wanted is None:
        return None
    engines = outcomes.engines
    if wanted in engines:
        return wanted
    by_dialect = [e for e in engines if outcomes.dialect_of(e) == wanted]
    return by_dialect[0] if by_dialect else None


def accuracy_rows(outcomes: Outcomes, reference: str | None, settings: Settings) -> list[AccuracyRow]:
    rows = []
    for predictor in outcomes.predictors:
        for dataset in outcomes.datasets:
            for engine in outcomes.engines:
                marks = outcomes.correctness(predictor, engine, dataset)
                if not marks:
                    continue
                correct, total = sum(marks.values()), len(marks)
                low, high = wilson_interval(correct, total, settings.confidence)
                row = AccuracyRow(predictor, dataset, engine, outcomes.dialect_of(engine),
                                  correct, total, correct / total, low, high)
                if reference is not None and engine != reference:
                    base = outcomes.correctness(predictor, reference, dataset)
                    ref_marks, own = _paired(base, marks)
                    if own:
                        interval = paired_bootstrap(ref_marks, own, resamples=settings.resamples,
                                                    seed=settings.seed,
                                                    confidence=settings.confidence)
                        row.delta, row.delta_low, row.delta_high = (
                            interval.diff, interval.low, interval.high)
                        row.paired = len(own)
                rows.append(row)
    return rows


def _scope_marks(outcomes: Outcomes) -> dict[str, dict[str, dict[Any, bool]]]:
    """scope -> engine -> unit -> correct; units are questions per model, (model, question)
    pairs when pooled."""
    scopes: dict[str, dict[str, dict[Any, bool]]] = {}
    pooled: dict[str, dict[Any, bool]] = defaultdict(dict)
    for predictor in outcomes.predictors:
        per_engine = {}
        for engine in outcomes.engines:
            marks = outcomes.correctness(predictor, engine)
            if marks:
                per_engine[engine] = marks
                pooled[engine].update({(predictor, *k): v for k, v in marks.items()})
        scopes[predictor] = per_engine
    if len(outcomes.predictors) > 1:
        scopes[POOLED] = dict(pooled)
    return scopes


def pair_tests(scopes: dict[str, dict[str, dict[Any, bool]]], alpha: float) -> list[PairTest]:
    out: list[PairTest] = []
    for scope, per_engine in scopes.items():
        family: list[PairTest] = []
        for first, second in combinations(sorted(per_engine), 2):
            a, b = _paired(per_engine[first], per_engine[second])
            if not a:
                continue
            test = mcnemar(a, b)
            family.append(PairTest(scope, first, second, len(a), sum(a) / len(a), sum(b) / len(b),
                                   test.b, test.c, test.p_exact, test.chi2, test.p_chi2))
        for test, adjusted in zip(family, holm([t.p_exact for t in family]), strict=True):
            test.p_holm = adjusted
            test.significant = adjusted < alpha
        out.extend(family)
    return out


def tier_rows(scopes: dict[str, dict[str, dict[Any, bool]]], tests: list[PairTest]) -> list[TierRow]:
    out: list[TierRow] = []
    for scope, per_engine in scopes.items():
        accuracy = {e: sum(m.values()) / len(m) for e, m in per_engine.items() if m}
        decided = {frozenset((t.first, t.second)): t.significant for t in tests if t.scope == scope}

        def significant(x: str, y: str, decided: dict[frozenset[str], bool] = decided) -> bool:
            # engines with no question in common cannot be told apart
            return decided.get(frozenset((x, y)), False)

        for number, members in enumerate(tiers(sorted(accuracy), accuracy, significant), start=1):
            out.extend(TierRow(scope, number, engine, accuracy[engine]) for engine in members)
    return out


def kappa_rows(scopes: dict[str, dict[str, dict[Any, bool]]]) -> list[KappaRow]:
    out = []
    for scope, per_engine in scopes.items():
        for first, second in combinations(sorted(per_engine), 2):
            a, b = _paired(per_engine[first], per_engine[second])
            if a:
                same = sum(x == y for x, y in zip(a, b, strict=True))
                out.append(KappaRow(scope, first, second, len(a), cohen_kappa(a, b), same / len(a)))
    return out


def _mean_ranks(scores: dict[str, float]) -> dict[str, float]:
    ordered = sorted(scores, key=lambda k: (-scores[k], k))
    ranks: dict[str, float] = {}
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and scores[ordered[j + 1]] == scores[ordered[i]]:
            j += 1
        for k in ordered[i:j + 1]:
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def ranking(outcomes: Outcomes) -> tuple[list[RankRow], list[TauRow]]:
    """Model ranks per engine (on the questions every model evaluated there) and Kendall's tau
    between each pair of engines' accuracies over the models both ranked."""
    per_engine: dict[str, dict[str, float]] = {}
    for engine in outcomes.engines:
        marks = {p: outcomes.correctness(p, engine) for p in outcomes.predictors}
        marks = {p: m for p, m in marks.items() if m}
        if not marks:
            continue
        common = set.intersection(*(set(m) for m in marks.values()))
        if not common:
            continue
        per_engine[engine] = {p: sum(m[k] for k in common) / len(common) for p, m in marks.items()}
    rows = [RankRow(engine, predictor, scores[predictor], rank)
            for engine, scores in per_engine.items()
            for predictor, rank in sorted(_mean_ranks(scores).items(), key=lambda kv: kv[1])]
    taus = []
    for first, second in combinations(sorted(per_engine), 2):
        models = sorted(per_engine[first].keys() & per_engine[second].keys())
        result = kendall_tau([per_engine[first][m] for m in models],
                             [per_engine[second][m] for m in models])
        taus.append(TauRow(first, second, len(models), result.tau if result else None,
                           result.p_value if result else None))
    return rows, taus


def taxonomy_rows(outcomes: Outcomes, categories: dict[Any, str] | None) -> list[TaxonomyRow]:
    """Failure counts per (predictor, engine) by deterministic signal, signal family and, when
    ``categories`` (record key -> classifier category) is given, by classifier category."""
    rows: dict[tuple[str, str], TaxonomyRow] = {}
    for record in outcomes.failures():
        key = (record["predictor"], record["engine"])
        row = rows.setdefault(key, TaxonomyRow(*key, 0, Counter(), Counter(), Counter()))
        label = signal(record) or "wrong_values"
        row.failures += 1
        row.signals[label] += 1
        row.families[FAMILY_OF[label]] += 1
        if categories is not None:
            category = categories.get(record_key(record), UNCLASSIFIED)
            row.categories[category] += 1
            row.logical += category in LOGICAL
            row.syntactic += category in SYNTACTIC
    for row in rows.values():
        row.signals, row.families = dict(row.signals), dict(row.families)
        row.categories = dict(row.categories)
    return [rows[k] for k in sorted(rows)]


def _policy_notes(policies: dict[str, dict[str, Any]]) -> list[str]:
    """What the runs' comparison policies mean for their numbers: nothing when every run kept
    the defaults; otherwise which options changed, and, when the runs differ, that numbers taken
    from different runs are not comparable."""
    spelled = {run: options_text(changed) or "the defaults" for run, changed in policies.items()}
    if len(set(spelled.values())) > 1:
        listed = "; ".join(f"{run}: {text}" for run, text in spelled.items())
        return [f"These runs judged answers under different comparison policies ({listed}): "
                "accuracies and tests that set one run's records beside another's compare "
                "different measures."]
    if spelled and next(iter(spelled.values())) != "the defaults":
        return [f"Comparison policy changed from the contract's defaults in every run: "
                f"{next(iter(spelled.values()))}; these numbers compare only with runs under the "
                "same policy."]
    return []


def analyze(outcomes: Outcomes, settings: Settings | None = None,
            categories: dict[Any, str] | None = None) -> Findings:
    """Every table of the report. ``categories``: classifier output by record key, if any."""
    settings = settings or Settings()
    notes: list[str] = []
    reference = _reference_engine(outcomes, settings.reference)
    if settings.reference is not None and reference is None:
        notes.append(f"No engine named or of dialect {settings.reference!r} in these runs, so no "
                     "drops relative to a reference are reported (choose one with --reference).")
    for run, lines in outcomes.damaged.items():
        shown = ", ".join(map(str, lines[:5])) + (", ..." if len(lines) > 5 else "")
        notes.append(f"{run}: {len(lines)} line(s) of its results file are not a whole record "
                     f"(line {shown}) and were skipped; the next `polysql sweep` into it drops "
                     "them and redoes their work.")
    notes.extend(_policy_notes(outcomes.policies))
    for conflict in outcomes.conflicts:
        notes.append(f"{'/'.join(conflict.key)}: {conflict.kept_run} says {conflict.kept}, "
                     f"{conflict.dropped_run} said {conflict.dropped}; the later record is used.")
    scopes = _scope_marks(outcomes)
    tests = pair_tests(scopes, settings.alpha)
    ranks, taus = ranking(outcomes)
    if len(outcomes.predictors) < 2:
        notes.append("One model only: rankings and Kendall's tau need at least two.")
    if len(outcomes.engines) < 2:
        notes.append("One engine only: no pairwise tests, tiers or agreement.")
    return Findings(
        settings=settings, runs=outcomes.runs, datasets=outcomes.datasets,
        predictors=outcomes.predictors, engines=outcomes.engines, reference=reference,
        accuracy=accuracy_rows(outcomes, reference, settings), pair_tests=tests,
        tiers=tier_rows(scopes, tests), kappas=kappa_rows(scopes), ranks=ranks, taus=taus,
        taxonomy=taxonomy_rows(outcomes, categories), classified=categories is not None,
        notes=notes, pending={run: n for run, n in outcomes.pending.items() if n})
