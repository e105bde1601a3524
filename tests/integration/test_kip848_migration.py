"""Online migration between the classic and the consumer group protocol (KIP-848), both ways.

A classic group of two kgroup members and one Java ``KafkaConsumer`` (``tests/peers/JavaPeer.java``)
is rolled, one member at a time (close, start again with the other ``group_protocol``), to
``group_protocol="consumer"`` and then back to ``"classic"``, while a producer writes to every
partition all along. Apache Kafka converts the group itself (the Kafka documentation's
"Consumer Rebalance Protocol" page, upgrade and downgrade; the broker's
``group.consumer.migration.policy``, ``bidirectional`` by default): a classic group becomes a
consumer group when the first consumer-protocol member joins it, and a consumer group becomes
classic again when its last consumer-protocol member leaves and only classic members remain.
Classic members keep JoinGroup / SyncGroup / Heartbeat inside a consumer group, with the
broker's assignor.

======  ============================  ===========================================
step    the roll                      group type after it (ListGroups v5)
======  ============================  ===========================================
0       k1, k2, java: classic          classic
1-3     k1, k2, java -> consumer       consumer from step 1 (the first one converts it)
4-6     java, k1, k2 -> classic        consumer until step 6 (the last consumer-protocol
                                       member leaves: classic again)
======  ============================  ===========================================

Checked (``groupcheck``; kgroup's listener times and the Java peer's, both CLOCK_MONOTONIC):

* **One owner at a time.** A partition is owned from the *start* of ``on_partitions_assigned``
  to the *end* of ``on_partitions_revoked`` / ``on_partitions_lost`` (a Java peer: or its
  ``closing``). The rule: two members' intervals of one partition never overlap; a new owner's
  assign callback starts only after the old owner's revocation (and its commit) finished. A
  revocation in progress is inside the old owner's interval, so this allows nothing more; and
  no member may see ``on_partitions_lost`` at all (a clean roll fences nobody), which would be
  the one case the protocol lets a partition move before its owner knows. (Kafka's downgrade
  fences a classic member that has not caught up with the group epoch, so each step also waits
  for every member to reach it: :func:`at_group_epoch`.)
* **Nothing lost.** Every ``(partition, offset)`` the producer wrote was handed out by some
  member's ``poll()`` at least once, and only while that member owned the partition.
* **Commits never go back.** A monitor reads the group's committed offsets (OffsetFetch through
  ``kgroup.admin.GroupAdmin``) every 100 ms during the roll: per partition, each reading is at
  least the previous one.
* The group's type, after each step, as in the table.

On a broker of its own (about 4 s to start) with ``group.consumer.heartbeat.interval.ms`` of
500 ms (and its minimum lowered to match) instead of 5 s, so that each move of the roll waits
for half-second heartbeats; ``group.initial.rebalance.delay.ms`` 0. A step has settled when every
partition has one owner and each owner has handed out a record of each of its partitions since
it got it. The whole test takes 26-29 s on the 2-core development machine (the broker's start
and three JVM starts of the Java peer included): run with ``-s`` for each step's time.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgroup.admin import AdminError, GroupAdmin
from kgroup.testing import BrokerHandle, create_topic, start_broker
from kgroup.types import TopicPartition
from tests.integration import groupcheck
from tests.integration.harness import Background, EventLog, Member, wait_until
from tests.integration.peers import Peer, java_unavailable_reason

pytestmark = pytest.mark.broker_kinds("apache-kafka")

PARTITIONS = 6
HB = 500  # the classic members' heartbeat; the broker's for the consumer-protocol members
ST = 6000
STEP_S = 60.0  # one step: a JVM start (~3 s, more under load) and the moves


@pytest.fixture(scope="module")
def fast_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerHandle]:
    """An Apache Kafka node of its own, with half-second consumer-protocol heartbeats."""
    from kgroup.testing import apache_kafka

    apache_kafka.skip_if_unavailable()
    reason = java_unavailable_reason()
    if reason is not None:
        pytest.skip(f"the java peer needs {reason}")
    overrides = {
        "group.initial.rebalance.delay.ms": 0,
        "group.consumer.heartbeat.interval.ms": HB,
        "group.consumer.min.heartbeat.interval.ms": HB,
    }
    with start_broker(kind="apache-kafka", overrides=overrides,
                      log_dir=tmp_path_factory.mktemp("kip848-migration")) as broker:
        yield broker


class CommitMonitor(Background):
    """Reads the group's committed offsets every ``interval_s`` on its own thread."""

    def __init__(self, bootstrap: str, group: str, interval_s: float = 0.1) -> None:
        self.admin = GroupAdmin.connect(bootstrap, timeout_ms=10000, client_id="commit-monitor")
        self.group = group
        self.interval_s = interval_s
        #: partition -> every committed offset read, in order
        self.readings: dict[TopicPartition, list[int]] = {}
        self.failures = 0
        super().__init__("commit-monitor")

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for tp, committed in self.admin.committed_offsets(self.group, timeout_ms=5000).items():
                    self.readings.setdefault(tp, []).append(committed.offset)
            except AdminError:
                self.failures += 1
            self._stop.wait(self.interval_s)  # the sampling period, not synchronisation

    def backwards(self) -> list[str]:
        """Every reading lower than the one before it, per partition."""
        return [f"{tp}: {a} then {b}" for tp, seen in sorted(self.readings.items())
                for a, b in itertools.pairwise(seen) if b < a]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)
        self.admin.close()


