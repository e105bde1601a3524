"""Interop with Apache Kafka's own consumer, on Apache Kafka's own group coordinator.

kgroup ``Consumer`` members and Java ``org.apache.kafka.clients.consumer.KafkaConsumer``
members (``tests/peers/JavaPeer.java``, ``group.protocol=classic``; kafka-python and
confluent-kafka members too, as third members) in one group on the session's Apache Kafka
4.4.0 KRaft broker (``kafka_brokers.get("apache-kafka")``, Kafka's default settings: an empty
group's first join waits ``group.initial.rebalance.delay.ms`` 3 s). The clients talk to the
broker directly: the
coordinator is Kafka's ``GroupCoordinator`` for classic groups, no model in between. Whether a
group has settled is read with DescribeGroups (Java ``Admin.describeConsumerGroups``; here
``kgroup.admin.GroupAdmin``): Stable, exactly the expected members (by ``client.id``), each
holding exactly the partitions the coordinator's last assignment gave it, every partition
once.

Scenarios:

================================  ===========================================================
eager range (2)                   Java leads kgroup + kafka-python; kgroup leads Java +
                                  confluent. Members join one at a time, then the first
                                  member (the leader: Kafka's first joiner leads and keeps the
                                  lead while it stays) leaves
cooperative-sticky (2)            the same with Java's ``CooperativeStickyAssignor`` and
                                  kgroup's ``cooperative-sticky`` (KIP-429), each leading once
static membership (1)             a Java static member and a kgroup static member
                                  (KIP-345) each restart within the session timeout: the same
                                  partitions and the same generation come back, the other
                                  member sees no callback
online migration (1)              two kgroup and two Java members roll from ``range`` to
                                  ``cooperative-sticky, range`` and then to
                                  ``cooperative-sticky`` (KIP-429's two bounces)
================================  ===========================================================

Checked from listener timestamps (``groupcheck``, both clocks CLOCK_MONOTONIC): no partition
has two owners at any instant; no member hands out a record of a partition it does not own;
every record produced all along (``groupcheck.ContinuousProducer``) is consumed; nobody loses
partitions (``onPartitionsLost``); the assignor the coordinator chose (DescribeGroups'
protocol, Java's ``ConsumerPartitionAssignor.onAssignment``, kgroup's join log); eager members
revoke everything, cooperative ones only what moves.

Skipped with one line when Java or the Apache Kafka jars are missing (get them with
``python -m kgroup.testing.apache_kafka fetch``); with ``KGROUP_REQUIRE_APACHE_KAFKA=1`` that
fails instead. No fixed sleeps: every wait is a condition with a deadline.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kgroup.admin import AdminError, GroupAdmin
from kgroup.testing import BrokerHandle, create_topic
from kgroup.testing.pytest_plugin import BrokerPool
from kgroup.types import RebalanceProtocol
from tests.integration.groupcheck import (
    ContinuousProducer,
    KgroupSide,
    PeerSide,
    Side,
    consumed_offsets,
    consumed_outside_ownership,
    describe,
    moved_away,
    overlaps,
    ownership_gaps,
    revocations,
    split_exactly,
)
from tests.integration.harness import EventLog, Member, wait_until
from tests.integration.peers import Peer

ST = 6000  # session.timeout.ms: Kafka's group.min.session.timeout.ms
HB = 1000
MPI = 30000
SPLIT_S = 60.0  # to settle: JVM start (~3 s) plus the join barrier, on a busy 2-core machine
STATIC_ST = 15000  # the static restarts: a JVM restart and its rejoin fit well inside
MAX_UNOWNED_S = 15.0
JOIN_LOG = re.compile(r"joined generation (\d+) as '([^']*)' \((leader|follower)\), protocol (\S+)")


# --------------------------------------------------------------------------- the broker


@pytest.fixture(scope="module")
def apache_broker(kafka_brokers: BrokerPool) -> BrokerHandle:
    """The session's Apache Kafka 4.4.0 broker (kgroup's pytest plugin starts it on first use;
    skip, or fail with ``KGROUP_REQUIRE_APACHE_KAFKA=1``, when Java or the jars are missing)."""
    return kafka_brokers.get("apache-kafka")


@pytest.fixture(scope="module")
def admin(apache_broker: BrokerHandle) -> Iterator[GroupAdmin]:
    with GroupAdmin.connect(apache_broker.bootstrap_servers, timeout_ms=10000) as a:
        yield a


@pytest.fixture
def names(request: pytest.FixtureRequest) -> tuple[str, str]:
    """A fresh (topic, group) pair named after the test."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", request.node.name)[:60]
    tag = uuid.uuid4().hex[:10]
    return f"t-{base}-{tag}", f"g-{base}-{tag}"


