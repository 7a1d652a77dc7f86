"""The stylesheet and script of the static leaderboard site, kept as text so the site needs no
package data and no external asset: :func:`polysql.leaderboard.site.build_site` writes them next
to the pages."""

from __future__ import annotations

# A page without an icon makes browsers ask the host for /favicon.ico, a 404 on most static hosts.
FAVICON_SVG = """\
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">\
<rect width="16" height="16" rx="3" fill="#2456a6"/>\
<rect x="3" y="9" width="2.5" height="4" fill="#fff"/><rect x="6.75" y="6" width="2.5" height="7" \
fill="#fff"/><rect x="10.5" y="3" width="2.5" height="10" fill="#fff"/></svg>
"""

SITE_CSS = """\
:root { --ink: #1d2330; --muted: #5b6477; --line: #d9dee8; --band: #f5f7fb; --accent: #2456a6;
        --bad: #b3261e; --good: #1e7b34; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
       margin: 0 auto; max-width: 1400px; padding: 1.2rem 1.5rem 3rem; }
/* long unbroken names (models, bundles, paths) wrap instead of widening the page */
h1, h2, h3, p, li, figcaption { overflow-wrap: anywhere; }
.name { display: inline-block; max-width: 24rem; overflow-wrap: anywhere; vertical-align: top; }
a { color: var(--accent); }
h1 { font-size: 1.6rem; margin: .2rem 0 .6rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin-top: 1.4rem; }
nav.top { display: flex; gap: 1.2rem; flex-wrap: wrap; font-size: .95rem; margin-bottom: .4rem; }
p.note, .muted { color: var(--muted); font-size: .9rem; }
.controls { display: flex; gap: 1rem; align-items: center; margin: .8rem 0; }
select { font: inherit; padding: .15rem .4rem; }
/* a table wider than the page scrolls inside its own box, the page never does */
.table-wrap { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .6rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .35rem .7rem; text-align: left;
         vertical-align: top; }
thead th { background: var(--band); position: sticky; top: 0; }
tbody tr:nth-child(even) { background: #fafbfd; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0;
            cursor: pointer; color: inherit; }
th button .arrow { display: inline-block; width: 1em; color: var(--muted); }
th[aria-sort="ascending"] .arrow::after { content: "\\25B2"; }
th[aria-sort="descending"] .arrow::after { content: "\\25BC"; }
th .dialect { display: block; font-weight: 400; font-size: .8rem; color: var(--muted); }
.acc { font-weight: 600; font-variant-numeric: tabular-nums; }
.ci, .count { display: block; font-size: .8rem; color: var(--muted);
              font-variant-numeric: tabular-nums; }
.delta { display: block; font-size: .85rem; font-variant-numeric: tabular-nums; }
.delta.neg { color: var(--bad); }
.delta.pos { color: var(--good); }
.ref { display: block; font-size: .8rem; color: var(--muted); font-style: italic; }
.missing { color: var(--muted); cursor: help; }
.sig { font-weight: 700; color: var(--bad); }
figure { margin: 1rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
pre { background: var(--band); padding: .6rem; overflow-x: auto; font-size: .85rem; }
"""

