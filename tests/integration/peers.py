"""Peer consumers (kafka-python, confluent-kafka) as child processes, for cross-checks.

``Peer`` starts ``peer_worker.py`` and collects its JSON events on a reader thread;
``owned()`` replays assigned/revoked/lost into the partitions the peer holds now, which works
for eager (revoke all, assign all) and cooperative (incremental) callbacks alike. Every event
carries ``t``, the child's ``time.monotonic()`` (comparable with the parent's); with
``record=True`` the records handed out are kept in ``consumed`` as ``(t, partition, offset)``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.integration.harness import wait_until

WORKER = Path(__file__).with_name("peer_worker.py")


class Peer:
    """One peer consumer process."""

    def __init__(
        self,
        client: str,
        bootstrap: str,
        group: str,
        topic: str,
        *,
        strategy: str = "range",
        session_timeout_ms: int = 6000,
        max_poll_interval_ms: int = 30000,
        heartbeat_interval_ms: int | None = None,
        instance_id: str | None = None,
        name: str | None = None,
        client_id: str | None = None,
        record: bool = False,
        commit: bool = False,
    ) -> None:
        """Start the worker process.

        Args:
            client: ``"kafka-python"`` or ``"confluent"``.
            strategy: ``"range"``, ``"roundrobin"`` or ``"cooperative-sticky"``.
            heartbeat_interval_ms: default ``max(100, session_timeout_ms // 6)``.
            client_id: the client id, so the coordinator's member id starts with it.
            record: report every record handed out (``consumed``).
            commit: commit synchronously after every non-empty batch.

        """
        self.client = client
        self.name = name or instance_id or client
        self.strategy = strategy
        opts = {
            "client": client, "bootstrap": bootstrap, "group": group, "topic": topic, "strategy": strategy,
            "session_timeout_ms": session_timeout_ms, "max_poll_interval_ms": max_poll_interval_ms,
            "heartbeat_interval_ms": heartbeat_interval_ms or max(100, session_timeout_ms // 6),
            "instance_id": instance_id, "client_id": client_id, "record": record, "commit": commit,
        }
        argv = [sys.executable, str(WORKER), json.dumps(opts)]
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        #: (t, partition, offset) of every record handed out, with ``record=True``
        self.consumed: list[tuple[float, int, int]] = []
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            event["t_read"] = time.monotonic()
            event.setdefault("t", event["t_read"])
            with self._lock:
                if event["event"] == "records":
                    self.consumed.extend((event["t"], p, o) for p, o in event["records"])
                else:
                    self.events.append(event)

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["event"] == kind]

    def owned(self) -> frozenset[tuple[str, int]]:
        """What the peer holds now, replaying its callbacks."""
        held: set[tuple[str, int]] = set()
        with self._lock:
            events = list(self.events)
        for e in events:
            ps = {(t, p) for t, p in e.get("partitions", ())}
            if e["event"] == "assigned":
                held |= ps
            elif e["event"] in ("revoked", "lost"):
                held -= ps
        return frozenset(held)

    def assignments(self) -> int:
        return len(self.of("assigned"))

    def errors(self) -> list[str]:
        return [e["name"] for e in self.of("error")]

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def close(self, timeout_s: float = 30.0) -> None:
        """Close the consumer cleanly (a dynamic member sends LeaveGroup; a static one does not)."""
        if self.proc.poll() is None:
            self.send("close")
            wait_until(lambda: self.proc.poll() is not None, timeout_s, f"{self.name} to close")

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no more heartbeats."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        try:
            self.close(timeout_s=10)
        except AssertionError:
            self.kill()

    def __repr__(self) -> str:
        return f"Peer({self.name}, owned={sorted(self.owned())}, errors={self.errors()})"