def consuming(side: groupcheck.Side) -> bool:
    """Every partition ``side`` owns has handed out a record since it was assigned.

    The roll waits for this before closing the next member: Java's ``KafkaConsumer`` with
    ``group.protocol=consumer`` asked to close right after an assignment runs the peer's
    ``onPartitionsRevoked``, whose ``position()`` of a partition without a fetch position yet
    can outlast the close (seen as a peer that did not exit within 30 s).
    """
    since: dict[int, float] = {}
    for change in side.changes():
        if change.kind == "assigned":
            for p in change.partitions:
                since[p] = change.t
    return all(any(p == q and t >= since.get(p, 0.0) for t, q, _ in side.consumed()) for p in side.owned())


def at_group_epoch(admin: GroupAdmin, group: str) -> bool:
    """A classic group, or a consumer group whose every member has reached the group epoch.

    Kafka converts a consumer group back to a classic one with the group epoch as its generation
    (``ClassicGroup.fromConsumerGroup``). A classic member still at an older member epoch (it
    learns of the last bump only from its next Heartbeat's REBALANCE_IN_PROGRESS) is then answered
    ILLEGAL_GENERATION and loses its partitions; Java's ``KafkaConsumer`` does too (seen once
    under load: the Java peer's ``onPartitionsLost``). A roll that must fence nobody waits for
    every member to catch up before the next member leaves, as an operator would check with
    ``kafka-consumer-groups.sh --describe --members``.
    """
    try:
        description = admin.describe_group(group, timeout_ms=10000)
    except AdminError:
        return False
    if description.group_type != "consumer":
        return True
    epoch = description.group_epoch
    return description.assignment_epoch == epoch and all(m.member_epoch == epoch for m in description.members)


def group_type(admin: GroupAdmin, group: str) -> str | None:
    listing = [g for g in admin.list_groups(timeout_ms=10000) if g.group_id == group]
    return listing[0].group_type if listing else None