# Plain browser JavaScript, no library: the data comes from the JSON block of the page itself so
# the site also works when opened straight from disk (file://), where fetch() is refused.
SITE_JS = """\
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("leaderboard-data").textContent);
  var table = document.getElementById("leaderboard");
  var select = document.getElementById("dataset-filter");
  var summary = document.getElementById("row-count");
  var state = { view: data.views.length ? data.views[0].key : null, key: null, dir: 1 };

  // A value the data lacks (null) is never printed: the page shows a dash saying why.
  function isNum(x) { return typeof x === "number" && isFinite(x); }
  function pct(x) { return isNum(x) ? (100 * x).toFixed(1) + "%" : "\\u2014"; }
  function points(x) {
    if (!isNum(x)) { return "\\u2014"; }
    var v = 100 * x;
    var sign = v > 0.00005 ? "+" : (v < -0.00005 ? "\\u2212" : "\\u00B1");
    return sign + Math.abs(v).toFixed(1) + " pts";
  }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function blank(why, cls) {
    var node = el("span", "missing" + (cls ? " " + cls : ""), "\\u2014");
    node.title = why;
    return node;
  }

  function sortValue(row, key) {
    if (key === "model") { return row.model.toLowerCase(); }
    var cell = row.cells[key];
    return cell && isNum(cell.accuracy) ? cell.accuracy : null;
  }

  function compare(a, b) {
    var x = sortValue(a, state.key), y = sortValue(b, state.key);
    // rows without a value stay at the bottom whichever way the column is sorted
    if (x === null && y === null) { return a.model < b.model ? -1 : (a.model > b.model ? 1 : 0); }
    if (x === null) { return 1; }
    if (y === null) { return -1; }
    if (x < y) { return -state.dir; }
    if (x > y) { return state.dir; }
    return a.model < b.model ? -1 : (a.model > b.model ? 1 : 0);
  }

  function headerCell(key, label, dialect, numeric) {
    var th = el("th", numeric ? "num" : "");
    th.setAttribute("data-key", key);
    th.setAttribute("aria-sort", state.key === key ? (state.dir > 0 ? "ascending" : "descending")
                                                    : "none");
    var button = el("button");
    button.type = "button";
    button.appendChild(document.createTextNode(label));
    button.appendChild(el("span", "arrow"));
    button.addEventListener("click", function () {
      if (state.key === key) { state.dir = -state.dir; }
      else { state.key = key; state.dir = numeric ? -1 : 1; }  // best accuracy first
      render();
    });
    th.appendChild(button);
    if (dialect && dialect !== label) { th.appendChild(el("span", "dialect", String(dialect))); }
    return th;
  }

  function accuracyCell(cell, engine, row) {
    var td = el("td", "num");
    td.setAttribute("data-engine", engine);
    if (!cell) {
      td.appendChild(blank("no records: " + row.model + " was not run on " + engine +
                           (row.view === "all" ? "" : " for dataset " + row.dataset)));
      return td;
    }
    if (!isNum(cell.accuracy)) {
      td.appendChild(blank(cell.why || "no accuracy: no question could be scored", "acc"));
      td.appendChild(el("span", "count", "n=" + (isNum(cell.total) ? cell.total : 0)));
      return td;
    }
    td.appendChild(el("span", "acc", pct(cell.accuracy)));
    if (isNum(cell.ci_low) && isNum(cell.ci_high)) {
      td.appendChild(el("span", "ci", "[" + pct(cell.ci_low) + ", " + pct(cell.ci_high) + "]"));
    }
    td.appendChild(el("span", "count", cell.correct + " / " + cell.total));
    if (engine === data.reference) {
      td.appendChild(el("span", "ref", "reference"));
    } else if (isNum(cell.delta)) {
      var cls = "delta" + (cell.delta < 0 ? " neg" : (cell.delta > 0 ? " pos" : ""));
      var delta = el("span", cls, points(cell.delta));
      delta.title = "vs " + data.reference + " on " + cell.paired + " questions both evaluated, " +
        "95% bootstrap [" + points(cell.delta_low) + ", " + points(cell.delta_high) + "]";
      td.appendChild(delta);
    } else if (data.reference) {
      td.appendChild(blank(cell.delta_why || "no difference to " + data.reference, "delta"));
    }
    return td;
  }

  function render() {
    var rows = data.rows.filter(function (r) { return r.view === state.view; });
    if (state.key !== null) { rows.sort(compare); }
    table.textContent = "";
    var head = table.createTHead().insertRow();
    head.appendChild(headerCell("model", "Model", null, false));
    data.engines.forEach(function (e) {
      head.appendChild(headerCell(e.name, e.name, e.dialect, true));
    });
    var body = table.createTBody();
    rows.forEach(function (row) {
      var tr = body.insertRow();
      tr.setAttribute("data-model", row.model);
      var name = el("th");
      name.scope = "row";
      var link = el("a", "name", row.model);
      link.href = row.href;
      name.appendChild(link);
      tr.appendChild(name);
      data.engines.forEach(function (e) {
        tr.appendChild(accuracyCell(row.cells[e.name], e.name, row));
      });
    });
    summary.textContent = rows.length + (rows.length === 1 ? " model" : " models");
  }

  data.views.forEach(function (v) {
    var option = el("option", "", v.label);
    option.value = v.key;
    select.appendChild(option);
  });
  select.addEventListener("change", function () { state.view = select.value; render(); });
  render();
}());
"""
