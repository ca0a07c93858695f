"""Provider limits: tools per request, the tool-name pattern, the context window; and names that fit them.

OpenAI's and Anthropic's APIs take at most 128 tools per request and tool names matching
``^[a-zA-Z0-9_-]{1,64}$``; a local model has its ``n_ctx``. A surface that breaks a limit fails for
every request, so the static report and ``surfbench run`` check it before anything is sent, and a cell
whose first request cannot fit the context window is predicted from the static token count and
recorded as ``does_not_fit`` instead of being run.

Importers map names that break the pattern to valid ones (:func:`safe_names`), reversibly: the map is
kept per catalog source (:func:`name_map_for`) and written into the run.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from surfbench.bench.catalog.wire import HasToolFields

NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
"""The tool-name pattern of OpenAI's and Anthropic's APIs."""
NAME_MAX = 64
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")
_NAME_MAPS: dict[str, dict[str, str]] = {}


@dataclass(frozen=True)
class ProviderLimits:
    """What a provider accepts in one request (None: no limit known)."""

    max_tools: int | None = None
    """Most tools in one request's tool block (OpenAI: 128)."""
    name_pattern: str | None = None
    """Regular expression every tool name must match."""
    context_window: int | None = None
    """Tokens of prompt plus completion the model holds."""

    def name_problem(self, name: str) -> str | None:
        """Why ``name`` breaks the name pattern, or None."""
        if self.name_pattern and not re.fullmatch(self.name_pattern, name):
            return f"tool name {name!r} does not match {self.name_pattern}"
        return None


HOSTED_LIMITS = ProviderLimits(max_tools=128, name_pattern=NAME_PATTERN)
"""What OpenAI's and Anthropic's APIs accept in one request (the static report checks every surface)."""
LIMIT_KEYS = frozenset({"max_tools", "name_pattern", "context_window"})


def limits_from(data: Mapping[str, object] | None, n_ctx: int | None, where: str) -> ProviderLimits:
    """The limits a model config's ``limits:`` block declares; the context window defaults to ``n_ctx``.

    Raises:
        ValueError: an unknown key or a value of the wrong kind, naming the config.
    """
    data = dict(data or {})
    unknown = sorted(set(data) - LIMIT_KEYS)
    if unknown:
        raise ValueError(f"{where}: limits: unknown key(s) {unknown}; allowed: {sorted(LIMIT_KEYS)}")
    counts: dict[str, int | None] = {}
    for key in ("max_tools", "context_window"):
        value = data.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"{where}: limits.{key}={value!r}: must be a whole number, 1 or more, or null")
        counts[key] = value
    pattern = data.get("name_pattern")
    if pattern is not None:
        try:
            re.compile(str(pattern))
        except re.error as exc:
            raise ValueError(f"{where}: limits.name_pattern={pattern!r}: not a regular expression ({exc})") from None
    return ProviderLimits(
        max_tools=counts["max_tools"],
        name_pattern=str(pattern) if pattern is not None else None,
        context_window=counts["context_window"] or n_ctx,
    )


def model_limits(cfg: object) -> ProviderLimits:
    """The limits of a model config (its ``limits`` block; ``n_ctx`` for a local model's window)."""
    n_ctx = getattr(cfg, "n_ctx", None) if getattr(cfg, "provider", "") == "local" else None
    return limits_from(getattr(cfg, "limits", None), n_ctx, f"configs/model/{getattr(cfg, 'name', '?')}.yaml")


