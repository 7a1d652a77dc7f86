"""The files the audits write: a CSV with one row per audited pair and a short Markdown report.

Both are built from the same objects the command line prints its table from
(:class:`~polysql.audit.golds.GoldAudit`, :class:`~polysql.audit.transpile.TranspileAudit` and
:mod:`~polysql.audit.tally`), so the three always hold the same numbers.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import sqlglot

from polysql.audit.golds import GoldAudit
from polysql.audit.tally import DifferenceCount, by_engine, by_tag
from polysql.audit.transpile import (
    ACCEPTS_REJECTED,
    REJECTS_ACCEPTED,
    TranspileAudit,
)

GOLD_CSV = "gold_audit.csv"
GOLD_REPORT = "gold_audit.md"
TRANSPILE_CSV = "transpile_audit.csv"
TRANSPILE_REPORT = "transpile_audit.md"

_LISTED = 200  # rows of a report's list of differences; the CSV holds them all
_SQL_WIDTH = 160  # characters of SQL shown in a report cell


def percent(part: int, whole: int) -> str:
    return "—" if not whole else f"{100 * part / whole:.1f}%"


def short(text: str, width: int = _SQL_WIDTH) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _cell(text: str, width: int = _SQL_WIDTH) -> str:
    return short(text, width).replace("|", "\\|")


def _numeric(value: object) -> bool:
    return isinstance(value, int) or (isinstance(value, str) and (value.endswith("%") or value == "—"))


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table; columns holding only counts and rates are right-aligned."""
    right = [bool(rows) and all(_numeric(row[i]) for row in rows) for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if r else "---" for r in right) + "|"]
    lines += ["| " + " | ".join(_cell(str(v)) for v in row) + " |" for row in rows]
    return lines


def _write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


# -- the gold audit ----------------------------------------------------------------------------

GOLD_ENGINE_COLUMNS = ("engine", "dialect", "audited", "agree", "disagree", "error",
                       "reference error", "no native gold")


def gold_engine_rows(audit: GoldAudit) -> list[list[object]]:
    """The per-engine table, as the command line, the report and the tests read it."""
    return [[c.engine, c.dialect, c.audited, c.agree, c.disagree, c.error, c.reference_error,
             c.no_native_gold] for c in audit.engines]


def write_gold_audit(audit: GoldAudit, out: Path, *, policy: dict[str, object]) -> list[Path]:
    """``gold_audit.csv`` (one row per native gold judged) and ``gold_audit.md`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path, report_path = out / GOLD_CSV, out / GOLD_REPORT
    _write_csv(csv_path, ["dataset", "question_id", "db_id", "engine", "dialect", "outcome",
                          "status", "reason", "tags", "native_sql", "gold_sql"],
               [[p.dataset, p.question_id, p.db_id, p.engine, p.dialect, p.outcome, p.status,
                 p.reason, "; ".join(p.tags), p.native_sql, p.gold_sql] for p in audit.pairs])
    report_path.write_text("\n".join(_gold_markdown(audit, policy)) + "\n", encoding="utf-8")
    return [csv_path, report_path]


def _gold_markdown(audit: GoldAudit, policy: dict[str, object]) -> list[str]:
    contract = (" with the policy overrides " + ", ".join(f"{k}={v}" for k, v in policy.items())
                if policy else "")
    lines = [f"# Gold audit: {audit.dataset}", "",
             "Each gold the dataset ships written natively for an engine's dialect was run on that "
             f"engine and compared with the reference gold (written for {audit.reference_dialect}) "
             f"run on the source database, by polysql's comparison contract{contract}.", ""]
    if not audit.complete:
        lines += [f"**INCOMPLETE**: {audit.pending} (question, engine) pair(s) are not recorded "
                  "yet; re-run the same command to finish.", ""]
    audited = len({p.question_id for p in audit.pairs})
    lines.append(f"Questions: {audit.questions}; with a native gold for at least one audited engine: "
                 f"{audited}; without: {len(audit.uncovered)}.")
    if audit.reference_engines:
        lines.append(f"Not audited (they speak the reference dialect): "
                     f"{', '.join(audit.reference_engines)}.")
    lines += ["", "## Per engine", "", *_table(GOLD_ENGINE_COLUMNS, gold_engine_rows(audit))]
    if audit.uncovered:
        shown = ", ".join(audit.uncovered[:50])
        more = f" and {len(audit.uncovered) - 50} more" if len(audit.uncovered) > 50 else ""
        lines += ["", "## Questions without a native gold for any audited engine", "",
                  f"{len(audit.uncovered)} question(s): {shown}{more}."]
    lines += ["", "## Disagreements", ""]
    listed = audit.disagreements
    if not listed:
        lines.append("Every native gold agrees with the reference gold." if audit.complete else
                     f"No disagreement among the pairs audited so far; {audit.pending} pending, "
                     "so this is not the audit's answer yet.")
    else:
        lines += _table(["question", "engine", "outcome", "reason", "native SQL"],
                        [[p.question_id, p.engine, p.outcome, p.reason, p.native_sql]
                         for p in listed[:_LISTED]])
        if len(listed) > _LISTED:
            lines += ["", f"… and {len(listed) - _LISTED} more: see {GOLD_CSV}."]
    return lines


# -- the transpilation audit -------------------------------------------------------------------

DIFFERENCE_COLUMNS = ("judged", "dual correct", "transpile correct", "differ", "rate",
                      "transpile accepts, dual rejects", "transpile rejects, dual accepts")


def difference_rows(counts: list[DifferenceCount]) -> list[list[object]]:
    """A per-engine or per-tag table (its first column the group)."""
    return [[c.group, c.audited, c.dual_correct, c.transpile_correct, c.differ,
             percent(c.differ, c.audited), c.accepts_rejected, c.rejects_accepted] for c in counts]


def write_transpile_audit(audit: TranspileAudit, out: Path) -> list[Path]:
    """``transpile_audit.csv`` (one row per prediction judged) and ``transpile_audit.md``."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path, report_path = out / TRANSPILE_CSV, out / TRANSPILE_REPORT
    _write_csv(csv_path, ["dataset", "question_id", "db_id", "predictor", "engine", "dialect",
                          "tags", "dual_status", "transpile_verdict", "differs", "direction",
                          "dual_reason", "transpile_reason", "sql", "transpiled_sql"],
               [[j.dataset, j.question_id, j.db_id, j.predictor, j.engine, j.dialect,
                 "; ".join(j.tags), j.dual_status, j.verdict, "yes" if j.differs else "no",
                 j.direction, j.dual_reason, j.reason, j.sql, j.transpiled or ""]
                for j in audit.judgements])
    report_path.write_text("\n".join(_transpile_markdown(audit)) + "\n", encoding="utf-8")
    return [csv_path, report_path]


