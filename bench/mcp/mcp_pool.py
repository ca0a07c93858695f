"""Servers kept between episodes for a suite that declares a reset (``reset_tool``).

A server with a declared reset is started once per concurrent episode and handed from episode to
episode; each hand-over calls the reset tool with the next scenario. The pool belongs to the suite
(never a module global); its servers stop when the pool is closed or the interpreter exits, and the
guard stops them if the harness is killed; one idle for ``idle_s`` stops on its own.
"""

from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass, field

from surfbench.bench.mcp.mcp_catalog import Workdir
from surfbench.bench.mcp.mcp_client import McpClient


@dataclass
class Lease:
    """One server and its working copy, lent to one episode."""

    client: McpClient
    workdir: Workdir


@dataclass
class ServerPool:
    """Idle servers of one suite, lent one episode at a time."""

    idle: list[Lease] = field(default_factory=list)
    """Servers waiting for an episode."""
    idle_s: float = 30.0
    """A server idle this long is stopped (a sweep's later cells start their own)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _registered: bool = field(default=False, repr=False)

    def take(self) -> Lease | None:
        """An idle server, or None (the caller starts one)."""
        with self._lock:
            if not self._registered:
                atexit.register(self.close)
                self._registered = True
            while self.idle:
                lease = self.idle.pop()
                if lease.client.alive:
                    return lease
                lease.client.close()
                lease.workdir.close()
            return None

    def give(self, lease: Lease) -> None:
        """Take a server back once its episode is over (a dead one is stopped instead)."""
        if not lease.client.alive:
            lease.client.close()
            lease.workdir.close()
            return
        with self._lock:
            self.idle.append(lease)
        timer = threading.Timer(self.idle_s, self._expire, (lease,))
        timer.daemon = True
        timer.start()

    def _expire(self, lease: Lease) -> None:
        """Stop ``lease``'s server if it is still idle."""
        with self._lock:
            if lease not in self.idle:
                return
            self.idle.remove(lease)
        lease.client.close()
        lease.workdir.close()

    def close(self) -> None:
        """Stop every idle server."""
        with self._lock:
            leases, self.idle = self.idle, []
        for lease in leases:
            lease.client.close()
            lease.workdir.close()
