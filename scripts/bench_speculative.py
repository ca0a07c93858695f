"""Benchmark: speculative decoding on llama-server, measured once to rule it in or out on this machine (issue 51).

llama.cpp's server can draft tokens and verify them in one batch: from n-grams of the context already seen
(``--spec-type ngram-simple``, ``ngram-mod``) or from a smaller draft model (``draft-simple`` with
``--model-draft``). On a GPU verifying a batch costs about what one token costs, so accepted drafts are nearly
free. On a CPU with 2 cores decoding is compute-bound, so verifying a draft costs about as much as generating
it: whether anything is gained is a measurement, this one.

For each setting a fresh llama-server (the model config's own threads, context and engine settings, plus the
speculative flags) answers three chat requests, at temperature 0 with ``max_tokens`` 384 and no
``ignore_eos`` (each answer ends where the model ends it, as in an episode):

- ``calls``: a request whose answer repeats one call shape over many repositories (the repetitive multi-call
  answers that fill the 0.5B model's steps in the forge runs);
- ``prose``: a paragraph of prose (nothing to copy from the context);
- ``ten``: ten calls of one operation, one per line (the shortest repetitive answer).

Each request is sent ``--rounds`` times (settings alternate per round); the rows give the median generation
rate (the server's ``timings.predicted_per_second``), its ratio to ``off`` and the drafted / accepted token
counts (``timings.draft_n``, ``draft_n_accepted``). Temperature 0 with verification gives the same text as
``off``: a row whose text differs is marked. Writes results/bench/speculative.json after every setting and
prints the rows for docs/benchmarks.md. Run it alone on the machine.

    python scripts/bench_speculative.py [--model NAME] [--settings off ngram-simple ngram-mod draft]
        [--draft-model qwen2.5-coder-0.5b-instruct] [--rounds 2]

A setting is ``off`` or a ``--spec-type`` value of the shipped build; ``draft`` is ``draft-simple`` with the
``--draft-model`` weights (pulled like any embedded model).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
MODEL = "qwen2.5-coder-0.5b-instruct"
DRAFT = "qwen2.5-coder-0.5b-instruct"
OUT = ROOT / "results" / "bench" / "speculative.json"
SETTINGS = {"off": None, "ngram-simple": "ngram-simple", "ngram-mod": "ngram-mod", "draft": "draft-simple"}
"""Setting name -> ``--spec-type`` (None: no speculative decoding)."""
MAX_TOKENS = 384
"""The shipped configs' ``max_tokens``."""

_CALL = '{"name": "repo_commit_list", "arguments": {"owner": "acme", "repo": "web", "limit": 5}}'
REQUESTS: dict[str, list[dict[str, str]]] = {
    "calls": [
        {"role": "system", "content": (
            "You call tools by writing one JSON object per line: {\"name\": ..., \"arguments\": {...}}. "
            "Tool repo_commit_list(owner: string, repo: string, limit: integer, branch: string): lists the "
            "newest commits of a repository branch. Answer with the calls only.")},
        {"role": "user", "content": (
            "List the 5 newest commits on the main branch and then on the develop branch of each of these "
            "repositories: acme/web, acme/api, acme/cli, acme/docs, acme/infra, acme/mobile. Example of one call: "
            + _CALL)},
    ],
    "prose": [
        {"role": "user", "content": (
            "Explain in one paragraph of plain prose, without code, what a git rebase does, how it differs from a "
            "merge, and when a team should avoid it.")},
    ],
    "ten": [
        {"role": "system", "content": (
            "You call tools by writing one JSON object per line: {\"name\": ..., \"arguments\": {...}}. "
            "Tool get_weather(city: string, unit: celsius|fahrenheit). Answer with the calls only.")},
        {"role": "user", "content": (
            "Get the weather in celsius for Paris, Berlin, Madrid, Rome, Vienna, Prague, Warsaw, Lisbon, Dublin "
            "and Oslo: ten calls.")},
    ],
}  # fmt: skip


def server_for(model: str, setting: str, draft: str) -> Any:
    """A LocalServer with the model config's settings and the setting's speculative flags on the command line."""
    from surfbench.bench.models import model_config
    from surfbench.bench.models.local import require
    from surfbench.bench.models.server import LocalServer, ServerSettings

    cfg = model_config(model)
    if cfg.server != "llama-server" or not cfg.embedded:
        raise SystemExit(f"bench_speculative: {model} is not an embedded model on llama-server")
    settings = ServerSettings(
        require(cfg.embedded), cfg.name, cfg.n_ctx, cfg.threads, cfg.chat_format, engine=cfg.server,
        omp_spincount=cfg.omp_spincount, flash_attn=cfg.flash_attn,
    )  # fmt: skip
    extra: list[str] = []
    spec = SETTINGS[setting]
    if spec is not None:
        extra = ["--spec-type", spec]
    if setting == "draft":
        extra += ["--model-draft", str(require(draft)), "--threads-draft", str(cfg.threads)]

    class SpeculativeServer(LocalServer):
        # kept here, not as a ServerSettings field: the shipped configs never draft (this script is why)
        def command(self) -> list[str]:
            return super().command() + extra

    return SpeculativeServer(settings), cfg