def tool_problems(names: Sequence[str], limits: ProviderLimits) -> list[str]:
    """What breaks the limits in one request's tools: the count, then each bad name (at most 3 named)."""
    problems = []
    if limits.max_tools is not None and len(names) > limits.max_tools:
        problems.append(f"{len(names):,} tools in one request, over the provider's {limits.max_tools}")
    bad = [n for n in names if limits.name_problem(n)]
    if bad:
        shown = ", ".join(repr(n) for n in bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        problems.append(f"{len(bad)} tool name(s) do not match {limits.name_pattern}: {shown}")
    return problems


def safe_name(name: str) -> str:
    """``name`` as a valid tool name: ``/`` -> ``__``, other invalid characters -> ``_``, at most 64 characters.

    A long name keeps its head and gains 8 hex digits of its hash.
    """
    out = _INVALID.sub("_", name.replace("/", "__")) or "op"
    if len(out) > NAME_MAX:
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
        out = f"{out[: NAME_MAX - 9]}_{digest}"
    return out


def safe_names(names: Iterable[str]) -> dict[str, str]:
    """Original -> valid name, for every name that breaks the pattern; injective, never a name in use.

    A mapped name that would collide with another name (original or mapped) gains a hash suffix.
    """
    names = list(names)
    taken = {n for n in names if re.fullmatch(NAME_PATTERN, n)}
    out: dict[str, str] = {}
    for name in names:
        if name in taken and re.fullmatch(NAME_PATTERN, name):
            continue
        candidate = safe_name(name)
        salt = 0
        while candidate in taken:
            salt += 1
            digest = hashlib.sha256(f"{name}\x00{salt}".encode()).hexdigest()[:8]
            candidate = f"{candidate[: NAME_MAX - 9]}_{digest}"
        taken.add(candidate)
        out[name] = candidate
    return out


def record_name_map(source: str, mapping: Mapping[str, str]) -> None:
    """Keep the original -> valid name map of the catalog read from ``source`` (empty maps are dropped)."""
    if mapping:
        _NAME_MAPS[source] = dict(mapping)
    else:
        _NAME_MAPS.pop(source, None)


def name_map_for(source: str) -> dict[str, str]:
    """The original -> valid name map of the catalog read from ``source`` (empty: no name was changed)."""
    return dict(_NAME_MAPS.get(source, {}))


def original_names(source: str) -> dict[str, str]:
    """Valid -> original name, for reporting results under the names the catalog itself uses."""
    return {safe: original for original, safe in _NAME_MAPS.get(source, {}).items()}


def recorded_originals(cells: Iterable[Mapping[str, object]]) -> dict[str, str]:
    """Valid -> original tool name, from the ``name_map`` each run's cells recorded (run.json).

    The results tables hold the valid names (what the model saw and called); reports and gates show
    the catalog's own names through this. Cells without a map (no name was changed) add nothing.
    """
    out: dict[str, str] = {}
    for cell in cells:
        mapping = cell.get("name_map") if isinstance(cell, Mapping) else None
        if isinstance(mapping, Mapping):
            out.update({str(safe): str(original) for original, safe in mapping.items()})
    return out


@dataclass(frozen=True)
class FitPrediction:
    """Whether the first request of an episode fits the model's context window (from static counts)."""

    prompt_tokens: int
    """Estimated prompt tokens of the first request (o200k_base): system text, tool block, first turn."""
    reserved: int
    """Completion tokens the request reserves (the model's ``max_tokens``)."""
    context_window: int | None
    """The window (None: unknown, always fits)."""

    @property
    def fits(self) -> bool:
        """The prompt and the reserved completion fit the window."""
        return self.context_window is None or self.prompt_tokens + self.reserved <= self.context_window

    def why(self) -> str:
        """One line for the record and the report.

        A message for the reader: the episode's outcome, ``does_not_fit``, is typed apart (bench.run.fit), and its
        error type is ``context_overflow``, so a cell that does not fit is never a harness error (nor retaken by
        ``retry_errors``). Runs recorded before the ``outcome`` column are typed by this text's start
        (bench.store.outcomes, the legacy path): keep it.
        """
        return (
            f"does not fit: first request at least {self.prompt_tokens:,} prompt tokens (o200k estimate) + "
            f"{self.reserved:,} reserved for the answer > context window {self.context_window or 0:,}; "
            "not sent (context_overflow)"
        )


def predict_fit(texts: Sequence[str], reserved: int, limits: ProviderLimits) -> FitPrediction:
    """Estimate the first request's prompt tokens from its texts (o200k_base) against ``limits``.

    ``texts``: the system prompt, the surface's system text, each tool's wire JSON, the user's first
    turn. Counting stops early once the window is certainly exceeded, so a 10,000-tool block costs little.
    """
    from surfbench.bench.catalog.wire import count_tokens

    budget = None if limits.context_window is None else limits.context_window - reserved
    total = 0
    for text in texts:
        total += count_tokens(text)
        if budget is not None and total > budget:
            break
    return FitPrediction(total, reserved, limits.context_window)


class FirstSession(Protocol):
    """What the fit check reads of a surface's session (bench.contracts.surface.Session)."""

    def tools(self) -> Sequence[HasToolFields]: ...
    def system_text(self) -> str: ...


class FirstRequestSurface(Protocol):
    """A surface as the fit check opens it (bench.contracts.surface.Surface)."""

    def session(self, request: str) -> FirstSession: ...


def first_request(surface: FirstRequestSurface, request: str, system_prompt: str) -> tuple[list[str], list[str]]:
    """(tool names, texts) of an episode's first request on ``surface``: what the fit check counts."""
    from surfbench.bench.catalog.wire import tool_wire_text

    session = surface.session(request)
    tools = session.tools()
    texts = [system_prompt, session.system_text(), *(tool_wire_text(t) for t in tools), request]
    return [t.name for t in tools], texts


def check_first_request(
    surface: FirstRequestSurface, request: str, system_prompt: str, limits: ProviderLimits, reserved: int
) -> tuple[list[str], FitPrediction]:
    """What breaks the provider's limits in the first request, and whether it fits the context window."""
    names, texts = first_request(surface, request, system_prompt)
    return tool_problems(names, limits), predict_fit(texts, reserved, limits)
