"""The consumer group protocol (KIP-848) against Apache Kafka 4.4 itself: the wire, then the machine.

Apache Kafka is the only broker here that serves ConsumerGroupHeartbeat (API key 68), so every
test runs on it (``broker_kinds("apache-kafka")``; skipped with one line when Java or the jars
are missing: ``python -m kgroup.testing.apache_kafka fetch``).

1. The wire: kgroup's kafka-python classes sent with kafka-python's own network client
   (``KafkaNetClient``): FindCoordinator, then a member joins with epoch 0, gets an epoch, the
   heartbeat interval and an assignment of the topic it subscribed to; acknowledges it; a stale
   epoch and an unknown member get FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID; the member leaves
   with epoch -1.
2. The machine: two :class:`ConsumerGroupMachine` members, run by the driver loop of
   ``tests/integration/machine_driver.py`` (it executes their commands with the same client
   and plays the poll thread), share a 4-partition topic; one leaves, the other gets every
   partition. No partition is ever owned by both.

Run with ``-s`` to see the figures (time to the first assignment, the heartbeat interval the
broker gave, the time each rebalance took).
"""

from __future__ import annotations

import base64
import os
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.net.compat import KafkaNetClient

from kgroup._error_codes import FENCED_MEMBER_EPOCH, NONE, UNKNOWN_MEMBER_ID, UNRELEASED_INSTANCE_ID
from kgroup._io import kafka_messages as wire
from kgroup.config import ConsumerConfig
from kgroup.membership import commands as cmd
from kgroup.membership import consumer_group as cg
from kgroup.membership import events as ev
from kgroup.protocol.consumer_group_heartbeat import (
    CONSUMER_GROUP_HEARTBEAT,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicIdPartitions,
)
from kgroup.types import TopicPartition
from tests.integration.machine_driver import (
    COORDINATOR_ERRORS,
    DEADLINE_S,
    Driver,
    HeartbeatWire,
    Member,
    find_coordinator,
    numbers,
    topic_ids,
    wait_for,
)

pytestmark = pytest.mark.broker_kinds("apache-kafka")

#: Apache Kafka's default ``group.consumer.heartbeat.interval.ms`` (kgroup.testing does not change it)
BROKER_HEARTBEAT_INTERVAL_MS = 5000
CONSUMER_WIRE = HeartbeatWire(
    command=cmd.SendConsumerGroupHeartbeat,
    request_message=wire.heartbeat_request_message,
    response_value=wire.heartbeat_response_value,
    responded=ev.ConsumerGroupHeartbeatResponded,
    closed=cg.MemberState.CLOSED,
)


@pytest.fixture
def client(kafka_bootstrap: str) -> Iterator[KafkaNetClient]:
    net = KafkaNetClient(bootstrap_servers=kafka_bootstrap, client_id="kgroup-kip848-test")
    net.check_version()
    try:
        if CONSUMER_GROUP_HEARTBEAT not in (net._manager.broker_version_data.api_versions or {}):
            # an external broker (KGROUP_BOOTSTRAP_SERVERS) runs every test: Tansu and Kafka < 3.7 lack the API
            pytest.skip("the broker does not serve ConsumerGroupHeartbeat (API key 68)")
        yield net
    finally:
        net.close()


