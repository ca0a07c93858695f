"""Serve the viewer's pages on 127.0.0.1 (standard library ``http.server``), or write them as static files.

A request's path is split into its segments and each is looked up among the loaded runs' cells, episodes,
tasks and operations (:mod:`surfbench.bench.report.viewer_links` names them), or among the package's two static
files: it never becomes a path on disk, so ``/episode/..%2F..%2Fetc%2Fpasswd`` is a 404 like any unknown page.
The server only answers GET and HEAD; pages are built when asked for (a cell's list a page at a time). It
answers only a request whose ``Host`` names the loopback (``localhost``, ``127.0.0.1``, ``[::1]``, or the bound
address, with or without the bound port): a page elsewhere whose name was rebound to 127.0.0.1 gets a 421. A
run folder removed or damaged while served gets a 500 page with the one line ``--export`` would print.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
import uuid
import zipfile
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property, partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from surfbench.bench.base.secrets import redact
from surfbench.bench.report.viewer_links import page_name
from surfbench.bench.store.results import ResultsError
from surfbench.bench.view.compare_pages import op_names, op_page, task_page
from surfbench.bench.view.html import STATIC, esc, page, static_file
from surfbench.bench.view.index import Filters, ViewIndex
from surfbench.bench.view.pages import cell_page, episode_page, index_page

HTML = "text/html; charset=utf-8"
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}
DAMAGED = (ResultsError, OSError, ValueError, zipfile.BadZipFile)
"""What reading a run folder raises when it was removed or damaged after the viewer started (pyarrow's
errors are ValueErrors): the page is a 500 with its one line, as ``--export`` prints it."""
LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
"""The names a request's ``Host`` may give (besides the bound address), with or without the bound port."""


