"""inspect-ai running the task surfbench's `notes_mcp` suite runs, on inspect's mock model.

Run under a Python that has inspect-ai (``scripts/bench_harness.py`` makes one in ``.venv-peer``):

    python scripts/peer/inspect_notes.py N OUT.json

The same 8 MCP tools (from tasks/notes_mcp/catalog.json, canned results), the same 7 tasks repeated
to N samples; the mock model calls the task's expected tool with its arguments, then answers in
text, as surfbench's scripted oracle does; `includes()` scores the answer. Writes the wall time of
``eval()`` (imports and set-up excluded) and samples per second.
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
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import ToolDef, ToolParam, ToolParams

SUITE = Path(__file__).resolve().parents[2] / "tasks" / "notes_mcp"


def make_tool(spec: dict, canned: dict) -> ToolDef:
    schema = spec["inputSchema"]
    params = ToolParams(
        properties={  # inspect insists on a description for every parameter
            k: ToolParam(**{"description": k, **v}) for k, v in schema.get("properties", {}).items()
        },
        required=schema.get("required", []),
    )

    async def run(**kwargs: object) -> str:
        return json.dumps(canned.get(spec["name"], {"ok": True}))

    return ToolDef(run, name=spec["name"], description=spec["description"], parameters=params)


def main() -> int:
    n, out = int(sys.argv[1]), Path(sys.argv[2])
    tools_json = json.loads((SUITE / "catalog.json").read_text())["result"]["tools"]
    tasks = yaml.safe_load((SUITE / "tasks.yaml").read_text())
    canned: dict = {}
    for t in tasks:
        canned.update(t.get("canned", {}))
    tools = [make_tool(s, canned).as_tool() for s in tools_json]
    by_input = {t["turns"][0]: t for t in tasks}

    def first_value(v: object) -> object:
        if isinstance(v, list):
            return next((x for x in v if x != ""), "")
        if isinstance(v, dict):
            return next(iter(v.get("$set", [v])), v) if "$set" not in v else v["$set"]
        return v

    def respond(messages, tools_info, tool_choice, config) -> ModelOutput:  # noqa: ANN001
        user = next(m.text for m in messages if m.role == "user")
        task = by_input[user.split(" #")[0]]
        if messages[-1].role == "user" and task.get("expected"):
            call = task["expected"][0]
            args = {k: first_value(v) for k, v in call.get("args", {}).items() if first_value(v) != ""}
            args = {k: v for k, v in args.items() if not isinstance(v, dict)}
            return ModelOutput.for_tool_call("mockllm/model", call["op"], args)
        words = " ".join(map(str, task.get("answer", {}).get("contains", []))) or "done"
        return ModelOutput.from_content("mockllm/model", f"Done. {words}")

    dataset = [
        Sample(
            input=f"{tasks[i % len(tasks)]['turns'][0]} #{i}",
            target=" ".join(map(str, tasks[i % len(tasks)].get("answer", {}).get("contains", []))) or "Done",
        )
        for i in range(n)
    ]
    task = Task(dataset=dataset, solver=[use_tools(tools), generate()], scorer=includes())
    model = get_model("mockllm/model", custom_outputs=respond, memoize=False)
    with tempfile.TemporaryDirectory() as logs:
        start = time.perf_counter()
        logs_out = eval(task, model=model, display="none", log_dir=logs, log_level="error")
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