# --------------------------------------------------------------------------- helpers


class Described:
    """DescribeGroups samples of one group: the protocol each time it had settled."""

    def __init__(self, admin: GroupAdmin, group: str) -> None:
        self.admin = admin
        self.group = group
        self.protocols: list[str] = []
        #: side name -> group.instance.id, for static members: a static member that replaced
        #: another keeps the first one's client.id at the coordinator (Kafka's
        #: ClassicGroup.replaceStaticMember copies clientId and clientHost)
        self.instances: dict[str, str] = {}

    def settled(self, members: Sequence[Side], partitions: int) -> bool:
        """Stable with exactly ``members`` (by client.id = side name, static ones by
        group.instance.id), each owning what the coordinator assigned it, every partition once."""
        if not split_exactly(members, partitions):
            return False
        try:
            d = self.admin.describe_group(self.group, timeout_ms=5000)
        except AdminError:
            return False
        if d.state != "Stable" or len(d.members) != len(members):
            return False
        for side in members:
            instance = self.instances.get(side.name)
            mine = [m for m in d.members
                    if (m.group_instance_id == instance if instance else m.client_id == side.name)]
            if len(mine) != 1 or frozenset(tp.partition for tp in mine[0].assignment) != side.owned():
                return False
        self.protocols.append(d.protocol)
        return True

    def wait(self, members: Sequence[Side], partitions: int, timeout_s: float = SPLIT_S) -> None:
        try:
            wait_until(lambda: self.settled(members, partitions), timeout_s,
                       f"the group to settle on {list(members)}:\n{describe(members)}", interval_s=0.2)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.diagnosis(members)}") from None

    def diagnosis(self, members: Sequence[Side]) -> str:
        lines = []
        try:
            d = self.admin.describe_group(self.group, timeout_ms=5000)
            lines.append(f"DescribeGroups: {d.state} {d.protocol} " + "; ".join(
                f"{m.client_id}/{m.group_instance_id}: {[tp.partition for tp in m.assignment]}" for m in d.members))
        except AdminError as exc:
            lines.append(f"DescribeGroups failed: {exc}")
        for side in members:
            if isinstance(side, PeerSide):
                lines.append(f"{side.name} exit {side.peer.proc.poll()}, events {side.peer.events[-8:]}")
                if LOG_DIR and (LOG_DIR[0] / f"{side.name}.log").exists():
                    tail = (LOG_DIR[0] / f"{side.name}.log").read_text(errors="replace")[-3000:]
                    lines.append(f"{side.name} stderr: {tail}")
        return "\n".join(lines)


def kgroup_joins(caplog: pytest.LogCaptureFixture, name: str) -> list[tuple[int, bool, str]]:
    """(generation, led, protocol) of every join of the kgroup member ``name`` (its join log)."""
    out = []
    for r in caplog.records:
        m = JOIN_LOG.search(r.getMessage())
        if m and m.group(2).startswith(name + "-"):
            out.append((int(m.group(1)), m.group(3) == "leader", m.group(4)))
    return out


def new_group(apache_broker: BrokerHandle, admin: GroupAdmin, names: tuple[str, str], partitions: int,
              caplog: pytest.LogCaptureFixture) -> tuple[str, str, str, EventLog, Described]:
    """The test's topic (created with ``partitions``) and group, the bootstrap servers, an event log and
    the group's :class:`Described`; kgroup's join lines (INFO) captured."""
    caplog.set_level(logging.INFO, logger="kgroup.membership.machine")
    topic, group = names
    boot = apache_broker.bootstrap_servers
    create_topic(boot, topic, partitions)
    return topic, group, boot, EventLog(), Described(admin, group)


