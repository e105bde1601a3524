"""The parent side of the share-group peers (KIP-932): one command line per client, one event reader.

``share_command("kgroup" | "confluent" | "java", ...)`` is the command line of a share-group member
speaking one protocol (``tests/peers/share_peer.py`` for kgroup's ``ShareConsumer`` and
confluent-kafka's ``ShareConsumer``, ``JavaPeer.java --mode share`` for Apache Kafka's
``KafkaShareConsumer``); :class:`ShareMember` runs one and sums what it accepted.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from tests.peers.java import java_command
from tests.peers.process import PeerProcess

#: the share-group clients a peer can run
SHARE_CLIENTS = ("kgroup", "java", "confluent")


def share_command(client: str, bootstrap: str, group: str, topic: str, *, work_ms: float = 0.0,
                  max_poll_records: int = 500, acquire_mode: str = "batch_optimized", gate: bool = False,
                  compiled: bool = False) -> list[str]:
    """The command line of one share-group member of ``client`` (see :data:`SHARE_CLIENTS`).

    ``work_ms``: sleep per record before its ACCEPT; ``acquire_mode``: Java's ``share.acquire.mode``
    (kgroup's ``share_acquire_mode``; confluent-kafka 2.16 has none, ``max_poll_records`` only);
    ``gate``: wait for ``go`` after ``ready``;
    ``compiled``: the Java peer compiled with ``javac``, HotSpot's defaults (benchmarks).

    Raises:
        ValueError: an unknown client.
        RuntimeError: Java or the Apache Kafka jars are missing (``java``).

    """
    common = ["--bootstrap", bootstrap, "--group", group, "--topic", topic, "--work-ms", str(work_ms),
              "--max-poll-records", str(max_poll_records), *(["--gate"] if gate else [])]
    if client != "confluent":
        common += ["--acquire-mode", acquire_mode]
    if client == "java":
        return java_command(["--mode", "share", *common], quick_start=not compiled, compiled=compiled)
    if client in ("kgroup", "confluent"):
        return [sys.executable, "-m", "tests.peers.share_peer", "--client", client, *common]
    raise ValueError(f"unknown share client {client!r} (one of {', '.join(SHARE_CLIENTS)})")


class ShareMember(PeerProcess):
    """One share-group member process; :meth:`accepted` is what its acknowledged commits covered."""

    def __init__(self, client: str, argv: list[str], **kwargs: Any) -> None:
        self.client = client
        super().__init__(argv, **kwargs)

    def accepted(self) -> list[str]:
        """The values of the records whose ACCEPT a ``commitSync()`` answered without error.

        A batch counts when its ``committed`` event follows its ``records`` event and names no
        failed partition; a failed partition's records of that batch are left out.
        """
        out: list[str] = []
        pending: dict[str, Any] | None = None
        for e in self.snapshot():
            if e["event"] == "records":
                pending = e
            elif e["event"] == "committed" and pending is not None:
                bad = {p for _, p, _ in e["failed"]}
                out.extend(v for v, p in zip(pending["values"], pending["partitions"], strict=True) if p not in bad)
                pending = None
        return out

    def errors(self) -> list[dict[str, Any]]:
        """The ``error`` events so far."""
        return self.of("error")


def start_share_group_at(admin: Any, group: str, partitions: list[Any], offset: int = 0,
                         timeout_s: float = 60.0) -> None:
    """Set ``group``'s start offset of every partition to ``offset`` (AlterShareGroupOffsets).

    A topic just created may be unknown to the group coordinator for a moment: CreateTopics and
    the Metadata answer precede the coordinator's own metadata image, and the coordinator answers
    UNKNOWN_TOPIC_OR_PARTITION (3) per partition (a result, as in Java's
    ``Admin.alterShareGroupOffsets``). Retried until every partition answers 0 or ``timeout_s`` passes
    (``AssertionError`` with the last answer).
    """
    wanted = dict.fromkeys(partitions, offset)
    deadline = time.monotonic() + timeout_s
    while True:
        answer = admin.alter_share_group_offsets(group, wanted)
        if answer == dict.fromkeys(partitions, 0):
            return
        if set(answer.values()) - {0, 3} or time.monotonic() >= deadline:
            raise AssertionError(f"AlterShareGroupOffsets of {group!r} answered {answer}")
        time.sleep(0.1)
