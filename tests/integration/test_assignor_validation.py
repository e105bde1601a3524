"""A custom COOPERATIVE assignor that breaks KIP-429 gets a typed error, never a split partition.

Issue 4, item 3: the leader validates every plan (``kgroup.assignors.validate.validate_plan``)
before its SyncGroup. A plan that hands a partition straight from its owner to another member
fails the round on the leader with ``kgroup.AssignmentError`` from ``poll()``; the plan is never
sent, so no other member ever receives a partition its owner still holds. On Apache Kafka's
own coordinator (``[apache-kafka]``) and through the coordinator proxy in front of the embedded
Tansu (``[tansu]``: Kafka's join barrier and leader election modelled, and its request log
shows that only the first, valid plan was sent).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import ClassVar

import kgroup
from kgroup.assignors.base import Plan
from tests.integration.groupcheck import is_model
from tests.integration.harness import BOTH

pytestmark = BOTH


class DirectTransferAssignor(kgroup.Assignor):
    """Round-robin that ignores ownership: under COOPERATIVE it moves partitions directly."""

    name: ClassVar[str] = "direct-transfer"
    supported_protocols: ClassVar[tuple[kgroup.RebalanceProtocol, ...]] = (kgroup.RebalanceProtocol.COOPERATIVE,)

    def assign(self, partitions_per_topic: Mapping[str, int], members: Mapping[str, kgroup.MemberSubscription]) -> Plan:
        order = sorted(members)
        plan: dict[str, set[kgroup.TopicPartition]] = {m: set() for m in order}
        i = 0
        for topic in sorted(partitions_per_topic):
            for p in range(partitions_per_topic[topic]):
                plan[order[i % len(order)]].add(kgroup.TopicPartition(topic, p))
                i += 1
        return {m: frozenset(tps) for m, tps in plan.items()}


def consumer(bootstrap: str, group: str, name: str) -> kgroup.Consumer:
    return kgroup.Consumer(
        bootstrap_servers=bootstrap, group_id=group, client_id=name, assignors=(DirectTransferAssignor(),),
        session_timeout_ms=6000, heartbeat_interval_ms=1000, auto_offset_reset="earliest",
    )


def test_a_cooperative_plan_with_a_direct_transfer_fails_on_the_leader(group_coordinator, topic_factory,
                                                                       group_id_factory):
    bootstrap = group_coordinator.bootstrap_servers
    topic = topic_factory(4)
    group = group_id_factory()
    leader = consumer(bootstrap, group, "leader")
    follower = consumer(bootstrap, group, "follower")
    try:
        leader.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(leader.assignment()) != 4:
            assert time.monotonic() < deadline, "the first member never got the 4 partitions"
            leader.poll(100)
        follower.subscribe([topic])
        errors: list[kgroup.AssignmentError] = []
        deadline = time.monotonic() + 30
        while not errors:
            assert time.monotonic() < deadline, "the leader never rejected its assignor's plan"
            for member in (leader, follower):
                try:
                    member.poll(50)
                except kgroup.AssignmentError as exc:
                    assert member is leader
                    errors.append(exc)
                assert not (leader.assignment() & follower.assignment()), "a partition had two owners"
                assert not follower.assignment(), "the follower received a partition its owner still holds"
        assert "moves directly" in str(errors[0]) and "KIP-429" in str(errors[0])
        if is_model(group_coordinator):
            syncs = [r for r in group_coordinator.requests("SyncGroup") if r.client_id == "leader"]
            assert len(syncs) == 1, "only the first (valid) plan may have been sent"
    finally:
        leader.close(timeout_ms=5000)
        follower.close(timeout_ms=5000)