def java_led(side: Side, members: int | None = None) -> bool:
    """The Java peer's assignor planned the group (of ``members`` members, if given)."""
    assert isinstance(side, PeerSide)
    return any(members is None or e["members"] == members for e in side.peer.of("leader"))


LOG_DIR: list[Path] = []  # where the Java peers' stderr goes (the running test's tmp_path)


@pytest.fixture(autouse=True)
def peer_logs(tmp_path: Path) -> Iterator[None]:
    LOG_DIR[:] = [tmp_path]
    yield
    LOG_DIR.clear()


def start(kind: str, name: str, strategy: str, bootstrap: str, group: str, topic: str, log: EventLog,
          *, instance_id: str | None = None, session_timeout_ms: int = ST, described: Described | None = None) -> Side:
    if instance_id and described is not None:
        described.instances[name] = instance_id
    if kind == "kgroup":
        assignors = tuple(s for s in strategy.split(","))
        member = Member(
            name, bootstrap, group, [topic], log, commit_on_revoke=True, commit_each_batch=True,
            assignors=assignors, session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=HB,
            max_poll_interval_ms=MPI, group_instance_id=instance_id,
        )
        return KgroupSide(member.start(), log, topic)
    peer = Peer(
        kind, bootstrap, group, topic, strategy=strategy, session_timeout_ms=session_timeout_ms,
        heartbeat_interval_ms=HB, max_poll_interval_ms=MPI, name=name, client_id=name, instance_id=instance_id,
        record=True, commit=True, log_path=LOG_DIR[0] / f"{name}.log" if LOG_DIR else None,
    )
    return PeerSide(peer, topic)


def errors_of(side: Side) -> list[Any]:
    errors = side.errors()  # type: ignore[attr-defined]
    return list(errors)


def common_checks(everyone: Sequence[Side], produced: list[tuple[int, int]]) -> None:
    assert overlaps(everyone) == [], describe(everyone)
    for side in everyone:
        assert consumed_outside_ownership(side) == [], describe(everyone)
        assert [c for c in side.changes() if c.kind == "lost"] == [], f"{side.name} lost partitions"
    missing = set(produced) - set(consumed_offsets(everyone))
    assert not missing, f"{len(missing)} of {len(produced)} produced records never consumed: {sorted(missing)[:10]}"
    for side in everyone:
        if isinstance(side, KgroupSide) or side.name.startswith("java"):
            assert errors_of(side) == [], (side.name, errors_of(side))


# --------------------------------------------------------------------------- mixed groups

PARTITIONS = 6
MIXED = [
    pytest.param("range", ("java", "kgroup", "kafka-python"), id="range-java_leads"),
    pytest.param("range", ("kgroup", "java", "confluent"), id="range-kgroup_leads"),
    pytest.param("cooperative-sticky", ("java", "kgroup", "confluent"), id="cooperative_sticky-java_leads"),
    pytest.param("cooperative-sticky", ("kgroup", "java", "kafka-python"), id="cooperative_sticky-kgroup_leads"),
]


