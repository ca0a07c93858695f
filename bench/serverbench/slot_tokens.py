"""The exact token ids of a local-model run's recorded requests, rebuilt offline, for the slot check.

A step of a run on llama-server keeps the server's ``timings.cache_n`` / ``timings.prompt_n``
(:mod:`surfbench.bench.serverbench.slot_check`); this module rebuilds what the server tokenized, so that
:func:`~surfbench.bench.serverbench.slot_check.compare_tokens` can replay the slot token by token:

- the request: the episode's transcript up to the step's answer (the messages the loop sent), the step's tool
  block from the run's tools table (``tool_hashes``), rendered as the client rendered them for the calling mode
  (:func:`surfbench.bench.models.prompting.prompted_messages`; ``prompted`` mode only: what llama-server does with
  native tools and tool calls is its own code, not reproduced here);
- then as llama-server renders them: the GGUF's own chat template (``tokenizer.chat_template``; surfbench passes
  no ``--chat-template``) with jinja2, generation prompt added, tokenized with the GGUF's vocabulary (llama.cpp's
  tokenizer through ``llama_cpp``, vocabulary only, no weights) with special tokens parsed and a BOS only where
  the GGUF asks for one (``tokenizer.ggml.add_bos_token``; Qwen2.5 does not);
- what was generated: the step's recorded text tokenized, followed by the end-of-generation token when the step
  stopped (``finish_reason`` ``stop``: sampled, never decoded). That re-tokenizes the text, where the server
  kept the tokens it sampled; a model may sample a split the tokenizer would not make, and a text is recorded up
  to 2,000 characters: the ids' count against the step's ``completion_tokens`` says whether they can be trusted.

Checked on ``tests/fixtures/runs/llama-server-forge-core``: every prompt's ids are as many as ``cache_n +
prompt_n``, every completion's as its ``completion_tokens``, and the slot model equals ``cache_n`` on all 11
requests (tests/bench/test_slot_check_recorded.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.base.values import missing as _missing
from surfbench.bench.contracts.surface import ToolSpec
from surfbench.bench.models.local import ModelUnavailable, embedded, require
from surfbench.bench.models.prompting import prompted_messages
from surfbench.bench.promptcache.prompt_cache_requests import Transcripts, run_folders, transcript_messages
from surfbench.bench.serverbench.slot_check import SlotComparison, compare_tokens
from surfbench.bench.store.tool_texts import block_texts

if TYPE_CHECKING:
    from surfbench.bench.store.reader import RecordedCell, Runs


class GGUFChat:
    """A GGUF model's chat template and vocabulary: a request's messages as the token ids llama-server computes."""

    def __init__(self, path: Path) -> None:
        """Read the vocabulary and the chat template of the GGUF at ``path`` (not its weights).

        Raises :class:`~surfbench.bench.models.local.ModelUnavailable` when llama-cpp-python is not installed or
        the file is missing, and ValueError when the GGUF has no chat template.
        """
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ModelUnavailable(
                "llama-cpp-python is not installed: `make setup` builds it (the `local` extra); it reads the GGUF's "
                "vocabulary to rebuild the token ids"
            ) from None
        if not Path(path).is_file():
            raise ModelUnavailable(f"no GGUF at {path}: pull the model (`surfbench models pull NAME`)")
        self.path = Path(path)
        self.vocab = Llama(model_path=str(path), vocab_only=True, verbose=False)
        template = self.vocab.metadata.get("tokenizer.chat_template")
        if not template:
            raise ValueError(f"{path}: the GGUF has no tokenizer.chat_template")
        self.template = str(template)
        self._compiled: Any = None

    def _special(self, token: int) -> str:
        return self.vocab.detokenize([token], special=True).decode("utf-8", "replace") if token >= 0 else ""

    def render(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The prompt text: the chat template over ``messages``, with the assistant's generation prompt."""
        if self._compiled is None:
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            self._compiled = env.from_string(self.template)
        return str(
            self._compiled.render(
                messages=[dict(m) for m in messages],
                add_generation_prompt=True,
                bos_token=self._special(self.vocab.token_bos()),
                eos_token=self._special(self.vocab.token_eos()),
            )
        )

    def tokenize(self, text: str, special: bool = True) -> list[int]:
        """``text``'s token ids: special tokens parsed when ``special``; a BOS only if the GGUF adds one."""
        return list(self.vocab.tokenize(text.encode("utf-8"), add_bos=special, special=special))

    def prompt_ids(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """The token ids of the prompt llama-server builds from chat ``messages``."""
        return self.tokenize(self.render(messages))

    def completion_ids(self, text: str, stopped: bool) -> list[int]:
        """The ids generated for an answer ``text``: its tokens, then end-of-generation when ``stopped``.

        The text as plain text (a special token's spelling in it stays text, as the model wrote it).
        """
        ids = self.tokenize(text, special=False) if text else []
        return [*ids, self.vocab.token_eos()] if stopped else ids


def model_gguf(cell: RecordedCell) -> Path:
    """The pulled GGUF of a recorded cell's embedded model, checked against the weights the run used.

    Raises :class:`~surfbench.bench.models.local.ModelUnavailable` when the model is not pulled, and ValueError
    when the cell ran no embedded model or other weights than the ones surfbench pulls under its name.
    """
    model = cell.identity.get("model")
    found = model.get("embedded") if isinstance(model, Mapping) else None
    if not isinstance(found, Mapping) or not found.get("name"):
        raise ValueError(f"cell {cell.cell_id} ({cell.model}) ran no embedded local model")
    name = str(found["name"])
    if found.get("sha256") and found["sha256"] != embedded(name).sha256:
        raise ValueError(f"cell {cell.cell_id} ran other weights of {name} than surfbench pulls (sha256 differs)")
    return require(name)


def request_messages(
    messages: Sequence[Mapping[str, Any]], step: int, tools: Sequence[ToolSpec], mode: str, fmt: str
) -> list[dict[str, Any]]:
    """The chat messages step ``step`` of an episode sent, from its transcript ``messages``.

    Its request is every message before the step's own answer (the last step of an episode cut short: all of them),
    rendered for ``prompted`` mode with the step's ``tools`` in format ``fmt``. ValueError for another mode, or
    when the transcript holds fewer answers than the step needs.
    """
    if mode != "prompted":
        raise ValueError(f"calling mode {mode!r}: only prompted requests are rebuilt (native tools are the server's)")
    answers = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if step < len(answers):
        history = messages[: answers[step]]
    elif step == len(answers):
        history = messages
    else:
        raise ValueError(f"step {step}: the transcript holds {len(answers)} answers")
    return prompted_messages([dict(m) for m in history], tools, fmt)


def _tools(hashes: Any, texts: Mapping[str, str], where: str) -> list[ToolSpec]:
    block = block_texts(hashes, texts)
    if block is None:
        raise ValueError(f"{where}: the step's tool block was not recorded (records v6 and later keep it)")
    specs = [json.loads(t) for t in block]
    return [ToolSpec(str(s["name"]), str(s.get("description") or ""), dict(s.get("parameters") or {})) for s in specs]


def token_records(view: Runs, chat: GGUFChat, cell_id: str | None = None) -> list[dict[str, Any]]:
    """One cell's requests as :func:`~surfbench.bench.serverbench.slot_check.compare_tokens` records, in the order sent.

    Each: ``where`` (episode and step), ``prompt_ids``, ``generated_ids``, ``completion_tokens`` (as recorded),
    ``id_slot`` (when recorded) and the server's ``timings``. A step answered from the response cache never reached
    the server and is left out. ``cell_id``: default, the view's only cell.
    ValueError when the cell is not one prompted cell whose steps record ``sent_at``, tool blocks and transcripts.
    """
    episodes = view.episodes
    ids = sorted({str(c) for c in episodes["cell_id"]}) if len(episodes) else []
    if cell_id is None:
        if len(ids) != 1:
            raise ValueError(f"the runs hold {len(ids)} cells: name one ({', '.join(ids)})")
        cell_id = ids[0]
    cell = view.cell(cell_id)
    if cell is None:
        raise ValueError(f"no recorded cell {cell_id}")
    model = cell.identity.get("model")
    model = model if isinstance(model, Mapping) else {}
    mode, fmt = str(model.get("mode") or cell.mode), str(model.get("prompt_format") or "")
    mine = episodes[episodes["cell_id"] == cell_id]
    steps = view.steps[view.steps["episode_key"].isin(set(mine["episode_key"]))]
    transcripts = Transcripts(run_folders(view))
    runs = dict(zip(mine["episode_key"], mine["run"], strict=True))
    messages: dict[str, list[dict[str, Any]]] = {}
    out: list[tuple[float, int, dict[str, Any]]] = []
    for n, row in enumerate(steps.to_dict("records")):
        key, step = str(row["episode_key"]), int(row["step"])
        where = f"{key} step {step}"
        if not _missing(row.get("cache_hit")) and bool(row["cache_hit"]):  # from the response cache: not sent
            continue
        if _missing(row.get("sent_at")):
            raise ValueError(f"{where}: no sent_at (records v4 and later keep when each request was sent)")
        if key not in messages:
            found = transcript_messages(transcripts.get(str(runs[key]), key))
            if found is None:
                raise ValueError(f"{key}: no transcript")
            messages[key] = found
        sent = request_messages(messages[key], step, _tools(row.get("tool_hashes"), view.tool_texts, where), mode, fmt)
        record: dict[str, Any] = {
            "where": where,
            "prompt_ids": chat.prompt_ids(sent),
            "generated_ids": chat.completion_ids(str(row.get("text") or ""), row.get("finish_reason") == "stop"),
            "completion_tokens": None if _missing(row.get("completion_tokens")) else int(row["completion_tokens"]),
            "timings": {
                "cache_n": None if _missing(row.get("server_cache_n")) else int(row["server_cache_n"]),
                "prompt_n": None if _missing(row.get("server_prompt_n")) else int(row["server_prompt_n"]),
            },
        }
        if not _missing(row.get("slot")):
            record["id_slot"] = int(row["slot"])
        out.append((float(row["sent_at"]), n, record))
    return [record for _, _, record in sorted(out, key=lambda t: (t[0], t[1]))]


def compare_run(view: Runs, chat: GGUFChat, cell_id: str | None = None) -> SlotComparison:
    """The single-slot model on a recorded cell's exact token ids against the server's ``cache_n`` per request."""
    return compare_tokens(token_records(view, chat, cell_id))
