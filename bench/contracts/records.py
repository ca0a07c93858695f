"""What an episode leaves behind: one record per model call (step) and per tool call.

The episode loop fills these; the scorer reads them; the results store writes them as table rows
(:mod:`surfbench.bench.store.tables`). Every field carries its one-line doc in ``field(metadata=doc(...))``,
so that the table schemas (:mod:`surfbench.bench.store.schema`) and their documentation come from one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from surfbench.bench.base.taxonomy import ErrorType

DOC = "doc"
"""The field-metadata key of a column's one-line description."""

RECORDS_VERSION = 8
"""Bumped when what a run records changes (run.json keeps it per cell, ``records_version``). 2: steps record the
operations shown, calls the operations a meta call returned (``hits``), episodes their expected operations, and the run
its catalogs and help sizes (bench.store.recorded), so that readers never reload a suite. Cells without it (version 1)
are read the old way, from today's suites (marked as the legacy path where it happens). 3: calls record the operation
policy's verdict (``policy``), episodes their partial and efficient credit (``call_share``, ``state_share``,
``min_round_trips``, ``efficiency``) and policy counts (``policy_denials``, ...; bench.score.credit); older parts read
them as null (``surfbench migrate`` rewrites them with the columns). 4: steps record when their request was sent
(``sent_at``) and its segments (``segments``: system text, tool block, each message, with a digest and a token count),
the sequence the cache model replays (bench.promptcache.prompt_cache_model); older steps have them null and the cache
model rebuilds them from the transcripts (bench.promptcache.prompt_cache_requests). 5: episodes record the calls that
reached the backend where the task wants a pass-through value and how many reached it (``instance_calls``,
``instance_right``; bench.suites.instances); older parts read them as null. 6: steps record their tool block as the
content hashes of its tools' wire texts in order (``tool_hashes``), and the run each distinct text once in its tools
table (bench.store.tool_texts); older steps have them null: their tool block's text was not recorded. 7: steps record
llama-server's own counts of the prompt tokens it took from its KV cache and those it computed (``server_cache_n``,
``server_prompt_n``) and the slot the request ran on (``slot``); null for other engines and in older steps. 8: episodes
record how they ended (``outcome``, :class:`EpisodeOutcome`); older parts have no such column and the reader types
theirs from the error text (bench.store.outcomes, the legacy path)."""

RETRIEVAL_METAS = frozenset({"search", "load"})
"""The meta calls (a call's ``meta``) whose ``hits`` are what the surface retrieved, whatever its kind: a search
(search's ``search_tools``, code mode's ``search_api``) or a load (lazy's ``load_tools``). A ``help`` call's hits (code
mode's ``describe``) are the operation the model asked about by name: not retrieval. The retrieval funnel
(bench.analysis.funnel) counts these, after the operations the episode's first step showed."""


class EpisodeOutcome(StrEnum):
    """How an episode ended: the episodes table's ``outcome``, typed when the episode is scored (bench.score.scorer).

    Whether it ran is a fact of the episode, kept apart from its error text (a message, for a reader) and from its
    error types (what went wrong, many per episode: bench.base.taxonomy). A ``StrEnum``: rows store the value.
    """

    RAN = "ran"
    """The model was asked and the episode ended its own way: a final answer, ``max_steps`` or a stop (its checks
    say how well it did)."""
    DOES_NOT_FIT = "does_not_fit"
    """Never sent: its first request was predicted over the model's context window (bench.run.fit); typed
    ``context_overflow`` among its error types, never a harness error."""
    CONTEXT_OVERFLOW = ErrorType.CONTEXT_OVERFLOW.value
    """Sent, and the conversation outgrew the model's context window on the way: an outcome of the surface."""
    HARNESS_ERROR = ErrorType.HARNESS_ERROR.value
    """The harness failed (an endpoint down past its retries, a backend bug): recorded with a traceback, not a
    measurement of the surface (``retry_errors`` runs it again)."""

    @property
    def error_type(self) -> ErrorType | None:
        """The error type the scorer gives an episode that ended this way (None: it ran)."""
        return {
            EpisodeOutcome.RAN: None,
            EpisodeOutcome.DOES_NOT_FIT: ErrorType.CONTEXT_OVERFLOW,
            EpisodeOutcome.CONTEXT_OVERFLOW: ErrorType.CONTEXT_OVERFLOW,
            EpisodeOutcome.HARNESS_ERROR: ErrorType.HARNESS_ERROR,
        }[self]


