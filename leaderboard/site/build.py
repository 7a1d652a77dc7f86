"""A static leaderboard site built from submission bundles.

The pages need no server and no network: every number a page shows is embedded in the page (the
main table as a JSON block its script renders), assets sit next to the pages and every link is
relative, so the folder works opened from disk (file://) as well as from any static host.

Pages: ``index.html`` (models x engines, filter by dataset, sortable), ``models/<slug>.html``
(one per predictor), ``significance.html`` (McNemar/Holm and difficulty tiers), plus the table as
``leaderboard.csv`` and ``leaderboard.json``.
With rewrite ledgers, ``rewrite.html`` (see :mod:`polysql.leaderboard.site.rewrite`) joins them.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polysql.analysis.figures import mcnemar_figure, scope_title, tier_figure
from polysql.analysis.findings import AccuracyRow, Findings, Settings, accuracy_rows, analyze
from polysql.analysis.outcomes import Outcomes, merge_records
from polysql.core.errors import ConfigError
from polysql.leaderboard.merge import Override, merge_bundles, override_messages
from polysql.leaderboard.site.assets import FAVICON_SVG, SITE_CSS, SITE_JS
from polysql.leaderboard.site.pages import blank as _blank
from polysql.leaderboard.site.pages import escape as _e
from polysql.leaderboard.site.pages import page as _page
from polysql.leaderboard.site.rewrite import load_rewrite_ledgers, write_rewrite_page
from polysql.normalizers.policy import changed_options

if TYPE_CHECKING:
    from polysql.leaderboard.bundle import Bundle

__all__ = ["ALL_DATASETS", "build_site", "model_slug", "serve_site"]

#: dataset label of the rows pooled over every dataset (only when there is more than one)
ALL_DATASETS = "(all)"
STATUSES = ("match", "mismatch", "exec_error", "generation_failure", "invalid_gold")
CSV_FIELDS = ("view", "dataset", "model", "engine", "dialect", "correct", "total", "accuracy",
              "ci_low", "ci_high", "delta", "delta_low", "delta_high", "paired")
_CELL_FIELDS = CSV_FIELDS[5:]

# Why a value is missing, shown on hover wherever the page shows "—" instead of a number.
NO_SCORED = ("n=0: the gold query failed on every question here, so no prediction could be "
             "scored")
NO_VERSION = "the records name no engine version"
NOT_IN_MANIFEST = "not recorded in the bundle's manifest"


def _no_pair(engine: str, reference: str) -> str:
    return (f"no difference to {reference}: no question of this model was scored on both "
            f"{engine} and {reference}")




def model_slug(name: str) -> str:
    """File name (no suffix) of a model's page: safe on every disk and unique per model name."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-") or "model"
    if slug != name:  # characters replaced or lowered: two names could share the slug otherwise
        slug += "-" + hashlib.sha1(name.encode()).hexdigest()[:8]
    return slug


