"""Streamable HTTP through the SDK, keeping the raw ``tools/list`` answer as the server sent it.

Header values come from environment variables named in the spec, read when the connection opens;
they never enter a spec's identity, a result or a message.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from surfbench.bench.base.bounded import limit_bytes, too_large
from surfbench.bench.mcp.mcp_spec import McpError, ServerSpec
from surfbench.bench.mcp.transport import WireLog


def sse_messages(body: bytes) -> list[bytes]:
    """The ``data`` of each server-sent event of ``body``, as bytes (multi-line data joined by newlines)."""
    out: list[bytes] = []
    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        if data:
            out.append(b"\n".join(data))
    return out


class _Tee(httpx2.AsyncBaseTransport):
    """Passes requests through; keeps the raw body answering each ``tools/list`` request."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, log: WireLog) -> None:
        self.inner = inner
        self.log = log

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        rid = None
        if request.method == "POST":
            try:
                sent: Any = json.loads(request.content or b"null")
            except ValueError:
                sent = None
            if isinstance(sent, dict) and sent.get("method") == "tools/list":
                rid = sent.get("id")
        response = await self.inner.handle_async_request(request)
        if response.status_code >= 400 and self.log.http_error is None and request.method != "DELETE":
            self.log.http_error = f"{response.status_code} {response.reason_phrase}".strip()
        kind = response.headers.get("content-type", "")
        answered = request.method == "POST" and response.status_code < 300 and response.status_code != 202
        if answered and "text/event-stream" not in kind:  # SSE is checked by the SDK; JSON and anything else here
            # a tools/list answer is bounded (bench/base/bounded.py); any other is read whole, as the SDK would
            body = await self._body(response) if rid is not None else await response.aread()
            self.log.not_mcp = self.log.not_mcp or _not_json_rpc(response.status_code, kind, body)
            response = httpx2.Response(response.status_code, headers=response.headers, content=body, request=request)
        if rid is None:
            return response
        body = await self._body(response) if not answered or "text/event-stream" in kind else body
        candidates = sse_messages(body) if "text/event-stream" in kind else [body]
        for raw in candidates:
            try:
                answer = json.loads(raw)
            except ValueError:
                continue
            if isinstance(answer, dict) and answer.get("id") == rid:
                self.log.raw.setdefault("tools/list", []).append(raw)
        return httpx2.Response(response.status_code, headers=response.headers, content=body, request=request)

    async def _body(self, response: httpx2.Response) -> bytes:
        """The whole body of a ``tools/list`` answer, up to the size limit of an MCP answer (bench/base/bounded.py)."""
        limit = limit_bytes("MCP answer")
        parts: list[bytes] = []
        size = 0
        async for chunk in response.stream:  # type: ignore[union-attr]
            size += len(chunk)
            if size > limit:
                await response.aclose()
                self.log.too_large = f"an answer of {too_large('MCP answer', limit)}"
                raise McpError(str(response.request.url), self.log.too_large)
            parts.append(chunk)
        return b"".join(parts)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _not_json_rpc(status: int, kind: str, body: bytes) -> str | None:
    """What a POST's answer was, when it cannot be MCP's (a web page, a REST API's JSON); None when it may be."""
    what = kind.split(";")[0].strip() or "no content type"
    if "json" in what:
        try:
            message: Any = json.loads(body)
        except ValueError:
            message = None
        items = message if isinstance(message, list) else [message]
        if items and all(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in items):
            return None
        what = "JSON that is not JSON-RPC"
    head = " ".join(body[:60].decode("utf-8", "replace").split())
    return f"{status} {what} ({head!r}...), not MCP: is this the server's MCP endpoint (often /mcp)?"


def headers_from_env(spec: ServerSpec) -> dict[str, str]:
    """Each header's value from the environment variable the spec names; a missing one is an error."""
    out = {}
    for header, var in spec.headers.items():
        value = os.environ.get(var)
        if value is None:
            raise McpError(spec.label, f"header {header!r} reads environment variable {var!r}, which is not set")
        out[header] = value
    return out


@asynccontextmanager
async def http_streams(spec: ServerSpec, log: WireLog) -> AsyncIterator[Any]:
    """The SDK's streamable-HTTP (read, write) pair over a client that records ``tools/list`` bytes."""
    if not os.environ.get("SURFBENCH_DEBUG"):  # the SDK logs a traceback per bad answer; our error names the answer
        logging.getLogger("mcp.client.streamable_http").setLevel(logging.CRITICAL)
    client = httpx2.AsyncClient(
        headers=headers_from_env(spec),
        transport=_Tee(httpx2.AsyncHTTPTransport(), log),
        timeout=httpx2.Timeout(spec.call_timeout_s, read=max(spec.call_timeout_s, 60.0)),
    )
    async with client, streamable_http_client(str(spec.url), http_client=client) as streams:
        yield streams