def doc(text: str) -> dict[str, str]:
    """Field metadata holding a column's one-line description: ``field(metadata=doc("..."))``."""
    return {DOC: text}


@dataclass(frozen=True)
class CallRecord:
    """One tool call the model made, and where it went."""

    step: int = field(metadata=doc("Index of the model call (0-based) that made this tool call."))
    index: int = field(metadata=doc("Position of the call within its step."))
    tool: str = field(metadata=doc("The surface tool the model called."))
    arguments: Any = field(metadata=doc("Arguments as the model sent them (for a dispatcher: the operation's args)."))
    kind: str = field(
        metadata=doc(
            "``operation`` (reached the backend), ``meta`` (help/load/search), ``rejected`` or ``parse_error``."
        )
    )
    operation: str | None = field(default=None, metadata=doc("Canonical operation named by the call, after routing."))
    meta: str | None = field(default=None, metadata=doc("``help``, ``load`` or ``search`` for meta calls."))
    error_type: str | None = field(
        default=None,
        metadata=doc(
            "Why the surface rejected it (bench.base.taxonomy: a core type, or one its suite or surface declares)."
        ),
    )
    schema_valid: bool | None = field(
        default=None, metadata=doc("Whether the arguments pass the operation's own schema (calls naming an operation).")
    )
    backend_ok: bool | None = field(
        default=None, metadata=doc("For calls that reached the backend: did the operation succeed.")
    )
    result: str = field(default="", metadata=doc("What went back to the model (truncated)."))
    hits: list[dict[str, Any]] | None = field(
        default=None,
        metadata=doc(
            "For a meta call that returned operations (search, load, search_api, describe): [{op, rank, score}], "
            "best first (rank from 1; score None where nothing ranked them); None otherwise or before records v2."
        ),
    )
    policy: str | None = field(
        default=None,
        metadata=doc(
            "The operation policy's verdict on a routed call: allow, deny, approved or refused (an ask the simulated "
            "user answered); None without a policy, for a call rejected before it, or before records v3."
        ),
    )


