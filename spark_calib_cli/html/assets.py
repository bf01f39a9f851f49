"""The page's inline style sheet and script: no file, no network request."""

from __future__ import annotations

STYLE = """
:root { --fail: #b00020; --warn: #8a5a00; --line: #d0d0d0; --muted: #555; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  margin: 0 auto; max-width: 1200px; padding: 0 1.2em 3em; color: #111; }
h1 { font-size: 1.6em; margin: 1em 0 .3em; }
h2 { border-bottom: 2px solid var(--line); padding-bottom: .2em; margin-top: 2em; }
h3 { margin-top: 1.5em; }
dl.run { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
dl.run dt { font-weight: 600; }
dl.run dd { margin: 0; font-family: ui-monospace, monospace; }
nav.toc ol { columns: 2; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: .92em; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
th, td { border: 1px solid var(--line); padding: .25em .55em; vertical-align: top; }
th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th button { font: inherit; font-weight: 600; border: 0; background: none; padding: 0;
  cursor: pointer; text-align: left; }
th[aria-sort="ascending"] button::after { content: " \\25B2"; }
th[aria-sort="descending"] button::after { content: " \\25BC"; }
tr.alerted td:first-child { border-left: 4px solid var(--fail); }
tr:target { outline: 3px solid #1a56db; }
.badge { display: inline-block; font-weight: 700; font-size: .8em; padding: 0 .4em;
  border: 2px solid; border-radius: 3px; margin-right: .4em; }
.badge.fail { color: var(--fail); }
.badge.warn { color: var(--warn); border-style: dashed; }
ol.alerts li { margin: .3em 0; }
p.note, figcaption { color: var(--muted); }
figure { margin: 1em 0; break-inside: avoid; page-break-inside: avoid; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
@media print {
  body { max-width: none; font-size: 11pt; }
  nav.toc { display: none; }
  th button::after { content: ""; }
  a { color: inherit; text-decoration: none; }
  h2 { break-before: page; }
  h2:first-of-type { break-before: avoid; }
  table, tr { break-inside: avoid; }
}
"""

# Click a header to sort by its column (again to reverse). Values come from data-value:
# numbers compare as numbers, missing values (empty) stay last in both directions.
SCRIPT = """
(function () {
  function key(row, index) { return row.cells[index].getAttribute("data-value"); }
  function sortBy(table, index, header) {
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var headers = table.tHead.rows[0].cells;
    for (var i = 0; i < headers.length; i++) { headers[i].setAttribute("aria-sort", "none"); }
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var numeric = header.getAttribute("data-type") === "number";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a, index), y = key(b, index);
      if (x === "" || y === "") { return (x === "") - (y === ""); }
      var order = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, index) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = header.textContent;
      button.title = "sort by " + header.textContent;
      header.textContent = "";
      header.appendChild(button);
      header.setAttribute("aria-sort", "none");
      button.addEventListener("click", function () { sortBy(table, index, header); });
    });
  });
})();
"""
