"""The viewer's pages of runs, cells and episodes (bench/view/compare_pages.py: a task across cells, an operation).

Each function returns one whole page; ``static`` pages are an export's (``surfbench view --export``): a cell's page
then lists all its episodes, and its filters run in the page (viewer.js) instead of on the server.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from surfbench.bench.contracts.records import EpisodeOutcome
from surfbench.bench.report.viewer_links import cell_path, episode_path, task_path
from surfbench.bench.view.episode_page import StepView, checks, first_tries, steps, system_text
from surfbench.bench.view.html import badge, details, esc, link, number, page, pre, table
from surfbench.bench.view.index import OUTCOMES, PAGE_SIZE, Filters, ViewCell, ViewIndex, listed, missing, outcome


def index_page(index: ViewIndex, static: bool = False) -> str:
    """The runs, their cells (the report's cells table, sortable) and their tasks."""
    runs = []
    for folder, info in index.runs.infos.items():
        n = int((index.frame["run"] == Path(folder).name).sum())
        runs.append([esc(folder), esc(info.get("created", "-")), esc(len(info.get("cells", []))), number(n)])
    body = "<h1>Runs</h1>" + table(["run folder", "created", "cells recorded", "episodes"], runs)
    if index.runs.scripted:
        body += '<p class="warn">Scripted model in these runs: not a measurement.</p>'
    body += "".join(f"<p class='note'>Note: {esc(n)}</p>" for n in index.runs.notes)
    body += f"<h2>Cells</h2><p>{len(index.cells)} cells, {len(index.frame):,} episodes. Click a heading to sort.</p>"
    rows = []
    for cell in index.cells:
        text = list(cell.text)
        surface = index.head.index("surface")
        text[surface] = link(cell_path(cell.keys), text[surface])
        rows.append([t if i == surface else esc(t) for i, t in enumerate(text)])
    body += table(index.head, rows, sortable=True, table_id="cells")
    body += _tasks(index)
    return page("runs", body, 0, static)


def _tasks(index: ViewIndex) -> str:
    frame = index.frame
    groups = frame.groupby(["suite", "task_id"], sort=True)["success"].agg(["size", "sum"])
    rows = [
        [esc(suite), link(task_path(str(suite), str(task)), task), number(size), number(ok)]
        for (suite, task), size, ok in zip(groups.index, groups["size"], groups["sum"], strict=True)
    ]
    inner = table(["suite", "task", "episodes", "passed"], rows, sortable=True, table_id="tasks")
    return "<h2>Tasks across cells</h2>" + details(f"{len(rows)} tasks: each on every cell, side by side", inner)


def cell_page(index: ViewIndex, cell: ViewCell, filters: Filters, static: bool = False) -> str:
    """A cell's episodes: its report row, filters, then one page of episodes (all of them when ``static``)."""
    chosen = list(cell.positions) if static else index.select(cell, filters)
    pages = max(1, math.ceil(len(chosen) / PAGE_SIZE))
    current = min(filters.page, pages)
    shown = chosen if static else chosen[(current - 1) * PAGE_SIZE : current * PAGE_SIZE]
    body = f"<h1>{esc(cell.label)}</h1>"
    body += table(index.head, [[esc(t) for t in cell.text]])
    body += _filter_form(index, cell, filters)
    count = f"{len(chosen):,} of {len(cell.positions):,} episodes"
    if not static and pages > 1:
        count += f", page {current} of {pages}"
    body += f'<p id="count" data-total="{len(cell.positions)}">{count}</p>'
    rows, attrs = [], []
    for i in shown:
        row = index.row(i)
        rows.append(_episode_cells(row))
        attrs.append(_row_data(index, i, row, static))
    head = ["task", "repeat", "outcome", "steps", "first try", "error types", "tags", "why (first line)", "across"]
    body += table(head, rows, sortable=True, row_attrs=attrs, table_id="episodes")
    if not static and pages > 1:
        body += _pager(cell, filters, current, pages)
    return page(cell.label, body, 1, static)


def _episode_cells(row: dict[str, object]) -> list[str]:
    result = outcome(row)
    failures = listed(row.get("failures"))
    tries = listed(row.get("first_tries"))
    good = sum(1 for t in tries if isinstance(t, dict) and t.get("correct"))
    return [
        link("../" + episode_path(str(row["episode_key"])), row["task_id"]),
        esc(row.get("repeat")),
        badge(result, result),
        number(row.get("round_trips")),
        f"{good}/{len(tries)}" if tries else "-",
        esc(_counted(listed(row.get("error_types")))),
        esc(", ".join(map(str, listed(row.get("tags"))))),
        esc(str(failures[0])[:160]) if failures else "",
        link("../" + task_path(str(row["suite"]), str(row["task_id"])), "all cells"),
    ]


def _counted(values: list[object]) -> str:
    """Each value once, in order, with how many times it occurred: ``not_exposed x12, schema_invalid``."""
    counts: dict[str, int] = {}
    for value in values:
        counts[str(value)] = counts.get(str(value), 0) + 1
    return ", ".join(f"{v} x{n}" if n > 1 else v for v, n in counts.items())


def _row_data(index: ViewIndex, position: int, row: dict[str, object], static: bool) -> dict[str, str]:
    """What viewer.js filters an exported page's rows on (the server filters its own)."""

    def joined(values: Iterable[object]) -> str:
        return "|" + "|".join(map(str, values)) + "|"

    out = {
        "data-outcome": outcome(row),
        "data-errors": joined(listed(row.get("error_types"))),
        "data-tags": joined(listed(row.get("tags"))),
    }
    if static:
        out["data-ops"] = joined(sorted(index.ops(position)))
        out["data-request"] = index.request_text(position).casefold()
    return out


def _filter_form(index: ViewIndex, cell: ViewCell, filters: Filters) -> str:
    choices = index.choices(cell)

    def select(name: str, label: str, values: list[str], current: str) -> str:
        values = values + [current] if current and current not in values else values
        options = '<option value="">any</option>' + "".join(
            f'<option value="{esc(v)}"{" selected" if v == current else ""}>{esc(v)}</option>' for v in values
        )
        return f'<label>{esc(label)} <select name="{name}">{options}</select></label>'

    parts = [
        select("outcome", "outcome", list(OUTCOMES), filters.outcome),
        select("error", "error type", choices["error"], filters.error),
        select("tag", "tag", choices["tag"], filters.tag),
        select("op", "operation", choices["op"], filters.op),
        f'<label>request contains <input name="q" value="{esc(filters.q)}" size="24"></label>',
        '<button type="submit">filter</button>',
    ]
    return f'<form id="filters" class="filters" method="get">{" ".join(parts)}</form>'


def _pager(cell: ViewCell, filters: Filters, current: int, pages: int) -> str:
    from urllib.parse import urlencode

    def at(n: int, text: str) -> str:
        return link(f"{cell.id}.html?{urlencode(filters.query(page=n))}", text)

    parts = []
    if current > 1:
        parts.append(at(current - 1, "previous"))
    parts.append(f"page {current} of {pages}")
    if current < pages:
        parts.append(at(current + 1, "next"))
    return f'<p class="pager">{" · ".join(parts)}</p>'


def episode_page(index: ViewIndex, position: int, static: bool = False) -> str:
    """One episode: its numbers, its checks and why, then each step's request, model turn and tool calls."""
    with index.lock:
        row = index.row(position)
        key = str(row["episode_key"])
        found = index.transcript(position)
        step_rows, call_rows = index.episode_steps(key), index.episode_calls(key)
        texts = index.runs.tool_texts  # the runs' tools tables (read on first use)
    messages, summary = found if found else ([], {})
    views = steps(messages, step_rows, call_rows)
    cell = index.cell_of(position)
    result = outcome(row)
    title = f"{row['task_id']} · {row['surface']} / {row['model']}"
    body = f"<h1>{esc(row['task_id'])}</h1>"
    body += f"<p class='sub'>{esc(row['surface'])} / {esc(row['model'])} / {esc(row['mode'])} · suite "
    body += f"{esc(row['suite'])} · repeat {esc(row['repeat'])} · run {esc(row['run'])}</p>"
    cached = row.get("cached_prompt_tokens_total")
    facts = [
        badge(result, result),
        f'<span id="step-count">{number(row.get("round_trips"))} steps</span>',
        f"{number(row.get('prompt_tokens_total'))} prompt tokens",
        f"{number(cached)} cached" if not missing(cached) else "cached tokens not recorded",
        f"{number(row.get('latency_s'), 1)} s model time",
    ]
    body += f"<p class='facts'>{' · '.join(facts)}</p>"
    links = [link("../" + task_path(str(row["suite"]), str(row["task_id"])), "this task on every cell")]
    if cell is not None:
        links.append(link("../" + cell_path(cell.keys), "the cell's episodes"))
    body += f"<p>{' · '.join(links)}</p>"
    body += _checks(row)
    if not found:
        body += "<p class='note'>The run kept no transcript of this episode: steps from the tables only.</p>"
    system = system_text(messages)
    users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    body += "<h2>Request</h2>" + pre(users[0] if users else "(not recorded)")
    body += f"<h2>Steps ({len(views)})</h2>"
    body += "".join(_step(view, system, views[view.index - 1] if view.index else None, texts) for view in views)
    body += _ending(row, summary)
    return page(title, body, 1, static)


def _checks(row: dict[str, object]) -> str:
    found, loose = checks(row)
    rows = []
    for check in found:
        state = "pass" if check.passed else "fail"
        why = "<br>".join(esc(r) for r in check.reasons) or ("holds" if check.passed else "failed (no reason recorded)")
        rows.append([esc(check.name), badge("passed" if check.passed else "failed", state), why])
    out = "<h2>Checks</h2>" + (table(["check", "result", "why"], rows, table_id="checks") if rows else "")
    if not rows:
        out += "<p>The task has no checks recorded.</p>"
    tries = first_tries(row)
    if tries:
        try_rows = [[esc(op), badge("right" if ok else "wrong", "pass" if ok else "fail"), esc(kind), esc(why)]
                    for op, ok, kind, why in tries]  # fmt: skip
        out += "<h3>First tries (expected calls)</h3>"
        out += table(["expected call", "first attempt", "error type", "why"], try_rows)
    selection = row.get("selection_correct")
    if not missing(selection):
        out += f"<p>Selection (the first operation called was the expected one): {'yes' if selection else 'no'}</p>"
    if loose:
        out += "<p>Also: " + "; ".join(esc(x) for x in loose) + "</p>"
    return out


def _step(view: StepView, system: str, before: StepView | None, texts: Mapping[str, str]) -> str:
    r = view.record
    head = f"step {view.index}"
    if r:
        tokens = number(r.get("prompt_tokens"))
        head += f" · {tokens} prompt tokens (estimated {number(r.get('prompt_tokens_est'))})"
        if not missing(r.get("cached_prompt_tokens")):
            head += f" · {number(r.get('cached_prompt_tokens'))} cached"
        head += f" · {len(view.calls)} tool call(s)"
    out = f'<section class="step" id="step-{view.index}"><h3>{esc(head)}</h3>'
    out += details("the request the model saw: system text and tool block", _request(view, system, before, texts))
    for message in view.new_messages:
        out += "<p class='turn'>user:</p>" + pre(message.get("content"))
    out += _model_turn(view)
    if view.calls:
        out += _calls(view.calls)
    return out + "</section>"


def _request(view: StepView, system: str, before: StepView | None, texts: Mapping[str, str]) -> str:
    r = view.record
    same = before is not None and before.record.get("prefix_hash") == r.get("prefix_hash")
    facts = [
        ["tools shown", number(r.get("tools_shown"))],
        ["tool block", f"{number(r.get('tool_block_bytes'))} B"],
        ["request", f"{number(r.get('request_bytes'))} B ({esc(r.get('request_bytes_source') or '-')})"],
        ["prompt tokens", f"{number(r.get('prompt_tokens'))} reported, {number(r.get('prompt_tokens_est'))} estimated"],
        ["cached prompt tokens", number(r.get("cached_prompt_tokens"))],
        ["system text", f"{len(system.encode('utf-8')):,} B"],
        ["prefix (system text + tool block)", esc(r.get("prefix_hash")) + (" (as the step before)" if same else "")],
    ]
    out = table(["", ""], facts, cls="facts")
    shown = listed(r.get("operations_shown"))
    if shown:
        out += f"<p>Operations shown ({len(shown)}): " + esc(", ".join(map(str, shown))) + "</p>"
    elif not missing(r.get("shown_count")):
        out += f"<p>{number(r.get('shown_count'))} operations callable: every operation of the catalog.</p>"
    out += "<h4>Tool block</h4>" + _tool_block(view, before, texts)
    return out + "<h4>System text</h4>" + pre(system or "(not recorded)")


def _tool_block(view: StepView, before: StepView | None, texts: Mapping[str, str]) -> str:
    """The step's tool block as sent, each tool's wire text (collapsed); or that it is the step before's."""
    r = view.record
    if missing(r.get("tool_hashes")):
        return "<p class='note'>The tool block's text is not recorded in this run (its size and hash are).</p>"
    hashes = [str(h) for h in listed(r.get("tool_hashes"))]
    if not hashes:
        return "<p>No tool block: the surface sent no tools at this step.</p>"
    earlier = before.record.get("tool_hashes") if before is not None else None
    if before is not None and not missing(earlier) and [str(h) for h in listed(earlier)] == hashes:
        return f"<p>The same tool block as step {before.index} ({len(hashes)} tool(s)).</p>"
    inner = []
    for digest in hashes:
        text = texts.get(digest)
        if text is None:
            inner.append(f"<p class='note'>Tool {esc(digest)}: its text is not in the run's tools table.</p>")
            continue
        inner.append(f"<h5>{esc(_tool_name(text))} · {len(text.encode('utf-8')):,} B</h5>" + pre(text))
    tokens = next((s[2] for s in listed(r.get("segments")) if isinstance(s, list) and s[:1] == ["tools"]), None)
    summary = f"the tool block as sent: {len(hashes)} tool(s), {number(r.get('tool_block_bytes'))} B"
    summary += f", {number(tokens)} tokens (o200k_base estimate)" if tokens is not None else ""
    return details(esc(summary), "".join(inner))


def _tool_name(text: str) -> str:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return "(a tool)"
    return str(value.get("name")) if isinstance(value, dict) and value.get("name") is not None else "(a tool)"


def _model_turn(view: StepView) -> str:
    r, message = view.record, view.assistant or {}
    text = message.get("content") or r.get("text") or ""
    notes = []
    if not missing(r.get("parse_format")) and r.get("parse_format"):
        notes.append(f"calls parsed from text: {esc(r.get('parse_format'))}")
    if not missing(r.get("finish_reason")):
        notes.append(f"finish: {esc(r.get('finish_reason'))}")
    if r.get("cache_hit") is True or r.get("cache_hit") == 1:
        notes.append("from the response cache")
    out = "<p class='turn'>model" + (f" <span class='why'>({'; '.join(notes)})</span>" if notes else "") + ":</p>"
    if text:
        out += pre(text)
    calls = message.get("tool_calls") or []
    if calls and not text:
        sent = [f"{c.get('function', {}).get('name')}({c.get('function', {}).get('arguments')})" for c in calls]
        out += pre("\n".join(sent))
    return out


def _calls(calls: list[dict[str, object]]) -> str:
    rows = []
    for c in calls:
        op = c.get("operation")
        if missing(op):
            routed = esc(c.get("tool"))
        elif str(op) == str(c.get("tool")):
            routed = f"<b>{esc(op)}</b>"
        else:  # the surface routed the tool call to an operation (a dispatcher, code mode)
            routed = f"{esc(c.get('tool'))} → <b>{esc(op)}</b>"
        kind = esc(c.get("kind")) + (f" ({esc(c.get('meta'))})" if not missing(c.get("meta")) else "")
        valid = "-" if missing(c.get("schema_valid")) else ("valid" if c.get("schema_valid") else "invalid")
        ok = "-" if missing(c.get("backend_ok")) else ("ok" if c.get("backend_ok") else "failed")
        first = "" if missing(c.get("first_try_for")) else f"first try at {esc(c.get('first_try_for'))}"
        if first and not missing(c.get("first_try_correct")):
            first += " (right)" if c.get("first_try_correct") else " (wrong)"
        args = _arguments(c.get("arguments"))
        result = str(c.get("result") or "")
        shown = pre(result) if len(result) <= 300 else details(esc(result[:120]) + "…", pre(result))
        error = esc(c.get("error_type")) if not missing(c.get("error_type")) else ""
        rows.append([esc(c.get("index")), routed, kind, pre(args), valid, ok, error, shown, first])
    head = ["#", "tool → operation", "kind", "arguments", "validation", "backend", "error type", "result", "first try"]
    return table(head, rows, cls="calls")


def _arguments(value: object) -> str:
    if isinstance(value, str):
        try:
            return json.dumps(json.loads(value), ensure_ascii=False, indent=1)
        except json.JSONDecodeError:
            return value
    return json.dumps(value, ensure_ascii=False, default=str)


ENDINGS: dict[str, str] = {
    EpisodeOutcome.HARNESS_ERROR: "Harness error",
    EpisodeOutcome.CONTEXT_OVERFLOW: "Context overflow",
    EpisodeOutcome.DOES_NOT_FIT: "Does not fit (never sent)",
}
"""How an episode page names the error that ended an episode, by its ``outcome``."""


def _ending(row: dict[str, object], summary: dict[str, object]) -> str:
    out = "<h2>End</h2>"
    final = row.get("final_text")
    out += "<p>Final answer:</p>" + pre(final) if not missing(final) else "<p>No final text answer.</p>"
    if not missing(row.get("error")):
        out += f"<p>{ENDINGS.get(str(row.get('outcome')), 'Error')}:</p>" + pre(row.get("error"))
        trace = row.get("traceback") or summary.get("traceback")
        if not missing(trace):
            out += details("traceback", pre(trace))
    return out
