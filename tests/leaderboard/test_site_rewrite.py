"""The rewriting page of the leaderboard site: numbers, figure, downloads, navigation, merging."""

from __future__ import annotations

import csv
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from polysql_testkit.bundles import make_bundles

from polysql.analysis.rewrite.ledger import full_denominator_table, outcome_counts, write_ledger
from polysql.analysis.rewrite.model import OUTCOMES, CaseOutcome, Timing
from polysql.core.errors import ConfigError
from polysql.leaderboard.site.build import build_site
from polysql.leaderboard.site.rewrite import REWRITE_CSV_FIELDS, load_rewrite_ledgers

PLAIN = "sqlglot-optimize"
ODD = "<i>m2</i> & \"co\""  # markup in a method name: it must come out escaped


def _case(case_id: str, pool: str, method: str, outcome: str, *, timing: Timing | None = None,
          cgoq: float | None = None, scs: float | None = None) -> CaseOutcome:
    return CaseOutcome(case_id=case_id, pool=pool, engine="duckdb", dialect="duckdb",
                       method=method, outcome=outcome, timing=timing, cgoq=cgoq, scs_input=scs,
                       consistent=True if cgoq is not None else None)


def _timed(input_s: float, rewrite_s: float) -> Timing:
    return Timing(input_runs=[input_s] * 3, rewrite_runs=[rewrite_s] * 3, warmup=1)


# Two ledgers, as two runs would write them: pool "alpha" in one, pool "beta" in the other.
LEDGER_A = [
    _case("c1", "alpha", PLAIN, "performance_gain", timing=_timed(2.0, 1.0), cgoq=76.0, scs=10),
    _case("c2", "alpha", PLAIN, "unsafe_rewrite", scs=20),
    _case("c3", "alpha", PLAIN, "no_rewrite", scs=30),
    _case("c1", "alpha", ODD, "source_acceptance_failure", scs=10),
    _case("c2", "alpha", ODD, "execution_failure", scs=20),
    _case("c3", "alpha", ODD, "no_op", scs=30),
]
LEDGER_B = [
    _case("c4", "beta", PLAIN, "neutral", timing=_timed(1.0, 1.0), cgoq=0.0, scs=40),
    _case("c4", "beta", ODD, "generation_failure", scs=40),
]


