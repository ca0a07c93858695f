"""inspect-ai running surfbench's `notes_mcp` task against the stub OpenAI endpoint of bench_concurrency.py.

Run under a Python that has inspect-ai and openai (``.venv-peer``):

    python scripts/peer/inspect_stub.py N API_BASE OUT.json

The same 8 MCP tools (tasks/notes_mcp/catalog.json, canned results) and the same 7 tasks repeated to N
samples; the model is ``openai/gpt-4o-mini`` at API_BASE (the stub answers with the task's reference
call, then its answer words), ``max_connections=32``; `includes()` scores the answer. Writes the wall
time of ``eval()`` (imports and set-up excluded) and samples per second.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import yaml
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools

sys.path.insert(0, str(Path(__file__).resolve().parent))
from inspect_notes import SUITE, make_tool  # noqa: E402


def main() -> int:
    n, api_base, out = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    tools_json = json.loads((SUITE / "catalog.json").read_text())["result"]["tools"]
    tasks = yaml.safe_load((SUITE / "tasks.yaml").read_text())
    canned: dict = {}
    for t in tasks:
        canned.update(t.get("canned", {}))
    tools = [make_tool(s, canned).as_tool() for s in tools_json]
    dataset = [
        Sample(
            input=tasks[i % len(tasks)]["turns"][0],  # the stub finds the task by its exact text
            target=" ".join(map(str, tasks[i % len(tasks)].get("answer", {}).get("contains", []))) or "Done",
        )
        for i in range(n)
    ]
    task = Task(dataset=dataset, solver=[use_tools(tools), generate()], scorer=includes())
    model = get_model("openai/gpt-4o-mini", base_url=api_base)
    with tempfile.TemporaryDirectory() as logs:
        start = time.perf_counter()
        logs_out = eval(task, model=model, display="none", log_dir=logs, log_level="error", max_connections=32)
        wall = time.perf_counter() - start
    log = logs_out[0]
    if log.status != "success":
        print(str(log.error)[:2000], file=sys.stderr)
    scores = log.results.scores[0].metrics["accuracy"].value if log.results else None
    out.write_text(
        json.dumps({"samples": n, "wall_s": wall, "per_s": n / wall, "status": log.status, "accuracy": scores})
    )
    print(f"inspect-ai: {n} samples in {wall:.2f} s = {n / wall:.1f}/s, status {log.status}, accuracy {scores}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