def log_line(line: str) -> None:
    """One line on stderr (a refused or failed request: logged even without ``SURFBENCH_VIEW_LOG``)."""
    print(line, file=sys.stderr, flush=True)


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` values answered by a server bound to ``host``:``port`` (lower case)."""
    bound = f"[{host}]" if ":" in host else host
    names = {n.lower() for n in (*LOOPBACK, bound)}
    return frozenset(names | {f"{n}:{port}" for n in names})


class Site:
    """The pages of one :class:`ViewIndex`, by path (what the server answers and the export writes)."""

    def __init__(self, index: ViewIndex) -> None:
        self.index = index

    @cached_property
    def ops(self) -> dict[tuple[str, str], tuple[str, str]]:
        return op_names(self.index)

    def render(self, path: str, query: Mapping[str, Sequence[str]] | None = None) -> tuple[int, str, bytes]:
        """(status, content type, body) of the page at ``path`` (percent-encoded, as a request has it)."""
        query = query or {}
        parts = [unquote(p) for p in path.split("/") if p]
        try:
            with self.index.lock:  # one page at a time: the tables read on first use are read once
                found = self._route(parts, query)
        except KeyError:
            found = None
        if found is None:
            shown = "/" + "/".join(parts)
            body = page("not found", f"<h1>No such page</h1><p>{esc(shown)} is not a page of these runs.</p>", 0)
            return HTTPStatus.NOT_FOUND, HTML, body.encode("utf-8")
        return HTTPStatus.OK, found[0], found[1]

    def _route(self, parts: list[str], query: Mapping[str, Sequence[str]]) -> tuple[str, bytes] | None:
        index = self.index
        if any(p in (".", "..") or "/" in p or "\\" in p for p in parts):
            return None
        if not parts or parts == ["index.html"]:
            return HTML, index_page(index).encode("utf-8")
        name = parts[-1]
        if len(parts) == 2 and parts[0] == "_static" and name in STATIC:
            return STATIC[name], static_file(name)
        if not name.endswith(".html"):
            return None
        stem = name[: -len(".html")]
        if parts[0] == "cell" and len(parts) == 2:
            cell = index.cell(stem)
            return None if cell is None else (HTML, cell_page(index, cell, Filters.from_query(query)).encode())
        if parts[0] == "episode" and len(parts) == 2:
            position = index.episode_position(stem)
            return None if position is None else (HTML, episode_page(index, position).encode("utf-8"))
        if parts[0] == "task" and len(parts) == 3:
            positions = index.tasks.get((parts[1], stem))
            if not positions:
                return None
            repeat = _int((query.get("repeat") or [""])[0])
            return HTML, task_page(index, positions, repeat).encode("utf-8")
        if parts[0] == "op" and len(parts) == 3:
            found = self.ops.get((parts[1], stem))
            return None if found is None else (HTML, op_page(index, *found).encode("utf-8"))
        return None


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def handler(site: Site) -> type[BaseHTTPRequestHandler]:
    """A request handler class answering from ``site`` (GET and HEAD; anything else: 405)."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "surfbench-view"

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self._answer(body=True)

        def do_HEAD(self) -> None:  # noqa: N802
            self._answer(body=False)

        def _refuse(self) -> None:
            if self._host_ok(body=True):
                self.send_error(HTTPStatus.METHOD_NOT_ALLOWED, "the viewer is read-only")

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # noqa: N815

        def _host_ok(self, body: bool) -> bool:
            """Whether the request's ``Host`` names the loopback; if not, answer 421 and log one line.

            A browser always sends the name it resolved: a page on another site whose name was rebound to
            127.0.0.1 (DNS rebinding) sends that name, and reads nothing. No ``Host`` (HTTP/1.0): answered.
            """
            hosts = self.headers.get_all("Host") or []
            address = self.server.server_address
            host, port = (address[0], address[1]) if isinstance(address, tuple) else ("127.0.0.1", 0)
            if not hosts or (len(hosts) == 1 and hosts[0].strip().lower() in allowed_hosts(str(host), int(port))):
                return True
            shown = ", ".join(repr(h) for h in hosts)
            log_line(f"surfbench view: refused a request for Host {shown} ({self.command} {self.path[:200]}): "
                     f"open http://127.0.0.1:{port}/ instead")  # fmt: skip
            text = (f"<h1>Wrong host</h1><p>This viewer only answers 127.0.0.1, localhost and [::1]: open "
                    f"http://127.0.0.1:{port}/.</p>")  # fmt: skip
            self._send(HTTPStatus.MISDIRECTED_REQUEST, HTML, page("wrong host", text, 0).encode("utf-8"), body)
            return False

        def _answer(self, body: bool) -> None:
            if not self._host_ok(body):
                return
            url = urlsplit(self.path)
            depth = max(0, len([p for p in url.path.split("/") if p]) - 1)  # the error page's links still resolve
            try:
                status, kind, data = site.render(url.path, parse_qs(url.query))
            except DAMAGED as exc:  # the run folder changed under the viewer: its one line, no traceback
                message = redact(str(exc)).replace("\n", " ")
                log_line(f"surfbench view: error: {self.command} {url.path[:200]}: {message}")
                text = f'<h1>This page cannot be read</h1><p class="error">{esc(message)}</p>'
                status, kind, data = HTTPStatus.INTERNAL_SERVER_ERROR, HTML, page("error", text, depth).encode("utf-8")
            except Exception:  # a bug: still an answer, and its traceback in the log
                log_line(redact(traceback.format_exc()).rstrip())
                text = "<h1>Internal error</h1><p>The viewer failed on this page; its traceback is in the log.</p>"
                status, kind, data = HTTPStatus.INTERNAL_SERVER_ERROR, HTML, page("error", text, depth).encode("utf-8")
            self._send(status, kind, data, body)

        def _send(self, status: int, kind: str, data: bytes, body: bool) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in HEADERS.items():
                self.send_header(name, value)
            self.end_headers()
            if body:
                self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            if os.environ.get("SURFBENCH_VIEW_LOG"):
                super().log_message(format, *args)

    return Handler


def make_server(site: Site, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """A server bound to ``host``:``port`` (0: a free port); ``server_address`` says which."""
    server = ThreadingHTTPServer((host, port), handler(site))
    server.daemon_threads = True
    return server


def serve(site: Site, port: int = 0, log: Callable[[str], None] = print) -> None:
    """Serve until Ctrl-C, then stop cleanly."""
    try:
        server = make_server(site, port)
    except OSError as exc:  # in use, or a port below 1024 without the right to it: one line, exit 2
        reason = exc.strerror or str(exc)
        where = f"--port {port}: cannot listen on 127.0.0.1:{port} ({reason})"
        raise ValueError(f"{where}; pass another port, or 0 for a free one") from None
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C stops it even when started with SIGINT ignored (inherited from a parent that ignores it: a
        # background job of a script, a test runner), where Python installs no KeyboardInterrupt handler
        signal.signal(signal.SIGINT, signal.default_int_handler)
    host, bound = server.server_address[:2]
    log(f"surfbench view: http://{host!s}:{bound}/  ({len(site.index.frame):,} episodes; Ctrl-C stops)")
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        log("surfbench view: stopped")
    finally:
        server.server_close()


def export(site: Site, out: Path, log: Callable[[str], None] | None = None) -> int:
    """Write every page as a static file under ``out`` (opens without a server); return how many files.

    Each file is written to a temporary name and renamed; a cell's page lists all its episodes and filters
    them in the page.
    """
    index = site.index
    log = log or (lambda m: print(m, file=sys.stderr))
    jobs: list[tuple[str, Callable[[], str | bytes]]] = [("index.html", partial(index_page, index, static=True))]
    jobs += [(f"_static/{name}", partial(static_file, name)) for name in STATIC]
    jobs += [(f"cell/{c.id}.html", partial(cell_page, index, c, Filters(), static=True)) for c in index.cells]
    keys = [str(k) for k in index.frame["episode_key"]]
    jobs += [(f"episode/{page_name(k)}.html", partial(episode_page, index, i, static=True)) for i, k in enumerate(keys)]
    jobs += [(f"task/{s}/{t}.html", partial(task_page, index, p, static=True)) for (s, t), p in index.tasks.items()]
    jobs += [
        (f"op/{s}/{o}.html", partial(op_page, index, suite, op, static=True))
        for (s, o), (suite, op) in site.ops.items()
    ]
    for n, (rel, make) in enumerate(jobs, 1):
        try:
            data = make()
        except (OSError, zipfile.BadZipFile) as exc:  # a run folder removed or damaged since it was loaded
            raise ResultsError(f"{rel}: a run folder cannot be read ({exc}); restore it, then export again") from None
        try:
            _write(out / rel, data.encode("utf-8") if isinstance(data, str) else data)
        except OSError as exc:  # each file is whole or absent: nothing half-written
            reason = exc.strerror or str(exc)
            where = f"--export {out}: cannot write {rel} ({reason})"
            raise ResultsError(f"{where}; pass a folder you can write to") from None
        if n % 500 == 0 or n == len(jobs):
            log(f"export: {n:,} of {len(jobs):,} files")
    return len(jobs)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