class _Tables(HTMLParser):
    """Rows of every table: the row's attributes and its cells as (attributes, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[dict[str, str | None], list[tuple[dict[str, str | None], str]]]] = []
        self.links: list[str] = []
        self._cell: tuple[dict[str, str | None], list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links.extend(value for name, value in attrs if name in ("href", "src") and value)
        if tag == "tr":
            self.rows.append((dict(attrs), []))
        elif tag in ("td", "th") and self.rows:
            self._cell = (dict(attrs), [])

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell[1].append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1][1].append((self._cell[0], "".join(self._cell[1])))
            self._cell = None


def _parse(path: Path) -> _Tables:
    parser = _Tables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    root = tmp_path_factory.mktemp("rewrite-site")
    bundles = make_bundles(root / "bundles")[:1]
    ledger_a = write_ledger(LEDGER_A, root / "run-a")[1]
    ledger_b = write_ledger(LEDGER_B, root / "run-b")[1]
    out = root / "site"
    return out, build_site(bundles, out, rewrite_ledgers=[ledger_a, ledger_b])


def test_page_downloads_and_figure_are_written(site: tuple[Path, list[Path]]) -> None:
    out, written = site
    for name in ("rewrite.html", "rewrite.csv", "rewrite.json", "figures/rewrite_outcomes.png",
                 "figures/rewrite_outcomes.svg", "index.html", "significance.html"):
        assert (out / name).is_file(), name
        assert out / name in written, name
    assert (out / "figures" / "rewrite_outcomes.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    links = _parse(out / "rewrite.html").links
    assert "figures/rewrite_outcomes.png" in links and "figures/rewrite_outcomes.svg" in links
    assert "rewrite.csv" in links and "rewrite.json" in links


def test_hand_counted_rates_of_every_case() -> None:
    # the expectations below are counted by hand from LEDGER_A + LEDGER_B, independently of the
    # table code, so the test below that compares the page to the table compares to known values
    rows = {r.method: r for r in full_denominator_table(LEDGER_A + LEDGER_B) if r.scope == "all"}
    plain, odd = rows[PLAIN], rows[ODD]
    assert (plain.n, plain.source_acceptance_rate, plain.generation_rate, plain.no_rewrite_rate,
            plain.execution_coverage, plain.result_consistency, plain.unsafe_rate,
            plain.valid, plain.speedup_support) == (4, 1.0, 0.75, 0.25, 0.75, 0.5, 0.25, 2, 2)
    assert plain.geomean_speedup == pytest.approx(math.sqrt(2.0))
    assert (plain.cgoq_at_n, plain.cgoq_at_valid) == (19.0, 38.0)
    assert (odd.n, odd.source_acceptance_rate, odd.generation_rate, odd.execution_coverage,
            odd.result_consistency, odd.geomean_speedup, odd.cgoq_at_n, odd.cgoq_at_valid) == (
            4, 0.75, 0.5, 0.0, 0.0, None, 0.0, None)


def test_page_numbers_equal_the_full_denominator_table(site: tuple[Path, list[Path]]) -> None:
    out, _ = site
    expected = full_denominator_table(LEDGER_A + LEDGER_B)
    numeric = ("n", "source_acceptance_rate", "generation_rate", "no_rewrite_rate",
               "execution_coverage", "result_consistency", "unsafe_rate", "geomean_speedup",
               "speedup_support", "cgoq_at_n", "cgoq_at_valid")
    page_rows = [(attrs, cells) for attrs, cells in _parse(out / "rewrite.html").rows
                 if attrs.get("data-scope")]
    assert len(page_rows) == len(expected)
    assert {r.scope for r in expected} == {"all", "pool", "scs_quartile"}
    for row, (attrs, cells) in zip(expected, page_rows, strict=True):
        assert (attrs["data-scope"], attrs["data-method"]) == (row.scope, row.method)
        values = [c for c in cells if "data-value" in c[0] or c[0].get("class") == "num"]
        assert len(values) == len(numeric)
        for name, (cell, text) in zip(numeric, values, strict=True):
            value = getattr(row, name)
            if value is None:
                assert "data-value" not in cell and text == "—", (row, name)
            else:
                assert float(cell["data-value"] or "nan") == value, (row, name)
        if row.scope != "all":
            assert cells[0][0]["data-group"] == row.group
    all_plain = next(cells for attrs, cells in page_rows
                     if attrs["data-scope"] == "all" and attrs["data-method"] == PLAIN)
    shown = [text for _cell, text in all_plain[1:]]
    assert shown == ["4", "100.0%", "75.0%", "25.0%", "75.0%", "50.0%", "25.0%", "1.41×", "2",
                     "19.0", "38.0"]


def test_outcome_counts_are_shown(site: tuple[Path, list[Path]]) -> None:
    out, _ = site
    counts = outcome_counts(LEDGER_A + LEDGER_B)
    shown = {attrs["data-method"]: {c["data-outcome"]: int(text) for c, text in cells[1:]}
             for attrs, cells in _parse(out / "rewrite.html").rows
             if attrs.get("data-method") and not attrs.get("data-scope")}
    assert shown == counts
    assert shown[PLAIN]["performance_gain"] == 1 and sum(shown[ODD].values()) == 4


def test_downloads_hold_the_table(site: tuple[Path, list[Path]]) -> None:
    out, _ = site
    expected = [row.to_dict() for row in full_denominator_table(LEDGER_A + LEDGER_B)]
    with (out / "rewrite.csv").open(encoding="utf-8", newline="") as source:
        reader = csv.DictReader(source)
        assert tuple(reader.fieldnames or ()) == REWRITE_CSV_FIELDS
        table = list(reader)
    assert len(table) == len(expected)
    for got, want in zip(table, expected, strict=True):
        for name, value in want.items():
            if value is None:
                assert got[name] == ""
            elif isinstance(value, float):
                assert float(got[name]) == value
            else:
                assert got[name] == str(value)
    document: dict[str, Any] = json.loads((out / "rewrite.json").read_text(encoding="utf-8"))
    assert document["format"] == "polysql-rewrite-leaderboard"
    assert document["rows"] == expected
    assert document["outcomes"] == list(OUTCOMES)
    assert document["outcome_counts"] == outcome_counts(LEDGER_A + LEDGER_B)


def test_every_page_links_to_rewriting_and_links_resolve(site: tuple[Path, list[Path]]) -> None:
    out, _ = site
    pages = sorted(out.rglob("*.html"))
    assert out / "rewrite.html" in pages and len(pages) == 4  # index, significance, model, rewrite
    for page in pages:
        links = _parse(page).links
        root = "../" if page.parent != out else ""
        assert f"{root}rewrite.html" in links, page
        for link in links:
            assert not re.match(r"^([a-z]+:|//|/)", link, re.I), (page, link)
            assert (page.parent / link).resolve().is_file(), (page, link)
    text = (out / "rewrite.html").read_text(encoding="utf-8")
    assert 'href="assets/site.css"' in text
    assert "<i>" not in text
    assert "&lt;i&gt;m2&lt;/i&gt; &amp; &quot;co&quot;" in text


def test_duplicate_rows_across_ledgers_are_refused(tmp_path: Path) -> None:
    first = write_ledger(LEDGER_A, tmp_path / "run-1")[1]
    second = write_ledger([LEDGER_B[0], LEDGER_A[1]], tmp_path / "run-2")[1]
    with pytest.raises(ConfigError) as caught:
        load_rewrite_ledgers([first, second])
    assert str(first) in str(caught.value) and str(second) in str(caught.value)
    assert "'c2'" in str(caught.value) and "'alpha'" in str(caught.value)
    bundles = make_bundles(tmp_path / "bundles")[:1]
    with pytest.raises(ConfigError):
        build_site(bundles, tmp_path / "site", rewrite_ledgers=[first, second])
    assert not (tmp_path / "site").exists()  # refused before anything was written


def test_merged_ledgers_equal_one_ledger_of_every_row(tmp_path: Path) -> None:
    first = write_ledger(LEDGER_A, tmp_path / "a")[1]
    second = write_ledger(LEDGER_B, tmp_path / "b")[1]
    merged = load_rewrite_ledgers([first, second])
    assert [o.to_dict() for o in merged] == [o.to_dict() for o in LEDGER_A + LEDGER_B]
    empty = write_ledger([], tmp_path / "empty")[1]
    with pytest.raises(ConfigError, match="no rows"):
        load_rewrite_ledgers([empty])


def test_site_without_ledgers_has_no_rewriting_page(tmp_path: Path) -> None:
    out = tmp_path / "site"
    written = build_site(make_bundles(tmp_path / "bundles")[:1], out)
    assert not (out / "rewrite.html").exists() and not (out / "rewrite.csv").exists()
    assert not any(p.name.startswith("rewrite") for p in written)
    for page in out.rglob("*.html"):
        assert "Rewriting" not in page.read_text(encoding="utf-8")
        assert not any("rewrite" in link for link in _parse(page).links)