def _json_for_script(document: Any) -> str:
    # "<", ">" and "&" escaped so no value can close the <script> block it sits in
    text = json.dumps(document, indent=1, sort_keys=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")




def _shown(value: object, why: str) -> str:
    """``value`` escaped, or a dash saying ``why`` when there is none."""
    return _blank(why) if value is None or value == "" else _e(value)


def _name(value: str) -> str:
    """A model or bundle name that may be long and unbroken: the stylesheet lets it wrap."""
    return f'<span class="name">{_e(value)}</span>'


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _points(x: float | None) -> str:
    if x is None:
        return "—"
    value = 100 * x
    sign = "+" if value > 0.00005 else "−" if value < -0.00005 else "±"
    return f"{sign}{abs(value):.1f} pts"


def _p(value: float) -> str:
    return "<1e-6" if value < 1e-6 else f"{value:.3g}"


# --- data -----------------------------------------------------------------------------------------

def _pooled(outcomes: Outcomes) -> Outcomes:
    """The outcomes as one dataset, question ids qualified by their dataset so none collide."""
    records = [dict(r, dataset=ALL_DATASETS, question_id=f"{r['dataset']}/{r['question_id']}")
               for r in outcomes.records]
    return Outcomes(records, outcomes.runs)


def _cell(row: AccuracyRow, reference: str | None) -> dict[str, Any]:
    cell = {name: getattr(row, name) for name in _CELL_FIELDS}
    if row.delta is None and reference is not None and row.engine != reference:
        cell["delta_why"] = _no_pair(row.engine, reference)
    return cell


def _zero_cell() -> dict[str, Any]:
    """A model x engine with records but nothing scored (every gold failed): n=0, no accuracy."""
    cell: dict[str, Any] = dict.fromkeys(_CELL_FIELDS)
    cell.update(correct=0, total=0, why=NO_SCORED)
    return cell


def _unscored(records: Sequence[dict[str, Any]], rows: Sequence[AccuracyRow],
              dataset: str | None) -> set[tuple[str, str]]:
    """(model, engine) pairs of ``dataset`` (None: all) with records but no accuracy row."""
    have = {(r.predictor, r.engine) for r in rows}
    return {(r["predictor"], r["engine"]) for r in records
            if dataset is None or r["dataset"] == dataset} - have


def _run_names(bundles: Sequence[Bundle]) -> list[str]:
    names: list[str] = []
    for index, bundle in enumerate(bundles):
        name = Path(bundle.source).name or f"bundle-{index + 1}"
        names.append(name if name not in names else f"{name}#{index + 1}")
    return names


def _sources(bundles: Sequence[Bundle], names: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for bundle, name in zip(bundles, names, strict=True):
        manifest = bundle.manifest
        dataset = manifest.get("dataset") or {}
        out.append({
            "bundle": name,
            "dataset": dataset.get("name"),
            "questions": dataset.get("questions"),
            "fingerprint": dataset.get("fingerprint"),
            "polysql": manifest.get("polysql"),
            "created_at": manifest.get("created_at"),
            "predictors": [p["name"] for p in manifest.get("predictors") or []
                           if isinstance(p, dict) and p.get("name")],
            "renamed": {p["name"]: p["renamed_from"] for p in manifest.get("predictors") or []
                        if isinstance(p, dict) and "renamed_from" in p},
            "records": len(bundle.records),
        })
    return out


def _leaderboard(outcomes: Outcomes, findings: Findings, settings: Settings,
                 slugs: dict[str, str], sources: list[dict[str, Any]]) -> dict[str, Any]:
    """The document index.html embeds and leaderboard.json holds."""
    views: list[tuple[str, str, list[AccuracyRow]]] = []
    if len(findings.datasets) > 1:
        pooled = accuracy_rows(_pooled(outcomes), findings.reference, settings)
        views.append(("all", "All datasets (pooled)", pooled))
    for dataset in findings.datasets:
        views.append((f"dataset:{dataset}", dataset,
                      [r for r in findings.accuracy if r.dataset == dataset]))
    engines = sorted(findings.engines, key=lambda e: (e != findings.reference, e))
    rows = []
    for key, label, accuracy in views:
        dataset = None if key == "all" else label
        cells: dict[str, dict[str, Any]] = defaultdict(dict)
        for row in accuracy:
            cells[row.predictor][row.engine] = _cell(row, findings.reference)
        for model, engine in _unscored(outcomes.records, accuracy, dataset):
            cells[model][engine] = _zero_cell()
        rows.extend({"view": key, "dataset": ALL_DATASETS if dataset is None else dataset,
                     "model": model, "href": f"models/{slugs[model]}.html",
                     "cells": cells[model]} for model in sorted(cells))
    return {
        "format": "polysql-leaderboard",
        "format_version": 1,
        "reference": findings.reference,
        "confidence": settings.confidence,
        "engines": [{"name": e, "dialect": outcomes.dialect_of(e)} for e in engines],
        "datasets": findings.datasets,
        "views": [{"key": key, "label": label} for key, label, _rows in views],
        "rows": rows,
        "sources": sources,
    }


def _csv(document: dict[str, Any]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    dialects = {e["name"]: e["dialect"] for e in document["engines"]}
    for row in document["rows"]:
        for engine in dialects:
            cell = row["cells"].get(engine)
            if cell is not None:
                writer.writerow([row["view"], row["dataset"], row["model"], engine,
                                 dialects[engine]]
                                + ["" if cell[f] is None else cell[f] for f in _CELL_FIELDS])
    return buffer.getvalue()


# --- pages ----------------------------------------------------------------------------------------



def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int = 1,
           ) -> str:
    """An HTML table; cells are given already escaped."""
    head = "".join(f'<th{" class=num" if i >= numeric_from else ""}>{h}</th>'
                   for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if i >= numeric_from else ""}>{c}</td>'
                         for i, c in enumerate(row)) + "</tr>\n"
        for row in rows)
    return (f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>\n'
            f"<tbody>\n{body}</tbody></table></div>")