def measure(model: str, setting: str, draft: str) -> list[dict[str, Any]]:
    from bench_server import post  # type: ignore[import-not-found]  # the same request helper

    server, cfg = server_for(model, setting, draft)
    rows = []
    with server:
        for name, messages in REQUESTS.items():
            payload = {"model": cfg.name, "messages": messages, "temperature": 0.0, "max_tokens": MAX_TOKENS,
                       "repeat_penalty": cfg.repeat_penalty if cfg.repeat_penalty is not None else 1.0}  # fmt: skip
            answer = post(f"{server.api_base}/chat/completions", payload)
            t = answer["timings"]
            row = {
                "setting": setting, "request": name, "predicted_n": t["predicted_n"],
                "predicted_per_s": round(float(t["predicted_per_second"]), 1),
                "predicted_ms": round(float(t["predicted_ms"])),
                "draft_n": t.get("draft_n"), "draft_n_accepted": t.get("draft_n_accepted"),
                "text": answer["choices"][0]["message"].get("content") or "",
            }  # fmt: skip
            print(f"  {setting} {name}: {row['predicted_n']} tokens at {row['predicted_per_s']}/s"
                  f" (drafted {row['draft_n']}, accepted {row['draft_n_accepted']})", flush=True)  # fmt: skip
            rows.append(row)
    return rows


def table(record: dict[str, Any]) -> list[str]:
    """Per request and setting: median generation rate, ratio to off, drafted / accepted, text as off's or not."""
    lines = ["| model | request | setting | tokens | generation tok/s | vs off | drafted / accepted | text as off |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    rows = record["rows"]
    for name in REQUESTS:
        off = [r for r in rows if r["request"] == name and r["setting"] == "off"]
        off_rate = statistics.median(r["predicted_per_s"] for r in off) if off else None
        for setting in record["settings"]:
            mine = [r for r in rows if r["request"] == name and r["setting"] == setting]
            if not mine:
                continue
            rate = round(statistics.median(r["predicted_per_s"] for r in mine), 1)
            ratio = f"{rate / off_rate:.2f}x" if off_rate and setting != "off" else "-"
            drafted = [r["draft_n"] for r in mine if r["draft_n"] is not None]
            accepted = [r["draft_n_accepted"] for r in mine if r["draft_n_accepted"] is not None]
            spec = f"{sum(drafted)} / {sum(accepted)}" if drafted and setting != "off" else "-"
            same = (
                "-"
                if setting == "off" or not off
                else ("yes" if all(r["text"] == off[0]["text"] for r in mine) else "no")
            )
            lines.append(f"| {record['model']} | {name} | {setting} | {mine[0]['predicted_n']} | {rate} | {ratio} "
                         f"| {spec} | {same} |")  # fmt: skip
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--settings", nargs="+", default=None, help=f"of {', '.join(SETTINGS)}")
    parser.add_argument("--draft-model", default=DRAFT, help="the draft model of the `draft` setting")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    settings = args.settings or [s for s in SETTINGS if s != "draft" or args.model != args.draft_model]
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown:
        parser.error(f"--settings: unknown {', '.join(unknown)} (known: {', '.join(SETTINGS)})")
    if "draft" in settings and args.model == args.draft_model:
        parser.error("--settings draft: the draft model is the model itself; give --draft-model a smaller one")
    if settings[0] != "off":
        settings = ["off", *[s for s in settings if s != "off"]]  # every ratio is to off, measured in the same run
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")

    from bench_batching import write_atomic  # type: ignore[import-not-found]

    from surfbench.bench.models.server import ServerError, upstream_binary

    try:
        upstream_binary()
    except ServerError as exc:
        raise SystemExit(f"bench_speculative: {exc}") from None
    command = "python scripts/bench_speculative.py" + "".join(f" {a}" for a in sys.argv[1:])
    record: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "command": command, "model": args.model,
        "draft_model": args.draft_model if "draft" in settings else None, "max_tokens": MAX_TOKENS,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_1min_before": round(os.getloadavg()[0], 1), "settings": settings, "rows": [], "complete": False,
    }  # fmt: skip
    for r in range(args.rounds):
        for setting in settings:
            print(f"round {r + 1}/{args.rounds}: {setting}", flush=True)
            record["rows"] += measure(args.model, setting, args.draft_model)
            write_atomic(args.out, record)
    record["complete"] = True
    record["load_1min_after"] = round(os.getloadavg()[0], 1)
    write_atomic(args.out, record)
    print("\n".join(table(record)))
    print(f"({record['date']}, load {record['load_1min_before']} before, {record['load_1min_after']} after; "
          f"{args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
