"""Share groups (KIP-932) against Apache Kafka 4.4 itself: two ShareGroupMachine members on the real coordinator.

Apache Kafka 4.4 serves ShareGroupHeartbeat (API key 76) v1 with kgroup.testing's settings as
they are: a cluster formatted at 4.4's metadata version has the ``share.version`` feature
(docs/share-groups.md), so the test runs on ``broker_kinds("apache-kafka")`` (skipped with one
line when Java or the jars are missing: ``python -m kgroup.testing.apache_kafka fetch``).

Two :class:`ShareGroupMachine` members, run by the driver loop of ``tests/integration/machine_driver.py`` (it
executes their commands with kafka-python's client and plays their poll threads), join one share group on a
3-partition topic: both get assignments by topic id that together cover every partition (a
share group may give a partition to several members); one leaves with epoch -1 and the other
ends up with every partition.

Run with ``-s`` to see the figures.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.net.compat import KafkaNetClient

from kgroup._io import kafka_messages as wire
from kgroup.config import ConsumerConfig
from kgroup.membership import events as ev
from kgroup.membership.share_group import (
    SendShareGroupHeartbeat,
    ShareGroupHeartbeatResponded,
    ShareGroupMachine,
    ShareMemberState,
)
from kgroup.protocol.share_group_heartbeat import SHARE_GROUP_HEARTBEAT
from kgroup.types import TopicPartition
from tests.integration.machine_driver import Driver, HeartbeatWire, Member, numbers

pytestmark = pytest.mark.broker_kinds("apache-kafka")

#: Apache Kafka's default ``group.share.heartbeat.interval.ms`` (kgroup.testing does not change it)
BROKER_HEARTBEAT_INTERVAL_MS = 5000


@pytest.fixture
def share_client(kafka_bootstrap: str, broker_kind: str) -> Iterator[KafkaNetClient]:
    net = KafkaNetClient(bootstrap_servers=kafka_bootstrap, client_id="kgroup-share-test")
    net.check_version()
    try:
        served = (net._manager.broker_version_data.api_versions or {}).get(SHARE_GROUP_HEARTBEAT)
        missing = served is None or served[1] < 1
        # kgroup.testing's own Apache Kafka must serve it (docs/share-groups.md); an external
        # cluster (KGROUP_BOOTSTRAP_SERVERS) may predate share groups
        assert not (missing and broker_kind == "apache-kafka"), f"ShareGroupHeartbeat versions served: {served}"
        if missing:
            pytest.skip("the broker does not serve ShareGroupHeartbeat v1 (API key 76, Kafka 4.1+ with share.version)")
        yield net
    finally:
        net.close()


SHARE_WIRE = HeartbeatWire(
    command=SendShareGroupHeartbeat,
    request_message=wire.share_heartbeat_request_message,
    response_value=wire.share_heartbeat_response_value,
    responded=ShareGroupHeartbeatResponded,
    closed=ShareMemberState.CLOSED,
)


def member(name: str, group_id: str, seed: int) -> Member:
    config = ConsumerConfig(bootstrap_servers="unused:9092", group_id=group_id)
    return Member(name, group_id, ShareGroupMachine(config, rng=random.Random(seed)))


def test_two_members_share_a_topic_then_one_leaves(share_client: KafkaNetClient, topic_factory: Any,
                                                    group_id_factory: Any) -> None:
    topic = topic_factory(3)
    group_id = group_id_factory()
    everything = frozenset(TopicPartition(topic, p) for p in range(3))
    driver = Driver(share_client, [topic], SHARE_WIRE, exclusive=False)  # a share group may give a partition to several
    a, b = member("a", group_id, seed=1), member("b", group_id, seed=2)
    stable = ShareMemberState.STABLE

    driver.feed(a, ev.Subscribe(frozenset({topic})))
    took = driver.run_until("a has every partition", [a], lambda: a.owned == everything and a.machine.state is stable)
    print(f"\na joined: {took * 1000:.0f} ms to have all 3 partitions, epoch {a.machine.member_epoch}, "
          f"heartbeat interval {a.machine.heartbeat_interval_ms} ms")
    join = a.sent[0]
    assert (join.member_epoch, join.subscribed_topic_names, join.member_id) == (0, (topic,), a.machine.member_id)
    assert a.machine.heartbeat_interval_ms == BROKER_HEARTBEAT_INTERVAL_MS
    assert a.machine.member_epoch > 0
    assert a.steps[-1].assigned == everything and not a.steps[-1].commit

    driver.feed(b, ev.Subscribe(frozenset({topic})))
    took = driver.run_until(
        "a and b both have partitions, together all of them", [a, b],
        lambda: bool(a.owned) and bool(b.owned) and a.owned | b.owned == everything
        and a.machine.state is stable and b.machine.state is stable
        and a.owned != everything,  # a heard of b's arrival
    )
    print(f"b joined: {took * 1000:.0f} ms until both had partitions: a {numbers(a.owned)}, b {numbers(b.owned)}")
    assert a.machine.member_id != b.machine.member_id

    driver.feed(b, ev.Leave("scaling down"))
    took = driver.run_until("b left and a has everything", [a, b],
                            lambda: b.machine.state is ShareMemberState.CLOSED and a.owned == everything
                            and a.machine.state is stable)
    print(f"b left: {took * 1000:.0f} ms until a had all 3 again (epoch {a.machine.member_epoch})")
    assert b.sent[-1].member_epoch == -1 and b.owned == frozenset()
    assert b.steps[-1].revoked and not b.steps[-1].commit

    driver.feed(a, ev.Leave())
    driver.run_until("a closed", [a], lambda: a.machine.state is ShareMemberState.CLOSED)
