"""The static leaderboard site: files, the numbers it embeds, its links and its server."""

from __future__ import annotations

import csv
import json
import re
import threading
import urllib.request
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from polysql_testkit.bundles import LONG_MODEL, ODD_MODEL, make_bundles, make_edge_bundles
from statsmodels.stats.proportion import proportion_confint

from polysql.core.errors import ConfigError
from polysql.leaderboard.site.build import ALL_DATASETS, build_site, model_slug, serve_site


def embedded_data(index_html: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="leaderboard-data">(.*?)</script>',
                      index_html, re.S)
    assert match is not None
    return json.loads(match.group(1))


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links.extend(value for name, value in attrs if name in ("href", "src") and value)


def page_links(path: Path) -> list[str]:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.links


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], list[Any]]:
    root = tmp_path_factory.mktemp("leaderboard")
    bundles = make_bundles(root / "bundles")
    out = root / "site"
    return out, build_site(bundles, out), bundles


# --- tests ----------------------------------------------------------------------------------------

def test_every_page_and_download_is_written(site: tuple[Path, list[Path], list[Any]]) -> None:
    out, written, _ = site
    expected = ["index.html", "significance.html", "leaderboard.csv", "leaderboard.json",
                "assets/site.css", "assets/leaderboard.js", "assets/favicon.svg", "models/alpha.html",
                f"models/{model_slug(ODD_MODEL)}.html"]
    for name in expected:
        assert (out / name).is_file(), name
        assert out / name in written
    assert all(p.is_file() for p in written)
    pngs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert "tiers.png" in pngs and "mcnemar_pooled.png" in pngs
    assert len([p for p in pngs if p.startswith("mcnemar_model_")]) == 2


def test_embedded_numbers_equal_counts_from_the_records(
        site: tuple[Path, list[Path], list[Any]]) -> None:
    out, _, bundles = site
    data = embedded_data((out / "index.html").read_text(encoding="utf-8"))
    records = [r for b in bundles for r in b.records]
    correct: Counter[tuple[str, str, str]] = Counter()
    total: Counter[tuple[str, str, str]] = Counter()
    for r in records:
        if r["status"] != "invalid_gold":
            for dataset in (r["dataset"], ALL_DATASETS):
                total[(r["predictor"], dataset, r["engine"])] += 1
                correct[(r["predictor"], dataset, r["engine"])] += r["status"] == "match"
    assert data["reference"] == "sqlite"
    assert [e["name"] for e in data["engines"]] == ["sqlite", "duckdb", "pg16"]
    assert [v["key"] for v in data["views"]] == ["all", "dataset:demo", "dataset:extra"]
    seen = set()
    for row in data["rows"]:
        assert row["view"] == ("all" if row["dataset"] == ALL_DATASETS
                               else f"dataset:{row['dataset']}")
        for engine, cell in row["cells"].items():
            key = (row["model"], row["dataset"], engine)
            seen.add(key)
            assert (cell["correct"], cell["total"]) == (correct[key], total[key])
            assert cell["accuracy"] == pytest.approx(correct[key] / total[key])
            low, high = proportion_confint(correct[key], total[key], alpha=0.05,
                                           method="wilson")
            assert (cell["ci_low"], cell["ci_high"]) == (pytest.approx(low), pytest.approx(high))
            if engine == "sqlite":
                assert cell["delta"] is None
                continue
            # every question has a record on every engine, so the paired difference is the
            # plain accuracy difference
            assert cell["paired"] == total[key]
            reference = (row["model"], row["dataset"], "sqlite")
            assert cell["delta"] == pytest.approx(correct[key] / total[key]
                                                  - correct[reference] / total[reference])
            assert cell["delta_low"] <= cell["delta"] <= cell["delta_high"]
    assert seen == set(total)  # every (model, dataset, engine) with records has a cell

    downloaded = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert downloaded == data
    with (out / "leaderboard.csv").open(encoding="utf-8", newline="") as handle:
        lines = list(csv.DictReader(handle))
    assert len(lines) == len(total)
    for line in lines:
        key = (line["model"], line["dataset"], line["engine"])
        assert (int(line["correct"]), int(line["total"])) == (correct[key], total[key])


