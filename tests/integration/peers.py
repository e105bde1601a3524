"""Peer consumers (kafka-python, confluent-kafka, Apache Kafka's Java ``KafkaConsumer``) as
child processes, for cross-checks (on the peer harness of :mod:`tests.peers`).

``Peer`` starts ``peer_worker.py`` (the Python clients) or ``tests/peers/JavaPeer.java`` (Java's
``org.apache.kafka.clients.consumer.KafkaConsumer`` with ``group.protocol=classic``, or
``consumer`` with ``group_protocol="consumer"``, run by
Java's single-file source launcher, JEP 330, on the Apache Kafka jars that
``python -m kgroup.testing.apache_kafka fetch`` puts in place) and collects their JSON events,
one line protocol for all of them, on a reader thread;
``owned()`` replays assigned/revoked/lost into the partitions the peer holds now, which works
for eager (revoke all, assign all) and cooperative (incremental) callbacks alike. Every event
carries ``t``, the child's ``time.monotonic()`` (comparable with the parent's); with
``record=True`` the records handed out are kept in ``consumed`` as ``(t, partition, offset)``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tests.integration.harness import wait_until
from tests.peers.java import java_command, java_unavailable_reason
from tests.peers.process import PeerProcess

__all__ = ["CLIENTS", "WORKER", "Peer", "java_unavailable_reason"]

WORKER = Path(__file__).with_name("peer_worker.py")
#: every client kind a ``Peer`` can run
CLIENTS = ("kafka-python", "confluent", "java")


class Peer(PeerProcess):
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
        log_path: str | os.PathLike[str] | None = None,
        group_protocol: str = "classic",
    ) -> None:
        """Start the worker process.

        Args:
            client: ``"kafka-python"``, ``"confluent"`` or ``"java"``.
            strategy: ``"range"``, ``"roundrobin"`` or ``"cooperative-sticky"``; for ``java`` also
                a comma-separated list in order of preference, e.g. ``"cooperative-sticky,range"``
                (KIP-429's first bounce: Java's ConsumerCoordinator runs EAGER while an eager
                assignor is listed). kafka-python takes a list of one rebalance protocol only
                (it refuses to mix EAGER and COOPERATIVE), librdkafka likewise.
            heartbeat_interval_ms: default ``max(100, session_timeout_ms // 6)``.
            client_id: the client id, so the coordinator's member id starts with it.
            record: report every record handed out (``consumed``).
            commit: commit synchronously after every non-empty batch (``java``: also the
                revoked partitions' positions in ``onPartitionsRevoked``).
            log_path: where the child's stderr goes (default: nowhere).
            group_protocol: ``"classic"`` or, for ``java`` only, ``"consumer"`` (KIP-848: the
                session timeout, heartbeat interval and strategy are then the broker's).

        """
        self.client = client
        self.name = name or instance_id or client
        self.strategy = strategy
        opts = {
            "client": client, "bootstrap": bootstrap, "group": group, "topic": topic, "strategy": strategy,
            "session_timeout_ms": session_timeout_ms, "max_poll_interval_ms": max_poll_interval_ms,
            "heartbeat_interval_ms": heartbeat_interval_ms or max(100, session_timeout_ms // 6),
            "instance_id": instance_id, "client_id": client_id, "record": record, "commit": commit,
            "group_protocol": group_protocol,
        }
        if group_protocol != "classic" and client != "java":
            raise ValueError(f"group_protocol={group_protocol!r} is for the java peer only")
        if client == "java":
            argv = java_command(self._java_args(opts), quick_start=True)
        elif client in CLIENTS:
            argv = [sys.executable, str(WORKER), json.dumps(opts)]
        else:
            raise ValueError(f"unknown peer client {client!r}; one of {CLIENTS}")
        #: (t, partition, offset) of every record handed out, with ``record=True``
        self.consumed: list[tuple[float, int, int]] = []
        super().__init__(argv, log_path=log_path)

    @staticmethod
    def _java_args(opts: dict[str, Any]) -> list[str]:
        args = ["--bootstrap", opts["bootstrap"], "--group", opts["group"], "--topic", opts["topic"],
                "--assignors", opts["strategy"], "--session-timeout-ms", str(opts["session_timeout_ms"]),
                "--heartbeat-interval-ms", str(opts["heartbeat_interval_ms"]),
                "--max-poll-interval-ms", str(opts["max_poll_interval_ms"])]
        if opts["instance_id"]:
            args += ["--instance-id", opts["instance_id"]]
        if opts["client_id"]:
            args += ["--client-id", opts["client_id"]]
        if opts["group_protocol"] != "classic":
            args += ["--group-protocol", opts["group_protocol"]]
        return args + (["--record"] if opts["record"] else []) + (["--commit"] if opts["commit"] else [])

    def on_event(self, event: dict[str, Any]) -> bool:
        event["t_read"] = time.monotonic()
        event.setdefault("t", event["t_read"])
        if event["event"] == "records":
            self.consumed.extend((event["t"], p, o) for p, o in event["records"])
            return False
        return True

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

    def generation(self) -> int | None:
        """The generation of the last callback that reported one (the Java peer does)."""
        with self._lock:
            gens = [e["generation"] for e in self.events if "generation" in e]
        return gens[-1] if gens else None

    def wait_ready(self, timeout_s: float = 60.0) -> Peer:
        """Wait until the child subscribed (its ``ready`` event); fail if it exits first."""
        wait_until(lambda: bool(self.of("ready")) or self.proc.poll() is not None, timeout_s, f"{self.name} ready")
        assert self.of("ready"), f"{self.name} exited with {self.proc.returncode} before it was ready"
        return self

    def assignments(self) -> int:
        return len(self.of("assigned"))

    def errors(self) -> list[str]:
        return [e["name"] for e in self.of("error")]

    def close(self, timeout_s: float = 30.0) -> bool:
        """Close the consumer cleanly (a dynamic member sends LeaveGroup; a static one does not).

        Fails the test when the peer did not exit within ``timeout_s`` (it is killed then).
        """
        if not super().close(timeout_s):
            raise AssertionError(f"timed out after {timeout_s} s waiting for {self.name} to close")
        return True

    def stop(self) -> None:
        """Close, or kill if that takes more than 10 s."""
        try:
            self.close(timeout_s=10)
        except AssertionError:
            self.kill()

    def __repr__(self) -> str:
        return f"Peer({self.name}, owned={sorted(self.owned())}, errors={self.errors()})"
