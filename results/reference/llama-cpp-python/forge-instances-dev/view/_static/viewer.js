// surfbench view: sortable tables, and the filters of an exported cell page (no server to ask).
"use strict";

function cellValue(cell) {
  const text = cell.textContent.trim();
  const number = parseFloat(text.replace(/,/g, ""));
  return { text: text, number: Number.isNaN(number) ? null : number };
}

function sortBy(table, column, header) {
  const body = table.tBodies[0];
  const descending = header.classList.contains("asc");
  for (const th of table.tHead.rows[0].cells) th.classList.remove("asc", "desc");
  header.classList.add(descending ? "desc" : "asc");
  const rows = Array.from(body.rows);
  rows.sort(function (a, b) {
    const x = cellValue(a.cells[column]), y = cellValue(b.cells[column]);
    let order;
    if (x.number !== null && y.number !== null) order = x.number - y.number;
    else if (x.number !== null) order = -1;
    else if (y.number !== null) order = 1;
    else order = x.text.localeCompare(y.text);
    return descending ? -order : order;
  });
  for (const row of rows) body.appendChild(row);
}

for (const table of document.querySelectorAll("table.sortable")) {
  const headers = table.tHead ? table.tHead.rows[0].cells : [];
  Array.from(headers).forEach(function (th, column) {
    th.title = "sort by " + th.textContent;
    th.addEventListener("click", function () { sortBy(table, column, th); });
  });
}

// An exported cell page lists every episode: its form filters the rows here, as the server would.
function staticFilter(form, table) {
  const want = {};
  for (const field of form.elements) if (field.name) want[field.name] = field.value.trim();
  let shown = 0;
  for (const row of table.tBodies[0].rows) {
    const d = row.dataset;
    const ok = (!want.outcome || d.outcome === want.outcome)
      && (!want.error || (d.errors || "").includes("|" + want.error + "|"))
      && (!want.tag || (d.tags || "").includes("|" + want.tag + "|"))
      && (!want.op || (d.ops || "").includes("|" + want.op + "|"))
      && (!want.q || (d.request || "").includes(want.q.toLowerCase()));
    row.classList.toggle("hidden", !ok);
    if (ok) shown += 1;
  }
  const count = document.getElementById("count");
  if (count) count.textContent = shown.toLocaleString("en") + " of " + count.dataset.total + " episodes";
}

if (document.body.dataset.static === "1") {
  const form = document.getElementById("filters");
  const table = document.getElementById("episodes");
  if (form && table) {
    const params = new URLSearchParams(window.location.search);
    for (const field of form.elements) {
      if (!field.name || !params.has(field.name)) continue;
      const value = params.get(field.name);
      if (field.tagName === "SELECT" && !Array.from(field.options).some(function (o) { return o.value === value; })) {
        field.add(new Option(value, value));
      }
      field.value = value;
    }
    form.addEventListener("submit", function (event) { event.preventDefault(); staticFilter(form, table); });
    staticFilter(form, table);
  }
}
