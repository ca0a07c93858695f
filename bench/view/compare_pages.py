"""Pages across cells: one task on every surface x model side by side, and the tasks that expect an operation.

The task page puts the task's episodes (one per cell of the loaded runs, the same repeat) in columns and their
steps in rows, so step 2 of ``full`` sits next to step 2 of ``dispatcher``; each column marks its first divergence
from the expected calls (:func:`surfbench.bench.view.episode_page.first_divergence`).
"""

from __future__ import annotations

from collections.abc import Sequence

from surfbench.bench.report.viewer_links import cell_path, episode_path, page_name, task_path
from surfbench.bench.store.tables import as_int
from surfbench.bench.view.episode_page import Divergence, first_divergence
from surfbench.bench.view.html import badge, esc, link, number, page, pre, table
from surfbench.bench.view.index import ViewCell, ViewIndex, expected_ops, listed, missing, outcome


def task_columns(index: ViewIndex, positions: Sequence[int], repeat: int | None) -> list[tuple[ViewCell, int]]:
    """One episode per cell (the cells' order): of repeat ``repeat``, or each cell's lowest repeat."""
    out = []
    by_cell: dict[str, list[int]] = {}
    for i in positions:
        by_cell.setdefault(index.cell_at[i], []).append(i)
    for cell in index.cells:
        mine = by_cell.get(cell.id, [])
        if repeat is not None:
            mine = [i for i in mine if int(index.frame.at[i, "repeat"]) == repeat]
        if mine:
            out.append((cell, min(mine, key=lambda i: int(index.frame.at[i, "repeat"]))))
    return out


def task_page(index: ViewIndex, positions: Sequence[int], repeat: int | None = None, static: bool = False) -> str:
    """The task on every cell: a column per cell, a row per step, the first divergence of each column marked."""
    with index.lock:
        columns = task_columns(index, positions, repeat)
        first = index.row(columns[0][1]) if columns else index.row(positions[0])
        request = index.request_text(columns[0][1] if columns else positions[0])
        calls = {i: index.episode_calls(str(index.frame.at[i, "episode_key"])) for _, i in columns}
        steps = {i: index.episode_steps(str(index.frame.at[i, "episode_key"])) for _, i in columns}
    expected = expected_ops(first)
    body = f"<h1>{esc(first['task_id'])}</h1><p class='sub'>suite {esc(first['suite'])} · {len(columns)} cells"
    repeats = sorted({int(index.frame.at[i, "repeat"]) for i in positions})
    if len(repeats) > 1:
        body += f" · repeat {esc(repeat if repeat is not None else 'lowest')} of {esc(repeats)}"
        if not static:
            body += " (" + ", ".join(link(f"?repeat={r}", r) for r in repeats) + ")"
    body += "</p><h2>Request</h2>" + pre(request or "(not recorded)")
    wanted = ", ".join(" or ".join(alts) for alts in expected) or "none (judged on state or answer)"
    body += f"<p>Expected calls: <b>{esc(wanted)}</b></p>"
    diverged = {i: first_divergence(expected, calls[i]) for _, i in columns}
    head = ["step"] + [_column_head(index, cell, i) for cell, i in columns]
    rows = [["first divergence"] + [_divergence(diverged[i]) for _, i in columns]]
    depth = max((len(steps[i]) for _, i in columns), default=0)
    for n in range(depth):
        rows.append([f"step {n}"] + [_at_step(n, steps[i], calls[i], diverged[i]) for _, i in columns])
    rows.append(["end"] + [_end(index.row(i), diverged[i]) for _, i in columns])
    body += table(head, rows, cls="across", table_id="across")
    return page(f"task {first['task_id']}", body, 2, static)


def _column_head(index: ViewIndex, cell: ViewCell, position: int) -> str:
    row = index.row(position)
    result = outcome(row)
    name = link("../../" + cell_path(cell.keys), f"{row['surface']} / {row['model']}")
    episode = link("../../" + episode_path(str(row["episode_key"])), "episode")
    return (
        f'<div class="col" data-task="{esc(row["task_id"])}">{name}<br>{badge(result, result)} {episode}'
        f" · {number(row.get('round_trips'))} steps</div>"
    )