def _models_cell(source: dict[str, Any]) -> str:
    renamed = source.get("renamed") or {}
    return ", ".join(
        _name(str(name)) + (f' <span class="muted">(submitted as {_e(renamed[name])})</span>'
                            if name in renamed else "")
        for name in source["predictors"])


def _overrides_note(overrides: Sequence[Override]) -> str:
    """The results left out because another bundle was preferred, named on the page itself."""
    if not overrides:
        return ""
    shown = [Override(o.claim, Path(o.winner).name, Path(o.loser).name, o.kept, o.dropped,
                      o.records) for o in overrides]
    items = "".join(f"<li>{_e(line.removeprefix('overridden: '))}</li>"
                    for line in override_messages(shown))
    return ('<p class="note">Results two submissions both held, resolved in favour of one '
            f'(<code>--prefer</code>):</p><ul class="note">{items}</ul>')


def _index_page(document: dict[str, Any], findings: Findings, *, rewrite: bool = False,
                overrides: Sequence[Override] = ()) -> str:
    reference = document["reference"]
    drop = (f"Below each accuracy: the difference to <strong>{_e(reference)}</strong> on the "
            "questions both engines evaluated for that model (negative = drop; hover for its "
            "95% paired bootstrap interval)." if reference is not None
            else "No SQLite engine in these bundles, so no drops are shown.")
    models = "".join(f'<li><a href="{_e(r["href"])}">{_name(r["model"])}</a></li>'
                     for r in {row["model"]: row for row in document["rows"]}.values())
    sources = _table(
        ["Bundle", "Dataset", "Models", "polysql", "Created", "Questions", "Records"],
        [[_name(s["bundle"]), _shown(s["dataset"], NOT_IN_MANIFEST), _models_cell(s),
          _shown(s["polysql"], NOT_IN_MANIFEST), _shown(s["created_at"], NOT_IN_MANIFEST),
          _shown(s["questions"], NOT_IN_MANIFEST), _e(s["records"])]
         for s in document["sources"]], numeric_from=5)
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in findings.notes)
    body = f"""<h1>Text-to-SQL across SQL dialects</h1>
<p class="note">Accuracy: share of questions whose predicted SQL returned the gold result on that
engine (questions whose gold failed are left out), with a {_e(f"{document['confidence']:.0%}")}
Wilson interval. {drop}</p>
<div class="controls"><label for="dataset-filter">Dataset</label>
<select id="dataset-filter"></select><span id="row-count" class="muted"></span></div>
<div class="table-wrap"><table id="leaderboard"></table></div>
<noscript><p>The table needs JavaScript; the same numbers are in
<a href="leaderboard.csv">leaderboard.csv</a>.</p></noscript>
<p>Downloads: <a href="leaderboard.csv">leaderboard.csv</a> ·
<a href="leaderboard.json">leaderboard.json</a> · <a href="significance.html">significance
tests and difficulty tiers</a></p>
{notes}
<h2>Models</h2>
<ul class="models">{models}</ul>
<h2>Submissions</h2>
{sources}
{_overrides_note(overrides)}"""
    script = (f'<script type="application/json" id="leaderboard-data">'
              f"{_json_for_script(document)}</script>\n"
              '<script src="assets/leaderboard.js"></script>\n')
    return _page("Leaderboard", body, "", script=script, rewrite=rewrite)