def test_model_page_shows_statuses_and_taxonomy(site: tuple[Path, list[Path], list[Any]]) -> None:
    out, _, bundles = site
    page = (out / "models" / "alpha.html").read_text(encoding="utf-8")
    records = [r for b in bundles for r in b.records if r["predictor"] == "alpha"]
    assert "<h1>alpha</h1>" in page and 'href="../index.html"' in page
    for dataset in ("demo", "extra"):
        assert f"<h2>Dataset {dataset}</h2>" in page
    # the taxonomy row of the SQL syntax errors: one count per engine, in page order
    failed = Counter(r["engine"] for r in records if r["status"] == "exec_error")
    match = re.search(r"<tr><td>syntax_error</td>(.*?)</tr>", page)
    assert match is not None
    counts = [int(c) for c in re.findall(r"<td class=num>(\d+)</td>", match.group(1))]
    taxonomy_engines = re.search(r"<th>Signal</th>(.*?)</tr>", page)
    assert taxonomy_engines is not None
    engines = re.findall(r"<th class=num>([^<]+)</th>", taxonomy_engines.group(1))
    assert counts == [failed[e] for e in engines]
    # status counts of one (dataset, engine) row
    demo_sqlite = Counter(r["status"] for r in records
                          if r["dataset"] == "demo" and r["engine"] == "sqlite")
    row = re.search(r"<tr><td>sqlite</td>.*?</tr>", page)
    assert row is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0))
    assert [int(c) for c in cells[-5:]] == [
        demo_sqlite[s] for s in ("match", "mismatch", "exec_error", "generation_failure",
                                 "invalid_gold")]


def test_links_are_relative_and_resolve(site: tuple[Path, list[Path], list[Any]]) -> None:
    out, _, _ = site
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == 4
    for page in pages:
        for link in page_links(page):
            assert not re.match(r"^([a-z]+:|//|/)", link, re.I), (page, link)
            assert (page.parent / link.split("#")[0]).resolve().is_file(), (page, link)
    data = embedded_data((out / "index.html").read_text(encoding="utf-8"))
    for row in data["rows"]:
        assert (out / row["href"]).is_file()
    for asset in (out / "assets").iterdir():
        # an SVG names its XML namespace with a URL that is never fetched
        text = asset.read_text(encoding="utf-8").replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert not re.search(r"https?://", text), asset


def test_names_are_escaped(site: tuple[Path, list[Path], list[Any]]) -> None:
    out, _, _ = site
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "<b>" not in text and "<default>" not in text, page
    model_page = (out / "models" / f"{model_slug(ODD_MODEL)}.html").read_text(encoding="utf-8")
    assert "<h1>beta &lt;b&gt;&amp;&quot;x&quot;/v2</h1>" in model_page
    assert "&lt;default&gt; &amp; v1" in model_page
    data = embedded_data((out / "index.html").read_text(encoding="utf-8"))
    assert ODD_MODEL in {row["model"] for row in data["rows"]}


def test_model_slugs_are_safe_and_distinct() -> None:
    names = ["alpha", "Alpha", "a/b", "a b", "a-b", "..", "llm:smol"]
    slugs = [model_slug(n) for n in names]
    assert len(set(slugs)) == len(names)
    assert model_slug("alpha") == "alpha"
    assert all(re.fullmatch(r"[a-z0-9_-]+", s) for s in slugs)


def test_build_needs_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        build_site([], tmp_path / "site")


