"""What an episode leaves behind: one record per model call (step) and per tool call.

The episode loop fills these; the scorer reads them; the results store writes them as table rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CallRecord:
    """One tool call the model made, and where it went."""

    step: int
    """Index of the model call (0-based) that made this tool call."""
    index: int
    """Position of the call within its step."""
    tool: str
    """The surface tool the model called."""
    arguments: Any
    """Arguments as the model sent them (for a dispatcher: the operation's args)."""
    kind: str
    """``operation`` (reached the backend), ``meta`` (help/load/search), ``rejected`` or ``parse_error``."""
    operation: str | None = None
    """Canonical operation named by the call, after routing."""
    meta: str | None = None
    """``help``, ``load`` or ``search`` for meta calls."""
    error_type: str | None = None
    """Why the surface rejected it (bench.taxonomy: a core type, or one its suite or surface declares)."""
    schema_valid: bool | None = None
    """Whether the arguments pass the operation's own schema (for calls naming an operation)."""
    backend_ok: bool | None = None
    """For calls that reached the backend: did the operation succeed."""
    result: str = ""
    """What went back to the model (truncated)."""


@dataclass(frozen=True)
class StepRecord:
    """One model call."""

    step: int
    request_bytes: int
    """UTF-8 length of the JSON request body."""
    request_bytes_source: str
    prompt_tokens: int | None
    """As reported by the provider."""
    prompt_tokens_est: int
    """tiktoken o200k_base estimate on the rendered request."""
    cached_prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    tools_shown: int
    tool_block_bytes: int
    """Tool-block wire bytes this step (dsh method)."""
    prefix_hash: str
    """Hash of system text + tool block (equal across steps = stable prefix)."""
    tool_calls: int
    overhead: bool
    """All of this step's tool calls were meta calls (no canonical operation named)."""
    parse_format: str | None
    parse_failures: int
    cache_hit: bool
    finish_reason: str | None
    cost_usd: float
    text: str = ""


@dataclass
class EpisodeTrace:
    """The raw material of one episode."""

    steps: list[StepRecord] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    final_text: str | None = None
    """The last text-only answer, or None when the episode ended without one."""
    error: str | None = None
    """A harness error that ended the episode."""
    traceback: str | None = None
    stopped: str | None = None
    """Why the loop ended the episode early, as an error type (``stuck_repeat``; see bench.stuck), or None."""
    state: dict[str, Any] = field(default_factory=dict)
    """Backend state at the end."""
    turn_states: list[Any] = field(default_factory=list)
    """Backend state after each user turn was answered (only for tasks with per-turn state checks)."""
    wall_s: float = 0.0