def _model_page(model: str, outcomes: Outcomes, findings: Findings,
                bundles: Sequence[Bundle], names: Sequence[str], *, rewrite: bool = False) -> str:
    statuses = Counter((r["dataset"], r["engine"], r["status"])
                       for r in outcomes.records if r["predictor"] == model)
    versions: dict[str, set[str]] = defaultdict(set)
    for record in outcomes.records:
        if record["predictor"] == model and record.get("engine_version"):
            versions[record["engine"]].add(str(record["engine_version"]))
    reference = findings.reference
    parts = [f"<h1>{_e(model)}</h1>",
             '<p><a href="../index.html">← Back to the leaderboard</a></p>']
    for dataset in findings.datasets:
        scored = {r.engine: r for r in findings.accuracy
                  if r.predictor == model and r.dataset == dataset}
        engines = sorted({e for d, e, _status in statuses if d == dataset},
                         key=lambda e: (e != reference, e))
        if not engines:
            continue
        table_rows = [
            [_e(engine), _e(outcomes.dialect_of(engine)),
             _shown(", ".join(sorted(versions[engine])), NO_VERSION),
             *_accuracy_cells(scored.get(engine), engine, reference),
             *(_e(statuses[(dataset, engine, s)]) for s in STATUSES)]
            for engine in engines]
        delta_head = f"Δ vs {reference}" if reference is not None else "Δ"
        parts.append(f"<h2>Dataset {_e(dataset)}</h2>")
        parts.append(_table(["Engine", "Dialect", "Version", "Accuracy", "95% CI",
                             _e(delta_head), *(s.replace("_", " ") for s in STATUSES)],
                            table_rows, numeric_from=3))
    taxonomy = sorted((t for t in findings.taxonomy if t.predictor == model),
                      key=lambda t: (t.engine != reference, t.engine))
    parts.append("<h2>Error taxonomy</h2>")
    if taxonomy:
        engines = [t.engine for t in taxonomy]
        labels = sorted({label for t in taxonomy for label in t.signals})
        rows_html = [[_e(label), *(_e(t.signals.get(label, 0)) for t in taxonomy)]
                     for label in labels]
        rows_html.append(["<strong>all failures</strong>",
                          *(f"<strong>{_e(t.failures)}</strong>" for t in taxonomy)])
        parts.append('<p class="note">Failed predictions by the deterministic signal read off '
                     "the execution (error code or message, or the shape of a wrong result), "
                     "over all datasets.</p>")
        parts.append(_table(["Signal", *map(_e, engines)], rows_html))
    else:
        parts.append("<p>No failed predictions.</p>")
    parts.extend(_settings(model, bundles, names))
    return _page(model, "\n".join(parts), "../", rewrite=rewrite)


def _accuracy_cells(row: AccuracyRow | None, engine: str, reference: str | None) -> list[str]:
    """Accuracy, interval and difference to the reference; a dash with the reason for each
    value that does not exist (n=0, no paired question, no reference engine)."""
    if row is None:
        return [_blank(NO_SCORED)] * 3
    if engine == reference:
        delta = "reference"
    elif row.delta is not None:
        delta = _e(f"{_points(row.delta)} [{_points(row.delta_low)}, {_points(row.delta_high)}] "
                   f"(n={row.paired})")
    elif reference is None:
        delta = _blank("no SQLite engine in these bundles to compare with")
    else:
        delta = _blank(_no_pair(engine, reference))
    return [_e(_pct(row.accuracy)), _e(f"{_pct(row.ci_low)} – {_pct(row.ci_high)}"), delta]


