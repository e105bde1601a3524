"""Partitions added to a subscribed topic, and a subscribed topic created later, reach the group.

The leader keeps the partition counts it assigned; every ``metadata_max_age_ms`` the group
thread refreshes the subscribed topics' metadata and the leader rejoins when a count changed
(Java ``ConsumerCoordinator.rejoinNeededOrPending``: the assignment snapshot no longer matches
the metadata snapshot). On Apache Kafka's own coordinator (``[apache-kafka]``) and through the
coordinator proxy in front of the embedded Tansu (``[tansu]``; Kafka's join barrier): either way
the members' generation moves on, and through the model the rebalance's reason is checked too.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient, NewPartitions

import kgroup
import kgroup.testing
from kgroup import TopicPartition
from kgroup.testing import create_topic
from tests.integration.groupcheck import is_model
from tests.integration.harness import BOTH, wait_until

pytestmark = BOTH

NO_CREATE_PARTITIONS = "CreatePartitions is not supported (kafka-python: IncompatibleBrokerVersion)"


def group_of_two(bootstrap: str, group: str, topics: list[str]) -> list[kgroup.Consumer]:
    members = [
        kgroup.Consumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=f"m{i}",
            session_timeout_ms=6000, heartbeat_interval_ms=500, metadata_max_age_ms=1000,
            auto_offset_reset="earliest",
        )
        for i in range(2)
    ]
    for m in members:
        m.subscribe(topics)
    return members


def wait_owned(members: list[kgroup.Consumer], expected: set[TopicPartition], what: str) -> float:
    start = time.monotonic()
    while True:
        owned: set[TopicPartition] = set()
        for m in members:
            m.poll(50)
            owned |= m.assignment()
        if owned == expected:
            return time.monotonic() - start
        assert time.monotonic() - start < 30, f"{what}: owned {sorted(owned)}"


def change_and_wait(cluster, group: str, members: list[kgroup.Consumer], change: Callable[[], None],
                    expected: set[TopicPartition]) -> None:
    generations = {m.group_metadata().generation_id for m in members}
    before = len([e for e in cluster.model_events(group) if e.kind == "rebalance_started"]) if is_model(cluster) else 0
    change()
    waited = wait_owned(members, expected, "after the change")
    print(f"\nnew partitions assigned {waited:.2f} s after the change (metadata_max_age_ms=1000)")
    assert min(m.group_metadata().generation_id for m in members) > max(generations), "no new generation"
    if is_model(cluster):
        after = [e for e in cluster.model_events(group) if e.kind == "rebalance_started"]
        assert len(after) > before, "no rebalance was started"
        assert "metadata changed" in after[-1].detail


def test_a_subscribed_topic_created_later_is_assigned(group_coordinator, kafka_bootstrap, topic_factory,
                                                     group_id_factory):
    topic = topic_factory(2)
    later = f"later-{uuid.uuid4().hex[:8]}"
    group = group_id_factory()
    members = group_of_two(group_coordinator.bootstrap_servers, group, [topic, later])
    try:
        wait_owned(members, {TopicPartition(topic, p) for p in range(2)}, "before the change")
        change_and_wait(
            group_coordinator, group, members, lambda: create_topic(kafka_bootstrap, later, 3),
            {TopicPartition(topic, p) for p in range(2)} | {TopicPartition(later, p) for p in range(3)},
        )
    finally:
        for m in members:
            m.close(timeout_ms=5000)


@pytest.mark.tansu_deviation(NO_CREATE_PARTITIONS)
def test_added_partitions_are_assigned(group_coordinator, kafka_bootstrap, topic_factory, group_id_factory):
    topic = topic_factory(2)
    group = group_id_factory()
    members = group_of_two(group_coordinator.bootstrap_servers, group, [topic])

    def add_partitions() -> None:
        admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        try:
            admin.create_partitions({topic: NewPartitions(total_count=4)})
        finally:
            admin.close()

    try:
        wait_owned(members, {TopicPartition(topic, p) for p in range(2)}, "before the change")
        change_and_wait(group_coordinator, group, members, add_partitions, {TopicPartition(topic, p) for p in range(4)})
    finally:
        for m in members:
            m.close(timeout_ms=5000)


def _join_in_order(
    bootstrap: str, group: str, subscriptions: list[list[str]], **config: object
) -> list[kgroup.Consumer]:
    """Members that join one after the other (the first is the leader under the classic protocol)."""
    members: list[kgroup.Consumer] = []
    for i, topics in enumerate(subscriptions):
        timers = {} if config.get("group_protocol") == "consumer" else {
            "session_timeout_ms": 6000, "heartbeat_interval_ms": 500}  # the broker's under KIP-848
        member = kgroup.Consumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=f"m{i}", metadata_max_age_ms=1000,
            auto_offset_reset="earliest", **timers, **config,
        )
        member.subscribe(topics)
        members.append(member)
        start = time.monotonic()
        while not all(m.group_metadata().generation_id > 0 for m in members):
            for m in members:
                m.poll(50)
            assert time.monotonic() - start < 60, f"member {i} did not join"
    return members


def test_a_topic_only_a_follower_subscribes_to_is_assigned_once_created(
    group_coordinator, kafka_bootstrap, topic_factory, group_id_factory
):
    """The leader subscribes to ``a``, the follower to ``a``, ``b`` and a not-yet-existing ``c``.

    Creating ``c`` makes the leader rejoin (its metadata covers the whole group's subscription,
    Java ``ConsumerCoordinator.updateGroupSubscription``): one rebalance, ``c`` assigned to the
    follower. Without that watch no rebalance follows and ``c`` stays unassigned.
    """
    a, b = topic_factory(2), topic_factory(1)
    c = f"later-{uuid.uuid4().hex[:8]}"
    group = group_id_factory()
    leader, follower = members = _join_in_order(group_coordinator.bootstrap_servers, group, [[a], [a, b, c]])
    try:
        wait_owned(members, {TopicPartition(a, p) for p in range(2)} | {TopicPartition(b, 0)}, "before the change")
        assert leader.group_metadata().member_id != follower.group_metadata().member_id
        generation = leader.group_metadata().generation_id
        create_topic(kafka_bootstrap, c, 2)
        waited = wait_owned(
            members, {TopicPartition(a, p) for p in range(2)} | {TopicPartition(b, 0), TopicPartition(c, 0),
                                                                 TopicPartition(c, 1)}, "after c was created",
        )
        print(f"\nc assigned {waited:.2f} s after it was created (metadata_max_age_ms=1000)")
        assert {TopicPartition(c, 0), TopicPartition(c, 1)} <= follower.assignment()
        assert {m.group_metadata().generation_id for m in members} == {generation + 1}, "not one rebalance"
    finally:
        for m in members:
            m.close(timeout_ms=5000)


@pytest.mark.broker_kinds("apache-kafka")
def test_under_the_consumer_protocol_a_topic_only_one_member_subscribes_to_is_assigned_once_created(
    kafka_bootstrap, topic_factory, group_id_factory
):
    """KIP-848: the broker watches the subscribed topics; a topic created after a member named it
    bumps the group epoch, and the member that subscribes to it reports the new assignment."""
    a = topic_factory(2)
    c = f"later-{uuid.uuid4().hex[:8]}"
    members = _join_in_order(kafka_bootstrap, group_id_factory(), [[a], [a, c]], group_protocol="consumer")
    try:
        wait_owned(members, {TopicPartition(a, p) for p in range(2)}, "before the change")
        create_topic(kafka_bootstrap, c, 2)
        waited = wait_owned(members, {TopicPartition(a, p) for p in range(2)} |
                            {TopicPartition(c, 0), TopicPartition(c, 1)}, "after c was created")
        print(f"\nc assigned {waited:.2f} s after it was created")
        assert {TopicPartition(c, 0), TopicPartition(c, 1)} <= members[1].assignment()
    finally:
        for m in members:
            m.close(timeout_ms=5000)


def test_a_deleted_topic_still_assigned_is_not_created_again(kafka_bootstrap, topic_factory, group_id_factory):
    """kgroup never asks the broker to create a topic (``allow.auto.create.topics`` false, KIP-361).

    Both brokers create a topic a Metadata request names when the request allows it (Apache
    Kafka's ``auto.create.topics.enable`` is true by default). A partition of a deleted topic
    stays assigned until the application or the group drops it, and the consumer's metadata
    refreshes keep naming its topic: were they to allow creation, the topic would come back
    empty under a new id (a deleted topic seen again by the group and ``kgroup.spark``).
    """
    topic = topic_factory(1)
    tp = TopicPartition(topic, 0)
    create_records = kgroup.testing.produce(kafka_bootstrap, topic, [(0, None, b"r")] * 3)
    assert create_records == 3
    consumer: kgroup.Consumer[bytes, bytes] = kgroup.Consumer(
        bootstrap_servers=kafka_bootstrap, group_id=group_id_factory(), metadata_max_age_ms=500,
        auto_offset_reset="earliest", enable_auto_commit=False, client_id="deleted-topic",
    )
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, client_id="deleted-topic-admin")
    got: list[kgroup.ConsumerRecord[bytes, bytes]] = []
    try:
        consumer.assign([tp])
        wait_until(lambda: bool(got.extend(consumer.poll(100))) or len(got) >= 3, 60, "the topic's records")
        admin.delete_topics([topic])
        wait_until(lambda: topic not in admin.list_topics(), 60, "the deletion to apply")
        cluster: Any = consumer._transport._cluster  # type: ignore[attr-defined] # kafka-python's metadata
        refreshes: list[int] = []

        def refreshed_three_times() -> bool:
            consumer.poll(100)
            stamp = cluster._last_successful_refresh_ms
            if not refreshes or stamp != refreshes[-1]:
                refreshes.append(stamp)
            return len(refreshes) > 3  # the first one seen may predate the deletion

        wait_until(refreshed_three_times, 60, "three metadata refreshes after the deletion")
        assert topic not in admin.list_topics(), "a metadata refresh of the consumer created the deleted topic again"
        assert topic not in cluster.topics()
    finally:
        consumer.close()
        admin.close()