def heartbeat(
    client: KafkaNetClient, node: int, request: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse:
    return wire.heartbeat_response_value(client.send_and_receive(node, wire.heartbeat_request_message(request)))


def first_heartbeat(
    client: KafkaNetClient, group_id: str, request: ConsumerGroupHeartbeatRequest
) -> tuple[int, ConsumerGroupHeartbeatResponse]:
    """Send ``request`` to the group's coordinator, finding it again while it moves or loads (a fresh cluster)."""

    def probe() -> tuple[int, ConsumerGroupHeartbeatResponse] | None:
        node = find_coordinator(client, group_id)
        response = heartbeat(client, node, request)
        return None if response.error_code in COORDINATOR_ERRORS else (node, response)

    return wait_for(f"a coordinator for {group_id} that answers", probe)


def java_member_id() -> str:
    return base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")


# ==================================================================== 1. the wire


def test_consumer_group_heartbeat_on_apache_kafka(client: KafkaNetClient, topic_factory: Any,
                                                  group_id_factory: Any) -> None:
    served = client._manager.broker_version_data.api_versions[CONSUMER_GROUP_HEARTBEAT]
    assert served[0] <= 1 <= served[1], f"the broker serves ConsumerGroupHeartbeat v{served[0]}-{served[1]}"
    topic = topic_factory(4)
    group_id = group_id_factory()
    (topic_id,) = wait_for("the topic's id", lambda: topic_ids(client, [topic]) or None)
    member_id = java_member_id()
    join = ConsumerGroupHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=(topic,), topic_partitions=(),
    )
    first_heartbeat(client, group_id, ConsumerGroupHeartbeatRequest(  # a coordinator that answers
        group_id=group_id, member_id=java_member_id(), member_epoch=-1))
    node = find_coordinator(client, group_id)
    started = time.monotonic()
    joined = heartbeat(client, node, join)
    join_ms = (time.monotonic() - started) * 1000
    assert joined.error_code == NONE, joined
    assert joined.member_id == member_id  # v1: the member's own id (KIP-1082)
    assert joined.member_epoch > 0
    assert joined.heartbeat_interval_ms == BROKER_HEARTBEAT_INTERVAL_MS
    assert joined.assignment is not None  # a joining member always gets its (maybe empty) target
    # A topic created a moment ago may not be in the coordinator's metadata image yet: the join
    # then assigns nothing, and a later heartbeat brings the partitions. Acknowledge, heartbeat on.
    response, epoch, owned, beats = joined, joined.member_epoch, (), 1
    while not owned:
        if response.assignment is not None:
            owned = response.assignment
        if owned:
            break
        assert time.monotonic() - started < DEADLINE_S, "no assignment"
        time.sleep(0.2)  # the heartbeat period of this hand-driven member: not synchronisation
        response = heartbeat(client, node, ConsumerGroupHeartbeatRequest(
            group_id=group_id, member_id=member_id, member_epoch=epoch, topic_partitions=owned))
        assert response.error_code == NONE, response
        epoch, beats = response.member_epoch, beats + 1
    first_assignment_ms = (time.monotonic() - started) * 1000
    print(f"\njoin: answered in {join_ms:.0f} ms (epoch {joined.member_epoch}, heartbeat interval "
          f"{joined.heartbeat_interval_ms} ms, assignment {joined.assignment}); first partitions after "
          f"{first_assignment_ms:.0f} ms and {beats} heartbeats, at epoch {epoch}")
    assert owned == (TopicIdPartitions(topic_id, (0, 1, 2, 3)),)

    # acknowledge the assignment; the next heartbeat has nothing new
    acked = heartbeat(client, node, ConsumerGroupHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=epoch, topic_partitions=owned,
    ))
    assert (acked.error_code, acked.member_epoch, acked.assignment) == (NONE, epoch, None)
    joined = acked

    # an epoch the coordinator does not know is fenced; an unknown member too
    fenced = heartbeat(client, node, ConsumerGroupHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=joined.member_epoch + 5))
    assert fenced.error_code == FENCED_MEMBER_EPOCH, fenced
    stranger = heartbeat(client, node, ConsumerGroupHeartbeatRequest(
        group_id=group_id, member_id=java_member_id(), member_epoch=1))
    assert stranger.error_code == UNKNOWN_MEMBER_ID, stranger
    print(f"errors: {fenced.error_message!r}; {stranger.error_message!r}")

    left = heartbeat(client, node, ConsumerGroupHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=-1))
    assert (left.error_code, left.member_epoch) == (NONE, -1), left