def _settings(model: str, bundles: Sequence[Bundle], names: Sequence[str]) -> list[str]:
    """What each submission recorded about the model (everything but its name), per bundle of
    the model that still has records in the build (a bundle overridden by --prefer has none)."""
    parts = []
    for bundle, name in zip(bundles, names, strict=True):
        if not any(r["predictor"] == model for r in bundle.records):
            continue
        for entry in bundle.manifest.get("predictors") or []:
            if not isinstance(entry, dict) or entry.get("name") != model:
                continue
            described = {k: v for k, v in entry.items() if k not in ("name", "renamed_from")}
            parts.append(f"<h3>{_name(name)}</h3>")
            if "renamed_from" in entry:
                parts.append(f'<p class="note">Submitted as {_name(str(entry["renamed_from"]))}, '
                             "shown under this name (<code>--as</code>).</p>")
            parts.append(_table(["Setting", "Value"], _setting_rows(described), numeric_from=2)
                         if described else '<p class="muted">No settings recorded.</p>')
    return ["<h2>Settings</h2>", *parts] if parts else []


def _setting_rows(settings: dict[str, Any], prefix: str = "") -> list[list[str]]:
    """Nested settings as (dotted key, value) rows; an unset value is a dash, not "null"."""
    rows: list[list[str]] = []
    for key in sorted(settings, key=str):
        value, name = settings[key], f"{prefix}{key}"
        if isinstance(value, dict) and value:
            rows.extend(_setting_rows(value, f"{name}."))
        elif value is None or value == {} or value == []:
            rows.append([_e(name), _blank("not set in the submission")])
        elif isinstance(value, list):
            rows.append([_e(name), f"<code>{_e(json.dumps(value, sort_keys=True))}</code>"])
        else:
            rows.append([_e(name), _e(value if isinstance(value, str) else json.dumps(value))])
    return rows


def _significance_page(findings: Findings, figures: dict[str, Path | None],
                       tier_png: Path | None, *, rewrite: bool = False) -> str:
    alpha = findings.settings.alpha
    parts = ["<h1>Significance and difficulty tiers</h1>",
             f'<p class="note">McNemar\'s exact test on the questions both engines evaluated, '
             f"Holm-corrected over every engine pair of one model (or of all models pooled, "
             f"where a unit is a (model, question) pair). Significant at alpha = {alpha:g}.</p>"]
    parts.extend(f'<p class="note">{_e(n)}</p>' for n in findings.notes)
    parts.append("<h2>Difficulty tiers</h2>")
    if tier_png is not None:
        parts.append(f'<figure><img src="figures/{_e(tier_png.name)}" alt="Difficulty tiers">'
                     "</figure>")
    tier_rows = [[_e(t.scope), _e(t.engine), _e(t.tier), _e(_pct(t.accuracy))]
                 for t in findings.tiers]
    parts.append(_table(["Scope", "Engine", "Tier", "Accuracy"], tier_rows, numeric_from=2)
                 if tier_rows else "<p>No tiers: fewer than two engines.</p>")
    parts.append("<h2>McNemar, Holm-adjusted</h2>")
    for scope in findings.scopes():
        parts.append(f"<h3>{_e(scope_title(scope))}</h3>")
        png = figures.get(scope)
        if png is not None:
            parts.append(f'<figure><img src="figures/{_e(png.name)}" '
                         f'alt="McNemar heatmap, {_e(scope_title(scope))}"></figure>')
        rows = [[_e(t.first), _e(t.second), _e(t.n), _e(_pct(t.first_accuracy)),
                 _e(_pct(t.second_accuracy)), _e(t.b), _e(t.c), _e(_p(t.p_exact)),
                 _e(_p(t.p_holm)),
                 '<span class="sig">yes</span>' if t.significant else "no"]
                for t in findings.pair_tests if t.scope == scope]
        parts.append(_table(["Engine A", "Engine B", "n", "Acc. A", "Acc. B",
                             "A right, B wrong", "A wrong, B right", "p exact", "p Holm",
                             "Significant"], rows, numeric_from=2))
    if not findings.scopes():
        parts.append("<p>No engine pairs to test.</p>")
    return _page("Significance", "\n".join(parts), "", rewrite=rewrite)