def test_a_classic_group_with_a_java_member_rolls_to_the_consumer_protocol_and_back(
    broker_kind: str, fast_broker: BrokerHandle, tmp_path: Path
) -> None:
    bootstrap = fast_broker.bootstrap_servers
    topic, group = "migration-roll", "migration-roll-group"
    create_topic(bootstrap, topic, PARTITIONS)
    log = EventLog()
    sides: list[groupcheck.Side] = []
    current: dict[str, groupcheck.Side] = {}
    admin = GroupAdmin.connect(bootstrap, timeout_ms=10000)

    def launch(slot: str, protocol: str, step: int) -> None:
        name = f"{slot}-{protocol}-{step}"
        side: groupcheck.Side
        if slot == "java":
            peer = Peer("java", bootstrap, group, topic, name=name, strategy="cooperative-sticky",
                        session_timeout_ms=ST, heartbeat_interval_ms=HB, record=True, commit=True,
                        group_protocol=protocol, log_path=tmp_path / f"{name}.log")
            side = groupcheck.PeerSide(peer, topic)
        else:
            settings: dict[str, Any] = (
                {"assignors": ("cooperative-sticky",), "session_timeout_ms": ST, "heartbeat_interval_ms": HB}
                if protocol == "classic"
                else {"group_protocol": "consumer", "session_timeout_ms": None, "heartbeat_interval_ms": None}
            )
            member = Member(name, bootstrap, group, [topic], log, commit_on_revoke=True, commit_each_batch=True,
                            **settings)
            side = groupcheck.KgroupSide(member.start(), log, topic)
        sides.append(side)
        current[slot] = side

    def settle(step: int, what: str, started: float) -> None:
        members = [current[s] for s in ("k1", "k2", "java")]
        wait_until(lambda: groupcheck.split_exactly(members, PARTITIONS) and all(map(consuming, members))
                   and at_group_epoch(admin, group), STEP_S,
                   f"step {step} ({what}) to settle:\n{groupcheck.describe(members)}", interval_s=0.1)
        print(f"\nstep {step} ({what}): settled in {time.monotonic() - started:.1f} s, "
              f"group type {group_type(admin, group)}")

    producer = groupcheck.ContinuousProducer(bootstrap, topic, PARTITIONS, interval_s=0.1).start()
    monitor = CommitMonitor(bootstrap, group).start()
    types: list[tuple[int, str | None]] = []
    try:
        try:
            started = time.monotonic()
            for slot in ("k1", "k2", "java"):
                launch(slot, "classic", 0)
            settle(0, "all classic", started)
            types.append((0, group_type(admin, group)))
            roll = [("k1", "consumer"), ("k2", "consumer"), ("java", "consumer"),
                    ("java", "classic"), ("k1", "classic"), ("k2", "classic")]
            for step, (slot, protocol) in enumerate(roll, start=1):
                started = time.monotonic()
                current[slot].stop()  # type: ignore[attr-defined]
                launch(slot, protocol, step)
                settle(step, f"{slot} -> {protocol}", started)
                types.append((step, group_type(admin, group)))
        except BaseException:
            producer.close()  # the failure above is the one to report, not a flush after it
            monitor.stop()
            raise
        produced = producer.stop()
        monitor.stop()
        wait_until(lambda: not set(produced) - set(groupcheck.consumed_offsets(sides)), STEP_S, "every record consumed")
    finally:
        for side in current.values():
            try:
                side.stop()  # type: ignore[attr-defined]
            except AssertionError:
                if isinstance(side, groupcheck.PeerSide):
                    side.peer.kill()
        admin.close()

    print("\n" + groupcheck.describe(sides))
    assert types == [(0, "classic"), (1, "consumer"), (2, "consumer"), (3, "consumer"),
                     (4, "consumer"), (5, "consumer"), (6, "classic")], types
    assert groupcheck.overlaps(sides) == [], groupcheck.describe(sides)
    for side in sides:
        assert groupcheck.consumed_outside_ownership(side) == [], groupcheck.describe(sides)
        # A Java peer that closes while a rebalance is under way (the others leaving at the end)
        # reports its partitions lost, not revoked: Java ``ConsumerCoordinator.onLeavePrepare``
        # does so whenever a rebalance is in progress. That is its own close, not a fencing.
        closing = min((c.t for c in side.changes() if c.kind == "closing"), default=float("inf"))
        fenced = [c for c in side.changes() if c.kind == "lost" and c.t < closing]
        assert fenced == [], groupcheck.describe(sides)
    assert not set(produced) - set(groupcheck.consumed_offsets(sides))
    assert monitor.backwards() == [], monitor.backwards()
    assert sum(len(seen) for seen in monitor.readings.values()) > 0, "the monitor read no commit"
    for side in sides:
        errors = side.errors()  # type: ignore[attr-defined]
        assert not errors, (side.name, errors)
    print(f"produced {len(produced)}, commit readings {sum(map(len, monitor.readings.values()))}, "
          f"monitor failures {monitor.failures}")