def _transpile_markdown(audit: TranspileAudit) -> list[str]:
    ref = audit.reference_dialect or "the gold's dialect"
    engines = by_engine(audit.judgements)
    total = engines[-1]
    lines = [f"# Transpilation audit: {audit.dataset}", "",
             f"Run: `{audit.run_dir}`. Every prediction on an engine that does not speak {ref} is "
             "judged twice: by dual execution (run natively on its engine; the verdict the run "
             f"recorded) and the way transpile-based evaluators judge it (sqlglot "
             f"{sqlglot.__version__} translates it to {ref}, it runs on the source database, "
             "the result is compared with the gold's by the same contract; timeout "
             f"{audit.timeout:g} s, at most {audit.max_rows} rows).", ""]
    if audit.pending:
        lines += [f"**INCOMPLETE run**: {audit.pending} planned record(s) are missing from the "
                  "run; they are not judged.", ""]
    lines.append(f"Judged: {total.audited} prediction(s). The verdicts differ on {total.differ} "
                 f"({percent(total.differ, total.audited)}): {total.accepts_rejected} where "
                 f"{ACCEPTS_REJECTED}, {total.rejects_accepted} where {REJECTS_ACCEPTED}.")
    for why, count in sorted(audit.skipped.items()):
        lines.append(f"Not judged: {count} record(s): {why}.")
    for warning in audit.warnings:
        lines.append(f"Warning: {warning}.")
    lines += ["", "## Per engine", "", *_table(("engine", *DIFFERENCE_COLUMNS), difference_rows(engines)),
              "", "## Per tag", "",
              *_table(("tag", *DIFFERENCE_COLUMNS), difference_rows(by_tag(audit.judgements))),
              "", "## Where the verdicts differ", ""]
    differing = audit.differing
    if not differing:
        lines.append("Nowhere: on this run, transpiling back reaches the dual-execution verdict "
                     "every time.")
    else:
        lines += _table(["question", "predictor", "engine", "dual", "transpile", "why", "SQL"],
                        [[j.question_id, j.predictor, j.engine, j.dual_status, j.verdict, j.why,
                          j.sql] for j in differing[:_LISTED]])
        if len(differing) > _LISTED:
            lines += ["", f"… and {len(differing) - _LISTED} more: see {TRANSPILE_CSV}."]
    return lines