@pytest.mark.parametrize(("protocol", "order"), MIXED)
def test_kgroup_and_java_in_one_group_keep_partitions_exclusive_and_lose_no_record(
    protocol, order, apache_broker, admin, names, sides, caplog
):
    topic, group, boot, log, described = new_group(apache_broker, admin, names, PARTITIONS, caplog)
    producer = ContinuousProducer(boot, topic, PARTITIONS, interval_s=0.1).start()
    try:
        members: list[Side] = []
        for kind in order:
            side = start(kind, kind.replace("-", ""), protocol, boot, group, topic, log)
            sides.append(side)
            members.append(side)
            described.wait(members, PARTITIONS)
        first, second, third = members
        # Kafka's first joiner leads, and keeps the lead while it rejoins every rebalance
        if first.name == "java":
            assert java_led(first, 3), f"java did not plan the group of three: {first.peer.events}"
        else:
            joins = kgroup_joins(caplog, first.name)
            assert joins and all(led for _, led, _ in joins), joins
            assert not java_led(second), "java planned while kgroup led"
        first.stop()  # type: ignore[attr-defined]  # the leader leaves: leadership passes
        described.wait([second, third], PARTITIONS)
    finally:
        produced = producer.stop()
    everyone = [first, second, third]
    wait_until(lambda: not set(produced) - set(consumed_offsets(everyone)), SPLIT_S, "every record consumed")
    for side in (second, third):
        side.stop()  # type: ignore[attr-defined]

    # who planned the group of two: a Java "leader" event, a kgroup leader join, else the Python peer
    new_leader = next((s.name for s in (second, third) if isinstance(s, PeerSide) and s.name == "java"
                       and java_led(s, 2)), None)
    if new_leader is None:
        new_leader = next((s.name for s in (second, third) if isinstance(s, KgroupSide)
                           and any(led for _, led, _ in kgroup_joins(caplog, s.name))), third.name)
    # the assignor the coordinator chose, every time, as every client saw it
    assert set(described.protocols) == {protocol}, described.protocols
    for side in everyone:
        if isinstance(side, KgroupSide):
            assert {p for _, _, p in kgroup_joins(caplog, side.name)} == {protocol}
            expected = RebalanceProtocol.COOPERATIVE if protocol == "cooperative-sticky" else RebalanceProtocol.EAGER
            assert side.member.consumer.config.protocol is expected
        elif side.name == "java":
            assert {e["assignor"] for e in side.peer.of("assignment")} == {protocol}
    common_checks(everyone, produced)
    for side in everyone:
        assert side.consumed(), f"{side.name} consumed nothing: {describe(everyone)}"
    if protocol == "cooperative-sticky":  # KIP-429: only what moves is revoked
        for side in everyone:
            assert moved_away(side, everyone) == [], describe(everyone)
    else:  # eager: everybody revokes everything, also what comes back
        for side in everyone:
            for change, held in revocations(side):
                assert change.partitions == held, (side.name, change, held)
    print(f"{protocol} {order}: {len(produced)} records; after {first.name} left, {new_leader} planned")


# --------------------------------------------------------------------------- static membership


def test_java_and_kgroup_static_members_restart_without_a_rebalance(apache_broker, admin, names, sides, caplog):
    partitions = 4
    topic, group, boot, log, described = new_group(apache_broker, admin, names, partitions, caplog)

    def static(kind: str, name: str, *others: Side) -> Side:
        """A static member of ``kind`` (instance id ``<group>-<kind>``) joins ``others``; the group settles."""
        side = start(kind, name, "range", boot, group, topic, log, instance_id=f"{group}-{kind}",
                     session_timeout_ms=STATIC_ST, described=described)
        sides.append(side)
        described.wait([*others, side], partitions)
        return side

    producer = ContinuousProducer(boot, topic, partitions, interval_s=0.1).start()
    try:
        java = static("java", "java-a")
        kg = static("kgroup", "kgroup-a", java)
        assert isinstance(java, PeerSide) and isinstance(kg, KgroupSide)
        java_owned, kg_owned = java.owned(), kg.owned()
        generation = kg.member.consumer.group_metadata().generation_id
        assert java.peer.generation() == generation

        # 1. the Java static member restarts: close() sends no LeaveGroup (KIP-345), the new
        #    process rejoins with the same group.instance.id before session.timeout.ms
        kg_changes = len(kg.changes())
        java.stop()
        java_b = static("java", "java-b", kg)
        assert isinstance(java_b, PeerSide)
        assert java_b.owned() == java_owned
        assert java_b.peer.generation() == generation, "the Java restart caused a rebalance"
        assert len(kg.changes()) == kg_changes, f"kgroup saw callbacks: {describe([kg])}"
        assert kg.member.consumer.group_metadata().generation_id == generation

        # 2. the kgroup static member restarts the same way
        java_changes = len(java_b.changes())
        kg.stop()
        kg_b = static("kgroup", "kgroup-b", java_b)
        assert isinstance(kg_b, KgroupSide)
        assert kg_b.owned() == kg_owned
        assert kg_b.member.consumer.group_metadata().generation_id == generation, "the kgroup restart rebalanced"
        assert len(java_b.changes()) == java_changes, f"java saw callbacks: {describe([java_b])}"
        assert java_b.peer.generation() == generation
    finally:
        produced = producer.stop()
    everyone = [java, kg, java_b, kg_b]
    wait_until(lambda: not set(produced) - set(consumed_offsets(everyone)), SPLIT_S, "every record consumed")
    common_checks(everyone, produced)
    assert set(described.protocols) == {"range"}
    print(f"static: generation {generation} throughout, {len(produced)} records")