# --- build and serve ------------------------------------------------------------------------------

def _write(path: Path, text: str, written: list[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    written.append(path)


def _png(paths: list[Path]) -> Path | None:
    return next((p for p in paths if p.suffix == ".png"), None)


def build_site(bundles: Sequence[Bundle], out_dir: Path, *,
               settings: Settings | None = None,
               rewrite_ledgers: Sequence[Path] = (),
               overrides: Sequence[Override] = ()) -> list[Path]:
    """Write the static site for ``bundles`` into ``out_dir``; returns every file written.

    Two bundles holding results for the same (dataset, predictor, engine) are refused with a
    BundleError before anything is written: resolve them first with
    :func:`polysql.leaderboard.merge.merge_bundles` (renames, a preferred bundle) and pass its
    ``bundles``, and its ``overrides`` so the site says which results were left out.
    Files of an earlier build that this one does not write are left in place.
    ``rewrite_ledgers`` (``ledger.json`` files of rewrite runs) add ``rewrite.html`` and its
    downloads, linked from every page.
    """
    if not bundles:
        raise ConfigError("no bundle given: the leaderboard needs at least one submission")
    merge_bundles(bundles)  # no record may silently replace another's
    rewrite_outcomes = None
    if rewrite_ledgers:

        # loaded first: a bad ledger is refused before any file is written
        rewrite_outcomes = load_rewrite_ledgers(rewrite_ledgers)
    rewrite = rewrite_outcomes is not None
    settings = settings or Settings()
    names = _run_names(bundles)
    outcomes = merge_records([(name, b.records) for name, b in zip(names, bundles, strict=True)])
    if not outcomes.records:
        raise ConfigError("the bundles hold no records")
    # the board says when its verdicts were not made under the default comparison policy
    outcomes.policies = {name: changed_options((b.manifest.get("settings") or {}).get("policy"))
                         for name, b in zip(names, bundles, strict=True)}
    findings = analyze(outcomes, settings)
    slugs = {model: model_slug(model) for model in findings.predictors}
    document = _leaderboard(outcomes, findings, settings, slugs, _sources(bundles, names))

    out_dir = Path(out_dir)
    written: list[Path] = []
    _write(out_dir / "assets" / "site.css", SITE_CSS, written)
    _write(out_dir / "assets" / "leaderboard.js", SITE_JS, written)
    _write(out_dir / "assets" / "favicon.svg", FAVICON_SVG, written)
    _write(out_dir / "leaderboard.json",
           json.dumps(document, indent=1, sort_keys=True, allow_nan=False) + "\n", written)
    _write(out_dir / "leaderboard.csv", _csv(document), written)
    _write(out_dir / "index.html",
           _index_page(document, findings, rewrite=rewrite, overrides=overrides), written)
    for model, slug in slugs.items():
        _write(out_dir / "models" / f"{slug}.html",
               _model_page(model, outcomes, findings, bundles, names, rewrite=rewrite), written)

    figures_dir = out_dir / "figures"
    mcnemar_png: dict[str, Path | None] = {}
    for scope in findings.scopes():
        paths = mcnemar_figure(findings, scope, figures_dir)
        written.extend(paths)
        mcnemar_png[scope] = _png(paths)
    tier_paths = tier_figure(findings, figures_dir)
    written.extend(tier_paths)
    _write(out_dir / "significance.html",
           _significance_page(findings, mcnemar_png, _png(tier_paths), rewrite=rewrite), written)
    if rewrite_outcomes is not None:
        written.extend(write_rewrite_page(rewrite_outcomes, out_dir))
    return written


def serve_site(site_dir: Path, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    """An HTTP server for a built site (not started: call ``serve_forever()``). ``port=0`` picks a
    free port; read it back from ``server.server_address``."""
    site_dir = Path(site_dir)
    if not (site_dir / "index.html").is_file():
        raise ConfigError(f"{site_dir} holds no index.html: build the site first")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site_dir))
    return ThreadingHTTPServer((host, port), handler)