@dataclass(frozen=True)
class StepRecord:
    """One model call."""

    step: int = field(metadata=doc("Index of this model call in the episode (0-based)."))
    request_bytes: int = field(metadata=doc("UTF-8 length of the JSON request body."))
    request_bytes_source: str = field(
        metadata=doc("``wire`` (measured on the HTTP request) or ``estimated`` (compact JSON of the body).")
    )
    prompt_tokens: int | None = field(metadata=doc("Prompt tokens as reported by the provider."))
    prompt_tokens_est: int = field(metadata=doc("tiktoken o200k_base estimate on the rendered request."))
    cached_prompt_tokens: int | None = field(
        metadata=doc("Prompt tokens served from the provider's cache, where it reports them.")
    )
    completion_tokens: int | None = field(metadata=doc("Completion tokens as reported by the provider."))
    latency_s: float = field(
        metadata=doc("Wall time of the model call, seconds (the original call's for a cache hit).")
    )
    tools_shown: int = field(metadata=doc("Tools in the request's tool block this step."))
    tool_block_bytes: int = field(metadata=doc("Tool-block wire bytes this step (dsh method)."))
    prefix_hash: str = field(metadata=doc("Hash of system text + tool block (equal across steps = stable prefix)."))
    tool_calls: int = field(metadata=doc("Tool calls the model made in this step."))
    overhead: bool = field(
        metadata=doc("All of this step's tool calls were meta calls (no canonical operation named).")
    )
    parse_format: str | None = field(
        metadata=doc("Text format the lenient parser found calls in (None for native tool_calls or none).")
    )
    parse_failures: int = field(metadata=doc("Text that claimed a tool call but could not be parsed, this step."))
    cache_hit: bool = field(metadata=doc("Served from surfbench's on-disk response cache."))
    finish_reason: str | None = field(metadata=doc("The provider's finish reason."))
    cost_usd: float = field(metadata=doc("From LiteLLM's local price map; 0 for local models."))
    text: str = field(default="", metadata=doc("Assistant text of this step (at most 2,000 characters)."))
    shown_count: int | None = field(
        default=None,
        metadata=doc("Operations the model could call at this step, directly or by name; None before records v2."),
    )
    operations_shown: list[str] | None = field(
        default=None,
        metadata=doc(
            "Those operations in the surface's order (preselect: rank order); None when they are every operation "
            "of the catalog (the run's catalogs table lists them) or before records v2."
        ),
    )
    sent_at: float | None = field(
        default=None, metadata=doc("When the request was sent, Unix seconds; None before records v4.")
    )
    segments: list[list[Any]] | None = field(
        default=None,
        metadata=doc(
            "The request in order, one [part, digest, tokens] per segment: system, tools, then each message by role "
            "(tokens: o200k_base estimate; bench.promptcache.prompt_cache_model replays them); None before records v4."
        ),
    )
    tool_hashes: list[str] | None = field(
        default=None,
        metadata=doc(
            "The tool block in order: each tool's content hash of its wire text, whose text the run's tools table "
            "holds once (bench.store.tool_texts); [] for no tools; None before records v6."
        ),
    )
    server_cache_n: int | None = field(
        default=None,
        metadata=doc(
            "llama-server's timings.cache_n: prompt tokens the request took from its slot's KV cache (the original "
            "call's for a cache hit); None for other engines or before records v7."
        ),
    )
    server_prompt_n: int | None = field(
        default=None,
        metadata=doc("llama-server's timings.prompt_n: prompt tokens it computed; None likewise."),
    )
    slot: int | None = field(
        default=None,
        metadata=doc(
            "llama-server's slot the request ran on (pinned per episode with slots > 1: bench.models.server_slots); "
            "None when neither the request nor the response named one, or before records v7."
        ),
    )


@dataclass
class EpisodeTrace:
    """The raw material of one episode."""

    steps: list[StepRecord] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    final_text: str | None = None
    """The last text-only answer, or None when the episode ended without one."""
    error: str | None = None
    """Why the episode ended before its end (a harness error, a context overflow, does not fit), as a message."""
    outcome: EpisodeOutcome | None = None
    """How it ended, where the loop knows it ended otherwise than on its own (set beside ``error``:
    ``context_overflow``, ``harness_error``; ``does_not_fit`` by bench.run.fit). The scorer reads this, never the
    text of ``error``: None with an error is a harness error, None without one an episode that ran."""
    error_class: type[BaseException] | None = None
    """The class of the exception behind ``error`` (kept, not parsed back from the text: whether the endpoint
    failed the episode, so that it runs again, is ``issubclass`` of this; see bench.run.play)."""
    traceback: str | None = None
    stopped: ErrorType | None = None
    """Why the loop ended the episode early, as an error type (``stuck_repeat``; see bench.score.stuck), or None."""
    state: dict[str, Any] = field(default_factory=dict)
    """Backend state at the end."""
    turn_states: list[Any] = field(default_factory=list)
    """Backend state after each user turn was answered (only for tasks with per-turn state checks)."""
    tool_texts: dict[str, str] = field(default_factory=dict)
    """The wire text of each distinct tool the episode's requests showed, by its hash (``StepRecord.tool_hashes``)."""
    usage: dict[str, Any] = field(default_factory=dict)
    """What the episode's sandboxed programs used (code mode: ``memory_peak_bytes``, ``disk_peak_bytes``)."""
    wall_s: float = 0.0
