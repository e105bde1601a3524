"""A static leader that comes back (KIP-814 skip_assignment) makes sure every partition has an owner.

On Apache Kafka's own coordinator: the leader, a static member, restarts within its session
with one more topic in its subscription. Kafka keeps the Stable group's assignment (no
rebalance for a static member whose selected protocol does not change) and Java's client
would leave the new topic unassigned until the next rebalance. kgroup's returning leader
describes the group, sees partitions without an owner, and rejoins: the new topic is consumed.
(The embedded Tansu reports no assignments in DescribeGroups, so there the check cannot see
and stays quiet: a ``tansu_deviation``.)
"""

from __future__ import annotations

import time

import pytest

from kgroup.testing import produce

from .harness import HEARTBEAT_MS, EventLog, Member, all_partitions, wait_until

DESCRIBE_GROUPS_ASSIGNMENTS = "DescribeGroups members carry empty assignments (only member ids are real)"


@pytest.mark.broker_kinds("tansu", "apache-kafka")
@pytest.mark.tansu_deviation(DESCRIBE_GROUPS_ASSIGNMENTS)
def test_returning_static_leader_with_a_new_topic_gets_it_assigned(kafka_bootstrap, topic_factory, group_id_factory):
    old_topic, new_topic = topic_factory(partitions=2), topic_factory(partitions=2)
    group = group_id_factory("static-return")
    log = EventLog()
    static = {"group_instance_id": "leader-0", "session_timeout_ms": 30000, "heartbeat_interval_ms": HEARTBEAT_MS}
    leader = Member("leader", kafka_bootstrap, group, [old_topic], log, **static).start()
    wait_until(lambda: leader.assignment() == all_partitions(old_topic, 2), 60, "the leader's assignment")
    other = Member("other", kafka_bootstrap, group, [old_topic], log).start()
    wait_until(lambda: len(leader.assignment()) == 1 and len(other.assignment()) == 1, 60, "the split")
    generation = other.consumer.group_metadata().generation_id

    leader.stop()  # a static member's default close sends no LeaveGroup: its session holds its place
    restarted = Member("leader#2", kafka_bootstrap, group, [old_topic, new_topic], log, **static).start()
    produce(kafka_bootstrap, new_topic, [(p, b"k", b"v") for p in (0, 1)])
    started = time.monotonic()
    wait_until(
        lambda: all_partitions(new_topic, 2) <= restarted.assignment(), 45,
        "the new topic's partitions assigned to the restarted leader",
    )
    took = time.monotonic() - started
    print(f"new topic assigned {took:.1f} s after the static leader restarted")
    # it came back as the same static member first (no rebalance), then rejoined for the topic
    assert other.consumer.group_metadata().generation_id > generation
    wait_until(lambda: any(r.topic == new_topic for r in restarted.records), 30, "records of the new topic")
    for member in (restarted, other):
        member.stop()
        assert not member.errors, member.errors