def test_static_membership_on_apache_kafka(client: KafkaNetClient, topic_factory: Any, group_id_factory: Any) -> None:
    """A held ``group.instance.id`` is refused (UNRELEASED_INSTANCE_ID); after epoch -2 the next process gets it."""
    topic = topic_factory(2)
    group_id = group_id_factory()
    wait_for("the topic's id", lambda: topic_ids(client, [topic]) or None)
    first_heartbeat(client, group_id, ConsumerGroupHeartbeatRequest(  # a coordinator that answers
        group_id=group_id, member_id=java_member_id(), member_epoch=-1))
    node = find_coordinator(client, group_id)

    def join(member_id: str) -> ConsumerGroupHeartbeatResponse:
        return heartbeat(client, node, ConsumerGroupHeartbeatRequest(
            group_id=group_id, member_id=member_id, member_epoch=0, instance_id="pod-0",
            rebalance_timeout_ms=30000, subscribed_topic_names=(topic,), topic_partitions=()))

    first, second = java_member_id(), java_member_id()
    joined = join(first)
    assert joined.error_code == NONE, joined
    epoch, owned = joined.member_epoch, joined.assignment or ()
    while not owned:  # the topic may reach the coordinator's metadata a moment later
        time.sleep(0.2)  # the heartbeat period of this hand-driven member: not synchronisation
        response = heartbeat(client, node, ConsumerGroupHeartbeatRequest(
            group_id=group_id, member_id=first, member_epoch=epoch, instance_id="pod-0", topic_partitions=owned))
        assert response.error_code == NONE, response
        epoch, owned = response.member_epoch, response.assignment or owned
    heartbeat(client, node, ConsumerGroupHeartbeatRequest(
        group_id=group_id, member_id=first, member_epoch=epoch, instance_id="pod-0", topic_partitions=owned))

    refused = join(second)
    assert refused.error_code == UNRELEASED_INSTANCE_ID, refused
    left = heartbeat(client, node, ConsumerGroupHeartbeatRequest(
        group_id=group_id, member_id=first, member_epoch=-2, instance_id="pod-0"))
    assert (left.error_code, left.member_epoch) == (NONE, -2), left
    replaced = join(second)
    print(f"\nstatic: refused with {refused.error_message!r}; after -2 the new member got {replaced.assignment} "
          f"at epoch {replaced.member_epoch} (the old one had {owned} at epoch {epoch})")
    assert replaced.error_code == NONE, replaced
    assert replaced.assignment == owned  # the assignment stayed with the instance id


# ==================================================================== 2. the machine


def member(name: str, group_id: str, seed: int) -> Member:
    config = ConsumerConfig(bootstrap_servers="unused:9092", group_id=group_id, max_poll_interval_ms=60000)
    return Member(name, group_id, cg.ConsumerGroupMachine(config, rng=random.Random(seed)))


def test_two_members_share_a_topic_then_one_leaves(client: KafkaNetClient, topic_factory: Any,
                                                    group_id_factory: Any) -> None:
    topic = topic_factory(4)
    group_id = group_id_factory()
    everything = frozenset(TopicPartition(topic, p) for p in range(4))
    driver = Driver(client, [topic], CONSUMER_WIRE, exclusive=True)  # no partition ever owned by both
    a, b = member("a", group_id, seed=1), member("b", group_id, seed=2)

    driver.feed(a, ev.Subscribe(frozenset({topic})))
    took = driver.run_until("a owns every partition", [a],
                            lambda: a.owned == everything and a.machine.state is cg.MemberState.STABLE)
    print(f"\na joined: {took * 1000:.0f} ms to own all 4 partitions, epoch {a.machine.member_epoch}, "
          f"heartbeat interval {a.machine.heartbeat_interval_ms} ms")
    assert a.machine.heartbeat_interval_ms == BROKER_HEARTBEAT_INTERVAL_MS
    assert a.steps[-1].assigned == everything and a.steps[-1].commit

    driver.feed(b, ev.Subscribe(frozenset({topic})))
    took = driver.run_until(
        "a and b own two partitions each", [a, b],
        lambda: len(a.owned) == 2 and len(b.owned) == 2
        and a.machine.state is cg.MemberState.STABLE and b.machine.state is cg.MemberState.STABLE,
    )
    print(f"b joined: {took * 1000:.0f} ms until a revoked two and b owned them: a {numbers(a.owned)}, "
          f"b {numbers(b.owned)}")
    assert a.owned | b.owned == everything
    revoke = next(s for s in a.steps if s.revoked)
    assert revoke.revoked == b.owned and not revoke.assigned  # a revoked first, then b got them

    driver.feed(b, ev.Leave("scaling down"))
    took = driver.run_until("b left and a owns everything", [a, b],
                            lambda: b.machine.state is cg.MemberState.CLOSED and a.owned == everything
                            and a.machine.state is cg.MemberState.STABLE)
    print(f"b left: {took * 1000:.0f} ms until a owned all 4 again (epoch {a.machine.member_epoch})")
    assert b.steps[-1].revoked and b.owned == frozenset()

    driver.feed(a, ev.Leave())
    driver.run_until("a closed", [a], lambda: a.machine.state is cg.MemberState.CLOSED)
