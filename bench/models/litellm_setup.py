"""LiteLLM, imported once and offline, with the httpx hook that measures request bytes.

Its own module so that the client (:mod:`surfbench.bench.models.client`) and the price lookup
(:mod:`surfbench.bench.models.cost`) both reach LiteLLM without importing each other.
"""

from __future__ import annotations

import logging
import os
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

CAPTURE = threading.local()
"""Per thread: ``CAPTURE.sink``, a list the hook appends each request body's length to (-1: unknown)."""
_LITELLM: Any = None
_LOCK = threading.Lock()


def _capture_request(request: httpx.Request) -> None:
    sink = getattr(CAPTURE, "sink", None)
    if sink is not None:
        try:
            sink.append(len(request.content))
        except Exception:  # a streaming body has no .content; then we fall back to the estimate
            sink.append(-1)


def litellm_module() -> ModuleType:
    """Import LiteLLM once, offline: local price map, httpx hook for request bytes."""
    global _LITELLM
    with _LOCK:
        if _LITELLM is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            from surfbench.bench.catalog.wire import ensure_offline_tiktoken

            ensure_offline_tiktoken()
            import httpx
            import litellm

            litellm.suppress_debug_info = True
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx"):
                logging.getLogger(name).setLevel(logging.WARNING)
            litellm.drop_params = True
            litellm.client_session = httpx.Client(event_hooks={"request": [_capture_request]}, timeout=600)
            _LITELLM = litellm
    return _LITELLM