def test_serve_site_serves_the_built_pages(site: tuple[Path, list[Path], list[Any]]) -> None:
    out, _, _ = site
    server = serve_site(out, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        with urllib.request.urlopen(f"http://{host}:{port}/index.html") as response:
            assert response.status == 200
            assert response.read() == (out / "index.html").read_bytes()
        with urllib.request.urlopen(f"http://{host}:{port}/models/alpha.html") as response:
            assert b"<h1>alpha</h1>" in response.read()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_serve_site_refuses_a_folder_without_a_site(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="index.html"):
        serve_site(tmp_path)


# --- values that do not exist -------------------------------------------------------------------

RAW = re.compile(r"\b(null|None|NaN|undefined)\b")


class _Shown(HTMLParser):
    """What a reader sees: text outside <script>/<style> and every title (tooltip), plus the
    tooltip of each dash the page shows for a missing value."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.dashes: list[str | None] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._hidden += 1
        found = dict(attrs)
        if found.get("title"):
            self.texts.append(str(found["title"]))
        if "missing" in (found.get("class") or "").split():
            self.dashes.append(found.get("title"))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden and data.strip():
            self.texts.append(data)


def shown(path: Path) -> _Shown:
    parser = _Shown()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def edge_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site with an n=0 cell (gold failed everywhere on pg16 for gamma), a model never run on
    pg16 and a very long model name, beside the regular bundles."""
    root = tmp_path_factory.mktemp("edge")
    build_site(make_bundles(root / "bundles") + make_edge_bundles(root / "edge"), root / "site")
    return root / "site"


def test_no_page_shows_a_raw_null(edge_site: Path) -> None:
    pages = sorted(edge_site.rglob("*.html"))
    assert len(pages) == 6  # index, significance and four model pages
    for page in pages:
        found = shown(page)
        assert [t for t in found.texts if RAW.search(t)] == [], page
        assert all(found.dashes), (page, found.dashes)  # every dash says why on hover
    gamma = shown(edge_site / "models" / "gamma.html")
    assert any("n=0" in str(title) for title in gamma.dashes)
    page = (edge_site / "models" / "gamma.html").read_text(encoding="utf-8")
    row = re.search(r"<tr><td>pg16</td>.*?</tr>", page)
    assert row is not None  # the engine is listed, with why it has no accuracy
    assert re.findall(r"<td[^>]*>(.*?)</td>", row.group(0))[-1] == "30"  # all invalid_gold
    long_page = (edge_site / "models" / f"{model_slug(LONG_MODEL)}.html").read_text("utf-8")
    assert "<pre>null</pre>" not in long_page and "No settings" not in long_page


def test_every_null_the_script_reads_comes_with_the_reason_it_shows(edge_site: Path) -> None:
    data = embedded_data((edge_site / "index.html").read_text(encoding="utf-8"))
    reference = data["reference"]
    shown_strings = ([v["label"] for v in data["views"]] + [e["name"] for e in data["engines"]]
                     + [e["dialect"] for e in data["engines"]]
                     + [f for r in data["rows"] for f in (r["model"], r["dataset"], r["href"])])
    assert all(isinstance(s, str) and not RAW.fullmatch(s) for s in shown_strings)
    zero = []
    for row in data["rows"]:
        for engine, cell in row["cells"].items():
            for name, value in cell.items():
                if value is not None:
                    continue
                if name == "accuracy" or cell["accuracy"] is None:
                    assert cell["total"] == 0 and "n=0" in cell["why"], (row["model"], engine)
                elif name.startswith("delta") or name == "paired":
                    assert engine == reference or cell["delta_why"], (row["model"], engine)
                else:
                    pytest.fail(f"{row['model']}/{engine}: {name} is null with no reason")
            if cell["accuracy"] is None:
                zero.append((row["view"], row["model"], engine))
    assert sorted(zero) == [("all", "gamma", "pg16"), ("dataset:demo", "gamma", "pg16")]
    long_rows = [r for r in data["rows"] if r["model"] == LONG_MODEL]
    assert long_rows and all("pg16" not in r["cells"] for r in long_rows)  # never run there
    with (edge_site / "leaderboard.csv").open(encoding="utf-8", newline="") as handle:
        (line,) = [x for x in csv.DictReader(handle)
                   if (x["view"], x["model"], x["engine"]) == ("dataset:demo", "gamma", "pg16")]
    assert (line["correct"], line["total"], line["accuracy"]) == ("0", "0", "")