def _divergence(found: Divergence | None) -> str:
    if found is None:
        return '<span class="same">followed the expected calls</span>'
    where = f"step {found.step}: " if found.step is not None else ""
    return f'<span class="diverged">{esc(where + found.text)}</span>'


def _at_step(n: int, steps: list[dict[str, object]], calls: list[dict[str, object]], found: Divergence | None) -> str:
    mine = [c for c in calls if as_int(c["step"]) == n]
    parts = []
    for c in mine:
        op = c.get("operation")
        text = str(c.get("tool")) + (f" → {op}" if not missing(op) and str(op) != str(c.get("tool")) else "")
        status = _status(c)
        marked = found is not None and found.step == n and found.index == as_int(c["index"])
        cls = "call diverged" if marked else "call"
        parts.append(f'<div class="{cls}">{esc(text)} <span class="why">{esc(status)}</span></div>')
    if not mine:
        record = next((s for s in steps if as_int(s["step"]) == n), None)
        if record is not None:
            text = str(record.get("text") or "").strip()
            parts.append(f'<div class="answer">{esc(text[:200]) or "(no text)"}</div>' if text else "(no call)")
    return "".join(parts)


def _status(call: dict[str, object]) -> str:
    if not missing(call.get("error_type")):
        return str(call.get("error_type"))
    if call.get("kind") == "meta":
        return str(call.get("meta") or "meta")
    if not missing(call.get("backend_ok")):
        return "ok" if call.get("backend_ok") else "failed"
    return str(call.get("kind"))


def _end(row: dict[str, object], found: Divergence | None) -> str:
    out = ""
    if found is not None and found.step is None:
        out += f'<div class="diverged">{esc(found.text)}</div>'
    final = row.get("final_text")
    if not missing(final):
        out += f'<div class="answer">{esc(str(final)[:200])}</div>'
    lines = listed(row.get("failures"))
    if lines:
        out += f'<div class="why">{esc(lines[-1])}</div>'
    return out


def op_page(index: ViewIndex, suite: str, op: str, static: bool = False) -> str:
    """The tasks that expect operation ``op`` (rows) and each cell's first try at it (columns)."""
    tries = index.first_tries_by_op.get((suite, op), [])
    cells = [c for c in index.cells if str(c.keys["suite"]) == suite]
    where = {i: c.id for c in cells for i in c.positions}
    grid: dict[str, dict[str, list[tuple[int, dict[str, object]]]]] = {}
    for i, t in tries:
        task = str(index.frame.at[i, "task_id"])
        grid.setdefault(task, {}).setdefault(where.get(i, ""), []).append((i, t))
    used = [c for c in cells if any(c.id in by_cell for by_cell in grid.values())]
    head = ["task"] + [esc(f"{c.keys['surface']} / {c.keys['model']}") for c in used]
    rows = []
    for task in sorted(grid):
        row = [link("../../" + task_path(suite, task), task)]
        for c in used:
            entries = grid[task].get(c.id, [])
            row.append(" ".join(_first_try(index, i, t) for i, t in entries))
        rows.append(row)
    right = sum(1 for _, t in tries if t.get("correct"))
    body = f"<h1>{esc(op)}</h1><p class='sub'>suite {esc(suite)} · {len(grid)} task(s) expect it · first tries "
    body += f"right {right} of {len(tries)}</p>" + table(head, rows, sortable=True, table_id="op")
    return page(f"operation {op}", body, 2, static)


def _first_try(index: ViewIndex, position: int, t: dict[str, object]) -> str:
    key = str(index.frame.at[position, "episode_key"])
    text = "right" if t.get("correct") else str(t.get("error_type") or "wrong")
    return link("../../" + episode_path(key), text, "pass" if t.get("correct") else "fail")


def op_names(index: ViewIndex) -> dict[tuple[str, str], tuple[str, str]]:
    """(suite page name, operation page name) -> (suite, operation), for every operation an episode expected."""
    return {(page_name(s), page_name(o)): (s, o) for s, o in index.first_tries_by_op}