# --------------------------------------------------------------------------- online migration

MIGRATION_PARTITIONS = 8
STEPS = {1: "range", 2: "cooperative-sticky,range", 3: "cooperative-sticky"}
SLOTS = {1: "kgroup", 2: "java", 3: "kgroup", 4: "java"}


def test_online_migration_from_range_to_cooperative_sticky_with_java_members(
    apache_broker, admin, names, sides, caplog
):
    """KIP-429's upgrade path with two kgroup and two Java members rolled one at a time.

    Java's ``ConsumerCoordinator`` runs the highest ``RebalanceProtocol`` all of a member's
    assignors support (EAGER while ``range`` is listed), as kgroup does; the coordinator
    chooses the assignor every member lists, by vote: ``range`` until the last range-only
    member leaves, ``cooperative-sticky`` after.
    """
    topic, group, boot, log, described = new_group(apache_broker, admin, names, MIGRATION_PARTITIONS, caplog)
    step_of: dict[str, int] = {}
    current: dict[int, Side] = {}
    phases: list[tuple[str, int]] = []  # (label, len(described.protocols) at that point)

    def launch(slot: int, step: int) -> None:
        kind = SLOTS[slot]
        side = start(kind, f"{kind}{slot}v{step}", STEPS[step], boot, group, topic, log)
        sides.append(side)
        step_of[side.name] = step
        current[slot] = side

    def split() -> None:
        described.wait([current[s] for s in sorted(current)], MIGRATION_PARTITIONS)

    producer = ContinuousProducer(boot, topic, MIGRATION_PARTITIONS, interval_s=0.1).start()
    try:
        for slot in SLOTS:
            launch(slot, 1)
            split()
        for step in (2, 3):
            for slot in SLOTS:
                current.pop(slot).stop()  # type: ignore[attr-defined]
                if step == 2 and slot == max(SLOTS):
                    phases.append(("last range-only member left", len(described.protocols)))
                split()
                launch(slot, step)
                split()
            phases.append((f"roll {step - 1} done", len(described.protocols)))
    finally:
        produced = producer.stop()
    wait_until(lambda: not set(produced) - set(consumed_offsets(sides)), SPLIT_S, "every record consumed")
    for side in list(current.values()):
        side.stop()  # type: ignore[attr-defined]

    # the assignor the coordinator chose, phase by phase (DescribeGroups when settled)
    cut = dict(phases)["last range-only member left"]
    assert set(described.protocols[:cut]) == {"range"}, described.protocols
    assert set(described.protocols[cut:]) == {"cooperative-sticky"}, described.protocols
    for side in sides:
        if isinstance(side, PeerSide) and step_of[side.name] == 3:
            assert {e["assignor"] for e in side.peer.of("assignment")} == {"cooperative-sticky"}

    common_checks(sides, produced)
    gaps = ownership_gaps(sides, MIGRATION_PARTITIONS)
    assert max(gaps.values()) < MAX_UNOWNED_S, (gaps, describe(sides))
    # EAGER members (range listed) revoke everything they own; COOPERATIVE ones only what moves
    partial = 0
    for side in sides:
        if step_of[side.name] < 3:
            for change, held in revocations(side):
                assert change.partitions == held, (side.name, change, held)
        else:
            assert moved_away(side, sides) == [], describe(sides)
            partial += sum(1 for change, held in revocations(side) if change.partitions and change.partitions < held)
    assert partial >= 2, describe(sides)  # the last joiner took partitions from members that kept the rest
    kinds = {type(s).__name__ for s in sides if step_of[s.name] == 3 and any(
        c.partitions and c.partitions < h for c, h in revocations(s))}
    print(f"migration: protocols {described.protocols}; incremental revokes by {sorted(kinds)}; "
          f"{len(produced)} records; max unowned {max(gaps.values()):.2f} s")
